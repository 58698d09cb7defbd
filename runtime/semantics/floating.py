"""Floating-point semantics: f16, bf16, f32, f64 (and packed f16x2/bf16x2).

f16 and bf16 values are computed in f32 and rounded back: for the basic
operations the double rounding is innocuous (24 >= 2*11+2), so results are
correctly rounded.  Conversions to and from the 16-bit formats are done on
bits, so no libcalls are needed.  NaN results are PTX's canonical NaN.
"""

from __future__ import annotations

from llvmlite import ir

from ..codegen import rule
from .common import FLOAT_KIND, LANES, vec

i1, i16, i32, i64 = ir.IntType(1), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32V = vec(ir.FloatType())
F64V = vec(ir.DoubleType())

CANON_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}


# ---------------------------------------------------------------------------
# 16-bit formats on bits
# ---------------------------------------------------------------------------


def f16_to_f32(e, v: ir.Value) -> ir.Value:
    """<32 x i16> half bits -> <32 x float> (exact)."""
    b = e.b
    h = b.zext(v, vec(i32))
    sign = b.shl(b.and_(h, e.splat(0x8000, i32)), e.splat(16, i32))
    ex = b.and_(b.lshr(h, e.splat(10, i32)), e.splat(0x1F, i32))
    man = b.and_(h, e.splat(0x3FF, i32))
    normal = b.or_(b.shl(b.add(ex, e.splat(112, i32)), e.splat(23, i32)), b.shl(man, e.splat(13, i32)))
    infnan = b.or_(e.splat(0x7F800000, i32), b.shl(man, e.splat(13, i32)))
    sub = b.fmul(b.uitofp(man, F32V), ir.Constant(F32V, [2.0**-24] * LANES))
    subbits = b.bitcast(sub, vec(i32))
    is_zero_exp = b.icmp_unsigned("==", ex, e.splat(0, i32))
    is_max_exp = b.icmp_unsigned("==", ex, e.splat(0x1F, i32))
    mag = b.select(is_zero_exp, subbits, b.select(is_max_exp, infnan, normal))
    return b.bitcast(b.or_(mag, sign), F32V)


def bf16_to_f32(e, v: ir.Value) -> ir.Value:
    b = e.b
    return b.bitcast(b.shl(b.zext(v, vec(i32)), e.splat(16, i32)), F32V)


def _round_shift(e, a: ir.Value, k: int, mode: str, neg: ir.Value) -> ir.Value:
    """Drop the ``k`` low bits of magnitude bits ``a`` rounding by ``mode``
    (``rn`` nearest-even, ``rz``, ``rm``, ``rp``; ``neg`` says the value is negative)."""
    b = e.b
    t = a.type.element
    one = ir.Constant(vec(t), [1] * LANES)
    kk = ir.Constant(vec(t), [k] * LANES)
    if mode == "rn":
        half_m1 = ir.Constant(vec(t), [(1 << (k - 1)) - 1] * LANES)
        odd = b.and_(b.lshr(a, kk), one)
        return b.lshr(b.add(b.add(a, half_m1), odd), kk)
    if mode == "rz":
        return b.lshr(a, kk)
    up = b.lshr(b.add(a, ir.Constant(vec(t), [(1 << k) - 1] * LANES)), kk)
    down = b.lshr(a, kk)
    away = neg if mode == "rm" else b.not_(neg)
    return b.select(away, up, down)


def f32_to_f16_bits(e, x: ir.Value, mode: str = "rn", ftz: bool = False) -> ir.Value:
    """<32 x float> -> <32 x i16> half bits, rounded by ``mode``."""
    b = e.b
    bits = b.bitcast(x, vec(i32))
    sign16 = b.trunc(b.and_(b.lshr(bits, e.splat(16, i32)), e.splat(0x8000, i32)), vec(i16))
    a = b.and_(bits, e.splat(0x7FFFFFFF, i32))
    neg = b.icmp_unsigned("!=", b.and_(bits, e.splat(0x80000000, i32)), e.splat(0, i32))
    is_nan = b.icmp_unsigned(">", a, e.splat(0x7F800000, i32))
    is_inf = b.icmp_unsigned("==", a, e.splat(0x7F800000, i32))
    # normal range of half: rebias and round away 13 bits
    rebased = b.sub(a, e.splat(112 << 23, i32))
    r = _round_shift(e, rebased, 13, mode, neg)
    if mode == "rn" or (mode == "rp") or (mode == "rm"):
        maxv = e.splat(0x7C00, i32)
        if mode in ("rp", "rm"):
            # overflow goes to inf only when rounding away from zero
            away = neg if mode == "rm" else b.not_(neg)
            maxv = b.select(away, e.splat(0x7C00, i32), e.splat(0x7BFF, i32))
    else:
        maxv = e.splat(0x7BFF, i32)
    r = b.select(b.icmp_unsigned(">", r, maxv), maxv, r)
    # subnormal range: |x| * 2^24 rounded to an integer
    mag = b.bitcast(a, F32V)
    scaled = b.fmul(mag, ir.Constant(F32V, [2.0**24] * LANES))
    name = {"rn": "llvm.rint.v32f32", "rz": "llvm.trunc.v32f32"}.get(mode)
    if name is None:
        up = e.call("llvm.ceil.v32f32", F32V, [scaled])
        dn = e.call("llvm.floor.v32f32", F32V, [scaled])
        away = neg if mode == "rm" else b.not_(neg)
        rs = b.select(away, up, dn)
    else:
        rs = e.call(name, F32V, [scaled])
    sub = b.fptoui(rs, vec(i32))
    if ftz:
        sub = e.splat(0, i32)
    small = b.icmp_unsigned("<", a, e.splat(0x38800000, i32))
    r = b.select(small, sub, r)
    r = b.select(is_inf, e.splat(0x7C00, i32), r)
    r = b.select(is_nan, e.splat(0x7FFF, i32), r)
    out = b.trunc(r, vec(i16))
    return b.select(is_nan, out, b.or_(out, sign16))


def f32_to_bf16_bits(e, x: ir.Value, mode: str = "rn") -> ir.Value:
    b = e.b
    bits = b.bitcast(x, vec(i32))
    a = b.and_(bits, e.splat(0x7FFFFFFF, i32))
    neg = b.icmp_unsigned("!=", b.and_(bits, e.splat(0x80000000, i32)), e.splat(0, i32))
    is_nan = b.icmp_unsigned(">", a, e.splat(0x7F800000, i32))
    r = _round_shift(e, a, 16, mode, neg)
    if mode == "rz" or (mode == "rm") or (mode == "rp"):
        is_inf = b.icmp_unsigned("==", a, e.splat(0x7F800000, i32))
        if mode == "rz":
            cap = e.splat(0x7F7F, i32)
        else:
            away = neg if mode == "rm" else b.not_(neg)
            cap = b.select(away, e.splat(0x7F80, i32), e.splat(0x7F7F, i32))
        r = b.select(b.and_(b.icmp_unsigned(">", r, cap), b.not_(is_inf)), cap, r)
    r = b.or_(r, b.lshr(b.and_(bits, e.splat(0x80000000, i32)), e.splat(16, i32)))
    r = b.select(is_nan, e.splat(0x7FFF, i32), r)
    return b.trunc(r, vec(i16))


def f64_to_f32(e, x: ir.Value, mode: str = "rn") -> ir.Value:
    b = e.b
    if mode == "rn":
        return b.fptrunc(x, F32V)
    return directed_to_f32(e, x, None, mode)


def directed_to_f32(e, x64: ir.Value, err64: ir.Value | None, mode: str) -> ir.Value:
    """Round f64 lanes (plus an exact error term, if any) to f32 by ``rz``/``rm``/``rp``."""
    b = e.b
    r = b.fptrunc(x64, F32V)  # nearest
    back = b.fpext(r, F64V)
    # the rounded value went past x (or past x+err when x is exact): step back
    if err64 is None:
        err64 = ir.Constant(F64V, [0.0] * LANES)
    past_up = b.or_(b.fcmp_ordered(">", back, x64), b.and_(b.fcmp_ordered("==", back, x64), b.fcmp_ordered("<", err64, ir.Constant(F64V, [0.0] * LANES))))
    past_dn = b.or_(b.fcmp_ordered("<", back, x64), b.and_(b.fcmp_ordered("==", back, x64), b.fcmp_ordered(">", err64, ir.Constant(F64V, [0.0] * LANES))))
    inf = ir.Constant(F32V, [float("inf")] * LANES)
    down = e.call("llvm.nextafter.v32f32", F32V, [r, b.fneg(inf)]) if False else _next(e, r, -1)
    up = _next(e, r, +1)
    if mode == "rm":
        res = b.select(past_up, down, r)
    elif mode == "rp":
        res = b.select(past_dn, up, r)
    else:  # rz
        pos = b.fcmp_ordered(">", x64, ir.Constant(F64V, [0.0] * LANES))
        negv = b.fcmp_ordered("<", x64, ir.Constant(F64V, [0.0] * LANES))
        res = b.select(b.and_(pos, past_up), down, b.select(b.and_(negv, past_dn), up, r))
    del inf
    return res


def _next(e, r: ir.Value, direction: int) -> ir.Value:
    """The next float after ``r`` toward +inf (1) or -inf (-1), on bits."""
    b = e.b
    bits = b.bitcast(r, vec(i32))
    neg = b.icmp_signed("<", bits, e.splat(0, i32))
    is_zero = b.icmp_unsigned("==", b.and_(bits, e.splat(0x7FFFFFFF, i32)), e.splat(0, i32))
    step_up = b.select(neg, b.sub(bits, e.splat(1, i32)), b.add(bits, e.splat(1, i32)))
    step_dn = b.select(neg, b.add(bits, e.splat(1, i32)), b.sub(bits, e.splat(1, i32)))
    if direction > 0:
        res = b.select(is_zero, e.splat(1, i32), step_up)
    else:
        res = b.select(is_zero, e.splat(0x80000001, i32), step_dn)
    is_nan_inf = b.icmp_unsigned(">=", b.and_(bits, e.splat(0x7FFFFFFF, i32)), e.splat(0x7F800000, i32))
    res = b.select(is_nan_inf, bits, res)
    return b.bitcast(res, F32V)


# ---------------------------------------------------------------------------
# Operand access by kind
# ---------------------------------------------------------------------------


def kind_of(e) -> str:
    for t in e.types:
        if t in FLOAT_KIND:
            return FLOAT_KIND[t]
        if t in (".f16x2", ".bf16x2"):
            return t[1:]
    raise e.fail("needs a floating-point type")


def fsrc(e, k: int, kind: str) -> ir.Value:
    """Operand ``k`` as float lanes for arithmetic (f16/bf16 widened to f32)."""
    return e.src_float(k, kind)


def flush(e, x: ir.Value) -> ir.Value:
    """.ftz: subnormal inputs and results become sign-preserving zero."""
    b = e.b
    is64 = x.type == F64V
    it = vec(i64 if is64 else i32)
    bits = b.bitcast(x, it)
    expmask = ir.Constant(it, [(0x7FF << 52) if is64 else 0x7F800000] * LANES)
    signmask = ir.Constant(it, [(1 << 63) if is64 else 0x80000000] * LANES)
    zero_exp = b.icmp_unsigned("==", b.and_(bits, expmask), ir.Constant(it, [0] * LANES))
    return b.bitcast(b.select(zero_exp, b.and_(bits, signmask), bits), x.type)


def canonical_nan(e, x: ir.Value, kind: str) -> ir.Value:
    b = e.b
    isnan = b.fcmp_unordered("uno", x, x)
    if x.type == F64V:
        nan = b.bitcast(ir.Constant(vec(i64), [CANON_NAN["f64"]] * LANES), F64V)
    else:
        nan = b.bitcast(ir.Constant(vec(i32), [0x7FFFFFFF] * LANES), F32V)
    return b.select(isnan, nan, x)


def saturate(e, x: ir.Value) -> ir.Value:
    """.sat: clamp to [0, 1]; NaN becomes 0."""
    b = e.b
    zero = ir.Constant(x.type, [0.0] * LANES)
    one = ir.Constant(x.type, [1.0] * LANES)
    name = "v32f64" if x.type == F64V else "v32f32"
    x = e.call(f"llvm.maxnum.{name}", x.type, [x, zero])
    x = e.call(f"llvm.minnum.{name}", x.type, [x, one])
    isnan = b.fcmp_unordered("uno", x, x)
    return b.select(isnan, zero, x)


def rounding(e) -> str:
    for m in e.mods:
        if m in (".rn", ".rz", ".rm", ".rp"):
            return m[1:]
    return "rn"


def fdst(e, k: int, x: ir.Value, kind: str, mode: str = "rn") -> None:
    """Write a float result: canonical NaN, .ftz/.sat, narrowing for f16/bf16."""
    if ".sat" in e.mods:
        x = saturate(e, x)
    if ".ftz" in e.mods and kind in ("f32",):
        x = flush(e, x)
    x = canonical_nan(e, x, kind)
    b = e.b
    if kind == "f32":
        e.dst(k, b.bitcast(x, vec(i32)))
    elif kind == "f64":
        e.dst(k, b.bitcast(x, vec(i64)))
    elif kind == "f16":
        e.dst(k, f32_to_f16_bits(e, x, mode, ftz=".ftz" in e.mods))
    elif kind == "bf16":
        e.dst(k, f32_to_bf16_bits(e, x, mode))
    else:
        raise e.fail(f"cannot write {kind}")


# ---------------------------------------------------------------------------
# Packed f16x2 / bf16x2: operate on each half
# ---------------------------------------------------------------------------


def halves(e, k: int) -> tuple[ir.Value, ir.Value]:
    b = e.b
    w = e.src(k, 32)
    lo = b.trunc(w, vec(i16))
    hi = b.trunc(b.lshr(w, e.splat(16, i32)), vec(i16))
    return lo, hi


def pack(e, lo: ir.Value, hi: ir.Value) -> ir.Value:
    b = e.b
    return b.or_(b.zext(lo, vec(i32)), b.shl(b.zext(hi, vec(i32)), e.splat(16, i32)))


def _packed_binary(e, fn) -> None:
    kind = "f16" if ".f16x2" in e.types else "bf16"
    conv = f16_to_f32 if kind == "f16" else bf16_to_f32
    back = (lambda x: f32_to_f16_bits(e, _post(e, x, kind))) if kind == "f16" else (lambda x: f32_to_bf16_bits(e, _post(e, x, kind)))
    parts = [halves(e, k) for k in range(1, len(e.args))]
    res = []
    for h in (0, 1):
        xs = [conv(e, p[h]) for p in parts]
        res.append(back(fn(*xs)))
    e.dst(0, pack(e, res[0], res[1]))


def _post(e, x, kind):
    if ".sat" in e.mods:
        x = saturate(e, x)
    return x


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------


def _binary(e, op: str) -> None:
    kind = kind_of(e)
    if kind in ("f16x2", "bf16x2"):
        _packed_binary(e, lambda a, b_: getattr(e.b, op)(a, b_))
        return
    a = fsrc(e, 1, kind)
    c = fsrc(e, 2, kind)
    if ".ftz" in e.mods and kind == "f32":
        a, c = flush(e, a), flush(e, c)
    mode = rounding(e)
    if mode != "rn" and kind in ("f32",):
        a64, c64 = e.b.fpext(a, F64V), e.b.fpext(c, F64V)
        s = getattr(e.b, op)(a64, c64)
        err = two_sum_error(e, a64, c64, s) if op in ("fadd", "fsub") else None
        if op == "fsub" and err is not None:
            err = two_sum_error(e, a64, e.b.fneg(c64), s)
        fdst(e, 0, directed_to_f32(e, s, err, mode), kind)
        return
    fdst(e, 0, getattr(e.b, op)(a, c), kind)


def two_sum_error(e, a: ir.Value, c: ir.Value, s: ir.Value) -> ir.Value:
    """The exact error of ``s = fl(a + c)`` (Knuth's TwoSum)."""
    b = e.b
    bb = b.fsub(s, a)
    return b.fadd(b.fsub(a, b.fsub(s, bb)), b.fsub(c, bb))


def is_float_op(e) -> bool:
    return any(t in FLOAT_KIND or t in (".f16x2", ".bf16x2") for t in e.types)


def float_add(e) -> None:
    _binary(e, "fadd")


def float_sub(e) -> None:
    _binary(e, "fsub")


def float_mul(e) -> None:
    _binary(e, "fmul")


def float_fma(e) -> None:
    kind = kind_of(e)
    b = e.b
    if kind in ("f16x2", "bf16x2"):
        def f(x, y, z):
            r = e.call("llvm.fma.v32f64", F64V, [b.fpext(x, F64V), b.fpext(y, F64V), b.fpext(z, F64V)])
            return b.fptrunc(r, F32V)
        _packed_binary(e, f)
        return
    a, c, d = (fsrc(e, k, kind) for k in (1, 2, 3))
    if ".ftz" in e.mods and kind == "f32":
        a, c, d = flush(e, a), flush(e, c), flush(e, d)
    if kind in ("f16", "bf16"):
        r = e.call("llvm.fma.v32f64", F64V, [b.fpext(a, F64V), b.fpext(c, F64V), b.fpext(d, F64V)])
        fdst(e, 0, b.fptrunc(r, F32V), kind)
        return
    name = "llvm.fma.v32f64" if kind == "f64" else "llvm.fma.v32f32"
    mode = rounding(e)
    if mode != "rn" and kind == "f32":
        a64, c64, d64 = (b.fpext(x, F64V) for x in (a, c, d))
        p = b.fmul(a64, c64)  # exact
        s = b.fadd(p, d64)
        fdst(e, 0, directed_to_f32(e, s, two_sum_error(e, p, d64, s), mode), kind)
        return
    fdst(e, 0, e.call(name, a.type, [a, c, d]), kind)


def float_div(e) -> None:
    kind = kind_of(e)
    b = e.b
    a = fsrc(e, 1, kind)
    c = fsrc(e, 2, kind)
    if ".ftz" in e.mods and kind == "f32":
        a, c = flush(e, a), flush(e, c)
    mode = rounding(e)
    if mode != "rn" and kind == "f32":
        a64, c64 = b.fpext(a, F64V), b.fpext(c, F64V)
        q = b.fdiv(a64, c64)
        # sign of the exact remainder a - q*c tells where the true quotient is
        rem = e.call("llvm.fma.v32f64", F64V, [b.fneg(q), c64, a64])
        err = b.fdiv(rem, c64)
        fdst(e, 0, directed_to_f32(e, q, err, mode), kind)
        return
    fdst(e, 0, b.fdiv(a, c), kind)


def float_neg(e) -> None:
    kind = kind_of(e)
    b = e.b
    bits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(kind, 32)
    v = e.src(1, bits)
    sign = 1 << (bits - 1)
    if kind in ("f16x2", "bf16x2"):
        sign = 0x80008000
    r = b.xor(v, e.splat(sign, ir.IntType(bits)))
    if ".ftz" in e.mods and kind == "f32":
        r = b.bitcast(flush(e, b.bitcast(r, F32V)), vec(i32))
    e.dst(0, r)


def float_abs(e) -> None:
    kind = kind_of(e)
    b = e.b
    bits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(kind, 32)
    v = e.src(1, bits)
    mask = (1 << (bits - 1)) - 1
    if kind in ("f16x2", "bf16x2"):
        mask = 0x7FFF7FFF
    r = b.and_(v, e.splat(mask, ir.IntType(bits)))
    if ".ftz" in e.mods and kind == "f32":
        r = b.bitcast(flush(e, b.bitcast(r, F32V)), vec(i32))
    e.dst(0, r)


def float_minmax(e, is_max: bool) -> None:
    kind = kind_of(e)
    b = e.b
    nan_prop = ".NaN" in e.mods
    if kind in ("f16x2", "bf16x2"):
        base = "maximum" if nan_prop else "maxnum"
        if not is_max:
            base = "minimum" if nan_prop else "minnum"
        _packed_binary(e, lambda x, y: e.call(f"llvm.{base}.v32f32", F32V, [x, y]))
        return
    a = fsrc(e, 1, kind)
    c = fsrc(e, 2, kind)
    if ".ftz" in e.mods and kind == "f32":
        a, c = flush(e, a), flush(e, c)
    vt = "v32f64" if kind == "f64" else "v32f32"
    base = ("maximum" if nan_prop else "maxnum") if is_max else ("minimum" if nan_prop else "minnum")
    r = e.call(f"llvm.{base}.{vt}", a.type, [a, c])
    fdst(e, 0, r, kind)


@rule("rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh")
def special_function(e) -> None:
    kind = kind_of(e)
    b = e.b
    name = e.spec.name
    if kind in ("f16x2", "bf16x2"):
        _packed_binary(e, lambda x: _sfu(e, name, x, "v32f32", F32V))
        return
    a = fsrc(e, 1, kind)
    if ".ftz" in e.mods and kind == "f32":
        a = flush(e, a)
    vt = "v32f64" if kind == "f64" else "v32f32"
    r = _sfu(e, name, a, vt, a.type)
    if ".ftz" in e.mods and kind == "f32":
        r = flush(e, r)
    fdst(e, 0, r, kind)
    del b


def _sfu(e, name: str, a: ir.Value, vt: str, ty: ir.Type) -> ir.Value:
    b = e.b
    one = ir.Constant(ty, [1.0] * LANES)
    if name == "rcp":
        return b.fdiv(one, a)
    if name == "sqrt":
        return e.call(f"llvm.sqrt.{vt}", ty, [a])
    if name == "rsqrt":
        return b.fdiv(one, e.call(f"llvm.sqrt.{vt}", ty, [a]))
    if name == "sin":
        return e.call(f"llvm.sin.{vt}", ty, [a])
    if name == "cos":
        return e.call(f"llvm.cos.{vt}", ty, [a])
    if name == "lg2":
        return e.call(f"llvm.log2.{vt}", ty, [a])
    if name == "ex2":
        return e.call(f"llvm.exp2.{vt}", ty, [a])
    if name == "tanh":
        return e.call(f"llvm.tanh.{vt}", ty, [a])
    raise e.fail(f"no special function {name}")


@rule("copysign")
def copysign(e) -> None:
    kind = kind_of(e)
    a = fsrc(e, 1, kind)
    c = fsrc(e, 2, kind)
    vt = "v32f64" if kind == "f64" else "v32f32"
    # copysign.type d, a, b: magnitude of b, sign of a
    fdst(e, 0, e.call(f"llvm.copysign.{vt}", a.type, [c, a]), kind)


@rule("testp")
def testp(e) -> None:
    kind = kind_of(e)
    b = e.b
    a = fsrc(e, 1, kind)
    it = vec(i64) if kind == "f64" else vec(i32)
    bits = b.bitcast(a, it)
    expm = (0x7FF << 52) if kind == "f64" else 0x7F800000
    mant = ((1 << 52) - 1) if kind == "f64" else 0x7FFFFF
    ex = b.and_(bits, ir.Constant(it, [expm] * LANES))
    mn = b.and_(bits, ir.Constant(it, [mant] * LANES))
    zero = ir.Constant(it, [0] * LANES)
    is_maxexp = b.icmp_unsigned("==", ex, ir.Constant(it, [expm] * LANES))
    is_zeroexp = b.icmp_unsigned("==", ex, zero)
    mant_zero = b.icmp_unsigned("==", mn, zero)
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
        r = b.and_(b.not_(is_maxexp), b.not_(is_zeroexp))
    elif ".subnormal" in m:
        r = b.and_(is_zeroexp, b.not_(mant_zero))
    else:
        raise e.fail("unknown testp operation")
    e.dst(0, r)
