"""The replay loop of the cache model (runtime/models/cache_model.py) as native code.

A launch's timing estimate replays up to ``timing.TRACE_RECORDS`` sector records through
per-SM L1s and the shared L2; a Python loop over them costs more than many launches' whole
emulation.  This module generates the loop as LLVM IR (llvmlite), compiles it once per
process through the emulator's JIT (runtime/emulator/jit.py: its engine and its disk cache) and runs
it on numpy arrays passed by address.

The caches are set-associative LRUs over 32-byte sectors, as the Python reference loop of
``cache_model.simulate(native=False)`` models them: a sector goes to the set a hash of its
128-byte line picks (``set_index``: a line's four sectors share a set), each set holds
``ways`` sectors, and the least recently used of them leaves when a new one comes in (each
entry keeps the stamp of its last use: the victim is the smallest).  ``geometry`` splits a
capacity into sets.  A cache is two arrays over its entries, the sector and a *meta* word
(the LRU stamp in the high half, so the least recently used entry has the smallest word; the
step it was filled at, numbered from 1, 0 before the launch; ``DIRTY``; the level the fill
came from: 1 L2, 2 DRAM), and the
count of entries in use per set (a set fills from its first entry and never frees one, so a
lookup scans only those, ``PAD`` keys at a time).
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np
from llvmlite import ir

from .. import abi

#: the meta word of an entry: stamp << STAMP_SHIFT | fill step << STEP_SHIFT | DIRTY | level
STAMP_SHIFT, STEP_SHIFT, DIRTY, LEVEL = 32, 3, 4, 3
#: steps (renumbered densely) and stamps must fit their fields
MAX_STEPS, MAX_STAMPS = (1 << (STAMP_SHIFT - STEP_SHIFT)) - 2, (1 << 32) - 1
#: records the loop asks for the cache sets of ahead of the one it replays
PREFETCH = 16
#: 64-byte lines of an L2 set's keys (and of its metas) prefetched: a set of the default 64
#: ways (half of them for an L1 set)
PREFETCH_LINES = 8
#: the entries in use of a set ``Caches.fill_written`` leaves alone
UNREAD = 1 << 40
#: keys a lookup compares at once, and so entries it reads past a set's end (the arrays are
#: padded with them)
PAD = 8
#: the arrays (i64) of a cache: per entry, then per set
FIELDS = ("keys", "metas")
#: the argument block of the native function: one i64 each (array addresses and sizes)
ARGS = ("secs", "kinds", "slots", "sms", "steps", "level", "per_slot", "counts",
        *(f"l1_{x}" for x in FIELDS), "l1_fill", "l1_cap", "l1_nsets", "l1_ways", "l1_rem",
        *(f"l2_{x}" for x in FIELDS), "l2_fill", "l2_nsets", "l2_ways", "l2_rem", "ranges", "nranges", "shift", "limit", "open")
#: the counters the native function reads at entry and writes back at exit
COUNTS = ("l1_hits", "l2", "l2_hits", "dram_r", "dram_w", "l1_clock", "l2_clock")
#: modes of the native function: L2 accesses only (a warm-up, nothing counted); replay the
#: launch; fill the L2 from ranges of written memory (``Caches.fill_written``)
WARM, REPLAY, FILL = 0, 1, 2

#: the sampling's line hash (the JIT's, runtime/emulator/lowering/memory_metrics.py; cache_model.line_kept)
LINE_HASH = np.uint64(abi.TRACE_LINE_HASH)
#: the set hash's multiplier (not the sampling's, runtime/emulator/lowering/memory_metrics.py: the
#: lines a sampling level keeps share the low bits of that hash)
_SET_HASH = np.uint64(0xD6E8FEB86659FD93)


def geometry(capacity: int, ways: int) -> tuple[int, int, int]:
    """(sets, ways of a set, sets with one way more) for ``capacity`` sectors: ``capacity //
    ways`` sets (at least one: a cache smaller than ``ways`` is fully associative) sharing
    the capacity exactly."""
    capacity = max(1, int(capacity))
    nsets = max(1, capacity // max(1, int(ways)))
    return nsets, capacity // nsets, capacity % nsets


def set_index(sectors: np.ndarray, nsets: int) -> np.ndarray:
    """The set of each sector's 128-byte line in a cache of ``nsets`` sets (int64): a 32-bit
    multiplicative hash of the line, scaled to ``nsets`` (what the native code computes)."""
    with np.errstate(over="ignore"):
        h = ((np.asarray(sectors, np.uint64) >> np.uint64(2)) * _SET_HASH) >> np.uint64(32)
        return ((h * np.uint64(nsets)) >> np.uint64(32)).astype(np.int64)


def set_span(j: int, ways: int, rem: int) -> tuple[int, int]:
    """(first entry, entries) of set ``j``: the first ``rem`` sets have ``ways + 1``."""
    return j * ways + min(j, rem), ways + (j < rem)


_i8, _i32, _i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)


def _c(v: int) -> ir.Constant:
    return ir.Constant(_i64, v)


def _scan(m: ir.Module) -> ir.Function:
    """``scan(keys, metas, ways, used, key)`` over one set: the index of the entry holding
    ``key``, or ``-1 - victim`` (the next unused entry, else the least recently used)."""
    p64 = _i64.as_pointer()
    v4 = ir.VectorType(_i64, PAD)
    fn = ir.Function(m, ir.FunctionType(_i64, [p64, p64, _i64, _i64, _i64]), "scan")
    fn.linkage = "internal"
    cttz = ir.Function(m, ir.FunctionType(_i32, [_i32, ir.IntType(1)]), "llvm.cttz.i32")
    keys, metas, ways, used, key = fn.args
    names = ("entry", "head", "body", "found", "miss", "free", "lru", "min_head", "min_body", "find", "find_body", "evict")
    bb = {n: fn.append_basic_block(n) for n in names}
    b = ir.IRBuilder(bb["entry"])

    def splat(x):
        v = ir.Constant(v4, None)
        for lane in range(PAD):
            v = b.insert_element(v, x, ir.Constant(_i32, lane))
        return v

    keyv, usedv = splat(key), splat(used)
    b.branch(bb["head"])
    # PAD keys at a time (read past the entries in use: masked off)
    b.position_at_end(bb["head"])
    i = b.phi(_i64)
    i.add_incoming(_c(0), bb["entry"])
    b.cbranch(b.icmp_unsigned("<", i, used), bb["body"], bb["miss"])
    b.position_at_end(bb["body"])
    kv = b.load(b.bitcast(b.gep(keys, [i]), v4.as_pointer()), align=8)
    lanes = b.add(splat(i), ir.Constant(v4, list(range(PAD))))
    match = b.and_(b.icmp_unsigned("==", kv, keyv), b.icmp_unsigned("<", lanes, usedv))
    bits = b.zext(b.bitcast(match, ir.IntType(PAD)), _i32)
    i.add_incoming(b.add(i, _c(PAD)), bb["body"])
    b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(_i32, 0)), bb["found"], bb["head"])
    b.position_at_end(bb["found"])
    b.ret(b.add(i, b.zext(b.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)]), _i64)))
    b.position_at_end(bb["miss"])
    b.cbranch(b.icmp_unsigned("<", used, ways), bb["free"], bb["lru"])
    b.position_at_end(bb["free"])
    b.ret(b.sub(_c(-1), used))
    # a full set: the smallest meta word (the oldest stamp), then where it is
    b.position_at_end(bb["lru"])
    b.branch(bb["min_head"])
    b.position_at_end(bb["min_head"])
    j = b.phi(_i64)
    low = b.phi(_i64)
    j.add_incoming(_c(0), bb["lru"])
    low.add_incoming(_c(-1), bb["lru"])
    b.cbranch(b.icmp_unsigned("<", j, ways), bb["min_body"], bb["find"])
    b.position_at_end(bb["min_body"])
    meta = b.load(b.gep(metas, [j]))
    low.add_incoming(b.select(b.icmp_unsigned("<", meta, low), meta, low), bb["min_body"])
    j.add_incoming(b.add(j, _c(1)), bb["min_body"])
    b.branch(bb["min_head"])
    b.position_at_end(bb["find"])
    t = b.phi(_i64)
    t.add_incoming(_c(0), bb["min_head"])
    b.branch(bb["find_body"])
    b.position_at_end(bb["find_body"])
    t2 = b.add(t, _c(1))
    t.add_incoming(t2, bb["find_body"])
    b.cbranch(b.icmp_unsigned("==", b.load(b.gep(metas, [t])), low), bb["evict"], bb["find"])
    b.position_at_end(bb["evict"])
    b.ret(b.sub(_c(-1), t))
    return fn


def build_ir() -> str:
    """The module of the native replay: ``run_ctas(args, records, mode)`` (the JIT's entry
    signature; ``args`` is the i64 block ``ARGS`` names)."""
    import llvmlite.binding as llvm

    m = ir.Module(name="cache_replay")
    m.triple = llvm.get_process_triple()
    scan = _scan(m)
    p64, p8 = _i64.as_pointer(), _i8.as_pointer()
    fn = ir.Function(m, ir.FunctionType(_i32, [p8, _i64, _i64]), "run_ctas")
    argp, n, mode = fn.args
    blocks = {}

    def block(name: str) -> ir.Block:
        blocks[name] = fn.append_basic_block(name)
        return blocks[name]

    b = ir.IRBuilder(block("entry"))
    argv = b.bitcast(argp, p64)

    def arg(name: str, ty=None):
        v = b.load(b.gep(argv, [_c(ARGS.index(name))]))
        return b.inttoptr(v, ty) if ty is not None else v

    secs, slots, sms, steps = (arg(x, p64) for x in ("secs", "slots", "sms", "steps"))
    per_slot, counts = arg("per_slot", p64), arg("counts", p64)
    kinds, level = arg("kinds", p8), arg("level", p8)
    l1 = {x: arg(f"l1_{x}", p64) for x in (*FIELDS, "fill")}
    l1_cap, l1_nsets, l1_ways, l1_rem = arg("l1_cap"), arg("l1_nsets"), arg("l1_ways"), arg("l1_rem")
    l2 = {x: arg(f"l2_{x}", p64) for x in (*FIELDS, "fill")}
    l2_nsets, l2_ways, l2_rem = arg("l2_nsets"), arg("l2_ways"), arg("l2_rem")
    # locals in allocas (promoted to registers by LLVM's passes)
    ctr = {}
    for k, name in enumerate(COUNTS):
        ctr[name] = b.alloca(_i64, name=name)
        b.store(b.load(b.gep(counts, [_c(k)])), ctr[name])
    iv = b.alloca(_i64, name="i")
    lvl_slot = b.alloca(_i64, name="lvl")
    entry1 = b.alloca(_i64, name="entry1")
    r_at, s_at, first_at, k_at, open_at = (b.alloca(_i64, name=x) for x in ("r", "s", "first", "k", "open"))
    b.store(_c(0), iv)
    b.cbranch(b.icmp_signed("==", mode, _c(FILL)), block("fill"), block("head"))

    def bump(name: str, by=None) -> ir.Value:
        v = b.add(b.load(ctr[name]), by if by is not None else _c(1))
        b.store(v, ctr[name])
        return v

    def incr(ptr: ir.Value, by) -> None:
        b.store(b.add(b.load(ptr), by), ptr)

    def at(cache: dict, name: str, e: ir.Value) -> ir.Value:
        return b.gep(cache[name], [e])

    prefetcher = ir.Function(m, ir.FunctionType(ir.VoidType(), [p8, _i32, _i32, _i32]), "llvm.prefetch.p0")

    def set_of(key, nsets):
        """``set_index``."""
        h = b.lshr(b.mul(b.lshr(key, _c(2)), _c(int(_SET_HASH) - (1 << 64))), _c(32))
        return b.lshr(b.mul(h, nsets), _c(32))

    def set_start(first, j, ways, rem):
        return b.add(first, b.add(b.mul(j, ways), b.select(b.icmp_unsigned("<", j, rem), j, rem)))

    def prefetch(cache, start, lines=1):
        """Ask for the first ``lines`` 64-byte lines of a set's keys and metas."""
        for name in FIELDS:
            for line in range(lines):
                p = b.bitcast(at(cache, name, b.add(start, _c(8 * line))), p8)
                b.call(prefetcher, [p, ir.Constant(_i32, 1), ir.Constant(_i32, 3), ir.Constant(_i32, 1)])

    def lookup(cache, first, set_first, j, ways, rem, key, allocate=None):
        """Look ``key`` up in set ``j`` of the cache whose sets start at entry ``first`` and
        set ``set_first``: (hit, its entry or the victim's).  A miss that ``allocate``s takes
        the next unused entry (one more used) or the LRU one."""
        small = b.icmp_unsigned("<", j, rem)
        start = b.add(first, b.add(b.mul(j, ways), b.select(small, j, rem)))
        size = b.add(ways, b.zext(small, _i64))
        fill = b.gep(cache["fill"], [b.add(set_first, j)])
        used = b.load(fill)
        r = b.call(scan, [at(cache, "keys", start), at(cache, "metas", start), size, used, key])
        hit = b.icmp_signed(">=", r, _c(0))
        free = b.icmp_unsigned("<", used, size)
        grow = b.and_(b.not_(hit), free)
        if allocate is not None:
            grow = b.and_(grow, allocate)
        b.store(b.select(grow, b.add(used, _c(1)), used), fill)
        return hit, b.add(start, b.select(hit, r, b.sub(_c(-1), r))), b.not_(b.or_(hit, free))

    def stamped(clock, meta):
        """``meta`` with the stamp ``clock``."""
        return b.or_(b.shl(clock, _c(STAMP_SHIFT)), b.and_(meta, _c((1 << STAMP_SHIFT) - 1)))

    def filled_at(meta):
        return b.lshr(b.and_(meta, _c((1 << STAMP_SHIFT) - 1)), _c(STEP_SHIFT))

    def l2_access(i, key, write, step, fill_level, counting: bool, tag: str):
        """Emit an L2 access; leaves the builder in a block after it: (hit, level)."""
        hit, e, evict = lookup(l2, _c(0), _c(0), set_of(key, l2_nsets), l2_ways, l2_rem, key)
        clock = bump("l2_clock")
        meta_at = at(l2, "metas", e)
        dirty = b.select(write, _c(DIRTY), _c(0))
        hb, mb, jb = block(tag + "_l2hit"), block(tag + "_l2miss"), block(tag + "_l2done")
        b.cbranch(hit, hb, mb)
        b.position_at_end(hb)
        meta = b.load(meta_at)
        b.store(b.or_(stamped(clock, meta), dirty), meta_at)
        # a hit on a sector a miss of the same step is still fetching waits for that miss
        same = b.icmp_unsigned("==", filled_at(meta), step)
        b.store(b.select(same, b.and_(meta, _c(LEVEL)), _c(1)), lvl_slot)
        b.branch(jb)
        b.position_at_end(mb)
        if counting:  # a dirty sector leaving is written to DRAM
            old = b.lshr(b.and_(b.load(meta_at), _c(DIRTY)), _c(2))
            bump("dram_w", b.select(evict, old, _c(0)))
        b.store(key, at(l2, "keys", e))
        fresh = b.or_(b.shl(clock, _c(STAMP_SHIFT)), b.shl(step, _c(STEP_SHIFT)))
        b.store(b.or_(fresh, b.or_(dirty, fill_level)), meta_at)
        b.store(_c(2), lvl_slot)
        b.branch(jb)
        b.position_at_end(jb)
        return hit, b.load(lvl_slot)

    # the memory written before the launch (ranges of sectors, in writing order), walked
    # from its last sector back: the first ``limit`` sectors the sampling keeps, each set
    # keeping the first of them that fit (the last written), stamped in writing order, dirty
    # -- what L2 accesses of them in writing order leave
    b.position_at_end(blocks["fill"])
    ranges, mask = arg("ranges", p64), b.sub(b.shl(_c(1), arg("shift")), _c(1))
    limit, clock0 = arg("limit"), b.load(ctr["l2_clock"])
    b.store(arg("nranges"), r_at)
    b.store(arg("open"), open_at)  # sets not full yet: the fill ends when none is left
    b.store(_c(0), k_at)
    b.cbranch(b.icmp_signed(">", limit, _c(0)), block("range_head"), block("fill_done"))
    b.position_at_end(blocks["range_head"])
    r = b.load(r_at)
    b.cbranch(b.icmp_signed(">", r, _c(0)), block("range_body"), blocks["fill_done"])
    b.position_at_end(blocks["range_body"])
    r = b.sub(r, _c(1))
    b.store(r, r_at)
    b.store(b.load(b.gep(ranges, [b.mul(r, _c(2))])), first_at)
    b.store(b.load(b.gep(ranges, [b.add(b.mul(r, _c(2)), _c(1))])), s_at)
    b.branch(block("sec_head"))
    b.position_at_end(blocks["sec_head"])
    sec = b.load(s_at)
    b.cbranch(b.icmp_signed(">", sec, b.load(first_at)), block("sec_body"), blocks["range_head"])
    b.position_at_end(blocks["sec_body"])
    sec = b.sub(sec, _c(1))
    b.store(sec, s_at)
    line_hash = b.lshr(b.mul(b.lshr(sec, _c(2)), _c(int(LINE_HASH) - (1 << 64))), _c(32))
    b.cbranch(b.icmp_unsigned("==", b.and_(line_hash, mask), _c(0)), block("sec_kept"), blocks["sec_head"])
    b.position_at_end(blocks["sec_kept"])
    k = b.load(k_at)
    b.store(b.add(k, _c(1)), k_at)
    j2 = set_of(sec, l2_nsets)
    used_at = b.gep(l2["fill"], [j2])
    used = b.load(used_at)
    small = b.icmp_unsigned("<", j2, l2_rem)
    size = b.add(l2_ways, b.zext(small, _i64))
    b.cbranch(b.icmp_unsigned("<", used, size), block("fill_take"), block("fill_next"))
    b.position_at_end(blocks["fill_take"])
    e = b.add(set_start(_c(0), j2, l2_ways, l2_rem), used)
    b.store(b.add(used, _c(1)), used_at)
    still_open = b.sub(b.load(open_at), b.zext(b.icmp_unsigned("==", b.add(used, _c(1)), size), _i64))
    b.store(still_open, open_at)
    b.store(sec, at(l2, "keys", e))
    stamp = b.add(clock0, b.sub(limit, k))
    b.store(b.or_(b.shl(stamp, _c(STAMP_SHIFT)), _c(DIRTY | 2)), at(l2, "metas", e))
    b.branch(blocks["fill_next"])
    b.position_at_end(blocks["fill_next"])
    more = b.and_(b.icmp_signed("<", b.add(k, _c(1)), limit), b.icmp_signed(">", b.load(open_at), _c(0)))
    b.cbranch(more, blocks["sec_head"], blocks["fill_done"])
    b.position_at_end(blocks["fill_done"])
    b.store(b.add(clock0, limit), ctr["l2_clock"])
    b.branch(block("exit"))

    b.position_at_end(blocks["head"])
    i = b.load(iv)
    b.cbranch(b.icmp_signed("<", i, n), block("body"), blocks["exit"])
    b.position_at_end(blocks["body"])
    # the sets of the record PREFETCH ahead are known: ask for them now (the loop waits on
    # memory, not on arithmetic, when the caches are larger than the host's)
    ahead = b.add(i, _c(PREFETCH))
    ahead = b.select(b.icmp_signed("<", ahead, n), ahead, i)
    key_ahead = b.load(b.gep(secs, [ahead]))
    prefetch(l2, set_start(_c(0), set_of(key_ahead, l2_nsets), l2_ways, l2_rem), PREFETCH_LINES)
    b.cbranch(b.icmp_signed("==", mode, _c(REPLAY)), block("ahead1"), block("record"))
    b.position_at_end(blocks["ahead1"])
    prefetch(l1, set_start(b.mul(b.load(b.gep(sms, [ahead])), l1_cap), set_of(key_ahead, l1_nsets), l1_ways, l1_rem),
             PREFETCH_LINES // 2)
    b.branch(blocks["record"])
    b.position_at_end(blocks["record"])
    key = b.load(b.gep(secs, [i]))
    k = b.zext(b.load(b.gep(kinds, [i])), _i64)
    write = b.icmp_unsigned(">=", k, _c(abi.TRACE_STORE))
    sw = b.switch(mode, block("replay"))
    sw.add_case(_c(WARM), block("warm"))

    # warm-up: L2 accesses of fill step 0 (replay steps are numbered from 1), nothing counted
    b.position_at_end(blocks["warm"])
    l2_access(i, key, write, _c(0), _c(2), False, "warm")
    b.branch(block("next"))

    b.position_at_end(blocks["replay"])
    step = b.load(b.gep(steps, [i]))
    c = b.gep(per_slot, [b.mul(b.load(b.gep(slots, [i])), _c(3))])
    is_load = b.icmp_signed("==", k, _c(abi.TRACE_LOAD))
    is_store = b.icmp_signed("==", k, _c(abi.TRACE_STORE))
    b.cbranch(b.or_(is_load, is_store), block("l1"), block("l2"))
    # L1 of the record's SM: loads look up, stores update a line present (write-through)
    b.position_at_end(blocks["l1"])
    sm = b.load(b.gep(sms, [i]))
    # a store does not allocate in L1
    hit1, e1, _ = lookup(l1, b.mul(sm, l1_cap), b.mul(sm, l1_nsets), set_of(key, l1_nsets), l1_ways, l1_rem, key,
                      is_load)
    b.store(e1, entry1)
    b.cbranch(hit1, block("l1hit"), blocks["l2"])
    b.position_at_end(blocks["l1hit"])
    meta1 = b.load(at(l1, "metas", e1))
    b.store(stamped(bump("l1_clock"), meta1), at(l1, "metas", e1))
    b.cbranch(is_load, block("l1load"), blocks["l2"])
    b.position_at_end(blocks["l1load"])
    bump("l1_hits")
    incr(c, _c(1))
    incr(b.gep(c, [_c(1)]), _c(1))
    # a hit on a line another warp's miss of this step is still fetching waits for it
    same = b.icmp_unsigned("==", filled_at(meta1), step)
    b.cbranch(same, block("pending"), blocks["next"])
    b.position_at_end(blocks["pending"])
    b.store(b.trunc(b.and_(meta1, _c(LEVEL)), _i8), b.gep(level, [i]))
    b.branch(blocks["next"])
    # L2: L1 misses, loads bypassing L1, stores, atomics
    b.position_at_end(blocks["l2"])
    bump("l2")
    hit, lvl = l2_access(i, key, write, step, b.select(is_store, _c(1), _c(2)), True, "replay")
    b.cbranch(is_load, block("l1fill"), block("filled"))
    b.position_at_end(blocks["l1fill"])
    e1 = b.load(entry1)
    b.store(key, at(l1, "keys", e1))
    fresh = b.or_(b.shl(bump("l1_clock"), _c(STAMP_SHIFT)), b.shl(step, _c(STEP_SHIFT)))
    b.store(b.or_(fresh, lvl), at(l1, "metas", e1))
    b.branch(blocks["filled"])
    b.position_at_end(blocks["filled"])
    hit64 = b.zext(hit, _i64)
    bump("l2_hits", hit64)
    b.cbranch(is_store, blocks["next"], block("counted"))
    b.position_at_end(blocks["counted"])
    incr(c, _c(1))
    incr(b.gep(c, [_c(2)]), hit64)
    bump("dram_r", b.sub(_c(1), hit64))
    b.store(b.trunc(lvl, _i8), b.gep(level, [i]))
    b.branch(blocks["next"])

    b.position_at_end(blocks["next"])
    b.store(b.add(i, _c(1)), iv)
    b.branch(blocks["head"])
    b.position_at_end(blocks["exit"])
    for k, name in enumerate(COUNTS):
        b.store(b.load(ctr[name]), b.gep(counts, [_c(k)]))
    b.ret(ir.Constant(_i32, 0))
    return str(m)


_replay = None


def native():
    """The compiled replay function (compiled once per process, or loaded from the JIT's
    disk cache, keyed by this module's source)."""
    global _replay
    if _replay is None:
        from ..emulator.jit import compile_ir

        with open(__file__, "rb") as f:
            key = "cache_replay:" + hashlib.sha256(f.read()).hexdigest()
        _replay = compile_ir(key, build_ir, "scalar", what="cache replay").run_ctas
    return _replay


class Caches:
    """The per-SM L1s and the L2 of one replay, as arrays the native code updates.  A context
    manager: leaving it hands the arrays on to the next replay of the process (``release``),
    whose caches then start without the page faults of fresh memory."""

    def __init__(self, sms: int, l1_capacity: int, l1_ways: int, l2_capacity: int, l2_ways: int):
        n1, w1, r1 = geometry(l1_capacity, l1_ways)
        n2, w2, r2 = geometry(l2_capacity, l2_ways)
        self.l1_nsets, self.l2_nsets, self.sms = n1, n2, max(1, sms)
        self.l1_cap = n1 * w1 + r1
        sizes = {f"l1_{x}": self.sms * self.l1_cap + PAD for x in FIELDS}
        sizes.update({f"l2_{x}": n2 * w2 + r2 + PAD for x in FIELDS})
        sizes.update(l1_fill=self.sms * n1, l2_fill=n2)
        with _lock:
            self._buffers = _free.pop() if _free else {}
        for name, size in sizes.items():
            if len(self._buffers.get(name, ())) < size:
                self._buffers[name] = np.empty(size, np.int64)
        # an entry is read only once in use: only the counts of entries in use start at 0
        self.arrays = {name: self._buffers[name][:size] for name, size in sizes.items()}
        self.arrays["l1_fill"][:] = 0
        self.arrays["l2_fill"][:] = 0
        self.counts = np.zeros(len(COUNTS), np.int64)
        self.sizes = {"l1_cap": self.l1_cap, "l1_nsets": n1, "l1_ways": w1, "l1_rem": r1,
                      "l2_nsets": n2, "l2_ways": w2, "l2_rem": r2}

    def __enter__(self) -> Caches:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Hand the arrays on (the caches are unusable afterwards)."""
        if self._buffers:
            with _lock:
                if not _free:  # one set of buffers is kept (the largest caches of the process)
                    _free.append(self._buffers)
            self._buffers, self.arrays = {}, {}

    def _run(self, mode: int, secs: np.ndarray, kinds: np.ndarray, scalars: dict | None = None, **replay) -> None:
        if not self.arrays:
            raise ValueError("cache replay: the caches were released")
        secs = np.ascontiguousarray(secs, np.uint64)
        kinds = np.ascontiguousarray(kinds, np.int8)
        arrays = dict(self.arrays, secs=secs, kinds=kinds, counts=self.counts, **replay)
        # the native code indexes with these: checked in full (it writes only inside them)
        for name, a in arrays.items():
            dtype = np.int8 if name in ("kinds", "level") else np.uint64 if name == "secs" else np.int64
            if not (a.flags.c_contiguous and a.dtype == dtype):
                raise ValueError(f"cache replay: {name} must be a contiguous {np.dtype(dtype).name} array")
        if mode == REPLAY:
            n = len(secs)
            if not all(len(arrays[x]) == n for x in ("kinds", "slots", "sms", "steps", "level")):
                raise ValueError("cache replay: the record arrays differ in length")
            if n and not (0 <= int(arrays["sms"].min()) and int(arrays["sms"].max()) < self.sms):
                raise ValueError(f"cache replay: an SM outside 0..{self.sms - 1}")
            if n and not (0 <= int(arrays["slots"].min()) and int(arrays["slots"].max()) * 3 < len(arrays["per_slot"])):
                raise ValueError("cache replay: a slot outside the per-slot counts")
        elif len(kinds) != len(secs):
            raise ValueError("cache replay: the record arrays differ in length")
        scalars = dict(self.sizes, **(scalars or {}))
        # every access takes one stamp of its cache (a fill: ``limit`` of them)
        if int(self.counts[COUNTS.index("l2_clock")]) + 2 * len(secs) + scalars.get("limit", 0) > MAX_STAMPS:
            raise ValueError(f"cache replay: {len(secs)} records are more than the stamps hold")
        block = np.array([arrays[a].ctypes.data if a in arrays else scalars.get(a, 0) for a in ARGS], np.int64)
        native()(block.ctypes.data, len(secs), mode)

    def fill(self, secs: np.ndarray, writes: np.ndarray | bool) -> None:
        """L2 accesses before the launch (its warm-up, or the memory written before it):
        nothing counted, filled at a step no record of the replay has."""
        kinds = np.where(writes, abi.TRACE_STORE, abi.TRACE_LOAD).astype(np.int8)
        if kinds.ndim == 0:
            kinds = np.full(len(secs), kinds, np.int8)
        self._run(WARM, secs, kinds)

    def fill_written(self, ranges: list[tuple[int, int]], shift: int, limit: int, replayed: np.ndarray | None = None) -> None:
        """Fill the L2 with the memory written before the launch (``ranges``: address, bytes,
        in writing order; sharing no sector): the state that L2 accesses of its last
        ``limit`` sectors sampling level ``shift`` keeps leave, in writing order
        (``cache_model.written_before``), found from the newest sector back -- a set full
        already costs nothing more.  With ``replayed`` (the sectors the replay will access),
        only their sets are filled: the others are never read."""
        spans = np.array([(start >> 5, (start + size + 31) >> 5) for start, size in ranges], np.int64).reshape(-1, 2)
        fill = self.arrays["l2_fill"]
        open_sets = len(fill)
        if replayed is not None:
            fill[:] = UNREAD  # a full set to the fill
            fill[set_index(replayed, self.l2_nsets)] = 0
            open_sets = int(np.count_nonzero(fill == 0))
        scalars = {"nranges": len(spans), "shift": shift, "limit": limit, "open": open_sets}
        self._run(FILL, np.zeros(0, np.uint64), np.zeros(0, np.int8), scalars, ranges=np.ascontiguousarray(spans))
        if replayed is not None:
            fill[fill == UNREAD] = 0

    def replay(self, secs, kinds, slots, sms, steps) -> tuple[np.ndarray, np.ndarray]:
        """Replay the records (in replay order): (each record's level: 0 L1, 1 L2, 2 DRAM;
        per slot [sectors, L1 hits, L2 hits] as rows of slot number).  Only whether two
        records share a step matters: steps are renumbered 1, 2, ... to fit the meta word."""
        slots = np.ascontiguousarray(slots, np.int64)
        steps = np.asarray(steps, np.int64)
        d = np.diff(steps)
        if (d >= 0).all():  # replay order: steps do not decrease
            dense = np.empty(len(steps), np.int64)
            dense[:1] = 1
            np.cumsum(d != 0, out=dense[1:])
            dense[1:] += 1
        else:
            dense = np.unique(steps, return_inverse=True)[1].astype(np.int64) + 1
        if len(dense) and int(dense[-1] if (d >= 0).all() else dense.max()) > MAX_STEPS:
            raise ValueError(f"cache replay: more than {MAX_STEPS} steps")
        level = np.zeros(len(secs), np.int8)
        per_slot = np.zeros((int(slots.max(initial=0)) + 1) * 3, np.int64)
        self._run(REPLAY, secs, kinds, slots=slots, sms=np.ascontiguousarray(sms, np.int64), steps=dense,
                  level=level, per_slot=per_slot)
        return level, per_slot.reshape(-1, 3)

    def count(self, name: str) -> int:
        return int(self.counts[COUNTS.index(name)])


_lock = threading.Lock()
#: the arrays of finished replays, for the next one
_free: list[dict[str, np.ndarray]] = []


__all__ = ["LINE_HASH", "Caches", "geometry", "set_index", "set_span"]
