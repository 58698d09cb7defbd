"""Loads, stores, atomics and reductions over the bounds-checked memory model.

Atomics are serialized in lane order with real host atomics (``atomicrmw``,
``cmpxchg``), so CTAs running in other processes on shared buffers see them.
"""

from __future__ import annotations

from llvmlite import ir

from ..rules import rule
from .common import FLOAT_KIND, LANES, is_signed, type_bits, vec

i1, i8, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)


def entry_alloca(e, ty: ir.Type) -> ir.Value:
    """Stack space in the warp function's entry block.  An ``alloca`` where the
    instruction is would run every time the instruction does, and the stack
    only shrinks when the warp function returns (at a barrier or the exit): a
    loop in the kernel would grow it without bound."""
    entry = e.b.function.entry_basic_block
    eb = ir.IRBuilder(entry)
    eb.position_at_start(entry)
    return eb.alloca(ty)


def _vec_width(e) -> int:
    for m in e.mods:
        if m in (".v2", ".v4", ".v8"):
            return int(m[2:])
    return 1


def _elem_type(e) -> str:
    for t in reversed(e.types):
        return t
    raise e.fail("needs a type")


def _space(e, kind: str) -> str:
    if kind in ("param", "cparam"):
        return kind
    sp = e.space()
    if kind == "shared" and sp == "generic":
        return "shared"
    return sp


@rule("ld", "ldu")
def ld(e) -> None:
    t = _elem_type(e)
    n = _vec_width(e)
    bits = type_bits(t)
    kind, addr, _base = e.address(1)
    space = _space(e, kind)
    values = []
    for k in range(n):
        a = addr if k == 0 else e.b.add(addr, e.splat(k * bits // 8, i64))
        values.append(e.load(space, a, bits, e.exec_mask, kind))
    signed = is_signed(t)
    e.dst_elements(0, values, signed)


@rule("st")
def st(e) -> None:
    t = _elem_type(e)
    n = _vec_width(e)
    bits = type_bits(t)
    kind, addr, _base = e.address(0)
    space = _space(e, kind)
    vals = e.src_elements(1, bits)  # also ``{%r1}``: a one-element vector (Triton)
    if len(vals) != n:
        raise e.fail(f"stores {n} elements, the source has {len(vals)}")
    for k, v in enumerate(vals):
        a = addr if k == 0 else e.b.add(addr, e.splat(k * bits // 8, i64))
        e.store(space, a, v, e.exec_mask, kind)


@rule("prefetch", "prefetchu", "applypriority", "discard", "createpolicy")
def prefetch(e) -> None:
    """Cache hints: no effect on values (createpolicy yields an opaque policy)."""
    if e.spec.name == "createpolicy":
        e.dst(0, e.zeros(64))


_RMW = {".add": "add", ".and": "and", ".or": "or", ".xor": "xor", ".exch": "xchg"}
_ATOMIC_OPS = (".and", ".or", ".xor", ".cas", ".exch", ".add", ".inc", ".dec", ".min", ".max")
#: 16-bit float formats: (exponent bits, fraction bits)
_HALF_FORMATS = {".f16": (5, 10), ".bf16": (8, 7)}
_PACKED = {".f16x2": ".f16", ".bf16x2": ".bf16"}


def _atomic(e, returns: bool) -> None:
    """atom / red, scalar or vector (``.v2/.v4/.v8``: each element its own atomic),
    serialized in lane order with host atomics."""
    b = e.b
    t = _elem_type(e)
    bits = type_bits(t)
    op = next((m for m in e.mods if m in _ATOMIC_OPS), None)
    if op is None:
        raise e.fail("needs an atomic operation")
    is_float = t in FLOAT_KIND or t in _PACKED
    if is_float and op not in (".add", ".min", ".max", ".exch", ".cas"):
        raise e.fail(f"{op} on {t} is not an atomic operation")
    if (t in _HALF_FORMATS or t in _PACKED) and op in (".min", ".max"):
        raise e.fail(f"atomic {op} on {t} is not emulated yet")
    ai = 1 if returns else 0
    kind, addr, _base = e.address(ai)
    space = _space(e, kind)
    signed = is_signed(t)
    vals = e.src_elements(ai + 1, bits, signed)
    cmpv = e.src(ai + 2, bits) if op == ".cas" else None
    ity = ir.IntType(bits)
    results = []
    for k, val in enumerate(vals):
        a = addr if k == 0 else b.add(addr, e.splat(k * bits // 8, i64))
        ptrs = e.host_pointers(space, a, bits // 8, e.exec_mask, kind)
        res_slot = entry_alloca(e, vec(ity))
        b.store(ir.Constant(vec(ity), 0), res_slot)
        for lane in range(LANES):
            li = ir.Constant(i32, lane)
            on = b.extract_element(e.exec_mask, li)
            with b.if_then(on):
                p = b.extract_element(ptrs, li)
                v = b.extract_element(val, li)
                c = None if cmpv is None else b.extract_element(cmpv, li)
                old = _atomic_lane(e, op, t, p, v, c, is_float, ity)
                cur = b.load(res_slot, typ=vec(ity))
                b.store(b.insert_element(cur, old, li), res_slot)
        results.append(b.load(res_slot, typ=vec(ity)))
    if returns:
        e.dst_elements(0, results, signed)


def _atomic_lane(e, op, t, p, v, c, is_float, ity):
    b = e.b
    bits = ity.width
    order = "seq_cst"
    if op == ".cas":
        # atom.cas d, [a], b, c: d = *a; *a = (*a == b) ? c : *a
        pair = b.cmpxchg(p, v, c, order, order)
        return b.extract_value(pair, 0)
    if op == ".exch" or (op in _RMW and not is_float):
        return b.atomic_rmw(_RMW[op], p, v, order)
    if op in (".min", ".max") and not is_float:
        name = ("min" if op == ".min" else "max") if is_signed(t) else ("umin" if op == ".min" else "umax")
        return b.atomic_rmw(name, p, v, order)
    # float add/min/max, inc, dec: compare-and-swap loop
    fn = b.function
    loop = fn.append_basic_block("cas_loop")
    done = fn.append_basic_block("cas_done")
    pre = b.block
    old0 = b.load(p, typ=ity)
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(ity)
    old.add_incoming(old0, pre)
    if op == ".inc":
        new = b.select(b.icmp_unsigned(">=", old, v), ir.Constant(ity, 0), b.add(old, ir.Constant(ity, 1)))
    elif op == ".dec":
        wrap = b.or_(b.icmp_unsigned("==", old, ir.Constant(ity, 0)), b.icmp_unsigned(">", old, v))
        new = b.select(wrap, v, b.sub(old, ir.Constant(ity, 1)))
    elif t in _HALF_FORMATS:  # .add.noftz: exact in f64, one rounding, subnormals kept
        new = _half_add(b, old, v, _HALF_FORMATS[t])
    elif t in _PACKED:
        fmt = _HALF_FORMATS[_PACKED[t]]
        i16 = ir.IntType(16)
        halves = []
        for sh in (0, 16):
            x = b.trunc(b.lshr(old, ir.Constant(ity, sh)), i16)
            y = b.trunc(b.lshr(v, ir.Constant(ity, sh)), i16)
            halves.append(b.zext(_half_add(b, x, y, fmt), ity))
        new = b.or_(halves[0], b.shl(halves[1], ir.Constant(ity, 16)))
    else:
        ft = {32: ir.FloatType(), 64: ir.DoubleType()}[bits]
        of, vf = b.bitcast(old, ft), b.bitcast(v, ft)
        if op == ".add":
            nf = b.fadd(of, vf)
        else:
            nf = b.call(e.wg.intrinsic(f"llvm.{'minnum' if op == '.min' else 'maxnum'}.{'f32' if bits == 32 else 'f64'}", ft, [ft, ft]), [of, vf])
        new = b.bitcast(nf, ity)
    pair = b.cmpxchg(p, old, new, "seq_cst", "seq_cst")
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    old.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return seen


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


def _half_add(b: ir.IRBuilder, x: ir.Value, y: ir.Value, fmt: tuple[int, int]) -> ir.Value:
    """x + y on 16-bit float bits: the sum is exact in f64 (or off by far less than
    half an ulp of the result), then rounded once."""
    s = b.fadd(_half_to_f64(b, x, fmt), _half_to_f64(b, y, fmt))
    return _f64_to_half(b, s, fmt)


@rule("atom")
def atom(e) -> None:
    _atomic(e, True)


@rule("red")
def red(e) -> None:
    _atomic(e, False)


def _is_predicate_operand(e, k: int) -> bool:
    node = e.operand_node(k)
    if node[0] == "not":
        return True
    if node[0] != "reg":
        return False
    from ..program import value_bits

    return value_bits(e.slot_of[k][0][1]) == 1


@rule("cp.async")
def cp_async(e) -> None:
    """``cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size | ignore-src}{, policy}``.

    The copy happens when the instruction issues: ``cp.async.wait_group`` /
    ``wait_all`` then have nothing left to wait for in a sequential emulator (a
    kernel that reads the destination before waiting reads the new data, which
    real hardware may or may not show).  Bytes past ``src-size`` (all of them when
    ``ignore-src`` is true) are zero-filled.
    """
    from hypa.ptxdialect.operands import parse_int_immediate

    b = e.b
    dkind, dst, _ = e.address(0)
    skind, src, _ = e.address(1)
    node = e.operand_node(2)
    if node[0] != "imm":
        raise e.fail("cp-size must be an immediate (4, 8 or 16)")
    cp = parse_int_immediate(node[1])
    if cp not in (4, 8, 16):
        raise e.fail(f"cp-size must be 4, 8 or 16, not {cp}")
    nops = len(e.args)
    if any("cache_hint" in m for m in e.mods):
        nops -= 1  # the last operand is the cache policy
    src_size = None  # i32 lanes, or None: all cp bytes
    if nops > 3:
        if _is_predicate_operand(e, 3):
            ignore = e.src_pred(3)
            src_size = b.select(ignore, e.splat(0, i32), e.splat(cp, i32))
        else:
            sn = e.operand_node(3)
            if not (sn[0] == "imm" and parse_int_immediate(sn[1]) >= cp):
                src_size = e.src(3, 32)
    mask = e.exec_mask
    dspace = "shared"
    if src_size is None:
        for w in range(cp // 4):
            sa = src if w == 0 else b.add(src, e.splat(4 * w, i64))
            da = dst if w == 0 else b.add(dst, e.splat(4 * w, i64))
            v = e.load("global", sa, 32, mask, skind)
            e.store(dspace, da, v, mask, dkind)
        return
    for k in range(cp):
        sa = src if k == 0 else b.add(src, e.splat(k, i64))
        da = dst if k == 0 else b.add(dst, e.splat(k, i64))
        present = b.and_(mask, b.icmp_unsigned("<", e.splat(k, i32), src_size))
        v = e.load("global", sa, 8, present, skind)  # zero where not present
        e.store(dspace, da, v, mask, dkind)
