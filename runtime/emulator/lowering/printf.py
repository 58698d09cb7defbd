"""Device ``printf``: ``call vprintf, (fmt, args)`` hands each executing lane's format and
argument buffer, as host addresses, to the host callback in ``abi.CTX_PRINTF``, one lane
at a time in lane order (``hypa_printf_lanes``, made once per module).  Without a
callback the call is counted and prints nothing.
"""

from __future__ import annotations

from llvmlite import ir

from hypa.passes.inline import call_params
from hypa.ptxdialect.dialect import InstructionOp

from ... import abi
from . import initcheck
from .addressing import access, host_pointers
from .emitter import Emitter
from .function import WarpFunction
from .irbuild import each_lane, helper_function
from .types import i32, i64, ivec, ptr


def emit_printf(wf: WarpFunction, op: InstructionOp, e: Emitter) -> None:
    """The ``vprintf`` call ``op`` (``e``: its emitter)."""
    b = wf.b
    argv = call_params(op)[1]
    if len(argv) != 2 or any(a not in wf.prog.call_params for a in argv):
        return
    lanes = wf.executing_lanes(op)
    fn = wf.ctx_word(abi.CTX_PRINTF)
    with b.if_then(b.icmp_unsigned("!=", fn, ir.Constant(i64, 0)), likely=False):
        words = [access(wf, e.instr_id, "cparam", wf.splat(wf.prog.call_params[a].offset, i64), 64, lanes, None, "cparam")
                 for a in argv]
        fmt = b.ptrtoint(host_pointers(wf, e.instr_id, "generic", words[0], 1, lanes, "ld", initcheck.UNTRACKED), ivec(64))
        has_args = b.and_(lanes, b.icmp_unsigned("!=", words[1], wf.splat(0, i64)))
        args = b.ptrtoint(host_pointers(wf, e.instr_id, "generic", words[1], 1, has_args, "ld", initcheck.UNTRACKED), ivec(64))
        args = b.select(has_args, args, wf.splat(0, i64))
        b.call(printf_lanes_function(wf.module), [wf.ctx, fmt, args, wf.mask_to_i32(lanes)])


def printf_lanes_function(module: ir.Module) -> ir.Function:
    """``void hypa_printf_lanes(ctx, <32 x i64> fmt, <32 x i64> args, i32 lanes)``: calls
    ``ctx[CTX_PRINTF](ctx, fmt, args)`` for each lane set, lowest first."""
    f, new = helper_function(module, "hypa_printf_lanes", ir.VoidType(), [ptr, ivec(64), ivec(64), i32])
    if not new:
        return f
    ctx, fmts, argss, lanes = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    fnp = b.load(b.gep(ctx, [ir.Constant(i64, abi.CTX_PRINTF)], source_etype=i64), typ=i64)
    cb = b.inttoptr(fnp, ir.FunctionType(ir.VoidType(), [i64, i64, i64]).as_pointer())
    each_lane(b, module, lanes, lambda b, lane: b.call(cb, [b.ptrtoint(ctx, i64), b.extract_element(fmts, lane),
                                                           b.extract_element(argss, lane)]))
    b.ret_void()
    return f
