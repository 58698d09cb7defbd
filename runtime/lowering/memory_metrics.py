"""The counters of ``--memory-metrics``: for each memory instruction the program marked
(``KernelProgram.mem_ops``), the warp-level requests, and the 32-byte sectors and 128-byte
lines (global) or the wavefronts and their ideal number (shared) that one access touches.

They are computed in the generated code from the lanes' addresses, by two helper
functions made once per module: ``hypa_distinct`` (distinct values among the active
lanes) and ``hypa_wavefronts`` (the most distinct words any of the 32 banks delivers).

With a trace buffer in the context (``CTX_TRACE``, the timing estimate's cache model,
runtime/cache_model.py) a global access also appends its distinct sectors to it
(``hypa_trace``), set-sampled by a hash of the 128-byte line so that a long stream keeps a
fixed share of the lines, each with every access to it (``hypa_trace_thin`` raises the
sampling level when the buffer is full).  Atomics are kept whatever the sampling: the
number of atomics to one address decides how long the L2 serialises them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

from hypa.passes.slice import address_operand_index, memory_effect
from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import InstructionOp
from hypa.ptxdialect.operands import parse_int_immediate

from .. import abi
from .emitter import Emitter
from .function import WarpFunction
from .irbuild import Loop, broadcast, each_lane, helper_function, lowest_lane
from .types import LANES, i1, i32, i64, ivec, ptr

#: multiplier of the line hash that picks the sampled lines (Fibonacci hashing)
_HASH = 0x9E3779B97F4A7C15 - (1 << 64)


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
    if space in ("global", "generic"):
        _emit_trace(wf, op, addr, bits, is_shared if space == "global" else _not_global(wf, addr, bits), slot)


def trace_kind(op: InstructionOp) -> int:
    """The trace record kind of a global access (``abi.TRACE_*``): atomics are performed at
    L2, stores write through L1, ``.cg``/``.cv``/``.volatile`` loads bypass it."""
    name = op.spec.name
    if name.startswith(("atom", "red")):
        return abi.TRACE_ATOMIC
    reads, writes = memory_effect(op)
    if writes and name != "cp.async":
        return abi.TRACE_STORE
    if any(m in op.modifiers for m in (".cg", ".cv", ".volatile")):
        return abi.TRACE_LOAD_L2
    return abi.TRACE_LOAD


def _not_global(wf: WarpFunction, addr: ir.Value, bits: ir.Value) -> ir.Value:
    """Whether a generic access (by its lowest active lane) is not to global memory: the
    shared, local, constant and parameter windows are below the first global window."""
    b = wf.b
    lane0 = lowest_lane(b, wf.module, bits)
    a0 = b.extract_element(addr, b.and_(lane0, ir.Constant(i32, 31)))
    win = b.lshr(a0, ir.Constant(i64, abi.WINDOW_SHIFT))
    return b.and_(b.icmp_unsigned("!=", win, ir.Constant(i64, 0)),
                  b.icmp_unsigned("<", win, ir.Constant(i64, abi.WIN_FIRST_GLOBAL)))


def _emit_trace(wf: WarpFunction, op: InstructionOp, addr: ir.Value, bits: ir.Value, skip: ir.Value, slot: int) -> None:
    """Append this access's distinct sectors to the trace (when the context has one)."""
    b = wf.b
    cta = wf.ctx_word(abi.CTX_CTA_LINEAR)
    warp_uid = b.add(b.mul(cta, wf.ctx_word(abi.CTX_NWARPS)), b.zext(wf.warp, i64))
    info = b.or_(warp_uid, ir.Constant(i64, (slot << 32) | (trace_kind(op) << 48)))
    lanes = b.select(skip, ir.Constant(i32, 0), bits)
    b.call(trace_function(wf.module), [wf.ctx, addr, lanes, info])


def _line_kept(b: ir.IRBuilder, sector: ir.Value, shift: ir.Value) -> ir.Value:
    """Whether the sampling at level ``shift`` keeps the 128-byte line of ``sector``."""
    h = b.lshr(b.mul(b.lshr(sector, ir.Constant(i64, 2)), ir.Constant(i64, _HASH)), ir.Constant(i64, 32))
    m = b.sub(b.shl(ir.Constant(i64, 1), shift), ir.Constant(i64, 1))
    return b.icmp_unsigned("==", b.and_(h, m), ir.Constant(i64, 0))


def _is_atomic(b: ir.IRBuilder, info: ir.Value) -> ir.Value:
    """Atomics are traced whatever the sampling (their per-address counts give the L2's
    serialisation); those of lines the sampling drops are marked ``TRACE_UNSAMPLED``."""
    kind = b.and_(b.lshr(info, ir.Constant(i64, 48)), ir.Constant(i64, 0xFF))
    return b.icmp_unsigned("==", kind, ir.Constant(i64, abi.TRACE_ATOMIC))


def _mark_unsampled(b: ir.IRBuilder, info: ir.Value, line_in: ir.Value) -> ir.Value:
    return b.select(line_in, info, b.or_(info, ir.Constant(i64, abi.TRACE_UNSAMPLED)))


def popcount_function(module: ir.Module) -> ir.Function:
    """``llvm.ctpop.i32``, declared once per module."""
    return (module.globals.get("llvm.ctpop.i32")
            or ir.Function(module, ir.FunctionType(i32, [i32]), "llvm.ctpop.i32"))


def _ctx_slot(b: ir.IRBuilder, ctx: ir.Value, index: int) -> ir.Value:
    return b.gep(ctx, [ir.Constant(i64, index)], source_etype=i64)


def trace_thin_function(module: ir.Module) -> ir.Function:
    """``void hypa_trace_thin(ctx)``: raise the sampling level by one and keep, in order,
    the records whose line the new level keeps (about half)."""
    f, new = helper_function(module, "hypa_trace_thin", ir.VoidType(), [ptr])
    if not new:
        return f
    (ctx,) = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    buf = b.inttoptr(b.load(_ctx_slot(b, ctx, abi.CTX_TRACE), typ=i64), ptr)
    n = b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_LEN), typ=i64)
    shift = b.add(b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_SHIFT), typ=i64), ir.Constant(i64, 1))
    kept = b.alloca(i64)
    b.store(ir.Constant(i64, 0), kept)
    loop = Loop(b, ir.Constant(i64, 0), n, "rec")
    src = b.gep(buf, [b.mul(loop.i, ir.Constant(i64, 2))], source_etype=i64)
    sector = b.load(src, typ=i64)
    info = b.load(b.gep(src, [ir.Constant(i64, 1)], source_etype=i64), typ=i64)
    line_in = _line_kept(b, sector, shift)
    with b.if_then(b.or_(line_in, _is_atomic(b, info))):
        j = b.load(kept, typ=i64)
        dst = b.gep(buf, [b.mul(j, ir.Constant(i64, 2))], source_etype=i64)
        b.store(sector, dst)
        b.store(_mark_unsampled(b, info, line_in), b.gep(dst, [ir.Constant(i64, 1)], source_etype=i64))
        b.store(b.add(j, ir.Constant(i64, 1)), kept)
    loop.close()
    b.store(b.load(kept, typ=i64), _ctx_slot(b, ctx, abi.CTX_TRACE_LEN))
    b.store(shift, _ctx_slot(b, ctx, abi.CTX_TRACE_SHIFT))
    b.ret_void()
    return f


def trace_function(module: ir.Module) -> ir.Function:
    """``void hypa_trace(ctx, <32 x i64> address, i32 mask, i64 info)``: append a record per
    distinct sector of the masked lanes whose line the sampling keeps; a full buffer is
    thinned first (at most 48 levels: past that, records are dropped)."""
    f, new = helper_function(module, "hypa_trace", ir.VoidType(), [ptr, ivec(64), i32, i64])
    if not new:
        return f
    ctx, address, mask, info = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    sector = b.lshr(address, broadcast(b, ir.Constant(i64, 5)))
    words = b.lshr(address, broadcast(b, ir.Constant(i64, 2)))
    body = f.append_basic_block("traced")
    done = f.append_basic_block("done")
    word = b.load(_ctx_slot(b, ctx, abi.CTX_TRACE), typ=i64)
    b.cbranch(b.icmp_unsigned("==", word, ir.Constant(i64, 0)), done, body)
    b.position_at_end(body)
    buf = b.inttoptr(word, ptr)
    thin = trace_thin_function(module)
    # the first record this access keeps carries TRACE_FIRST: the replay groups a request's
    # sectors by it (a warp waits for the slowest of them)
    first = b.alloca(i64)
    b.store(ir.Constant(i64, abi.TRACE_FIRST), first)

    def lane(b: ir.IRBuilder, i: ir.Value) -> None:
        s = b.extract_element(sector, i)
        with b.if_then(_first_of_its_value(b, sector, mask, i)):
            lenp = _ctx_slot(b, ctx, abi.CTX_TRACE_LEN)
            shiftp = _ctx_slot(b, ctx, abi.CTX_TRACE_SHIFT)
            full = b.icmp_unsigned(">=", b.load(lenp, typ=i64), b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_CAP), typ=i64))
            can_thin = b.icmp_unsigned("<", b.load(shiftp, typ=i64), ir.Constant(i64, 48))
            with b.if_then(b.and_(full, can_thin)):
                b.call(thin, [ctx])
            n = b.load(lenp, typ=i64)
            room = b.icmp_unsigned("<", n, b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_CAP), typ=i64))
            line_in = _line_kept(b, s, b.load(shiftp, typ=i64))
            # the lanes on the same 4-byte word as this sector's first lane (an atomic's
            # operations on one address, which the L2 performs one after the other)
            same = b.bitcast(b.icmp_unsigned("==", words, broadcast(b, b.extract_element(words, i))), i32)
            lanes = b.call(popcount_function(module), [b.and_(same, mask)])
            atomic = _is_atomic(b, info)
            with b.if_then(atomic):  # counted even where the buffer has no room left
                for word, add in ((abi.CTX_TRACE_ATOMICS, ir.Constant(i64, 1)),
                                  (abi.CTX_TRACE_ATOMIC_EXTRA, b.sub(b.zext(lanes, i64), ir.Constant(i64, 1)))):
                    p = _ctx_slot(b, ctx, word)
                    b.store(b.add(b.load(p, typ=i64), add), p)
            with b.if_then(b.and_(room, b.or_(line_in, atomic))):
                dst = b.gep(buf, [b.mul(n, ir.Constant(i64, 2))], source_etype=i64)
                b.store(s, dst)
                rec = b.or_(b.or_(_mark_unsampled(b, info, line_in),
                                  b.shl(b.zext(lanes, i64), ir.Constant(i64, abi.TRACE_LANES_SHIFT))),
                            b.load(first, typ=i64))
                b.store(ir.Constant(i64, 0), first)
                b.store(rec, b.gep(dst, [ir.Constant(i64, 1)], source_etype=i64))
                b.store(b.add(n, ir.Constant(i64, 1)), lenp)

    each_lane(b, module, mask, lane)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return f


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
