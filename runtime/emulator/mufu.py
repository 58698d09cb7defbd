"""The H100's special function unit (MUFU) for ``rsqrt.approx.f32`` and ``ex2.approx.f32``
(issue 26): its results, bit for bit, from tables of what an H100 returned.

The MUFU interpolates from tables, so its results are not the correctly rounded ones
(``rsqrt.approx.f32`` is off by one unit in the last place for about 22% of the inputs).
What it computes depends only on a reduced argument (docs/validation.md, "MUFU"):

* ``MUFU.RSQ`` (``rsqrt.approx.ftz.f32``): of ``x = 4^k * m``, ``m`` in [1,4), it returns
  ``RSQRT[m] * 2^-k``: 2^24 results, indexed by the exponent's parity and the mantissa;
  subnormal inputs are flushed (+-0 gives +-inf), a negative input or NaN gives
  ``0x7FFFFFFF``, +inf gives +0.
* ``MUFU.EX2`` (``ex2.approx.ftz.f32``): ``|x|`` truncated to 23 fraction bits,
  ``n + g``; it returns ``EX2_POS[g] * 2^n`` for ``x >= 0`` and ``EX2_NEG[g] * 2^-n`` for
  ``x < 0`` (two tables of 2^23: ``2^g`` and ``2^-g``, not one: ``2^-g`` is not ``2^(1-g)/2``
  there), +inf past the largest float, +0 below the smallest normal one.
* Without ``.ftz`` ptxas wraps them (its SASS for sm_90): ``rsqrt.approx.f32`` scales a
  subnormal input by 2^24 and the result by 2^12; ``ex2.approx.f32`` computes ``ex2(x/2)^2``
  for ``x < -126``, the square rounded to nearest with subnormal results.

The tables (``mufu_h100.npz``, 0.34 MB: every output's difference from the one before,
lzma-compressed) are the H100's outputs for every input of the reduced domains, recorded
by ``benchmarks/gpu/mufu_record.py``. Generated code gets one byte per entry (the low byte
of the result: 32 MB, ``abi.CTX_MUFU``) and takes the result nearest to the f64 evaluation
with that low byte (the H100 is within 3 units of it), so no absolute address is baked in
compiled code. ``rsqrt``/``ex2`` here are the same model in numpy (tests, docs).
"""

from __future__ import annotations

import functools
import lzma
import os

import numpy as np

TABLE_FILE = os.path.join(os.path.dirname(__file__), "mufu_h100.npz")

#: entry offsets in the byte table given to generated code (``abi.CTX_MUFU``)
RSQRT = 0
EX2_POS = 1 << 24
EX2_NEG = EX2_POS + (1 << 23)
ENTRIES = EX2_NEG + (1 << 23)

#: the instructions that read the tables (``used_by``)
TABLE_FUNCTIONS = ("rsqrt", "ex2")


@functools.cache
def tables() -> dict[str, np.ndarray]:
    """{"rsqrt", "ex2_pos", "ex2_neg"}: the recorded results (uint32 encodings)."""
    z = np.load(TABLE_FILE)
    out = {}
    for name in ("rsqrt", "ex2_pos", "ex2_neg"):
        d = np.frombuffer(lzma.decompress(z[f"{name}__diff"].tobytes()), np.dtype(str(z[f"{name}__dtype"])))
        first = int(z[f"{name}__first"])
        out[name] = np.concatenate([[first], first + np.cumsum(d, dtype=np.int64)]).astype(np.uint32)
    return out


@functools.cache
def _low_bytes() -> np.ndarray:
    t = tables()
    return np.ascontiguousarray(np.concatenate([t["rsqrt"], t["ex2_pos"], t["ex2_neg"]]).astype(np.uint8))


def address() -> int:
    """The byte table's address (loaded on first use, kept for the process)."""
    return _low_bytes().ctypes.data


def uses_table(op) -> bool:
    """Whether an instruction's lowering reads the tables (``rsqrt``/``ex2`` ``.approx.f32``)."""
    mods = op.modifiers
    return op.spec.name in TABLE_FUNCTIONS and ".approx" in mods and ".f32" in mods


def used_by(prog) -> bool:
    """Whether a kernel program has such an instruction (remembered on the program)."""
    hit = prog.__dict__.get("_uses_mufu")
    if hit is None:
        hit = prog.__dict__["_uses_mufu"] = any(uses_table(op) for op in prog.instructions)
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
    r = tables()["rsqrt"][idx].astype(np.int64) - (((e - 127) >> 1) << 23)
    r = np.where(e == 0, (s << 31) | 0x7F800000, r)
    r = np.where((e == 255) & (m == 0), 0, r)
    r = np.where(((s == 1) & (e != 0)) | ((e == 255) & (m != 0)), QNAN, r)
    return r.astype(np.uint32)


def rsqrt(x: np.ndarray, ftz: bool) -> np.ndarray:
    """``rsqrt.approx[.ftz].f32`` as an H100 computes it."""
    x = np.asarray(x, dtype=np.uint32).astype(np.int64)
    if ftz:
        return _mufu_rsq(x)
    mag = x & 0x7FFFFFFF
    small = mag < 0x00800000
    scaled = (x & 0x80000000) | np.where(mag == 0, 0, np.maximum(mag, 1).astype(np.float32).view(np.uint32)
                                          .astype(np.int64) - (125 << 23))
    r = _mufu_rsq(np.where(small, scaled, x)).astype(np.int64)
    return np.where(small & (x >> 31 == 0) & (mag != 0), r + (12 << 23), r).astype(np.uint32)


def _mufu_ex2(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int64)
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    sig = np.where(e > 0, m | (1 << 23), 0)
    sh = e - 127
    q = np.where(sh >= 0, sig << np.clip(sh, 0, 8), sig >> np.clip(-sh, 0, 63))
    n, f = q >> 23, q & ((1 << 23) - 1)
    t = tables()
    r = np.where(s == 1, t["ex2_neg"][f].astype(np.int64) - (n << 23), t["ex2_pos"][f].astype(np.int64) + (n << 23))
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
