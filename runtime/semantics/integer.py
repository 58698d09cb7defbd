"""Integer, logic, comparison and selection semantics (and the arithmetic
entries shared with floating point, which dispatch on the type modifier)."""

from __future__ import annotations

from llvmlite import ir

from ..codegen import rule
from . import floating as fp
from .common import LANES, is_signed, op_type, type_bits, vec

i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)


def _ity(bits: int) -> ir.IntType:
    return ir.IntType(bits)


def _int_operands(e, n: int, bits: int, signed: bool) -> list[ir.Value]:
    return [e.src(k, bits, signed) for k in range(1, n + 1)]


def _packed16(e, fn) -> None:
    """.u16x2/.s16x2: apply ``fn`` to each 16-bit half."""
    b = e.b
    ins = [e.src(k, 32) for k in range(1, len(e.args))]
    i16 = ir.IntType(16)
    halves = []
    for sh in (0, 16):
        parts = [b.trunc(b.lshr(x, e.splat(sh, i32)), vec(i16)) for x in ins]
        halves.append(b.zext(fn(*parts), vec(i32)))
    e.dst(0, b.or_(halves[0], b.shl(halves[1], e.splat(16, i32))))


# ---------------------------------------------------------------------------
# add / sub / mul / mad (integer and float)
# ---------------------------------------------------------------------------


@rule("add")
def add(e) -> None:
    if fp.is_float_op(e):
        return fp.float_add(e)
    _add_sub(e, "add")


@rule("sub")
def sub(e) -> None:
    if fp.is_float_op(e):
        return fp.float_sub(e)
    _add_sub(e, "sub")


def _add_sub(e, op: str) -> None:
    t = op_type(e)
    b = e.b
    if t in (".u16x2", ".s16x2"):
        _packed16(e, lambda x, y: getattr(b, op)(x, y))
        return
    bits = type_bits(t)
    x, y = _int_operands(e, 2, bits, is_signed(t))
    if ".sat" in e.mods:
        name = f"llvm.{'s' if is_signed(t) else 'u'}{op}.sat.v32i{bits}"
        e.dst(0, e.call(name, vec(_ity(bits)), [x, y]))
        return
    if ".cc" in e.mods or e.spec.cc_use:
        _carry(e, op, x, y, bits)
        return
    e.dst(0, getattr(b, op)(x, y))


def _carry(e, op: str, x: ir.Value, y: ir.Value, bits: int) -> None:
    """add.cc / addc / sub.cc / subc: the carry flag is a 32-bit lane value (0/1)."""
    b = e.b
    wide = vec(_ity(bits + 1))
    xw, yw = b.zext(x, wide), b.zext(y, wide)
    if e.cc_in is not None:
        cin = b.zext(b.trunc(e.wg.read(e.cc_in), vec(i1)), wide)
    else:
        cin = ir.Constant(wide, [0] * LANES)
    if op == "add":
        r = b.add(b.add(xw, yw), cin)
        carry = b.trunc(b.lshr(r, ir.Constant(wide, [bits] * LANES)), vec(i1))
    else:
        r = b.sub(b.sub(xw, yw), cin)
        carry = b.trunc(b.lshr(r, ir.Constant(wide, [bits] * LANES)), vec(i1))  # borrow
    e.dst(0, b.trunc(r, vec(_ity(bits))))
    if e.cc_out is not None:
        e.write_def(e.cc_out, b.zext(carry, vec(i32)))


@rule("addc")
def addc(e) -> None:
    _add_sub(e, "add")


@rule("subc")
def subc(e) -> None:
    _add_sub(e, "sub")


def _mul_parts(e, t: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """The full (double-width) product of two ``t`` lanes."""
    b = e.b
    bits = type_bits(t)
    wide = vec(_ity(2 * bits))
    ext = b.sext if is_signed(t) else b.zext
    return b.mul(ext(x, wide), ext(y, wide))


@rule("mul")
def mul(e) -> None:
    if fp.is_float_op(e):
        return fp.float_mul(e)
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    x, y = _int_operands(e, 2, bits, is_signed(t))
    if ".wide" in e.mods:
        e.dst(0, _mul_parts(e, t, x, y))
    elif ".hi" in e.mods:
        p = _mul_parts(e, t, x, y)
        e.dst(0, b.trunc(b.lshr(p, ir.Constant(p.type, [bits] * LANES)), vec(_ity(bits))))
    else:
        e.dst(0, b.mul(x, y))


@rule("mad")
def mad(e) -> None:
    if fp.is_float_op(e):
        return fp.float_fma(e)
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    x, y = _int_operands(e, 2, bits, is_signed(t))
    if ".wide" in e.mods:
        c = e.src(3, 2 * bits, is_signed(t))
        r = b.add(_mul_parts(e, t, x, y), c)
        e.dst(0, r)
        return
    c = e.src(3, bits, is_signed(t))
    if ".hi" in e.mods:
        p = _mul_parts(e, t, x, y)
        prod = b.trunc(b.lshr(p, ir.Constant(p.type, [bits] * LANES)), vec(_ity(bits)))
    else:
        prod = b.mul(x, y)
    if ".sat" in e.mods:
        e.dst(0, e.call(f"llvm.sadd.sat.v32i{bits}", vec(_ity(bits)), [prod, c]))
    elif ".cc" in e.mods or e.spec.cc_use:
        _carry(e, "add", prod, c, bits)
    else:
        e.dst(0, b.add(prod, c))


@rule("madc")
def madc(e) -> None:
    mad(e)


@rule("fma")
def fma(e) -> None:
    fp.float_fma(e)


@rule("mul24", "mad24")
def mul24(e) -> None:
    t = op_type(e)
    b = e.b
    signed = is_signed(t)
    x, y = _int_operands(e, 2, 32, signed)
    sh = e.splat(8, i32)
    if signed:
        x = b.ashr(b.shl(x, sh), sh)
        y = b.ashr(b.shl(y, sh), sh)
    else:
        m = e.splat(0xFFFFFF, i32)
        x, y = b.and_(x, m), b.and_(y, m)
    p = b.mul(b.sext(x, vec(i64)) if signed else b.zext(x, vec(i64)), b.sext(y, vec(i64)) if signed else b.zext(y, vec(i64)))
    if ".hi" in e.mods:
        r = b.trunc(b.lshr(p, e.splat(16, i64)), vec(i32))
    else:
        r = b.trunc(p, vec(i32))
    if e.spec.name == "mad24":
        r = b.add(r, e.src(3, 32, signed))
    e.dst(0, r)


@rule("sad")
def sad(e) -> None:
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    signed = is_signed(t)
    x, y = _int_operands(e, 2, bits, signed)
    gt = b.icmp_signed(">", x, y) if signed else b.icmp_unsigned(">", x, y)
    d = b.select(gt, b.sub(x, y), b.sub(y, x))
    e.dst(0, b.add(d, e.src(3, bits, signed)))


# ---------------------------------------------------------------------------
# div / rem / abs / neg / min / max
# ---------------------------------------------------------------------------


@rule("div")
def div(e) -> None:
    if fp.is_float_op(e):
        return fp.float_div(e)
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    signed = is_signed(t)
    x, y = _int_operands(e, 2, bits, signed)
    vt = vec(_ity(bits))
    zero = ir.Constant(vt, [0] * LANES)
    one = ir.Constant(vt, [1] * LANES)
    yz = b.icmp_unsigned("==", y, zero)
    safe = b.select(yz, one, y)
    if signed:
        # INT_MIN / -1 overflows in LLVM: PTX gives INT_MIN
        minv = ir.Constant(vt, [1 << (bits - 1)] * LANES)
        ov = b.and_(b.icmp_unsigned("==", x, minv), b.icmp_signed("==", y, ir.Constant(vt, [-1] * LANES)))
        safe = b.select(ov, one, safe)
        q = b.sdiv(x, safe)
        # division by zero: -1 for positive or zero dividends, 1 for negative (hardware)
        neg = b.icmp_signed("<", x, zero)
        q = b.select(yz, b.select(neg, one, ir.Constant(vt, [-1] * LANES)), q)
    else:
        q = b.udiv(x, safe)
        q = b.select(yz, ir.Constant(vt, [-1] * LANES), q)
    e.dst(0, q)


@rule("rem")
def rem(e) -> None:
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    signed = is_signed(t)
    x, y = _int_operands(e, 2, bits, signed)
    vt = vec(_ity(bits))
    zero = ir.Constant(vt, [0] * LANES)
    one = ir.Constant(vt, [1] * LANES)
    yz = b.icmp_unsigned("==", y, zero)
    safe = b.select(yz, one, y)
    if signed:
        ov = b.icmp_signed("==", y, ir.Constant(vt, [-1] * LANES))
        safe = b.select(ov, one, safe)
        r = b.srem(x, safe)
        r = b.select(ov, zero, r)
    else:
        r = b.urem(x, safe)
    e.dst(0, b.select(yz, x, r))


@rule("abs")
def abs_(e) -> None:
    if fp.is_float_op(e):
        return fp.float_abs(e)
    t = op_type(e)
    b = e.b
    if t == ".s16x2":
        _packed16(e, lambda x: e.call("llvm.abs.v32i16", x.type, [x, ir.Constant(i1, 0)]))
        return
    bits = type_bits(t)
    x = e.src(1, bits, True)
    e.dst(0, e.call(f"llvm.abs.v32i{bits}", x.type, [x, ir.Constant(i1, 0)]))
    del b


@rule("neg")
def neg(e) -> None:
    if fp.is_float_op(e):
        return fp.float_neg(e)
    t = op_type(e)
    bits = type_bits(t)
    x = e.src(1, bits, True)
    e.dst(0, e.b.neg(x))


def _int_minmax(e, is_max: bool) -> None:
    t = op_type(e)
    b = e.b
    signed = is_signed(t) or t.startswith(".s")
    prefix = ("s" if signed else "u") + ("max" if is_max else "min")
    if t in (".u16x2", ".s16x2"):
        _packed16(e, lambda x, y: e.call(f"llvm.{prefix}.v32i16", x.type, [x, y]))
        return
    bits = type_bits(t)
    x, y = _int_operands(e, 2, bits, signed)
    r = e.call(f"llvm.{prefix}.v32i{bits}", x.type, [x, y])
    if ".relu" in e.mods:
        r = e.call(f"llvm.smax.v32i{bits}", x.type, [r, ir.Constant(x.type, [0] * LANES)])
    e.dst(0, r)
    del b


@rule("min")
def min_(e) -> None:
    if fp.is_float_op(e):
        return fp.float_minmax(e, False)
    _int_minmax(e, False)


@rule("max")
def max_(e) -> None:
    if fp.is_float_op(e):
        return fp.float_minmax(e, True)
    _int_minmax(e, True)


# ---------------------------------------------------------------------------
# Comparison and selection
# ---------------------------------------------------------------------------

_ICMP = {
    ".eq": ("==", None), ".ne": ("!=", None), ".lt": ("<", "s"), ".le": ("<=", "s"), ".gt": (">", "s"),
    ".ge": (">=", "s"), ".lo": ("<", "u"), ".ls": ("<=", "u"), ".hi": (">", "u"), ".hs": (">=", "u"),
}
_FCMP = {
    ".eq": ("==", True), ".ne": ("!=", True), ".lt": ("<", True), ".le": ("<=", True), ".gt": (">", True),
    ".ge": (">=", True), ".equ": ("==", False), ".neu": ("!=", False), ".ltu": ("<", False),
    ".leu": ("<=", False), ".gtu": (">", False), ".geu": (">=", False), ".num": ("ord", True), ".nan": ("uno", False),
}


def compare(e, cmpop: str, x: ir.Value, y: ir.Value, t: str) -> ir.Value:
    b = e.b
    if t in fp.FLOAT_KIND or t in (".f16x2", ".bf16x2"):
        op, ordered = _FCMP[cmpop]
        if op in ("ord", "uno"):
            return b.fcmp_ordered("ord", x, y) if op == "ord" else b.fcmp_unordered("uno", x, y)
        return b.fcmp_ordered(op, x, y) if ordered else b.fcmp_unordered(op, x, y)
    op, sign = _ICMP[cmpop]
    if sign is None:
        return b.icmp_unsigned(op, x, y)
    if sign == "s" and is_signed(t):
        return b.icmp_signed(op, x, y)
    return b.icmp_unsigned(op, x, y)


def _cmp_operands(e, t: str, kidx: tuple[int, int]) -> tuple[ir.Value, ir.Value]:
    if t in fp.FLOAT_KIND:
        kind = fp.FLOAT_KIND[t]
        x, y = e.src_float(kidx[0], kind), e.src_float(kidx[1], kind)
        if ".ftz" in e.mods and kind == "f32":
            x, y = fp.flush(e, x), fp.flush(e, y)
        return x, y
    bits = type_bits(t)
    return e.src(kidx[0], bits, is_signed(t)), e.src(kidx[1], bits, is_signed(t))


def _bool_combine(e, r: ir.Value, k: int) -> ir.Value:
    b = e.b
    for m in e.mods:
        if m in (".and", ".or", ".xor") and k < len(e.args):
            c = e.src_pred(k)
            return {"and": b.and_, "or": b.or_, "xor": b.xor}[m[1:]](r, c)
    return r


def _cmp_op(e) -> str:
    for m in e.mods:
        if m in _ICMP or m in _FCMP:
            return m
    raise e.fail("needs a comparison")


@rule("setp")
def setp(e) -> None:
    t = e.types[-1]
    b = e.b
    cmpop = _cmp_op(e)
    if t in (".f16x2", ".bf16x2"):
        kind = t[1:-2]
        conv = fp.f16_to_f32 if kind == "f16" else fp.bf16_to_f32
        xa, xb = fp.halves(e, 1)
        ya, yb = fp.halves(e, 2)
        lo = compare(e, cmpop, conv(e, xa), conv(e, ya), ".f32")
        hi = compare(e, cmpop, conv(e, xb), conv(e, yb), ".f32")
        lo = _bool_combine(e, lo, 3)
        hi = _bool_combine(e, hi, 3)
        e.dst_pair(0, lo, hi)
        return
    x, y = _cmp_operands(e, t, (1, 2))
    r = compare(e, cmpop, x, y, t)
    r = _bool_combine(e, r, 3)
    if e.args[0][0] == "pair":
        e.dst_pair(0, r, b.not_(r))
    else:
        e.dst(0, r)


@rule("set")
def set_(e) -> None:
    dtype, stype = e.types[0], e.types[-1]
    b = e.b
    x, y = _cmp_operands(e, stype, (1, 2))
    r = _bool_combine(e, compare(e, _cmp_op(e), x, y, stype), 3)
    if dtype == ".f32":
        out = b.select(r, e.splat(0x3F800000, i32), e.splat(0, i32))
    else:
        bits = type_bits(dtype)
        out = b.sext(r, vec(_ity(bits)))
    e.dst(0, out)


@rule("selp")
def selp(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    c = e.src_pred(3)
    e.dst(0, e.b.select(c, e.src(1, bits), e.src(2, bits)))


@rule("slct")
def slct(e) -> None:
    dtype, ctype = e.types[0], e.types[-1]
    b = e.b
    bits = type_bits(dtype)
    if ctype == ".f32":
        c = e.src_float(3, "f32")
        if ".ftz" in e.mods:
            c = fp.flush(e, c)
        ge = b.fcmp_ordered(">=", c, ir.Constant(c.type, [0.0] * LANES))
    else:
        c = e.src(3, 32, True)
        ge = b.icmp_signed(">=", c, e.splat(0, i32))
    e.dst(0, b.select(ge, e.src(1, bits), e.src(2, bits)))


# ---------------------------------------------------------------------------
# Logic, shifts and bit manipulation
# ---------------------------------------------------------------------------


def _logic_bits(e) -> int:
    t = op_type(e)
    return 1 if t == ".pred" else type_bits(t)


def _logic_src(e, k: int, bits: int) -> ir.Value:
    return e.src_pred(k) if bits == 1 else e.src(k, bits)


@rule("and", "or", "xor")
def logic(e) -> None:
    bits = _logic_bits(e)
    b = e.b
    fn = {"and": b.and_, "or": b.or_, "xor": b.xor}[e.spec.name]
    e.dst(0, fn(_logic_src(e, 1, bits), _logic_src(e, 2, bits)))


@rule("not")
def not_(e) -> None:
    bits = _logic_bits(e)
    e.dst(0, e.b.not_(_logic_src(e, 1, bits)))


@rule("cnot")
def cnot(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    b = e.b
    x = e.src(1, bits)
    z = b.icmp_unsigned("==", x, ir.Constant(x.type, [0] * LANES))
    e.dst(0, b.zext(z, x.type))


@rule("shl", "shr")
def shift(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    b = e.b
    x = e.src(1, bits, is_signed(t))
    n = e.src(2, 32)
    big = b.icmp_unsigned(">=", n, e.splat(bits, i32))
    amt = b.select(big, e.splat(bits - 1, i32), n)
    amt = e.fit(amt, bits, False)
    if e.spec.name == "shl":
        r = b.select(big, ir.Constant(x.type, [0] * LANES), b.shl(x, amt))
    elif is_signed(t):
        r = b.ashr(x, amt)  # clamped to bits-1: sign fill
    else:
        r = b.select(big, ir.Constant(x.type, [0] * LANES), b.lshr(x, amt))
    e.dst(0, r)


@rule("lop3")
def lop3(e) -> None:
    b = e.b
    a, c, d = (e.src(k, 32) for k in (1, 2, 3))
    node = e.args[4]
    if node[0] != "imm":
        raise e.fail("lop3 needs an immediate truth table")
    from hypa.ptxdialect.operands import parse_int_immediate

    lut = parse_int_immediate(node[1]) & 0xFF
    zero = e.splat(0, i32)
    acc = zero
    for idx in range(8):
        if not (lut >> idx) & 1:
            continue
        # bit idx of the LUT is the output for a = bit 2, b = bit 1, c = bit 0 of idx
        term = e.splat(0xFFFFFFFF, i32)
        for bit, v in ((4, a), (2, c), (1, d)):
            term = b.and_(term, v if idx & bit else b.not_(v))
        acc = b.or_(acc, term)
    e.dst(0, acc)
    if len(e.args) > 5 and e.args[0][0] == "pair":
        pass


@rule("shf")
def shf(e) -> None:
    b = e.b
    lo, hi = e.src(1, 32), e.src(2, 32)
    n = e.src(3, 32)
    if ".clamp" in e.mods:
        n = e.call("llvm.umin.v32i32", n.type, [n, e.splat(32, i32)])
    else:
        n = b.and_(n, e.splat(31, i32))
    wide = b.or_(b.zext(lo, vec(i64)), b.shl(b.zext(hi, vec(i64)), e.splat(32, i64)))
    nw = b.zext(n, vec(i64))
    if ".l" in e.mods:
        r = b.trunc(b.lshr(b.shl(wide, nw), e.splat(32, i64)), vec(i32))
    else:
        r = b.trunc(b.lshr(wide, nw), vec(i32))
    e.dst(0, r)


@rule("prmt")
def prmt(e) -> None:
    b = e.b
    a, c = e.src(1, 32), e.src(2, 32)
    sel = e.src(3, 32)
    mode = next((m for m in e.mods if m in (".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16")), None)
    if mode is not None:
        raise e.fail(f"prmt{mode} is not emulated yet")
    bytes8 = b.or_(b.zext(a, vec(i64)), b.shl(b.zext(c, vec(i64)), e.splat(32, i64)))
    out = e.splat(0, i32)
    for k in range(4):
        s = b.and_(b.lshr(sel, e.splat(4 * k, i32)), e.splat(0xF, i32))
        idx = b.and_(s, e.splat(7, i32))
        byte = b.trunc(b.lshr(bytes8, b.zext(b.mul(idx, e.splat(8, i32)), vec(i64))), vec(i32))
        byte = b.and_(byte, e.splat(0xFF, i32))
        msb = b.icmp_unsigned("!=", b.and_(s, e.splat(8, i32)), e.splat(0, i32))
        sign = b.icmp_unsigned("!=", b.and_(byte, e.splat(0x80, i32)), e.splat(0, i32))
        byte = b.select(msb, b.select(sign, e.splat(0xFF, i32), e.splat(0, i32)), byte)
        out = b.or_(out, b.shl(byte, e.splat(8 * k, i32)))
    e.dst(0, out)


@rule("popc")
def popc(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    x = e.src(1, bits)
    e.dst(0, e.fit(e.call(f"llvm.ctpop.v32i{bits}", x.type, [x]), 32, False))


@rule("clz")
def clz(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    x = e.src(1, bits)
    e.dst(0, e.fit(e.call(f"llvm.ctlz.v32i{bits}", x.type, [x, ir.Constant(i1, 0)]), 32, False))


@rule("brev")
def brev(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    x = e.src(1, bits)
    e.dst(0, e.call(f"llvm.bitreverse.v32i{bits}", x.type, [x]))


@rule("bfind")
def bfind(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    b = e.b
    x = e.src(1, bits)
    v = x
    if is_signed(t):
        neg = b.icmp_signed("<", x, ir.Constant(x.type, [0] * LANES))
        v = b.select(neg, b.not_(x), x)
    lz = e.call(f"llvm.ctlz.v32i{bits}", v.type, [v, ir.Constant(i1, 0)])
    pos = e.fit(b.sub(ir.Constant(v.type, [bits - 1] * LANES), lz), 32, False)
    none = b.icmp_unsigned("==", v, ir.Constant(v.type, [0] * LANES))
    if ".shiftamt" in e.mods:
        pos = b.sub(e.splat(bits - 1, i32), pos)
    e.dst(0, b.select(none, e.splat(0xFFFFFFFF, i32), pos))


@rule("bfe")
def bfe(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    b = e.b
    x = e.src(1, bits)
    pos = b.and_(e.src(2, 32), e.splat(0xFF, i32))
    ln = b.and_(e.src(3, 32), e.splat(0xFF, i32))
    vt = x.type
    posw, lnw = e.fit(pos, bits, False), e.fit(ln, bits, False)
    shifted = b.lshr(x, b.select(b.icmp_unsigned(">=", pos, e.splat(bits, i32)), ir.Constant(vt, [bits - 1] * LANES), posw))
    shifted = b.select(b.icmp_unsigned(">=", pos, e.splat(bits, i32)), ir.Constant(vt, [0] * LANES), shifted)
    full = b.icmp_unsigned(">=", ln, e.splat(bits, i32))
    mask = b.sub(b.shl(ir.Constant(vt, [1] * LANES), b.select(full, ir.Constant(vt, [0] * LANES), lnw)), ir.Constant(vt, [1] * LANES))
    mask = b.select(full, ir.Constant(vt, [-1] * LANES), mask)
    r = b.and_(shifted, mask)
    if is_signed(t):
        # sign bit: bit min(pos + len - 1, bits - 1) of x; len 0 gives 0
        top = b.sub(b.add(pos, ln), e.splat(1, i32))
        top = e.call("llvm.umin.v32i32", top.type, [top, e.splat(bits - 1, i32)])
        sbit = b.trunc(b.lshr(x, e.fit(top, bits, False)), ir.VectorType(i1, LANES))
        zero_len = b.icmp_unsigned("==", ln, e.splat(0, i32))
        sbit = b.and_(sbit, b.not_(zero_len))
        r = b.select(sbit, b.or_(r, b.not_(mask)), r)
    e.dst(0, r)


@rule("bfi")
def bfi(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    b = e.b
    a, c = e.src(1, bits), e.src(2, bits)
    pos = b.and_(e.src(3, 32), e.splat(0xFF, i32))
    ln = b.and_(e.src(4, 32), e.splat(0xFF, i32))
    vt = a.type
    big = b.icmp_unsigned(">=", pos, e.splat(bits, i32))
    full = b.icmp_unsigned(">=", ln, e.splat(bits, i32))
    lnw = e.fit(b.select(full, e.splat(0, i32), ln), bits, False)
    field = b.sub(b.shl(ir.Constant(vt, [1] * LANES), lnw), ir.Constant(vt, [1] * LANES))
    field = b.select(full, ir.Constant(vt, [-1] * LANES), field)
    posw = e.fit(b.select(big, e.splat(0, i32), pos), bits, False)
    m = b.shl(field, posw)
    r = b.or_(b.and_(c, b.not_(m)), b.and_(b.shl(a, posw), m))
    e.dst(0, b.select(big, c, r))


@rule("dp4a", "dp2a")
def dp(e) -> None:
    b = e.b
    ta, tb = e.types[0], e.types[-1]
    a, c = e.src(1, 32), e.src(2, 32)
    acc = e.src(3, 32)
    i8, i16 = ir.IntType(8), ir.IntType(16)
    if e.spec.name == "dp4a":
        for k in range(4):
            xa = b.trunc(b.lshr(a, e.splat(8 * k, i32)), vec(i8))
            xc = b.trunc(b.lshr(c, e.splat(8 * k, i32)), vec(i8))
            xa = b.sext(xa, vec(i32)) if ta == ".s32" else b.zext(xa, vec(i32))
            xc = b.sext(xc, vec(i32)) if tb == ".s32" else b.zext(xc, vec(i32))
            acc = b.add(acc, b.mul(xa, xc))
    else:
        hi = ".hi" in e.mods
        for k in range(2):
            xa = b.trunc(b.lshr(a, e.splat(16 * k, i32)), vec(i16))
            xa = b.sext(xa, vec(i32)) if ta == ".s32" else b.zext(xa, vec(i32))
            kb = k + (2 if hi else 0)
            xc = b.trunc(b.lshr(c, e.splat(8 * kb, i32)), vec(i8))
            xc = b.sext(xc, vec(i32)) if tb == ".s32" else b.zext(xc, vec(i32))
            acc = b.add(acc, b.mul(xa, xc))
    e.dst(0, acc)


@rule("szext")
def szext(e) -> None:
    t = op_type(e)
    b = e.b
    a = e.src(1, 32)
    n = e.src(2, 32)
    if ".clamp" in e.mods:
        n = e.call("llvm.umin.v32i32", n.type, [n, e.splat(32, i32)])
    else:
        n = b.and_(n, e.splat(31, i32))
    zero_n = b.icmp_unsigned("==", n, e.splat(0, i32))
    full = b.icmp_unsigned(">=", n, e.splat(32, i32))
    sh = b.sub(e.splat(32, i32), n)
    sh = b.select(b.or_(zero_n, full), e.splat(0, i32), sh)
    if is_signed(t):
        r = b.ashr(b.shl(a, sh), sh)
    else:
        r = b.lshr(b.shl(a, sh), sh)
    r = b.select(zero_n, e.splat(0, i32), r)
    e.dst(0, r)


@rule("bmsk")
def bmsk(e) -> None:
    b = e.b
    a = e.src(1, 32)
    n = e.src(2, 32)
    if ".clamp" in e.mods:
        a = e.call("llvm.umin.v32i32", a.type, [a, e.splat(32, i32)])
        n = e.call("llvm.umin.v32i32", n.type, [n, e.splat(32, i32)])
    else:
        a = b.and_(a, e.splat(31, i32))
        n = b.and_(n, e.splat(31, i32))
    wide = b.shl(b.sub(b.shl(e.splat(1, i64), b.zext(n, vec(i64))), e.splat(1, i64)), b.zext(a, vec(i64)))
    e.dst(0, b.trunc(wide, vec(i32)))
