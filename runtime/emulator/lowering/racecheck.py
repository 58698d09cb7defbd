"""racecheck: hazards between threads of a CTA on the same shared-memory bytes with no
synchronisation between them, as compute-sanitizer's ``racecheck`` reports them.

Time is cut into *epochs*: a launch-wide counter (``abi.CTX_RACE_EPOCH``) that grows by one as
each CTA starts, at each barrier release (``bar.sync``/``barrier.sync``/``bar.red``,
``barrier.cluster``: ``scheduler.py``), at each mbarrier update (``semantics/mbarrier.py``)
and at each ``bar.warp.sync``.  Two accesses in one epoch have no synchronisation between
them, whatever order the scheduler ran the warps in; two in different epochs are taken to be
ordered (a named barrier of a few warps or a ``__syncwarp`` ends the epoch for every warp:
hazards across it are missed, never invented).

Each shared byte has a shadow (``abi.RACE_SHADOW_WORDS`` words): the last write and up to two
reads by different threads, each with its epoch, thread and instruction (an atomic counts as
both, marked atomic).  An access by thread ``t`` is a hazard when the shadow holds an access
of this epoch by another thread: a read after a write (RAW), a write after a write (WAW), a
write after a read (WAR); an atomic after an atomic is none.  The lanes of one warp executing one instruction act at once: a
load of many lanes does not race with itself, nor an atomic; two lanes storing to one byte in
one instruction are a WAW hazard (which value lands is undefined).
Entries of older epochs are stale, so the shadow is never cleared.

Hazards are counted per thread access, by kind, and the first is kept (``abi.CTX_RACE_*``);
the launch gets a warning note (``runtime/emulator/racecheck.py``).

racecheck's sample (on by default, ``EmulationOptions.racecheck_sample``) builds the same
checks into kernels that write shared memory, each behind a test of ``abi.CTX_RACE_SHADOW``:
the emulator gives a shadow to the first CTA of a kernel's first launch only.  Accesses whose intent is not
known (``initcheck.UNKNOWN``: mbarrier objects, bulk copies ...) are not tracked: a missed
hazard rather than a false one.
"""

from __future__ import annotations

from llvmlite import ir

from ... import abi
from . import initcheck
from .function import WarpFunction, as_i64
from .irbuild import each_lane, helper_function
from .types import VPTR, i32, i64, ivec, ptr

#: how an access uses its bytes (a helper each)
READ, WRITE, ATOMIC = 0, 1, 2
_KINDS = {initcheck.READ: READ, initcheck.WRITE: WRITE, initcheck.READ_WRITE: ATOMIC}
_SHARED_SPACES = ("shared", "shared::cta", "shared::cluster", "generic")
_INSTR_MAX = (1 << (64 - abi.RACE_INSTR_SHIFT)) - 1  # instructions past it are recorded as unknown
_THREAD_MASK = (1 << (abi.RACE_ATOMIC_BIT - abi.RACE_THREAD_SHIFT)) - 1


def enabled(wf: WarpFunction) -> bool:
    """The code tracks shared-memory accesses: ``--racecheck``, or racecheck's sample."""
    return bool(getattr(wf.prog, "racecheck", False)) or sampled(wf)


def sampled(wf: WarpFunction) -> bool:
    """racecheck's sample (not ``--racecheck``): the checks run only while the launch gives a
    shadow (``abi.CTX_RACE_SHADOW`` not 0: the first CTA of the kernel's first launch), a
    load and a branch per shared access otherwise."""
    return not getattr(wf.prog, "racecheck", False) and bool(getattr(wf.prog, "race_sample", False))


def access(wf: WarpFunction, instr: int | ir.Value, space: str, ptrs: ir.Value, nbytes: int | ir.Value,
           mask: ir.Value, intent: str) -> None:
    """Check and record the bytes ``[ptrs[l], ptrs[l] + nbytes)`` of the lanes of ``mask``
    that lie in the CTA's shared memory (a generic address may lie elsewhere)."""
    kind = _KINDS.get(intent)
    if kind is None or space not in _SHARED_SPACES:
        return
    b = wf.b
    n = nbytes if isinstance(nbytes, ir.Value) else wf.splat(nbytes, i64)
    args = [wf.ctx, ptrs, n, wf.mask_to_i32(mask), as_i64(instr), b.zext(wf.warp, i64)]
    if not sampled(wf):
        b.call(_check_function(wf.module, kind), args)
        return
    shadow = b.load(b.gep(wf.ctx, [ir.Constant(i64, abi.CTX_RACE_SHADOW)], source_etype=i64), typ=i64)
    with b.if_then(b.icmp_unsigned("!=", shadow, ir.Constant(i64, 0)), likely=False):
        b.call(_check_function(wf.module, kind, sample=True), args)


def bump_epoch(wf: WarpFunction) -> None:
    """A synchronisation: accesses after it are ordered after those before it."""
    b = wf.b
    p = b.gep(wf.ctx, [ir.Constant(i64, abi.CTX_RACE_EPOCH)], source_etype=i64)
    b.store(b.add(b.load(p, typ=i64), ir.Constant(i64, 1)), p)


def _check_function(module: ir.Module, kind: int, sample: bool = False) -> ir.Function:
    """``void hypa_racecheck.KIND(ctx, <32 x ptr> p, <32 x i64> n, i32 lanes, i64 instr, i64 warp)``:
    the module's docstring, for the ``n[l]`` bytes at ``p[l]`` of each lane, one helper per kind.
    ``sample``: racecheck's sample's copy (``hypa_racecheck.KIND.sample``), never inlined: the
    optimized tier then compiles a call per shared access, not these loops (the sample runs
    them in one CTA of a launch).

    One pass, lane after lane, each byte checked then recorded.  Lanes of one instruction do
    not meet as RAW or WAR: a read records only reads (a plain read does not race with reads,
    a recorded atomic only with plain accesses), an atomic meets other lanes' atomics, which
    do not race; two lanes storing to one byte do meet, as WAW, as they should."""
    name = f"hypa_racecheck.{('read', 'write', 'atomic')[kind]}" + (".sample" if sample else "")
    f, new = helper_function(module, name, ir.VoidType(), [ptr, VPTR, ivec(64), i32, i64, i64])
    if sample:
        f.attributes.add("noinline")  # (a declaration's too: the caller's module keeps it a call)
    if not new:
        return f
    ctx, ptrs, n, lanes, instr, warp = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    is_read, is_write, is_atomic = kind == READ, kind == WRITE, kind == ATOMIC
    t, fl = ir.Constant(ir.IntType(1), 1), ir.Constant(ir.IntType(1), 0)

    def word(k: int) -> ir.Value:
        return b.load(b.gep(ctx, [ir.Constant(i64, k)], source_etype=i64), typ=i64)

    def c64(v: int) -> ir.Constant:
        return ir.Constant(i64, v)

    shadow = word(abi.CTX_RACE_SHADOW)
    now = b.trunc(word(abi.CTX_RACE_EPOCH), i32)
    offs = b.sub(b.ptrtoint(ptrs, ivec(64)), _splat(b, word(abi.CTX_SHARED)))
    inside = b.bitcast(b.icmp_unsigned("<", offs, _splat(b, word(abi.CTX_SHARED_SIZE))), i32)
    lanes = b.and_(lanes, inside)  # generic addresses elsewhere are not shared memory
    instr_f = b.select(b.icmp_unsigned("<", instr, c64(_INSTR_MAX)), instr, c64(_INSTR_MAX))
    mine0 = b.or_(b.zext(now, i64), b.shl(instr_f, c64(abi.RACE_INSTR_SHIFT)))
    if is_atomic:
        mine0 = b.or_(mine0, c64(1 << abi.RACE_ATOMIC_BIT))
    record = _record_function(module)

    def fields(w: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(this epoch?, thread + 1, atomic?) of a shadow word"""
        cur = b.icmp_unsigned("==", b.trunc(w, i32), now)
        tag = b.and_(b.lshr(w, c64(abi.RACE_THREAD_SHIFT)), c64(_THREAD_MASK))
        atomic = b.trunc(b.lshr(w, c64(abi.RACE_ATOMIC_BIT)), ir.IntType(1))
        return cur, tag, atomic

    def lane_body(b: ir.IRBuilder, lane: ir.Value) -> None:
        tid = b.add(b.mul(warp, c64(abi.LANES)), b.zext(lane, i64))
        tag = b.add(tid, c64(1))
        mine = b.or_(mine0, b.shl(tag, c64(abi.RACE_THREAD_SHIFT)))
        off0 = b.extract_element(offs, lane)
        nb = b.extract_element(n, lane)
        pre = b.block
        head, body, out = (f.append_basic_block(x) for x in ("byte", "byte.body", "byte.done"))
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(i64)
        k.add_incoming(c64(0), pre)
        reported = b.phi(ir.IntType(1))  # one hazard a lane's access at most
        reported.add_incoming(fl, pre)
        b.cbranch(b.icmp_unsigned("<", k, nb), body, out)
        b.position_at_end(body)
        off = b.add(off0, k)
        slot = b.inttoptr(b.add(shadow, b.mul(off, c64(8 * abi.RACE_SHADOW_WORDS))), ptr)
        sw = [b.gep(slot, [c64(j)], source_etype=i64) for j in range(abi.RACE_SHADOW_WORDS)]
        w, r1, r2 = (b.load(p, typ=i64) for p in sw)
        # the last write: a read or write after another thread's (not an atomic after an atomic)
        w_cur, w_tag, w_atomic = fields(w)
        hazard = b.and_(w_cur, b.icmp_unsigned("!=", w_tag, tag))
        if is_atomic:
            hazard = b.and_(hazard, b.not_(w_atomic))
        other = w
        hkind = ir.Constant(i32, abi.RACE_RAW if is_read else abi.RACE_WAW)
        # the reads (and atomics) of two threads: a write after either, an atomic after a plain
        # read, a read after an atomic
        (r1_cur, r1_tag, r1_atomic), (r2_cur, r2_tag, r2_atomic) = fields(r1), fields(r2)
        for r, r_cur, r_tag, r_atomic in ((r1, r1_cur, r1_tag, r1_atomic), (r2, r2_cur, r2_tag, r2_atomic)):
            conflict = t if is_write else r_atomic if is_read else b.not_(r_atomic)
            race = b.and_(b.and_(b.not_(hazard), conflict), b.and_(r_cur, b.icmp_unsigned("!=", r_tag, tag)))
            other = b.select(race, r, other)
            hkind = b.select(race, ir.Constant(i32, abi.RACE_RAW if is_read else abi.RACE_WAR), hkind)
            hazard = b.or_(hazard, race)
        new_hazard = b.and_(hazard, b.not_(reported))
        with b.if_then(new_hazard, likely=False):
            b.call(record, [ctx, hkind, instr, tid, other, off])
        # record: a write or atomic replaces the last write; a read or atomic fills the first
        # read slot of this epoch, or the second when the first is another thread's
        if not is_write:
            b.store(b.select(r1_cur, r1, mine), sw[1])
            second = b.and_(b.and_(r1_cur, b.icmp_unsigned("!=", r1_tag, tag)), b.not_(r2_cur))
            b.store(b.select(second, mine, r2), sw[2])
        if not is_read:
            b.store(mine, sw[0])
        k.add_incoming(b.add(k, c64(1)), b.block)
        reported.add_incoming(b.or_(reported, hazard), b.block)
        b.branch(head)
        b.position_at_end(out)

    each_lane(b, module, lanes, lane_body)
    b.ret_void()
    return f


def _splat(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    vt = ivec(64)
    one = b.insert_element(ir.Constant(vt, None), v, ir.Constant(i32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, None), ir.Constant(ir.VectorType(i32, abi.LANES), None))


def _record_function(module: ir.Module) -> ir.Function:
    """``void hypa_race(ctx, i32 kind, i64 instr, i64 thread, i64 other, i64 offset)``: counts a
    hazard and keeps the first (out of line: it runs only when an access finds one)."""
    f, new = helper_function(module, "hypa_race", ir.VoidType(), [ptr, i32, i64, i64, i64, i64])
    if not new:
        return f
    ctx, kind, instr, tid, other, off = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))

    def slot(k) -> ir.Value:
        return b.gep(ctx, [k if isinstance(k, ir.Value) else ir.Constant(i64, k)], source_etype=i64)

    before = b.add(b.add(b.load(slot(abi.CTX_RACE_COUNT), typ=i64), b.load(slot(abi.CTX_RACE_COUNT + 1), typ=i64)),
                   b.load(slot(abi.CTX_RACE_COUNT + 2), typ=i64))
    mine = slot(b.add(ir.Constant(i64, abi.CTX_RACE_COUNT), b.zext(kind, i64)))
    b.store(b.add(b.load(mine, typ=i64), ir.Constant(i64, 1)), mine)
    with b.if_then(b.icmp_unsigned("==", before, ir.Constant(i64, 0))):
        b.store(b.zext(kind, i64), slot(abi.CTX_RACE_KIND))
        b.store(instr, slot(abi.CTX_RACE_INSTR))
        b.store(tid, slot(abi.CTX_RACE_THREAD))
        b.store(other, slot(abi.CTX_RACE_OTHER))
        b.store(off, slot(abi.CTX_RACE_ADDR))
        b.store(b.load(slot(abi.CTX_CTA_LINEAR), typ=i64), slot(abi.CTX_RACE_CTA))
    b.ret_void()
    return f
