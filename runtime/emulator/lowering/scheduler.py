"""The CTA scheduler: ``run_ctas(ctx, first, last)`` runs the CTAs of a range one after the
other.  For each it sets the CTA's id, clears its shared and local memory, call
parameters, warp states and barriers, then runs its warps (``warp_run``) in rounds until
every warp has exited: a warp returns at a barrier, and the barriers whose waiting and
arrived warps reach their expected count release their warps for the next round.  A warp
whose mbarrier wait fails returns too (``RC_YIELD``) and stays ready: it retries the wait
in the next round, after the other warps ran.  A round that releases no barrier and changes
no mbarrier (``CTX_MBAR_EPOCH``) is a deadlock; a step budget spent stops at the next CTA.
The cluster barrier (``barrier.cluster``, a cluster of one CTA) counts warps when they
arrive, so it releases when every live warp has arrived.  With ``CTX_CTA_STEPS`` set, each
CTA's warp-instruction count is stored at its linear id (the timing estimate's CTA costs),
with its *critical* steps: over the rounds, the most warp-instructions one warp ran in the
round, summed -- the longest chain of warp-instructions from start to exit that barriers
allow (a CTA whose work sits in one warp lasts as long as that warp).
"""

from __future__ import annotations

from llvmlite import ir

from ... import abi
from .irbuild import Loop, helper_function
from .types import i1, i8, i32, i64, ptr


def build_scheduler(module: ir.Module, warp_run: ir.Function) -> ir.Function:
    """``i32 run_ctas(ctx, i64 first, i64 last)``: run CTAs ``first`` to ``last - 1`` (the
    scheduler, ``hypa_run_ctas``, is the same for every kernel: a helper given ``warp_run``)."""
    fn = ir.Function(module, ir.FunctionType(i32, [ptr, i64, i64]), "run_ctas")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.call(_scheduler(module), [*fn.args, warp_run]))
    return fn


_WARP_RUN = ir.FunctionType(i32, [ptr, ptr, i32])


def _scheduler(module: ir.Module) -> ir.Function:
    """``i32 hypa_run_ctas(ctx, i64 first, i64 last, warp_run)``."""
    fn, new = helper_function(module, "hypa_run_ctas", i32, [ptr, i64, i64, ptr])
    if not new:
        return fn
    fn.attributes.add("alwaysinline")  # the optimized tier: warp_run called directly
    ctx, first, last, warp_run_p = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    # a callee of warp_run's type (llvmlite calls only through typed pointers)
    warp_run = b.inttoptr(b.ptrtoint(warp_run_p, i64), _WARP_RUN.as_pointer())
    memset = (module.globals.get("llvm.memset.p0.i64")  # st.bulk's lowering may have declared it
              or ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, i8, i64, i1]), "llvm.memset.p0.i64"))

    def cw(i: int | ir.Value) -> ir.Value:
        idx = ir.Constant(i64, i) if isinstance(i, int) else i
        return b.gep(ctx, [idx], source_etype=i64)

    def ld(p):
        return b.load(p, typ=i64)

    def bump_race_epoch():
        b.store(b.add(ld(cw(abi.CTX_RACE_EPOCH)), ir.Constant(i64, 1)), cw(abi.CTX_RACE_EPOCH))

    nwarps = ld(cw(abi.CTX_NWARPS))
    ws_stride = ld(cw(abi.CTX_WS_STRIDE))
    ws_base = b.inttoptr(ld(cw(abi.CTX_WS)), ptr)
    nx = ld(cw(abi.CTX_NCTAID))
    ny = ld(cw(abi.CTX_NCTAID + 1))

    def ws_of(w: ir.Value) -> ir.Value:
        return b.gep(ws_base, [b.mul(w, ws_stride)], source_etype=i8)

    def wsw(w: ir.Value, k: int) -> ir.Value:
        return b.gep(ws_of(w), [ir.Constant(i64, k)], source_etype=i64)

    # slots in the entry block (an alloca in the CTA loop would take stack on every CTA)
    done_slot = b.alloca(i64, name="done")
    released = b.alloca(i64, name="released")
    round_max = b.alloca(i64, name="round_max")  # the most steps one warp ran this round
    critical = b.alloca(i64, name="critical")  # their sum over the rounds
    cta_loop = Loop(b, first, last, "cta")
    cta = cta_loop.i
    b.store(b.urem(cta, nx), cw(abi.CTX_CTAID))
    q = b.udiv(cta, nx)
    b.store(b.urem(q, ny), cw(abi.CTX_CTAID + 1))
    b.store(b.udiv(q, ny), cw(abi.CTX_CTAID + 2))
    b.store(cta, cw(abi.CTX_CTA_LINEAR))
    # the step budget holds for the launch, not only inside loops: a loop-free kernel on a
    # huge grid stops at the first CTA that starts with the budget spent
    over = b.icmp_unsigned(">", ld(cw(abi.CTX_STEPS)), ld(cw(abi.CTX_BUDGET)))
    with b.if_then(over, likely=False):
        b.store(ir.Constant(i64, abi.ERR_STEP_BUDGET), cw(abi.CTX_ERR_CODE))
        b.store(ir.Constant(i64, -1), cw(abi.CTX_ERR_BLOCK))
        b.store(ir.Constant(i64, 0), cw(abi.CTX_ERR_WARP))
        b.store(ir.Constant(i64, 0), cw(abi.CTX_ERR_LANE))
        b.ret(ir.Constant(i32, abi.RC_ERROR))
    zero8 = ir.Constant(i8, 0)
    f = ir.Constant(i1, 0)
    nthreads = ld(cw(abi.CTX_NTHREADS))
    # shared and local memory start zeroed, and so do their initcheck shadows (if any)
    b.call(memset, [b.inttoptr(ld(cw(abi.CTX_SHARED)), ptr), zero8,
                    b.add(ld(cw(abi.CTX_SHARED_SIZE)), ld(cw(abi.CTX_SHADOW_SHARED))), f])
    b.call(memset, [b.inttoptr(ld(cw(abi.CTX_LOCAL)), ptr), zero8,
                    b.add(b.mul(nthreads, ld(cw(abi.CTX_LOCAL_SIZE))), ld(cw(abi.CTX_SHADOW_LOCAL))), f])
    b.call(memset, [b.inttoptr(ld(cw(abi.CTX_CPARAM)), ptr), zero8, b.mul(nthreads, ld(cw(abi.CTX_CPARAM_SIZE))), f])
    b.call(memset, [ws_base, zero8, b.mul(nwarps, ws_stride), f])
    b.call(memset, [b.gep(ctx, [ir.Constant(i64, abi.CTX_BAR)], source_etype=i64), zero8,
                    ir.Constant(i64, 8 * abi.BARRIER_SLOTS * abi.BAR_WORDS), f])
    b.store(ir.Constant(i64, 0), cw(abi.CTX_MBAR_EPOCH))
    bump_race_epoch()  # racecheck: a new CTA's accesses race with none of the last one's
    steps0 = ld(cw(abi.CTX_STEPS))
    b.store(ir.Constant(i64, 0), done_slot)
    b.store(ir.Constant(i64, 0), critical)
    round_head = fn.append_basic_block("round")
    b.branch(round_head)
    b.position_at_end(round_head)
    epoch0 = ld(cw(abi.CTX_MBAR_EPOCH))
    b.store(ir.Constant(i64, 0), round_max)
    wl = Loop(b, ir.Constant(i64, 0), nwarps, "w")
    w = wl.i
    status = ld(wsw(w, abi.WS_STATUS))
    ready = b.icmp_signed("==", status, ir.Constant(i64, 0))
    with b.if_then(ready):
        before = ld(cw(abi.CTX_STEPS))
        rc = b.call(warp_run, [ws_of(w), ctx, b.trunc(w, i32)])
        ran = b.sub(ld(cw(abi.CTX_STEPS)), before)
        most = b.load(round_max, typ=i64)
        b.store(b.select(b.icmp_signed(">", ran, most), ran, most), round_max)
        is_exit = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_EXIT))
        is_bar = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_BARRIER))
        is_yield = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_YIELD))
        is_exit = b.or_(is_exit, is_yield)  # a yield leaves the warp ready (handled first below)
        with b.if_else(is_exit) as (then, otherwise):
            with then:
                with b.if_then(b.not_(is_yield)):
                    b.store(ir.Constant(i64, 2), wsw(w, abi.WS_STATUS))
                    b.store(b.add(b.load(done_slot, typ=i64), ir.Constant(i64, 1)), done_slot)
            with otherwise:
                with b.if_else(is_bar) as (t2, o2):
                    with t2:
                        b.store(ir.Constant(i64, 1), wsw(w, abi.WS_STATUS))
                        bid = ld(wsw(w, abi.WS_BAR_ID))
                        bw = b.add(ir.Constant(i64, abi.CTX_BAR), b.mul(bid, ir.Constant(i64, abi.BAR_WORDS)))
                        wp = cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING)))
                        b.store(b.add(ld(wp), ir.Constant(i64, 1)), wp)
                        b.store(ld(wsw(w, abi.WS_BAR_EXPECT)), cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
                    with o2:
                        b.store(cta, cw(abi.CTX_ERR_CTA))
                        b.ret(ir.Constant(i32, abi.RC_ERROR))
    wl.close()
    b.store(b.add(b.load(critical, typ=i64), b.load(round_max, typ=i64)), critical)
    done = b.load(done_slot, typ=i64)
    all_done = b.icmp_signed(">=", done, nwarps)
    release_bb = fn.append_basic_block("release")
    next_cta_bb = fn.append_basic_block("next_cta")
    b.cbranch(all_done, next_cta_bb, release_bb)
    b.position_at_end(release_bb)
    b.store(ir.Constant(i64, 0), released)
    live = b.sub(nwarps, done)
    bl = Loop(b, ir.Constant(i64, 0), ir.Constant(i64, abi.BARRIER_SLOTS), "bar")
    bid = bl.i
    bw = b.add(ir.Constant(i64, abi.CTX_BAR), b.mul(bid, ir.Constant(i64, abi.BAR_WORDS)))
    waiting = ld(cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING))))
    arrived = ld(cw(b.add(bw, ir.Constant(i64, abi.BAR_ARRIVED))))
    expected = ld(cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
    expected = b.select(b.icmp_signed("==", expected, ir.Constant(i64, 0)), live, expected)
    # the cluster barrier's waiting warps have already arrived
    is_cluster = b.icmp_signed("==", bid, ir.Constant(i64, abi.CLUSTER_BARRIER))
    counted = b.select(is_cluster, arrived, b.add(waiting, arrived))
    go = b.and_(b.icmp_signed(">", waiting, ir.Constant(i64, 0)),
                b.icmp_signed(">=", counted, expected))
    with b.if_then(go):
        rl = Loop(b, ir.Constant(i64, 0), nwarps, "rel")
        w2 = rl.i
        st = ld(wsw(w2, abi.WS_STATUS))
        mine = b.and_(b.icmp_signed("==", st, ir.Constant(i64, 1)),
                      b.icmp_signed("==", ld(wsw(w2, abi.WS_BAR_ID)), bid))
        with b.if_then(mine):
            b.store(ir.Constant(i64, 0), wsw(w2, abi.WS_STATUS))
        rl.close()
        for src_w, dst_w in ((abi.BAR_PART, abi.BAR_RES_PART), (abi.BAR_TRUE, abi.BAR_RES_TRUE)):
            sp = cw(b.add(bw, ir.Constant(i64, src_w)))
            b.store(ld(sp), cw(b.add(bw, ir.Constant(i64, dst_w))))
            b.store(ir.Constant(i64, 0), sp)
        left = b.sub(counted, expected)
        b.store(b.select(b.icmp_signed(">", left, ir.Constant(i64, 0)), left, ir.Constant(i64, 0)),
                cw(b.add(bw, ir.Constant(i64, abi.BAR_ARRIVED))))
        b.store(ir.Constant(i64, 0), cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING))))
        b.store(ir.Constant(i64, 0), cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
        b.store(b.add(b.load(released, typ=i64), waiting), released)
        bump_race_epoch()  # racecheck: accesses after a barrier are ordered after those before
    bl.close()
    stuck = b.and_(b.icmp_signed("==", b.load(released, typ=i64), ir.Constant(i64, 0)),
                   b.icmp_signed("==", ld(cw(abi.CTX_MBAR_EPOCH)), epoch0))
    with b.if_then(stuck, likely=False):
        b.store(ir.Constant(i64, abi.ERR_DEADLOCK), cw(abi.CTX_ERR_CODE))
        b.store(cta, cw(abi.CTX_ERR_CTA))
        b.ret(ir.Constant(i32, abi.RC_ERROR))
    b.branch(round_head)
    b.position_at_end(next_cta_bb)
    # each CTA's warp-instructions, for the timing estimate's CTA scheduling (when asked)
    steps_word = ld(cw(abi.CTX_CTA_STEPS))
    with b.if_then(b.icmp_unsigned("!=", steps_word, ir.Constant(i64, 0))):
        slot = b.gep(b.inttoptr(steps_word, ptr), [b.mul(cta, ir.Constant(i64, 2))], source_etype=i64)
        b.store(b.sub(ld(cw(abi.CTX_STEPS)), steps0), slot)
        b.store(b.load(critical, typ=i64), b.gep(slot, [ir.Constant(i64, 1)], source_etype=i64))
    cta_loop.close()
    b.ret(ir.Constant(i32, abi.RC_EXIT))
    return fn

