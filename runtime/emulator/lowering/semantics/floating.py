"""Floating-point semantics: f16, bf16, f32, f64 and the packed f16x2, bf16x2, f32x2.

Results are made exact by the soft-float helpers (``softfloat.py``): one rounding on
integers to any format and mode, exact f16/bf16/f32 arithmetic in f64, f64 with directed
rounding on the integer significands.

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

from llvmlite import ir

from hypa.passes.contract import CONTRACT_ATTR

from .... import abi
from ... import mufu
from .. import outline
from ..rules import rule
from ..softfloat import (
    CANON_NAN, FMTS, PACKED, QUIET, K, Fmt, bool_splat, canon_bits, differs, encode, equals,
    f64_directed, f64_nan_result, flush_bits, ieee_rn, is_nan_bits, lane_width, nan_order,
    narrow_arith, relu_bits, sat_bits, sel, smax, smin, special_bits, tiny_f32, to_f32, unpack,
)
from ..types import F32V, F64V, FLOAT_KIND, VPTR, i8, i64, ivec, ptr, type_bits


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
    return [e.b.trunc(e.b.lshr(v, K(e, i * w, w * n)), ivec(w)) if i else e.b.trunc(v, ivec(w)) for i in range(n)]


def pack_parts(e, parts: list[ir.Value]) -> ir.Value:
    if len(parts) == 1:
        return parts[0]
    w = lane_width(parts[0])
    tw = w * len(parts)
    acc = e.b.zext(parts[0], ivec(tw))
    for i, p in enumerate(parts[1:], 1):
        acc = e.b.or_(acc, e.b.shl(e.b.zext(p, ivec(tw)), K(e, i * w, tw)))
    return acc


def rounding(e, default: str = "rn") -> str:
    for m in e.mods:
        if m in (".rn", ".rz", ".rm", ".rp", ".rna", ".rs"):
            return m[1:]
    return default


def _ftz_kinds(kind: str) -> bool:
    return kind in ("f32", "f16")


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
    hit = bool_splat(e, False)
    for p in parts:
        hit = b.or_(hit, equals(e, b.and_(p, K(e, 0x7FFF, 16)), OOB_NAN))
    return hit


def _exact_rounding_costs(kind: str, mode: str) -> bool:
    """Whether one element's result takes the soft-float rounding (f16/bf16, or a directed
    rounding): 100-300 vector instructions, where f32/f64 round-to-nearest is one."""
    return not (kind in ("f32", "f64") and mode == "rn")


def arith_element(e, op: str, parts: list[ir.Value], kind: str, mode: str, src_kinds: list[str] | None = None):
    """One element of add/sub/mul/fma/div/rcp/sqrt: encodings in, encoding out.

    Where the rounding is done in soft float, the baseline tier calls a helper function
    (``outline.pure_call``, built and compiled once): a kernel of 4,000 ``fma.rn.f16x2``
    (mixbench's half2 kernels) was 6.7 MB of machine code and 70 s of LLVM with the
    rounding inline, 0.17 MB and under a second with the helper."""
    if not _exact_rounding_costs(kind, mode):
        return _arith_inline(e, op, parts, kind, mode, src_kinds)
    name = ".".join(["hypa_float", op, kind, mode, *(src_kinds or ())])
    return outline.pure_call(e, name, parts, ivec(FMTS[kind].width),
                             lambda eb, *ps: _arith_inline(eb, op, list(ps), kind, mode, src_kinds))


def _arith_inline(e, op: str, parts: list[ir.Value], kind: str, mode: str, src_kinds: list[str] | None = None):
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
            r = ieee_rn(e, op, xs)
            r = f64_nan_result(e, nan_order(op, parts), b.bitcast(r, ivec(64)))
        else:
            r = f64_directed(e, op, parts, mode)
        return r
    xs = [to_f32(e, p, k) for p, k in zip(parts, src_kinds)]
    if kind == "f32" and mode == "rn":
        r = b.bitcast(ieee_rn(e, op, xs), ivec(32))
        r = canon_bits(e, r, fmt)
        if ftz:
            minn = equals(e, b.and_(r, K(e, 0x7FFFFFFF, 32)), 0x00800000)
            r = sel(e, b.and_(minn, tiny_f32(e, op, xs)), b.and_(r, K(e, 0x80000000, 32)), r)
    else:
        r = narrow_arith(e, op, xs, kind, mode, ftz)
    r = _post(e, r, fmt, kind)
    if ".oob" in m:
        r = sel(e, _oob(e, parts, fmt), K(e, 0, fmt.width), r)
    return r


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


def _fused(e, sub: bool) -> bool:
    """An ``add``/``sub`` that ``ptxas`` fuses with the ``mul`` feeding its operand ``k``
    (``hypa.contract``, passes/contract.py): computed as that ``fma``, one rounding, as
    the GPU runs it.  False: not fused (computed as written)."""
    mark = e.op.attributes.get(CONTRACT_ATTR)
    if mark is None:
        return False
    k = mark.value.data
    mul = type(e)(e.wf, e.op.arg_operands(k)[0].owner)  # the mul's operands, read here (SSA)
    kind, n = layout(e)
    sign = 1 << (FMTS[kind].width - 1)
    a, b = src_parts(mul, 1, kind, n), src_parts(mul, 2, kind, n)
    c = src_parts(e, 3 - k, kind, n)
    if sub and k == 1:  # a*b - c
        c = [e.b.xor(x, K(e, sign, FMTS[kind].width)) for x in c]
    elif sub:  # c - a*b = fma(-a, b, c)
        a = [e.b.xor(x, K(e, sign, FMTS[kind].width)) for x in a]
    e.dst(0, pack_parts(e, [arith_element(e, "fma", [a[i], b[i], c[i]], kind, "rn") for i in range(n)]))
    return True


def float_add(e) -> None:
    if not _fused(e, sub=False):
        _arith(e, "add", 2)


def float_sub(e) -> None:
    if not _fused(e, sub=True):
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
    """div.approx.f32 and div.full.f32 as ptxas builds them for sm_90 and an H100 computes
    them: a times MUFU.RCP(b) (``_mufu_rcp``), the product rounded by FMUL (FMUL.FTZ with
    .ftz); without .ftz a divisor below 2^-126 first scales both operands by 2^24, and
    div.full scales both by 1/4 for a divisor above 2^126."""
    b = e.b

    def mul(x, y):  # FMUL, or FMUL.FTZ for .ftz
        return arith_element(e, "mul", [x, K(e, y, 32) if isinstance(y, int) else y], "f32", "rn")

    mag = b.and_(c, K(e, 0x7FFFFFFF, 32))
    if full:
        big = b.and_(b.icmp_unsigned(">", mag, K(e, 0x7E800000, 32)), b.icmp_unsigned("<=", mag, K(e, 0x7F800000, 32)))
        a, c = sel(e, big, mul(a, 0x3E800000), a), sel(e, big, mul(c, 0x3E800000), c)
    if ".ftz" not in e.mods:
        small = b.icmp_unsigned("<", mag, K(e, 0x00800000, 32))
        a, c = sel(e, small, mul(a, 0x4B800000), a), sel(e, small, mul(c, 0x4B800000), c)
    return mul(_mufu_rcp(e, c), a)


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
        out.append(sel(e, isn, nanv, r))
    e.dst(0, pack_parts(e, out))


def float_neg(e) -> None:
    _sign_op(e, "neg")


def float_abs(e) -> None:
    _sign_op(e, "abs")


@rule("copysign")
def copysign(e) -> None:
    """copysign d, a, b: b with the sign of a (bits, NaN payloads kept)."""
    fmt = FMTS[kind_of(e)]
    b = e.b
    w = fmt.width
    a, c = e.src(1, w), e.src(2, w)
    e.dst(0, b.or_(b.and_(c, K(e, fmt.sign_bit - 1, w)), b.and_(a, K(e, fmt.sign_bit, w))))


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
    sx = differs(e, b.and_(x, K(e, fmt.sign_bit, w)), 0)
    sy = differs(e, b.and_(y, K(e, fmt.sign_bit, w)), 0)
    eqv = b.fcmp_ordered("==", fx, fy)
    if is_max:
        take_x = b.or_(b.fcmp_ordered(">", fx, fy), b.and_(eqv, b.and_(b.not_(sx), sy)))
    else:
        take_x = b.or_(b.fcmp_ordered("<", fx, fy), b.and_(eqv, b.and_(sx, b.not_(sy))))
    z = sel(e, take_x, x, y)
    if nan_mode:
        isn = b.or_(nx, ny)
        z = sel(e, isn, K(e, CANON_NAN[kind], w), z)
    else:
        z = sel(e, nx, y, sel(e, ny, x, z))
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
        z = sel(e, isn, b.or_(z, K(e, QUIET["f64"], 64)), z)
    else:
        z = sel(e, isn, K(e, CANON_NAN[kind], w), z)
    if xorsign:
        z = sel(e, isn, z, b.or_(b.and_(z, K(e, fmt.sign_bit - 1, w)), sgn))
    return z


def float_minmax(e, is_max: bool) -> None:
    kind, n = layout(e)
    nsrc = len(e.args) - 1
    srcs = [src_parts(e, k + 1, kind, n) for k in range(nsrc)]
    if kind in ("f16", "bf16"):  # compared as f32 after conversions: a helper (outline.pure_call)
        name = f"hypa_float.{'max' if is_max else 'min'}.{kind}.{nsrc}"
        out = [outline.pure_call(e, name, [s[i] for s in srcs], ivec(FMTS[kind].width),
                                 lambda eb, *ps: _minmax_element(eb, list(ps), kind, is_max)) for i in range(n)]
    else:
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
    p = unpack(e, b.bitcast(r, ivec(64)), fmt)
    h = FMTS["f64h"]
    enc = encode(e, p.neg, p.M, p.E, h, "rn")
    enc = special_bits(e, h, p.neg, p.inf, p.nan, enc)
    enc = flush_bits(e, enc, h)
    out = b.shl(b.zext(enc, ivec(64)), K(e, 32, 64))
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
    rp = unpack(e, b.bitcast(r, ivec(64)), FMTS["f64"])
    enc = encode(e, rp.neg, rp.M, rp.E, fmt, "rn")
    enc = special_bits(e, fmt, rp.neg, rp.inf, rp.nan, enc)
    if ftz:
        enc = flush_bits(e, enc, fmt)
    return enc


def _f64_to_f32_bits(e, r):
    """f64 lanes rounded to nearest f32 encodings (subnormals kept, NaN canonical)."""
    rp = unpack(e, e.b.bitcast(r, ivec(64)), FMTS["f64"])
    enc = encode(e, rp.neg, rp.M, rp.E, FMTS["f32"], "rn")
    return special_bits(e, FMTS["f32"], rp.neg, rp.inf, rp.nan, enc)


def _f32_mul(e, x, y):
    """x * y of f32 encodings, rounded to nearest with subnormal results (FMUL)."""
    b = e.b
    return _f64_to_f32_bits(e, b.fmul(b.fpext(b.bitcast(x, F32V), F64V), b.fpext(b.bitcast(y, F32V), F64V)))


def _mufu_base(e, table: str):
    """The address of a MUFU table's low bytes, in every lane (``runtime/emulator/mufu.py``)."""
    b = e.b
    words = b.inttoptr(e.wf.ctx_word(abi.CTX_MUFU), ptr)
    addr = b.load(b.gep(words, [ir.Constant(i64, mufu.SLOT[table])], source_etype=i64), typ=i64)
    return e.wf.splat_value(addr)


def _mufu_entry(e, base, idx, core_x, fn):
    """A MUFU table's result: at ``base + idx`` (i64 lanes) the low byte of the H100's
    result for ``core_x`` (f32 encodings of the reduced argument); the result is the
    encoding with that low byte nearest ``fn(core_x)`` evaluated in f64 and rounded (the
    H100 is within 3 units of it)."""
    b = e.b
    wf = e.wf
    ref = _f64_to_f32_bits(e, fn(b.fpext(b.bitcast(core_x, F32V), F64V)))
    low = wf.masked_gather(b.inttoptr(b.add(base, idx), VPTR), e.exec_mask, e.splat(0, i8))
    delta = b.sext(b.trunc(b.sub(b.zext(low, ivec(32)), ref), ivec(8)), ivec(32))
    return b.add(ref, delta)


def _fields(e, x):
    """(sign, biased exponent, mantissa) of f32 encodings, i32 lanes."""
    b = e.b
    return (b.lshr(x, K(e, 31, 32)), b.and_(b.lshr(x, K(e, 23, 32)), K(e, 0xFF, 32)), b.and_(x, K(e, 0x7FFFFF, 32)))


def _four_k_index(e, ex, m):
    """x = 4^k * c, c in [1,4): (the table entry of c, c's encoding)."""
    b = e.b
    odd = b.and_(b.add(ex, K(e, 1, 32)), K(e, 1, 32))
    idx = b.or_(b.shl(odd, K(e, 23, 32)), m)
    return b.zext(idx, ivec(64)), b.add(idx, K(e, 0x3F800000, 32))


def _sqrt64(e, x):
    return e.call("llvm.sqrt.v32f64", F64V, [x])


def _mufu_rsq(e, x):
    """MUFU.RSQ (``rsqrt.approx.ftz.f32``) of f32 encodings ``x``: RSQRT[c] * 2^-k."""
    b = e.b
    s, ex, m = _fields(e, x)
    idx, c = _four_k_index(e, ex, m)
    r = _mufu_entry(e, _mufu_base(e, "rsqrt"), idx, c, lambda v: b.fdiv(ir.Constant(F64V, 1.0), _sqrt64(e, v)))
    k = b.ashr(b.sub(ex, K(e, 127, 32)), K(e, 1, 32))
    r = b.sub(r, b.shl(k, K(e, 23, 32)))
    r = sel(e, equals(e, ex, 0), b.or_(b.shl(s, K(e, 31, 32)), K(e, 0x7F800000, 32)), r)
    r = sel(e, b.and_(equals(e, ex, 255), equals(e, m, 0)), K(e, 0, 32), r)
    bad = b.or_(b.and_(equals(e, s, 1), differs(e, ex, 0)), b.and_(equals(e, ex, 255), differs(e, m, 0)))
    return sel(e, bad, K(e, mufu.QNAN, 32), r)


def _mufu_sqrt(e, x):
    """MUFU.SQRT (``sqrt.approx.ftz.f32``): SQRT[c] * 2^k."""
    b = e.b
    s, ex, m = _fields(e, x)
    idx, c = _four_k_index(e, ex, m)
    r = _mufu_entry(e, _mufu_base(e, "sqrt"), idx, c, lambda v: _sqrt64(e, v))
    k = b.ashr(b.sub(ex, K(e, 127, 32)), K(e, 1, 32))
    r = b.add(r, b.shl(k, K(e, 23, 32)))
    r = sel(e, equals(e, ex, 0), b.shl(s, K(e, 31, 32)), r)
    r = sel(e, b.and_(equals(e, ex, 255), equals(e, m, 0)), K(e, 0x7F800000, 32), r)
    bad = b.or_(b.and_(equals(e, s, 1), differs(e, ex, 0)), b.and_(equals(e, ex, 255), differs(e, m, 0)))
    return sel(e, bad, K(e, mufu.QNAN, 32), r)


def _mufu_rcp(e, x):
    """MUFU.RCP (``rcp.approx.ftz.f32``): RCP[m] * 2^-e, subnormal results flushed."""
    b = e.b
    s, ex, m = _fields(e, x)
    c = b.or_(m, K(e, 0x3F800000, 32))
    r = _mufu_entry(e, _mufu_base(e, "rcp"), b.zext(m, ivec(64)), c, lambda v: b.fdiv(ir.Constant(F64V, 1.0), v))
    r = b.sub(r, b.shl(b.sub(ex, K(e, 127, 32)), K(e, 23, 32)))
    r = sel(e, b.icmp_signed("<", r, K(e, 1 << 23, 32)), K(e, 0, 32), r)
    sign = b.shl(s, K(e, 31, 32))
    r = b.or_(r, sign)
    r = sel(e, equals(e, ex, 0), b.or_(sign, K(e, 0x7F800000, 32)), r)
    r = sel(e, b.and_(equals(e, ex, 255), equals(e, m, 0)), sign, r)
    return sel(e, b.and_(equals(e, ex, 255), differs(e, m, 0)), K(e, mufu.QNAN, 32), r)


def _subnormal_scaled(e, x):
    """(|x| < 2^-126, x * 2^24 where it is: a subnormal m * 2^-149 is float(m) * 2^-125)."""
    b = e.b
    sign = b.and_(x, K(e, 0x80000000, 32))
    mag = b.and_(x, K(e, 0x7FFFFFFF, 32))
    small = b.icmp_unsigned("<", mag, K(e, 0x00800000, 32))
    norm = b.sub(b.bitcast(b.uitofp(mag, F32V), ivec(32)), K(e, 125 << 23, 32))
    return small, sel(e, small, b.or_(sign, sel(e, equals(e, mag, 0), K(e, 0, 32), norm)), x)


def _rsqrt_f32(e, x):
    """rsqrt.approx[.ftz].f32 as an H100 computes it (ptxas's wrapper without .ftz: a
    subnormal input times 2^24, the result times 2^12)."""
    if ".ftz" in e.mods:
        return _mufu_rsq(e, x)
    b = e.b
    small, xs = _subnormal_scaled(e, x)
    r = _mufu_rsq(e, xs)
    up = b.and_(small, b.icmp_unsigned("<", b.sub(x, K(e, 1, 32)), K(e, 0x007FFFFF, 32)))  # positive subnormal
    return sel(e, up, b.add(r, K(e, 12 << 23, 32)), r)


def _sqrt_f32(e, x):
    """sqrt.approx[.ftz].f32 as an H100 computes it (without .ftz: a subnormal input times
    2^24, the result times 2^-12)."""
    if ".ftz" in e.mods:
        return _mufu_sqrt(e, x)
    b = e.b
    small, xs = _subnormal_scaled(e, x)
    r = _mufu_sqrt(e, xs)
    down = b.and_(small, b.icmp_unsigned("<", b.sub(x, K(e, 1, 32)), K(e, 0x007FFFFF, 32)))
    return sel(e, down, b.sub(r, K(e, 12 << 23, 32)), r)


def _rcp_f32(e, x):
    """rcp.approx[.ftz].f32 as an H100 computes it (without .ftz: x times 2^24 below
    2^-126, times 1/4 above 2^126, and the result times the same factor, rounded)."""
    if ".ftz" in e.mods:
        return _mufu_rcp(e, x)
    b = e.b
    mag = b.and_(x, K(e, 0x7FFFFFFF, 32))
    sc = sel(e, b.icmp_unsigned("<", mag, K(e, 0x00800000, 32)), K(e, 0x4B800000, 32), K(e, 0x3F800000, 32))
    big = b.and_(b.icmp_unsigned(">", mag, K(e, 0x7E800000, 32)), b.icmp_unsigned("<=", mag, K(e, 0x7F800000, 32)))
    sc = sel(e, big, K(e, 0x3E800000, 32), sc)
    return _f32_mul(e, sc, _mufu_rcp(e, _f32_mul(e, x, sc)))


def _mufu_ex2(e, x):
    """MUFU.EX2 (``ex2.approx.ftz.f32``) of f32 encodings ``x``: |x| truncated to 23
    fraction bits, n + g; 2^g * 2^n or 2^-g * 2^-n from the tables."""
    b = e.b
    x = b.zext(x, ivec(64))
    s = b.lshr(x, K(e, 31, 64))
    ex = b.and_(b.lshr(x, K(e, 23, 64)), K(e, 0xFF, 64))
    m = b.and_(x, K(e, 0x7FFFFF, 64))
    sig = sel(e, equals(e, ex, 0), K(e, 0, 64), b.or_(m, K(e, 1 << 23, 64)))
    sh = b.sub(ex, K(e, 127, 64))
    left = b.shl(sig, smin(e, smax(e, sh, K(e, 0, 64)), K(e, 8, 64)))
    right = b.lshr(sig, smin(e, b.sub(K(e, 0, 64), sh), K(e, 63, 64)))
    q = sel(e, b.icmp_signed(">=", sh, K(e, 0, 64)), left, right)
    n = b.lshr(q, K(e, 23, 64))
    f = b.and_(q, K(e, (1 << 23) - 1, 64))
    neg = equals(e, s, 1)
    # the reduced argument as an f32 in [1,2) (exact): 1 + g
    c = b.trunc(b.or_(f, K(e, 0x3F800000, 64)), ivec(32))
    base = sel(e, neg, _mufu_base(e, "ex2_neg"), _mufu_base(e, "ex2_pos"))

    def ref(v):  # 2^g or 2^-g of v = 1 + g
        g = b.fsub(v, ir.Constant(F64V, 1.0))
        return e.call("llvm.exp2.v32f64", F64V, [sel(e, neg, b.fneg(g), g)])

    t = b.zext(_mufu_entry(e, base, f, c, ref), ivec(64))
    nsh = b.shl(n, K(e, 23, 64))
    r = sel(e, neg, b.sub(t, nsh), b.add(t, nsh))
    r = sel(e, b.icmp_signed(">=", r, K(e, 255 << 23, 64)), K(e, 0x7F800000, 64), r)
    r = sel(e, b.icmp_signed("<", r, K(e, 1 << 23, 64)), K(e, 0, 64), r)
    r = sel(e, b.icmp_unsigned(">=", ex, K(e, 135, 64)), sel(e, neg, K(e, 0, 64), K(e, 0x7F800000, 64)), r)
    r = sel(e, b.and_(equals(e, ex, 255), differs(e, m, 0)), K(e, mufu.QNAN, 64), r)
    return b.trunc(r, ivec(32))


def _ex2_f32(e, x):
    """ex2.approx[.ftz].f32 as an H100 computes it (ptxas's wrapper without .ftz: for
    x < -126, ex2(x/2) squared, rounded to nearest with subnormal results)."""
    if ".ftz" in e.mods:
        return _mufu_ex2(e, x)
    b = e.b
    mag = b.and_(x, K(e, 0x7FFFFFFF, 32))
    low = b.and_(b.icmp_unsigned(">=", x, K(e, 0x80000000, 32)),
                 b.and_(b.icmp_unsigned(">", mag, K(e, 0x42FC0000, 32)), b.icmp_unsigned("<=", mag, K(e, 0x7F800000, 32))))
    half = sel(e, equals(e, mag, 0x7F800000), x, b.sub(x, K(e, 1 << 23, 32)))
    r = _mufu_ex2(e, sel(e, low, half, x))
    return sel(e, low, _f32_mul(e, r, r), r)


#: the .approx.f32 functions computed as the H100's MUFU does (``runtime/emulator/mufu.py``)
_MUFU_F32 = {"rsqrt": _rsqrt_f32, "ex2": _ex2_f32, "rcp": _rcp_f32, "sqrt": _sqrt_f32}


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
        r = e.b.bitcast(_sfu_f64(e, name, e.b.bitcast(a, F64V)), ivec(64))
        e.dst(0, f64_nan_result(e, [a], r))
        return
    if name in ("rcp", "sqrt") and ".approx" not in m:
        e.dst(0, pack_parts(e, [arith_element(e, name, [p], kind, rounding(e)) for p in src_parts(e, 1, kind, n)]))
        return
    if kind == "f32" and n == 1 and name in _MUFU_F32 and ".approx" in m:
        e.dst(0, _MUFU_F32[name](e, e.src(1, 32)))
        return
    out = [_approx_element(e, name, p, kind) for p in src_parts(e, 1, kind, n)]
    e.dst(0, pack_parts(e, out))


# ---------------------------------------------------------------------------
# testp
# ---------------------------------------------------------------------------


@rule("testp")
def testp(e) -> None:
    fmt = FMTS[kind_of(e)]
    b = e.b
    w = fmt.width
    bits = e.src(1, w)
    ex = b.and_(bits, K(e, fmt.inf_enc, w))
    mn = b.and_(bits, K(e, (1 << fmt.mbits) - 1, w))
    is_maxexp = equals(e, ex, fmt.inf_enc)
    is_zeroexp = equals(e, ex, 0)
    mant_zero = equals(e, mn, 0)
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
            vals = [sel(e, t, K(e, one, 16), K(e, 0, 16)) for t in ts]
        else:
            vals = [sel(e, t, K(e, 0xFFFF, 16), K(e, 0, 16)) for t in ts]
        e.dst(0, pack_parts(e, vals))
        return
    t = ts[0]
    if d in (".f32", ".f16", ".bf16"):
        fmt = FMTS[FLOAT_KIND[d]]
        out = sel(e, t, K(e, fmt.one_enc, fmt.width), K(e, 0, fmt.width))
    else:
        bits = type_bits(d)
        out = b.sext(t, ivec(bits))
    e.dst(0, out)


def float_slct(e) -> None:
    """slct.dtype.f32 d, a, b, c: a if c >= 0 (-0 too), b if c < 0 or NaN."""
    b = e.b
    bits = type_bits(e.types[0])
    fmt = FMTS["f32"]
    c = e.src(3, 32)
    if ".ftz" in e.mods:
        c = flush_bits(e, c, fmt)
    ge = b.fcmp_ordered(">=", b.bitcast(c, F32V), ir.Constant(F32V, 0.0))
    e.dst(0, b.select(ge, e.src(1, bits), e.src(2, bits)))
