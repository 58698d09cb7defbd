"""Device ``malloc``/``free`` (``call (r), malloc, (n);``, ``call free, (p);`` to the
``.extern`` functions CUDA's device runtime provides): each executing lane's argument goes
to the heap callback in ``abi.CTX_HEAP`` (``runtime/emulator/device_heap.py``), one call per
warp-instruction, and ``malloc``'s results come back into its return parameter."""

from __future__ import annotations

from hypa.passes.inline import call_params
from hypa.ptxdialect.dialect import InstructionOp
from llvmlite import ir

from ... import abi
from .addressing import access
from .emitter import Emitter
from .function import WarpFunction
from .rules import LoweringError
from .types import i32, i64, ivec


def emit_heap_call(wf: WarpFunction, op: InstructionOp, e: Emitter, name: str) -> None:
    """The call ``op`` of ``malloc`` or ``free`` (``name``)."""
    from hypa.runtime.emulator.device_heap import FREE, MALLOC

    b = wf.b
    rets, argv = call_params(op)
    cp = wf.prog.call_params
    want = 1 if name == "malloc" else 0
    if len(argv) != 1 or argv[0] not in cp or len(rets) != want or any(r not in cp for r in rets):
        raise LoweringError(f"call to '{name}' must pass one .param argument"
                            + (" and one .param return value" if want else " and no return value"))
    lanes = wf.executing_lanes(op)
    arg = access(wf, e.instr_id, "cparam", wf.splat(cp[argv[0]].offset, i64), 64, lanes, None, "cparam")
    inp = e.entry_alloca(ivec(64))
    out = e.entry_alloca(ivec(64))
    b.store(arg, inp)
    b.store(ir.Constant(ivec(64), None), out)
    bits = b.zext(wf.mask_to_i32(lanes), i64)
    rslot = e.entry_alloca(i64)
    b.store(ir.Constant(i64, 0), rslot)
    fnp = wf.ctx_word(abi.CTX_HEAP)
    fty = ir.FunctionType(i64, [i64] * 5)
    with b.if_then(b.icmp_unsigned("!=", bits, ir.Constant(i64, 0))):
        r = b.call(b.inttoptr(fnp, fty.as_pointer()),
                   [b.ptrtoint(wf.ctx, i64), ir.Constant(i64, MALLOC if want else FREE), bits,
                    b.ptrtoint(inp, i64), b.ptrtoint(out, i64)])
        b.store(r, rslot)
    r = b.load(rslot, typ=i64)
    lane = b.trunc(b.sub(r, ir.Constant(i64, 1)), i32)
    bad = b.and_(b.icmp_unsigned("==", wf.lane_ids, wf.splat_value(lane)),
                 wf.splat_value(b.icmp_unsigned("!=", r, ir.Constant(i64, 0))))
    wf.error_if(e.instr_id, bad, abi.ERR_HEAP, arg)
    if want:
        access(wf, e.instr_id, "cparam", wf.splat(cp[rets[0]].offset, i64), 64, lanes, b.load(out, typ=ivec(64)), "cparam")
