"""Data movement and conversion: mov, cvt, cvta, and the 16-bit pack/unpack forms."""

from __future__ import annotations

from llvmlite import ir

from hypa.runtime import abi

from ..codegen import rule
from . import floating as fp
from .common import FLOAT_KIND, LANES, is_signed, type_bits, vec

i1, i16, i32, i64 = ir.IntType(1), ir.IntType(16), ir.IntType(32), ir.IntType(64)


@rule("mov")
def mov(e) -> None:
    t = e.types[0] if e.types else ".b32"
    b = e.b
    dst, src = e.args[0], e.args[1]
    if t == ".pred":
        e.dst(0, e.src_pred(1))
        return
    bits = type_bits(t)
    if src[0] == "vec":
        # pack: mov.b64 %rd, {%r1, %r2} (element 0 is the low part)
        parts = e.src_elements(1, bits // len(src[1]))
        w = bits // len(parts)
        acc = ir.Constant(vec(ir.IntType(bits)), [0] * LANES)
        for k, p in enumerate(parts):
            acc = b.or_(acc, b.shl(b.zext(p, vec(ir.IntType(bits))), ir.Constant(vec(ir.IntType(bits)), [k * w] * LANES)))
        e.dst(0, acc)
        return
    if dst[0] == "vec":
        # unpack: mov.b64 {%r1, %r2}, %rd
        whole = e.src(1, bits)
        n = len(dst[1])
        w = bits // n
        parts = [b.trunc(b.lshr(whole, ir.Constant(whole.type, [k * w] * LANES)), vec(ir.IntType(w))) for k in range(n)]
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


@rule("cvt")
def cvt(e) -> None:
    if len(e.types) < 2:
        raise e.fail("cvt needs a destination and a source type")
    dt, st = e.types[0], e.types[1]
    b = e.b
    if dt in (".f16x2", ".bf16x2") and st == ".f32":
        # cvt.rn.f16x2.f32 d, a, b: a goes to the upper half
        mode = fp.rounding(e)
        conv = fp.f32_to_f16_bits if dt == ".f16x2" else fp.f32_to_bf16_bits
        hi = conv(e, e.src_float(1, "f32"), mode)
        lo = conv(e, e.src_float(2, "f32"), mode)
        e.dst(0, fp.pack(e, lo, hi))
        return
    dfl, sfl = dt in FLOAT_KIND or dt == ".tf32", st in FLOAT_KIND
    sat = ".sat" in e.mods
    if not dfl and not sfl:
        _cvt_int_int(e, dt, st, sat)
    elif dfl and not sfl:
        _cvt_int_to_float(e, dt, st)
    elif not dfl and sfl:
        _cvt_float_to_int(e, dt, st)
    else:
        _cvt_float_float(e, dt, st)
    del b


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
        xw = e.call(f"llvm.smax.v32i{wide_bits}", wt, [xw, ir.Constant(wt, [lo] * LANES)])
        xw = e.call(f"llvm.smin.v32i{wide_bits}", wt, [xw, ir.Constant(wt, [hi] * LANES)])
        e.dst(0, b.trunc(xw, vec(ir.IntType(db))), is_signed(dt))
        return
    e.dst(0, e.fit(x, db, is_signed(st)), is_signed(dt))


def _cvt_int_to_float(e, dt: str, st: str) -> None:
    b = e.b
    sb = type_bits(st)
    x = e.src(1, sb, is_signed(st))
    mode = fp.rounding(e)
    kind = FLOAT_KIND.get(dt, "f32")
    if kind == "f64":
        r = b.sitofp(x, fp.F64V) if is_signed(st) else b.uitofp(x, fp.F64V)
        fp.fdst(e, 0, r, "f64")
        return
    if mode == "rn" or sb <= 16:
        r = b.sitofp(x, fp.F32V) if is_signed(st) else b.uitofp(x, fp.F32V)
    else:
        # directed rounding: exact in f64 for 32-bit sources; use the error term for 64-bit
        r64 = b.sitofp(x, fp.F64V) if is_signed(st) else b.uitofp(x, fp.F64V)
        err = None
        if sb == 64:
            back = b.fptosi(r64, x.type) if is_signed(st) else b.fptoui(r64, x.type)
            diff = b.sub(x, back)
            err = b.sitofp(diff, fp.F64V)
        r = fp.directed_to_f32(e, r64, err, mode)
    if kind in ("f16", "bf16"):
        conv = fp.f32_to_f16_bits if kind == "f16" else fp.f32_to_bf16_bits
        e.dst(0, conv(e, r, mode))
        return
    fp.fdst(e, 0, r, "f32")


def _cvt_float_to_int(e, dt: str, st: str) -> None:
    b = e.b
    kind = FLOAT_KIND[st]
    x = e.src_float(1, kind)
    if ".ftz" in e.mods and kind == "f32":
        x = fp.flush(e, x)
    rnd = next((m for m in e.mods if m in _IRND), ".rzi")
    vt = "v32f64" if x.type == fp.F64V else "v32f32"
    r = e.call(f"llvm.{_IRND[rnd]}.{vt}", x.type, [x])
    db = type_bits(dt)
    # saturating conversion (NaN -> 0), which is what PTX float-to-int does
    name = f"llvm.fpto{'s' if is_signed(dt) else 'u'}i.sat.v32i{db}.{vt}"
    e.dst(0, e.call(name, vec(ir.IntType(db)), [r]), is_signed(dt))


def _cvt_float_float(e, dt: str, st: str) -> None:
    b = e.b
    sk = FLOAT_KIND[st]
    dk = "f32" if dt == ".tf32" else FLOAT_KIND[dt]
    x = e.src_float(1, sk)
    mode = fp.rounding(e)
    irnd = next((m for m in e.mods if m in _IRND), None)
    if ".ftz" in e.mods and sk == "f32":
        x = fp.flush(e, x)
    if irnd is not None:
        vt = "v32f64" if x.type == fp.F64V else "v32f32"
        x = e.call(f"llvm.{_IRND[irnd]}.{vt}", x.type, [x])
    if dk == "f64":
        if x.type != fp.F64V:
            x = b.fpext(x, fp.F64V)
        fp.fdst(e, 0, x, "f64")
        return
    if x.type == fp.F64V:
        if dk == "f32":
            x = fp.f64_to_f32(e, x, mode)
        else:
            x = b.fptrunc(x, fp.F32V)  # f64 -> f16/bf16: rounded twice (nearest)
    if dk in ("f16", "bf16"):
        conv = fp.f32_to_f16_bits if dk == "f16" else fp.f32_to_bf16_bits
        if ".sat" in e.mods:
            x = fp.saturate(e, x)
        e.dst(0, conv(e, x, mode))
        return
    if dt == ".tf32":
        # cvt.rna.tf32.f32: keep 10 mantissa bits, rounding half away from zero
        bits = b.bitcast(x, vec(i32))
        r = b.and_(b.add(bits, e.splat(0x1000, i32)), e.splat(0xFFFFE000, i32))
        e.dst(0, r)
        return
    fp.fdst(e, 0, x, "f32")
