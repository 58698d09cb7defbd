"""Soft float: rounding to any float format on integers, and exact arithmetic.

The rules (``semantics/floating.py``, ``convert.py``, ``matrix.py``, ``memory.py``) compute
float results with these helpers, which take the instruction's ``Emitter`` only for its
builder, its constants and its intrinsics.

* Rounding to a format is done on integers (``round_pack``): a value is a
  sign, an integer magnitude ``M`` (64 bits) and an exponent ``E``
  (value = M * 2**E).  The low bit of ``M`` may be a sticky bit standing for
  "slightly more/less than this", which keeps every rounding mode correct.
  The same routine rounds to f64, f32, f16, bf16, tf32 and the FP8 formats,
  handles subnormal results, overflow by rounding mode and ``.satfinite``;
  no libcalls are needed (the JIT cannot resolve ``__truncsfhf2``).
* f16/bf16/f32 arithmetic is computed exactly in f64 (``narrow_arith``): products
  of inputs of at most 24 significant bits are exact, sums carry Knuth's TwoSum
  error term, quotients and square roots the sign of their exact remainder (an
  FMA).  The f64 result ``hi`` and the sign of the error ``lo`` become
  ``M = 4*significand(hi) +- 1``, a value on the same side of every rounding
  boundary as the exact result (|lo| <= ulp(hi)/2), so a single rounding to the
  target format is correct for every mode (no double rounding).
* f64 with ``.rz/.rm/.rp`` (``f64_directed``): sums by TwoSum (exact also in the
  subnormal range), products, quotients, reciprocals and square roots on the
  integer significands (scaled, so no underflow can hide the error), ``fma``
  with a 128-bit integer significand sum.
* Round-to-nearest f32/f64 operations use LLVM's IEEE operations directly (``ieee_rn``).
* Scalar 16-bit float helpers for the atomics' compare-and-swap loops
  (``half_add``), independent of the host's half-precision support.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .types import F32V, F64V, i1, i64, ivec, vector_suffix


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

#: packed float types: the kind of each element
PACKED = {".f16x2": "f16", ".bf16x2": "bf16", ".f32x2": "f32"}


# ---------------------------------------------------------------------------
# Small vector helpers
# ---------------------------------------------------------------------------


def K(e, v: int, bits: int) -> ir.Constant:
    """``v`` as ``<32 x i{bits}>``."""
    return e.splat(v, ir.IntType(bits))


def sel(e, c, a, b):
    return e.b.select(c, a, b)


def smax(e, a, b):
    return e.b.select(e.b.icmp_signed(">", a, b), a, b)


def smin(e, a, b):
    return e.b.select(e.b.icmp_signed("<", a, b), a, b)


def equals(e, a, v: int):
    """The lanes of ``a`` equal to the constant ``v``."""
    return e.b.icmp_unsigned("==", a, ir.Constant(a.type, v))


def differs(e, a, v: int):
    """The lanes of ``a`` not equal to the constant ``v``."""
    return e.b.icmp_unsigned("!=", a, ir.Constant(a.type, v))


def lane_width(v: ir.Value) -> int:
    """Bits of one lane of ``v``."""
    return v.type.element.width  # type: ignore[attr-defined]


def fit_width(e, v, bits: int):
    """``v`` zero-extended or truncated to ``bits`` per lane."""
    w = lane_width(v)
    if w == bits:
        return v
    return e.b.trunc(v, ivec(bits)) if w > bits else e.b.zext(v, ivec(bits))


def bool_splat(e, flag: bool):
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
    x = fit_width(e, bits, 64)
    neg = differs(e, b.and_(x, K(e, fmt.sign_bit, 64)), 0)
    ef = b.and_(b.lshr(x, K(e, fmt.mbits, 64)), K(e, fmt.emax_field, 64))
    mf = b.and_(x, K(e, (1 << fmt.mbits) - 1, 64))
    e0 = equals(e, ef, 0)
    M = sel(e, e0, mf, b.or_(mf, K(e, 1 << fmt.mbits, 64)))
    E = b.sub(sel(e, e0, K(e, 1, 64), ef), K(e, fmt.bias + fmt.mbits, 64))
    top = equals(e, ef, fmt.emax_field)
    if fmt.ieee:
        nan = b.and_(top, differs(e, mf, 0))
        inf = b.and_(top, equals(e, mf, 0))
    else:  # e4m3: only S.1111.111 is NaN, no infinities
        nan = b.and_(top, equals(e, mf, (1 << fmt.mbits) - 1))
        inf = bool_splat(e, False)
    zero = b.and_(e0, equals(e, mf, 0))
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
    lz = e.call("llvm.ctlz.v32i64", ivec(64), [M, ir.Constant(i1, 0)])
    n = b.sub(C(63), lz)  # position of the leading bit (-1 for zero)
    te = b.add(b.add(n, E), C(fmt.bias))  # biased exponent of the leading bit
    extra = C(0) if ftz else smax(e, b.sub(C(1), te), C(0))
    shift = b.add(b.sub(n, C(fmt.mbits)), extra)
    lsh = smax(e, b.sub(C(0), shift), C(0))
    rsh = smax(e, shift, C(0))
    far = b.icmp_signed(">", rsh, C(64))  # every bit of M is below half an ulp
    is64 = equals(e, rsh, 64)
    rs = smin(e, rsh, C(63))
    q = sel(e, b.or_(far, is64), C(0), b.lshr(M, rs))
    q = b.shl(q, lsh)
    mask = sel(e, b.or_(far, is64), C(-1), b.sub(b.shl(C(1), rs), C(1)))
    rem = b.and_(M, mask)
    half = b.shl(C(1), smax(e, b.sub(rs, C(1)), C(0)))
    half = sel(e, is64, C(1 << 63), half)
    some = b.and_(b.icmp_signed(">", rsh, C(0)), b.not_(far))  # half is meaningful
    inexact = differs(e, rem, 0)
    gt = b.and_(some, b.icmp_unsigned(">", rem, half))
    eq = b.and_(some, b.icmp_unsigned("==", rem, half))
    if mode == "rn":
        odd = differs(e, b.and_(q, C(1)), 0)
        inc = b.or_(gt, b.and_(eq, odd))
    elif mode == "rna":
        inc = b.or_(gt, eq)
    elif mode == "rz":
        inc = bool_splat(e, False)
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
    q = b.add(q, b.zext(inc, ivec(64)))
    # with ftz the significand is never denormalised: a carry out of te = 0 is 2**emin
    tef = smin(e, smax(e, te, C(0 if ftz else 1)), C(fmt.emax_field + 2))
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
        ovf_val = sel(e, away, C(fmt.inf_enc), C(fmt.max_enc))
    enc = sel(e, ovf, ovf_val, enc)
    if ftz:
        carry = b.lshr(q, C(fmt.mbits + 1))
        enc = sel(e, b.icmp_signed("<", b.add(te, carry), C(1)), C(0), enc)
    enc = sel(e, equals(e, M, 0), C(0), enc)
    return b.or_(enc, sel(e, neg, C(fmt.sign_bit), C(0)))


def encode(e, neg, M, E, fmt: Fmt, mode: str, satfinite: bool = False, ftz: bool = False) -> ir.Value:
    """``round_pack`` narrowed to the format's register width."""
    r = round_pack(e, neg, M, E, fmt, mode, satfinite, ftz=ftz)
    return fit_width(e, r, fmt.width)


def special_bits(e, fmt: Fmt, neg, inf=None, nan=None, value=None, satfinite=False):
    """Encodings of infinities (max finite under satfinite) and NaN (canonical)."""
    b = e.b
    w = fmt.width
    sign = sel(e, neg, K(e, fmt.sign_bit, w), K(e, 0, w))
    infv = fmt.max_enc if (satfinite or not fmt.ieee) else fmt.inf_enc
    r = value
    if inf is not None:
        r = sel(e, inf, b.or_(sign, K(e, infv, w)), r)
    if nan is not None:
        r = sel(e, nan, K(e, CANON_NAN[fmt.name], w), r)
    return r


def exact_from_pair(e, hi: ir.Value, lo: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(neg, M, E) of the exact value hi + lo (f64 lanes, hi = RN(hi + lo)):
    the significand of hi with two more bits, the lower one standing for the
    sign of lo (a sticky bit on the correct side of every rounding point)."""
    b = e.b
    hb = b.bitcast(hi, ivec(64))
    lb = b.bitcast(lo, ivec(64))
    p = unpack(e, hb, FMTS["f64"])
    lo_nz = b.fcmp_ordered("one", lo, ir.Constant(F64V, 0.0))
    same = b.icmp_signed(">=", b.xor(hb, lb), K(e, 0, 64))
    adj = sel(e, lo_nz, sel(e, same, K(e, 1, 64), K(e, -1, 64)), K(e, 0, 64))
    M = b.add(b.shl(p.M, K(e, 2, 64)), adj)
    E = b.sub(p.E, K(e, 2, 64))
    return p.neg, M, E


# ---------------------------------------------------------------------------
# 16-bit formats <-> f32 (exact widening, rounding narrowing)
# ---------------------------------------------------------------------------


def f16_to_f32(e, v: ir.Value) -> ir.Value:
    """<32 x i16> half bits -> <32 x float> (exact; NaN payload kept, quietened)."""
    b = e.b
    h = b.zext(v, ivec(32))
    sign = b.shl(b.and_(h, K(e, 0x8000, 32)), K(e, 16, 32))
    ex = b.and_(b.lshr(h, K(e, 10, 32)), K(e, 0x1F, 32))
    man = b.and_(h, K(e, 0x3FF, 32))
    normal = b.or_(b.shl(b.add(ex, K(e, 112, 32)), K(e, 23, 32)), b.shl(man, K(e, 13, 32)))
    infnan = b.or_(K(e, 0x7F800000, 32), b.shl(man, K(e, 13, 32)))
    sub = b.fmul(b.uitofp(man, F32V), ir.Constant(F32V, 2.0**-24))
    subbits = b.bitcast(sub, ivec(32))
    mag = sel(e, equals(e, ex, 0), subbits, sel(e, equals(e, ex, 0x1F), infnan, normal))
    return b.bitcast(b.or_(mag, sign), F32V)


def bf16_to_f32(e, v: ir.Value) -> ir.Value:
    b = e.b
    return b.bitcast(b.shl(b.zext(v, ivec(32)), K(e, 16, 32)), F32V)


def to_f32(e, bits: ir.Value, kind: str) -> ir.Value:
    if kind == "f16":
        return f16_to_f32(e, bits)
    if kind == "bf16":
        return bf16_to_f32(e, bits)
    return e.b.bitcast(bits, F32V)


def narrow_f32(e, x: ir.Value, kind: str, mode: str = "rn", satfinite: bool = False) -> ir.Value:
    """<32 x float> -> encoding of ``kind`` rounded by ``mode``; NaN -> canonical."""
    fmt = FMTS[kind]
    p = unpack(e, e.b.bitcast(x, ivec(32)), FMTS["f32"])
    r = encode(e, p.neg, p.M, p.E, fmt, mode, satfinite)
    return special_bits(e, fmt, p.neg, p.inf, p.nan, r, satfinite)


def f32_to_f16_bits(e, x: ir.Value, mode: str = "rn", ftz: bool = False) -> ir.Value:
    r = narrow_f32(e, x, "f16", mode)
    return flush_bits(e, r, FMTS["f16"]) if ftz else r




def is_nan_bits(e, bits, fmt: Fmt):
    if fmt.name in ("f32", "f64") and bits.type.element.width == fmt.width:
        # one unordered compare of the float view (the bitcast is no instruction): every
        # float operation checks its result, and f64 its operands too, so this is the
        # lowering's most frequent sequence
        f = e.b.bitcast(bits, F32V if fmt.width == 32 else F64V)
        return e.b.fcmp_unordered("uno", f, f)
    mag = e.b.and_(bits, K(e, fmt.sign_bit - 1, fmt.width))
    if not fmt.ieee:  # e4m3: only S.1111.111
        return equals(e, mag, fmt.max_enc + 1)
    return e.b.icmp_unsigned(">", mag, K(e, fmt.inf_enc, fmt.width))


def flush_bits(e, bits, fmt: Fmt):
    """.ftz: subnormal encodings become zero of the same sign."""
    b = e.b
    w = fmt.width
    ef = b.and_(bits, K(e, fmt.emax_field << fmt.mbits, w))
    return sel(e, equals(e, ef, 0), b.and_(bits, K(e, fmt.sign_bit, w)), bits)


def sat_bits(e, bits, fmt: Fmt):
    """.sat: clamp to [0.0, 1.0]; NaN and negative values (-0 too) give +0."""
    b = e.b
    w = fmt.width
    neg = differs(e, b.and_(bits, K(e, fmt.sign_bit, w)), 0)
    r = sel(e, b.icmp_unsigned(">", bits, K(e, fmt.one_enc, w)), K(e, fmt.one_enc, w), bits)
    return sel(e, b.or_(neg, is_nan_bits(e, bits, fmt)), K(e, 0, w), r)


def relu_bits(e, bits, fmt: Fmt):
    """.relu: negative results (-0 too) give +0; NaN gives the canonical NaN."""
    b = e.b
    w = fmt.width
    neg = differs(e, b.and_(bits, K(e, fmt.sign_bit, w)), 0)
    r = sel(e, neg, K(e, 0, w), bits)
    return sel(e, is_nan_bits(e, bits, fmt), K(e, CANON_NAN[fmt.name], w), r)


def canon_bits(e, bits, fmt: Fmt):
    return sel(e, is_nan_bits(e, bits, fmt), K(e, CANON_NAN[fmt.name], fmt.width), bits)


def f64_nan_result(e, inputs: list[ir.Value], r: ir.Value) -> ir.Value:
    """f64 NaN results: the first NaN among ``inputs`` (given in priority
    order), quietened; NaNs of invalid operations become 0xFFF8000000000000
    (both as a Hopper GPU does)."""
    fmt = FMTS["f64"]
    b = e.b
    out = sel(e, is_nan_bits(e, r, fmt), K(e, CANON_NAN["f64"], 64), r)
    for x in reversed(inputs):
        q = b.or_(x, K(e, QUIET["f64"], 64))
        out = sel(e, is_nan_bits(e, x, fmt), q, out)
    return out


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


def _fma64(e, a, b_, c):
    return e.call("llvm.fma.v32f64", F64V, [a, b_, c])


def ieee_rn(e, op: str, xs: list[ir.Value]) -> ir.Value:
    """``op`` (add, sub, mul, fma, div, rcp, sqrt) on f32 or f64 lanes, rounded to
    nearest by LLVM's IEEE operations."""
    b = e.b
    vt = xs[0].type
    suffix = vector_suffix(vt)
    if op == "add":
        return b.fadd(*xs)
    if op == "sub":
        return b.fsub(*xs)
    if op == "mul":
        return b.fmul(*xs)
    if op == "fma":
        return e.call(f"llvm.fma.{suffix}", vt, xs)
    if op == "div":
        return b.fdiv(*xs)
    if op == "rcp":
        return b.fdiv(ir.Constant(vt, 1.0), xs[0])
    if op == "sqrt":
        return e.call(f"llvm.sqrt.{suffix}", vt, xs)
    raise e.fail(f"no {op}")


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
    x, y = (b.bitcast(v, ivec(64)) for v in pair)
    if mode == "rm":
        return b.not_(b.and_(equals(e, x, 0), equals(e, y, 0)))
    return b.and_(equals(e, x, 1 << 63), equals(e, y, 1 << 63))


def narrow_arith(e, op: str, xs: list[ir.Value], kind: str, mode: str, ftz: bool = False) -> ir.Value:
    """``op`` on f32 lanes holding f16/bf16/f32 values, rounded once to ``kind``
    by ``mode``.  Returns the encoding (NaN canonical)."""
    b = e.b
    fmt = FMTS[kind]
    xs64 = [b.fpext(x, F64V) for x in xs]
    hi, lo, pair = _exact64(e, op, xs64)
    neg, M, E = exact_from_pair(e, hi, lo)
    p = unpack(e, b.bitcast(hi, ivec(64)), FMTS["f64"])
    neg = sel(e, p.zero, _zero_sign(e, mode, pair, neg), neg)
    r = encode(e, neg, M, E, fmt, mode, ftz=ftz)
    return special_bits(e, fmt, p.neg, p.inf, p.nan, r)


def tiny_f32(e, op: str, xs: list[ir.Value]):
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
    p = _f64_parts(e, b.bitcast(hi, ivec(64)))
    adj = sel(e, r_nz, sel(e, r_sign_pos, K(e, 1, 64), K(e, -1, 64)), K(e, 0, 64))
    M = b.add(b.shl(p.M, K(e, 2, 64)), adj)
    E = b.add(b.sub(p.E, K(e, 2, 64)), E_extra)
    return M, E


def f64_directed(e, op: str, bits: list[ir.Value], mode: str) -> ir.Value:
    """f64 ``op`` rounded by rz/rm/rp; ``bits`` are <32 x i64> operands."""
    b = e.b
    fmt = FMTS["f64"]
    xs = [b.bitcast(x, F64V) for x in bits]
    ps = [_f64_parts(e, x) for x in bits]
    zero = ir.Constant(F64V, 0.0)
    one = ir.Constant(F64V, 1.0)
    # the round-to-nearest result gives every special case (NaN, inf, exact zero)
    rnb = b.bitcast(ieee_rn(e, op, xs), ivec(64))
    finite_in = bool_splat(e, True)
    for p in ps:
        finite_in = b.and_(finite_in, b.not_(b.or_(p.inf, p.nan)))
    if op in ("add", "sub"):
        y = xs[1] if op == "add" else b.fneg(xs[1])
        hi, lo = two_sum(e, xs[0], y)
        hp = _f64_parts(e, b.bitcast(hi, ivec(64)))
        neg, M, E = exact_from_pair(e, hi, lo)
        # finite operands whose rounded sum overflows
        ovf = b.and_(finite_in, hp.inf)
        M = sel(e, ovf, K(e, 1, 64), M)
        E = sel(e, ovf, K(e, 4096, 64), E)
        neg = sel(e, ovf, hp.neg, neg)
        nz = b.not_(hp.zero)
        res = round_pack(e, neg, M, E, fmt, mode)
        zs = _zero_sign(e, mode, (xs[0], y), neg)
        zero_res = sel(e, zs, K(e, 1 << 63, 64), K(e, 0, 64))
        res = sel(e, nz, res, zero_res)
        use = finite_in
    elif op in ("mul", "div", "rcp", "sqrt"):
        if op == "rcp":
            pa = None
            Ma, Ea, na = one, K(e, 0, 64), bool_splat(e, False)
            pb = ps[0]
        elif op == "sqrt":
            pa, pb = ps[0], None
        else:
            pa, pb = ps
        if op == "sqrt":
            odd = differs(e, b.and_(pa.E, K(e, 1, 64)), 0)
            Ms = sel(e, odd, b.shl(pa.M, K(e, 1, 64)), pa.M)
            Es = sel(e, odd, b.sub(pa.E, K(e, 1, 64)), pa.E)
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
        res = sel(e, exact0, K(e, (1 << 63) if mode == "rm" else 0, 64), res)
        nonzero = b.not_(b.or_(ps[0].zero, ps[1].zero))
        use = b.and_(finite_in, nonzero)
        # a zero product (finite operands): the sum is c, or a signed zero
        pz = b.and_(finite_in, b.not_(nonzero))
        pzero = sel(e, b.xor(ps[0].neg, ps[1].neg), ir.Constant(F64V, -0.0), zero)
        zs = _zero_sign(e, mode, (pzero, xs[2]), ps[2].neg)
        zsum = sel(e, ps[2].zero, sel(e, zs, K(e, 1 << 63, 64), K(e, 0, 64)), bits[2])
        rnb = sel(e, pz, zsum, rnb)
    out = sel(e, use, res, rnb)
    return f64_nan_result(e, nan_order(op, bits), out)


def nan_order(op: str, bits: list[ir.Value]) -> list[ir.Value]:
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
    ls = b.zext(smin(e, smax(e, s, K(e, 0, 64)), K(e, 127, 64)), ivec(128))
    rs = b.zext(smin(e, smax(e, b.sub(K(e, 0, 64), s), K(e, 0, 64)), K(e, 127, 64)), ivec(128))
    lv = b.shl(v, ls)
    rv = b.lshr(v, rs)
    lost = differs(e, b.and_(v, b.sub(b.shl(K(e, 1, 128), rs), K(e, 1, 128))), 0)
    rv = b.or_(rv, b.zext(lost, ivec(128)))
    return sel(e, left, lv, rv)


def _soft_fma(e, pa: Parts, pb: Parts, pc: Parts):
    """Exact a*b + c for finite a, b (nonzero) and finite c as (neg, M, E, exact_zero)
    with a 128-bit significand sum; M keeps a sticky bit."""
    b = e.b
    P = b.mul(b.zext(pa.M, ivec(128)), b.zext(pb.M, ivec(128)))
    EP = b.add(pa.E, pb.E)
    negP = b.xor(pa.neg, pb.neg)
    topP = b.add(EP, K(e, 106, 64))
    topC = b.add(pc.E, K(e, 53, 64))
    T = sel(e, pc.zero, topP, smax(e, topP, topC))
    L = b.sub(T, K(e, 125, 64))
    X = _i128_shift(e, P, b.sub(EP, L))
    Y = sel(e, pc.zero, K(e, 0, 128), _i128_shift(e, b.zext(pc.M, ivec(128)), b.sub(pc.E, L)))
    SX = sel(e, negP, b.sub(K(e, 0, 128), X), X)
    SY = sel(e, pc.neg, b.sub(K(e, 0, 128), Y), Y)
    S = b.add(SX, SY)
    neg = b.icmp_signed("<", S, K(e, 0, 128))
    A = sel(e, neg, b.sub(K(e, 0, 128), S), S)
    zero = equals(e, A, 0)
    lz = e.call("llvm.ctlz.v32i128", ivec(128), [A, ir.Constant(i1, 0)])
    n = b.sub(K(e, 127, 128), lz)
    sh = smax(e, b.sub(n, K(e, 62, 128)), K(e, 0, 128))
    A1 = b.lshr(A, sh)
    lost = differs(e, b.and_(A, b.sub(b.shl(K(e, 1, 128), sh), K(e, 1, 128))), 0)
    M = b.trunc(b.or_(A1, b.zext(lost, ivec(128))), ivec(64))
    E = b.add(L, b.trunc(sh, ivec(64)))
    return neg, M, E, zero


# ---------------------------------------------------------------------------
# Scalar 16-bit floats (the atomics' compare-and-swap loops)
# ---------------------------------------------------------------------------


def _half_to_f64(b: ir.IRBuilder, h: ir.Value, fmt: tuple[int, int]) -> ir.Value:
    """16-bit float bits (i16) -> double, exactly (scalar integer arithmetic: no
    dependence on the host's half-precision support)."""
    eb, mb = fmt
    bias = (1 << (eb - 1)) - 1
    x = b.zext(h, i64)
    sign = b.shl(b.lshr(x, ir.Constant(i64, 15)), ir.Constant(i64, 63))
    ex = b.and_(b.lshr(x, ir.Constant(i64, mb)), ir.Constant(i64, (1 << eb) - 1))
    man = b.and_(x, ir.Constant(i64, (1 << mb) - 1))
    normal = b.or_(b.shl(b.add(ex, ir.Constant(i64, 1023 - bias)), ir.Constant(i64, 52)), b.shl(man, ir.Constant(i64, 52 - mb)))
    special = b.or_(ir.Constant(i64, 0x7FF << 52), b.shl(man, ir.Constant(i64, 52 - mb)))
    dt = ir.DoubleType()
    sub = b.bitcast(b.fmul(b.uitofp(man, dt), ir.Constant(dt, 2.0 ** (1 - bias - mb))), i64)
    mag = b.select(b.icmp_unsigned("==", ex, ir.Constant(i64, 0)), sub,
                   b.select(b.icmp_unsigned("==", ex, ir.Constant(i64, (1 << eb) - 1)), special, normal))
    return b.bitcast(b.or_(mag, sign), dt)


def _f64_to_half(b: ir.IRBuilder, d: ir.Value, fmt: tuple[int, int]) -> ir.Value:
    """double -> 16-bit float bits (i16), round to nearest even, subnormals kept,
    overflow to infinity, NaN -> the canonical 0x7FFF."""
    eb, mb = fmt
    bias = (1 << (eb - 1)) - 1
    C = lambda v: ir.Constant(i64, v)  # noqa: E731
    x = b.bitcast(d, i64)
    sign = b.shl(b.lshr(x, C(63)), C(15))
    ex = b.and_(b.lshr(x, C(52)), C(0x7FF))
    frac = b.and_(x, C((1 << 52) - 1))
    is_nan = b.and_(b.icmp_unsigned("==", ex, C(0x7FF)), b.icmp_unsigned("!=", frac, C(0)))
    M = b.select(b.icmp_unsigned("==", ex, C(0)), C(0), b.or_(frac, C(1 << 52)))  # f64 subnormals: far below
    e_unb = b.sub(ex, C(1023))
    emin = 1 - bias
    # shift M (53 bits) down to mb + 1 bits, more below the normal range
    below = b.sub(C(emin), e_unb)  # > 0: subnormal in the target format
    shift = b.add(C(52 - mb), b.select(b.icmp_signed(">", below, C(0)), below, C(0)))
    shift = b.select(b.icmp_signed(">", shift, C(63)), C(63), shift)
    q = b.lshr(M, shift)
    r = b.and_(M, b.sub(b.shl(C(1), shift), C(1)))
    half = b.shl(C(1), b.sub(shift, C(1)))
    up = b.or_(b.icmp_unsigned(">", r, half), b.and_(b.icmp_unsigned("==", r, half), b.icmp_unsigned("==", b.and_(q, C(1)), C(1))))
    q = b.add(q, b.zext(up, i64))
    biased = b.add(e_unb, C(bias - 1))
    biased = b.select(b.icmp_signed(">", biased, C(0)), biased, C(0))
    mag = b.add(b.shl(biased, C(mb)), q)
    inf = C(((1 << eb) - 1) << mb)
    big = b.or_(b.icmp_signed(">", e_unb, C(bias)), b.icmp_unsigned(">=", mag, inf))
    mag = b.select(big, inf, mag)
    res = b.select(is_nan, C(0x7FFF), b.or_(mag, sign))
    return b.trunc(res, ir.IntType(16))


def half_add(b: ir.IRBuilder, x: ir.Value, y: ir.Value, fmt: tuple[int, int]) -> ir.Value:
    """x + y on 16-bit float bits: the sum is exact in f64 (or off by far less than
    half an ulp of the result), then rounded once."""
    s = b.fadd(_half_to_f64(b, x, fmt), _half_to_f64(b, y, fmt))
    return _f64_to_half(b, s, fmt)
