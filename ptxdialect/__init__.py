"""The PTX front end: ISA table, ``ptx`` xDSL dialect, parser and printer.

The names below load their module on first use (PEP 562), so importing one
light submodule (``diagnostics``, ``isa``) does not build the dialect.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .diagnostics import HypaError, InputError, PTXError, PTXSyntaxError
    from .dialect import PTX, FuncOp, InstructionOp, is_instruction
    from .parser import parse_ptx, parse_ptx_file
    from .printer import module_to_ptx, print_ptx

#: exported name -> the submodule that defines it
_EXPORTS = {
    "HypaError": "diagnostics", "InputError": "diagnostics", "PTXError": "diagnostics", "PTXSyntaxError": "diagnostics",
    "PTX": "dialect", "FuncOp": "dialect", "InstructionOp": "dialect", "is_instruction": "dialect",
    "parse_ptx": "parser", "parse_ptx_file": "parser",
    "module_to_ptx": "printer", "print_ptx": "printer",
}
_SUBMODULES = ("declarations", "diagnostics", "dialect", "isa", "lexer", "operands", "parser", "printer", "symbols")

__all__ = [
    "PTX", "FuncOp", "HypaError", "InputError", "InstructionOp", "PTXError", "PTXSyntaxError", "is_instruction",
    "module_to_ptx", "parse_ptx", "parse_ptx_file", "print_ptx",
]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))
