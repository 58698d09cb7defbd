"""Barriers and fences.

``bar.sync``/``barrier.sync`` suspend the warp (the CTA scheduler releases it
when every warp the barrier waits for has arrived); ``bar.red`` contributes its
predicate before suspending and reads the reduction when resumed;
``bar.arrive`` counts an arrival without waiting.  ``barrier.cluster`` (a cluster of
one CTA) is the CTA's warps meeting at one more barrier (``abi.CLUSTER_BARRIER``) that
counts warps as they arrive: ``.arrive`` arrives, ``.wait`` waits until every live warp
has arrived, the bare form does both.  Fences and memory barriers order nothing in a
sequential emulator.
"""

from __future__ import annotations

from llvmlite import ir

from hypa.ptxdialect.operands import parse_int_immediate

from .... import abi
from .. import racecheck
from ..rules import LoweringError, rule
from ..types import i32, i64


def _bar_id(e) -> ir.Value:
    b = e.b
    if e.spec.name == "barrier.cluster":
        return ir.Constant(i64, abi.CLUSTER_BARRIER)
    node = e.args[1] if ".red" in e.mods else e.args[0]
    k = 1 if ".red" in e.mods else 0
    if node[0] == "imm":
        try:
            v = parse_int_immediate(node[1])
        except ValueError:
            raise LoweringError(f"barrier {node[1]} is not an integer barrier id") from None
        if not 0 <= v <= 15:
            raise LoweringError(f"barrier {v} is out of range: a CTA has barriers 0 to 15")
        return ir.Constant(i64, v)
    v = e.src(k, 32)
    return b.zext(b.and_(b.extract_element(v, ir.Constant(i32, 0)), ir.Constant(i32, 15)), i64)


def _expected_warps(e) -> ir.Value:
    """Warps the barrier waits for: the thread count operand / 32, else 0 (all).  More warps
    than the CTA has stop the launch here (``ERR_BARRIER_COUNT``, the count in
    ``CTX_ERR_ADDR``): a GPU would wait forever, and the scheduler's deadlock says less."""
    b = e.b
    if e.spec.name == "barrier.cluster":
        return ir.Constant(i64, 0)
    red = ".red" in e.mods
    k = 2 if red else 1
    n_ops = len(e.args)
    has_count = n_ops > (3 if red else 1)
    if not has_count:
        return ir.Constant(i64, 0)
    v = e.src(k, 32)
    cnt = b.zext(b.extract_element(v, ir.Constant(i32, 0)), i64)
    warps = b.udiv(b.add(cnt, ir.Constant(i64, 31)), ir.Constant(i64, 32))
    beyond = b.icmp_unsigned(">", warps, e.wf.ctx_word(abi.CTX_NWARPS))
    e.wf.error_if(e.instr_id, b.and_(e.exec_mask, e.wf.splat_value(beyond)), abi.ERR_BARRIER_COUNT,
                  e.wf.splat_value(cnt))
    return warps


def _bar_word(e, bid: ir.Value, word: int) -> ir.Value:
    b = e.b
    idx = b.add(ir.Constant(i64, abi.CTX_BAR + word), b.mul(bid, ir.Constant(i64, abi.BAR_WORDS)))
    return b.gep(e.wf.ctx, [idx], source_etype=i64)


def barrier_suspend(e) -> None:
    b = e.b
    wf = e.wf
    bid = _bar_id(e)
    if e.spec.name == "barrier.cluster" and ".wait" not in e.mods:
        bar_arrive(e)  # the bare form arrives, then waits
    wf.set_ws_word(abi.WS_BAR_ID, bid)
    wf.set_ws_word(abi.WS_BAR_EXPECT, _expected_warps(e))
    if ".red" in e.mods:
        pred_k = len(e.args) - 1
        p = e.src_pred(pred_k)
        part = b.zext(wf.popcount(e.active), i64)
        true = b.zext(wf.popcount(b.and_(e.active, p)), i64)
        for word, v in ((abi.BAR_PART, part), (abi.BAR_TRUE, true)):
            ptr = _bar_word(e, bid, word)
            b.store(b.add(b.load(ptr, typ=i64), v), ptr)


def barrier_resume(e) -> None:
    if ".red" not in e.mods:
        return
    b = e.b
    bid = _bar_id(e)
    part = b.load(_bar_word(e, bid, abi.BAR_RES_PART), typ=i64)
    true = b.load(_bar_word(e, bid, abi.BAR_RES_TRUE), typ=i64)
    if ".popc" in e.mods:
        e.dst(0, e.wf.splat_value(b.trunc(true, i32)))
    elif ".and" in e.mods:
        e.dst(0, e.wf.splat_value(b.icmp_unsigned("==", true, part)))
    else:
        e.dst(0, e.wf.splat_value(b.icmp_unsigned("!=", true, ir.Constant(i64, 0))))


@rule("bar", "barrier", "barrier.cluster")
def bar_arrive(e) -> None:
    """Only ``bar.arrive`` and ``barrier.cluster.arrive`` reach a rule (waiting barriers
    suspend the warp)."""
    b = e.b
    bid = _bar_id(e)
    ptr = _bar_word(e, bid, abi.BAR_ARRIVED)
    b.store(b.add(b.load(ptr, typ=i64), ir.Constant(i64, 1)), ptr)
    exp = _expected_warps(e)
    eptr = _bar_word(e, bid, abi.BAR_EXPECTED)
    b.store(exp, eptr)


@rule("bar.warp.sync")
def bar_warp_sync(e) -> None:
    """``__syncwarp``: orders nothing in a warp that runs in lock-step; racecheck starts a new
    epoch (``lowering/racecheck.py``)."""
    if racecheck.enabled(e.wf):
        racecheck.bump_epoch(e.wf)


@rule("membar", "fence", "nanosleep", "pmevent", "brkpt", "griddepcontrol",
      "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "cp.async.bulk.commit_group",
      "cp.async.bulk.wait_group", "tcgen05.fence", "tcgen05.wait",
      "cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all", "setmaxnreg")
def no_effect(e) -> None:
    """Ordering and scheduling hints: no effect in a sequential emulator."""
