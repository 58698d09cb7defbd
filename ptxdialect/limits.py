"""The limits ptxas puts on a module, checked as the parser reads it (issue 31).

A GPU cannot load what ptxas refuses, so hypa refuses it too, with ptxas's reason and the
place in the file.  The figures are ptxas's (CUDA 13, ``ptxas -arch=sm_90``; each was
checked one byte either side of it): they belong to the PTX ISA, not to one GPU, which is
why they live here and not in the architecture files (``runtime/models/arch/``) that give
the launch limits.
"""

from __future__ import annotations

from . import isa
from .operands import parse_int_immediate

#: named barriers per CTA: ids 0..15
BARRIERS = 16
#: module-level ``.const`` data of one file ("too much global constant data")
CONST_BYTES = 0x10000
#: static ``.shared`` data of one entry function ("too much shared data"); more is dynamic
#: shared memory, which a launch opts into
STATIC_SHARED_BYTES = 0xC000
#: an entry function's ``.param`` space, before and from PTX ISA 8.1
PARAM_BYTES = 0x1100
PARAM_BYTES_PTX81 = 0x7FFC


def param_bytes(params: tuple) -> int:
    """Bytes of an entry's ``.param`` list (``ParamsAttr`` rows), laid out in order with
    each parameter's alignment (as ``runtime/emulator/program.py`` places them)."""
    off = 0
    for _text, _name, space, ptx_type, align, dims in params:
        if space != ".param":
            continue
        esize = max(1, isa.TYPE_BITS.get(ptx_type, 64) // 8)
        size = esize
        for d in dims:
            size *= max(d, 0)
        a = align or esize
        off = (off + a - 1) // a * a + size
    return off


def param_limit(version: str | None) -> int:
    """The most ``.param`` bytes an entry may take in a module of PTX ISA ``version``."""
    try:
        major, minor = (int(x) for x in (version or "0.0").split("."))
    except ValueError:
        return PARAM_BYTES
    return PARAM_BYTES_PTX81 if (major, minor) >= (8, 1) else PARAM_BYTES


def param_error(name: str, params: tuple, version: str | None) -> str | None:
    n, limit = param_bytes(params), param_limit(version)
    if n <= limit:
        return None
    later = f"; PTX ISA 8.1 and later allow {PARAM_BYTES_PTX81}" if limit == PARAM_BYTES else ""
    return f"entry function {name!r} uses too much parameter space ({n} bytes, {limit} max{later})"


def barrier_error(instr: isa.Instr, mods: tuple[str, ...], args: tuple) -> tuple[int, str] | None:
    """(operand index, ptxas's reason) where a ``bar``/``barrier`` instruction names a
    barrier past 15 or a thread count that is not a whole number of warps (constants only:
    a register's value is the launch's to check)."""
    if instr.name not in ("bar", "barrier") or ".warp" in mods or ".cluster" in mods:
        return None
    first = 1 if ".red" in mods else 0
    count_at = first + 1 if len(args) > first + 1 + (1 if ".red" in mods else 0) else None
    ident = args[first] if first < len(args) else None
    if ident is not None and ident[0] == "imm":
        try:
            v = parse_int_immediate(ident[1])
        except ValueError:
            v = None
        if v is not None and not 0 <= v < BARRIERS:
            return first, f"barrier number {v} out of range, expected to be in range [0..{BARRIERS - 1}]"
    if count_at is not None and args[count_at][0] == "imm":
        try:
            v = parse_int_immediate(args[count_at][1])
        except ValueError:
            v = None
        if v is not None and v % 32:
            return count_at, (f"the number of threads participating in barrier must be a multiple of the "
                              f"warp size (32), not {v}")
    return None
