"""Out of SSA for printing: which register name each SSA value prints as."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from hypa.ptxdialect.printer import Namer


def ptx_namer(module: ModuleOp) -> Namer | None:
    """A namer for the printer, or None when register names in ``args`` are valid.

    Register form, and SSA form whose values still live in their original
    registers, print their ``args`` unchanged.
    """
    return None
