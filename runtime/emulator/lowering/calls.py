"""Real calls, their returns, indirect-call dispatch and the per-thread stack (``alloca``).

A recursive function has one copy in the kernel (``passes/inline.py``).  A real call
pushes a frame on each thread's stack, in local memory after the kernel's own ``.local``
variables: a record (call site, the caller's reconvergence block, frame, record and stack
used: five 32-bit words), the caller's frame values live after the call and its formal parameters
when the caller is itself a recursive function (the callee may be another activation of
it), then the callee's ``.local`` variables.  The stack size bounds what the GPU would use
(``KernelProgram.call_frame_bytes``: return address, saved registers, locals), counted in
``abi.WS_STACK_USED``; the region in memory is larger by the records and saved formals; ``alloca`` takes its bytes above.  The stack top, the running frame, the record
and the depth are warp-wide words of the warp state (``abi.WS_SP`` ...): only one
activation of a warp runs at a time, and the SIMT stack keeps divergent paths of a caller
waiting until the callee returns.  The callee starts as a fresh SIMT entry (reconvergence
block -1) and ends in its return block, which every ``ret`` of it branches to, so its
lanes reconverge there before the return restores the caller.  Docs: docs/design.md,
"Execution model".
"""

from __future__ import annotations

from llvmlite import ir

from ... import abi
from ..program import RealCall, value_bits
from .addressing import access
from .emitter import Emitter
from .irbuild import lowest_lane
from .types import MASK, i32, i64, ivec


def _copy_bytes(wf, instr: int, src: tuple[str, int | ir.Value], dst: tuple[str, int | ir.Value], nbytes: int,
                mask: ir.Value) -> None:
    """Copy ``nbytes`` per lane between state spaces (``(space, offset)``), in the lanes of ``mask``."""
    b = wf.b

    def at(off, k):
        if isinstance(off, int):
            return wf.splat(off + k, i64)
        return b.add(wf.splat_value(off), wf.splat(k, i64))

    k = 0
    while k < nbytes:
        step = 8
        while step > 1 and (nbytes - k < step or (isinstance(src[1], int) and (src[1] + k) % step)
                            or (isinstance(dst[1], int) and (dst[1] + k) % step)):
            step //= 2
        v = access(wf, instr, src[0], at(src[1], k), step * 8, mask, None, "reg")
        access(wf, instr, dst[0], at(dst[1], k), step * 8, mask, v, "reg")
        k += step


def _value_bytes(v) -> int:
    bits = value_bits(v)
    return 1 if bits == 1 else max(bits, 8) // 8


def _save(wf, instr: int, call: RealCall, base: ir.Value, restore: bool) -> None:
    """Save (or restore) the caller's frame values and formals at ``base`` + the record, in
    every thread of the warp (values of lanes waiting elsewhere are kept as they are)."""
    prog = wf.prog
    if call.caller == prog.func.func_name:
        return
    b = wf.b
    lanes = wf.valid
    off = abi.CALL_RECORD_BYTES
    for v in prog.saved_values(call):
        n = _value_bytes(v)
        addr = b.add(wf.splat_value(base), wf.splat(off, i64))
        if restore:
            got = access(wf, instr, "local", addr, n * 8, lanes, None, "reg")
            if value_bits(v) == 1:
                got = b.icmp_unsigned("!=", got, wf.splat(0, ir.IntType(8)))
            wf.write(v, got, lanes)
        else:
            val = wf.read(v)
            if val.type == MASK:
                val = b.zext(val, ivec(8))
            access(wf, instr, "local", addr, n * 8, lanes, val, "reg")
        off += n
    for f in prog.formals.get(call.caller, ()):
        size = prog.call_params[f].size
        here = b.add(base, ir.Constant(i64, off))
        cp = ("cparam", prog.call_params[f].offset)
        if restore:
            _copy_bytes(wf, instr, ("local", here), cp, size, lanes)
        else:
            _copy_bytes(wf, instr, cp, ("local", here), size, lanes)
        off += size


def emit_real_call(wf, bi: int, site: int) -> None:
    """The end of block ``bi``: a real call (``prog.real_calls[site]``)."""
    prog = wf.prog
    b = wf.b
    call = prog.real_calls[site]
    call_op = prog.block_instrs[bi][-1] if prog.block_instrs[bi] else None
    instr = prog.instr_ids[call_op] if call_op is not None and call_op.spec.name == "call" else -1
    if instr < 0:  # a dispatch's path to a recursive target: the call is in the block before
        pred = prog.cfg.preds[bi][0]
        instr = prog.instr_ids[prog.block_instrs[pred][-1]]
    head, callee_frame, counted = prog.call_frame_bytes(call)
    sp = wf.ws_word(abi.WS_SP)
    used = wf.ws_word(abi.WS_STACK_USED)
    depth = b.add(wf.ws_word(abi.WS_DEPTH), ir.Constant(i64, 1))
    new_sp = b.add(sp, ir.Constant(i64, head + callee_frame))
    new_used = b.add(used, ir.Constant(i64, counted))
    over = b.or_(b.icmp_unsigned(">", new_sp, wf.ctx_word(abi.CTX_LOCAL_SIZE)),
                 b.icmp_unsigned(">", new_used, wf.ctx_word(abi.CTX_STACK_SIZE)))
    over = b.or_(over, b.icmp_unsigned(">=", depth, ir.Constant(i64, abi.CALL_DEPTH_COUNTERS)))
    with b.if_then(over, likely=False):
        wf.set_ctx_word(abi.CTX_ERR_AUX, ir.Constant(i64, site))
        wf.error_if(instr, wf.active, abi.ERR_CALL_STACK, wf.splat_value(depth))
    lanes = wf.valid
    rpc = b.sext(b.load(wf.cur_rpc, typ=i32), i64)
    for k, word in enumerate((ir.Constant(i64, site), rpc, wf.ws_word(abi.WS_FP), wf.ws_word(abi.WS_REC), used)):
        addr = wf.splat_value(b.add(sp, ir.Constant(i64, 4 * k)))
        access(wf, instr, "local", addr, 32, lanes, wf.splat_value(b.trunc(word, i32)), "reg")
    _save(wf, instr, call, sp, restore=False)
    for actual, formal in call.args:
        size = min(prog.call_params[actual].size, prog.call_params[formal].size)
        _copy_bytes(wf, instr, ("cparam", prog.call_params[actual].offset), ("cparam", prog.call_params[formal].offset),
                    size, wf.active)
    wf.set_ws_word(abi.WS_REC, sp)
    wf.set_ws_word(abi.WS_FP, b.add(sp, ir.Constant(i64, head)))
    wf.set_ws_word(abi.WS_SP, new_sp)
    wf.set_ws_word(abi.WS_STACK_USED, new_used)
    wf.set_ws_word(abi.WS_DEPTH, depth)
    base = b.gep(wf.ctx_ptr(abi.CTX_COUNTERS), [b.add(ir.Constant(i64, prog.call_counter_base), depth)], source_etype=i64)
    b.store(b.add(b.load(base, typ=i64), ir.Constant(i64, 1)), base)
    b.store(ir.Constant(i32, -1), wf.cur_rpc)  # the callee is a fresh SIMT entry
    wf.goto(prog.function_entries[call.callee])


def emit_real_return(wf, bi: int, function: str) -> None:
    """Block ``bi`` is ``function``'s return block: every lane of the call is here."""
    prog = wf.prog
    b = wf.b
    rec = wf.ws_word(abi.WS_REC)
    lane = lowest_lane(b, wf.module, wf.mask_to_i32(wf.active))
    words = []
    for k in range(5):
        addr = wf.splat_value(b.add(rec, ir.Constant(i64, 4 * k)))
        v = access(wf, -1, "local", addr, 32, wf.active, None, "reg")
        w = b.extract_element(v, lane)
        words.append(b.sext(w, i64) if k in (1, 3) else b.zext(w, i64))
    site, rpc, fp, old_rec, used = words
    sites = [k for k, c in enumerate(prog.real_calls) if c.callee == function]
    bad_bb = wf.fn.append_basic_block(f"b{bi}_bad_return")
    sw = b.switch(b.trunc(site, i32), bad_bb)
    for k in sites:
        call = prog.real_calls[k]
        case = wf.fn.append_basic_block(f"b{bi}_return_to_{k}")
        sw.add_case(ir.Constant(i32, k), case)
        b.position_at_end(case)
        wf.written = {}
        instr = -1
        for actual, formal in call.rets:
            size = min(prog.call_params[actual].size, prog.call_params[formal].size)
            _copy_bytes(wf, instr, ("cparam", prog.call_params[formal].offset), ("cparam", prog.call_params[actual].offset),
                        size, wf.active)
        _save(wf, instr, call, rec, restore=True)
        wf.set_ws_word(abi.WS_SP, rec)
        wf.set_ws_word(abi.WS_FP, fp)
        wf.set_ws_word(abi.WS_REC, old_rec)
        wf.set_ws_word(abi.WS_STACK_USED, used)
        wf.set_ws_word(abi.WS_DEPTH, b.sub(wf.ws_word(abi.WS_DEPTH), ir.Constant(i64, 1)))
        b.store(b.trunc(rpc, i32), wf.cur_rpc)
        wf.goto(call.rest)
    b.position_at_end(bad_bb)
    wf.stop(abi.ERR_CALL_STACK, bi)


def emit_dispatch(wf, bi: int, targets: list[str]) -> list[tuple[int, ir.Value]]:
    """An indirect call ending block ``bi``: each lane's group (successor index, lanes) by the
    function address its register holds; a lane holding no possible target's address stops
    the launch."""
    prog = wf.prog
    b = wf.b
    call = prog.block_instrs[bi][-1]
    e = Emitter(wf, call)
    args = call.operands_ast
    k = 1 if args and args[0][0] == "paren" and len(args) > 1 else 0
    fptr = e.src(k, 64)
    groups = []
    matched = wf.splat(0, ir.IntType(1))
    for j, name in enumerate(targets):
        m = b.and_(wf.active, b.icmp_unsigned("==", fptr, wf.splat(abi.function_address(name), i64)))
        matched = b.or_(matched, m)
        groups.append((j, m))
    wf.error_if(e.instr_id, b.and_(wf.active, b.not_(matched)), abi.ERR_BAD_CALL_TARGET, fptr)
    return groups
