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
allow (a CTA whose work sits in one warp lasts as long as that warp).  Under the interleaved
schedule a warp also returns at block starts (``RC_TURN``, still ready): a round of turns is
progress, and the critical steps add up per warp between barrier releases (each warp's
``WS_PHASE_STEPS``), so both schedules give a barrier-phased CTA the same figure.
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
    memcpy = (module.globals.get("llvm.memcpy.p0.p0.i64")
              or ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64, i1]), "llvm.memcpy.p0.p0.i64"))

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
    round_max = b.alloca(i64, name="round_max")  # the most steps one warp ran this phase
    turned = b.alloca(i64, name="turned")  # warps whose turn ended this round (interleaved schedule)
    spun = b.alloca(i64, name="spun")  # ... whose turn ended at a spin loop's header
    waiters = b.alloca(i64, name="waiters")  # warps waiting at a barrier
    critical = b.alloca(i64, name="critical")  # their sum over the rounds
    steps0_slot = b.alloca(i64, name="steps0")  # CTX_STEPS when the CTA started (as if it ran alone)
    pending = b.alloca(i64, name="pending")  # a cooperative launch: CTAs suspended in this pass
    progress = b.alloca(i64, name="progress")  # ... and whether any CTA got anywhere in it
    state_slot = b.alloca(i64, name="state")  # ... the CTA's state (abi.COOP_STATE)
    zero8 = ir.Constant(i8, 0)
    f = ir.Constant(i1, 0)
    nthreads = ld(cw(abi.CTX_NTHREADS))
    coop_base = ld(cw(abi.CTX_COOP))
    coop = b.icmp_unsigned("!=", coop_base, ir.Constant(i64, 0))
    shared_p = b.inttoptr(ld(cw(abi.CTX_SHARED)), ptr)
    shared_n = b.add(ld(cw(abi.CTX_SHARED_SIZE)), ld(cw(abi.CTX_SHADOW_SHARED)))
    local_p = b.inttoptr(ld(cw(abi.CTX_LOCAL)), ptr)
    local_n = b.add(b.mul(nthreads, ld(cw(abi.CTX_LOCAL_SIZE))), ld(cw(abi.CTX_SHADOW_LOCAL)))
    cparam_p = b.inttoptr(ld(cw(abi.CTX_CPARAM)), ptr)
    cparam_n = b.mul(nthreads, ld(cw(abi.CTX_CPARAM_SIZE)))
    bar_p = b.gep(ctx, [ir.Constant(i64, abi.CTX_BAR)], source_etype=i64)
    bar_n = ir.Constant(i64, 8 * abi.BARRIER_SLOTS * abi.BAR_WORDS)
    ws_n = b.mul(nwarps, ws_stride)
    #: what a cooperative CTA's save area holds after its header, in order (abi.coop_save_bytes)
    regions = [(bar_p, bar_n), (shared_p, shared_n), (local_p, local_n), (cparam_p, cparam_n), (ws_base, ws_n)]
    slots = {abi.COOP_DONE: done_slot, abi.COOP_WAITERS: waiters, abi.COOP_CRITICAL: critical,
             abi.COOP_ROUND_MAX: round_max}

    pass_head = fn.append_basic_block("pass")
    b.branch(pass_head)
    b.position_at_end(pass_head)
    b.store(ir.Constant(i64, 0), pending)
    b.store(ir.Constant(i64, 0), progress)
    cta_loop = Loop(b, first, last, "cta")
    cta = cta_loop.i
    cta_next = fn.append_basic_block("cta_next")
    save = b.inttoptr(b.add(coop_base, b.mul(cta, ld(cw(abi.CTX_COOP_STRIDE)))), ptr)

    def sw(k: int) -> ir.Value:
        return b.gep(save, [ir.Constant(i64, k)], source_etype=i64)

    def copy(to_save: bool) -> None:
        at = ir.Constant(i64, 8 * abi.COOP_HEADER_WORDS)
        for p, n in regions:
            there = b.gep(save, [at], source_etype=i8)
            b.call(memcpy, [there, p, n, f] if to_save else [p, there, n, f])
            at = b.add(at, n)

    b.store(ir.Constant(i64, 0), state_slot)
    with b.if_then(coop):
        b.store(ld(sw(abi.COOP_STATE)), state_slot)
    state = b.load(state_slot, typ=i64)
    with b.if_then(b.icmp_signed("==", state, ir.Constant(i64, 2))):
        b.branch(cta_next)  # a cooperative CTA that has finished
    b.position_at_end(b.block)
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
    with b.if_else(b.icmp_signed("==", state, ir.Constant(i64, 0))) as (fresh, resumed):
        with fresh:
            # shared and local memory start zeroed, and so do their initcheck shadows (if any)
            for p, n in regions:
                b.call(memset, [p, zero8, n, f])
            b.store(ir.Constant(i64, 0), cw(abi.CTX_MBAR_EPOCH))
            b.store(ld(cw(abi.CTX_STEPS)), steps0_slot)
            for slot in slots.values():
                b.store(ir.Constant(i64, 0), slot)
            bump_race_epoch()  # racecheck: a new CTA's accesses race with none of the last one's
        with resumed:  # a suspended cooperative CTA: its memories and scheduler state back
            copy(False)
            b.store(ld(sw(abi.COOP_EPOCH)), cw(abi.CTX_MBAR_EPOCH))
            b.store(b.sub(ld(cw(abi.CTX_STEPS)), ld(sw(abi.COOP_STEPS))), steps0_slot)
            for k, slot in slots.items():
                b.store(ld(sw(k)), slot)
            bump_race_epoch()  # racecheck: the shadow holds another CTA's accesses (a switch hides hazards)
    round_head = fn.append_basic_block("round")
    b.branch(round_head)
    b.position_at_end(round_head)
    epoch0 = ld(cw(abi.CTX_MBAR_EPOCH))
    b.store(ir.Constant(i64, 0), turned)
    b.store(ir.Constant(i64, 0), spun)
    wl = Loop(b, ir.Constant(i64, 0), nwarps, "w")
    w = wl.i
    status = ld(wsw(w, abi.WS_STATUS))
    ready = b.icmp_signed("==", status, ir.Constant(i64, 0))
    with b.if_then(ready):
        before = ld(cw(abi.CTX_STEPS))
        rc = b.call(warp_run, [ws_of(w), ctx, b.trunc(w, i32)])
        ran = b.add(b.sub(ld(cw(abi.CTX_STEPS)), before), ld(wsw(w, abi.WS_PHASE_STEPS)))
        b.store(ran, wsw(w, abi.WS_PHASE_STEPS))
        most = b.load(round_max, typ=i64)
        b.store(b.select(b.icmp_signed(">", ran, most), ran, most), round_max)
        is_exit = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_EXIT))
        is_bar = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_BARRIER))
        is_turn = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_TURN))
        is_spin = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_SPIN))
        b.store(b.add(b.load(turned, typ=i64), b.zext(is_turn, i64)), turned)
        b.store(b.add(b.load(spun, typ=i64), b.zext(is_spin, i64)), spun)
        is_yield = b.or_(b.or_(b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_YIELD)), is_turn), is_spin)
        is_exit = b.or_(is_exit, is_yield)  # a yield leaves the warp ready (handled first below)
        with b.if_else(is_exit) as (then, otherwise):
            with then:
                with b.if_then(b.not_(is_yield)):
                    b.store(ir.Constant(i64, 2), wsw(w, abi.WS_STATUS))
                    b.store(b.add(b.load(done_slot, typ=i64), ir.Constant(i64, 1)), done_slot)
                    b.store(ir.Constant(i64, 1), progress)
            with otherwise:
                with b.if_else(is_bar) as (t2, o2):
                    with t2:
                        b.store(ir.Constant(i64, 1), wsw(w, abi.WS_STATUS))
                        b.store(b.add(b.load(waiters, typ=i64), ir.Constant(i64, 1)), waiters)
                        b.store(ir.Constant(i64, 1), progress)
                        bid = ld(wsw(w, abi.WS_BAR_ID))
                        bw = b.add(ir.Constant(i64, abi.CTX_BAR), b.mul(bid, ir.Constant(i64, abi.BAR_WORDS)))
                        wp = cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING)))
                        b.store(b.add(ld(wp), ir.Constant(i64, 1)), wp)
                        b.store(ld(wsw(w, abi.WS_BAR_EXPECT)), cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
                    with o2:
                        b.store(cta, cw(abi.CTX_ERR_CTA))
                        b.ret(ir.Constant(i32, abi.RC_ERROR))
    wl.close()
    done = b.load(done_slot, typ=i64)
    all_done = b.icmp_signed(">=", done, nwarps)
    # a round of turns: progress (a spin in a cooperative launch waits for another CTA)
    turns = b.add(b.load(turned, typ=i64), b.select(coop, ir.Constant(i64, 0), b.load(spun, typ=i64)))
    no_turns = b.icmp_signed("==", b.add(b.load(turned, typ=i64), b.load(spun, typ=i64)), ir.Constant(i64, 0))
    with b.if_then(b.icmp_signed(">", b.load(turned, typ=i64), ir.Constant(i64, 0))):
        b.store(ir.Constant(i64, 1), progress)

    def end_phase():
        """The phase's longest warp joins the critical steps; every warp starts a new phase."""
        b.store(b.add(b.load(critical, typ=i64), b.load(round_max, typ=i64)), critical)
        b.store(ir.Constant(i64, 0), round_max)
        pl = Loop(b, ir.Constant(i64, 0), nwarps, "phase")
        b.store(ir.Constant(i64, 0), wsw(pl.i, abi.WS_PHASE_STEPS))
        pl.close()

    # the warp schedule: every round is a phase (the warps ran to a barrier or their end)
    with b.if_then(b.or_(all_done, no_turns)):
        end_phase()
    release_bb = fn.append_basic_block("release")
    next_cta_bb = fn.append_basic_block("next_cta")
    check_bb = fn.append_basic_block("check")
    b.cbranch(all_done, next_cta_bb, check_bb)
    b.position_at_end(check_bb)
    # turns taken and no warp waiting: nothing to release, and the round made progress
    b.cbranch(b.and_(b.icmp_signed(">", turns, ir.Constant(i64, 0)),
                     b.icmp_signed("==", b.load(waiters, typ=i64), ir.Constant(i64, 0))),
              round_head, release_bb)
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
        b.store(b.sub(b.load(waiters, typ=i64), waiting), waiters)
        bump_race_epoch()  # racecheck: accesses after a barrier are ordered after those before
    bl.close()
    some_released = b.icmp_signed(">", b.load(released, typ=i64), ir.Constant(i64, 0))
    with b.if_then(some_released):
        b.store(ir.Constant(i64, 1), progress)
    with b.if_then(b.and_(b.not_(no_turns), some_released)):
        end_phase()  # the interleaved schedule: a phase ends where a barrier releases
    stuck = b.and_(b.and_(b.not_(some_released), b.icmp_signed("==", ld(cw(abi.CTX_MBAR_EPOCH)), epoch0)),
                   b.icmp_signed("==", turns, ir.Constant(i64, 0)))
    suspend_bb = fn.append_basic_block("suspend")
    deadlock_bb = fn.append_basic_block("deadlock")
    with b.if_then(stuck, likely=False):
        # a cooperative CTA whose warps all spin or wait: another CTA holds what they wait for
        b.cbranch(b.and_(coop, b.icmp_signed(">", b.load(spun, typ=i64), ir.Constant(i64, 0))),
                  suspend_bb, deadlock_bb)
    b.branch(round_head)
    b.position_at_end(deadlock_bb)
    b.store(ir.Constant(i64, abi.ERR_DEADLOCK), cw(abi.CTX_ERR_CODE))
    b.store(cta, cw(abi.CTX_ERR_CTA))
    b.ret(ir.Constant(i32, abi.RC_ERROR))
    b.position_at_end(suspend_bb)
    copy(True)
    b.store(ld(cw(abi.CTX_MBAR_EPOCH)), sw(abi.COOP_EPOCH))
    b.store(b.sub(ld(cw(abi.CTX_STEPS)), b.load(steps0_slot, typ=i64)), sw(abi.COOP_STEPS))
    for k, slot in slots.items():
        b.store(b.load(slot, typ=i64), sw(k))
    b.store(ir.Constant(i64, 1), sw(abi.COOP_STATE))
    b.store(ir.Constant(i64, 1), pending)
    b.branch(cta_next)
    b.position_at_end(next_cta_bb)
    # each CTA's warp-instructions, for the timing estimate's CTA scheduling (when asked)
    steps_word = ld(cw(abi.CTX_CTA_STEPS))
    with b.if_then(b.icmp_unsigned("!=", steps_word, ir.Constant(i64, 0))):
        slot = b.gep(b.inttoptr(steps_word, ptr), [b.mul(cta, ir.Constant(i64, 2))], source_etype=i64)
        b.store(b.sub(ld(cw(abi.CTX_STEPS)), b.load(steps0_slot, typ=i64)), slot)
        b.store(b.load(critical, typ=i64), b.gep(slot, [ir.Constant(i64, 1)], source_etype=i64))
    with b.if_then(coop):
        b.store(ir.Constant(i64, 2), sw(abi.COOP_STATE))
    b.branch(cta_next)
    b.position_at_end(cta_next)
    cta_loop.close()
    # a cooperative launch: passes over the CTAs until all are done; a pass in which no CTA got
    # anywhere (every one spun at once) is a deadlock (a grid barrier some CTA never reaches)
    again = b.icmp_signed(">", b.load(pending, typ=i64), ir.Constant(i64, 0))
    with b.if_then(b.and_(again, b.icmp_signed("==", b.load(progress, typ=i64), ir.Constant(i64, 0))), likely=False):
        b.store(ir.Constant(i64, abi.ERR_DEADLOCK), cw(abi.CTX_ERR_CODE))
        b.store(ir.Constant(i64, -1), cw(abi.CTX_ERR_CTA))
        b.ret(ir.Constant(i32, abi.RC_ERROR))
    done_bb = fn.append_basic_block("launch_done")
    b.cbranch(again, pass_head, done_bb)
    b.position_at_end(done_bb)
    b.ret(ir.Constant(i32, abi.RC_EXIT))
    return fn

