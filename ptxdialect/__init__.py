"""The PTX front end: ISA table, ``ptx`` xDSL dialect, parser and printer."""

from .diagnostics import PTXError, PTXSyntaxError
from .dialect import PTX, FuncOp, InstructionOp, is_instruction
from .parser import parse_ptx, parse_ptx_file
from .printer import module_to_ptx, print_ptx

__all__ = [
    "PTX", "FuncOp", "InstructionOp", "PTXError", "PTXSyntaxError", "is_instruction",
    "module_to_ptx", "parse_ptx", "parse_ptx_file", "print_ptx",
]
