"""Compiler passes over the ``ptx`` dialect (CFG, dominance, SSA, slicing, counting)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

#: pass name -> (module, class); modules load lazily so `hypa-opt --help` stays fast
_PASSES = {
    "ptx-build-cfg": ("build_cfg", "BuildCFG"),
    "ptx-inline": ("inline", "PTXInline"),
    "ptx-to-ssa": ("ssa", "PTXToSSA"),
    "ptx-out-of-ssa": ("out_of_ssa", "PTXOutOfSSA"),
    "slice-branches": ("slice", "SliceBranches"),
    "hoist-bounds-checks": ("hoist_checks", "HoistBoundsChecks"),
    "ptx-contract-fma": ("contract", "ContractFMA"),
    "count-instructions": ("count", "CountInstructions"),
    "print-cfg-dot": ("cfg_dot", "PrintCFGDot"),
    "instrument-block-counters": ("instrument", "InstrumentBlockCounters"),
}


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"{__name__}.{module}"), cls)

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory, for hypa-opt and the xDSL universe."""
    return {name: _loader(m, c) for name, (m, c) in _PASSES.items()}
