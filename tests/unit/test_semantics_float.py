"""Floating-point and conversion semantics against independent references.

Every case is one PTX instruction applied to a few hundred inputs: random
values, values with short significands (whose sums and products land exactly
on rounding ties), and the edge cases (+-0, subnormals of both signs, the
smallest normal, the largest finite value, infinities, quiet/signalling NaNs
with payloads, integers at 2**24 / 2**53).  The emulator's output (full mode)
is compared bit for bit with a reference computed here from the PTX ISA's
definition: exact rational arithmetic (``fractions.Fraction``) rounded by a
rounding routine written here (not the emulator's), IEEE special cases spelt
out, ``struct``/``math`` for encodings and the approximate functions.
``.approx`` instructions are checked against the error the ISA states.

Cases sharing their inputs are compiled into one kernel (a *group*); every
case is still its own test, named after the instruction.

Where the ISA leaves a result unspecified (the NaN an instruction returns,
f64 payload propagation, ``.relu``/``.sat`` of -0, ...), the reference
follows what a Hopper GPU (an H200, sm_90) returned; ``python tests/unit/test_semantics_float.py
--gpu`` (CuPy and a GPU) runs the same kernels on the GPU and compares the
references with the hardware (approximate functions by their error bounds).
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

try:  # the GPU check (``--gpu``) runs where pytest may be missing
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

from helpers import DTYPE, PRED, WIDTH, ElementwiseKernel, InputGroup, emulate_elementwise, run_elementwise_on_gpu

# ---------------------------------------------------------------------------
# Formats and encodings (reference side)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class F:
    name: str
    ebits: int
    mbits: int
    width: int
    ieee: bool = True

    @property
    def bias(self) -> int:
        return 2 ** (self.ebits - 1) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_value(self) -> Fraction:
        if self.ieee:
            return (2 - Fraction(1, 2**self.mbits)) * Fraction(2) ** self.bias
        # e4m3: exponent field 1111 holds numbers, S.1111.111 is NaN
        return (2 - Fraction(2, 2**self.mbits)) * Fraction(2) ** (self.bias + 1)

    @property
    def sign(self) -> int:
        return 1 << (self.width - 1)

    @property
    def inf(self) -> int:
        return ((1 << self.ebits) - 1) << self.mbits


F16, BF16, F32, F64 = F("f16", 5, 10, 16), F("bf16", 8, 7, 16), F("f32", 8, 23, 32), F("f64", 11, 52, 64)
TF32 = F("tf32", 8, 10, 19)
E4M3, E5M2 = F("e4m3", 4, 3, 8, ieee=False), F("e5m2", 5, 2, 8)
FMT = {f.name: f for f in (F16, BF16, F32, F64, TF32, E4M3, E5M2)}
#: the NaN PTX returns (checked on an H200; f64 invalid operations give 0xfff8...)
CANON = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0xFFF8000000000000, "e4m3": 0x7F, "e5m2": 0x7F}
#: the OOB-NaN of fma.oob (either sign; H200)
OOB_NAN = 0x7FF7


def M(bits: int) -> int:
    return (1 << bits) - 1


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f16_bits(x: float) -> int:
    return struct.unpack("<H", struct.pack("<e", x))[0]


def bits_f64(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


@dataclass(frozen=True)
class V:
    """A decoded float: kind 'num' (q exact, neg = sign bit), 'inf' or 'nan'."""

    kind: str
    neg: bool
    q: Fraction = Fraction(0)
    bits: int = 0


def dec(bits: int, f: F) -> V:
    neg = bool(bits >> (f.width - 1) & 1)
    ef = bits >> f.mbits & M(f.ebits)
    mf = bits & M(f.mbits)
    if ef == M(f.ebits) and (f.ieee or mf == M(f.mbits)):
        if f.ieee and mf == 0:
            return V("inf", neg, bits=bits)
        return V("nan", neg, bits=bits)
    if ef == 0:
        mag = Fraction(mf) * Fraction(2) ** (f.emin - f.mbits)
    else:
        mag = Fraction(mf + (1 << f.mbits)) * Fraction(2) ** (ef - f.bias - f.mbits)
    return V("num", neg, -mag if neg else mag, bits)


def is_sub(bits: int, f: F) -> bool:
    return (bits >> f.mbits & M(f.ebits)) == 0 and bits & M(f.mbits) != 0


def ftz(bits: int, f: F) -> int:
    return bits & f.sign if is_sub(bits, f) else bits


def floor_log2(a: Fraction) -> int:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def encode(v: Fraction, neg: bool, f: F) -> int:
    """Encoding of the representable value |v| with sign ``neg`` (from the definition)."""
    s = f.sign if neg else 0
    a = abs(v)
    if a == 0:
        return s
    e = floor_log2(a)
    if e < f.emin:
        man = a / Fraction(2) ** (f.emin - f.mbits)
        assert man.denominator == 1, (v, f)
        return s | int(man)
    man = a / Fraction(2) ** (e - f.mbits) - (1 << f.mbits)
    assert man.denominator == 1 and e + f.bias < M(f.ebits) + (0 if f.ieee else 1), (v, f)
    return s | (e + f.bias) << f.mbits | int(man)


def max_enc(f: F) -> int:
    return encode(f.max_value, False, f)


def _overflow(neg: bool, f: F, mode: str, satfinite: bool) -> int:
    s = f.sign if neg else 0
    away = {"rn": True, "rna": True, "rz": False, "rm": neg, "rp": not neg}[mode]
    if satfinite or not f.ieee or not away:
        return s | max_enc(f)
    return s | f.inf


def _decide(n: int, cmp_half: int, inexact: bool, neg: bool, mode: str) -> int:
    """n + 1 or n: cmp_half compares the discarded fraction with 1/2."""
    if mode == "rn":
        return n + (cmp_half > 0 or (cmp_half == 0 and n % 2 == 1))
    if mode == "rna":
        return n + (cmp_half >= 0)
    if mode == "rz":
        return n
    if mode == "rm":
        return n + (neg and inexact)
    if mode == "rp":
        return n + ((not neg) and inexact)
    raise ValueError(mode)


def round_frac(q: Fraction, f: F, mode: str, satfinite: bool = False) -> int:
    """The exact nonzero rational q rounded to format f by mode."""
    neg = q < 0
    a = -q if neg else q
    e = max(floor_log2(a), f.emin)
    quantum = Fraction(2) ** (e - f.mbits)
    t = a / quantum
    n = math.floor(t)
    r = t - n
    n = _decide(n, (r > Fraction(1, 2)) - (r < Fraction(1, 2)), r != 0, neg, mode)
    v = n * quantum
    if v > f.max_value:
        return _overflow(neg, f, mode, satfinite)
    return encode(v, neg, f)


def round_sqrt(q: Fraction, f: F, mode: str) -> int:
    """sqrt(q) (q > 0) rounded to f by mode, decided with integer square roots."""
    e = max(floor_log2(q) // 2, f.emin)
    quantum = Fraction(2) ** (e - f.mbits)
    y = q / (quantum * quantum)
    n = math.isqrt(math.floor(y))
    two = 4 * y  # compare sqrt(y) with n + 1/2  <=>  4y with (2n+1)^2
    cmp_half = (two > (2 * n + 1) ** 2) - (two < (2 * n + 1) ** 2)
    n = _decide(n, cmp_half, y != n * n, False, mode)
    v = n * quantum
    if v > f.max_value:
        return _overflow(False, f, mode, False)
    return encode(v, False, f)


# ---------------------------------------------------------------------------
# IEEE arithmetic on decoded values
# ---------------------------------------------------------------------------

NAN = V("nan", False)


def _inf(neg: bool) -> V:
    return V("inf", neg)


def _num(q: Fraction, neg_zero: bool = False) -> V:
    return V("num", q < 0 or (q == 0 and neg_zero), q)


def _neg(x: V) -> V:
    if x.kind == "num":
        return V("num", not x.neg, -x.q)
    return V(x.kind, not x.neg, bits=x.bits)


def _add(x: V, y: V, mode: str) -> V:
    if x.kind == "nan" or y.kind == "nan":
        return NAN
    if x.kind == "inf" and y.kind == "inf":
        return x if x.neg == y.neg else NAN
    if x.kind == "inf":
        return x
    if y.kind == "inf":
        return y
    s = x.q + y.q
    if s == 0:
        if x.q == 0 and y.q == 0 and x.neg == y.neg:
            return _num(s, x.neg)
        return _num(s, mode == "rm")
    return _num(s)


def _mul(x: V, y: V) -> V:
    if x.kind == "nan" or y.kind == "nan":
        return NAN
    neg = x.neg != y.neg
    if x.kind == "inf" or y.kind == "inf":
        if (x.kind == "num" and x.q == 0) or (y.kind == "num" and y.q == 0):
            return NAN
        return _inf(neg)
    return _num(x.q * y.q, neg)


def _div(x: V, y: V) -> V:
    if x.kind == "nan" or y.kind == "nan":
        return NAN
    neg = x.neg != y.neg
    if x.kind == "inf":
        return NAN if y.kind == "inf" else _inf(neg)
    if y.kind == "inf":
        return _num(Fraction(0), neg)
    if y.q == 0:
        return NAN if x.q == 0 else _inf(neg)
    return _num(x.q / y.q, neg)


def ieee(op: str, vs: list[V], mode: str) -> V | tuple:
    if op == "add":
        return _add(vs[0], vs[1], mode)
    if op == "sub":
        return _add(vs[0], _neg(vs[1]), mode)
    if op == "mul":
        return _mul(vs[0], vs[1])
    if op == "fma":
        if any(v.kind == "nan" for v in vs):
            return NAN
        return _add(_mul(vs[0], vs[1]), vs[2], mode)
    if op == "div":
        return _div(vs[0], vs[1])
    if op == "rcp":
        return _div(V("num", False, Fraction(1)), vs[0])
    if op == "sqrt":
        x = vs[0]
        if x.kind == "nan" or (x.neg and not (x.kind == "num" and x.q == 0)):
            return NAN
        if x.kind == "inf" or x.q == 0:
            return x
        return ("sqrt", x.q)
    raise ValueError(op)


def ftz_kind(f: F) -> bool:
    return f.name in ("f32", "f16")


#: which NaN operand an f64 result carries (H200): add/sub/mul the second,
#: fma b then c then a, div/rcp/sqrt the first
NAN_ORDER = {"add": (1, 0), "sub": (1, 0), "mul": (1, 0), "fma": (1, 2, 0), "div": (0, 1), "rcp": (0,), "sqrt": (0,)}


def nan_result(f: F, ins: Sequence[int], in_fmts: Sequence[F], op: str = "add") -> int:
    """f64 propagates an operand's NaN payload (quietened); the other formats
    return their canonical NaN."""
    if f.name == "f64":
        for i in NAN_ORDER[op]:
            if in_fmts[i].name == "f64" and dec(ins[i], in_fmts[i]).kind == "nan":
                return ins[i] | 1 << 51
    return CANON[f.name]


def tiny(q: Fraction, f: F, mode: str) -> bool:
    """.ftz: q rounded to the format's precision with an unbounded exponent is
    below the smallest normal number (the H200 flush decision)."""
    a = abs(q)
    e = floor_log2(a)
    quantum = Fraction(2) ** (e - f.mbits)
    t = a / quantum
    n = math.floor(t)
    r = t - n
    n = _decide(n, (r > Fraction(1, 2)) - (r < Fraction(1, 2)), r != 0, q < 0, mode)
    return n * quantum < Fraction(2) ** f.emin


def post(bits: int, f: F, *, ftz_out=False, relu=False, sat=False) -> int:
    if ftz_out:
        bits = ftz(bits, f)
    if relu:
        d = dec(bits, f)
        bits = CANON[f.name] if d.kind == "nan" else (0 if d.neg else bits)
    if sat:
        d = dec(bits, f)
        if d.kind == "nan" or d.neg:
            bits = 0
        elif d.kind == "inf" or d.q > 1:
            bits = encode(Fraction(1), False, f)
    return bits


def ref_arith(op: str, f: F, mode: str, ins: Sequence[int], *, src: Sequence[F] | None = None,
              ftz_on=False, sat=False, relu=False, oob=False) -> int:
    src = list(src) if src else [f] * len(ins)
    ins = [ftz(b, sf) if ftz_on and ftz_kind(sf) else b for b, sf in zip(ins, src)]
    r = ieee(op, [dec(b, sf) for b, sf in zip(ins, src)], mode)
    if isinstance(r, tuple):
        out = round_sqrt(r[1], f, mode)
    elif r.kind == "nan":
        out = nan_result(f, ins, src, op)
    elif r.kind == "inf":
        out = (f.sign if r.neg else 0) | f.inf
    elif r.q == 0:
        out = f.sign if r.neg else 0
    elif ftz_on and ftz_kind(f) and tiny(r.q, f, mode):
        out = f.sign if r.neg else 0
    else:
        out = round_frac(r.q, f, mode)
    out = post(out, f, ftz_out=ftz_on and ftz_kind(f), relu=relu, sat=sat)
    if oob and any(b & 0x7FFF == OOB_NAN for b in ins):
        out = 0
    return out


# ---------------------------------------------------------------------------
# Kernels: groups of cases sharing their inputs
# ---------------------------------------------------------------------------


@dataclass
class Case:
    """``body``: PTX with ``{a}``, ``{b}``... (inputs) and ``{d0}``, ``{d1}``
    (results); ``ref(row)`` gives the expected bit patterns (a tuple for
    several results) or ``check(row, got)`` an error message or None.
    ``hw``: the instruction assembles for sm_90 (runs with ``--gpu``)."""

    id: str
    body: str
    outs: list[str]
    ref: Callable | None = None
    check: Callable | None = None
    hw: bool = True


@dataclass
class Group(InputGroup):
    version: str = "8.5"
    target: str = "sm_90"

    def add(self, id: str, body: str, outs, ref=None, check=None, hw=True) -> None:
        outs = [outs] if isinstance(outs, str) else list(outs)
        assert id not in {c.id for c in self.cases}, id
        self.cases.append(Case(id, body, outs, ref, check, hw))


def kernel_ptx(g: Group, cases: Sequence[Case], name: str = "k") -> str:
    k = ElementwiseKernel(g.version, g.target, name)
    regs = {iname: k.load(iname, t) for iname, (t, _v) in g.inputs.items()}
    for ci, c in enumerate(cases):
        names = dict(regs)
        for j, t in enumerate(c.outs):
            names[f"d{j}"] = k.reg(f"%o{ci}_{j}", ".b16" if t == ".b8" else t)
        k.add(c.body.format(**names))
        for j, t in enumerate(c.outs):
            addr = k.param(f"out_{ci}_{j}", 4 if t == PRED else WIDTH[t] // 8)
            # stored right away: results are not all live at the end (compile time)
            if t == PRED:
                w = k.reg(f"%ow{ci}_{j}", ".b32")
                k.add(f"selp.u32 {w}, 1, 0, {names[f'd{j}']}; st.global.u32 [{addr}], {w}")
            else:
                k.add(f"st.global{'.u8' if t == '.b8' else t} [{addr}], {names[f'd{j}']}")
    return k.ptx()


def _buffers(g: Group, cases: Sequence[Case]):
    ins = []
    for t, v in g.inputs.values():
        ins.append(np.array([x & M(WIDTH[t]) for x in v], dtype=DTYPE[t]))
    outs = [np.zeros(g.n, DTYPE[t]) for c in cases for t in c.outs]
    return ins, outs


def _split(cases: Sequence[Case], flat) -> dict[str, list[np.ndarray]]:
    out, i = {}, 0
    for c in cases:
        out[c.id] = flat[i:i + len(c.outs)]
        i += len(c.outs)
    return out


#: cases per emulated kernel (LLVM's backend slows down on very large blocks)
CHUNK = 16


def run_emulator(g: Group) -> dict[str, list[np.ndarray]]:
    out: dict[str, list[np.ndarray]] = {}
    for k in range(0, len(g.cases), CHUNK):
        cases = g.cases[k:k + CHUNK]
        ins, outs = _buffers(g, cases)
        out.update(_split(cases, emulate_elementwise(kernel_ptx(g, cases), ins + outs, g.n)[len(ins):]))
    return out


def run_cuda(g: Group) -> dict[str, list[np.ndarray]]:  # pragma: no cover
    cases = [c for c in g.cases if c.hw]
    if not cases:
        return {}
    g = Group(g.name, g.inputs, cases)  # sm_90, PTX 8.5
    ins, outs = _buffers(g, cases)
    return _split(cases, run_elementwise_on_gpu(kernel_ptx(g, cases), ins + outs, g.n)[len(ins):])


def problems(g: Group, c: Case, got: list[np.ndarray], limit: int = 6) -> list[str]:
    lines, nbad = [], 0
    for i, row in enumerate(g.rows()):
        vals = tuple(int(a[i]) for a in got)
        if c.ref is not None:
            exp = c.ref(row)
            exp = exp if isinstance(exp, tuple) else (exp,)
            exp = tuple(int(v) & M(WIDTH[t]) for v, t in zip(exp, c.outs))
            msg = None if exp == vals else f"expected {', '.join(hex(v) for v in exp)}, got {', '.join(hex(v) for v in vals)}"
        else:
            msg = c.check(row, vals)
        if msg:
            nbad += 1
            if len(lines) < limit:
                ins = ", ".join(f"{k}={v:#x}" for k, v in row.items())
                lines.append(f"{c.id}: {ins}: {msg}")
    if nbad > limit:
        lines.append(f"... {nbad} of {g.n} inputs differ")
    return lines


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

RNG = np.random.default_rng(20261126)


def edges(f: F) -> list[int]:
    """Edge encodings: zeros, subnormals, smallest normal, largest finite,
    infinities, NaNs with payloads, small integers and neighbours of 1."""
    one = encode(Fraction(1), False, f)
    mags = [0, 1, 2, 3, M(f.mbits), M(f.mbits) - 1, 1 << f.mbits, (1 << f.mbits) + 1, max_enc(f), max_enc(f) - 1,
            one, one + 1, one - 1, encode(Fraction(3, 2), False, f), encode(Fraction(2), False, f),
            encode(Fraction(3), False, f), encode(Fraction(1, 2), False, f), encode(Fraction(5, 4), False, f)]
    if f.ieee:
        mags += [f.inf, f.inf | 1 << (f.mbits - 1), f.inf | 1, f.inf | M(f.mbits)]
    out = []
    for m in mags:
        out += [m, m | f.sign]
    return out


def short(f: F, n: int, sig: int, emin: int, emax: int) -> list[int]:
    """Random values with ``sig``-bit significands (sums, products, quotients of
    these often fall exactly on, or next to, rounding ties)."""
    out = []
    for _ in range(n):
        m = int(RNG.integers(1 << (sig - 1), 1 << sig))
        e = int(RNG.integers(emin, emax + 1))
        q = Fraction(m) * Fraction(2) ** (e - sig + 1)
        q = -q if RNG.random() < 0.5 else q
        out.append(round_frac(q, f, "rn"))
    return out


def rand_bits(f: F, n: int) -> list[int]:
    return [int(x) for x in RNG.integers(0, 1 << f.width, n, dtype=np.uint64)]


def rand_normal(f: F, n: int, spread: int) -> list[int]:
    out = []
    for _ in range(n):
        m = int(RNG.integers(0, 1 << f.mbits))
        e = int(RNG.integers(-spread, spread + 1)) + f.bias
        e = min(max(e, 1), M(f.ebits) - 1)
        out.append(int(RNG.integers(0, 2)) << (f.width - 1) | e << f.mbits | m)
    return out


def values(f: F, n: int) -> list[int]:
    """n mixed inputs: random encodings, random normals, short significands."""
    k = n // 3
    spread = min(f.bias - 2, 40)
    return (rand_bits(f, k) + rand_normal(f, k, spread) + short(f, n - 2 * k, max(2, (f.mbits + 1) // 2), -spread, spread))


def operands(f: F, arity: int, n_rand: int = 300, n_edge: int = 14) -> list[list[int]]:
    """Columns for an ``arity``-operand instruction: edge values crossed with each
    other (a subset) and with random values, plus random tuples."""
    ed = edges(f)
    sub = ed[: 2 * n_edge // 2] if arity > 2 else ed
    cols: list[list[int]] = [[] for _ in range(arity)]
    if arity == 1:
        cols[0] = ed + values(f, n_rand)
        return cols
    pick = [ed[i] for i in RNG.choice(len(ed), min(len(ed), 2 * n_edge), replace=False)]
    for x in pick:
        for y in pick[: n_edge]:
            row = [x, y] + [int(v) for v in RNG.choice(sub, arity - 2)]
            for c, v in zip(cols, row):
                c.append(v)
    vals = [values(f, n_rand) for _ in range(arity)]
    # ties: a value and a tiny one (sums exactly halfway between two results)
    for i in range(n_rand // 3):
        x = dec(vals[0][i], f)
        if x.kind == "num" and x.q != 0:
            e = floor_log2(abs(x.q)) - f.mbits - 1 - int(RNG.integers(0, 3))
            tiny = Fraction(2) ** e * Fraction(int(RNG.choice([1, -1, 3, -3, 33, -31])), int(RNG.choice([1, 1, 32])))
            vals[1][i] = round_frac(tiny, f, "rn")
    for c, v in zip(cols, vals):
        c += v
    return cols


# ---------------------------------------------------------------------------
# Groups
# ---------------------------------------------------------------------------

MODES = ("rn", "rz", "rm", "rp")
REG = {16: ".b16", 32: ".b32", 64: ".b64"}
ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "div": 2, "sqrt": 1, "rcp": 1}
_ABC = "abc"


def _body(op: str, n: int) -> str:
    return f"{op} {{d0}}, " + ", ".join("{" + _ABC[i] + "}" for i in range(n)) + ";"


def _arith_ref(op, f, mode, **kw):
    n = ARITY[op]
    return lambda r: ref_arith(op, f, mode, [r[_ABC[i]] for i in range(n)], **kw)


_N1, _N2, _N3 = 0x7FF0000000000001, 0xFFF8000000000002, 0x7FF8000000000003
#: rows checked on an H200: .ftz flush decisions at the smallest normal
#: (rounding with an unbounded exponent), f64 NaN operand priority
EXTRA_ROWS = {
    "f32": [(0x00800001, 0x3F7FFFFE, 0x00800001), (0x00800000, 0x3F7FFFFF, 0x80800000), (0x00800001, 0x3F7FFFFD, 0),
            (0x00800003, 0x3F7FFFFC, 0x80000000), (0x80800001, 0x3F7FFFFE, 0x00000001), (0x3F800000, 0x00800000, 0x80000001)],
    "f16": [(0x0401, 0x3BFE, 0x0401), (0x0400, 0x3BFF, 0x8400), (0x8401, 0x3BFE, 0), (0x0401, 0x3BFF, 0x8001)],
    "f64": [(_N1, 0x3FF0000000000000, _N2), (_N1, _N2, _N3), (0x3FF0000000000000, _N1, _N2), (_N3, _N1, _N2),
            (_N2, 0x3FF0000000000000, _N1), (0x7FF0000000000000, 0xFFF0000000000000, _N3), (0, 0x7FF0000000000000, 0)],
}


def group_arith(f: F) -> Group:
    """add/sub/mul/fma/mad/div/sqrt/rcp in every rounding mode, .ftz, .sat."""
    t = REG[f.width]
    cols = operands(f, 3)
    for row in EXTRA_ROWS.get(f.name, []):
        for c, v in zip(cols, row):
            c.append(v)
    g = Group(f"arith_{f.name}", {k: (t, v) for k, v in zip("abc", cols)})
    for op in ("add", "sub", "mul", "fma", "div", "sqrt", "rcp"):
        for mode in MODES:
            g.add(f"{op}.{mode}.{f.name}", _body(f"{op}.{mode}.{f.name}", ARITY[op]), t, _arith_ref(op, f, mode))
            if f.name == "f32":
                ins = f"{op}.{mode}.ftz.{f.name}"
                g.add(ins, _body(ins, ARITY[op]), t, _arith_ref(op, f, mode, ftz_on=True))
                if op in ("add", "sub", "mul", "fma"):
                    ins = f"{op}.{mode}.ftz.sat.{f.name}" if mode in ("rz", "rp") else f"{op}.{mode}.sat.{f.name}"
                    g.add(ins, _body(ins, ARITY[op]), t, _arith_ref(op, f, mode, ftz_on=".ftz" in ins, sat=True))
    g.add(f"mad.rn.{f.name}", _body(f"mad.rn.{f.name}", 3), t, _arith_ref("fma", f, "rn"))
    g.add(f"add.{f.name}", _body(f"add.{f.name}", 2), t, _arith_ref("add", f, "rn"))
    if f.name == "f64":
        for op in ("div", "rcp", "sqrt"):  # default rounding .rn (old PTX; ptxas now wants a modifier)
            g.add(f"{op}.f64", _body(f"{op}.f64", ARITY[op]), t, _arith_ref(op, f, "rn"), hw=False)
    return g


def group_half(f: F) -> Group:
    """f16/bf16 scalar and x2: add/sub/mul/fma (.rn), .ftz, .sat, .relu, .oob."""
    cols = operands(f, 3)
    for row in EXTRA_ROWS.get(f.name, []):
        for c, v in zip(cols, row):
            c.append(v)
    n = len(cols[0])
    # the x2 inputs pair each element with another one
    perm = [list(RNG.permutation(n)) for _ in range(3)]
    pk = [[c[i] | c[j] << 16 for i, j in zip(range(n), p)] for c, p in zip(cols, perm)]
    g = Group(f"half_{f.name}", {**{k: (".b16", v) for k, v in zip("abc", cols)},
                                  **{k: (".b32", v) for k, v in zip("xyz", pk)}})
    mods = [("", {})]
    if f.name == "f16":
        mods += [(".ftz", {"ftz_on": True}), (".sat", {"sat": True}), (".ftz.sat", {"ftz_on": True, "sat": True})]
    for op in ("add", "sub", "mul", "fma"):
        for m, kw in mods:
            if op == "fma" and m == "":
                m = ".rn"
            elif op == "fma":
                m = ".rn" + m
            ins = f"{op}{m}.{f.name}"
            g.add(ins, _body(ins, ARITY[op]), ".b16", _arith_ref(op, f, "rn", **kw))
            insx = f"{op}{m}.{f.name}x2"
            bodyx = insx + " {d0}, " + ", ".join("{" + "xyz"[i] + "}" for i in range(ARITY[op])) + ";"

            def refx(r, op=op, kw=kw):
                lo = ref_arith(op, f, "rn", [r["xyz"[i]] & 0xFFFF for i in range(ARITY[op])], **kw)
                hi = ref_arith(op, f, "rn", [r["xyz"[i]] >> 16 for i in range(ARITY[op])], **kw)
                return lo | hi << 16
            g.add(insx, bodyx, ".b32", refx)
    relu = [".rn.relu"] + ([".rn.ftz.relu"] if f.name == "f16" else [])
    for m in relu + [".rn.oob", ".rn.oob.relu"]:
        kw = {"relu": "relu" in m, "oob": "oob" in m, "ftz_on": "ftz" in m}
        g.add(f"fma{m}.{f.name}", _body(f"fma{m}.{f.name}", 3), ".b16", _arith_ref("fma", f, "rn", **kw))
    for m in (".rn.relu", ".rn.oob"):
        kw = {"relu": "relu" in m, "oob": "oob" in m}

        def refx(r, kw=kw):
            lo = ref_arith("fma", f, "rn", [r[k] & 0xFFFF for k in "xyz"], **kw)
            hi = ref_arith("fma", f, "rn", [r[k] >> 16 for k in "xyz"], **kw)
            return lo | hi << 16
        g.add(f"fma{m}.{f.name}x2", f"fma{m}.{f.name}x2 {{d0}}, {{x}}, {{y}}, {{z}};", ".b32", refx)
    return g


def group_f32x2() -> Group:
    """.f32x2 (sm_100, PTX 8.6) add/sub/mul/fma in every mode; mixed f32.f16/bf16."""
    cols = operands(F32, 3)
    n = len(cols[0])
    perm = [list(RNG.permutation(n)) for _ in range(3)]
    pk = [[c[i] | c[j] << 32 for i, j in zip(range(n), p)] for c, p in zip(cols, perm)]
    h = operands(F16, 2)
    bh = operands(BF16, 2)
    g = Group("f32x2", {**{k: (".b64", v) for k, v in zip("xyz", pk)}, "c": (".b32", cols[2]),
                        "h": (".b16", (h[0] * 2)[:n]), "k": (".b16", (h[1] * 2)[:n]), "u": (".b16", (bh[0] * 2)[:n])},
              version="8.7", target="sm_100")
    for op in ("add", "sub", "mul", "fma"):
        for mode in MODES:
            for ftz_m in ("", ".ftz"):
                ins = f"{op}.{mode}{ftz_m}.f32x2"
                body = f"{ins} {{d0}}, " + ", ".join("{" + "xyz"[i] + "}" for i in range(ARITY[op])) + ";"

                def ref(r, op=op, mode=mode, z=bool(ftz_m)):
                    lo = ref_arith(op, F32, mode, [r["xyz"[i]] & M(32) for i in range(ARITY[op])], ftz_on=z)
                    hi = ref_arith(op, F32, mode, [r["xyz"[i]] >> 32 for i in range(ARITY[op])], ftz_on=z)
                    return lo | hi << 32
                g.add(ins, body, ".b64", ref, hw=False)
    for mode in MODES:
        for lt, src in ((".f16", "h"), (".bf16", "u")):
            lf = FMT[lt[1:]]
            g.add(f"add.{mode}.f32{lt}", f"add.{mode}.f32{lt} {{d0}}, {{{src}}}, {{c}};", ".b32",
                  lambda r, mode=mode, lf=lf, s=src: ref_arith("add", F32, mode, [r[s], r["c"]], src=[lf, F32]), hw=False)
            g.add(f"sub.{mode}.sat.f32{lt}", f"sub.{mode}.sat.f32{lt} {{d0}}, {{{src}}}, {{c}};", ".b32",
                  lambda r, mode=mode, lf=lf, s=src: ref_arith("sub", F32, mode, [r[s], r["c"]], src=[lf, F32], sat=True),
                  hw=False)
        g.add(f"fma.{mode}.f32.f16", f"fma.{mode}.f32.f16 {{d0}}, {{h}}, {{k}}, {{c}};", ".b32",
              lambda r, mode=mode: ref_arith("fma", F32, mode, [r["h"], r["k"], r["c"]], src=[F16, F16, F32]), hw=False)
    return g


# --- neg / abs / copysign / testp / min / max ---------------------------------


def ref_minmax(xs: Sequence[int], f: F, is_max: bool, *, nan=False, xorsign=False, ftz_on=False) -> int:
    """The ISA's pseudo-code for min/max; a NaN result is the canonical NaN
    (f64: the NaN operand, quietened)."""
    if ftz_on:
        xs = [ftz(x, f) for x in xs]
    sgn = (xs[0] ^ xs[1]) & f.sign if xorsign else 0
    if xorsign:
        xs = [x & (f.sign - 1) for x in xs]

    def isnan(x):
        return dec(x, f).kind == "nan"

    def key(x):  # -0 < +0
        d = dec(x, f)
        if d.kind == "inf":
            return (Fraction(-1 if d.neg else 1) * Fraction(2) ** 2000, 0)
        return (d.q, 0 if d.neg else 1)

    def two(x, y):
        if nan and (isnan(x) or isnan(y)):
            return CANON[f.name]
        if isnan(x):
            return y
        if isnan(y):
            return x
        if is_max:
            return x if key(x) > key(y) else y
        return x if key(x) < key(y) else y

    z = two(xs[0], xs[1])
    for x in xs[2:]:
        z = two(z, x)
    if isnan(z):
        return z | 1 << 51 if f.name == "f64" else CANON[f.name]
    return (z & (f.sign - 1)) | sgn if xorsign else z


def ref_sign(how: str, x: int, f: F) -> int:
    """neg/abs: the sign bit; a NaN gives the canonical NaN, or for f64 the NaN
    quietened with its sign unchanged (what an H200 does; the ISA leaves f32
    unspecified and passes f64 NaNs through)."""
    if dec(x, f).kind == "nan":
        return x | 1 << 51 if f.name == "f64" else CANON[f.name]
    return x ^ f.sign if how == "neg" else x & (f.sign - 1)


def group_misc(f: F) -> Group:
    t = REG[f.width]
    cols = operands(f, 2)
    g = Group(f"misc_{f.name}", {"a": (t, cols[0]), "b": (t, cols[1])})
    z = ".ftz" if ftz_kind(f) else ""
    g.add(f"neg.{f.name}", f"neg.{f.name} {{d0}}, {{a}};", t, lambda r: ref_sign("neg", r["a"], f))
    g.add(f"abs.{f.name}", f"abs.{f.name} {{d0}}, {{a}};", t, lambda r: ref_sign("abs", r["a"], f))
    if z:
        g.add(f"neg{z}.{f.name}", f"neg{z}.{f.name} {{d0}}, {{a}};", t, lambda r: ref_sign("neg", ftz(r["a"], f), f))
        g.add(f"abs{z}.{f.name}", f"abs{z}.{f.name} {{d0}}, {{a}};", t, lambda r: ref_sign("abs", ftz(r["a"], f), f))
    variants = [("", {})]
    if z:
        variants.append((z, {"ftz_on": True}))
    if f.name != "f64":
        variants += [(".NaN", {"nan": True}), (".xorsign.abs", {"xorsign": True}), (".NaN.xorsign.abs", {"nan": True, "xorsign": True})]
        if z:
            variants.append((z + ".NaN", {"nan": True, "ftz_on": True}))
    for name, is_max in (("min", False), ("max", True)):
        for m, kw in variants:
            g.add(f"{name}{m}.{f.name}", f"{name}{m}.{f.name} {{d0}}, {{a}}, {{b}};", t,
                  lambda r, is_max=is_max, kw=kw: ref_minmax([r["a"], r["b"]], f, is_max, **kw))
    if f.name in ("f32", "f64"):
        g.add(f"copysign.{f.name}", f"copysign.{f.name} {{d0}}, {{a}}, {{b}};", t,
              lambda r: (r["b"] & (f.sign - 1)) | (r["a"] & f.sign))
        tests = {
            "finite": lambda d: d.kind == "num", "infinite": lambda d: d.kind == "inf",
            "number": lambda d: d.kind != "nan", "notanumber": lambda d: d.kind == "nan",
            "normal": lambda d: d.kind == "num" and (d.q == 0 or abs(d.q) >= Fraction(2) ** f.emin),
            "subnormal": lambda d: d.kind == "num" and d.q != 0 and abs(d.q) < Fraction(2) ** f.emin,
        }
        for k, fn in tests.items():
            g.add(f"testp.{k}.{f.name}", f"testp.{k}.{f.name} {{d0}}, {{a}};", PRED,
                  lambda r, fn=fn: int(fn(dec(r["a"], f))))
    return g


def group_minmax3() -> Group:
    """Three-input min/max (.f32, sm_100) and packed half min/max."""
    cols = operands(F32, 3)
    g = Group("minmax3", {k: (".b32", v) for k, v in zip("abc", cols)}, version="8.7", target="sm_100")
    for name, is_max in (("min", False), ("max", True)):
        for m, kw in (("", {}), (".NaN", {"nan": True}), (".ftz", {"ftz_on": True})):
            g.add(f"{name}{m}.f32 (3 inputs)", f"{name}{m}.f32 {{d0}}, {{a}}, {{b}}, {{c}};", ".b32",
                  lambda r, is_max=is_max, kw=kw: ref_minmax([r["a"], r["b"], r["c"]], F32, is_max, **kw), hw=False)
        g.add(f"{name}.abs.f32 (3 inputs)", f"{name}.abs.f32 {{d0}}, {{a}}, {{b}}, {{c}};", ".b32",
              lambda r, is_max=is_max: ref_minmax([x & M(31) for x in (r["a"], r["b"], r["c"])], F32, is_max), hw=False)
    return g


def packed_pairs(f: F) -> tuple[list[int], list[int]]:
    """Operands of the .x2 forms: two words, each holding two values of ``f`` (16-bit);
    the high halves pair the operand columns in another order than the low halves."""
    cols = operands(f, 2)
    n = len(cols[0])
    p = list(RNG.permutation(n))
    return ([cols[0][i] | cols[1][p[i]] << 16 for i in range(n)],
            [cols[1][i] | cols[0][p[i]] << 16 for i in range(n)])


def group_minmax_x2(f: F) -> Group:
    x, y = packed_pairs(f)
    g = Group(f"minmax_{f.name}x2", {"x": (".b32", x), "y": (".b32", y)})
    variants = [("", {}), (".NaN", {"nan": True}), (".xorsign.abs", {"xorsign": True})]
    if f.name == "f16":
        variants.append((".ftz", {"ftz_on": True}))
    for name, is_max in (("min", False), ("max", True)):
        for m, kw in variants:
            g.add(f"{name}{m}.{f.name}x2", f"{name}{m}.{f.name}x2 {{d0}}, {{x}}, {{y}};", ".b32",
                  lambda r, is_max=is_max, kw=kw: ref_minmax([r["x"] & 0xFFFF, r["y"] & 0xFFFF], f, is_max, **kw)
                  | ref_minmax([r["x"] >> 16, r["y"] >> 16], f, is_max, **kw) << 16)
    for how in ("neg", "abs"):
        g.add(f"{how}.{f.name}x2", f"{how}.{f.name}x2 {{d0}}, {{x}};", ".b32",
              lambda r, how=how: ref_sign(how, r["x"] & 0xFFFF, f) | ref_sign(how, r["x"] >> 16, f) << 16)
    return g


# --- comparisons ----------------------------------------------------------------

CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def ref_cmp(op: str, x: int, y: int, f: F, ftz_on=False) -> bool:
    if ftz_on:
        x, y = ftz(x, f), ftz(y, f)
    dx, dy = dec(x, f), dec(y, f)
    unordered = dx.kind == "nan" or dy.kind == "nan"
    if op == "num":
        return not unordered
    if op == "nan":
        return unordered
    if unordered:
        return op.endswith("u")

    def v(d):
        return d.q if d.kind == "num" else (Fraction(-1) if d.neg else Fraction(1)) * Fraction(2) ** 2000
    a, b = v(dx), v(dy)
    base = op[:2]
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[base]


def group_compare(f: F) -> Group:
    t = REG[f.width]
    cols = operands(f, 2)
    n = len(cols[0])
    c = [int(x) for x in RNG.integers(0, 2, n)]
    g = Group(f"compare_{f.name}", {"a": (t, cols[0]), "b": (t, cols[1]), "p": (PRED, c)})
    z = ftz_kind(f) and f.name != "f64"
    for op in CMPS:
        g.add(f"setp.{op}.{f.name}", f"setp.{op}.{f.name} {{d0}}, {{a}}, {{b}};", PRED,
              lambda r, op=op: int(ref_cmp(op, r["a"], r["b"], f)))
        if z:
            g.add(f"setp.{op}.ftz.{f.name}", f"setp.{op}.ftz.{f.name} {{d0}}, {{a}}, {{b}};", PRED,
                  lambda r, op=op: int(ref_cmp(op, r["a"], r["b"], f, True)))
    for bop, fn in (("and", lambda p, q: p & q), ("or", lambda p, q: p | q), ("xor", lambda p, q: p ^ q)):
        if f.width == 16:  # scalar half comparisons write one predicate
            g.add(f"setp.lt.{bop}.{f.name}", f"setp.lt.{bop}.{f.name} {{d0}}, {{a}}, {{b}}, {{p}};", PRED,
                  lambda r, fn=fn: fn(int(ref_cmp("lt", r["a"], r["b"], f)), r["p"]))
            continue
        g.add(f"setp.lt.{bop}.{f.name} p|q", f"setp.lt.{bop}.{f.name} {{d0}}|{{d1}}, {{a}}, {{b}}, {{p}};", [PRED, PRED],
              lambda r, fn=fn: (fn(int(ref_cmp("lt", r["a"], r["b"], f)), r["p"]),
                                fn(1 - int(ref_cmp("lt", r["a"], r["b"], f)), r["p"])))
    g.add(f"setp.geu.or.{f.name} !p", f"setp.geu.or.{f.name} {{d0}}, {{a}}, {{b}}, !{{p}};", PRED,
          lambda r: int(ref_cmp("geu", r["a"], r["b"], f)) | (1 - r["p"]))
    one = {16: None, 32: f32_bits(1.0), 64: None}[f.width]
    for d, tv in ((".u32", None), (".s32", None), (".f32", one)):
        if f.width != 32 and d == ".f32":
            continue
        g.add(f"set.ltu{d}.{f.name}", f"set.ltu{d}.{f.name} {{d0}}, {{a}}, {{b}};", ".b32",
              lambda r, tv=tv: (tv if tv else M(32)) if ref_cmp("ltu", r["a"], r["b"], f) else 0)
    if f.width == 16:
        one16 = encode(Fraction(1), False, f)
        g.add(f"set.gt.{f.name}.{f.name}", f"set.gt.{f.name}.{f.name} {{d0}}, {{a}}, {{b}};", ".b16",
              lambda r: one16 if ref_cmp("gt", r["a"], r["b"], f) else 0)
        g.add(f"set.num.and.u16.{f.name}", f"set.num.and.u16.{f.name} {{d0}}, {{a}}, {{b}}, {{p}};", ".b16",
              lambda r: 0xFFFF if ref_cmp("num", r["a"], r["b"], f) and r["p"] else 0)
    if f.name == "f32":
        for zz in ("", ".ftz"):
            g.add(f"slct{zz}.b32.f32", f"slct{zz}.b32.f32 {{d0}}, {{a}}, {{b}}, {{b}};", ".b32",
                  lambda r, zz=zz: r["a"] if _ge0(ftz(r["b"], F32) if zz else r["b"]) else r["b"])
        g.add("set.gt.f32.f32 (d=1.0f)", "set.gt.f32.f32 {d0}, {a}, {b};", ".b32",
              lambda r: f32_bits(1.0) if ref_cmp("gt", r["a"], r["b"], F32) else 0)
    return g


def _ge0(b: int) -> bool:
    d = dec(b, F32)
    return d.kind != "nan" and (not d.neg or (d.kind == "num" and d.q == 0))


def group_compare_x2(f: F) -> Group:
    x, y = packed_pairs(f)
    pr = [int(v) for v in RNG.integers(0, 2, len(x))]
    g = Group(f"compare_{f.name}x2", {"x": (".b32", x), "y": (".b32", y), "p": (PRED, pr)})
    for op in ("lt", "geu", "nan", "ne"):
        z = ".ftz" if f.name == "f16" and op == "lt" else ""
        g.add(f"setp.{op}{z}.{f.name}x2", f"setp.{op}{z}.{f.name}x2 {{d0}}|{{d1}}, {{x}}, {{y}};", [PRED, PRED],
              lambda r, op=op, z=z: (int(ref_cmp(op, r["x"] & 0xFFFF, r["y"] & 0xFFFF, f, bool(z))),
                                     int(ref_cmp(op, r["x"] >> 16, r["y"] >> 16, f, bool(z)))))
    g.add(f"setp.le.and.{f.name}x2", f"setp.le.and.{f.name}x2 {{d0}}|{{d1}}, {{x}}, {{y}}, {{p}};", [PRED, PRED],
          lambda r: (int(ref_cmp("le", r["x"] & 0xFFFF, r["y"] & 0xFFFF, f)) & r["p"],
                     int(ref_cmp("le", r["x"] >> 16, r["y"] >> 16, f)) & r["p"]))
    one = encode(Fraction(1), False, f)
    g.add(f"set.lt.{f.name}x2.{f.name}x2", f"set.lt.{f.name}x2.{f.name}x2 {{d0}}, {{x}}, {{y}};", ".b32",
          lambda r: (one if ref_cmp("lt", r["x"] & 0xFFFF, r["y"] & 0xFFFF, f) else 0)
          | (one if ref_cmp("lt", r["x"] >> 16, r["y"] >> 16, f) else 0) << 16)
    g.add(f"set.equ.u32.{f.name}x2", f"set.equ.u32.{f.name}x2 {{d0}}, {{x}}, {{y}};", ".b32",
          lambda r: (0xFFFF if ref_cmp("equ", r["x"] & 0xFFFF, r["y"] & 0xFFFF, f) else 0)
          | (0xFFFF if ref_cmp("equ", r["x"] >> 16, r["y"] >> 16, f) else 0) << 16)
    return g


# --- approximate functions ------------------------------------------------------


def _val(b: int, f: F) -> float:
    d = dec(b, f)
    if d.kind == "nan":
        return math.nan
    if d.kind == "inf":
        return -math.inf if d.neg else math.inf
    return -0.0 if (d.q == 0 and d.neg) else float(d.q)


def _ulp(x: float, f: F) -> float:
    a = abs(x)
    e = f.emin if a == 0 else max(math.frexp(a)[1] - 1, f.emin)
    return 2.0 ** (e - f.mbits)


def approx_check(fn: Callable[[float], float], f: F, kind: str, bound: float, *, ftz_on=False,
                 domain: Callable[[float], bool] = lambda x: True, table: list | None = None):
    """Checks a result against fn(x) (computed in float64): ``kind`` is 'ulp',
    'rel' or 'abs'; NaN/inf/zero results must match exactly (sign included),
    and inputs of ``table`` give exact results."""

    def check(row, got):
        a = row["a"]
        if ftz_on:
            a = ftz(a, f)
        g = got[0]
        if ftz_on and is_sub(g, f):
            return f"subnormal result {g:#x} with .ftz"
        x = _val(a, f)
        if table is not None:
            for k, v in table:
                if (math.isnan(k) and math.isnan(x)) or (k == x and math.copysign(1, k) == math.copysign(1, x)):
                    gv = _val(g, f)
                    if math.isnan(v):
                        return None if g == CANON[f.name] else f"expected the canonical NaN, got {g:#x}"
                    ok = gv == v and math.copysign(1, gv) == math.copysign(1, v)
                    return None if ok else f"expected {v!r}, got {gv!r} ({g:#x})"
        try:
            want = fn(x)
        except (ValueError, OverflowError, ZeroDivisionError):
            want = math.nan
        gv = _val(g, f)
        if math.isnan(want):
            return None if g == CANON[f.name] else f"expected the canonical NaN, got {g:#x}"
        if not domain(x):
            return None
        if ftz_on and abs(want) < 2.0**f.emin:
            return None if gv == 0 else f"expected a flushed zero, got {gv!r}"
        if math.isinf(want) or abs(want) > float(f.max_value):
            if math.isinf(gv) and math.copysign(1, gv) == math.copysign(1, want):
                return None
            if abs(gv) >= float(f.max_value) * 0.999:
                return None
            return f"expected {want!r}, got {gv!r}"
        if math.isinf(gv) or math.isnan(gv):
            return f"expected {want!r}, got {gv!r} ({g:#x})"
        err = abs(gv - want)
        lim = {"ulp": bound * _ulp(want, f), "rel": bound * abs(want), "abs": bound}[kind]
        if kind == "rel" and abs(want) < 2.0 ** (f.emin + f.mbits):
            lim = max(lim, _ulp(want, f))  # relative error is meaningless among subnormals
        return None if err <= lim else f"{x!r}: expected {want!r} within {lim!r}, got {gv!r} (error {err!r})"
    return check


def _exp2(x: float) -> float:
    return math.inf if x >= 1024 else (0.0 if x < -1100 else 2.0**x)


def _sin_dom(x):
    return abs(x) <= 100 * math.pi


def _lg2_bound(x):
    return x > 0


def group_approx() -> Group:
    a = edges(F32) + values(F32, 300) + [f32_bits(x) for x in RNG.uniform(-7, 7, 100)] + [
        f32_bits(x) for x in RNG.uniform(0.25, 4, 60)]
    g = Group("approx_f32", {"a": (".b32", a)})
    inf, nan = math.inf, math.nan
    specs = {
        "rcp.approx": (lambda x: 1 / x, "ulp", 1, [(-inf, -0.0), (-0.0, -inf), (0.0, inf), (inf, 0.0), (nan, nan)]),
        "sqrt.approx": (math.sqrt, "rel", 2**-23, [(-inf, nan), (-0.0, -0.0), (0.0, 0.0), (inf, inf), (nan, nan)]),
        "rsqrt.approx": (lambda x: 1 / math.sqrt(x), "rel", 2**-22.9, [(-inf, nan), (-0.0, -inf), (0.0, inf), (inf, 0.0), (nan, nan)]),
        "sin.approx": (math.sin, "abs", 2**-14.7, [(-inf, nan), (-0.0, -0.0), (0.0, 0.0), (inf, nan), (nan, nan)]),
        "cos.approx": (math.cos, "abs", 2**-14.7, [(-inf, nan), (-0.0, 1.0), (0.0, 1.0), (inf, nan), (nan, nan)]),
        "lg2.approx": (math.log2, "abs", 2**-22, [(-inf, nan), (-0.0, -inf), (0.0, -inf), (inf, inf), (nan, nan)]),
        "ex2.approx": (_exp2, "ulp", 2, [(-inf, 0.0), (-0.0, 1.0), (0.0, 1.0), (inf, inf), (nan, nan)]),
        "tanh.approx": (math.tanh, "rel", 2**-11, [(-inf, -1.0), (-0.0, -0.0), (0.0, 0.0), (inf, 1.0), (nan, nan)]),
    }
    for ins, (fn, kind, bound, table) in specs.items():
        dom = _sin_dom if ins.startswith(("sin", "cos")) else (lambda x: True)
        for z in (("", ".ftz") if not ins.startswith("tanh") else ("",)):
            name = ins + z + ".f32"
            if ins.startswith("lg2"):
                chk = _lg2_check(bool(z))
            else:
                chk = approx_check(fn, F32, kind, bound, ftz_on=bool(z), domain=dom, table=table)
            g.add(name, f"{name} {{d0}}, {{a}};", ".b32", check=chk)
    # the ISA states 2**-20.5 in [-2pi, 2pi]; an H200 reaches 6.78e-7 (2**-20.49)
    # for cos(4.898), so the bound here is 2**-20.45
    g.add("sin.approx.f32 [-2pi, 2pi]", "sin.approx.f32 {d0}, {a};", ".b32",
          check=approx_check(math.sin, F32, "abs", 2**-20.45, domain=lambda x: abs(x) <= 2 * math.pi))
    g.add("cos.approx.f32 [-2pi, 2pi]", "cos.approx.f32 {d0}, {a};", ".b32",
          check=approx_check(math.cos, F32, "abs", 2**-20.45, domain=lambda x: abs(x) <= 2 * math.pi))
    return g


def _lg2_check(z: bool):
    inner = approx_check(math.log2, F32, "abs", 2**-22, ftz_on=z, domain=lambda x: 0.5 < x < 2,
                         table=[(-math.inf, math.nan), (-0.0, -math.inf), (0.0, -math.inf), (math.inf, math.inf), (math.nan, math.nan)])
    outer = approx_check(math.log2, F32, "rel", 2**-22, ftz_on=z, domain=lambda x: x > 0 and not 0.5 < x < 2,
                         table=[(-math.inf, math.nan), (-0.0, -math.inf), (0.0, -math.inf), (math.inf, math.inf), (math.nan, math.nan)])

    def check(row, got):
        return inner(row, got) or outer(row, got)
    return check


def group_div_approx() -> Group:
    cols = operands(F32, 2)
    g = Group("div_approx", {"a": (".b32", cols[0]), "b": (".b32", cols[1])})

    def chk(z: bool, full: bool):
        def check(row, got):
            a, b = row["a"], row["b"]
            if z:
                a, b = ftz(a, F32), ftz(b, F32)
            x, y = _val(a, F32), _val(b, F32)
            gv = _val(got[0], F32)
            if z and is_sub(got[0], F32):
                return "subnormal result with .ftz"
            if math.isnan(x) or math.isnan(y):
                return None if got[0] == CANON["f32"] else f"expected NaN, got {got[0]:#x}"
            if not full and 2.0**126 < abs(y) < 2.0**128:
                if math.isinf(x):
                    return None if math.isnan(gv) else f"expected NaN, got {gv!r}"
                ok = gv == 0 and math.copysign(1, gv) == math.copysign(1, x) * math.copysign(1, y)
                return None if ok else f"expected a signed zero, got {gv!r}"
            r = _div(dec(a, F32), dec(b, F32))
            if r.kind == "nan":
                return None if got[0] == CANON["f32"] else f"expected NaN, got {got[0]:#x}"
            if r.kind == "inf" or (r.kind == "num" and r.q == 0):
                want = _val((F32.sign if r.neg else 0) | (F32.inf if r.kind == "inf" else 0), F32)
                if gv == want and math.copysign(1, gv) == math.copysign(1, want):
                    return None
                if not full and abs(y) < 2.0**-126 and math.isinf(gv):
                    return None
                return f"expected {want!r}, got {gv!r}"
            want = float(r.q)
            if not full and (abs(y) < 2.0**-126 or abs(want) < 2.0**-126):
                return None  # outside the stated range (reciprocal or result subnormal)
            if abs(want) > float(F32.max_value) - 2 * _ulp(float(F32.max_value), F32):
                return None if math.isinf(gv) or abs(gv) >= float(F32.max_value) * 0.999 else f"expected overflow, got {gv!r}"
            if z and abs(want) < 2.0**-126:
                return None
            err = abs(gv - want)
            return None if err <= 2 * _ulp(want, F32) else f"expected {want!r} within 2 ulp, got {gv!r}"
        return check
    for z in ("", ".ftz"):
        g.add(f"div.approx{z}.f32", f"div.approx{z}.f32 {{d0}}, {{a}}, {{b}};", ".b32", check=chk(bool(z), False))
        g.add(f"div.full{z}.f32", f"div.full{z}.f32 {{d0}}, {{a}}, {{b}};", ".b32", check=chk(bool(z), True))
    return g


def group_approx_half() -> Group:
    hv = edges(F16) + values(F16, 200) + [f16_bits(x) for x in RNG.uniform(-6, 6, 80)]
    bv = edges(BF16) + values(BF16, 200) + [f32_bits(x) >> 16 for x in RNG.uniform(-6, 6, 80)]
    n = max(len(hv), len(bv))
    hv, bv = (hv * 2)[:n], (bv * 2)[:n]
    g = Group("approx_half", {"h": (".b16", hv), "u": (".b16", bv), "x": (".b32", [h | u << 16 for h, u in zip(hv, hv[::-1])])})
    inf, nan = math.inf, math.nan
    ex2t = [(-inf, 0.0), (-0.0, 1.0), (0.0, 1.0), (inf, inf), (nan, nan)]
    tanht = [(-inf, -1.0), (-0.0, -0.0), (0.0, 0.0), (inf, 1.0), (nan, nan)]

    def two(chk):
        def check(row, got):
            return chk({"a": row["x"] & 0xFFFF}, (got[0] & 0xFFFF,)) or chk({"a": row["x"] >> 16}, (got[0] >> 16,))
        return check
    c_ex2h = approx_check(_exp2, F16, "rel", 2**-9.9, table=ex2t)
    c_tanhh = approx_check(math.tanh, F16, "abs", 2**-10.987, table=tanht)
    g.add("ex2.approx.f16", "ex2.approx.f16 {d0}, {h};", ".b16", check=lambda r, o: c_ex2h({"a": r["h"]}, o))
    g.add("tanh.approx.f16", "tanh.approx.f16 {d0}, {h};", ".b16", check=lambda r, o: c_tanhh({"a": r["h"]}, o))
    g.add("ex2.approx.f16x2", "ex2.approx.f16x2 {d0}, {x};", ".b32", check=two(c_ex2h))
    g.add("tanh.approx.f16x2", "tanh.approx.f16x2 {d0}, {x};", ".b32", check=two(c_tanhh))
    c_ex2b = approx_check(_exp2, BF16, "rel", 2**-7, ftz_on=True, table=ex2t)
    c_tanhb = approx_check(math.tanh, BF16, "abs", 2**-8, table=tanht)
    g.add("ex2.approx.ftz.bf16", "ex2.approx.ftz.bf16 {d0}, {u};", ".b16", check=lambda r, o: c_ex2b({"a": r["u"]}, o))
    g.add("tanh.approx.bf16", "tanh.approx.bf16 {d0}, {u};", ".b16", check=lambda r, o: c_tanhb({"a": r["u"]}, o))
    return g


def group_approx_f64() -> Group:
    a = edges(F64) + values(F64, 250) + [f64_bits(x) for x in RNG.uniform(0.1, 10, 50)]
    g = Group("approx_f64", {"a": (".b64", a)})

    def hi_check(fn, table):
        def check(row, got):
            x = row["a"]
            r = got[0]
            if r & M(32):
                return f"low word not zero: {r:#x}"
            hi = x & ~M(32) & M(64)
            hv = _val(ftz(hi, F64), F64)
            for k, v in table:
                if (math.isnan(k) and math.isnan(hv)) or (k == hv and math.copysign(1, k) == math.copysign(1, hv)):
                    if math.isnan(v):
                        return None if r == 0x7FFFFFFF00000000 else f"expected 0x7fffffff00000000, got {r:#x}"
                    gv = _val(r, F64)
                    return None if (gv == v and math.copysign(1, gv) == math.copysign(1, v)) else f"expected {v!r}, got {gv!r}"
            try:
                want = fn(hv)
            except (ValueError, ZeroDivisionError):
                return None if r == 0x7FFFFFFF00000000 else f"expected 0x7fffffff00000000, got {r:#x}"
            gv = _val(r, F64)
            if abs(want) < 2.0**-1022:
                return None if gv == 0 else f"expected a flushed zero, got {gv!r}"
            if math.isinf(want) or abs(want) > 1.7e308:
                return None if math.isinf(gv) or abs(gv) > 1.7e308 else f"expected overflow, got {gv!r}"
            return None if abs(gv - want) <= abs(want) * 2**-19 else f"{hv!r}: expected {want!r} (2^-19), got {gv!r}"
        return check
    inf, nan = math.inf, math.nan
    g.add("rcp.approx.ftz.f64", "rcp.approx.ftz.f64 {d0}, {a};", ".b64",
          check=hi_check(lambda x: 1 / x, [(-inf, -0.0), (-0.0, -inf), (0.0, inf), (inf, 0.0), (nan, nan)]))
    g.add("rsqrt.approx.ftz.f64", "rsqrt.approx.ftz.f64 {d0}, {a};", ".b64",
          check=hi_check(lambda x: 1 / math.sqrt(x), [(-inf, nan), (-0.0, -inf), (0.0, inf), (inf, 0.0), (nan, nan)]))

    def rsq(row, got):
        x = _val(row["a"], F64)
        gv = _val(got[0], F64)
        if math.isnan(x) or (x < 0):
            return None if math.isnan(gv) else f"expected NaN, got {gv!r}"
        if x == 0:
            return None if math.isinf(gv) and math.copysign(1, gv) == math.copysign(1, x) else f"expected inf, got {gv!r}"
        want = 1 / math.sqrt(x)
        return None if abs(gv - want) <= 2 * _ulp(want, F64) + 1e-300 else f"expected {want!r}, got {gv!r}"
    g.add("rsqrt.approx.f64", "rsqrt.approx.f64 {d0}, {a};", ".b64", check=rsq)
    return g


# --- conversions ----------------------------------------------------------------

INTS = {".u8": (8, False), ".s8": (8, True), ".u16": (16, False), ".s16": (16, True),
        ".u32": (32, False), ".s32": (32, True), ".u64": (64, False), ".s64": (64, True)}


def sx(v: int, bits: int) -> int:
    v &= M(bits)
    return v - (1 << bits) if v >> (bits - 1) else v


def ival(v: int, t: str) -> int:
    bits, signed = INTS[t]
    return sx(v, bits) if signed else v & M(bits)


def irange(t: str) -> tuple[int, int]:
    bits, signed = INTS[t]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, M(bits))


def reg_of(t: str) -> str:
    if t in INTS:
        bits = INTS[t][0]
        return REG[max(bits, 16)]
    return REG[FMT[t[1:]].width]


def int_inputs(bits: int, n: int) -> list[int]:
    ed = [0, 1, 2, 3, M(bits), M(bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, (1 << (bits - 1)) + 1]
    for p in (11, 12, 24, 25, 53, 54, 8, 16, 31):
        if p < bits:
            for d in (-3, -1, 0, 1, 2, 3):
                ed.append(((1 << p) + d) & M(bits))
                ed.append((-(1 << p) - d) & M(bits))
    r = [int(x) for x in RNG.integers(0, 1 << min(bits, 63), n, dtype=np.uint64)]
    r += [int(x) >> int(RNG.integers(0, bits)) for x in RNG.integers(0, 1 << min(bits, 63), n, dtype=np.uint64)]
    return ed + r


def ref_i2f(v: int, st: str, f: F, mode: str, sat=False) -> int:
    q = Fraction(ival(v, st))
    out = 0 if q == 0 else round_frac(q, f, mode)
    return post(out, f, sat=sat)


def ref_f2i(b: int, sf: F, dt: str, irnd: str, ftz_on=False) -> int:
    if ftz_on:
        b = ftz(b, sf)
    d = dec(b, sf)
    lo, hi = irange(dt)
    bits = INTS[dt][0]
    if d.kind == "nan":
        # zero, or (f64 source or 64-bit destination) MININT / 1 << (bits - 1)
        return (lo if INTS[dt][1] else 1 << (bits - 1)) if (sf.name == "f64" or bits == 64) else 0
    if d.kind == "inf":
        return lo if d.neg else hi
    q = d.q
    n = {"rni": round(q), "rzi": math.trunc(q), "rmi": math.floor(q), "rpi": math.ceil(q)}[irnd]
    return min(max(n, lo), hi)  # signed results are sign-extended to the register


def ref_f2f(b: int, sf: F, df: F, mode: str, *, ftz_in=False, ftz_out=False, sat=False, relu=False,
            satfinite=False, irnd: str | None = None) -> int:
    if ftz_in:
        b = ftz(b, sf)
    d = dec(b, sf)
    if d.kind == "nan":
        # H200: to f64 the payload is kept (an f32 NaN is canonical first under
        # .ftz), from f64 the sign and top payload bits, bf16 -> f32 shifts
        if ftz_in and sf.name == "f32":
            b = CANON["f32"]
        if df.name == "f64" or sf.name == "f64":
            sh = df.mbits - sf.mbits
            pay = (b & M(sf.mbits)) << sh if sh >= 0 else (b & M(sf.mbits)) >> -sh
            out = (df.sign if b >> (sf.width - 1) else 0) | df.inf | 1 << (df.mbits - 1) | pay
        elif (sf.name, df.name) == ("bf16", "f32"):
            out = b << 16
        else:
            out = CANON[df.name]
    elif d.kind == "inf":
        out = (df.sign if d.neg else 0) | (max_enc(df) if satfinite or not df.ieee else df.inf)
    elif irnd is not None:
        q = d.q
        n = {"rni": round(q), "rzi": math.trunc(q), "rmi": math.floor(q), "rpi": math.ceil(q)}[irnd]
        out = encode(Fraction(n), d.neg, df)
    elif d.q == 0:
        out = df.sign if d.neg else 0
    else:
        out = round_frac(d.q, df, mode, satfinite)
    return post(out, df, ftz_out=ftz_out, relu=relu, sat=sat)


def group_cvt_int_float() -> Group:
    cols = {t: int_inputs(INTS[t][0], 60) for t in INTS}
    n = max(len(v) for v in cols.values())
    g = Group("cvt_int_float", {t[1:]: (reg_of(t), (v * 3)[:n]) for t, v in cols.items()})
    for st in INTS:
        for dt in (".f16", ".bf16", ".f32", ".f64"):
            f = FMT[dt[1:]]
            for mode in MODES:
                ins = f"cvt.{mode}{dt}{st}"
                g.add(ins, f"{ins} {{d0}}, {{{st[1:]}}};", reg_of(dt),
                      lambda r, st=st, f=f, mode=mode: ref_i2f(r[st[1:]], st, f, mode),
                      hw=not (dt == ".bf16" and st in (".u8", ".s8")))  # ptxas rejects bf16 <-> 8-bit
        g.add(f"cvt.rn.sat.f32{st}", f"cvt.rn.sat.f32{st} {{d0}}, {{{st[1:]}}};", ".b32",
              lambda r, st=st: ref_i2f(r[st[1:]], st, F32, "rn", sat=True))
    return g


def float_inputs(f: F, n: int) -> list[int]:
    out = edges(f) + values(f, n)
    # halfway cases for rounding to integers and values near the integer ranges' ends
    for q in (Fraction(1, 2), Fraction(3, 2), Fraction(5, 2), Fraction(-1, 2), Fraction(-3, 2), Fraction(-5, 2),
              Fraction(2**31), Fraction(2**31 - 1), Fraction(-(2**31)), Fraction(2**32), Fraction(2**63),
              Fraction(-(2**63)), Fraction(2**64), Fraction(255), Fraction(256), Fraction(-129), Fraction(65535),
              Fraction(65536), Fraction(-32769), Fraction(2**24 + 1), Fraction(2**53 + 1), Fraction(1, 3),
              Fraction(-2, 3), Fraction(1000001, 4), Fraction(65520), Fraction(65519), Fraction(-65520)):
        for m in ("rz", "rp"):
            out.append(round_frac(q, f, m))
    return out


def group_cvt_float_int(f: F) -> Group:
    g = Group(f"cvt_{f.name}_int", {"a": (REG[f.width], float_inputs(f, 240))})
    for dt in INTS:
        for irnd in ("rni", "rzi", "rmi", "rpi"):
            ins = f"cvt.{irnd}{dt}.{f.name}"
            g.add(ins, f"{ins} {{d0}}, {{a}};", reg_of(dt), lambda r, dt=dt, irnd=irnd: ref_f2i(r["a"], f, dt, irnd),
                  hw=not (dt in (".u8", ".s8") and f.name == "bf16"))
        if f.name == "f32":
            ins = f"cvt.rpi.ftz{dt}.f32"
            g.add(ins, f"{ins} {{d0}}, {{a}};", reg_of(dt), lambda r, dt=dt: ref_f2i(r["a"], f, dt, "rpi", True))
    return g


def group_cvt_float_float(sf: F) -> Group:
    g = Group(f"cvt_from_{sf.name}", {"a": (REG[sf.width], float_inputs(sf, 300))})
    for df in (F16, BF16, F32, F64):
        if df == sf:
            for irnd in ("rni", "rzi", "rmi", "rpi"):
                ins = f"cvt.{irnd}.{df.name}.{sf.name}"
                g.add(ins, f"{ins} {{d0}}, {{a}};", REG[df.width],
                      lambda r, df=df, irnd=irnd: ref_f2f(r["a"], sf, df, "rn", irnd=irnd))
            if sf.name == "f32":
                g.add("cvt.rmi.ftz.f32.f32", "cvt.rmi.ftz.f32.f32 {d0}, {a};", ".b32",
                      lambda r: ref_f2f(r["a"], sf, F32, "rn", irnd="rmi", ftz_in=True, ftz_out=True))
                g.add("cvt.ftz.sat.f32.f32", "cvt.ftz.sat.f32.f32 {d0}, {a};", ".b32",
                      lambda r: ref_f2f(r["a"], sf, F32, "rn", ftz_in=True, ftz_out=True, sat=True))
            continue
        narrowing = df.mbits < sf.mbits or df.ebits < sf.ebits
        modes = MODES if narrowing else ("",)
        for mode in modes:
            mm = f".{mode}" if mode else ""
            ins = f"cvt{mm}.{df.name}.{sf.name}"
            g.add(ins, f"{ins} {{d0}}, {{a}};", REG[df.width],
                  lambda r, df=df, mode=mode: ref_f2f(r["a"], sf, df, mode or "rn"))
            if "f32" in (sf.name, df.name) and sf.name != "bf16":
                ins = f"cvt{mm}.ftz.{df.name}.{sf.name}"
                # an H200 does not flush the input of cvt.ftz.f16.f32
                g.add(ins, f"{ins} {{d0}}, {{a}};", REG[df.width],
                      lambda r, df=df, mode=mode: ref_f2f(r["a"], sf, df, mode or "rn",
                                                          ftz_in=sf.name == "f32" and df.name != "f16",
                                                          ftz_out=df.name == "f32"))
        if df.width == 16 and sf.name == "f32":
            for mode in ("rn", "rz"):
                for m in (".relu", ".satfinite", ".relu.satfinite"):
                    ins = f"cvt.{mode}{m}.{df.name}.f32"
                    g.add(ins, f"{ins} {{d0}}, {{a}};", ".b16",
                          lambda r, df=df, mode=mode, m=m: ref_f2f(r["a"], sf, df, mode, relu="relu" in m,
                                                                   satfinite="satfinite" in m))
        if df.name in ("f16", "f32", "f64") and sf.name != "bf16":
            ins = f"cvt.{'rn.' if narrowing else ''}sat.{df.name}.{sf.name}"
            g.add(ins, f"{ins} {{d0}}, {{a}};", REG[df.width], lambda r, df=df: ref_f2f(r["a"], sf, df, "rn", sat=True))
    return g


def group_cvt_pack() -> Group:
    """f16x2/bf16x2 from two f32 (a to the upper half), tf32, FP8, cvt.pack."""
    cols = [float_inputs(F32, 250) for _ in range(2)]
    n = min(len(c) for c in cols)
    cols = [c[:n] for c in cols]
    cols[1] = list(RNG.permutation(cols[1]).tolist())
    i32 = int_inputs(32, 150)
    i32 = (i32 * 3)[:n]
    h2 = [int(x) for x in RNG.integers(0, 1 << 32, n, dtype=np.uint64)]
    e8 = [int(x) for x in RNG.integers(0, 1 << 16, n)]
    g = Group("cvt_pack", {"a": (".b32", cols[0]), "b": (".b32", cols[1]), "i": (".b32", i32),
                           "j": (".b32", i32[::-1]), "h": (".b32", h2), "e": (".b16", e8)})
    for dt in ("f16x2", "bf16x2"):
        f = FMT[dt[:-2]]
        for mode in ("rn", "rz"):
            for m in ("", ".relu", ".satfinite", ".relu.satfinite"):
                ins = f"cvt.{mode}{m}.{dt}.f32"
                kw = {"relu": "relu" in m, "satfinite": "satfinite" in m}
                g.add(ins, f"{ins} {{d0}}, {{a}}, {{b}};", ".b32",
                      lambda r, f=f, mode=mode, kw=kw: ref_f2f(r["a"], F32, f, mode, **kw) << 16
                      | ref_f2f(r["b"], F32, f, mode, **kw))
    for mode, m in (("rna", ""), ("rn", ""), ("rz", ""), ("rn", ".relu"), ("rz", ".relu"), ("rna", ".satfinite")):
        ins = f"cvt.{mode}{m}.tf32.f32"
        g.add(ins, f"{ins} {{d0}}, {{a}};", ".b32",
              lambda r, mode=mode, m=m: _tf32(r["a"], mode, relu="relu" in m, satfinite="satfinite" in m))
    for dt in ("e4m3x2", "e5m2x2"):
        f = FMT[dt[:-2]]
        for m in ("", ".relu"):
            ins = f"cvt.rn.satfinite{m}.{dt}.f32"
            g.add(ins, f"{ins} {{d0}}, {{a}}, {{b}};", ".b16",
                  lambda r, f=f, m=m: ref_f2f(r["a"], F32, f, "rn", satfinite=True, relu=bool(m)) << 8
                  | ref_f2f(r["b"], F32, f, "rn", satfinite=True, relu=bool(m)))
            ins = f"cvt.rn.satfinite{m}.{dt}.f16x2"
            g.add(ins, f"{ins} {{d0}}, {{h}};", ".b16",
                  lambda r, f=f, m=m: ref_f2f(r["h"] >> 16, F16, f, "rn", satfinite=True, relu=bool(m)) << 8
                  | ref_f2f(r["h"] & 0xFFFF, F16, f, "rn", satfinite=True, relu=bool(m)))
            ins = f"cvt.rn{m}.f16x2.{dt}"
            g.add(ins, f"{ins} {{d0}}, {{e}};", ".b32",
                  lambda r, f=f, m=m: ref_f2f(r["e"] >> 8, f, F16, "rn", relu=bool(m)) << 16
                  | ref_f2f(r["e"] & 0xFF, f, F16, "rn", relu=bool(m)))
    for ct in (".u16", ".s16"):
        lo, hi = {".u16": (0, 0xFFFF), ".s16": (-0x8000, 0x7FFF)}[ct]
        g.add(f"cvt.pack.sat{ct}.s32", f"cvt.pack.sat{ct}.s32 {{d0}}, {{i}}, {{j}};", ".b32",
              lambda r, lo=lo, hi=hi: (min(max(sx(r["i"], 32), lo), hi) & 0xFFFF) << 16 | (min(max(sx(r["j"], 32), lo), hi) & 0xFFFF))
    for ct, (lo, hi, size) in {".u8": (0, 255, 8), ".s8": (-128, 127, 8), ".u4": (0, 15, 4), ".s4": (-8, 7, 4),
                               ".u2": (0, 3, 2), ".s2": (-2, 1, 2)}.items():
        g.add(f"cvt.pack.sat{ct}.s32.b32", f"cvt.pack.sat{ct}.s32.b32 {{d0}}, {{i}}, {{j}}, {{h}};", ".b32",
              lambda r, lo=lo, hi=hi, s=size: ((min(max(sx(r["i"], 32), lo), hi) & M(s)) << s
                                               | (min(max(sx(r["j"], 32), lo), hi) & M(s)) | r["h"] << 2 * s) & M(32))
    return g


def _tf32(b: int, mode: str, relu=False, satfinite=False) -> int:
    """tf32 (H200): .rna rounds finite values half away (a + 0x1000) & ~0x1fff
    and truncates infinities and NaNs (a & ~0x1fff), with .satfinite one tf32
    ulp less in magnitude; .rn/.rz give 0x7fffe000 for NaN."""
    d = dec(b, F32)
    if mode == "rna" and not satfinite:
        return b & 0xFFFFE000 if d.kind != "num" else (b + 0x1000) & 0xFFFFE000
    if mode == "rna" and d.kind != "num":
        return (b & F32.sign) | ((b & 0x7FFFE000) - 0x2000)
    if d.kind == "nan":
        return 0x7FFFE000
    if d.kind == "inf":
        out = (F32.sign if d.neg else 0) | (max_enc(TF32) << 13 if satfinite else F32.inf)
    elif d.q == 0:
        out = F32.sign if d.neg else 0
    else:
        out = round_frac(d.q, TF32, mode, satfinite) << 13
    return post(out, F32, relu=relu)


def group_cvt_rs() -> Group:
    """cvt.rs (stochastic rounding, sm_100a): random bits added to the discarded ones."""
    cols = [float_inputs(F32, 100) for _ in range(2)]
    n = min(len(c) for c in cols)
    rb = [int(x) for x in RNG.integers(0, 1 << 32, n, dtype=np.uint64)]
    g = Group("cvt_rs", {"a": (".b32", cols[0][:n]), "b": (".b32", cols[1][::-1][:n]), "r": (".b32", rb)},
              version="8.7", target="sm_100a")

    def rs(x: int, f: F, rbits: int) -> int:
        d = dec(x, F32)
        if d.kind == "nan":
            return CANON[f.name]
        if d.kind == "inf":
            return (f.sign if d.neg else 0) | f.inf
        if d.q == 0:
            return f.sign if d.neg else 0
        # add the random bits below the kept bits of the (normal-range) significand
        a = abs(d.q)
        e = floor_log2(a)
        if e < f.emin:  # subnormal results: where the random bits go is not covered
            return None
        quantum = Fraction(2) ** (e - f.mbits)
        t = a / quantum
        n0 = math.floor(t)
        frac = t - n0
        k = 16 if f.name == "bf16" else 13
        scaled = frac * 2**k
        if scaled.denominator != 1:  # more discarded bits than random bits: not covered
            return None
        n1 = n0 + (int(scaled) + rbits >= 2**k)
        v = n1 * quantum
        if v > f.max_value:
            return (f.sign if d.neg else 0) | f.inf
        return encode(v, d.neg, f)

    for dt, f in (("f16x2", F16), ("bf16x2", BF16)):
        mask = 0xFFFF if f.name == "bf16" else 0x1FFF

        def check(row, got, f=f, mask=mask):
            hi = rs(row["a"], f, row["r"] >> 16 & mask)
            lo = rs(row["b"], f, row["r"] & mask)
            g0 = got[0]
            if hi is not None and g0 >> 16 != hi:
                return f"upper: expected {hi:#x}, got {g0 >> 16:#x}"
            if lo is not None and g0 & 0xFFFF != lo:
                return f"lower: expected {lo:#x}, got {g0 & 0xFFFF:#x}"
            return None
        g.add(f"cvt.rs.{dt}.f32", f"cvt.rs.{dt}.f32 {{d0}}, {{a}}, {{b}}, {{r}};", ".b32", check=check, hw=False)
    return g


@lru_cache(maxsize=None)
def groups() -> tuple[Group, ...]:
    gs = [group_arith(F32), group_arith(F64), group_half(F16), group_half(BF16), group_f32x2(),
          group_misc(F32), group_misc(F64), group_misc(F16), group_misc(BF16), group_minmax3(),
          group_minmax_x2(F16), group_minmax_x2(BF16),
          group_compare(F32), group_compare(F64), group_compare(F16), group_compare(BF16),
          group_compare_x2(F16), group_compare_x2(BF16),
          group_approx(), group_div_approx(), group_approx_half(), group_approx_f64(),
          group_cvt_int_float(), group_cvt_float_int(F16), group_cvt_float_int(BF16), group_cvt_float_int(F32),
          group_cvt_float_int(F64), group_cvt_float_float(F16), group_cvt_float_float(BF16),
          group_cvt_float_float(F32), group_cvt_float_float(F64), group_cvt_pack(), group_cvt_rs()]
    return tuple(gs)


# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------

_RESULTS: dict[str, dict] = {}


def _emulated(g: Group) -> dict:
    if g.name not in _RESULTS:
        _RESULTS[g.name] = run_emulator(g)
    return _RESULTS[g.name]


def _params():
    for g in groups():
        for c in g.cases:
            yield pytest.param(g.name, c.id, id=f"{g.name}:{c.id}")


if pytest is not None:

    @pytest.fixture(autouse=True, scope="module")
    def _fresh_compiles():
        """Compile every kernel here: a compiled-code cache filled before a
        semantics change would otherwise answer for the new lowering."""
        import os

        old = os.environ.get("HYPA_NO_CACHE")
        os.environ["HYPA_NO_CACHE"] = "1"
        yield
        if old is None:
            os.environ.pop("HYPA_NO_CACHE", None)
        else:
            os.environ["HYPA_NO_CACHE"] = old

    @pytest.mark.parametrize("group,case", list(_params()))
    def test_float_semantics(group: str, case: str) -> None:
        g = next(x for x in groups() if x.name == group)
        c = next(x for x in g.cases if x.id == case)
        got = _emulated(g)[c.id]
        bad = problems(g, c, got)
        assert not bad, "\n".join(bad)

    def test_reference_rounding_against_numpy() -> None:
        """The reference's rounding agrees with numpy/struct round-to-nearest."""
        for x in RNG.standard_normal(200) * 10.0 ** RNG.integers(-30, 30, 200):
            q = Fraction(float(x))
            assert round_frac(q, F32, "rn") == f32_bits(float(np.float32(x)))
            if abs(x) < 65504:
                assert round_frac(q, F16, "rn") == int(np.array(x, np.float16).view(np.uint16))
            assert round_frac(q, F64, "rn") == f64_bits(float(x))
        # directed modes bracket the value
        for x in RNG.standard_normal(100):
            q = Fraction(float(x)) / 3
            lo, hi = dec(round_frac(q, F32, "rm"), F32).q, dec(round_frac(q, F32, "rp"), F32).q
            assert lo < q < hi and (hi - lo) == Fraction(2) ** (floor_log2(abs(q)) - 23)


# ---------------------------------------------------------------------------
# The same kernels on a GPU: ``python test_semantics_float.py --gpu``
# ---------------------------------------------------------------------------


def main(argv: list[str]) -> int:  # pragma: no cover
    if "--ptx" in argv:  # write the kernels (the cases that assemble for sm_90)
        import os

        d = argv[argv.index("--ptx") + 1]
        os.makedirs(d, exist_ok=True)
        for g in groups():
            with open(os.path.join(d, g.name + ".ptx"), "w") as fh:
                fh.write(kernel_ptx(g, [c for c in g.cases if c.hw]))
        return 0
    if "--gpu" not in argv:
        print(__doc__)
        return 0
    dump = {}
    total = bad = 0
    for g in groups():
        try:
            res = run_cuda(g)
        except Exception as ex:  # one group not assembling must not hide the others
            print(f"group {g.name}: {type(ex).__name__}: {str(ex)[:400]}")
            continue
        for c in g.cases:
            if c.id not in res:
                continue
            total += 1
            for k, a in enumerate(res[c.id]):
                dump[f"{g.name}|{c.id}|{k}"] = a
            lines = problems(g, c, res[c.id])
            if lines:
                bad += 1
                print("\n".join(lines))
    if "--dump" in argv:
        np.savez_compressed(argv[argv.index("--dump") + 1], **dump)
    print(f"{total - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
