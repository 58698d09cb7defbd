"""Data movement and conversion: mov, cvta, isspacep, cvt (every type pair) and cvt.pack.

Every conversion to a floating-point format rounds on integers through
``softfloat.round_pack`` (one rounding, any mode, subnormals, overflow by mode,
``.satfinite``), so f64 -> f16 is not rounded twice and no libcalls appear.
"""

from __future__ import annotations

from llvmlite import ir

from .... import abi
from .. import outline
from .. import softfloat as sf
from ..rules import rule
from ..types import F32V, F64V, i1, i16, i32, i64, is_signed, type_bits, vec
from . import floating as fp


@rule("mov")
def mov(e) -> None:
    t = e.types[0] if e.types else ".b32"
    b = e.b
    dst, src = e.args[0], e.args[1]
    if t == ".pred":
        e.dst(0, e.src_pred(1))
        return
    bits = type_bits(t)
    width = next((int(m[2:]) for m in e.mods if m in (".v2", ".v4")), 1)
    if width > 1:
        # mov.v2.u32 v, {a, b} / {a, b}, v / v, w: element by element (vector registers
        # pack and unpack in the emitter)
        e.dst_elements(0, e.src_elements(1, bits))
        return
    if src[0] == "vec":
        # pack: mov.b64 %rd, {%r1, %r2} (element 0 is the low part)
        parts = e.src_elements(1, bits // len(src[1]))
        w = bits // len(parts)
        acc = ir.Constant(vec(ir.IntType(bits)), 0)
        for k, p in enumerate(parts):
            acc = b.or_(acc, b.shl(b.zext(p, vec(ir.IntType(bits))), ir.Constant(vec(ir.IntType(bits)), k * w)))
        e.dst(0, acc)
        return
    if dst[0] == "vec":
        # unpack: mov.b64 {%r1, %r2}, %rd
        whole = e.src(1, bits)
        n = len(dst[1])
        w = bits // n
        parts = [b.trunc(b.lshr(whole, ir.Constant(whole.type, k * w)), vec(ir.IntType(w))) for k in range(n)]
        e.dst_elements(0, parts)
        return
    e.dst(0, e.src(1, bits))


@rule("cvta")
def cvta(e) -> None:
    """Generic <-> state-space addresses: generic = window << 40 | offset."""
    b = e.b
    bits = type_bits(e.types[-1]) if e.types else 64
    a = e.src(1, 64)
    space = next((m for m in e.mods if m in (".global", ".shared", ".shared::cta", ".shared::cluster", ".local", ".const", ".param", ".param::entry")), ".global")
    win = {".shared": abi.WIN_SHARED, ".shared::cta": abi.WIN_SHARED, ".shared::cluster": abi.WIN_SHARED,
           ".local": abi.WIN_LOCAL, ".const": abi.WIN_CONST, ".param": abi.WIN_PARAM, ".param::entry": abi.WIN_PARAM}.get(space)
    if win is None:  # global addresses are generic addresses
        e.dst(0, e.fit(a, bits, False))
        return
    if ".to" in e.mods:
        r = b.and_(a, e.splat(abi.OFFSET_MASK, i64))
    else:
        r = b.or_(b.and_(a, e.splat(abi.OFFSET_MASK, i64)), e.splat(win << abi.WINDOW_SHIFT, i64))
    e.dst(0, e.fit(r, bits, False))


@rule("isspacep")
def isspacep(e) -> None:
    b = e.b
    a = e.src(1, 64)
    win = b.lshr(a, e.splat(abi.WINDOW_SHIFT, i64))
    space = next((m for m in e.mods), ".global")
    if space == ".global":
        r = b.icmp_unsigned(">=", win, e.splat(abi.WIN_FIRST_GLOBAL, i64))
    else:
        want = {".shared": abi.WIN_SHARED, ".shared::cta": abi.WIN_SHARED, ".shared::cluster": abi.WIN_SHARED,
                ".local": abi.WIN_LOCAL, ".const": abi.WIN_CONST, ".param": abi.WIN_PARAM}.get(space, 0)
        r = b.icmp_unsigned("==", win, e.splat(want, i64))
    e.dst(0, r)


# ---------------------------------------------------------------------------
# cvt
# ---------------------------------------------------------------------------

_IRND = {".rni": "rint", ".rzi": "trunc", ".rmi": "floor", ".rpi": "ceil"}
_FP8 = {".e4m3x2": "e4m3", ".e5m2x2": "e5m2"}
_CVT_FLOAT = {".f16": "f16", ".bf16": "bf16", ".f32": "f32", ".f64": "f64"}


def _irnd(e) -> str | None:
    return next((_IRND[m] for m in e.mods if m in _IRND), None)


@rule("cvt")
def cvt(e) -> None:
    if len(e.types) < 2:
        raise e.fail("cvt needs a destination and a source type")
    dt, st = e.types[0], e.types[1]
    if dt in (".f16x2", ".bf16x2") and st == ".f32":
        _cvt_pair_to_16(e, dt)
    elif dt in _FP8:
        _cvt_to_fp8(e, dt, st)
    elif dt == ".f16x2" and st in _FP8:
        _cvt_from_fp8(e, st)
    elif dt == ".tf32":
        _cvt_to_tf32(e)
    else:
        dfl, sfl = dt in _CVT_FLOAT, st in _CVT_FLOAT
        if not dfl and not sfl:
            _cvt_int_int(e, dt, st, ".sat" in e.mods)
        elif dfl and not sfl:
            _cvt_int_to_float(e, dt, st)
        elif not dfl and sfl:
            _cvt_float_to_int(e, dt, st)
        else:
            _cvt_float_float(e, dt, st)


def _finish(e, bits, fmt, *, relu=False, sat=False, ftz=False):
    """Destination modifiers on a float encoding."""
    if ftz:
        bits = sf.flush_bits(e, bits, fmt)
    if relu:
        bits = sf.relu_bits(e, bits, fmt)
    if sat:
        bits = sf.sat_bits(e, bits, fmt)
    return bits


def _round_parts(e, p, fmt, mode, satfinite=False, rbits=None):
    """A float's parts rounded to ``fmt`` (specials: inf, NaN -> canonical)."""
    r = sf.round_pack(e, p.neg, p.M, p.E, fmt, mode, satfinite, rbits)
    r = sf.fit_width(e, r, fmt.width)
    return sf.special_bits(e, fmt, p.neg, p.inf, p.nan, r, satfinite)


def _cvt_pair_to_16(e, dt: str) -> None:
    """cvt.frnd{.relu}{.satfinite}.f16x2/bf16x2.f32 d, a, b: a to the upper half."""
    kind = dt[1:-2]
    fmt = sf.FMTS[kind]
    mode = fp.rounding(e)
    m = e.mods
    outs = []
    rb = e.src(3, 32) if mode == "rs" else None

    def element(eb, bits, rbits=None):
        r = _round_parts(eb, sf.unpack(eb, bits, sf.FMTS["f32"]), fmt, mode, ".satfinite" in m, rbits)
        return _finish(eb, r, fmt, relu=".relu" in m)

    for k, shift in ((1, 16), (2, 0)):
        args = [e.src(k, 32)]
        if rb is not None:
            part = e.b.and_(e.b.lshr(rb, e.splat(shift, i32)), e.splat(0xFFFF if kind == "bf16" else 0x1FFF, i32))
            args.append(e.b.zext(part, vec(i64)))
        outs.append(outline.pure_call(e, f"hypa_cvt.{kind}.f32.{mode}", args, vec(ir.IntType(fmt.width)), element))
    e.dst(0, fp.pack_parts(e, [outs[1], outs[0]]))


def _cvt_to_fp8(e, dt: str, st: str) -> None:
    """cvt.rn.satfinite{.relu}.e4m3x2/e5m2x2.{f32 (a, b) | f16x2 (a)}: a (the
    upper half) to the upper byte."""
    fmt = sf.FMTS[_FP8[dt]]
    m = e.mods
    if st == ".f32":
        srcs = [sf.unpack(e, e.src(k, 32), sf.FMTS["f32"]) for k in (2, 1)]  # low byte from b
    else:
        lo, hi = fp.src_parts(e, 1, "f16", 2)
        srcs = [sf.unpack(e, h, sf.FMTS["f16"]) for h in (lo, hi)]
    outs = []
    for p in srcs:
        r = _round_parts(e, p, fmt, "rn", satfinite=True)
        outs.append(_finish(e, r, fmt, relu=".relu" in m))
    e.dst(0, fp.pack_parts(e, outs))


def _cvt_from_fp8(e, st: str) -> None:
    """cvt.rn{.relu}.f16x2.e4m3x2/e5m2x2 d, a: exact; the upper byte to the upper half."""
    sfmt = sf.FMTS[_FP8[st]]
    f16 = sf.FMTS["f16"]
    a = e.src(1, 16)
    outs = []
    for shift in (0, 8):
        byte = e.b.trunc(e.b.lshr(a, e.splat(shift, i16)), vec(ir.IntType(8)))
        p = sf.unpack(e, byte, sfmt)
        r = _round_parts(e, p, f16, "rn")
        outs.append(_finish(e, r, f16, relu=".relu" in e.mods))
    e.dst(0, fp.pack_parts(e, outs))


def _cvt_to_tf32(e) -> None:
    """cvt.rna{.satfinite}.tf32.f32 and cvt.rn/rz{.satfinite}{.relu}.tf32.f32:
    10 mantissa bits kept in an f32 encoding whose low 13 bits are zero.

    As a Hopper GPU does it: ``.rna`` rounds finite values half away from zero
    ((a + 0x1000) & ~0x1fff, overflowing to infinity) and truncates an
    infinity or NaN (a & ~0x1fff: a NaN with a small payload becomes
    infinity); ``.rna.satfinite`` rounds finite values (overflow to the
    largest tf32) and maps an infinity or NaN to (a & ~0x1fff) - 0x2000 in
    magnitude; ``.rn``/``.rz`` give 0x7fffe000 for NaN."""
    b = e.b
    m = e.mods
    tf = sf.FMTS["tf32"]
    a = e.src(1, 32)
    p = sf.unpack(e, a, sf.FMTS["f32"])
    mode = fp.rounding(e, "rna")
    satfinite = ".satfinite" in m
    f32 = sf.FMTS["f32"]
    if mode == "rna" and not satfinite:
        rounded = b.and_(b.add(a, e.splat(0x1000, i32)), e.splat(0xFFFFE000, i32))
        e.dst(0, b.select(b.or_(p.inf, p.nan), b.and_(a, e.splat(0xFFFFE000, i32)), rounded))
        return
    r = sf.round_pack(e, p.neg, p.M, p.E, tf, mode, satfinite)
    r = b.trunc(b.shl(r, e.splat(13, i64)), vec(i32))
    sign = b.select(p.neg, e.splat(0x80000000, i32), e.splat(0, i32))
    special = b.or_(p.inf, p.nan)
    if mode == "rna":
        mag = b.sub(b.and_(a, e.splat(0x7FFFE000, i32)), e.splat(0x2000, i32))
        r = b.select(special, b.or_(sign, mag), r)
    else:
        inf = e.splat((tf.max_enc << 13) if satfinite else 0x7F800000, i32)
        r = b.select(p.inf, b.or_(sign, inf), r)
        r = b.select(p.nan, e.splat(0x7FFFE000, i32), r)
    r = _finish(e, r, f32, relu=".relu" in m)
    if ".relu" in m:  # the relu NaN is the tf32 one
        r = b.select(p.nan, e.splat(0x7FFFE000, i32), r)
    e.dst(0, r)


def _cvt_int_int(e, dt: str, st: str, sat: bool) -> None:
    b = e.b
    sb, db = type_bits(st), type_bits(dt)
    x = e.src(1, sb, is_signed(st))
    if sat:
        # clamp the source value to the destination range
        wide_bits = max(sb, db) + 1
        wt = vec(ir.IntType(wide_bits))
        xw = b.sext(x, wt) if is_signed(st) else b.zext(x, wt)
        if is_signed(dt):
            lo, hi = -(1 << (db - 1)), (1 << (db - 1)) - 1
        else:
            lo, hi = 0, (1 << db) - 1
        xw = e.call(f"llvm.smax.v32i{wide_bits}", wt, [xw, ir.Constant(wt, lo)])
        xw = e.call(f"llvm.smin.v32i{wide_bits}", wt, [xw, ir.Constant(wt, hi)])
        e.dst(0, b.trunc(xw, vec(ir.IntType(db))), is_signed(dt))
        return
    e.dst(0, e.fit(x, db, is_signed(st)), is_signed(dt))


def _cvt_int_to_float(e, dt: str, st: str) -> None:
    """Integer -> float, rounded once by the rounding modifier (default .rn)."""
    b = e.b
    sb = type_bits(st)
    x = e.src(1, sb, is_signed(st))
    x64 = b.sext(x, vec(i64)) if is_signed(st) else b.zext(x, vec(i64))
    if is_signed(st):
        neg = b.icmp_signed("<", x64, e.splat(0, i64))
        mag = b.select(neg, b.sub(e.splat(0, i64), x64), x64)  # |INT64_MIN| = 2**63 as unsigned
    else:
        neg = e.splat(0, i1)
        mag = x64
    fmt = sf.FMTS[_CVT_FLOAT[dt]]
    mode = fp.rounding(e)
    if dt in (".f32", ".f64") and (mode == "rn" or sb < fmt.mbits + 1):
        # LLVM's conversion rounds to nearest (and is exact for narrow integers)
        ft = F32V if dt == ".f32" else F64V
        r = b.sitofp(x, ft) if is_signed(st) else b.uitofp(x, ft)
        r = b.bitcast(r, vec(ir.IntType(fmt.width)))
    else:
        r = sf.encode(e, neg, mag, e.splat(0, i64), fmt, mode)
    e.dst(0, _finish(e, r, fmt, sat=".sat" in e.mods))


def _cvt_float_to_int(e, dt: str, st: str) -> None:
    """Float -> integer: rounded to an integral value (.rni/.rzi/.rmi/.rpi),
    clamped to the destination range; NaN gives 0, or the sign-bit pattern
    when the source is .f64 or the destination is 64-bit (PTX ISA)."""
    b = e.b
    kind = _CVT_FLOAT[st]
    fmt = sf.FMTS[kind]
    bits = e.src(1, fmt.width)
    if ".ftz" in e.mods and kind == "f32":
        bits = sf.flush_bits(e, bits, fmt)
    x = b.bitcast(bits, F64V) if kind == "f64" else sf.to_f32(e, bits, kind)
    vt = "v32f64" if kind == "f64" else "v32f32"
    r = e.call(f"llvm.{_irnd(e) or 'trunc'}.{vt}", x.type, [x])
    db = type_bits(dt)
    name = f"llvm.fpto{'s' if is_signed(dt) else 'u'}i.sat.v32i{db}.{vt}"
    out = e.call(name, vec(ir.IntType(db)), [r])
    if kind == "f64" or db == 64:
        isnan = b.fcmp_unordered("uno", x, x)
        out = b.select(isnan, e.splat(1 << (db - 1), ir.IntType(db)), out)
    e.dst(0, out, is_signed(dt))


def _cvt_float_float(e, dt: str, st: str) -> None:
    sk, dk = _CVT_FLOAT[st], _CVT_FLOAT[dt]
    sfmt, dfmt = sf.FMTS[sk], sf.FMTS[dk]
    m = e.mods
    # .ftz flushes f32 inputs and results; a Hopper GPU ignores it on cvt.f16.f32
    ftz_in = ".ftz" in m and sk == "f32" and dk != "f16"
    ftz_out = ".ftz" in m and dk == "f32"
    bits = e.src(1, sfmt.width)
    if ftz_in:
        bits = sf.flush_bits(e, bits, sfmt)

    def convert(eb, x):
        if _irnd(eb) is None and ".relu" not in m and ".satfinite" not in m and not ftz_in and (sk, dk) in (
                ("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"), ("f32", "f64")):
            return _widened(eb, x, sk, dk, ftz_out)
        return _rounded_float(eb, x, sk, dk, ftz_in, ftz_out)

    if (sk, dk) == ("f32", "f64") and _irnd(e) is None:  # fpext, inline
        e.dst(0, convert(e, bits))
    else:  # the soft-float rounding or f16's subnormals: a helper (outline.pure_call)
        e.dst(0, outline.pure_call(e, f"hypa_cvt.{dk}.{sk}", [bits], vec(ir.IntType(dfmt.width)), convert))


def _widened(e, bits, sk: str, dk: str, ftz_out: bool):
    """A float encoding converted exactly to a wider format."""
    b = e.b
    sfmt, dfmt = sf.FMTS[sk], sf.FMTS[dk]
    x = sf.to_f32(e, bits, sk)
    if dk == "f64":
        x = b.fpext(x, F64V)
    r = b.bitcast(x, vec(ir.IntType(dfmt.width)))
    if sk == "f16":  # f16 NaN -> the canonical NaN (f32), its payload (f64)
        r = b.select(sf.unpack(e, bits, sfmt).nan, _nan_convert(e, bits, sfmt, dfmt, False), r) if dk == "f64" else \
            b.select(sf.unpack(e, bits, sfmt).nan, e.splat(sf.CANON_NAN["f32"], i32), r)
    elif dk == "f64":
        r = b.select(sf.unpack(e, bits, sfmt).nan, _nan_convert(e, bits, sfmt, dfmt, False), r)
    return _finish(e, r, dfmt, sat=".sat" in e.mods, ftz=ftz_out)


def _rounded_float(e, bits, sk: str, dk: str, ftz_in: bool, ftz_out: bool):
    """A float encoding (``sk``, flushed already under ``ftz_in``) converted to ``dk`` by
    the instruction's rounding modifier (or rounded to an integral value)."""
    b = e.b
    sfmt, dfmt = sf.FMTS[sk], sf.FMTS[dk]
    m = e.mods
    irnd = _irnd(e)
    if irnd is not None:
        # same-size conversion rounding to an integral value
        x = b.bitcast(bits, F64V) if sk == "f64" else b.fpext(sf.to_f32(e, bits, sk), F64V)
        x = e.call(f"llvm.{irnd}.v32f64", F64V, [x])
        p = sf.unpack(e, b.bitcast(x, vec(i64)), sf.FMTS["f64"])
        mode = "rn"
    else:
        p = sf.unpack(e, bits, sfmt)
        mode = fp.rounding(e)
    r = _round_parts(e, p, dfmt, mode, ".satfinite" in m)
    # NaNs (Hopper GPU): to f64 the payload is kept (quietened) -- after an f32
    # canonicalisation under .ftz; from f64 the sign and the top payload bits
    # are kept (quietened); bf16 -> f32 is a plain shift; other conversions
    # give the canonical NaN.
    if dk == "f64" or sk == "f64" or (sk, dk) == ("bf16", "f32"):
        src = bits
        if ftz_in:
            src = b.select(p.nan, e.splat(sf.CANON_NAN["f32"], i32), src)
        r = b.select(p.nan, _nan_convert(e, src, sfmt, dfmt, (sk, dk) == ("bf16", "f32")), r)
    return _finish(e, r, dfmt, relu=".relu" in m, sat=".sat" in m, ftz=ftz_out)


def _nan_convert(e, src, sfmt, dfmt, raw: bool):
    """A NaN converted keeping its sign and (top) payload bits, quietened unless ``raw``."""
    b = e.b
    mant = b.zext(b.and_(src, e.splat((1 << sfmt.mbits) - 1, ir.IntType(sfmt.width))), vec(i64))
    shift = dfmt.mbits - sfmt.mbits
    mant = b.shl(mant, e.splat(shift, i64)) if shift >= 0 else b.lshr(mant, e.splat(-shift, i64))
    neg = sf.unpack(e, src, sfmt).neg
    sign = b.select(neg, e.splat(dfmt.sign_bit, i64), e.splat(0, i64))
    quiet = 0 if raw else 1 << (dfmt.mbits - 1)
    return sf.fit_width(e, b.or_(b.or_(sign, e.splat(dfmt.inf_enc | quiet, i64)), mant), dfmt.width)


# ---------------------------------------------------------------------------
# cvt.pack
# ---------------------------------------------------------------------------

_PACK_RANGE = {
    ".u16": (0, 0xFFFF, 16), ".s16": (-0x8000, 0x7FFF, 16), ".u8": (0, 0xFF, 8), ".s8": (-0x80, 0x7F, 8),
    ".u4": (0, 15, 4), ".s4": (-8, 7, 4), ".u2": (0, 3, 2), ".s2": (-2, 1, 2),
}


@rule("cvt.pack")
def cvt_pack(e) -> None:
    """cvt.pack.sat.ctype.s32{.b32} d, a, b{, c}: a and b clamped to ctype, b in
    the low bits, a above it, then (8/4/2-bit types) the low bits of c."""
    b = e.b
    ct = e.types[0]
    lo, hi, size = _PACK_RANGE[ct]
    mask = (1 << size) - 1

    def clamp(k: int) -> ir.Value:
        x = e.src(k, 32, True)
        x = e.call("llvm.smax.v32i32", vec(i32), [x, e.splat(lo, i32)])
        x = e.call("llvm.smin.v32i32", vec(i32), [x, e.splat(hi, i32)])
        return b.and_(x, e.splat(mask, i32))

    ta, tb = clamp(1), clamp(2)
    d = b.or_(tb, b.shl(ta, e.splat(size, i32)))
    if size < 16 and len(e.args) > 3:
        d = b.or_(d, b.shl(e.src(3, 32), e.splat(2 * size, i32)))
    e.dst(0, d)
