"""The counters of ``--memory-metrics``: for each memory instruction the program marked
(``KernelProgram.mem_ops``), the warp-level requests, and the 32-byte sectors and 128-byte
lines (global) or the wavefronts and their ideal number (shared) that one access touches.

They are computed in the generated code from the lanes' addresses, by two helper
functions made once per module: ``hypa_distinct`` (distinct values among the active
lanes) and ``hypa_wavefronts`` (the most distinct words any of the 32 banks delivers).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

from hypa.passes.slice import address_operand_index
from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import InstructionOp
from hypa.ptxdialect.operands import parse_int_immediate

from .. import abi
from .emitter import Emitter
from .function import WarpFunction
from .irbuild import Loop, broadcast, helper_function, lowest_lane
from .types import LANES, i1, i32, i64, ivec


def emit_memory_metrics(wf: WarpFunction, op: InstructionOp, slot: int) -> None:
    """Requests, sectors and lines (global) or wavefronts (shared) of one warp-level access,
    added to the counters of memory slot ``slot``."""
    prog = wf.prog
    b = wf.b
    e = Emitter(wf, op)
    name = op.spec.name
    if name == "cp.async":
        ai = 1
        nbytes = _imm_or(e, 2, 16)
    else:
        ai = address_operand_index(op)
        if ai is None:
            return
        t = e.types[-1] if e.types else ".b32"
        width = next((int(m[2:]) for m in e.mods if m in (".v2", ".v4", ".v8")), 1)
        nbytes = max(1, isa.TYPE_BITS.get(t, 32) // 8) * width
    kind, addr, _base = e.address(ai)
    if kind in ("param", "cparam"):
        return
    space = "global" if name == "cp.async" else e.space()
    mask = e.exec_mask
    bits = wf.mask_to_i32(mask)
    base = (abi.BLOCK_COUNTERS * prog.num_blocks + len(prog.pred_counters) + abi.MEM_COUNTERS * slot)
    any_active = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
    wf.counter_add(base, b.zext(any_active, i64))
    if space == "generic":
        # classify by the window of the first active lane
        lane0 = lowest_lane(b, wf.module, bits)
        a0 = b.extract_element(addr, b.and_(lane0, ir.Constant(i32, 31)))
        is_shared = b.icmp_unsigned("==", b.lshr(a0, ir.Constant(i64, abi.WINDOW_SHIFT)), ir.Constant(i64, abi.WIN_SHARED))
    else:
        is_shared = ir.Constant(i1, 1 if space.startswith("shared") else 0)
    distinct = distinct_function(wf.module)
    waves = wavefronts_function(wf.module)
    sectors = b.call(distinct, [b.lshr(addr, wf.splat(5, i64)), bits])
    lines = b.call(distinct, [b.lshr(addr, wf.splat(7, i64)), bits])
    shift = max(0, nbytes.bit_length() - 1)
    off = b.and_(addr, wf.splat(0xFFFFFFFF, i64))
    chunks = b.lshr(off, wf.splat(shift, i64))
    words = b.lshr(off, wf.splat(2, i64))
    wv = b.call(waves, [chunks, words, bits, ir.Constant(i32, max(1, nbytes // 4))])
    uniq = b.call(distinct, [chunks, bits])
    ideal = b.udiv(b.add(b.mul(uniq, ir.Constant(i32, nbytes)), ir.Constant(i32, 127)), ir.Constant(i32, 128))
    ideal = b.select(any_active, b.select(b.icmp_unsigned("<", ideal, ir.Constant(i32, 1)), ir.Constant(i32, 1), ideal), ir.Constant(i32, 0))
    zero = ir.Constant(i32, 0)
    wf.counter_add(base + 1, b.zext(b.select(is_shared, zero, sectors), i64))
    wf.counter_add(base + 2, b.zext(b.select(is_shared, zero, lines), i64))
    wf.counter_add(base + 3, b.zext(b.select(is_shared, wv, zero), i64))
    wf.counter_add(base + 4, b.zext(b.select(is_shared, ideal, zero), i64))


def _imm_or(e: Emitter, k: int, default: int) -> int:
    """Operand ``k`` if it is an integer immediate, else ``default``."""
    if k < len(e.args) and e.args[k][0] == "imm":
        return parse_int_immediate(e.args[k][1])
    return default


def _first_of_its_value(b: ir.IRBuilder, v: ir.Value, mask: ir.Value, i: ir.Value) -> ir.Value:
    """Whether lane ``i`` is the lowest lane of ``mask`` whose ``v`` equals lane ``i``'s."""
    eq = b.bitcast(b.icmp_unsigned("==", v, broadcast(b, b.extract_element(v, i))), i32)
    below = b.sub(b.shl(ir.Constant(i32, 1), i), ir.Constant(i32, 1))
    return b.icmp_unsigned("==", b.and_(b.and_(eq, mask), below), ir.Constant(i32, 0))


@contextmanager
def _each_lane(b: ir.IRBuilder, mask: ir.Value) -> Iterator[ir.Value]:
    """The body runs for each lane ``i`` whose bit is set in ``mask`` (i32), lowest first."""
    loop = Loop(b, ir.Constant(i32, 0), ir.Constant(i32, LANES), "i")
    with b.if_then(b.trunc(b.lshr(mask, loop.i), i1)):
        yield loop.i
    loop.close()


def distinct_function(module: ir.Module) -> ir.Function:
    """``i32 hypa_distinct(<32 x i64> v, i32 mask)``: distinct values among the masked lanes."""
    f, new = helper_function(module, "hypa_distinct", i32, [ivec(64), i32])
    if not new:
        return f
    v, mask = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    cnt = b.alloca(i32)
    b.store(ir.Constant(i32, 0), cnt)
    with _each_lane(b, mask) as i:
        first = _first_of_its_value(b, v, mask, i)
        b.store(b.add(b.load(cnt, typ=i32), b.zext(first, i32)), cnt)
    b.ret(b.load(cnt, typ=i32))
    return f


def wavefronts_function(module: ir.Module) -> ir.Function:
    """``i32 hypa_wavefronts(<32 x i64> chunk, <32 x i64> word, i32 mask, i32 words)``:
    shared-memory wavefronts of a warp access: the most distinct 4-byte words any of
    the 32 banks must deliver (lanes reading the same chunk share it)."""
    f, new = helper_function(module, "hypa_wavefronts", i32, [ivec(64), ivec(64), i32, i32])
    if not new:
        return f
    chunk, word, mask, nwords = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    counts = b.alloca(i32, size=ir.Constant(i32, LANES))

    def slot(k):
        return b.gep(counts, [k if isinstance(k, ir.Value) else ir.Constant(i32, k)], source_etype=i32)

    for k in range(LANES):
        b.store(ir.Constant(i32, 0), slot(k))
    with _each_lane(b, mask) as i, b.if_then(_first_of_its_value(b, chunk, mask, i)):
        w0 = b.trunc(b.extract_element(word, i), i32)
        inner = Loop(b, ir.Constant(i32, 0), nwords, "j")
        bank = b.and_(b.add(w0, inner.i), ir.Constant(i32, 31))
        p = slot(bank)
        b.store(b.add(b.load(p, typ=i32), ir.Constant(i32, 1)), p)
        inner.close()
    mx = ir.Constant(i32, 0)
    for k in range(LANES):
        c = b.load(slot(k), typ=i32)
        mx = b.select(b.icmp_unsigned(">", c, mx), c, mx)
    b.ret(mx)
    return f
