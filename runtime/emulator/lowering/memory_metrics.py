"""The counters of ``--memory-metrics``: for each memory instruction the program marked
(``KernelProgram.mem_ops``), the warp-level requests, and the 32-byte sectors and 128-byte
lines (global and local) or the wavefronts and their ideal number (shared) that one access
touches.

They are computed in the generated code from the lanes' addresses, by helper functions
made once per module and called for the access's space only (a generic access branches on
the window of its lowest active lane): ``hypa_global_counts`` (distinct sectors and lines)
and ``hypa_shared_counts_<bytes>`` (wavefronts: the most distinct chunks any of the 32 banks
delivers; distinct chunks).  The estimate runs every access through them, so they avoid
loops over lanes: values within 64 of each other are a 64-bit bitmap (vector reductions,
ctpop), 32 lanes a constant stride apart have a closed form, and the rest are sorted (a
bitonic network in 16-, 32- or 64-bit lanes) and counted where the sorted values change.
The lane loops ``hypa_distinct`` and ``hypa_wavefronts`` remain for misaligned shared
accesses.

With a trace buffer in the context (``CTX_TRACE``, the timing estimate's cache model,
runtime/models/cache_model.py) a global access also appends its distinct sectors to it
(``hypa_trace``: a record at the lowest lane of each sector, in lane order, found by
``hypa_first_lanes``), set-sampled by a hash of the 128-byte line so that a long stream
keeps a fixed share of the lines, each with every access to it (``hypa_trace_thin`` raises
the sampling level when the buffer is full).  Atomics are kept whatever the sampling: the
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

from ... import abi
from .emitter import Emitter
from .function import WarpFunction
from .irbuild import Loop, broadcast, each_lane, helper_function, lowest_lane
from .types import LANES, i1, i32, i64, ivec, ptr, vec

#: the sampling's line hash as a signed i64 constant
_HASH = abi.TRACE_LINE_HASH - (1 << 64)


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
        # classify by the window of the first active lane; only that space's counters are
        # computed (with no active lane either side adds zeros)
        lane0 = lowest_lane(b, wf.module, bits)
        a0 = b.extract_element(addr, b.and_(lane0, ir.Constant(i32, 31)))
        is_shared = b.icmp_unsigned("==", b.lshr(a0, ir.Constant(i64, abi.WINDOW_SHIFT)), ir.Constant(i64, abi.WIN_SHARED))
        with b.if_else(is_shared) as (shared, other):
            with shared:
                _count_shared(wf, addr, bits, any_active, nbytes, base)
            with other:
                _count_global(wf, addr, bits, base)
    elif space.startswith("shared"):
        _count_shared(wf, addr, bits, any_active, nbytes, base)
    elif space == "local":
        _count_local(wf, addr, bits, any_active, nbytes, base)
    else:
        _count_global(wf, addr, bits, base)
    if space == "global":
        _emit_trace(wf, op, addr, bits, ir.Constant(i1, 0), slot)
    elif space == "generic":
        _emit_trace(wf, op, addr, bits, _not_global(wf, addr, bits), slot)


def _count_global(wf: WarpFunction, addr: ir.Value, bits: ir.Value, base: int) -> None:
    """Add the sectors and lines of a global access to its slot's counters."""
    b = wf.b
    both = b.call(global_counts_function(wf.module), [addr, bits])
    wf.counter_add(base + 1, b.and_(both, ir.Constant(i64, 0xFFFFFFFF)))
    wf.counter_add(base + 2, b.lshr(both, ir.Constant(i64, 32)))


def _count_local(wf: WarpFunction, addr: ir.Value, bits: ir.Value, any_active: ir.Value, nbytes: int,
                 base: int) -> None:
    """Add the requests beyond the first, sectors and lines of a local access: a thread's
    local memory is interleaved with the warp's other threads a 32-bit word at a time (the
    CUDA C++ Programming Guide, "Local Memory"), so word ``w`` of lane ``l`` is at
    ``w * 128 + l * 4``: lanes on the same word touch one line, lanes on different words one
    line each.  A wider access is one request per word (what Nsight Compute counts for an
    ``STL.128``: 4), its words in lines of their own."""
    b = wf.b
    words = b.lshr(addr, wf.splat(2, i64))
    lane_bytes = b.zext(b.shl(wf.lane_ids, wf.splat(2, i32)), ivec(64))
    within = b.and_(addr, wf.splat(3, i64))
    pieces = max(1, nbytes // 4)
    for k in range(pieces):
        w = b.add(words, wf.splat(k, i64)) if k else words
        synth = b.or_(b.or_(b.shl(w, wf.splat(7, i64)), lane_bytes), within)
        _count_global(wf, synth, bits, base)
    if pieces > 1:
        wf.counter_add(base, b.mul(b.zext(any_active, i64), ir.Constant(i64, pieces - 1)))


def _count_shared(wf: WarpFunction, addr: ir.Value, bits: ir.Value, any_active: ir.Value, nbytes: int, base: int) -> None:
    """Add the wavefronts of a shared access and their ideal number (the distinct
    ``nbytes`` chunks in 128-byte wavefronts, at least one) to its slot's counters."""
    b = wf.b
    both = b.call(shared_counts_function(wf.module, nbytes), [addr, bits])
    if nbytes < 4:
        # lanes on one 32-bit word share it whatever bytes they take (the programming
        # guide's bank rule): a byte or half access's wavefronts are those of its words
        words = b.call(shared_counts_function(wf.module, 4), [b.and_(addr, wf.splat(~3, i64)), bits])
        wv = b.and_(words, ir.Constant(i64, 0xFFFFFFFF))
    else:
        wv = b.and_(both, ir.Constant(i64, 0xFFFFFFFF))
    uniq = b.trunc(b.lshr(both, ir.Constant(i64, 32)), i32)
    ideal = b.udiv(b.add(b.mul(uniq, ir.Constant(i32, nbytes)), ir.Constant(i32, 127)), ir.Constant(i32, 128))
    ideal = b.select(any_active, b.select(b.icmp_unsigned("<", ideal, ir.Constant(i32, 1)), ir.Constant(i32, 1), ideal), ir.Constant(i32, 0))
    wf.counter_add(base + 3, wv)
    wf.counter_add(base + 4, b.zext(ideal, i64))


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
    traced = b.icmp_unsigned("!=", wf.ctx_word(abi.CTX_TRACE), ir.Constant(i64, 0))
    with b.if_then(b.and_(traced, b.not_(skip))):  # no call without a trace buffer
        cta = wf.ctx_word(abi.CTX_CTA_LINEAR)
        warp_uid = b.add(b.mul(cta, wf.ctx_word(abi.CTX_NWARPS)), b.zext(wf.warp, i64))
        info = b.or_(warp_uid, ir.Constant(i64, (slot << 32) | (trace_kind(op) << 48)))
        b.call(trace_function(wf.module), [wf.ctx, addr, bits, info])


def _line_kept(b: ir.IRBuilder, sector: ir.Value, shift: ir.Value) -> ir.Value:
    """Whether the sampling at level ``shift`` keeps the 128-byte line of ``sector`` (a
    scalar, or each lane of a vector of sectors)."""
    t = sector.type

    def c(x: int) -> ir.Constant:
        return ir.Constant(t, x)

    h = b.lshr(b.mul(b.lshr(sector, c(2)), c(_HASH)), c(32))
    m = b.sub(b.shl(ir.Constant(i64, 1), shift), ir.Constant(i64, 1))
    return b.icmp_unsigned("==", b.and_(h, m if t == i64 else broadcast(b, m)), c(0))


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
    b.call(window_function(module), [ctx, address, mask, info])
    buf = b.inttoptr(word, ptr)
    thin = trace_thin_function(module)
    # the first record this access keeps carries TRACE_FIRST: the replay groups a request's
    # sectors by it (a warp waits for the slowest of them)
    first = b.alloca(i64)
    b.store(ir.Constant(i64, abi.TRACE_FIRST), first)

    def lane(b: ir.IRBuilder, i: ir.Value) -> None:
        s = b.extract_element(sector, i)
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

    # one record per distinct sector, at the lowest lane that touches it, in lane order.
    # A sector whose line the sampling drops does nothing, unless the access is an atomic
    # (counted whatever the sampling) or it finds the buffer full (it thins it): with room
    # for more than 32 records, only lanes on kept lines are looked at
    kept = b.bitcast(_line_kept(b, sector, b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_SHIFT), typ=i64)), i32)
    near_full = b.icmp_unsigned(">=", b.add(b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_LEN), typ=i64), ir.Constant(i64, LANES)),
                                b.load(_ctx_slot(b, ctx, abi.CTX_TRACE_CAP), typ=i64))
    lanes = b.select(b.or_(_is_atomic(b, info), near_full), mask, b.and_(mask, kept))
    with b.if_then(b.icmp_unsigned("!=", lanes, ir.Constant(i32, 0))):
        each_lane(b, module, b.call(first_lanes_function(module), [sector, lanes]), lane)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return f


def window_function(module: ir.Module) -> ir.Function:
    """``void hypa_trace_window(ctx, <32 x i64> address, i32 mask, i64 info)``: where the
    running CTA is one of the L1 window's (``CTX_L1_WINDOW``), append a record per distinct
    sector of the masked lanes -- every line, no sampling -- while the window's buffer has
    room."""
    f, new = helper_function(module, "hypa_trace_window", ir.VoidType(), [ptr, ivec(64), i32, i64])
    if not new:
        return f
    ctx, address, mask, info = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    body = f.append_basic_block("window")
    done = f.append_basic_block("done")

    def word(index: int) -> ir.Value:
        return b.load(_ctx_slot(b, ctx, index), typ=i64)

    stride = b.select(b.icmp_unsigned("==", word(abi.CTX_L1_WINDOW_STRIDE), ir.Constant(i64, 0)),
                      ir.Constant(i64, 1), word(abi.CTX_L1_WINDOW_STRIDE))
    cta = word(abi.CTX_CTA_LINEAR)
    inside = b.and_(b.icmp_unsigned("!=", word(abi.CTX_L1_WINDOW), ir.Constant(i64, 0)),
                    b.and_(b.icmp_unsigned("==", b.urem(cta, stride), ir.Constant(i64, 0)),
                           b.icmp_unsigned("<", b.udiv(cta, stride), word(abi.CTX_L1_WINDOW_CTAS))))
    b.cbranch(b.and_(inside, b.icmp_unsigned("<", word(abi.CTX_L1_WINDOW_LEN), word(abi.CTX_L1_WINDOW_CAP))),
              body, done)
    b.position_at_end(body)
    buf = b.inttoptr(word(abi.CTX_L1_WINDOW), ptr)
    sector = b.lshr(address, broadcast(b, ir.Constant(i64, 5)))
    first = b.alloca(i64)
    b.store(ir.Constant(i64, abi.TRACE_FIRST), first)

    def lane(b: ir.IRBuilder, i: ir.Value) -> None:
        lenp = _ctx_slot(b, ctx, abi.CTX_L1_WINDOW_LEN)
        n = b.load(lenp, typ=i64)
        with b.if_then(b.icmp_unsigned("<", n, b.load(_ctx_slot(b, ctx, abi.CTX_L1_WINDOW_CAP), typ=i64))):
            dst = b.gep(buf, [b.mul(n, ir.Constant(i64, 2))], source_etype=i64)
            b.store(b.extract_element(sector, i), dst)
            b.store(b.or_(info, b.load(first, typ=i64)), b.gep(dst, [ir.Constant(i64, 1)], source_etype=i64))
            b.store(ir.Constant(i64, 0), first)
            b.store(b.add(n, ir.Constant(i64, 1)), lenp)

    each_lane(b, module, b.call(first_lanes_function(module), [sector, mask]), lane)
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


# -- without lane loops ---------------------------------------------------------------------
# Most warp accesses touch a narrow range: when the active lanes' values (sectors, shared
# chunks) lie within 64 of each other, the set of distinct values is a 64-bit bitmap, made
# with vector reductions and counted with ctpop.  Wider accesses sort the 32 values
# (a bitonic network) and count where the sorted values change.  Neither has a branch per
# lane; ``hypa_distinct`` and ``hypa_wavefronts`` remain for misaligned shared accesses.

#: the ``i64`` all ones, which inactive lanes take before a sort (they sort last)
_NONE = -1


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """The intrinsic ``name``, declared once per module."""
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(ret, args), name)  # type: ignore[return-value]


def _reduce(b: ir.IRBuilder, op: str, v: ir.Value) -> ir.Value:
    """``llvm.vector.reduce.<op>`` of the integer vector ``v``."""
    vt = v.type
    name = f"llvm.vector.reduce.{op}.v{vt.count}i{vt.element.width}"
    return b.call(_declare(b.module, name, vt.element, [vt]), [v])


def _splat(t: ir.Type, value: int) -> ir.Constant:
    return ir.Constant(vec(t), value)


def _span(b: ir.IRBuilder, v: ir.Value, active: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The least and the greatest of the active lanes of ``v`` (<32 x i64>); with no lane
    active, all ones and zero."""
    return (_reduce(b, "umin", b.select(active, v, _splat(i64, _NONE))),
            _reduce(b, "umax", b.select(active, v, _splat(i64, 0))))


def _bitmap(b: ir.IRBuilder, v: ir.Value, active: ir.Value, lo: ir.Value) -> ir.Value:
    """Bit ``x - lo`` for every value ``x`` of an active lane (all within 64 of ``lo``)."""
    one = b.shl(_splat(i64, 1), b.and_(b.sub(v, broadcast(b, lo)), _splat(i64, 63)))
    return _reduce(b, "or", b.select(active, one, _splat(i64, 0)))


def _ctpop64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.call(_declare(b.module, "llvm.ctpop.i64", i64, [i64]), [x])


def _sort(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The 32 lanes of ``v`` (<32 x iN>) in ascending order: a bitonic sorting network,
    15 compare-exchange steps of min, max and a constant blend."""
    t = v.type
    umin, umax = (_declare(b.module, f"llvm.{op}.v{LANES}i{t.element.width}", t, [t, t]) for op in ("umin", "umax"))
    k = 2
    while k <= LANES:
        j = k // 2
        while j:
            other = b.shuffle_vector(v, v, ir.Constant(vec(i32), [i ^ j for i in range(LANES)]))
            low = ir.Constant(vec(i1), [int(((i & k) == 0) == (i < i ^ j)) for i in range(LANES)])
            v = b.select(low, b.call(umin, [v, other]), b.call(umax, [v, other]))
            j //= 2
        k *= 2
    return v


def _sort_active(b: ir.IRBuilder, v: ir.Value, mask: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``v``'s active lanes sorted, the others (all ones) after them; and which sorted lanes
    are active ones (the first ``popcount(mask)``), <32 x i1>."""
    s = _sort(b, b.select(b.bitcast(mask, vec(i1)), v, _splat(v.type.element, _NONE)))
    n = b.call(popcount_function(b.module), [mask])
    return s, b.icmp_unsigned("<", ir.Constant(vec(i32), list(range(LANES))), broadcast(b, n))


#: the lane widths a sort can take: the narrower, the fewer registers hold the 32 lanes
_WIDTHS = (16, 32, 64)


def _by_width(b: ir.IRBuilder, span: ir.Value, spare: int, emit, beyond: ir.Block | None = None) -> None:
    """``emit(width)`` (which returns from the function) for the narrowest lane width
    that holds ``span`` (i64) with ``spare`` bits to spare; past 32 bits, 64 or a branch to
    ``beyond``."""
    for width in _WIDTHS:
        if width == 64:
            if beyond is None:
                emit(width)
            else:
                b.branch(beyond)
            return
        yes, no = (b.function.append_basic_block(f"{x}{width}") for x in ("i", "over"))
        b.cbranch(b.icmp_unsigned("<", span, ir.Constant(i64, 1 << (width - spare))), yes, no)
        b.position_at_end(yes)
        emit(width)
        b.position_at_end(no)


def _stride(b: ir.IRBuilder, v: ir.Value, mask: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Whether all 32 lanes are active and ``v`` steps by the same nonzero ``d`` from each
    lane to the next (a strided access: 32 distinct values), and ``d`` (i64)."""
    d = b.sub(b.extract_element(v, ir.Constant(i32, 1)), b.extract_element(v, ir.Constant(i32, 0)))
    before = b.shuffle_vector(v, v, ir.Constant(vec(i32), [0] + list(range(LANES - 1))))
    steps = b.bitcast(b.icmp_unsigned("==", b.sub(v, before), broadcast(b, d)), i32)
    full = b.icmp_unsigned("==", b.and_(mask, b.or_(steps, ir.Constant(i32, 1))), ir.Constant(i32, -1))
    return b.and_(full, b.icmp_unsigned("!=", d, ir.Constant(i64, 0))), d


def _lanes_of(b: ir.IRBuilder, v: ir.Value, width: int) -> ir.Value:
    """``v`` (<32 x i64>, each lane below 2**width) as <32 x i{width}>."""
    return v if width == 64 else b.trunc(v, ivec(width))


def _previous(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """Lane ``i - 1`` of ``v`` in lane ``i`` (all ones in lane 0)."""
    return b.shuffle_vector(v, _splat(v.type.element, _NONE), ir.Constant(vec(i32), [LANES] + list(range(LANES - 1))))


def _starts(b: ir.IRBuilder, x: ir.Value, valid: ir.Value) -> ir.Value:
    """The ``valid`` lanes of the sorted ``x`` where a new value begins."""
    return b.and_(valid, b.icmp_unsigned("!=", x, _previous(b, x)))


def _count(b: ir.IRBuilder, lanes: ir.Value) -> ir.Value:
    """The set lanes of a <32 x i1>, as i64."""
    return b.zext(b.call(popcount_function(b.module), [b.bitcast(lanes, i32)]), i64)


def _pack(b: ir.IRBuilder, low: ir.Value, high: ir.Value) -> ir.Value:
    """``low | high << 32`` (both below 2**32)."""
    low, high = (x if x.type == i64 else b.zext(x, i64) for x in (low, high))
    return b.or_(low, b.shl(high, ir.Constant(i64, 32)))


def global_counts_function(module: ir.Module) -> ir.Function:
    """``i64 hypa_global_counts(<32 x i64> address, i32 mask)``: the distinct 32-byte sectors
    (low half) and 128-byte lines (high half) of the masked lanes.  When the sectors lie
    within 64 of the first sector of the lowest line, both are ctpops of one bitmap (the
    lines': each aligned group of 4 bits OR-ed into its lowest); else the sorted sectors
    count both (sorted sectors are sorted lines)."""
    f, new = helper_function(module, "hypa_global_counts", i64, [ivec(64), i32])
    if not new:
        return f
    address, mask = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    active = b.bitcast(mask, vec(i1))
    sector = b.lshr(address, _splat(i64, 5))
    lo, hi = _span(b, sector, active)
    start = b.and_(lo, ir.Constant(i64, ~3))  # no lane active: the span is 4
    fast, slow = f.append_basic_block("narrow"), f.append_basic_block("wide")
    b.cbranch(b.icmp_unsigned("<", b.sub(hi, start), ir.Constant(i64, 64)), fast, slow)
    b.position_at_end(fast)
    bm = _bitmap(b, sector, active, start)
    folded = b.or_(b.or_(bm, b.lshr(bm, ir.Constant(i64, 1))), b.or_(b.lshr(bm, ir.Constant(i64, 2)), b.lshr(bm, ir.Constant(i64, 3))))
    b.ret(_pack(b, _ctpop64(b, bm), _ctpop64(b, b.and_(folded, ir.Constant(i64, 0x1111111111111111)))))
    b.position_at_end(slow)
    # 32 sectors 4 or more apart in either direction: 32 lines
    strided, d = _stride(b, sector, mask)
    apart = b.icmp_unsigned(">", b.add(d, ir.Constant(i64, 3)), ir.Constant(i64, 6))
    spread, sort = f.append_basic_block("strided"), f.append_basic_block("sort")
    b.cbranch(b.and_(strided, apart), spread, sort)
    b.position_at_end(spread)
    b.ret(_pack(b, ir.Constant(i64, LANES), ir.Constant(i64, LANES)))
    b.position_at_end(sort)
    rel = b.sub(sector, broadcast(b, start))

    def counts(width: int) -> None:
        s, valid = _sort_active(b, _lanes_of(b, rel, width), mask)
        new_sector = _starts(b, s, valid)
        new_line = _starts(b, b.lshr(s, _splat(s.type.element, 2)), valid)
        b.ret(_pack(b, _count(b, new_sector), _count(b, new_line)))

    _by_width(b, b.sub(hi, start), 0, counts)
    return f


def _halves(b: ir.IRBuilder, v: ir.Value, n: int, pairs: bool) -> ir.Value:
    """The sums of the ``n``-element vector ``v``'s adjacent pairs (``pairs``) or of its two
    halves, element by element: ``n // 2`` elements."""
    idx = [(2 * k, 2 * k + 1) if pairs else (k, k + n // 2) for k in range(n // 2)]
    pick = [b.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, n // 2), [p[j] for p in idx])) for j in (0, 1)]
    return b.add(pick[0], pick[1])


def _segment_sums(b: ir.IRBuilder, v: ir.Value, head: ir.Value) -> ir.Value:
    """Inclusive running sums of ``v`` (<32 x i32>) restarting at each ``head`` lane
    (<32 x i1>): five shift-and-add steps."""
    d = 1
    while d < LANES:
        idx = ir.Constant(vec(i32), [i - d if i >= d else LANES for i in range(LANES)])
        v = b.select(head, v, b.add(v, b.shuffle_vector(v, _splat(i32, 0), idx)))
        head = b.or_(head, b.shuffle_vector(head, _splat(i1, 1), idx))
        d *= 2
    return v


def shared_counts_function(module: ir.Module, nbytes: int) -> ir.Function:
    """``i64 hypa_shared_counts_<nbytes>(<32 x i64> address, i32 mask)``: the wavefronts of
    an ``nbytes``-wide shared access (low half) and its distinct chunks (high half), as
    ``hypa_wavefronts`` and ``hypa_distinct`` count them: a chunk of ``w`` words takes ``w``
    banks, and chunks ``32 / w`` apart share them (a word's narrower chunks share its bank).
    When each lane's word is its chunk's first (aligned), the distinct chunks are a bitmap
    (within 64 of the lowest one's word: its bits summed per bank) or sorted by bank
    (running counts per bank, the chunks' span below 2**27); other accesses take the lane
    loops."""
    f, new = helper_function(module, f"hypa_shared_counts_{nbytes}", i64, [ivec(64), i32])
    if not new:
        return f
    address, mask = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    shift = max(0, nbytes.bit_length() - 1)
    nwords = max(1, nbytes // 4)
    off = b.and_(address, _splat(i64, 0xFFFFFFFF))
    chunks = b.lshr(off, _splat(i64, shift))
    loops = f.append_basic_block("loops")
    if nbytes & (nbytes - 1) == 0 and nwords <= LANES:
        active = b.bitcast(mask, vec(i1))
        if nbytes > 4:  # a lane's word is its chunk's first unless the address is misaligned
            stray = _reduce(b, "or", b.select(active, b.and_(off, _splat(i64, nbytes - 4)), _splat(i64, 0)))
            choose = f.append_basic_block("aligned")
            b.cbranch(b.icmp_unsigned("==", stray, ir.Constant(i64, 0)), choose, loops)
            b.position_at_end(choose)
        if shift >= 2:
            # chunks d apart (the common tile access, d = 1, and the bank-conflict strides):
            # lanes i and j share banks when (i - j) d is a multiple of 32 / w, so
            # gcd(d, 32 / w) of every 32 / w lanes do
            strided, d = _stride(b, chunks, mask)
            spread, other = f.append_basic_block("strided"), f.append_basic_block("other")
            b.cbranch(strided, spread, other)
            b.position_at_end(spread)
            p = (LANES // nwords).bit_length() - 1
            tz = b.call(_declare(module, "llvm.cttz.i64", i64, [i64, i1]), [d, ir.Constant(i1, 1)])
            g = b.select(b.icmp_unsigned("<", tz, ir.Constant(i64, p)), tz, ir.Constant(i64, p))
            b.ret(_pack(b, b.shl(ir.Constant(i64, 1), b.add(g, ir.Constant(i64, 5 - p))), ir.Constant(i64, LANES)))
            b.position_at_end(other)
        per_word = 1 << max(0, 2 - shift)
        lo, hi = _span(b, chunks, active)
        start = b.and_(lo, ir.Constant(i64, ~(per_word - 1)))
        narrow = b.icmp_unsigned("<", b.sub(hi, start), ir.Constant(i64, 64))
        fast, sort = f.append_basic_block("narrow"), f.append_basic_block("wide")
        b.cbranch(narrow, fast, sort)
        b.position_at_end(fast)
        bm = _bitmap(b, chunks, active, start)
        if nbytes == 4:  # bits k and k + 32 share a bank
            pairs = b.icmp_unsigned("!=", b.and_(bm, b.lshr(bm, ir.Constant(i64, 32))), ir.Constant(i64, 0))
            some = b.icmp_unsigned("!=", bm, ir.Constant(i64, 0))
            b.ret(_pack(b, b.add(b.zext(pairs, i64), b.zext(some, i64)), _ctpop64(b, bm)))
        else:
            one, several = f.append_basic_block("one"), f.append_basic_block("several")
            b.cbranch(b.icmp_unsigned("==", lo, hi), one, several)  # a broadcast
            b.position_at_end(one)
            b.ret(_pack(b, ir.Constant(i64, 1), ir.Constant(i64, 1)))
            b.position_at_end(several)
            counts = b.zext(b.bitcast(bm, ir.VectorType(i1, 64)), ir.VectorType(ir.IntType(8), 64))
            n = 64
            for _ in range(max(0, 2 - shift)):  # per word
                counts, n = _halves(b, counts, n, True), n // 2
            while n > LANES // nwords:  # per bank
                counts, n = _halves(b, counts, n, False), n // 2
            b.ret(_pack(b, b.zext(_reduce(b, "umax", counts), i64), _ctpop64(b, bm)))
        b.position_at_end(sort)
        # key: the chunk's banks (its first word's bank / w) above the chunk
        group = b.lshr(b.and_(b.lshr(off, _splat(i64, 2)), _splat(i64, 31)), _splat(i64, nwords.bit_length() - 1))
        rel = b.sub(chunks, broadcast(b, lo))

        def sorted_counts(width: int) -> None:
            t = ir.IntType(width)
            s, valid = _sort_active(b, _lanes_of(b, b.or_(b.shl(group, _splat(i64, width - 5)), rel), width), mask)
            new_chunk = _starts(b, s, valid)
            g = b.lshr(s, _splat(t, width - 5))
            sums = _segment_sums(b, b.zext(new_chunk, vec(i32)), b.icmp_unsigned("!=", g, _previous(b, g)))
            b.ret(_pack(b, b.zext(_reduce(b, "umax", sums), i64), _count(b, new_chunk)))

        _by_width(b, b.sub(hi, lo), 5, sorted_counts, loops)
    else:
        b.branch(loops)
    b.position_at_end(loops)
    words = b.lshr(off, _splat(i64, 2))
    wv = b.call(wavefronts_function(module), [chunks, words, mask, ir.Constant(i32, nwords)])
    b.ret(_pack(b, wv, b.call(distinct_function(module), [chunks, mask])))
    return f


def first_lanes_function(module: ir.Module) -> ir.Function:
    """``i32 hypa_first_lanes(<32 x i64> v, i32 mask)``: the lanes of ``mask`` that are the
    lowest of ``mask`` with their value (``v`` below 2**59).  Within a span of 64, one
    compare per distinct value (found in a bitmap); else the values sorted with their lanes
    below them (``v << 5 | lane``): where the value changes is a first lane."""
    f, new = helper_function(module, "hypa_first_lanes", i32, [ivec(64), i32])
    if not new:
        return f
    v, mask = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    active = b.bitcast(mask, vec(i1))
    lo, hi = _span(b, v, active)  # no lane active: the span is 1, the bitmap empty
    fast, few, slow, walk, step, walked = (f.append_basic_block(x) for x in
                                           ("narrow", "few", "wide", "value", "value.body", "value.done"))
    b.cbranch(b.icmp_unsigned("<", b.sub(hi, lo), ir.Constant(i64, 64)), fast, slow)
    b.position_at_end(fast)
    # a compare per distinct value while there are few (a sort costs about 16)
    bm = _bitmap(b, v, active, lo)
    b.cbranch(b.icmp_unsigned("<=", _ctpop64(b, bm), ir.Constant(i64, 16)), few, slow)
    b.position_at_end(few)
    b.branch(walk)
    b.position_at_end(walk)
    rem = b.phi(i64)
    got = b.phi(i32)
    rem.add_incoming(bm, few)
    got.add_incoming(ir.Constant(i32, 0), few)
    b.cbranch(b.icmp_unsigned("!=", rem, ir.Constant(i64, 0)), step, walked)
    b.position_at_end(step)
    k = b.call(_declare(module, "llvm.cttz.i64", i64, [i64, i1]), [rem, ir.Constant(i1, 1)])
    same = b.bitcast(b.icmp_unsigned("==", v, broadcast(b, b.add(lo, k))), i32)
    lane = lowest_lane(b, module, b.and_(same, mask))
    rem.add_incoming(b.and_(rem, b.sub(rem, ir.Constant(i64, 1))), step)
    got.add_incoming(b.or_(got, b.shl(ir.Constant(i32, 1), lane)), step)
    b.branch(walk)
    b.position_at_end(walked)
    b.ret(got)
    b.position_at_end(slow)
    # a strided access: every lane is the first of its value
    strided, _d = _stride(b, v, mask)
    spread, sort = f.append_basic_block("strided"), f.append_basic_block("sort")
    b.cbranch(strided, spread, sort)
    b.position_at_end(spread)
    b.ret(mask)
    b.position_at_end(sort)
    keyed = b.or_(b.shl(b.sub(v, broadcast(b, lo)), _splat(i64, 5)), ir.Constant(ivec(64), list(range(LANES))))

    def firsts(width: int) -> None:
        s, valid = _sort_active(b, _lanes_of(b, keyed, width), mask)
        lane = b.and_(s, _splat(s.type.element, 31))
        lane_bits = b.shl(_splat(i32, 1), lane if width == 32 else (b.zext if width < 32 else b.trunc)(lane, vec(i32)))
        b.ret(_reduce(b, "or", b.select(_starts(b, b.lshr(s, _splat(s.type.element, 5)), valid), lane_bits, _splat(i32, 0))))

    _by_width(b, b.sub(hi, lo), 5, firsts)
    return f
