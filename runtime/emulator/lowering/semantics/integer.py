"""Integer, logic, comparison and selection semantics (and the arithmetic
entries shared with floating point, which dispatch on the type modifier).

Where the PTX ISA leaves a result unspecified, or where the GPU departs from
the ISA's text, the lowering follows what an H100/H200 returns (checked with
``tests/unit/test_semantics_int.py --gpu``):

* integer division by zero gives all ones (``div`` and ``rem``, every type);
  ``INT_MIN / -1`` wraps to ``INT_MIN`` (``rem``: 0);
* the carry flag ``CC.CF`` is a true carry: ``sub.cc``/``subc`` compute
  ``a + ~b + (1 or CF)`` and leave NOT borrow in it (consistent chains give the
  ISA's results; chains mixing ``add`` and ``sub`` see the hardware's flag);
* ``bfe``/``bfi`` on 64-bit types take position and length as full 32-bit
  values (the ISA reduces them to 0..255, as the 32-bit forms do);
* ``fns`` returns 0 for an offset of INT_MIN and 0xffffffff for a base past 31.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from llvmlite import ir

from hypa.ptxdialect.operands import parse_int_immediate

from ..rules import Rule, rule
from ..types import i1, i32, i64, is_signed, op_type, type_bits, vec
from . import floating as fp


def _ity(bits: int) -> ir.IntType:
    return ir.IntType(bits)


def _int_operands(e, n: int, bits: int, signed: bool) -> list[ir.Value]:
    return [e.src(k, bits, signed) for k in range(1, n + 1)]


def _typed_source(e) -> tuple[str, int, ir.Value]:
    """(the instruction's type, its bits, operand 1 at that width)."""
    t = op_type(e)
    return t, type_bits(t), e.src(1, type_bits(t))


def _float_or_int(name: str, float_rule: Rule, is_float: Callable[[Any], bool] = fp.is_float_op) -> Callable[[Rule], Rule]:
    """Register the rule of an entry shared by integer and floating-point types: the
    floating-point rule (``floating.py``) where ``is_float(e)``, else the decorated one."""

    def deco(int_rule: Rule) -> Rule:
        @rule(name)
        def dispatch(e) -> None:
            if is_float(e):
                return float_rule(e)
            return int_rule(e)

        return int_rule

    return deco


PACKED = {".u16x2": (16, False), ".s16x2": (16, True), ".u8x4": (8, False), ".s8x4": (8, True)}


def _packed(e, fn) -> None:
    """.u16x2/.s16x2/.u8x4/.s8x4: apply ``fn`` to each element (as ``<32 x iW>``)."""
    b = e.b
    width, _signed = PACKED[op_type(e)]
    ins = [e.src(k, 32) for k in range(1, len(e.args))]
    ety = vec(_ity(width))
    out = None
    for sh in range(0, 32, width):
        parts = [b.trunc(b.lshr(x, e.splat(sh, i32)), ety) if sh else b.trunc(x, ety) for x in ins]
        r = b.zext(fn(*parts), vec(i32))
        out = r if out is None else b.or_(out, b.shl(r, e.splat(sh, i32)))
    e.dst(0, out)


# ---------------------------------------------------------------------------
# add / sub / mul / mad (integer and float)
# ---------------------------------------------------------------------------


@_float_or_int("add", fp.float_add)
def add(e) -> None:
    _add_sub(e, "add")


@_float_or_int("sub", fp.float_sub)
def sub(e) -> None:
    _add_sub(e, "sub")


def _add_sub(e, op: str) -> None:
    t = op_type(e)
    b = e.b
    if t in PACKED:
        if ".sat" in e.mods:
            name = f"llvm.{'s' if PACKED[t][1] else 'u'}{op}.sat.v32i{PACKED[t][0]}"
            _packed(e, lambda x, y: e.call(name, x.type, [x, y]))
        else:
            _packed(e, lambda x, y: getattr(b, op)(x, y))
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
    """add.cc / addc / sub.cc / subc / mad.cc / madc.

    The carry flag is a 32-bit lane value (0/1) holding a true carry, as the
    hardware keeps it: subtraction is ``x + ~y + 1`` (``sub.cc``) or
    ``x + ~y + CF`` (``subc``), and its carry-out is NOT the borrow.
    """
    b = e.b
    wide = vec(_ity(bits + 1))
    if op == "sub":
        y = b.not_(y)
    xw, yw = b.zext(x, wide), b.zext(y, wide)
    if e.cc_in is not None:
        cin = b.zext(b.trunc(e.wf.read(e.cc_in), vec(i1)), wide)
    else:
        cin = ir.Constant(wide, 1 if op == "sub" else 0)
    r = b.add(b.add(xw, yw), cin)
    carry = b.trunc(b.lshr(r, ir.Constant(wide, bits)), vec(i1))
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


def _product(e, t: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x * y``: the full product (``.wide``), its upper half (``.hi``) or its lower half."""
    b = e.b
    if ".wide" in e.mods:
        return _mul_parts(e, t, x, y)
    if ".hi" in e.mods:
        p = _mul_parts(e, t, x, y)
        return b.trunc(b.lshr(p, ir.Constant(p.type, type_bits(t))), vec(_ity(type_bits(t))))
    return b.mul(x, y)


@_float_or_int("mul", fp.float_mul)
def mul(e) -> None:
    t = op_type(e)
    x, y = _int_operands(e, 2, type_bits(t), is_signed(t))
    e.dst(0, _product(e, t, x, y))


@_float_or_int("mad", fp.float_fma)
def mad(e) -> None:
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    x, y = _int_operands(e, 2, bits, is_signed(t))
    wide = ".wide" in e.mods
    c = e.src(3, 2 * bits if wide else bits, is_signed(t))
    prod = _product(e, t, x, y)
    if wide:
        e.dst(0, b.add(prod, c))
    elif ".sat" in e.mods:
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
    ext = b.sext if signed else b.zext
    p = b.mul(ext(x, vec(i64)), ext(y, vec(i64)))  # the 48-bit product
    if ".hi" in e.mods:
        r = b.trunc(b.lshr(p, e.splat(16, i64)), vec(i32))
    else:
        r = b.trunc(p, vec(i32))
    if e.spec.name == "mad24":
        c = e.src(3, 32, signed)
        if ".sat" in e.mods:  # mad24.hi.sat.s32: saturate the addition
            r = e.call("llvm.sadd.sat.v32i32", r.type, [r, c])
        else:
            r = b.add(r, c)
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


@_float_or_int("div", fp.float_div)
def div(e) -> None:
    _div_rem(e, "div")


@rule("rem")
def rem(e) -> None:
    _div_rem(e, "rem")


def _div_rem(e, op: str) -> None:
    """Integer ``div``/``rem``.  By zero: all ones, whatever the type and the dividend
    (GPU).  ``INT_MIN / -1`` overflows in LLVM: the GPU gives INT_MIN (x / 1 = x), and
    remainder 0."""
    t = op_type(e)
    b = e.b
    bits = type_bits(t)
    signed = is_signed(t)
    x, y = _int_operands(e, 2, bits, signed)
    vt = vec(_ity(bits))
    zero = ir.Constant(vt, 0)
    one = ir.Constant(vt, 1)
    yz = b.icmp_unsigned("==", y, zero)
    safe = b.select(yz, one, y)
    if signed:
        if op == "div":
            minv = ir.Constant(vt, 1 << (bits - 1))
            ov = b.and_(b.icmp_unsigned("==", x, minv), b.icmp_signed("==", y, ir.Constant(vt, -1)))
        else:
            ov = b.icmp_signed("==", y, ir.Constant(vt, -1))
        safe = b.select(ov, one, safe)
        r = b.sdiv(x, safe) if op == "div" else b.select(ov, zero, b.srem(x, safe))
    else:
        r = b.udiv(x, safe) if op == "div" else b.urem(x, safe)
    e.dst(0, b.select(yz, ir.Constant(vt, -1), r))


@_float_or_int("abs", fp.float_abs)
def abs_(e) -> None:
    t = op_type(e)
    if t in PACKED:
        _packed(e, lambda x: e.call(f"llvm.abs.v32i{PACKED[t][0]}", x.type, [x, ir.Constant(i1, 0)]))
        return
    bits = type_bits(t)
    x = e.src(1, bits, True)
    e.dst(0, e.call(f"llvm.abs.v32i{bits}", x.type, [x, ir.Constant(i1, 0)]))


@_float_or_int("neg", fp.float_neg)
def neg(e) -> None:
    t = op_type(e)
    if t in PACKED:
        _packed(e, lambda x: e.b.neg(x))
        return
    bits = type_bits(t)
    x = e.src(1, bits, True)
    e.dst(0, e.b.neg(x))


def _int_minmax(e, is_max: bool) -> None:
    t = op_type(e)
    signed = is_signed(t)
    prefix = ("s" if signed else "u") + ("max" if is_max else "min")
    relu = ".relu" in e.mods

    def fn(x, y):
        w = x.type.element.width
        r = e.call(f"llvm.{prefix}.v32i{w}", x.type, [x, y])
        if relu:  # .relu: negative results become 0
            r = e.call(f"llvm.smax.v32i{w}", x.type, [r, ir.Constant(x.type, 0)])
        return r

    if t in PACKED:
        _packed(e, fn)
        return
    bits = type_bits(t)
    e.dst(0, fn(*_int_operands(e, 2, bits, signed)))


@_float_or_int("min", partial(fp.float_minmax, is_max=False))
def min_(e) -> None:
    _int_minmax(e, False)


@_float_or_int("max", partial(fp.float_minmax, is_max=True))
def max_(e) -> None:
    _int_minmax(e, True)


# ---------------------------------------------------------------------------
# Comparison and selection
# ---------------------------------------------------------------------------

_ICMP = {
    ".eq": ("==", None), ".ne": ("!=", None), ".lt": ("<", "s"), ".le": ("<=", "s"), ".gt": (">", "s"),
    ".ge": (">=", "s"), ".lo": ("<", "u"), ".ls": ("<=", "u"), ".hi": (">", "u"), ".hs": (">=", "u"),
}
def _compare(e, cmpop: str, x: ir.Value, y: ir.Value, t: str) -> ir.Value:
    """Integer comparison (floating-point comparisons are ``floating.py``'s)."""
    b = e.b
    op, sign = _ICMP[cmpop]
    if sign is None:
        return b.icmp_unsigned(op, x, y)
    if sign == "s" and is_signed(t):
        return b.icmp_signed(op, x, y)
    return b.icmp_unsigned(op, x, y)


def _cmp_operands(e, t: str, kidx: tuple[int, int]) -> tuple[ir.Value, ir.Value]:
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
        if m in _ICMP:
            return m
    raise e.fail("needs a comparison")


@_float_or_int("setp", fp.float_setp, fp.is_float_compare)
def setp(e) -> None:
    t = e.types[-1]
    b = e.b
    x, y = _cmp_operands(e, t, (1, 2))
    t_ = _compare(e, _cmp_op(e), x, y, t)
    # p = BoolOp(t, c); q = BoolOp(!t, c)
    if e.args[0][0] == "pair":
        e.dst_pair(0, _bool_combine(e, t_, 3), _bool_combine(e, b.not_(t_), 3))
    else:
        e.dst(0, _bool_combine(e, t_, 3))


@_float_or_int("set", fp.float_set, fp.is_float_compare)
def set_(e) -> None:
    dtype, stype = e.types[0], e.types[-1]
    b = e.b
    x, y = _cmp_operands(e, stype, (1, 2))
    r = _bool_combine(e, _compare(e, _cmp_op(e), x, y, stype), 3)
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


@_float_or_int("slct", fp.float_slct, lambda e: bool(e.types) and e.types[-1] == ".f32")
def slct(e) -> None:
    b = e.b
    bits = type_bits(e.types[0])
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
    b = e.b
    x = e.src(1, type_bits(op_type(e)))
    e.dst(0, b.zext(b.icmp_unsigned("==", x, ir.Constant(x.type, 0)), x.type))


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
        r = b.select(big, ir.Constant(x.type, 0), b.shl(x, amt))
    elif is_signed(t):
        r = b.ashr(x, amt)  # clamped to bits-1: sign fill
    else:
        r = b.select(big, ir.Constant(x.type, 0), b.lshr(x, amt))
    e.dst(0, r)


def lop3_anf(lut: int) -> list[int]:
    """The algebraic normal form of a lop3 truth table: the monomials (subsets of
    {a: 4, b: 2, c: 1}, 0 for the constant 1) whose XOR is the function.  Bit
    ``4a + 2b + c`` of ``lut`` is the function's value (the ISA's 0xF0/0xCC/0xAA)."""
    coef = [(lut >> i) & 1 for i in range(8)]
    for v in (1, 2, 4):  # Moebius transform
        for s in range(8):
            if s & v:
                coef[s] ^= coef[s ^ v]
    return [s for s in range(8) if coef[s]]


@rule("lop3")
def lop3(e) -> None:
    b = e.b
    srcs = {4: e.src(1, 32), 2: e.src(2, 32), 1: e.src(3, 32)}
    node = e.args[4]
    if node[0] != "imm":
        raise e.fail("lop3 needs an immediate truth table")
    zero = e.splat(0, i32)
    terms: list[ir.Value] = []
    invert = False
    products: dict[int, ir.Value] = dict(srcs)
    for s in lop3_anf(parse_int_immediate(node[1]) & 0xFF):
        if s == 0:
            invert = True
            continue
        if s not in products:
            vs = [srcs[v] for v in (4, 2, 1) if s & v]
            p = vs[0]
            for v in vs[1:]:
                p = b.and_(p, v)
            products[s] = p
        terms.append(products[s])
    acc = terms[0] if terms else zero
    for t in terms[1:]:
        acc = b.xor(acc, t)
    if invert:
        acc = b.not_(acc)
    if e.args[0][0] == "pair":
        # lop3.BoolOp d|p, a, b, c, immLut, q: p = (d != 0) BoolOp q
        nz = b.icmp_unsigned("!=", acc, zero)
        q = e.src_pred(5)
        pr = b.or_(nz, q) if ".or" in e.mods else b.and_(nz, q)
        e.dst_pair(0, acc, pr)
    else:
        e.dst(0, acc)


def _bit_position(e, v: ir.Value) -> ir.Value:
    """A shift or bit position of shf, szext, bmsk: clamped to 32 (``.clamp``), else mod 32."""
    if ".clamp" in e.mods:
        return e.call("llvm.umin.v32i32", v.type, [v, e.splat(32, i32)])
    return e.b.and_(v, e.splat(31, i32))


@rule("shf")
def shf(e) -> None:
    b = e.b
    lo, hi = e.src(1, 32), e.src(2, 32)
    n = _bit_position(e, e.src(3, 32))
    wide = b.or_(b.zext(lo, vec(i64)), b.shl(b.zext(hi, vec(i64)), e.splat(32, i64)))
    nw = b.zext(n, vec(i64))
    if ".l" in e.mods:
        r = b.trunc(b.lshr(b.shl(wide, nw), e.splat(32, i64)), vec(i32))
    else:
        r = b.trunc(b.lshr(wide, nw), vec(i32))
    e.dst(0, r)


def _prmt_code(*selections: tuple[int, int, int, int]) -> list[int]:
    """Generic-mode selector codes (byte k of the result from source byte sel[k])."""
    return [sum(s << (4 * k) for k, s in enumerate(sel)) for sel in selections]


#: the ISA's table of prmt modes: result bytes (b0, b1, b2, b3) for c[1:0] = 0..3
PRMT_MODES = {
    ".f4e": _prmt_code((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    ".b4e": _prmt_code((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    ".rc8": _prmt_code((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    ".ecl": _prmt_code((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    ".ecr": _prmt_code((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    ".rc16": _prmt_code((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


@rule("prmt")
def prmt(e) -> None:
    b = e.b
    a, c = e.src(1, 32), e.src(2, 32)
    sel = e.src(3, 32)
    mode = next((m for m in e.mods if m in PRMT_MODES), None)
    if mode is not None:
        # c[1:0] picks one of four fixed byte selections (never sign-replicating)
        ctl = b.and_(sel, e.splat(3, i32))
        codes = PRMT_MODES[mode]
        sel = e.splat(codes[3], i32)
        for k in (2, 1, 0):
            sel = b.select(b.icmp_unsigned("==", ctl, e.splat(k, i32)), e.splat(codes[k], i32), sel)
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


@rule("popc", "clz", "brev")
def bit_count(e) -> None:
    """popc and clz (a 32-bit count), brev (the bits reversed): LLVM's intrinsics."""
    _t, bits, x = _typed_source(e)
    name = e.spec.name
    if name == "brev":
        e.dst(0, e.call(f"llvm.bitreverse.v32i{bits}", x.type, [x]))
    elif name == "popc":
        e.dst(0, e.fit(e.call(f"llvm.ctpop.v32i{bits}", x.type, [x]), 32, False))
    else:
        e.dst(0, e.fit(e.call(f"llvm.ctlz.v32i{bits}", x.type, [x, ir.Constant(i1, 0)]), 32, False))


@rule("bfind")
def bfind(e) -> None:
    b = e.b
    t, bits, x = _typed_source(e)
    v = x
    if is_signed(t):
        neg = b.icmp_signed("<", x, ir.Constant(x.type, 0))
        v = b.select(neg, b.not_(x), x)
    lz = e.call(f"llvm.ctlz.v32i{bits}", v.type, [v, ir.Constant(i1, 0)])
    pos = e.fit(b.sub(ir.Constant(v.type, bits - 1), lz), 32, False)
    none = b.icmp_unsigned("==", v, ir.Constant(v.type, 0))
    if ".shiftamt" in e.mods:
        pos = b.sub(e.splat(bits - 1, i32), pos)
    e.dst(0, b.select(none, e.splat(0xFFFFFFFF, i32), pos))


def _field_operand(e, k: int, bits: int) -> ir.Value:
    """A bfe/bfi position or length: the ISA reduces it to 0..255 (``& 0xff``);
    the 64-bit forms on the GPU use the whole 32-bit value."""
    v = e.src(k, 32)
    return e.b.and_(v, e.splat(0xFF, i32)) if bits == 32 else v


def _low_mask(e, n: ir.Value, bits: int) -> ir.Value:
    """``(1 << n) - 1`` as ``<32 x i{bits}>`` for a 32-bit ``n`` (all ones when n >= bits)."""
    b = e.b
    vt = vec(_ity(bits))
    full = b.icmp_unsigned(">=", n, e.splat(bits, i32))
    nw = e.fit(b.select(full, e.splat(0, i32), n), bits, False)
    m = b.sub(b.shl(ir.Constant(vt, 1), nw), ir.Constant(vt, 1))
    return b.select(full, ir.Constant(vt, -1), m)


@rule("bfe")
def bfe(e) -> None:
    b = e.b
    t, bits, x = _typed_source(e)
    pos = _field_operand(e, 2, bits)
    ln = _field_operand(e, 3, bits)
    # field bits that lie inside the source: L = min(len, bits - pos), 0 past the msb
    inside = b.icmp_unsigned("<", pos, e.splat(bits, i32))
    avail = b.sub(e.splat(bits, i32), b.select(inside, pos, e.splat(bits, i32)))
    length = e.call("llvm.umin.v32i32", ln.type, [ln, avail])
    mask = _low_mask(e, length, bits)
    shifted = b.lshr(x, e.fit(b.select(inside, pos, e.splat(0, i32)), bits, False))
    r = b.and_(shifted, mask)
    if is_signed(t):
        # the rest is the sign bit of the field: bit min(pos + len - 1, msb); 0 for len 0
        top = b.sub(b.add(b.zext(pos, vec(i64)), b.zext(ln, vec(i64))), e.splat(1, i64))
        top = e.call("llvm.umin.v32i64", top.type, [top, e.splat(bits - 1, i64)])
        sbit = b.trunc(b.lshr(x, e.fit(b.trunc(top, vec(i32)), bits, False)), vec(i1))
        sbit = b.and_(sbit, b.icmp_unsigned("!=", ln, e.splat(0, i32)))
        r = b.select(sbit, b.or_(r, b.not_(mask)), r)
    e.dst(0, r)


@rule("bfi")
def bfi(e) -> None:
    t = op_type(e)
    bits = type_bits(t)
    b = e.b
    a, c = e.src(1, bits), e.src(2, bits)
    pos = _field_operand(e, 3, bits)
    ln = _field_operand(e, 4, bits)
    big = b.icmp_unsigned(">=", pos, e.splat(bits, i32))
    field = _low_mask(e, ln, bits)
    posw = e.fit(b.select(big, e.splat(0, i32), pos), bits, False)
    m = b.shl(field, posw)  # bits shifted past the msb are dropped
    r = b.or_(b.and_(c, b.not_(m)), b.and_(b.shl(a, posw), m))
    e.dst(0, b.select(big, c, r))


@rule("fns")
def fns(e) -> None:
    """fns.b32 d, mask, base, offset: the |offset|-th set bit of ``mask`` counted
    from bit ``base`` upward (offset > 0) or downward (offset < 0); offset 0
    tests bit ``base`` itself.  0xffffffff when there is none."""
    b = e.b
    mask, base, off = e.src(1, 32), e.src(2, 32), e.src(3, 32)
    zero, ones = e.splat(0, i32), e.splat(0xFFFFFFFF, i32)
    in_range = b.icmp_unsigned("<", base, e.splat(32, i32))
    bs = b.and_(base, e.splat(31, i32))
    up = b.icmp_signed(">", off, zero)
    n = b.select(up, off, b.neg(off))  # |offset| as an unsigned value
    above = b.shl(ones, bs)  # bits base..31
    below = b.lshr(ones, b.sub(e.splat(31, i32), bs))  # bits 0..base
    m = b.and_(mask, b.select(up, above, below))
    cnt = e.call("llvm.ctpop.v32i32", m.type, [m])
    found = b.icmp_unsigned("<=", n, cnt)
    # rank of the wanted bit among the set bits of m, counted from bit 0 (1-based)
    rank = b.select(up, n, b.add(b.sub(cnt, n), e.splat(1, i32)))
    pos = zero
    for w in (16, 8, 4, 2, 1):  # binary search on the population of the low half
        low = b.and_(b.lshr(m, pos), e.splat((1 << w) - 1, i32))
        c = e.call("llvm.ctpop.v32i32", low.type, [low])
        go = b.icmp_unsigned(">", rank, c)
        rank = b.select(go, b.sub(rank, c), rank)
        pos = b.select(go, b.add(pos, e.splat(w, i32)), pos)
    r = b.select(found, pos, ones)
    # offset 0: bit base itself
    hit = b.trunc(b.lshr(mask, bs), vec(i1))
    r = b.select(b.icmp_unsigned("==", off, zero), b.select(hit, bs, ones), r)
    r = b.select(in_range, r, ones)
    # offset INT_MIN: the GPU returns 0 whatever the mask and base
    r = b.select(b.icmp_unsigned("==", off, e.splat(0x80000000, i32)), zero, r)
    e.dst(0, r)


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
    n = _bit_position(e, e.src(2, 32))
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
    a, n = e.src(1, 32), e.src(2, 32)
    a, n = _bit_position(e, a), _bit_position(e, n)
    wide = b.shl(b.sub(b.shl(e.splat(1, i64), b.zext(n, vec(i64))), e.splat(1, i64)), b.zext(a, vec(i64)))
    e.dst(0, b.trunc(wide, vec(i32)))
