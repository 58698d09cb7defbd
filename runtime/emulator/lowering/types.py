"""Types and constants every module of the lowering shares.

A warp's value is 32 lanes: an integer register is ``<32 x iN>`` (``ivec``), a predicate
or a set of lanes a ``<32 x i1>`` mask (``MASK``), an address vector ``<32 x ptr>``
(``VPTR``).  The facts the rules ask of a PTX type (width, signedness, float kind) and
the bit patterns of immediates live here too, so that no module defines them twice.
"""

from __future__ import annotations

import struct

from llvmlite import ir

from hypa.ptxdialect import isa

from ... import abi

LANES = abi.LANES
i1, i8, i16, i32, i64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
f32, f64 = ir.FloatType(), ir.DoubleType()
ptr = ir.PointerType()


class LaneVector(ir.VectorType):
    """``<32 x T>`` whose constants with one value in every lane print as ``splat (T v)``
    (LLVM 19's syntax): one element's text instead of 32, which the IR printer and LLVM's
    parser would otherwise spend a fifth of the lowering on."""

    def format_constant(self, value):
        if type(value) is tuple and value and all(x is value[0] for x in value):
            x = value[0]
            return f"splat ({x.type} {x.get_reference()})"
        return super().format_constant(value)


_VECS: dict[str, LaneVector] = {}


def vec(t: ir.Type) -> ir.VectorType:
    """``t`` in every lane."""
    key = str(t)
    v = _VECS.get(key)
    if v is None:
        v = _VECS[key] = LaneVector(t, LANES)
    return v


def ivec(bits: int) -> ir.VectorType:
    """``<32 x i{bits}>``."""
    return vec(ir.IntType(bits))


VPTR = vec(ptr)
MASK = vec(i1)
F32V = vec(f32)
F64V = vec(f64)


def vector_suffix(vt: ir.VectorType) -> str:
    """How LLVM's overloaded intrinsics name ``vt``: ``v32i64``, ``v32f32``, ``v32f64``."""
    el = vt.element
    if isinstance(el, ir.IntType):
        return f"v32i{el.width}"
    return "v32f64" if isinstance(el, ir.DoubleType) else "v32f32"


# ---------------------------------------------------------------------------
# PTX types
# ---------------------------------------------------------------------------

#: the float kind of a PTX float type
FLOAT_KIND = {".f16": "f16", ".bf16": "bf16", ".f32": "f32", ".f64": "f64"}


def op_type(e) -> str:
    """The instruction's (first) type modifier, e.g. ``.s32``."""
    if not e.types:
        raise e.fail("needs a type modifier")
    return e.types[0]


def type_bits(t: str) -> int:
    return isa.TYPE_BITS[t]


def is_signed(t: str) -> bool:
    return t.startswith(".s")


# ---------------------------------------------------------------------------
# Immediates
# ---------------------------------------------------------------------------


def float_imm_bits(text: str, bits: int, kind: str | None) -> int:
    """Bit pattern of a floating-point immediate (``0f..``, ``0d..`` or decimal)."""
    t = text
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t[:2] in ("0f", "0F"):
        raw = int(t[2:], 16)
        val = struct.unpack("<f", struct.pack("<I", raw))[0]
        if kind in ("f32", None) and bits == 32:
            return raw ^ (0x80000000 if neg else 0)
    elif t[:2] in ("0d", "0D"):
        raw = int(t[2:], 16)
        val = struct.unpack("<d", struct.pack("<Q", raw))[0]
        if bits == 64:
            return raw ^ ((1 << 63) if neg else 0)
    else:
        val = float(t)
    if neg:
        val = -val
    if bits == 64:
        return struct.unpack("<Q", struct.pack("<d", val))[0]
    if bits == 32:
        return struct.unpack("<I", struct.pack("<f", val))[0]
    if bits == 16:
        import numpy as np

        if kind == "bf16":
            f = struct.unpack("<I", struct.pack("<f", val))[0]
            return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16) & 0xFFFF
        return int(np.array(val, np.float16).view(np.uint16))
    raise ValueError(f"float immediate {text} for {bits}-bit operand")
