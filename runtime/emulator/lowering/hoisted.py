"""Hoisted bounds checks (``passes/hoist_checks.py``): the preheader's range checks, and the
code that only lanes without a proof run.

Each hoisted loop has a word in the warp's frame: the lanes *proven* for their current entry
of the loop.  The preheader sets the bits of the lanes running it (``emit_range_checks``).
Inside the loop the hoisted accesses' checks and the arithmetic only they read run in a
*region* (``before_instruction`` opens one at the first such instruction, any other
instruction that emits code closes it) under the lanes that are active and not proven,
skipped when there are none; the loop's back edges write the arguments only those need
for the same lanes (``edge_writes``).  So an unproven lane runs exactly what it ran without
hoisting, and reports an out-of-bounds access with the same diagnostic.

The range check mirrors ``addressing.py``'s window lookup for global and generic addresses
(a range is proven when both ends lie in one window of the table, not a flat address, and
its last byte is inside the window's size): a lane the check cannot prove just runs the
per-access checks.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import SSAValue

from hypa.passes.hoist_checks import ZERO, Aff, Expr, HoistedLoop

from ... import abi
from ..program import value_bits
from . import racecheck
from .function import WarpFunction
from .irbuild import broadcast, helper_function
from .types import MASK, VPTR, i8, i32, i64, ivec, ptr


def _mask_ptr(wf: WarpFunction, lp: HoistedLoop) -> ir.Value:
    off = wf.prog.hoist_masks[lp.index]
    return wf.b.gep(wf._frame, [ir.Constant(i64, off)], source_etype=i8)


def _unproven(wf: WarpFunction, lp: HoistedLoop, lanes: ir.Value) -> ir.Value:
    """The lanes of ``lanes`` (``<32 x i1>``) without a proof for ``lp``, as an i32 mask."""
    b = wf.b
    proven = b.load(_mask_ptr(wf, lp), typ=i32, align=4)
    return b.and_(wf.mask_to_i32(lanes), b.not_(proven))


# -- regions --------------------------------------------------------------------------


def _emits(wf: WarpFunction, op) -> bool:
    p = wf.prog
    return op in p.emulated or op in p.checked or op in p.pred_counters or op in p.mem_ops


def before_instruction(wf: WarpFunction, op) -> None:
    """Open the region of ``op``'s loop before a hoisted access or conditional arithmetic;
    close the open one before any other instruction that emits code."""
    lp = wf.prog.hoist.region.get(op)
    cur = getattr(wf, "hoist_region", None)
    if cur is not None and (lp is not cur[0]) and (lp is not None or _emits(wf, op)):
        close_region(wf)
        cur = None
    if lp is None or cur is not None:
        return
    b = wf.b
    slow = _unproven(wf, lp, wf.active)
    run = wf.fn.append_basic_block(f"b{wf.cur_block}_unproven")
    cont = wf.fn.append_basic_block(f"b{wf.cur_block}_proven")
    b.cbranch(b.icmp_unsigned("!=", slow, ir.Constant(i32, 0)), run, cont)
    b.position_at_end(run)
    wf.hoist_region = (lp, wf.active, cont)
    wf.active = wf.i32_to_mask(slow)


def close_region(wf: WarpFunction) -> None:
    cur = getattr(wf, "hoist_region", None)
    if cur is None:
        return
    _lp, active, cont = cur
    wf.b.branch(cont)
    wf.b.position_at_end(cont)
    wf.active = active
    wf.hoist_region = None


def block_end(wf: WarpFunction, bi: int) -> None:
    """Before a block's terminator: close the region; in a preheader, check its loops."""
    close_region(wf)
    for lp in wf.prog.hoist.by_preheader.get(bi, ()):
        emit_range_checks(wf, lp)


def edge_writes(wf: WarpFunction, bi: int, pairs: list[tuple[SSAValue, SSAValue]], mask: ir.Value) -> None:
    """Write the loop's conditional header arguments along a back edge from block ``bi``:
    in the unproven lanes of ``mask`` only (``pairs``: argument, incoming value)."""
    lp = wf.prog.hoist.conditional_args[pairs[0][0]]
    b = wf.b
    slow = _unproven(wf, lp, mask)
    with b.if_then(b.icmp_unsigned("!=", slow, ir.Constant(i32, 0))):
        lanes = wf.i32_to_mask(slow)
        for a, v in pairs:
            wf.write(a, wf.read(v), lanes, blend=True)


# -- the range checks -------------------------------------------------------------------


class _Eval:
    """Loop-invariant expressions as ``<32 x i64>`` (each built once per preheader)."""

    def __init__(self, wf: WarpFunction):
        self.wf = wf
        self.b = wf.b
        self.memo: dict[Expr, ir.Value] = {}

    def c(self, n: int) -> ir.Value:
        return self.wf.splat(n & ((1 << 64) - 1), i64)

    def __call__(self, e: Expr) -> ir.Value:
        v = self.memo.get(e)
        if v is None:
            v = self.memo[e] = self._eval(e)
        return v

    def _eval(self, e: Expr) -> ir.Value:
        b, wf = self.b, self.wf
        kind = e[0]
        if kind == "c":
            return self.c(e[1])
        if kind == "v":
            v = wf.read(e[1])
            return v if value_bits(e[1]) == 64 else b.zext(v, ivec(64))
        if kind == "sreg":
            return b.zext(wf.special_register(e[1]), ivec(64))
        if kind in ("sext", "zext"):
            return self.ext(self(e[1]), e[2], kind == "sext")
        x, y = self(e[1]), self(e[2])
        return {"add": b.add, "sub": b.sub, "mul": b.mul}[kind](x, y)

    def ext(self, v: ir.Value, bits: int, signed: bool) -> ir.Value:
        """The low ``bits`` of ``v`` extended to 64 bits."""
        if bits >= 64:
            return v
        t = self.b.trunc(v, ivec(bits))
        return self.b.sext(t, ivec(64)) if signed else self.b.zext(t, ivec(64))


def _cmp(b: ir.IRBuilder, rel: str, signed: bool, x: ir.Value, y: ir.Value) -> ir.Value:
    op = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[rel]
    return b.icmp_signed(op, x, y) if signed else b.icmp_unsigned(op, x, y)


def _last_trip(ev: _Eval, lp: HoistedLoop) -> tuple[ir.Value, ir.Value]:
    """(``k_exit``, the lanes where it is verified): a candidate for the first trip whose exit
    test holds, solved from the compare, then the test evaluated there at the compare's width
    as the emulator computes it.  Verified, the lane runs at most ``k_exit + 1`` trips.  A
    constant step (the usual case) is divided by in Python: no vector division to compile."""
    b = ev.b
    ex = lp.exit
    w = ex.x.bits
    a = ev.ext(ev(ex.x.base), w, ex.signed)
    y = ev.ext(ev(ex.y), w, ex.signed)
    zero, one = ev.c(0), ev.c(1)
    step = ex.x.step
    sc = None  # the step as a signed constant
    if step[0] == "c":
        sc = step[1] & ((1 << w) - 1)
        sc = sc - (1 << w) if sc >> (w - 1) else sc
    s = ev.ext(ev(step), w, True)

    def div(n: ir.Value, d: ir.Value, dc: int | None) -> ir.Value:
        """``n / d`` unsigned (``dc``: ``d`` as a positive constant): never traps."""
        if dc is not None:
            if dc == 1:
                return n
            if dc & (dc - 1) == 0:
                return b.lshr(n, ev.c(dc.bit_length() - 1))
            return b.udiv(n, ev.c(dc))
        return b.udiv(n, b.select(b.icmp_unsigned("==", d, zero), one, d))

    def up(rel: str) -> ir.Value:
        """First k with a + s*k >= y (``ge``) or > y (``gt``), for s > 0."""
        if rel == "ge":
            return b.select(b.icmp_signed(">", y, a), div(b.add(b.sub(y, a), b.sub(s, one)), s, sc), zero)
        return b.select(b.icmp_signed(">=", y, a), b.add(div(b.sub(y, a), s, sc), one), zero)

    def down(rel: str) -> ir.Value:
        """First k with a + s*k <= y (``le``) or < y (``lt``), for s < 0."""
        ns = b.sub(zero, s)
        nc = None if sc is None else -sc
        if rel == "le":
            return b.select(b.icmp_signed(">", a, y), div(b.add(b.sub(a, y), b.sub(ns, one)), ns, nc), zero)
        return b.select(b.icmp_signed(">=", a, y), b.add(div(b.sub(a, y), ns, nc), one), zero)

    rel = ex.rel
    if rel in ("ge", "gt", "le", "lt"):
        rising = rel in ("ge", "gt")
        if sc is not None:  # the wrong direction never leaves (unless at once): trip 0
            k = (up(rel) if sc > 0 else zero) if rising else (down(rel) if sc < 0 else zero)
        else:
            pos, neg = b.icmp_signed(">", s, zero), b.icmp_signed("<", s, zero)
            k = b.select(pos, up(rel), zero) if rising else b.select(neg, down(rel), zero)
    elif rel == "eq":  # the distance to y at the compare's width, as a signed number
        d = ev.ext(b.sub(ev(ex.y), ev(ex.x.base)), w, True)
        if sc is not None:
            k = zero if sc == 0 else div(d, s, sc) if sc > 0 else div(b.sub(zero, d), b.sub(zero, s), -sc)
        else:
            neg = b.icmp_signed("<", s, zero)
            k = div(b.select(neg, b.sub(zero, d), d), b.select(neg, b.sub(zero, s), s), None)
    else:  # ne
        k = b.select(b.icmp_unsigned("!=", a, y), zero, one)
    # the exit test at trip k, wrapped at the compare's width
    xk = b.add(ev(ex.x.base), b.mul(ev(ex.x.step), k))
    if w < 64:
        xk, yk = b.trunc(xk, ivec(w)), b.trunc(ev(ex.y), ivec(w))
    else:
        yk = ev(ex.y)
    ok = b.and_(_cmp(b, rel, ex.signed, xk, yk), b.icmp_unsigned("<", k, ev.c((1 << 31) - 1)))
    return k, ok


def _no_wrap(ev: _Eval, aff: Aff, signed: bool, last_k: ir.Value) -> ir.Value:
    """Lanes where ``aff`` (narrower than 64 bits) stays in its signed/unsigned range at trips
    0 and ``last_k`` (so at every trip between: the exact values are monotonic)."""
    b = ev.b
    w = aff.bits
    first = ev.ext(ev(aff.base), w, signed)
    last = b.add(first, b.mul(ev.ext(ev(aff.step), w, True), last_k))
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    return b.and_(b.icmp_signed(">=", last, ev.c(lo)), b.icmp_signed("<=", last, ev.c(hi)))


def _groups(lp: HoistedLoop) -> list[tuple[Expr, Expr, int, int]]:
    """The ranges to check: accesses whose addresses differ by a constant share one
    (``(base, step, first offset, bytes)``: the bytes ``[base + first, base + first + bytes)``
    at every trip), exactly as safe as checking each within one window."""
    spans: dict[tuple[Expr, Expr], tuple[int, int]] = {}
    for c in lp.checks:
        base, off = c.addr.base, 0
        if base[0] == "add" and base[2][0] == "c":
            base, off = base[1], base[2][1]
        elif base[0] == "c":
            base, off = ZERO, base[1]
        if off >> 63:
            off -= 1 << 64
        key = (base, c.addr.step)
        lo, hi = spans.get(key, (off, off + c.nbytes))
        spans[key] = (min(lo, off), max(hi, off + c.nbytes))
    return [(base, step, lo, hi - lo) for (base, step), (lo, hi) in spans.items()]


def emit_range_checks(wf: WarpFunction, lp: HoistedLoop) -> None:
    """In the preheader of ``lp``: which running lanes are proven for this entry."""
    b = wf.b
    b.comment(f"hoisted bounds checks of {lp.label}")
    ev = _Eval(wf)
    k, ok = _last_trip(ev, lp)
    for o in lp.obligations:
        ok = b.and_(ok, _no_wrap(ev, o.aff, o.signed, k))
    lanes = wf.mask_to_i32(b.and_(wf.active, ok))
    check = _range_function(wf)
    shadowed = ir.Constant(i32, 1 if wf.prog.initcheck or getattr(wf.prog, "racecheck", False) else 0)
    if not wf.prog.initcheck and racecheck.sampled(wf):  # racecheck's sample: while the launch gives a shadow
        shadow = b.load(b.gep(wf.ctx, [ir.Constant(i64, abi.CTX_RACE_SHADOW)], source_etype=i64), typ=i64)
        shadowed = b.zext(b.icmp_unsigned("!=", shadow, ir.Constant(i64, 0)), i32)
    for base, step, first, nbytes in _groups(lp):
        a = b.add(ev(base), ev.c(first))
        lanes = b.call(check, [wf.ctx, a, ev(step), k, ir.Constant(i64, nbytes), lanes, shadowed])
    for c in lp.checks:  # aligned at every trip: base and step multiples of the access's size
        if c.nbytes > 1:
            low = b.and_(b.or_(ev(c.addr.base), ev(c.addr.step)), ev.c(c.nbytes - 1))
            lanes = b.and_(lanes, wf.mask_to_i32(b.icmp_unsigned("==", low, ev.c(0))))
    act = wf.mask_to_i32(wf.active)
    p = _mask_ptr(wf, lp)
    old = b.load(p, typ=i32, align=4)
    b.store(b.or_(b.and_(old, b.not_(act)), lanes), p, align=4)


def _range_function(wf: WarpFunction) -> ir.Function:
    """``i32 hypa_hoisted_range(ctx, <32 x i64> a, <32 x i64> s, <32 x i64> k, i64 n, i32 lanes,
    i32 shadowed)``: the lanes of ``lanes`` whose bytes ``[a + s*j, a + s*j + n)``, j = 0..k,
    all lie in one window of the table (not flat memory; with ``shadowed``, not the shared or
    local window, whose bytes initcheck and racecheck track), inside its size.  Made once per module (one
    copy to compile, however many loops)."""
    f, new = helper_function(wf.module, "hypa_hoisted_range", i32, [ptr, ivec(64), ivec(64), ivec(64), i64, i32, i32])
    if not new:
        return f
    ctx, a, s, k, n, lanes, shadowed = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))

    def c(v: int) -> ir.Value:
        return ir.Constant(ivec(64), v & ((1 << 64) - 1))

    def word(index: int) -> ir.Value:
        return b.load(b.gep(ctx, [ir.Constant(i64, index)], source_etype=i64), typ=i64)

    last = b.add(a, b.mul(s, k))
    up = b.icmp_signed(">=", s, c(0))
    small = b.icmp_unsigned("<", b.add(s, c(1 << 32)), c(1 << 33))  # |s| < 2**32: s*k does not overflow
    no_wrap = b.select(up, b.icmp_unsigned(">=", last, a), b.icmp_unsigned("<=", last, a))
    lo = b.select(up, a, last)
    hi = b.select(up, last, a)
    win = b.lshr(lo, c(abi.WINDOW_SHIFT))
    good = b.and_(b.and_(small, no_wrap), b.icmp_unsigned("==", win, b.lshr(hi, c(abi.WINDOW_SHIFT))))
    nwin = broadcast(b, word(abi.CTX_NWIN))
    good = b.and_(good, b.and_(b.icmp_unsigned("!=", win, c(0)), b.icmp_unsigned("<", win, nwin)))
    tracked = b.or_(b.icmp_unsigned("==", win, c(abi.WIN_SHARED)), b.icmp_unsigned("==", win, c(abi.WIN_LOCAL)))
    on = b.icmp_unsigned("!=", shadowed, ir.Constant(i32, 0))
    good = b.and_(good, b.not_(b.and_(tracked, broadcast(b, on))))
    mask = b.and_(b.bitcast(lanes, MASK), good)
    safe = b.select(mask, win, c(0))
    table = broadcast(b, word(abi.CTX_WIN_SIZE))
    ptrs = b.inttoptr(b.add(table, b.mul(safe, c(8))), VPTR)
    gather = wf.module.globals.get("llvm.masked.gather.v32i64.v32p0") or ir.Function(
        wf.module, ir.FunctionType(ivec(64), [VPTR, MASK, ivec(64)]), "llvm.masked.gather.v32i64.v32p0")
    size = b.call(gather, [ptrs, mask, c(0)])
    end = b.add(b.and_(hi, c(abi.OFFSET_MASK)), broadcast(b, n))
    inside = b.and_(mask, b.icmp_unsigned("<=", end, size))
    b.ret(b.bitcast(inside, i32))
    return f
