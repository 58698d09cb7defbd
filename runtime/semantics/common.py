"""Helpers shared by the semantics modules."""

from __future__ import annotations

from llvmlite import ir

from hypa.ptxdialect import isa

LANES = 32
#: a warp's lane mask type
MASK = ir.VectorType(ir.IntType(1), LANES)


def vec(t: ir.Type) -> ir.VectorType:
    return ir.VectorType(t, LANES)


def op_type(e) -> str:
    """The instruction's (first) type modifier, e.g. ``.s32``."""
    if not e.types:
        raise e.fail("needs a type modifier")
    return e.types[0]


def type_bits(t: str) -> int:
    return isa.TYPE_BITS[t]


def is_signed(t: str) -> bool:
    return t.startswith(".s")


def is_float(t: str) -> bool:
    return t in isa.FLOAT_TYPES


FLOAT_KIND = {".f16": "f16", ".bf16": "bf16", ".f32": "f32", ".f64": "f64"}
