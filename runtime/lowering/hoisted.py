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

from .. import abi
from ..program import value_bits
from .function import WarpFunction
from .types import i8, i32, i64, ivec


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
    as the emulator computes it.  Verified, the lane runs at most ``k_exit + 1`` trips."""
    b = ev.b
    ex = lp.exit
    w = ex.x.bits
    a = ev.ext(ev(ex.x.base), w, ex.signed)
    s = ev.ext(ev(ex.x.step), w, True)
    y = ev.ext(ev(ex.y), w, ex.signed)
    zero, one = ev.c(0), ev.c(1)
    pos = b.icmp_signed(">", s, zero)
    neg = b.icmp_signed("<", s, zero)
    ns = b.sub(zero, s)

    def div(n: ir.Value, d: ir.Value) -> ir.Value:  # unsigned: never traps (d is never 0 here)
        return b.udiv(n, b.select(b.icmp_unsigned("==", d, zero), one, d))

    rel = ex.rel
    if rel == "ge":  # first k with a + s*k >= y
        k = b.select(b.and_(pos, b.icmp_signed(">", y, a)), div(b.sub(b.add(b.sub(y, a), s), one), s), zero)
    elif rel == "gt":
        k = b.select(b.and_(pos, b.icmp_signed(">=", y, a)), b.add(div(b.sub(y, a), s), one), zero)
    elif rel == "le":
        k = b.select(b.and_(neg, b.icmp_signed(">", a, y)), div(b.sub(b.add(b.sub(a, y), ns), one), ns), zero)
    elif rel == "lt":
        k = b.select(b.and_(neg, b.icmp_signed(">=", a, y)), b.add(div(b.sub(a, y), ns), one), zero)
    elif rel == "eq":  # the distance to y at the compare's width, as a signed number
        d = ev.ext(b.sub(ev(ex.y), ev(ex.x.base)), w, True)
        k = div(b.select(neg, b.sub(zero, d), d), b.select(neg, ns, s))
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
    nwin = wf.splat_value(wf.ctx_word(abi.CTX_NWIN))
    sizes_table = wf.ctx_ptr(abi.CTX_WIN_SIZE)
    for base, step, first, nbytes in _groups(lp):
        a = b.add(ev(base), ev.c(first))
        s = ev(step)
        last = b.add(a, b.mul(s, k))
        up = b.icmp_signed(">=", s, ev.c(0))
        small = b.icmp_unsigned("<", b.add(s, ev.c(1 << 32)), ev.c(1 << 33))  # |step| < 2**32: no overflow
        no_wrap = b.select(up, b.icmp_unsigned(">=", last, a), b.icmp_unsigned("<=", last, a))
        lo = b.select(up, a, last)
        hi = b.select(up, last, a)
        shift = ev.c(abi.WINDOW_SHIFT)
        win = b.lshr(lo, shift)
        good = b.and_(b.and_(small, no_wrap), b.icmp_unsigned("==", win, b.lshr(hi, shift)))
        good = b.and_(good, b.and_(b.icmp_unsigned("!=", win, ev.c(0)), b.icmp_unsigned("<", win, nwin)))
        if wf.prog.initcheck:  # shared and local bytes have shadows to check and mark
            good = b.and_(good, b.and_(b.icmp_unsigned("!=", win, ev.c(abi.WIN_SHARED)),
                                       b.icmp_unsigned("!=", win, ev.c(abi.WIN_LOCAL))))
        lanes = b.and_(b.and_(wf.active, ok), good)
        safe = b.select(lanes, win, ev.c(0))
        size = wf.masked_gather(wf.vector_pointers(sizes_table, safe, 8), lanes, ev.c(0))
        end = b.add(b.and_(hi, ev.c(abi.OFFSET_MASK)), ev.c(nbytes))
        ok = b.and_(ok, b.and_(good, b.icmp_unsigned("<=", end, size)))
    act = wf.mask_to_i32(wf.active)
    p = _mask_ptr(wf, lp)
    old = b.load(p, typ=i32, align=4)
    new = b.or_(b.and_(old, b.not_(act)), b.and_(wf.mask_to_i32(ok), act))
    b.store(new, p, align=4)
