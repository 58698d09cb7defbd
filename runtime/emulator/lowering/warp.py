"""``WarpCodegen``: the warp function's control flow, and the lowering of each block.

``warp_run(ws, ctx, warp)`` executes the warp from where it stopped until it
exits, waits at a barrier, or fails.  Every SSA value the program emulates
lives in the warp's frame (inside ``ws``) as 32 lanes (``<32 x iN>``; a
predicate is a 32-bit mask), so a warp can stop at a barrier and resume
without saving anything.  Control flow follows GPGPU-Sim's SIMT stack: the
current entry (active mask, reconvergence block) is kept in ``ws``; a
divergent branch pushes the reconvergence entry and the not-taken path, and
reaching the entry's reconvergence block pops.  The header of a spin loop
(``prog.yield_blocks``) is where ptxas's ``YIELD`` lets waiting lanes go on:
the lanes running it leave every entry below and never reconverge with them.  Every write is masked by the
active lanes (and the guard), so values of lanes waiting on the stack survive.

Per block the code adds 1 to the block's warp counter and the number of
active lanes to its thread counter; branches count divergence; guarded
instructions with a computed guard count the lanes whose guard is true.  Each
instruction is lowered by its rule (``rules.RULES``, registered by ``semantics/``);
memory metrics, ``printf`` and barriers have their own modules.
"""

from __future__ import annotations

from llvmlite import ir

from hypa.passes.cfg import RETURN_ATTR
from hypa.passes.inline import CALL_ATTR, DISPATCH_ATTR, GUARDED_CALL_ATTR, HEAP_FUNCTIONS, REAL_RETURN_ATTR, callee_name
from hypa.ptxdialect.dialect import FallthroughOp, ImplicitReturnOp, InstructionOp
from hypa.ptxdialect.printer import instruction_text

from ... import abi
from ..program import KernelProgram, reconvergence
from . import hoisted, semantics  # noqa: F401  (registers the rules
from .calls import emit_dispatch, emit_real_call, emit_real_return
from .emitter import Emitter
from .function import WarpFunction
from .heap import emit_heap_call
from .irbuild import Loop
from .memory_metrics import emit_memory_metrics
from .printf import emit_printf
from .rules import RULES, WHY_NOT, LoweringError
from .semantics.mbarrier import complete_lanes, wait_result
from .semantics.memory import check_access
from .semantics.sync import barrier_resume, barrier_suspend
from .types import i32, i64, ivec


class WarpCodegen(WarpFunction):
    """Builds ``warp_run`` for one ``KernelProgram`` (``generate``)."""

    def __init__(self, prog: KernelProgram, module: ir.Module):
        super().__init__(prog, module)
        self.block_bbs: list[ir.Block] = []
        self.resume_bbs: list[ir.Block] = []
        self.barrier_index: dict[InstructionOp, int] = {op: i for i, op in enumerate(prog.barriers)}
        #: resume points: the barriers, then the mbarrier waits, then (interleaved schedule) every block's start
        self.yield_index: dict[InstructionOp, int] = {op: len(prog.barriers) + i for i, op in enumerate(prog.yields)}
        self.interleave = getattr(prog.options, "schedule", "warp") == "interleave"
        self.turn_base = len(prog.barriers) + len(prog.yields)
        #: the interleaved schedule's resume points: before writes, then at loop heads (``generate``)
        self.write_turns: dict[InstructionOp, int] = {
            op: self.turn_base + i for i, op in enumerate(prog.turns)} if self.interleave else {}
        self.head_turns: dict[int, int] = {}

    # -- SIMT control --------------------------------------------------------------------

    def load_state(self) -> None:
        """The current SIMT entry (active mask, reconvergence block) lives in allocas."""
        b = self.b
        self.cur_mask = b.alloca(i32, name="cur_mask")
        self.cur_rpc = b.alloca(i32, name="cur_rpc")

    def goto(self, target: int) -> None:
        """Continue at block ``target`` with the current entry (pop on reconvergence)."""
        b = self.b
        rpc = b.load(self.cur_rpc, typ=i32)
        hit = b.icmp_signed("==", rpc, ir.Constant(i32, target))
        b.cbranch(hit, self.pop_bb, self.block_bbs[target])

    def goto_if(self, cond: ir.Value, target: int, taken: str, rest: str) -> None:
        """If ``cond``, continue at block ``target`` (through the new block ``taken``);
        the code built next runs otherwise (in the new block ``rest``)."""
        b = self.b
        taken_bb = self.fn.append_basic_block(taken)
        rest_bb = self.fn.append_basic_block(rest)
        b.cbranch(cond, taken_bb, rest_bb)
        b.position_at_end(taken_bb)
        self.goto(target)
        b.position_at_end(rest_bb)

    def enter(self, target: int, rpc: ir.Value, mask: ir.Value) -> None:
        """Continue at block ``target`` as the entry (i32 ``mask``, reconvergence ``rpc``)."""
        self.b.store(rpc, self.cur_rpc)
        self.b.store(mask, self.cur_mask)
        self.goto(target)

    def push(self, pc: int | ir.Value, rpc: ir.Value, mask: ir.Value) -> None:
        """Push the SIMT entry (block ``pc``, reconvergence block ``rpc``, i32 ``mask``)."""
        b = self.b
        top = self.ws_word(abi.WS_TOP)
        full = b.icmp_signed(">=", top, ir.Constant(i64, abi.STACK_DEPTH))
        with b.if_then(full, likely=False):
            self.stop(abi.ERR_STACK_OVERFLOW, self.cur_block)
        base = b.add(ir.Constant(i64, abi.WS_STACK), b.mul(top, ir.Constant(i64, 3)))
        pcv = ir.Constant(i64, pc) if isinstance(pc, int) else b.sext(pc, i64)
        self.set_ws_word(base, pcv)
        self.set_ws_word(b.add(base, ir.Constant(i64, 1)), b.sext(rpc, i64))
        self.set_ws_word(b.add(base, ir.Constant(i64, 2)), b.zext(mask, i64))
        self.set_ws_word(abi.WS_TOP, b.add(top, ir.Constant(i64, 1)))

    def push_reconvergence(self, r: int, cur_rpc: ir.Value, cur_mask: ir.Value) -> ir.Value:
        """At a divergent branch whose paths reconverge at block ``r`` (-1: none), push
        the entry that waits there with the current entry's lanes; returns the
        reconvergence block of the paths' entries.  An entry already waiting at ``r``
        (a loop that keeps diverging) needs no twin: the twin would run block ``r``
        once more, before the real reconvergence."""
        if r < 0:
            return cur_rpc
        b = self.b
        need = b.icmp_signed("!=", cur_rpc, ir.Constant(i32, r))
        with b.if_then(need):
            self.push(r, cur_rpc, cur_mask)
        return ir.Constant(i32, r)

    def gen_yield(self, bi: int) -> None:
        """A spin loop's ``YIELD`` (``passes/spin_loops.py``), at the top of its header
        ``bi``: the running lanes count as arrived at every reconvergence point they belong
        to, so the lanes waiting there go on without them, and they run what follows on
        their own (reconvergence block -1): their lanes leave every entry below on the SIMT
        stack.  Then, as the GPU switches at a ``YIELD``, the entry on top of the stack runs
        first (a lane that left the loop may hold what the others spin on) and this group
        waits under it to run the header next (``WS_YIELDED``: the next group to reach a
        spin loop's header runs it)."""
        b = self.b
        cur = b.load(self.cur_mask, typ=i32)
        keep = b.zext(b.not_(cur), i64)
        top = self.ws_word(abi.WS_TOP)
        loop = Loop(b, ir.Constant(i64, 0), top, f"yield{bi}")
        slot = b.add(ir.Constant(i64, abi.WS_STACK + 2), b.mul(loop.i, ir.Constant(i64, 3)))
        self.set_ws_word(slot, b.and_(self.ws_word(slot), keep))
        loop.close()
        b.store(ir.Constant(i32, -1), self.cur_rpc)
        resumed = b.icmp_unsigned("!=", self.ws_word(abi.WS_YIELDED), ir.Constant(i64, 0))
        others = b.icmp_signed(">", top, ir.Constant(i64, 0))
        switch = b.and_(b.not_(resumed), others)
        sw_bb = self.fn.append_basic_block(f"b{bi}_yield")
        go_bb = self.fn.append_basic_block(f"b{bi}_run")
        b.cbranch(switch, sw_bb, go_bb)
        b.position_at_end(sw_bb)
        full = b.icmp_signed(">=", top, ir.Constant(i64, abi.STACK_DEPTH))
        with b.if_then(full, likely=False):
            self.stop(abi.ERR_STACK_OVERFLOW, bi)
        under = b.add(ir.Constant(i64, abi.WS_STACK), b.mul(b.sub(top, ir.Constant(i64, 1)), ir.Constant(i64, 3)))
        above = b.add(under, ir.Constant(i64, 3))
        for k in range(3):
            self.set_ws_word(b.add(above, ir.Constant(i64, k)), self.ws_word(b.add(under, ir.Constant(i64, k))))
        self.set_ws_word(under, ir.Constant(i64, bi))
        self.set_ws_word(b.add(under, ir.Constant(i64, 1)), ir.Constant(i64, -1))
        self.set_ws_word(b.add(under, ir.Constant(i64, 2)), b.zext(cur, i64))
        self.set_ws_word(abi.WS_TOP, b.add(top, ir.Constant(i64, 1)))
        self.set_ws_word(abi.WS_YIELDED, ir.Constant(i64, 1))
        b.branch(self.pop_bb)
        b.position_at_end(go_bb)
        self.set_ws_word(abi.WS_YIELDED, ir.Constant(i64, 0))

    def exit_lanes(self, lanes: ir.Value) -> None:
        """Lanes in ``lanes`` (i32 mask) leave the kernel: drop them everywhere."""
        b = self.b
        ex = self.ws_word(abi.WS_EXITED)
        self.set_ws_word(abi.WS_EXITED, b.or_(ex, b.zext(lanes, i64)))

    # -- generation -------------------------------------------------------------------

    def generate(self) -> ir.Function:
        """Build ``warp_run``: the entry (resume point), the SIMT stack's pop and
        dispatch, then every block."""
        prog = self.prog
        b = self.b
        self.load_state()
        self.load_stable_words()
        self.steps = b.alloca(i64, name="steps")
        #: the launch's step count when this turn began (the interleaved schedule ends a turn
        #: at the first block start after the warp has run anything)
        self.turn_start = self.ctx_word(abi.CTX_STEPS)
        b.store(self.turn_start, self.steps)
        self.setup_lanes()
        self.loop_heads = _retreating_targets(prog.cfg)
        n = prog.num_blocks
        for i in range(n):
            self.block_bbs.append(self.fn.append_basic_block(f"b{i}"))
        self.pop_bb = self.fn.append_basic_block("pop")
        self.dispatch_bb = self.fn.append_basic_block("dispatch")
        self.start_bb = self.fn.append_basic_block("start")
        if self.interleave:
            base = self.turn_base + len(self.write_turns)
            # a loop that waits for another thread must let it run; another loop's writes end turns
            self.head_turns = {bi: base + i for i, bi in enumerate(sorted(self.loop_heads & prog.wait_blocks))}
        turns = len(self.write_turns) + len(self.head_turns)
        self.resume_bbs = [self.fn.append_basic_block(f"resume{k}")
                           for k in range(len(prog.barriers) + len(prog.yields) + turns)]
        # entry: resume point
        resume = b.trunc(self.ws_word(abi.WS_RESUME), i32)
        sw = b.switch(resume, self.start_bb)
        for k, rb in enumerate(self.resume_bbs):
            sw.add_case(ir.Constant(i32, k + 1), rb)
        # start: the whole warp at block 0
        b.position_at_end(self.start_bb)
        valid = self.mask_to_i32(self.valid)
        b.store(valid, self.cur_mask)
        b.store(ir.Constant(i32, -1), self.cur_rpc)
        self.set_ws_word(abi.WS_TOP, ir.Constant(i64, 0))
        self.set_ws_word(abi.WS_EXITED, ir.Constant(i64, 0))
        if prog.uses_stack:
            for word, v in ((abi.WS_SP, prog.stack_base), (abi.WS_FP, prog.stack_base), (abi.WS_REC, -1), (abi.WS_DEPTH, 0),
                            (abi.WS_STACK_USED, 0)):
                self.set_ws_word(word, ir.Constant(i64, v))
        self.real_call_sites = {c.block: k for k, c in enumerate(prog.real_calls)}
        b.branch(self.block_bbs[0])
        # pop / dispatch
        b.position_at_end(self.pop_bb)
        top = self.ws_word(abi.WS_TOP)
        empty = b.icmp_signed("<=", top, ir.Constant(i64, 0))
        done_bb = self.fn.append_basic_block("warp_done")
        take_bb = self.fn.append_basic_block("pop_take")
        b.cbranch(empty, done_bb, take_bb)
        b.position_at_end(done_bb)
        self.ret(abi.RC_EXIT)
        b.position_at_end(take_bb)
        ntop = b.sub(top, ir.Constant(i64, 1))
        self.set_ws_word(abi.WS_TOP, ntop)
        base = b.add(ir.Constant(i64, abi.WS_STACK), b.mul(ntop, ir.Constant(i64, 3)))
        pc = b.trunc(self.ws_word(base), i32)
        rpc = b.trunc(self.ws_word(b.add(base, ir.Constant(i64, 1))), i32)
        mask = b.trunc(self.ws_word(b.add(base, ir.Constant(i64, 2))), i32)
        exited = b.trunc(self.ws_word(abi.WS_EXITED), i32)
        mask = b.and_(mask, b.not_(exited))
        b.store(mask, self.cur_mask)
        b.store(rpc, self.cur_rpc)
        # an empty entry, or one already at its reconvergence point (its lanes are in
        # the entry below, which waits there), has nothing to run
        isempty = b.or_(b.icmp_unsigned("==", mask, ir.Constant(i32, 0)), b.icmp_signed("==", pc, rpc))
        b.cbranch(isempty, self.pop_bb, self.dispatch_bb)
        b.position_at_end(self.dispatch_bb)
        dsw = b.switch(pc, self.pop_bb)
        for i in range(n):
            dsw.add_case(ir.Constant(i32, i), self.block_bbs[i])
        for i in range(n):
            self.gen_block(i)
        return self.fn

    def gen_block(self, bi: int) -> None:
        prog = self.prog
        b = self.b
        self.cur_block = bi
        b.position_at_end(self.block_bbs[bi])
        if bi in self.head_turns:  # a loop that waits for another thread, and may write nothing
            ran = b.icmp_unsigned("!=", b.load(self.steps, typ=i64), self.turn_start)
            self.gen_turn(self.head_turns[bi], f"b{bi}", ran, abi.RC_SPIN)
        if bi in prog.yield_blocks:
            self.gen_yield(bi)
        self.active = self.i32_to_mask(b.load(self.cur_mask, typ=i32))
        self.local_values = {}
        # step budget: counted in every block, checked where loops close
        n_instr = len(prog.block_instrs[bi])
        steps = b.add(b.load(self.steps, typ=i64), ir.Constant(i64, n_instr))
        b.store(steps, self.steps)
        if bi in self.loop_heads:
            over = b.icmp_unsigned(">", steps, self.ctx_word(abi.CTX_BUDGET))
            with b.if_then(over, likely=False):
                self.stop(abi.ERR_STEP_BUDGET, bi)
        self.counter_add(abi.BLOCK_COUNTERS * bi, ir.Constant(i64, 1))
        self.counter_add(abi.BLOCK_COUNTERS * bi + 1, self.popcount(self.active))
        if n_instr:  # this warp slot's warp-instructions (load balance inside a CTA)
            wp = b.gep(self.ctx_ptr(abi.CTX_COUNTERS), [b.add(ir.Constant(i64, prog.warp_counter_base), b.zext(self.warp, i64))],
                       source_etype=i64)
            b.store(b.add(b.load(wp, typ=i64), ir.Constant(i64, n_instr)), wp)
        block = prog.cfg.blocks[bi]
        term = block.last_op
        hoist = prog.hoist
        for op in block.ops:
            if op is term:
                break
            if isinstance(op, InstructionOp):
                metrics = True
                if hoist is not None:
                    m = prog.mem_ops.get(op)
                    if m is not None and op in hoist.region:
                        # a hoisted check, but the metrics read every active lane's address
                        hoisted.close_region(self)
                        emit_memory_metrics(self, op, m)
                        metrics = False
                    hoisted.before_instruction(self, op)
                self.gen_instruction(op, metrics)
        if hoist is not None:
            hoisted.block_end(self, bi)
        self.gen_terminator(bi, term)

    def gen_instruction(self, op: InstructionOp, metrics: bool = True) -> None:
        """``op``'s code; ``metrics``: its memory metrics too (False: emitted already)."""
        prog = self.prog
        k = self.write_turns.get(op)
        if k is not None:
            self.b.store(self.mask_to_i32(self.active), self.cur_mask)
            self.gen_turn(k, f"w{k}")
            self.active = self.i32_to_mask(self.b.load(self.cur_mask, typ=i32))
            self.local_values = {}
        k = prog.pred_counters.get(op)
        if k is not None:
            # lanes whose guard is true (counted whether or not the op is emulated)
            lanes = self.executing_lanes(op)
            self.counter_add(abi.BLOCK_COUNTERS * prog.num_blocks + k, self.popcount(lanes))
        m = prog.mem_ops.get(op)
        if m is not None and metrics:
            emit_memory_metrics(self, op, m)
        if op in prog.barriers:
            self.b.comment(instruction_text(op))
            self.gen_barrier(op)
            return
        if op in self.yield_index:
            self.b.comment(instruction_text(op))
            self.gen_wait(op)
            return
        if op.spec.name == "call" and callee_name(op)[0] == "__assertfail":
            # CUDA's assert(): the device runtime prints and traps.  Reaching the
            # call is a fact of control flow, so slice mode stops here as well.
            lanes = self.executing_lanes(op)
            self.error_if(Emitter(self, op).instr_id, lanes, abi.ERR_ASSERT, None)
            return
        if op not in prog.emulated:
            if op in prog.checked:  # slice mode: the access is bounds-checked, not performed
                self.b.comment("bounds check: " + instruction_text(op))
                check_access(Emitter(self, op))
            return
        name = op.spec.name
        fn = RULES.get(name)
        e = Emitter(self, op)
        if name == "call":
            callee = callee_name(op)[0]
            if callee == "vprintf":
                emit_printf(self, op, e)
            elif self.prog.heap_calls and callee in HEAP_FUNCTIONS:
                emit_heap_call(self, op, e, callee)
            return  # inlined (or an external function the emulator skips)
        if fn is None:
            why = op.spec.unsupported_reason or WHY_NOT.get(name)
            raise LoweringError(f"'{op.opcode}' has no emulator semantics: {why}" if why
                                else f"'{op.opcode}' has no emulator semantics yet")
        self.cross_lane = op.spec.kind in ("warp", "matrix")
        self.b.comment(instruction_text(op))  # `-t llvm` shows each PTX instruction's lowering
        try:
            fn(e)
        finally:
            self.cross_lane = False

    def gen_turn(self, k: int, label: str, when: ir.Value | None = None, code: int = abi.RC_TURN) -> None:
        """The interleaved schedule: the warp gives the other warps of its CTA their turns
        (``RC_TURN``, still ready) and resumes here, at resume point ``k``; ``when``: only if
        it is true.  Turns end before every write to memory other threads see, so the warps of
        a CTA read what they read before any of them writes, as warps advancing together on the
        GPU do (a race the GPU never loses resolves as there), and at the head of a loop that
        waits for another thread (``RC_SPIN``: ``prog.wait_blocks``), which must run meanwhile."""
        b = self.b
        turn_bb = self.fn.append_basic_block(f"{label}_turn")
        go_bb = self.fn.append_basic_block(f"{label}_go")
        if when is None:
            b.branch(turn_bb)
        else:
            b.cbranch(when, turn_bb, go_bb)
        b.position_at_end(turn_bb)
        self.set_ws_word(abi.WS_MASK, b.zext(b.load(self.cur_mask, typ=i32), i64))
        self.set_ws_word(abi.WS_RPC, b.sext(b.load(self.cur_rpc, typ=i32), i64))
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, k + 1))
        self.ret(code)
        b.position_at_end(self.resume_bbs[k])
        b.store(b.trunc(self.ws_word(abi.WS_MASK), i32), self.cur_mask)
        b.store(b.trunc(self.ws_word(abi.WS_RPC), i32), self.cur_rpc)
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, 0))
        b.branch(go_bb)
        b.position_at_end(go_bb)

    def gen_barrier(self, op: InstructionOp) -> None:
        """Suspend the warp here; the scheduler resumes it when the barrier releases."""
        b = self.b
        k = self.barrier_index[op]
        e = Emitter(self, op)
        barrier_suspend(e)
        b.store(self.mask_to_i32(self.active), self.cur_mask)
        self.set_ws_word(abi.WS_MASK, b.zext(b.load(self.cur_mask, typ=i32), i64))
        self.set_ws_word(abi.WS_RPC, b.sext(b.load(self.cur_rpc, typ=i32), i64))
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, k + 1))
        self.ret(abi.RC_BARRIER)
        b.position_at_end(self.resume_bbs[k])
        self.local_values = {}
        b.store(b.trunc(self.ws_word(abi.WS_MASK), i32), self.cur_mask)
        b.store(b.trunc(self.ws_word(abi.WS_RPC), i32), self.cur_rpc)
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, 0))
        self.active = self.i32_to_mask(b.load(self.cur_mask, typ=i32))
        e = Emitter(self, op)
        barrier_resume(e)

    def gen_wait(self, op: InstructionOp) -> None:
        """``mbarrier.try_wait`` / ``test_wait``: while a lane's phase is incomplete the warp
        yields to the CTA scheduler (``RC_YIELD``, still ready) and resumes here, at the
        same instruction, once the other warps ran.  ``try_wait`` waits until every lane's
        phase is complete, so it is executed (and counted) once; ``test_wait`` yields once,
        then gives each lane's answer (a polling loop runs once per round)."""
        b = self.b
        k = self.yield_index[op]
        resumed = Emitter(self, op).entry_alloca(ir.IntType(1))
        b.store(ir.Constant(ir.IntType(1), 0), resumed)
        b.store(self.mask_to_i32(self.active), self.cur_mask)
        check_bb = self.fn.append_basic_block(f"wait{k}")
        b.branch(check_bb)
        b.position_at_end(self.resume_bbs[k])
        b.store(b.trunc(self.ws_word(abi.WS_MASK), i32), self.cur_mask)
        b.store(b.trunc(self.ws_word(abi.WS_RPC), i32), self.cur_rpc)
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, 0))
        b.store(ir.Constant(ir.IntType(1), 1), resumed)
        b.branch(check_bb)
        b.position_at_end(check_bb)
        self.local_values = {}
        self.active = self.i32_to_mask(b.load(self.cur_mask, typ=i32))
        e = Emitter(self, op)
        done = complete_lanes(e)
        all_done = b.icmp_unsigned("==", self.mask_to_i32(done), ir.Constant(i32, -1))
        go = all_done
        if op.spec.name == "mbarrier.test_wait":
            go = b.or_(all_done, b.load(resumed, typ=ir.IntType(1)))
        yield_bb = self.fn.append_basic_block(f"wait{k}_yield")
        cont_bb = self.fn.append_basic_block(f"wait{k}_done")
        b.cbranch(go, cont_bb, yield_bb)
        b.position_at_end(yield_bb)
        self.set_ws_word(abi.WS_MASK, b.zext(b.load(self.cur_mask, typ=i32), i64))
        self.set_ws_word(abi.WS_RPC, b.sext(b.load(self.cur_rpc, typ=i32), i64))
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, k + 1))
        self.ret(abi.RC_YIELD)
        b.position_at_end(cont_bb)
        wait_result(e, done)

    # -- terminators ---------------------------------------------------------------

    def edge_writes(self, bi: int, slot: int, succ_block, mask: ir.Value) -> None:
        prog = self.prog
        term = prog.cfg.blocks[bi].last_op
        if isinstance(term, FallthroughOp):
            vals = list(term.operands)
        elif isinstance(term, InstructionOp):
            vals = list(term.successor_operands(slot))
        else:
            vals = []
        hoist = prog.hoist
        later = []
        for a, v in zip(succ_block.args, vals):
            if a in prog.emulated_args:
                if hoist is not None and a in hoist.conditional_args and bi in hoist.conditional_args[a].blocks:
                    later.append((a, v))  # a back edge: only the loop's unproven lanes need it
                    continue
                self.write(a, self.read(v), mask, blend=True)
        if later:
            hoisted.edge_writes(self, bi, later, mask)

    def gen_terminator(self, bi: int, term) -> None:
        prog = self.prog
        b = self.b
        if isinstance(term, InstructionOp):
            b.comment(instruction_text(term))
        cfg = prog.cfg
        active = self.active
        if isinstance(term, FallthroughOp) and CALL_ATTR in term.attributes:
            emit_real_call(self, bi, self.real_call_sites[bi])
            return
        if isinstance(term, FallthroughOp) and DISPATCH_ATTR in term.attributes:
            targets = [t.data for t in term.attributes[DISPATCH_ATTR].data]  # type: ignore[attr-defined]
            groups = [(cfg.index[term.successors[j]], m) for j, m in emit_dispatch(self, bi, targets)]
            self.diverge(bi, groups, count=False)
            return
        if isinstance(term, FallthroughOp) and GUARDED_CALL_ATTR in term.attributes:
            # ``@p call f``: the lanes whose guard holds run the inlined body, the others skip it
            call = self.prog.block_instrs[bi][-1]
            g = self.guard_lanes(call)
            groups = [(cfg.index[term.successors[0]], b.and_(active, g)),
                      (cfg.index[term.successors[1]], b.and_(active, b.not_(g)))]
            self.diverge(bi, groups, count=False)
            return
        if isinstance(term, ImplicitReturnOp) and REAL_RETURN_ATTR in term.attributes:
            emit_real_return(self, bi, term.attributes[REAL_RETURN_ATTR].data)  # type: ignore[attr-defined]
            return
        if isinstance(term, FallthroughOp):
            s = term.successors[0]
            self.edge_writes(bi, 0, s, active)
            self.goto(cfg.index[s])
            return
        if isinstance(term, ImplicitReturnOp):
            self.exit_lanes(self.mask_to_i32(active))
            b.branch(self.pop_bb)
            return
        assert isinstance(term, InstructionOp)
        name = term.spec.name
        cond = self.guard_lanes(term)
        if name == "bra" or (name == "ret" and RETURN_ATTR in term.attributes):
            is_branch = name == "bra"
            taken = term.successors[0]
            ti = cfg.index[taken]
            if is_branch:
                self.counter_add(abi.BLOCK_COUNTERS * bi + 2, ir.Constant(i64, 0))
            if cond is None:
                self.edge_writes(bi, 0, taken, active)
                self.goto(ti)
                return
            fall = term.successors[-1]
            fi = cfg.index[fall]
            tmask = b.and_(active, cond)
            fmask = b.and_(active, b.not_(cond))
            self.counter_add(abi.BLOCK_COUNTERS * bi + 3, self.popcount(tmask))
            self.edge_writes(bi, 0, taken, tmask)
            self.edge_writes(bi, len(term.successors) - 1, fall, fmask)
            self.gen_two_way(bi, ti, tmask, fi, fmask, is_branch)
            return
        if name == "brx.idx":
            self.gen_brx(bi, term, cond)
            return
        if name in ("ret", "exit"):
            lanes = active if cond is None else b.and_(active, cond)
            self.exit_lanes(self.mask_to_i32(lanes))
            if cond is None:
                b.branch(self.pop_bb)
                return
            rest = b.and_(active, b.not_(cond))
            b.store(self.mask_to_i32(rest), self.cur_mask)
            fall = term.successors[-1]
            self.edge_writes(bi, 0, fall, rest)
            none_left = b.icmp_unsigned("==", self.mask_to_i32(rest), ir.Constant(i32, 0))
            cont = self.fn.append_basic_block(f"b{bi}_cont")
            b.cbranch(none_left, self.pop_bb, cont)
            b.position_at_end(cont)
            self.goto(cfg.index[fall])
            return
        if name == "trap":
            lanes = active if cond is None else b.and_(active, cond)
            self.error_if(-1, lanes, abi.ERR_TRAP, None, bi)
            if cond is None:
                b.branch(self.pop_bb)
            else:
                self.goto(cfg.index[term.successors[-1]])
            return
        raise LoweringError(f"unexpected terminator '{term.opcode}'")

    def gen_two_way(self, bi: int, ti: int, tmask: ir.Value, fi: int, fmask: ir.Value, count_branch: bool) -> None:
        b = self.b
        tbits = self.mask_to_i32(tmask)
        fbits = self.mask_to_i32(fmask)
        zero = ir.Constant(i32, 0)
        t_none = b.icmp_unsigned("==", tbits, zero)
        f_none = b.icmp_unsigned("==", fbits, zero)
        self.goto_if(f_none, ti, f"b{bi}_taken", f"b{bi}_nt")
        self.goto_if(t_none, fi, f"b{bi}_fall", f"b{bi}_diverge")
        if ti == fi:
            self.goto(ti)
            return
        if count_branch:
            self.counter_add(abi.BLOCK_COUNTERS * bi + 2, ir.Constant(i64, 1))
        r = reconvergence(self.prog, bi)
        cur_rpc = b.load(self.cur_rpc, typ=i32)
        cur_mask = b.load(self.cur_mask, typ=i32)
        new_rpc = self.push_reconvergence(r, cur_rpc, cur_mask)
        # a path whose target is the reconvergence point just waits there
        if fi == r:
            self.enter(ti, new_rpc, tbits)
            return
        if ti == r:
            self.enter(fi, new_rpc, fbits)
            return
        self.push(fi, new_rpc, fbits)
        self.enter(ti, new_rpc, tbits)

    def gen_brx(self, bi: int, term: InstructionOp, cond: ir.Value | None) -> None:
        b = self.b
        prog = self.prog
        cfg = prog.cfg
        e = Emitter(self, term)
        idx = e.src(0, 32)
        nt = len(term.successors) - (1 if cond is not None else 0)
        active = self.active
        go = active if cond is None else b.and_(active, cond)
        bad = b.and_(go, b.icmp_unsigned(">=", idx, self.splat(nt, i32)))
        self.error_if(e.instr_id, bad, abi.ERR_BAD_BRANCH_INDEX, b.zext(idx, ivec(64)))
        groups: list[tuple[int, ir.Value]] = []
        for k in range(nt):
            m = b.and_(go, b.icmp_unsigned("==", idx, self.splat(k, i32)))
            groups.append((cfg.index[term.successors[k]], m))
            self.edge_writes(bi, k, term.successors[k], m)
        if cond is not None:
            fm = b.and_(active, b.not_(cond))
            groups.append((cfg.index[term.successors[-1]], fm))
            self.edge_writes(bi, len(term.successors) - 1, term.successors[-1], fm)
        self.diverge(bi, groups, count=True)

    def diverge(self, bi: int, groups: list[tuple[int, ir.Value]], count: bool) -> None:
        """Send each group of lanes (target block, lanes) on its way: jump where one group
        holds every lane, else push one SIMT entry per non-empty group."""
        b = self.b
        prog = self.prog
        # how many distinct groups are non-empty
        nonempty = ir.Constant(i32, 0)
        for _t, m in groups:
            nz = b.icmp_unsigned("!=", self.mask_to_i32(m), ir.Constant(i32, 0))
            nonempty = b.add(nonempty, b.zext(nz, i32))
        divergent = b.icmp_unsigned(">", nonempty, ir.Constant(i32, 1))
        if count:
            self.counter_add(abi.BLOCK_COUNTERS * bi + 2, b.zext(divergent, i64))
        r = reconvergence(prog, bi)
        cur_rpc = b.load(self.cur_rpc, typ=i32)
        cur_mask = b.load(self.cur_mask, typ=i32)
        div_bb = self.fn.append_basic_block(f"b{bi}_brx_div")
        uni_bb = self.fn.append_basic_block(f"b{bi}_brx_uni")
        b.cbranch(divergent, div_bb, uni_bb)
        # uniform: jump to the one non-empty group
        b.position_at_end(uni_bb)
        for k, (t, m) in enumerate(groups):
            nz = b.icmp_unsigned("!=", self.mask_to_i32(m), ir.Constant(i32, 0))
            nxt = self.fn.append_basic_block(f"b{bi}_brx_u{k}")
            hit = self.fn.append_basic_block(f"b{bi}_brx_h{k}")
            b.cbranch(nz, hit, nxt)
            b.position_at_end(hit)
            self.goto(t)
            b.position_at_end(nxt)
        b.branch(self.pop_bb)
        # divergent: reconvergence entry, then one entry per non-empty group
        b.position_at_end(div_bb)
        new_rpc = self.push_reconvergence(r, cur_rpc, cur_mask)
        for t, m in groups:
            if t == r:
                continue  # lanes that jump straight to r wait in the reconvergence entry
            bits = self.mask_to_i32(m)
            nz = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
            with b.if_then(nz):
                self.push(t, new_rpc, bits)
        b.store(new_rpc, self.cur_rpc)
        b.branch(self.pop_bb)


def _retreating_targets(cfg) -> set[int]:
    """Targets of retreating edges (every cycle has one): where the step budget is checked."""
    n = len(cfg)
    state = [0] * n
    out: set[int] = set()
    if not n:
        return out
    stack = [(0, 0)]
    state[0] = 1
    while stack:
        b, k = stack[-1]
        if k < len(cfg.succs[b]):
            stack[-1] = (b, k + 1)
            s = cfg.succs[b][k]
            if state[s] == 0:
                state[s] = 1
                stack.append((s, 0))
            elif state[s] == 1:
                out.add(s)
        else:
            state[b] = 2
            stack.pop()
    # blocks unreachable from the entry are checked too
    out.update(i for i in range(n) if state[i] == 0)
    return out
