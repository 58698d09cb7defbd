"""mbarrier objects, and the cluster instructions of a cluster of one CTA.

The PTX ISA leaves the 64-bit mbarrier object opaque.  hypa's layout: bits 0-19 the
pending arrival count, 20-39 the expected arrival count, 40-60 the tx-count (21-bit two's
complement: a copy's ``complete_tx`` may come before the ``expect_tx``), bit 63 the phase
parity.  The current phase completes when pending arrivals and tx-count are both zero: the
parity flips and pending becomes the expected count again.  ``arrive`` returns the object
as it was before the arrive as the state token; a wait with a token waits for the phase
the token was taken in, ``.parity`` for the phase of that parity: either is complete when
the current parity differs.  ``pending_count`` reads the token's pending count.

Updates are made lane after lane, in lane order.  Each instruction that updates an mbarrier
adds one to the CTA's mbarrier epoch (``abi.CTX_MBAR_EPOCH``), which the scheduler's
deadlock test reads.  The waits (``test_wait``, ``try_wait``) are lowered by ``warp.py``:
while a lane's phase is not complete (``complete_lanes``) the warp yields to the scheduler.

Launches have no clusters, so a cluster is one CTA: ``mapa`` maps to rank 0 only (its own
shared memory: a ``shared::cta`` address is the same ``shared::cluster`` address),
``getctarank`` is 0, and ``barrier.cluster`` is a barrier of the CTA's warps (``sync.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from .... import abi
from .. import racecheck
from ..irbuild import Loop
from ..rules import rule
from ..types import LANES, i32, i64, ivec, vec

_M20 = (1 << 20) - 1
_M21 = (1 << 21) - 1


def shared_space(e, kind: str) -> str:
    """``shared`` for ``.shared``, ``.shared::cta``, ``.shared::cluster`` or a shared
    variable named in the address, else ``generic``."""
    if kind == "shared" or any(m.startswith(".shared") for m in e.mods):
        return "shared"
    return "generic"


def pointers(e, k: int, nbytes: int | ir.Value = 8, space: str | None = None, align: int | None = None) -> ir.Value:
    """Bounds-checked host pointers of the address operand ``k`` in the executing lanes, aligned
    to ``align`` bytes (default: ``nbytes``, an mbarrier's 8; bulk sizes: 16, as PTX requires)."""
    kind, addr, _ = e.address(k)
    e.check_alignment(addr, align or (nbytes if isinstance(nbytes, int) else 16), e.exec_mask)
    return e.host_pointers(space or shared_space(e, kind), addr, nbytes, e.exec_mask, kind)


def for_each_lane(e, mask: ir.Value, body: Callable[[ir.Value], None]) -> None:
    """``body(lane)`` (an i32) for each lane of ``mask`` in lane order, in an LLVM loop."""
    b = e.b
    loop = Loop(b, ir.Constant(i32, 0), ir.Constant(i32, LANES), "lane")
    with b.if_then(b.extract_element(mask, loop.i)):
        body(loop.i)
    loop.close()


def _fields(b: ir.IRBuilder, w: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    pending = b.and_(w, ir.Constant(i64, _M20))
    expected = b.and_(b.lshr(w, ir.Constant(i64, 20)), ir.Constant(i64, _M20))
    tx = b.ashr(b.shl(w, ir.Constant(i64, 3)), ir.Constant(i64, 43))
    phase = b.lshr(w, ir.Constant(i64, 63))
    return pending, expected, tx, phase


def _pack(b: ir.IRBuilder, pending, expected, tx, phase) -> ir.Value:
    w = b.and_(pending, ir.Constant(i64, _M20))
    w = b.or_(w, b.shl(b.and_(expected, ir.Constant(i64, _M20)), ir.Constant(i64, 20)))
    w = b.or_(w, b.shl(b.and_(tx, ir.Constant(i64, _M21)), ir.Constant(i64, 40)))
    return b.or_(w, b.shl(phase, ir.Constant(i64, 63)))


def _step(b: ir.IRBuilder, w: ir.Value, arrivals: ir.Value | None = None, tx_add: ir.Value | None = None,
          drop: bool = False, complete: bool = True) -> ir.Value:
    """The object ``w`` after adding ``tx_add`` to the tx-count and ``arrivals`` arrivals
    (``drop``: the expected count falls by as many), then completing the phase if it is
    done (unless ``complete`` is false: ``.noComplete``)."""
    pending, expected, tx, phase = _fields(b, w)
    if tx_add is not None:
        tx = b.add(tx, tx_add)
    if arrivals is not None:
        if drop:
            expected = b.sub(expected, arrivals)
        pending = b.sub(pending, arrivals)
    if complete:
        done = b.and_(b.icmp_unsigned("==", b.and_(pending, ir.Constant(i64, _M20)), ir.Constant(i64, 0)),
                      b.icmp_unsigned("==", b.and_(tx, ir.Constant(i64, _M21)), ir.Constant(i64, 0)))
        pending = b.select(done, expected, pending)
        phase = b.select(done, b.xor(phase, ir.Constant(i64, 1)), phase)
    return _pack(b, pending, expected, tx, phase)


def update(e, ptrs: ir.Value, new: Callable[[ir.Value, ir.Value], ir.Value], mask: ir.Value | None = None) -> ir.Value:
    """Replace the object at each lane's pointer by ``new(old, lane)``, lane after lane;
    the old objects (i64 lanes, 0 in the others).  Counts one mbarrier update."""
    b = e.b
    mask = e.exec_mask if mask is None else mask
    olds = e.entry_alloca(vec(i64))
    b.store(ir.Constant(vec(i64), 0), olds)

    def body(lane):
        p = b.extract_element(ptrs, lane)
        old = b.load(p, typ=i64)
        b.store(new(old, lane), p)
        b.store(b.insert_element(b.load(olds, typ=vec(i64)), old, lane), olds)

    for_each_lane(e, mask, body)
    ep = e.b.gep(e.wf.ctx, [ir.Constant(i64, abi.CTX_MBAR_EPOCH)], source_etype=i64)
    b.store(b.add(b.load(ep, typ=i64), ir.Constant(i64, 1)), ep)
    if racecheck.enabled(e.wf):  # the phase an update may complete orders the accesses around it
        racecheck.bump_epoch(e.wf)
    return b.load(olds, typ=vec(i64))


def complete_tx(e, mbar_ptrs: ir.Value, nbytes: ir.Value, mask: ir.Value | None = None) -> None:
    """The complete-tx of ``nbytes`` (i64 lanes) on the mbarriers ``mbar_ptrs``."""
    b = e.b
    update(e, mbar_ptrs, lambda w, lane: _step(b, w, tx_add=b.neg(b.extract_element(nbytes, lane))), mask)


@rule("mbarrier.init")
def mbarrier_init(e) -> None:
    """``mbarrier.init.b64 [a], count``: phase 0, ``count`` pending and expected, tx-count 0."""
    b = e.b
    count = e.src(1, 32)
    update(e, pointers(e, 0), lambda _w, lane: _pack(b, *([b.zext(b.extract_element(count, lane), i64)] * 2),
                                                      ir.Constant(i64, 0), ir.Constant(i64, 0)))


@rule("mbarrier.inval")
def mbarrier_inval(e) -> None:
    update(e, pointers(e, 0), lambda _w, _lane: ir.Constant(i64, 0))


@rule("mbarrier.expect_tx", "mbarrier.complete_tx")
def mbarrier_tx(e) -> None:
    """``expect_tx`` adds to the tx-count, ``complete_tx`` takes from it."""
    b = e.b
    n = b.zext(e.src(1, 32), ivec(64))
    if e.spec.name == "mbarrier.complete_tx":
        n = b.sub(e.splat(0, i64), n)
    update(e, pointers(e, 0), lambda w, lane: _step(b, w, tx_add=b.extract_element(n, lane)))


@rule("mbarrier.arrive", "mbarrier.arrive_drop")
def mbarrier_arrive(e) -> None:
    """``mbarrier.arrive{_drop}{.expect_tx}{.noComplete}.b64 state, [a]{, count | txCount}``:
    the state token is the object before the arrive."""
    b = e.b
    has_count = len(e.args) > 2
    expect_tx = ".expect_tx" in e.mods
    n = b.zext(e.src(2, 32), ivec(64)) if has_count else None

    def new(w, lane):
        one = ir.Constant(i64, 1)
        if expect_tx:
            return _step(b, w, one, b.extract_element(n, lane), e.spec.name == "mbarrier.arrive_drop",
                         ".noComplete" not in e.mods)
        count = one if n is None else b.extract_element(n, lane)
        return _step(b, w, count, None, e.spec.name == "mbarrier.arrive_drop", ".noComplete" not in e.mods)

    olds = update(e, pointers(e, 1), new)
    e.dst(0, olds)


@rule("cp.async.mbarrier.arrive")
def cp_async_mbarrier_arrive(e) -> None:
    """The arrive once the thread's earlier ``cp.async`` copies are complete: they complete
    as they issue, so it arrives now.  Without ``.noinc`` the pending count first grows by
    one, so the net change is none (but the phase may complete)."""
    b = e.b
    one = ir.Constant(i64, 1)
    zero = ir.Constant(i64, 0)
    arrivals = one if ".noinc" in e.mods else zero
    update(e, pointers(e, 0), lambda w, _lane: _step(b, w, arrivals))


@rule("mbarrier.pending_count")
def mbarrier_pending_count(e) -> None:
    e.dst(0, e.b.trunc(e.b.and_(e.src(1, 64), e.splat(_M20, i64)), ivec(32)))


def complete_lanes(e) -> ir.Value:
    """``test_wait``/``try_wait``: the lanes (``<32 x i1>``) whose awaited phase is complete
    (every lane outside the executing ones is).  Reads the objects; changes nothing."""
    b = e.b
    ptrs = pointers(e, 1)
    cur = e.wf.masked_gather(ptrs, e.exec_mask, e.splat(0, i64))
    phase = b.lshr(cur, e.splat(63, i64))
    if ".parity" in e.mods:
        want = b.and_(b.zext(e.src(2, 32), ivec(64)), e.splat(1, i64))
    else:
        want = b.lshr(e.src(2, 64), e.splat(63, i64))
    done = b.icmp_unsigned("!=", phase, want)
    return b.or_(done, b.not_(e.exec_mask))


def wait_result(e, done: ir.Value) -> None:
    """``waitComplete`` of a wait: true in the lanes whose phase is complete."""
    e.dst(0, done)


@rule("mbarrier.test_wait", "mbarrier.try_wait")
def mbarrier_wait(e) -> None:
    """A wait's answer now, without yielding; ``warp.py`` lowers every emulated wait with
    a yield around this (``WarpCodegen.gen_wait``)."""
    wait_result(e, complete_lanes(e))


# ---------------------------------------------------------------------------
# cluster instructions (a cluster of one CTA)
# ---------------------------------------------------------------------------

@rule("mapa")
def mapa(e) -> None:
    """``mapa{.shared::cluster}.type d, a, rank``: the address of ``a`` in CTA ``rank`` of
    the cluster.  The only CTA is rank 0, whose addresses are ``a`` itself."""
    b = e.b
    rank = e.src(2, 32)
    bad = b.and_(e.exec_mask, b.icmp_unsigned("!=", rank, e.splat(0, i32)))
    e.wf.error_if(e.instr_id, bad, abi.ERR_CLUSTER_RANK, b.zext(rank, ivec(64)))
    bits = 32 if ".u32" in e.mods else 64
    e.dst(0, e.src(1, bits))


@rule("getctarank")
def getctarank(e) -> None:
    """``getctarank.type d, a``: the rank of the CTA whose shared memory ``a`` is in: 0."""
    e.dst(0, e.zeros(32))

