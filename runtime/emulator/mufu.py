"""The H100's special function unit (MUFU) for ``rsqrt``, ``ex2``, ``rcp``, ``sqrt``
``.approx.f32`` (and ``div.approx``/``div.full.f32``, a times MUFU.RCP(b)), issue 26: its
results, bit for bit, from tables of what an H100 returned.

The MUFU interpolates from tables, so its results are not the correctly rounded ones
(``rsqrt.approx.f32`` is one unit off for about 22% of the inputs). What it computes
depends only on a reduced argument (docs/validation.md, "Special functions (MUFU) on an H100"):

* MUFU.RSQ / MUFU.SQRT (``rsqrt``/``sqrt.approx.ftz.f32``) of ``x = 4^k * c``, ``c`` in
  [1,4): ``RSQRT[c] * 2^-k`` / ``SQRT[c] * 2^k`` (2^24 entries, indexed by the exponent's
  parity and the mantissa); MUFU.RCP of ``2^k * c``, ``c`` in [1,2): ``RCP[c] * 2^-k``
  (2^23 entries), subnormal results flushed. Subnormal inputs are flushed; a negative
  input (rsqrt, sqrt) or NaN gives ``0x7FFFFFFF``.
* MUFU.EX2 (``ex2.approx.ftz.f32``): ``|x|`` truncated to 23 fraction bits, ``n + g``;
  ``2^g * 2^n`` for ``x >= 0``, ``2^-g * 2^-n`` for ``x < 0``, from two tables of 2^23 (on
  the unit ``2^-g`` is not ``2^(1-g)/2``); +inf past the largest float, +0 below 2^-126.
* Without ``.ftz`` ptxas wraps them (its SASS for sm_90): rsqrt/sqrt scale a subnormal
  input by 2^24 and the result by 2^12 / 2^-12; rcp scales x by 2^24 below 2^-126 and by
  1/4 above 2^126, and the result by the same factor (rounded); ex2 of ``x < -126`` is
  ``ex2(x/2)^2``, the square rounded with subnormal results.

The tables (``mufu_h100.npz``, 0.51 MB: every output's difference from the one before,
lzma-compressed) are the H100's outputs for every input of the reduced domains, recorded
by ``benchmarks/gpu/mufu_record.py``. Generated code gets one byte per entry (the low byte
of the result), through a word per table that ``abi.CTX_MUFU`` points to (0 for a table
the kernel does not read: nothing absolute is baked into compiled code), and takes the
encoding with that low byte nearest the f64 evaluation rounded (the H100 is within 3 units
of it). ``rsqrt``/``ex2``/``rcp``/``sqrt`` here are the same model in numpy (tests).
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import os

import numpy as np

TABLE_FILE = os.path.join(os.path.dirname(__file__), "mufu_h100.npz")

#: the tables, in the order of their addresses in the word array ``abi.CTX_MUFU`` points to:
#: name -> entries
TABLES = {"rsqrt": 1 << 24, "ex2_pos": 1 << 23, "ex2_neg": 1 << 23, "rcp": 1 << 23, "sqrt": 1 << 24}
SLOT = {name: i for i, name in enumerate(TABLES)}
#: the PTX functions with MUFU tables (``.approx.f32`` alone) -> the tables they read
FUNCTIONS = {"rsqrt": ("rsqrt",), "ex2": ("ex2_pos", "ex2_neg"), "rcp": ("rcp",), "sqrt": ("sqrt",)}


@functools.cache
def table(name: str) -> np.ndarray:
    """One table's recorded results (uint32 encodings), decoded on first use."""
    with np.load(TABLE_FILE) as z:
        d = np.frombuffer(lzma.decompress(z[f"{name}__diff"].tobytes()), np.dtype(str(z[f"{name}__dtype"])))
        first = int(z[f"{name}__first"])
    return np.concatenate([[first], first + np.cumsum(d, dtype=np.int64)]).astype(np.uint32)


def tables() -> dict[str, np.ndarray]:
    """Every table, by name."""
    return {name: table(name) for name in TABLES}


#: the format of a decoded table's record in the compile cache (``jit.write_record``)
_RECORD_MAGIC = b"HYPA-MUFU-LOW-BYTES-1\n"


@functools.cache
def _data_digest() -> str:
    with open(TABLE_FILE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:24]


@functools.cache
def _low_bytes(name: str) -> np.ndarray:
    """The low bytes generated code reads: decoded once per machine (0.1-0.2 s a table) and
    kept in the compile cache as a sealed record (read back and checked in about 10 ms)."""
    from .jit import read_record, write_record

    record = f"mufu-{name}-{_data_digest()}"
    data = read_record(record, _RECORD_MAGIC)
    if data is not None and len(data) == TABLES[name]:
        return np.frombuffer(data, np.uint8)
    low = np.ascontiguousarray(table(name).astype(np.uint8))
    write_record(record, _RECORD_MAGIC, low.tobytes())
    return low


@functools.cache
def _addresses(names: frozenset) -> np.ndarray:
    return np.array([_low_bytes(n).ctypes.data if n in names else 0 for n in TABLES], np.int64)


def address(names: frozenset) -> int:
    """The address of the words generated code reads (``abi.CTX_MUFU``): each table's low
    bytes, or 0 for a table not in ``names`` (loaded on first use, kept for the process)."""
    return _addresses(frozenset(names)).ctypes.data


def uses(op) -> tuple[str, ...]:
    """The tables an instruction's lowering reads (``rsqrt``/``ex2``/``rcp``/``sqrt``
    ``.approx.f32``; ``div.approx.f32`` and ``div.full.f32``: a times MUFU.RCP(b)).
    Generated code reads a table only where this says so: the launch loads those."""
    mods = op.modifiers
    if ".f32" not in mods:
        return ()
    if op.spec.name == "div":
        return ("rcp",) if ".approx" in mods or ".full" in mods else ()
    return FUNCTIONS.get(op.spec.name, ()) if ".approx" in mods else ()


def used_by(prog) -> frozenset:
    """The tables a kernel program reads (remembered on the program)."""
    hit = prog.__dict__.get("_mufu_tables")
    if hit is None:
        hit = prog.__dict__["_mufu_tables"] = frozenset(t for op in prog.instructions for t in uses(op))
    return hit


# ---------------------------------------------------------------------------
# the model in numpy (uint32 encodings in and out)
# ---------------------------------------------------------------------------

QNAN = 0x7FFFFFFF


def _mufu_rsq(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int64)
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    normal = (e > 0) & (e < 255)
    idx = np.where(normal, ((e + 1) & 1) << 23 | m, 0)
    r = table("rsqrt")[idx].astype(np.int64) - (((e - 127) >> 1) << 23)
    r = np.where(e == 0, (s << 31) | 0x7F800000, r)
    r = np.where((e == 255) & (m == 0), 0, r)
    r = np.where(((s == 1) & (e != 0)) | ((e == 255) & (m != 0)), QNAN, r)
    return r.astype(np.uint32)


def _subnormal_scaled(x: np.ndarray, unit, exponent: int) -> np.ndarray:
    """``unit`` (MUFU.RSQ or MUFU.SQRT, which flush subnormals) of encodings ``x`` as ptxas's
    code without ``.ftz`` runs it: a positive subnormal input scaled by 2^24 first, the
    result's exponent moved by ``exponent`` (12 for rsqrt, -12 for sqrt) after."""
    mag = x & 0x7FFFFFFF
    small = mag < 0x00800000
    scaled = (x & 0x80000000) | np.where(mag == 0, 0, np.maximum(mag, 1).astype(np.float32).view(np.uint32)
                                          .astype(np.int64) - (125 << 23))
    r = unit(np.where(small, scaled, x)).astype(np.int64)
    return np.where(small & (x >> 31 == 0) & (mag != 0), r + (exponent << 23), r).astype(np.uint32)


def rsqrt(x: np.ndarray, ftz: bool) -> np.ndarray:
    """``rsqrt.approx[.ftz].f32`` as an H100 computes it."""
    x = np.asarray(x, dtype=np.uint32).astype(np.int64)
    return _mufu_rsq(x) if ftz else _subnormal_scaled(x, _mufu_rsq, 12)


def _mufu_ex2(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int64)
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    sig = np.where(e > 0, m | (1 << 23), 0)
    sh = e - 127
    q = np.where(sh >= 0, sig << np.clip(sh, 0, 8), sig >> np.clip(-sh, 0, 63))
    n, f = q >> 23, q & ((1 << 23) - 1)
    r = np.where(s == 1, table("ex2_neg")[f].astype(np.int64) - (n << 23), table("ex2_pos")[f].astype(np.int64) + (n << 23))
    r = np.where(r >= 255 << 23, 0x7F800000, np.where(r < 1 << 23, 0, r))
    r = np.where(e >= 135, np.where(s == 1, 0, 0x7F800000), r)
    return np.where((e == 255) & (m != 0), QNAN, r).astype(np.uint32)


def ex2(x: np.ndarray, ftz: bool) -> np.ndarray:
    """``ex2.approx[.ftz].f32`` as an H100 computes it."""
    x = np.asarray(x, dtype=np.uint32).astype(np.int64)
    if ftz:
        return _mufu_ex2(x)
    mag = x & 0x7FFFFFFF
    low = (x >> 31 == 1) & (mag > 0x42FC0000) & (mag <= 0x7F800000)  # x < -126
    half = np.where(mag == 0x7F800000, x, x - (1 << 23))
    r = _mufu_ex2(np.where(low, half, x))
    sq = (r.view(np.float32).astype(np.float64) ** 2).astype(np.float32).view(np.uint32)
    return np.where(low, sq, r).astype(np.uint32)


def _mufu_rcp(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int64)
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    r = table("rcp")[m].astype(np.int64) - ((e - 127) << 23)
    r = np.where(r < 1 << 23, 0, r) | (s << 31)
    r = np.where(e == 0, (s << 31) | 0x7F800000, r)
    r = np.where((e == 255) & (m == 0), s << 31, r)
    return np.where((e == 255) & (m != 0), QNAN, r).astype(np.uint32)


def _f32_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x * y of uint32 encodings, rounded to nearest (subnormals kept), NaN canonical."""
    p = (x.view(np.float32).astype(np.float64) * y.view(np.float32).astype(np.float64)).astype(np.float32)
    return np.where(np.isnan(p), QNAN, p.view(np.uint32)).astype(np.uint32)


def rcp(x: np.ndarray, ftz: bool) -> np.ndarray:
    """``rcp.approx[.ftz].f32`` as an H100 computes it (without .ftz ptxas scales x by 2^24
    below 2^-126 and by 1/4 above 2^126, and the result by the same factor)."""
    x = np.asarray(x, dtype=np.uint32)
    if ftz:
        return _mufu_rcp(x)
    mag = x & np.uint32(0x7FFFFFFF)
    sc = np.where(mag > 0x7E800000, 0x3E800000, np.where(mag < 0x00800000, 0x4B800000, 0x3F800000))
    sc = np.where(mag > 0x7F800000, 0x3F800000, sc).astype(np.uint32)  # NaN: not scaled
    return _f32_mul(sc, _mufu_rcp(_f32_mul(x, sc)))


def _mufu_sqrt(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int64)
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    normal = (e > 0) & (e < 255)
    idx = np.where(normal, ((e + 1) & 1) << 23 | m, 0)
    r = table("sqrt")[idx].astype(np.int64) + (((e - 127) >> 1) << 23)
    r = np.where(e == 0, s << 31, r)
    r = np.where((e == 255) & (m == 0), 0x7F800000, r)
    r = np.where(((s == 1) & (e != 0)) | ((e == 255) & (m != 0)), QNAN, r)
    return r.astype(np.uint32)


def sqrt(x: np.ndarray, ftz: bool) -> np.ndarray:
    """``sqrt.approx[.ftz].f32`` as an H100 computes it (without .ftz ptxas scales a
    subnormal input by 2^24 and the result by 2^-12)."""
    x = np.asarray(x, dtype=np.uint32).astype(np.int64)
    return _mufu_sqrt(x) if ftz else _subnormal_scaled(x, _mufu_sqrt, -12)
