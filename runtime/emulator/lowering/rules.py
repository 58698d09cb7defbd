"""The rule registry: one lowering function per ISA entry (``ptxdialect/isa.py``'s name),
and the error lowering raises.

The rule modules (``semantics/``) register here and the warp function (``warp.py``)
looks an instruction's rule up here by its entry, so neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypa.ptxdialect.diagnostics import HypaError


class LoweringError(HypaError):
    """An instruction the emulator cannot lower: no rule, or a form its rule does not cover."""


#: a rule takes the ``Emitter`` of one instruction (``emitter.py``)
Rule = Callable[[Any], None]

#: ISA entry name -> its lowering
RULES: dict[str, Rule] = {}


#: ISA entry name -> why it has no lowering (added to the "no emulator semantics" error)
WHY_NOT: dict[str, str] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register the lowering of the ISA entries ``names``."""

    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return deco
