"""The lowering rule registry: one function per ISA entry, which the code generator calls
to emit an instruction's LLVM IR.  The semantics modules (``runtime/semantics/``) register
their rules here and the code generator (``runtime/codegen.py``) looks them up here, so
neither imports the other's module at load time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: a rule takes the code generator's ``Emitter`` for one instruction
Rule = Callable[[Any], None]

#: ISA entry name -> its lowering
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register the lowering of the ISA entries ``names``."""

    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return deco
