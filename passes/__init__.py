"""Compiler passes over the ``ptx`` dialect (CFG, dominance, SSA, slicing, counting)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory, for hypa-opt and the xDSL universe."""

    def ssa():
        from .ssa import PTXToSSA

        return PTXToSSA

    def out_of_ssa():
        from .out_of_ssa import PTXOutOfSSA

        return PTXOutOfSSA

    return {
        "ptx-to-ssa": ssa,
        "ptx-out-of-ssa": out_of_ssa,
    }
