"""Compiler passes over the ``ptx`` dialect (CFG, dominance, SSA, slicing, counting)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory, for hypa-opt and the xDSL universe."""
    return {}
