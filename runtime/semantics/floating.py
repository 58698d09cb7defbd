"""Floating-point semantics: f16, bf16, f32, f64 and the packed f16x2, bf16x2, f32x2.

How results are made exact:

* Rounding to a format is done on integers (``round_pack``): a value is a
  sign, an integer magnitude ``M`` (64 bits) and an exponent ``E``
  (value = M * 2**E).  The low bit of ``M`` may be a sticky bit standing for
  "slightly more/less than this", which keeps every rounding mode correct.
  The same routine rounds to f64, f32, f16, bf16, tf32 and the FP8 formats,
  handles subnormal results, overflow by rounding mode and ``.satfinite``;
  no libcalls are needed (the JIT cannot resolve ``__truncsfhf2``).
* f16/bf16/f32 arithmetic is computed exactly in f64: products of inputs of
  at most 24 significant bits are exact, sums carry Knuth's TwoSum error term,
  quotients and square roots the sign of their exact remainder (an FMA).  The
  f64 result ``hi`` and the sign of the error ``lo`` become
  ``M = 4*significand(hi) +- 1``, a value on the same side of every rounding
  boundary as the exact result (|lo| <= ulp(hi)/2), so a single rounding to the
  target format is correct for every mode (no double rounding).
* f64 with ``.rz/.rm/.rp``: sums by TwoSum (exact also in the subnormal range),
  products, quotients, reciprocals and square roots on the integer
  significands (scaled, so no underflow can hide the error), ``fma`` with a
  128-bit integer significand sum.
* Round-to-nearest f32/f64 operations use LLVM's IEEE operations directly.

Where the PTX ISA leaves a result unspecified the lowering does what a
Hopper GPU (an H200, sm_90) does, checked bit for bit by
``tests/unit/test_semantics_float.py --gpu``:

* NaN results of f32/f16/bf16 arithmetic, neg and abs are the canonical NaN
  (``0x7FFFFFFF``/``0x7FFF``); f64 arithmetic carries a NaN operand's payload,
  quietened (add/sub/mul: the second operand's first, fma: b, c, a, div: a
  first), neg/abs.f64 return a NaN quietened with its sign unchanged, and an
  invalid f64 operation gives ``0xFFF8000000000000``;
* ``.ftz`` flushes a result whose value rounded to the format's precision
  with an unbounded exponent is below the smallest normal number;
* ``.sat`` and ``.relu`` turn -0 into +0; ``fma.oob`` recognises the OOB-NaN
  ``0x7FF7``/``0xFFF7``.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..rules import rule
from .common import FLOAT_KIND, vec

i1, i8, i16, i32, i64, i128 = (ir.IntType(n) for n in (1, 8, 16, 32, 64, 128))
F32V = vec(ir.FloatType())
F64V = vec(ir.DoubleType())


def ivt(bits: int) -> ir.VectorType:
    return vec(ir.IntType(bits))


# ---------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fmt:
    name: str
    ebits: int
    mbits: int
    width: int  # bits of the encoding (sign included)
    ieee: bool = True  # has infinities (all-ones exponent = inf/NaN)

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emax_field(self) -> int:
        return (1 << self.ebits) - 1

    @property
    def inf_enc(self) -> int:
        return self.emax_field << self.mbits

    @property
    def max_enc(self) -> int:
        """Largest finite magnitude encoding."""
        if self.ieee:
            return self.inf_enc - 1
        return (self.emax_field << self.mbits) | ((1 << self.mbits) - 2)  # e4m3: S.1111.110

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1)

    @property
    def one_enc(self) -> int:
        return self.bias << self.mbits


FMTS = {
    "f16": Fmt("f16", 5, 10, 16),
    "bf16": Fmt("bf16", 8, 7, 16),
    "f32": Fmt("f32", 8, 23, 32),
    "f64": Fmt("f64", 11, 52, 64),
    "tf32": Fmt("tf32", 8, 10, 19),  # kept in the top 19 bits of a 32-bit word
    "f64h": Fmt("f64h", 11, 20, 32),  # upper word of an f64 (rcp/rsqrt.approx.ftz.f64)
    "e4m3": Fmt("e4m3", 4, 3, 8, ieee=False),
    "e5m2": Fmt("e5m2", 5, 2, 8),
}

#: canonical NaN of each format (what PTX returns for NaN results)
CANON_NAN = {
    "f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0xFFF8000000000000,
    "e4m3": 0x7F, "e5m2": 0x7F, "f64h": 0x7FFFFFFF,
}
#: quiet bit of each format's NaNs
QUIET = {"f16": 1 << 9, "bf16": 1 << 6, "f32": 1 << 22, "f64": 1 << 51}

PACKED = {".f16x2": "f16", ".bf16x2": "bf16", ".f32x2": "f32"}


# ---------------------------------------------------------------------------
# Small vector helpers
# ---------------------------------------------------------------------------


def K(e, v: int, bits: int) -> ir.Constant:
    return e.splat(v, ir.IntType(bits))


def _sel(e, c, a, b):
    return e.b.select(c, a, b)


def _smax(e, a, b):
    return e.b.select(e.b.icmp_signed(">", a, b), a, b)


def _smin(e, a, b):
    return e.b.select(e.b.icmp_signed("<", a, b), a, b)


def _eq(e, a, v: int):
    return e.b.icmp_unsigned("==", a, ir.Constant(a.type, v))


def _ne(e, a, v: int):
    return e.b.icmp_unsigned("!=", a, ir.Constant(a.type, v))


def _width(v: ir.Value) -> int:
    return v.type.element.width  # type: ignore[attr-defined]


def _fit(e, v, bits: int):
    w = _width(v)
    if w == bits:
        return v
    return e.b.trunc(v, ivt(bits)) if w > bits else e.b.zext(v, ivt(bits))


def _bool_splat(e, flag: bool):
    return e.splat(1 if flag else 0, i1)


# ---------------------------------------------------------------------------
# Bits <-> parts, and the rounding routine
# ---------------------------------------------------------------------------


@dataclass
class Parts:
    neg: ir.Value  # i1
    M: ir.Value  # i64 magnitude of the significand (implicit bit included)
    E: ir.Value  # i64 exponent: |value| = M * 2**E
    zero: ir.Value
    inf: ir.Value
    nan: ir.Value
    bits: ir.Value  # the encoding (iW)


def unpack(e, bits: ir.Value, fmt: Fmt) -> Parts:
    """Split the encodings ``bits`` (``<32 x iW>``, W = fmt.width) into parts."""
    b = e.b
    x = _fit(e, bits, 64)
    neg = _ne(e, b.and_(x, K(e, fmt.sign_bit, 64)), 0)
    ef = b.and_(b.lshr(x, K(e, fmt.mbits, 64)), K(e, fmt.emax_field, 64))
    mf = b.and_(x, K(e, (1 << fmt.mbits) - 1, 64))
    e0 = _eq(e, ef, 0)
    M = _sel(e, e0, mf, b.or_(mf, K(e, 1 << fmt.mbits, 64)))
    E = b.sub(_sel(e, e0, K(e, 1, 64), ef), K(e, fmt.bias + fmt.mbits, 64))
    top = _eq(e, ef, fmt.emax_field)
    if fmt.ieee:
        nan = b.and_(top, _ne(e, mf, 0))
        inf = b.and_(top, _eq(e, mf, 0))
    else:  # e4m3: only S.1111.111 is NaN, no infinities
        nan = b.and_(top, _eq(e, mf, (1 << fmt.mbits) - 1))
        inf = _bool_splat(e, False)
    zero = b.and_(e0, _eq(e, mf, 0))
    return Parts(neg, M, E, zero, inf, nan, bits)


def round_pack(e, neg, M, E, fmt: Fmt, mode: str, satfinite: bool = False, rbits=None, ftz: bool = False) -> ir.Value:
    """Round |value| = M * 2**E (M: <32 x i64>, unsigned; E: <32 x i64>) to
    ``fmt`` by ``mode`` (rn, rna, rz, rm, rp, rs) and return the encoding
    with the sign ``neg`` as ``<32 x i64>``.  Subnormal results, overflow
    (infinity or the largest finite value, by mode) and ``satfinite`` are
    handled; M = 0 gives a signed zero.  For ``rs`` (stochastic rounding)
    ``rbits`` holds random bits aligned to the discarded bits.  With ``ftz``
    the value is rounded with an unbounded exponent and flushed to a signed
    zero when that is below the smallest normal number (what a Hopper GPU does:
    0x0400 * 0x3bff in f16 gives 0, 0x0401 * 0x3bfe gives 0x0400)."""
    b = e.b
    C = lambda v: K(e, v, 64)  # noqa: E731
    lz = e.call("llvm.ctlz.v32i64", ivt(64), [M, ir.Constant(i1, 0)])
    n = b.sub(C(63), lz)  # position of the leading bit (-1 for zero)
    te = b.add(b.add(n, E), C(fmt.bias))  # biased exponent of the leading bit
    extra = C(0) if ftz else _smax(e, b.sub(C(1), te), C(0))
    shift = b.add(b.sub(n, C(fmt.mbits)), extra)
    lsh = _smax(e, b.sub(C(0), shift), C(0))
    rsh = _smax(e, shift, C(0))
    far = b.icmp_signed(">", rsh, C(64))  # every bit of M is below half an ulp
    is64 = _eq(e, rsh, 64)
    rs = _smin(e, rsh, C(63))
    q = _sel(e, b.or_(far, is64), C(0), b.lshr(M, rs))
    q = b.shl(q, lsh)
    mask = _sel(e, b.or_(far, is64), C(-1), b.sub(b.shl(C(1), rs), C(1)))
    rem = b.and_(M, mask)
    half = b.shl(C(1), _smax(e, b.sub(rs, C(1)), C(0)))
    half = _sel(e, is64, C(1 << 63), half)
    some = b.and_(b.icmp_signed(">", rsh, C(0)), b.not_(far))  # half is meaningful
    inexact = _ne(e, rem, 0)
    gt = b.and_(some, b.icmp_unsigned(">", rem, half))
    eq = b.and_(some, b.icmp_unsigned("==", rem, half))
    if mode == "rn":
        odd = _ne(e, b.and_(q, C(1)), 0)
        inc = b.or_(gt, b.and_(eq, odd))
    elif mode == "rna":
        inc = b.or_(gt, eq)
    elif mode == "rz":
        inc = _bool_splat(e, False)
    elif mode == "rm":
        inc = b.and_(neg, inexact)
    elif mode == "rp":
        inc = b.and_(b.not_(neg), inexact)
    elif mode == "rs":
        # carry out of (discarded bits + random bits)
        r = b.and_(rbits if rbits is not None else C(0), mask)
        carry = b.icmp_unsigned(">", b.add(rem, r), mask)
        inc = b.and_(b.and_(b.icmp_signed(">", rsh, C(0)), b.not_(b.or_(far, is64))), carry)
    else:
        raise e.fail(f"unknown rounding mode {mode}")
    q = b.add(q, b.zext(inc, ivt(64)))
    # with ftz the significand is never denormalised: a carry out of te = 0 is 2**emin
    tef = _smin(e, _smax(e, te, C(0 if ftz else 1)), C(fmt.emax_field + 2))
    enc = b.add(b.shl(b.sub(tef, C(1)), C(fmt.mbits)), q)
    ovf = b.icmp_unsigned(">", enc, C(fmt.max_enc))
    if satfinite or not fmt.ieee:
        ovf_val = C(fmt.max_enc)
    elif mode in ("rn", "rna", "rs"):
        ovf_val = C(fmt.inf_enc)
    elif mode == "rz":
        ovf_val = C(fmt.max_enc)
    else:
        away = neg if mode == "rm" else b.not_(neg)
        ovf_val = _sel(e, away, C(fmt.inf_enc), C(fmt.max_enc))
    enc = _sel(e, ovf, ovf_val, enc)
    if ftz:
        carry = b.lshr(q, C(fmt.mbits + 1))
        enc = _sel(e, b.icmp_signed("<", b.add(te, carry), C(1)), C(0), enc)
    enc = _sel(e, _eq(e, M, 0), C(0), enc)
    return b.or_(enc, _sel(e, neg, C(fmt.sign_bit), C(0)))


def encode(e, neg, M, E, fmt: Fmt, mode: str, satfinite: bool = False, ftz: bool = False) -> ir.Value:
    """``round_pack`` narrowed to the format's register width."""
    r = round_pack(e, neg, M, E, fmt, mode, satfinite, ftz=ftz)
    return _fit(e, r, fmt.width)


def special_bits(e, fmt: Fmt, neg, inf=None, nan=None, value=None, satfinite=False):
    """Encodings of infinities (max finite under satfinite) and NaN (canonical)."""
    b = e.b
    w = fmt.width
    sign = _sel(e, neg, K(e, fmt.sign_bit, w), K(e, 0, w))
    infv = fmt.max_enc if (satfinite or not fmt.ieee) else fmt.inf_enc
    r = value
    if inf is not None:
        r = _sel(e, inf, b.or_(sign, K(e, infv, w)), r)
    if nan is not None:
        r = _sel(e, nan, K(e, CANON_NAN[fmt.name], w), r)
    return r


def exact_from_pair(e, hi: ir.Value, lo: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(neg, M, E) of the exact value hi + lo (f64 lanes, hi = RN(hi + lo)):
    the significand of hi with two more bits, the lower one standing for the
    sign of lo (a sticky bit on the correct side of every rounding point)."""
    b = e.b
    hb = b.bitcast(hi, ivt(64))
    lb = b.bitcast(lo, ivt(64))
    p = unpack(e, hb, FMTS["f64"])
    lo_nz = b.fcmp_ordered("one", lo, ir.Constant(F64V, 0.0))
    same = b.icmp_signed(">=", b.xor(hb, lb), K(e, 0, 64))
    adj = _sel(e, lo_nz, _sel(e, same, K(e, 1, 64), K(e, -1, 64)), K(e, 0, 64))
    M = b.add(b.shl(p.M, K(e, 2, 64)), adj)
    E = b.sub(p.E, K(e, 2, 64))
    return p.neg, M, E


# ---------------------------------------------------------------------------
# 16-bit formats <-> f32 (exact widening, rounding narrowing), kept for callers
# ---------------------------------------------------------------------------


def f16_to_f32(e, v: ir.Value) -> ir.Value:
    """<32 x i16> half bits -> <32 x float> (exact; NaN payload kept, quietened)."""
    b = e.b
    h = b.zext(v, ivt(32))
    sign = b.shl(b.and_(h, K(e, 0x8000, 32)), K(e, 16, 32))
    ex = b.and_(b.lshr(h, K(e, 10, 32)), K(e, 0x1F, 32))
    man = b.and_(h, K(e, 0x3FF, 32))
    normal = b.or_(b.shl(b.add(ex, K(e, 112, 32)), K(e, 23, 32)), b.shl(man, K(e, 13, 32)))
    infnan = b.or_(K(e, 0x7F800000, 32), b.shl(man, K(e, 13, 32)))
    sub = b.fmul(b.uitofp(man, F32V), ir.Constant(F32V, 2.0**-24))
    subbits = b.bitcast(sub, ivt(32))
    mag = _sel(e, _eq(e, ex, 0), subbits, _sel(e, _eq(e, ex, 0x1F), infnan, normal))
    return b.bitcast(b.or_(mag, sign), F32V)


def bf16_to_f32(e, v: ir.Value) -> ir.Value:
    b = e.b
    return b.bitcast(b.shl(b.zext(v, ivt(32)), K(e, 16, 32)), F32V)


def to_f32(e, bits: ir.Value, kind: str) -> ir.Value:
    if kind == "f16":
        return f16_to_f32(e, bits)
    if kind == "bf16":
        return bf16_to_f32(e, bits)
    return e.b.bitcast(bits, F32V)


def narrow_f32(e, x: ir.Value, kind: str, mode: str = "rn", satfinite: bool = False) -> ir.Value:
    """<32 x float> -> encoding of ``kind`` rounded by ``mode``; NaN -> canonical."""
    fmt = FMTS[kind]
    p = unpack(e, e.b.bitcast(x, ivt(32)), FMTS["f32"])
    r = encode(e, p.neg, p.M, p.E, fmt, mode, satfinite)
    return special_bits(e, fmt, p.neg, p.inf, p.nan, r, satfinite)


def f32_to_f16_bits(e, x: ir.Value, mode: str = "rn", ftz: bool = False) -> ir.Value:
    r = narrow_f32(e, x, "f16", mode)
    return flush_bits(e, r, FMTS["f16"]) if ftz else r




def is_nan_bits(e, bits, fmt: Fmt):
    mag = e.b.and_(bits, K(e, fmt.sign_bit - 1, fmt.width))
    if not fmt.ieee:  # e4m3: only S.1111.111
        return _eq(e, mag, fmt.max_enc + 1)
    return e.b.icmp_unsigned(">", mag, K(e, fmt.inf_enc, fmt.width))


def flush_bits(e, bits, fmt: Fmt):
    """.ftz: subnormal encodings become zero of the same sign."""
    b = e.b
    w = fmt.width
    ef = b.and_(bits, K(e, fmt.emax_field << fmt.mbits, w))
    return _sel(e, _eq(e, ef, 0), b.and_(bits, K(e, fmt.sign_bit, w)), bits)


def sat_bits(e, bits, fmt: Fmt):
    """.sat: clamp to [0.0, 1.0]; NaN and negative values (-0 too) give +0."""
    b = e.b
    w = fmt.width
    neg = _ne(e, b.and_(bits, K(e, fmt.sign_bit, w)), 0)
    r = _sel(e, b.icmp_unsigned(">", bits, K(e, fmt.one_enc, w)), K(e, fmt.one_enc, w), bits)
    return _sel(e, b.or_(neg, is_nan_bits(e, bits, fmt)), K(e, 0, w), r)


def relu_bits(e, bits, fmt: Fmt):
    """.relu: negative results (-0 too) give +0; NaN gives the canonical NaN."""
    b = e.b
    w = fmt.width
    neg = _ne(e, b.and_(bits, K(e, fmt.sign_bit, w)), 0)
    r = _sel(e, neg, K(e, 0, w), bits)
    return _sel(e, is_nan_bits(e, bits, fmt), K(e, CANON_NAN[fmt.name], w), r)


def canon_bits(e, bits, fmt: Fmt):
    return _sel(e, is_nan_bits(e, bits, fmt), K(e, CANON_NAN[fmt.name], fmt.width), bits)


def flush(e, x: ir.Value) -> ir.Value:
    """.ftz on float lanes (f32 or f64): subnormals become signed zero."""
    b = e.b
    is64 = x.type == F64V
    fmt = FMTS["f64" if is64 else "f32"]
    return b.bitcast(flush_bits(e, b.bitcast(x, ivt(fmt.width)), fmt), x.type)


def f64_nan_result(e, inputs: list[ir.Value], r: ir.Value) -> ir.Value:
    """f64 NaN results: the first NaN among ``inputs`` (given in priority
    order), quietened; NaNs of invalid operations become 0xFFF8000000000000
    (both as a Hopper GPU does)."""
    fmt = FMTS["f64"]
    b = e.b
    out = _sel(e, is_nan_bits(e, r, fmt), K(e, CANON_NAN["f64"], 64), r)
    for x in reversed(inputs):
        q = b.or_(x, K(e, QUIET["f64"], 64))
        out = _sel(e, is_nan_bits(e, x, fmt), q, out)
    return out


# ---------------------------------------------------------------------------
# Operand layout
# ---------------------------------------------------------------------------


def kind_of(e) -> str:
    for t in e.types:
        if t in FLOAT_KIND:
            return FLOAT_KIND[t]
        if t in PACKED:
            return t[1:]
    raise e.fail("needs a floating-point type")


def layout(e) -> tuple[str, int]:
    """(element kind, 1 or 2 elements) of the instruction's (first) float type."""
    for t in e.types:
        if t in PACKED:
            return PACKED[t], 2
        if t in FLOAT_KIND:
            return FLOAT_KIND[t], 1
    raise e.fail("needs a floating-point type")


def is_float_op(e) -> bool:
    return any(t in FLOAT_KIND or t in PACKED for t in e.types)


def src_parts(e, k: int, kind: str, n: int) -> list[ir.Value]:
    """Operand ``k`` as ``n`` element encodings (element 0 in the low bits)."""
    w = FMTS[kind].width
    if n == 1:
        return [e.src(k, w)]
    v = e.src(k, w * n)
    return [e.b.trunc(e.b.lshr(v, K(e, i * w, w * n)), ivt(w)) if i else e.b.trunc(v, ivt(w)) for i in range(n)]


def pack_parts(e, parts: list[ir.Value]) -> ir.Value:
    if len(parts) == 1:
        return parts[0]
    w = _width(parts[0])
    tw = w * len(parts)
    acc = e.b.zext(parts[0], ivt(tw))
    for i, p in enumerate(parts[1:], 1):
        acc = e.b.or_(acc, e.b.shl(e.b.zext(p, ivt(tw)), K(e, i * w, tw)))
    return acc


def halves(e, k: int) -> tuple[ir.Value, ir.Value]:
    lo, hi = src_parts(e, k, "f16", 2)
    return lo, hi


def pack(e, lo: ir.Value, hi: ir.Value) -> ir.Value:
    return pack_parts(e, [lo, hi])


def rounding(e, default: str = "rn") -> str:
    for m in e.mods:
        if m in (".rn", ".rz", ".rm", ".rp", ".rna", ".rs"):
            return m[1:]
    return default


def _ftz_kinds(kind: str) -> bool:
    return kind in ("f32", "f16")


# ---------------------------------------------------------------------------
# Exact arithmetic in f64 (inputs of at most 24 significant bits)
# ---------------------------------------------------------------------------


def two_sum(e, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(s, err) with s = fl(a + c) and a + c = s + err exactly (Knuth)."""
    b = e.b
    s = b.fadd(a, c)
    bb = b.fsub(s, a)
    err = b.fadd(b.fsub(a, b.fsub(s, bb)), b.fsub(c, bb))
    return s, err


def two_sum_error(e, a, c, s):
    b = e.b
    bb = b.fsub(s, a)
    return b.fadd(b.fsub(a, b.fsub(s, bb)), b.fsub(c, bb))


def _fma64(e, a, b_, c):
    return e.call("llvm.fma.v32f64", F64V, [a, b_, c])


def _exact64(e, op: str, xs: list[ir.Value]) -> tuple[ir.Value, ir.Value, ir.Value | None]:
    """(hi, lo, zero_sum_pair) of ``op`` on f64 lanes holding narrow values:
    hi = RN(exact), the exact result is hi + lo (lo's sign is what counts);
    zero_sum_pair are the two addends of a sum (for the sign of an exact zero)."""
    b = e.b
    zero = ir.Constant(F64V, 0.0)
    if op in ("add", "sub"):
        x, y = xs
        if op == "sub":
            y = b.fneg(y)
        hi, lo = two_sum(e, x, y)
        return hi, lo, (x, y)
    if op == "mul":
        return b.fmul(xs[0], xs[1]), zero, None
    if op == "fma":
        p = b.fmul(xs[0], xs[1])  # exact
        hi, lo = two_sum(e, p, xs[2])
        return hi, lo, (p, xs[2])
    if op == "div":
        x, y = xs
        q = b.fdiv(x, y)
        r = _fma64(e, b.fneg(q), y, x)  # exact remainder
        return q, b.fdiv(r, y), None
    if op == "rcp":
        one = ir.Constant(F64V, 1.0)
        q = b.fdiv(one, xs[0])
        r = _fma64(e, b.fneg(q), xs[0], one)
        return q, b.fdiv(r, xs[0]), None
    if op == "sqrt":
        s = e.call("llvm.sqrt.v32f64", F64V, [xs[0]])
        r = _fma64(e, b.fneg(s), s, xs[0])
        return s, r, None
    raise e.fail(f"no exact {op}")


def _zero_sign(e, mode: str, pair, neg):
    """Sign of an exact zero sum x + y: -0 only if both are -0, or (rm) unless both are +0."""
    if pair is None:
        return neg
    b = e.b
    x, y = (b.bitcast(v, ivt(64)) for v in pair)
    if mode == "rm":
        return b.not_(b.and_(_eq(e, x, 0), _eq(e, y, 0)))
    return b.and_(_eq(e, x, 1 << 63), _eq(e, y, 1 << 63))


def narrow_arith(e, op: str, xs: list[ir.Value], kind: str, mode: str, ftz: bool = False) -> ir.Value:
    """``op`` on f32 lanes holding f16/bf16/f32 values, rounded once to ``kind``
    by ``mode``.  Returns the encoding (NaN canonical)."""
    b = e.b
    fmt = FMTS[kind]
    xs64 = [b.fpext(x, F64V) for x in xs]
    hi, lo, pair = _exact64(e, op, xs64)
    neg, M, E = exact_from_pair(e, hi, lo)
    p = unpack(e, b.bitcast(hi, ivt(64)), FMTS["f64"])
    neg = _sel(e, p.zero, _zero_sign(e, mode, pair, neg), neg)
    r = encode(e, neg, M, E, fmt, mode, ftz=ftz)
    return special_bits(e, fmt, p.neg, p.inf, p.nan, r)


def _tiny_f32(e, op: str, xs: list[ir.Value]):
    """For .ftz with round-to-nearest f32: the exact result rounded to 24 bits
    with an unbounded exponent (Veltkamp split of its f64 value) is below
    2**-126.  Only decides lanes whose IEEE result is the smallest normal."""
    b = e.b
    xs64 = [b.fpext(x, F64V) for x in xs]
    hi, lo, _pair = _exact64(e, op, xs64)
    c = b.fmul(hi, ir.Constant(F64V, float(2**29 + 1)))
    r24 = b.fsub(c, b.fsub(c, hi))
    a = e.call("llvm.fabs.v32f64", F64V, [r24])
    return b.fcmp_ordered("<", a, ir.Constant(F64V, 2.0**-126))


# ---------------------------------------------------------------------------
# f64 with directed rounding
# ---------------------------------------------------------------------------


def _f64_parts(e, bits):
    return unpack(e, bits, FMTS["f64"])


def _scaled(e, hi, r_sign_pos, r_nz, E_extra):
    """(M, E) from an f64 ``hi`` (positive, normal) and the sign of its error."""
    b = e.b
    p = _f64_parts(e, b.bitcast(hi, ivt(64)))
    adj = _sel(e, r_nz, _sel(e, r_sign_pos, K(e, 1, 64), K(e, -1, 64)), K(e, 0, 64))
    M = b.add(b.shl(p.M, K(e, 2, 64)), adj)
    E = b.add(b.sub(p.E, K(e, 2, 64)), E_extra)
    return M, E


def _f64_directed(e, op: str, bits: list[ir.Value], mode: str) -> ir.Value:
    """f64 ``op`` rounded by rz/rm/rp; ``bits`` are <32 x i64> operands."""
    b = e.b
    fmt = FMTS["f64"]
    xs = [b.bitcast(x, F64V) for x in bits]
    ps = [_f64_parts(e, x) for x in bits]
    zero = ir.Constant(F64V, 0.0)
    one = ir.Constant(F64V, 1.0)
    # the round-to-nearest result gives every special case (NaN, inf, exact zero)
    if op == "add":
        rn = b.fadd(xs[0], xs[1])
    elif op == "sub":
        rn = b.fsub(xs[0], xs[1])
    elif op == "mul":
        rn = b.fmul(xs[0], xs[1])
    elif op == "fma":
        rn = _fma64(e, xs[0], xs[1], xs[2])
    elif op == "div":
        rn = b.fdiv(xs[0], xs[1])
    elif op == "rcp":
        rn = b.fdiv(one, xs[0])
    elif op == "sqrt":
        rn = e.call("llvm.sqrt.v32f64", F64V, [xs[0]])
    else:
        raise e.fail(f"no f64 {op}")
    rnb = b.bitcast(rn, ivt(64))
    finite_in = _bool_splat(e, True)
    for p in ps:
        finite_in = b.and_(finite_in, b.not_(b.or_(p.inf, p.nan)))
    if op in ("add", "sub"):
        y = xs[1] if op == "add" else b.fneg(xs[1])
        hi, lo = two_sum(e, xs[0], y)
        hp = _f64_parts(e, b.bitcast(hi, ivt(64)))
        neg, M, E = exact_from_pair(e, hi, lo)
        # finite operands whose rounded sum overflows
        ovf = b.and_(finite_in, hp.inf)
        M = _sel(e, ovf, K(e, 1, 64), M)
        E = _sel(e, ovf, K(e, 4096, 64), E)
        neg = _sel(e, ovf, hp.neg, neg)
        nz = b.not_(hp.zero)
        res = round_pack(e, neg, M, E, fmt, mode)
        zs = _zero_sign(e, mode, (xs[0], y), neg)
        zero_res = _sel(e, zs, K(e, 1 << 63, 64), K(e, 0, 64))
        res = _sel(e, nz, res, zero_res)
        use = finite_in
    elif op in ("mul", "div", "rcp", "sqrt"):
        if op == "rcp":
            pa = None
            Ma, Ea, na = one, K(e, 0, 64), _bool_splat(e, False)
            pb = ps[0]
        elif op == "sqrt":
            pa, pb = ps[0], None
        else:
            pa, pb = ps
        if op == "sqrt":
            odd = _ne(e, b.and_(pa.E, K(e, 1, 64)), 0)
            Ms = _sel(e, odd, b.shl(pa.M, K(e, 1, 64)), pa.M)
            Es = _sel(e, odd, b.sub(pa.E, K(e, 1, 64)), pa.E)
            mf = b.uitofp(Ms, F64V)
            s = e.call("llvm.sqrt.v32f64", F64V, [mf])
            r = _fma64(e, b.fneg(s), s, mf)
            M, E = _scaled(e, s, b.fcmp_ordered(">", r, zero), b.fcmp_unordered("une", r, zero), b.ashr(Es, K(e, 1, 64)))
            neg = pa.neg
            nonzero = b.not_(pa.zero)
            use = b.and_(b.and_(finite_in, nonzero), b.not_(pa.neg))
        else:
            if pa is not None:
                Ma, Ea, na = b.uitofp(pa.M, F64V), pa.E, pa.neg
            Mb = b.uitofp(pb.M, F64V)
            if op == "mul":
                h = b.fmul(Ma, Mb)
                r = _fma64(e, Ma, Mb, b.fneg(h))
                pos = b.fcmp_ordered(">", r, zero)
                Ex = b.add(Ea, pb.E)
            else:
                h = b.fdiv(Ma, Mb)
                r = _fma64(e, b.fneg(h), Mb, Ma)
                pos = b.fcmp_ordered(">", r, zero)
                Ex = b.sub(Ea, pb.E)
            M, E = _scaled(e, h, pos, b.fcmp_unordered("une", r, zero), Ex)
            neg = b.xor(na, pb.neg)
            nonzero = b.not_(pb.zero) if pa is None else b.and_(b.not_(pa.zero), b.not_(pb.zero))
            use = b.and_(finite_in, nonzero)
        res = round_pack(e, neg, M, E, fmt, mode)
    else:  # fma
        negS, M, E, exact0 = _soft_fma(e, ps[0], ps[1], ps[2])
        res = round_pack(e, negS, M, E, fmt, mode)
        # nonzero addends cancelling exactly: +0, or -0 when rounding down
        res = _sel(e, exact0, K(e, (1 << 63) if mode == "rm" else 0, 64), res)
        nonzero = b.not_(b.or_(ps[0].zero, ps[1].zero))
        use = b.and_(finite_in, nonzero)
        # a zero product (finite operands): the sum is c, or a signed zero
        pz = b.and_(finite_in, b.not_(nonzero))
        pzero = _sel(e, b.xor(ps[0].neg, ps[1].neg), ir.Constant(F64V, -0.0), zero)
        zs = _zero_sign(e, mode, (pzero, xs[2]), ps[2].neg)
        zsum = _sel(e, ps[2].zero, _sel(e, zs, K(e, 1 << 63, 64), K(e, 0, 64)), bits[2])
        rnb = _sel(e, pz, zsum, rnb)
    out = _sel(e, use, res, rnb)
    return f64_nan_result(e, _nan_order(op, bits), out)


def _nan_order(op: str, bits: list[ir.Value]) -> list[ir.Value]:
    """Which NaN operand an f64 result carries (Hopper GPU): the second one of
    add/sub/mul (and b, c, a of fma), the first one of div."""
    if op in ("add", "sub", "mul"):
        return [bits[1], bits[0]]
    if op == "fma":
        return [bits[1], bits[2], bits[0]]
    return list(bits)


def _i128_shift(e, v, s):
    """v << s for s >= 0, else v >> -s with the shifted-out bits or-ed into bit 0
    (s: <32 x i64>, |shifts| clamped to 127)."""
    b = e.b
    left = b.icmp_signed(">=", s, K(e, 0, 64))
    ls = b.zext(_smin(e, _smax(e, s, K(e, 0, 64)), K(e, 127, 64)), ivt(128))
    rs = b.zext(_smin(e, _smax(e, b.sub(K(e, 0, 64), s), K(e, 0, 64)), K(e, 127, 64)), ivt(128))
    lv = b.shl(v, ls)
    rv = b.lshr(v, rs)
    lost = _ne(e, b.and_(v, b.sub(b.shl(K(e, 1, 128), rs), K(e, 1, 128))), 0)
    rv = b.or_(rv, b.zext(lost, ivt(128)))
    return _sel(e, left, lv, rv)


def _soft_fma(e, pa: Parts, pb: Parts, pc: Parts):
    """Exact a*b + c for finite a, b (nonzero) and finite c as (neg, M, E, exact_zero)
    with a 128-bit significand sum; M keeps a sticky bit."""
    b = e.b
    P = b.mul(b.zext(pa.M, ivt(128)), b.zext(pb.M, ivt(128)))
    EP = b.add(pa.E, pb.E)
    negP = b.xor(pa.neg, pb.neg)
    topP = b.add(EP, K(e, 106, 64))
    topC = b.add(pc.E, K(e, 53, 64))
    T = _sel(e, pc.zero, topP, _smax(e, topP, topC))
    L = b.sub(T, K(e, 125, 64))
    X = _i128_shift(e, P, b.sub(EP, L))
    Y = _sel(e, pc.zero, K(e, 0, 128), _i128_shift(e, b.zext(pc.M, ivt(128)), b.sub(pc.E, L)))
    SX = _sel(e, negP, b.sub(K(e, 0, 128), X), X)
    SY = _sel(e, pc.neg, b.sub(K(e, 0, 128), Y), Y)
    S = b.add(SX, SY)
    neg = b.icmp_signed("<", S, K(e, 0, 128))
    A = _sel(e, neg, b.sub(K(e, 0, 128), S), S)
    zero = _eq(e, A, 0)
    lz = e.call("llvm.ctlz.v32i128", ivt(128), [A, ir.Constant(i1, 0)])
    n = b.sub(K(e, 127, 128), lz)
    sh = _smax(e, b.sub(n, K(e, 62, 128)), K(e, 0, 128))
    A1 = b.lshr(A, sh)
    lost = _ne(e, b.and_(A, b.sub(b.shl(K(e, 1, 128), sh), K(e, 1, 128))), 0)
    M = b.trunc(b.or_(A1, b.zext(lost, ivt(128))), ivt(64))
    E = b.add(L, b.trunc(sh, ivt(64)))
    return neg, M, E, zero


# ---------------------------------------------------------------------------
# add / sub / mul / fma / mad / div
# ---------------------------------------------------------------------------


def _post(e, bits, fmt: Fmt, kind: str):
    """Result modifiers on an element encoding: .ftz, .relu, .sat."""
    m = e.mods
    if ".ftz" in m and _ftz_kinds(kind):
        bits = flush_bits(e, bits, fmt)
    if ".relu" in m:
        bits = relu_bits(e, bits, fmt)
    if ".sat" in m:
        bits = sat_bits(e, bits, fmt)
    return bits


#: the OOB-NaN that tensor loads fill with (0x7ff7/0xfff7 for f16 and bf16 on a Hopper GPU)
OOB_NAN = 0x7FF7


def _oob(e, parts: list[ir.Value], fmt: Fmt):
    """.oob: an operand equal to the OOB-NaN (either sign) forces +0."""
    b = e.b
    hit = _bool_splat(e, False)
    for p in parts:
        hit = b.or_(hit, _eq(e, b.and_(p, K(e, 0x7FFF, 16)), OOB_NAN))
    return hit


def arith_element(e, op: str, parts: list[ir.Value], kind: str, mode: str, src_kinds: list[str] | None = None):
    """One element of add/sub/mul/fma/div/rcp/sqrt: encodings in, encoding out."""
    b = e.b
    fmt = FMTS[kind]
    m = e.mods
    ftz = ".ftz" in m and _ftz_kinds(kind)
    src_kinds = src_kinds or [kind] * len(parts)
    if ftz:
        parts = [flush_bits(e, p, FMTS[k]) for p, k in zip(parts, src_kinds)]
    if kind == "f64":
        xs = [b.bitcast(p, F64V) for p in parts]
        if mode == "rn":
            r = _f64_rn(e, op, xs)
            r = f64_nan_result(e, _nan_order(op, parts), b.bitcast(r, ivt(64)))
        else:
            r = _f64_directed(e, op, parts, mode)
        return r
    xs = [to_f32(e, p, k) for p, k in zip(parts, src_kinds)]
    if kind == "f32" and mode == "rn":
        r = b.bitcast(_f32_rn(e, op, xs), ivt(32))
        r = canon_bits(e, r, fmt)
        if ftz:
            minn = _eq(e, b.and_(r, K(e, 0x7FFFFFFF, 32)), 0x00800000)
            r = _sel(e, b.and_(minn, _tiny_f32(e, op, xs)), b.and_(r, K(e, 0x80000000, 32)), r)
    else:
        r = narrow_arith(e, op, xs, kind, mode, ftz)
    r = _post(e, r, fmt, kind)
    if ".oob" in m:
        r = _sel(e, _oob(e, parts, fmt), K(e, 0, fmt.width), r)
    return r


def _f32_rn(e, op: str, xs):
    b = e.b
    one = ir.Constant(F32V, 1.0)
    if op == "add":
        return b.fadd(*xs)
    if op == "sub":
        return b.fsub(*xs)
    if op == "mul":
        return b.fmul(*xs)
    if op == "fma":
        return e.call("llvm.fma.v32f32", F32V, xs)
    if op == "div":
        return b.fdiv(*xs)
    if op == "rcp":
        return b.fdiv(one, xs[0])
    if op == "sqrt":
        return e.call("llvm.sqrt.v32f32", F32V, xs)
    raise e.fail(f"no {op}")


def _f64_rn(e, op: str, xs):
    b = e.b
    one = ir.Constant(F64V, 1.0)
    if op == "add":
        return b.fadd(*xs)
    if op == "sub":
        return b.fsub(*xs)
    if op == "mul":
        return b.fmul(*xs)
    if op == "fma":
        return _fma64(e, *xs)
    if op == "div":
        return b.fdiv(*xs)
    if op == "rcp":
        return b.fdiv(one, xs[0])
    if op == "sqrt":
        return e.call("llvm.sqrt.v32f64", F64V, xs)
    raise e.fail(f"no {op}")


def _arith(e, op: str, nsrc: int) -> None:
    kind, n = layout(e)
    mode = rounding(e)
    src_kinds = None
    types = e.types
    if len(types) >= 2 and types[0] == ".f32" and types[1] in (".f16", ".bf16"):
        # mixed precision (sm_100): add/sub .f32.f16 d, a, c; fma .f32.f16 d, a, b, c
        low = FLOAT_KIND[types[1]]
        src_kinds = ([low] + ["f32"]) if nsrc == 2 else [low, low, "f32"]
        parts = [src_parts(e, k + 1, sk, 1)[0] for k, sk in enumerate(src_kinds)]
        e.dst(0, arith_element(e, op, parts, "f32", mode, src_kinds))
        return
    srcs = [src_parts(e, k + 1, kind, n) for k in range(nsrc)]
    out = [arith_element(e, op, [s[i] for s in srcs], kind, mode) for i in range(n)]
    e.dst(0, pack_parts(e, out))


def float_add(e) -> None:
    _arith(e, "add", 2)


def float_sub(e) -> None:
    _arith(e, "sub", 2)


def float_mul(e) -> None:
    _arith(e, "mul", 2)


def float_fma(e) -> None:
    _arith(e, "fma", 3)


def float_div(e) -> None:
    m = e.mods
    kind, n = layout(e)
    if kind == "f32" and (".approx" in m or ".full" in m):
        a = src_parts(e, 1, "f32", 1)[0]
        c = src_parts(e, 2, "f32", 1)[0]
        e.dst(0, _div_approx(e, a, c, full=".full" in m))
        return
    _arith(e, "div", 2)


def _div_approx(e, a, c, full: bool):
    """div.approx.f32: a * (1/b) with the reciprocal's subnormal results flushed
    (|b| > 2**126 gives a signed zero, or NaN for an infinite a);
    div.full.f32: the correctly rounded quotient (within the stated 2 ulp)."""
    b = e.b
    fmt = FMTS["f32"]
    ftz = ".ftz" in e.mods
    if ftz:
        a, c = flush_bits(e, a, fmt), flush_bits(e, c, fmt)
    x, y = b.bitcast(a, F32V), b.bitcast(c, F32V)
    if full:
        r = b.fdiv(x, y)
    else:
        # a * (1/b) for |b| > 2^126 (where the reciprocal flushes, as on the
        # GPU); elsewhere -- subnormal divisors included -- the quotient itself,
        # which is within the stated 2 ulp (an H100 gives 1.0 for 2^-149/2^-149)
        one = ir.Constant(F32V, 1.0)
        rc = b.bitcast(flush_bits(e, b.bitcast(b.fdiv(one, y), ivt(32)), fmt), F32V)
        big = b.fcmp_ordered(">", e.call("llvm.fabs.v32f32", F32V, [y]), ir.Constant(F32V, 2.0**126))
        r = b.select(big, b.fmul(x, rc), b.fdiv(x, y))
    rb = b.bitcast(r, ivt(32))
    if ftz:
        rb = flush_bits(e, rb, fmt)
    return canon_bits(e, rb, fmt)


# ---------------------------------------------------------------------------
# neg / abs / copysign
# ---------------------------------------------------------------------------


def _sign_op(e, how: str) -> None:
    """neg/abs on the sign bit.  NaN inputs (PTX: unspecified for f32/f16/bf16,
    passed through for f64) give what a Hopper GPU gives: the canonical NaN, and
    for f64 the input NaN quietened with its sign unchanged."""
    kind, n = layout(e)
    fmt = FMTS[kind]
    b = e.b
    ftz = ".ftz" in e.mods and _ftz_kinds(kind)
    out = []
    for p in src_parts(e, 1, kind, n):
        if ftz:
            p = flush_bits(e, p, fmt)
        if how == "neg":
            r = b.xor(p, K(e, fmt.sign_bit, fmt.width))
        else:
            r = b.and_(p, K(e, fmt.sign_bit - 1, fmt.width))
        isn = is_nan_bits(e, p, fmt)
        nanv = b.or_(p, K(e, QUIET["f64"], 64)) if kind == "f64" else K(e, CANON_NAN[kind], fmt.width)
        out.append(_sel(e, isn, nanv, r))
    e.dst(0, pack_parts(e, out))


def float_neg(e) -> None:
    _sign_op(e, "neg")


def float_abs(e) -> None:
    _sign_op(e, "abs")


@rule("copysign")
def copysign(e) -> None:
    """copysign d, a, b: b with the sign of a (bits, NaN payloads kept)."""
    kind = kind_of(e)
    fmt = FMTS[kind]
    b = e.b
    w = fmt.width
    a = e.src(1, w)
    c = e.src(2, w)
    r = b.or_(b.and_(c, K(e, fmt.sign_bit - 1, w)), b.and_(a, K(e, fmt.sign_bit, w)))
    e.dst(0, r)


# ---------------------------------------------------------------------------
# min / max
# ---------------------------------------------------------------------------


def _as_float(e, bits, kind):
    if kind == "f64":
        return e.b.bitcast(bits, F64V)
    return to_f32(e, bits, kind)


def _pick(e, x, y, fx, fy, kind, is_max: bool, nan_mode: bool):
    """min/max of two encodings (x, y) with float views (fx, fy)."""
    b = e.b
    fmt = FMTS[kind]
    w = fmt.width
    nx = b.fcmp_unordered("uno", fx, fx)
    ny = b.fcmp_unordered("uno", fy, fy)
    sx = _ne(e, b.and_(x, K(e, fmt.sign_bit, w)), 0)
    sy = _ne(e, b.and_(y, K(e, fmt.sign_bit, w)), 0)
    eqv = b.fcmp_ordered("==", fx, fy)
    if is_max:
        take_x = b.or_(b.fcmp_ordered(">", fx, fy), b.and_(eqv, b.and_(b.not_(sx), sy)))
    else:
        take_x = b.or_(b.fcmp_ordered("<", fx, fy), b.and_(eqv, b.and_(sx, b.not_(sy))))
    z = _sel(e, take_x, x, y)
    if nan_mode:
        isn = b.or_(nx, ny)
        z = _sel(e, isn, K(e, CANON_NAN[kind], w), z)
    else:
        z = _sel(e, nx, y, _sel(e, ny, x, z))
    return z


def _minmax_element(e, parts, kind: str, is_max: bool):
    b = e.b
    fmt = FMTS[kind]
    w = fmt.width
    m = e.mods
    if ".ftz" in m and _ftz_kinds(kind):
        parts = [flush_bits(e, p, fmt) for p in parts]
    xorsign = ".xorsign" in m and len(parts) == 2
    if xorsign:
        sgn = b.and_(b.xor(parts[0], parts[1]), K(e, fmt.sign_bit, w))
    if ".abs" in m:
        parts = [b.and_(p, K(e, fmt.sign_bit - 1, w)) for p in parts]
    nan_mode = ".NaN" in m
    fl = [_as_float(e, p, kind) for p in parts]
    z = _pick(e, parts[0], parts[1], fl[0], fl[1], kind, is_max, nan_mode)
    if len(parts) == 3:
        z = _pick(e, z, parts[2], _as_float(e, z, kind), fl[2], kind, is_max, nan_mode)
    isn = is_nan_bits(e, z, fmt)
    if kind == "f64":
        z = _sel(e, isn, b.or_(z, K(e, QUIET["f64"], 64)), z)
    else:
        z = _sel(e, isn, K(e, CANON_NAN[kind], w), z)
    if xorsign:
        z = _sel(e, isn, z, b.or_(b.and_(z, K(e, fmt.sign_bit - 1, w)), sgn))
    return z


def float_minmax(e, is_max: bool) -> None:
    kind, n = layout(e)
    nsrc = len(e.args) - 1
    srcs = [src_parts(e, k + 1, kind, n) for k in range(nsrc)]
    out = [_minmax_element(e, [s[i] for s in srcs], kind, is_max) for i in range(n)]
    e.dst(0, pack_parts(e, out))


# ---------------------------------------------------------------------------
# rcp / sqrt / rsqrt / sin / cos / lg2 / ex2 / tanh
# ---------------------------------------------------------------------------


def _approx_f64h(e, a_bits, name: str):
    """rcp/rsqrt.approx.ftz.f64: computed on the upper word of ``a`` (1.11.20),
    rounded to 20 mantissa bits in the upper word of the result; subnormals are
    flushed and NaNs give 0x7fffffff00000000."""
    b = e.b
    fmt = FMTS["f64"]
    hi = b.and_(a_bits, K(e, 0xFFFFFFFF00000000, 64))
    hi = flush_bits(e, hi, fmt)
    x = b.bitcast(hi, F64V)
    one = ir.Constant(F64V, 1.0)
    if name == "rcp":
        r = b.fdiv(one, x)
    else:
        r = b.fdiv(one, e.call("llvm.sqrt.v32f64", F64V, [x]))
    p = unpack(e, b.bitcast(r, ivt(64)), fmt)
    h = FMTS["f64h"]
    enc = encode(e, p.neg, p.M, p.E, h, "rn")
    enc = special_bits(e, h, p.neg, p.inf, p.nan, enc)
    enc = flush_bits(e, enc, h)
    out = b.shl(b.zext(enc, ivt(64)), K(e, 32, 64))
    return out


def _sfu_f64(e, name: str, x):
    one = ir.Constant(x.type, 1.0)
    b = e.b
    vt = "v32f64"
    if name == "rsqrt":
        return b.fdiv(one, e.call(f"llvm.sqrt.{vt}", x.type, [x]))
    if name == "sin":
        return e.call(f"llvm.sin.{vt}", x.type, [x])
    if name == "cos":
        return e.call(f"llvm.cos.{vt}", x.type, [x])
    if name == "lg2":
        return e.call(f"llvm.log2.{vt}", x.type, [x])
    if name == "ex2":
        return e.call(f"llvm.exp2.{vt}", x.type, [x])
    if name == "tanh":
        return e.call(f"llvm.tanh.{vt}", x.type, [x])
    if name == "rcp":
        return b.fdiv(one, x)
    if name == "sqrt":
        return e.call(f"llvm.sqrt.{vt}", x.type, [x])
    raise e.fail(f"no special function {name}")


def _approx_element(e, name: str, p, kind: str):
    """An .approx special function of one element, computed in f64 and rounded
    to nearest in ``kind`` (well within every error bound the ISA states)."""
    b = e.b
    fmt = FMTS[kind]
    ftz = ".ftz" in e.mods
    if ftz:
        p = flush_bits(e, p, fmt)
    x = b.fpext(to_f32(e, p, kind), F64V)
    r = _sfu_f64(e, name, x)
    rp = unpack(e, b.bitcast(r, ivt(64)), FMTS["f64"])
    enc = encode(e, rp.neg, rp.M, rp.E, fmt, "rn")
    enc = special_bits(e, fmt, rp.neg, rp.inf, rp.nan, enc)
    if ftz:
        enc = flush_bits(e, enc, fmt)
    return enc


@rule("rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh")
def special_function(e) -> None:
    kind, n = layout(e)
    name = e.spec.name
    m = e.mods
    if kind == "f64":
        a = e.src(1, 64)
        if ".approx" in m and ".ftz" in m and name in ("rcp", "rsqrt"):
            e.dst(0, _approx_f64h(e, a, name))
            return
        if name in ("rcp", "sqrt") and ".approx" not in m:
            e.dst(0, arith_element(e, name, [a], "f64", rounding(e)))
            return
        # rsqrt.approx.f64 (and anything else approximate): f64 evaluation
        r = e.b.bitcast(_sfu_f64(e, name, e.b.bitcast(a, F64V)), ivt(64))
        e.dst(0, f64_nan_result(e, [a], r))
        return
    if name in ("rcp", "sqrt") and ".approx" not in m:
        e.dst(0, pack_parts(e, [arith_element(e, name, [p], kind, rounding(e)) for p in src_parts(e, 1, kind, n)]))
        return
    out = [_approx_element(e, name, p, kind) for p in src_parts(e, 1, kind, n)]
    e.dst(0, pack_parts(e, out))


# ---------------------------------------------------------------------------
# testp
# ---------------------------------------------------------------------------


@rule("testp")
def testp(e) -> None:
    kind = kind_of(e)
    fmt = FMTS[kind]
    b = e.b
    w = fmt.width
    bits = e.src(1, w)
    ex = b.and_(bits, K(e, fmt.inf_enc, w))
    mn = b.and_(bits, K(e, (1 << fmt.mbits) - 1, w))
    is_maxexp = _eq(e, ex, fmt.inf_enc)
    is_zeroexp = _eq(e, ex, 0)
    mant_zero = _eq(e, mn, 0)
    m = e.mods
    if ".finite" in m:
        r = b.not_(is_maxexp)
    elif ".infinite" in m:
        r = b.and_(is_maxexp, mant_zero)
    elif ".number" in m:
        r = b.not_(b.and_(is_maxexp, b.not_(mant_zero)))
    elif ".notanumber" in m:
        r = b.and_(is_maxexp, b.not_(mant_zero))
    elif ".normal" in m:
        # zeros count as normal numbers (PTX ISA)
        r = b.and_(b.not_(is_maxexp), b.or_(b.not_(is_zeroexp), mant_zero))
    elif ".subnormal" in m:
        r = b.and_(is_zeroexp, b.not_(mant_zero))
    else:
        raise e.fail("unknown testp operation")
    e.dst(0, r)


# ---------------------------------------------------------------------------
# setp / set / slct on floating-point operands
# ---------------------------------------------------------------------------

_FCMP = {
    ".eq": ("==", True), ".ne": ("!=", True), ".lt": ("<", True), ".le": ("<=", True), ".gt": (">", True),
    ".ge": (">=", True), ".equ": ("==", False), ".neu": ("!=", False), ".ltu": ("<", False),
    ".leu": ("<=", False), ".gtu": (">", False), ".geu": (">=", False), ".num": ("ord", True),
    ".nan": ("uno", False),
}


def is_float_compare(e) -> bool:
    """The compared (last) type is a floating-point type."""
    return bool(e.types) and (e.types[-1] in FLOAT_KIND or e.types[-1] in PACKED)


def _fcompare(e, op: str, x, y):
    b = e.b
    how, ordered = _FCMP[op]
    if how == "ord":
        return b.fcmp_ordered("ord", x, y)
    if how == "uno":
        return b.fcmp_unordered("uno", x, y)
    return b.fcmp_ordered(how, x, y) if ordered else b.fcmp_unordered(how, x, y)


def _cmp_op(e) -> str:
    for m in e.mods:
        if m in _FCMP:
            return m
    raise e.fail("needs a floating-point comparison")


def _compare_elements(e) -> list[ir.Value]:
    t = e.types[-1]
    kind, n = (PACKED[t], 2) if t in PACKED else (FLOAT_KIND[t], 1)
    fmt = FMTS[kind]
    ftz = ".ftz" in e.mods and _ftz_kinds(kind)
    xs = src_parts(e, 1, kind, n)
    ys = src_parts(e, 2, kind, n)
    op = _cmp_op(e)
    out = []
    for x, y in zip(xs, ys):
        if ftz:
            x, y = flush_bits(e, x, fmt), flush_bits(e, y, fmt)
        out.append(_fcompare(e, op, _as_float(e, x, kind), _as_float(e, y, kind)))
    return out


def _boolop(e, t, k: int):
    b = e.b
    for m in e.mods:
        if m in (".and", ".or", ".xor"):
            c = e.src_pred(k)
            return {".and": b.and_, ".or": b.or_, ".xor": b.xor}[m](t, c)
    return t


def float_setp(e) -> None:
    ts = _compare_elements(e)
    b = e.b
    if len(ts) == 2:
        # setp.f16x2 p|q: p from the low halves, q from the high halves
        e.dst_pair(0, _boolop(e, ts[0], 3), _boolop(e, ts[1], 3))
        return
    t = ts[0]
    p = _boolop(e, t, 3)
    if e.args[0][0] == "pair":
        e.dst_pair(0, p, _boolop(e, b.not_(t), 3))
    else:
        e.dst(0, p)


def float_set(e) -> None:
    ts = [_boolop(e, t, 3) for t in _compare_elements(e)]
    d = e.types[0]
    b = e.b
    if len(ts) == 2:
        if d in (".f16x2", ".bf16x2"):
            one = FMTS[PACKED[d]].one_enc
            vals = [_sel(e, t, K(e, one, 16), K(e, 0, 16)) for t in ts]
        else:
            vals = [_sel(e, t, K(e, 0xFFFF, 16), K(e, 0, 16)) for t in ts]
        e.dst(0, pack_parts(e, vals))
        return
    t = ts[0]
    if d in (".f32", ".f16", ".bf16"):
        fmt = FMTS[FLOAT_KIND[d]]
        out = _sel(e, t, K(e, fmt.one_enc, fmt.width), K(e, 0, fmt.width))
    else:
        from .common import type_bits

        bits = type_bits(d)
        out = b.sext(t, ivt(bits))
    e.dst(0, out)


def float_slct(e) -> None:
    """slct.dtype.f32 d, a, b, c: a if c >= 0 (-0 too), b if c < 0 or NaN."""
    from .common import type_bits

    b = e.b
    bits = type_bits(e.types[0])
    fmt = FMTS["f32"]
    c = e.src(3, 32)
    if ".ftz" in e.mods:
        c = flush_bits(e, c, fmt)
    ge = b.fcmp_ordered(">=", b.bitcast(c, F32V), ir.Constant(F32V, 0.0))
    e.dst(0, b.select(ge, e.src(1, bits), e.src(2, bits)))
