"""The memory hierarchy of the timing estimate: L1 and L2 caches fed by the launch's own
address stream.

The emulator records a *trace* of global accesses (runtime/emulator/lowering/memory_metrics.py,
``CTX_TRACE``): per warp-level access, its distinct 32-byte sectors, with the warp, the
instruction (memory slot) and the kind (load through L1, load bypassing L1, store, atomic).
Long streams are *set-sampled*: a 128-byte line is kept when a hash of its address is 0 modulo
``2**shift``, so every access to a kept line is in the trace, and the caches are simulated
with ``1 / 2**shift`` of their capacity -- the sampling that cache simulators use to
estimate miss rates from a fraction of the sets.

The simulation replays the trace in the order the GPU runs it, not the order the emulator
ran it (one warp after the other): CTAs go to SMs in launch order, ``ctas_per_sm`` at a time
(one *wave*), and the resident warps of a wave advance in lock step -- every warp's k-th
access comes before any warp's (k+1)-th.  Each SM has its own L1 (the capacity the
shared-memory carve-out leaves; stores write through, updating a line present), all SMs
share the L2 (write-back: a dirty sector that leaves it is a DRAM write); both are
set-associative LRUs over sectors, sets picked by a hash of the 128-byte line
(runtime/models/cache_replay.py).  The L2 starts as the memory the launch can see was last written
leaves it: the launch's buffers (or a program's device allocations) copied in, in order, so
each set holds the last of them it saw, dirty -- what a program that just copied its inputs,
or a harness that restores the buffers before every timed launch, hands the kernel.  Without
that list it is warmed by one replay of the launch (steady state of a launch repeated).

The replay loop runs as native code (runtime/models/cache_replay.py); ``_replay_python`` is its
reference, the same model in Python (``simulate(native=False)``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .. import abi
from ..emulator.memory_trace import MemoryTrace, line_kept
from .cache_replay import Caches, set_index, set_span
from .cache_replay import geometry as cache_geometry



@dataclass
class CacheStats:
    """Sector counts of a launch at each level, scaled back from the sampling (floats)."""

    sectors: float = 0.0  # every global sector accessed (L1 requests of t-sectors)
    l1_hits: float = 0.0
    l2_sectors: float = 0.0  # sectors requested from L2 (L1 misses, bypassing loads, stores, atomics)
    l2_hits: float = 0.0
    dram_read_sectors: float = 0.0
    dram_write_sectors: float = 0.0
    #: per memory slot: [sectors, L1 hits, L2 hits] (loads and atomics)
    per_slot: dict[int, list[float]] = field(default_factory=dict)
    #: per memory slot: [requests, those whose slowest sector hit L1, hit L2] (loads)
    per_slot_requests: dict[int, list[float]] = field(default_factory=dict)
    #: sectors an SM asks L2 for (its L1 misses, stores, atomics): the L2 sectors over the
    #: SMs that run CTAs
    busiest_sm_l2_sectors: float = 0.0
    #: per load slot the L1 window saw: (its sectors' L1 share, its requests' L1 share)
    window_levels: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: atomic requests (warp-level, per sector), all of them, and the most to one sector
    atomic_requests: int = 0
    atomic_max_same_sector: int = 0
    #: lane operations of the atomics to the sector with the most of them
    atomic_max_sector_lanes: int = 0
    #: operations beyond the first on one address, over all atomic requests
    atomic_same_address_extra: int = 0
    sample_factor: int = 1
    records: int = 0

    @property
    def l1_hit_rate(self) -> float:
        return self.l1_hits / self.sectors if self.sectors else 0.0

    @property
    def l2_hit_rate(self) -> float:
        return self.l2_hits / self.l2_sectors if self.l2_sectors else 0.0

    def request_levels(self, slot: int) -> tuple[float, float, float] | None:
        """Shares of a load's warp-level requests whose slowest sector came from L1, L2 and
        DRAM (None: not traced)."""
        c = self.per_slot_requests.get(slot)
        if not c or c[0] <= 0:
            return None
        n, r1, r2 = c
        return r1 / n, r2 / n, max(0.0, 1.0 - (r1 + r2) / n)

    def slot_levels(self, slot: int) -> tuple[float, float, float] | None:
        """Shares of a load's sectors served by L1, L2 and DRAM (None: not traced)."""
        c = self.per_slot.get(slot)
        if not c or c[0] <= 0:
            return None
        n, h1, h2 = c
        return h1 / n, h2 / n, max(0.0, 1.0 - (h1 + h2) / n)

    def as_dict(self) -> dict:
        return {
            "sectors": self.sectors, "l1_hit_rate": self.l1_hit_rate, "l2_sectors": self.l2_sectors,
            "l2_hit_rate": self.l2_hit_rate, "dram_read_bytes": 32.0 * self.dram_read_sectors,
            "dram_write_bytes": 32.0 * self.dram_write_sectors, "sample_factor": self.sample_factor,
            "trace_records": self.records, "atomic_requests": self.atomic_requests,
            "atomic_max_same_sector": self.atomic_max_same_sector, "atomic_max_sector_lanes": self.atomic_max_sector_lanes,
            "atomic_same_address_extra": self.atomic_same_address_extra,
        }


def request_ids(trace: MemoryTrace) -> np.ndarray:
    """Each record's warp-level request, numbered in trace order: a request's records are
    adjacent (the first marked ``TRACE_FIRST``); a change of warp or instruction also starts
    one (a start that thinning dropped)."""
    n = len(trace)
    if n == 0:
        return np.zeros(0, np.int64)
    slots, warps = trace.slots, trace.warps
    new = trace.request_starts.copy()
    new[1:] |= (slots[1:] != slots[:-1]) | (warps[1:] != warps[:-1])
    new[0] = True
    return np.cumsum(new) - 1


def replay_order(trace: MemoryTrace, warps_per_cta: int, ctas_per_sm: int,
                 sm_count: int, rid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The GPU-like order of the records, each record's SM and its *step*: sorted by
    (wave, the request's rank in its warp, SM, warp); the step numbers the (wave, rank)
    groups -- the accesses resident warps make at the same time.  ``rid``: the
    ``request_ids`` of the trace, where known."""
    warps = trace.warps
    n = len(warps)
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    if rid is None:
        rid = request_ids(trace)
    d = np.diff(warps)
    in_order = bool((d >= 0).all())  # the emulator's order: one warp after the other
    by_warp = None if in_order else np.argsort(warps, kind="stable")
    sw = warps if in_order else warps[by_warp]
    sr = rid if in_order else rid[by_warp]
    starts = np.r_[0, np.flatnonzero(d if in_order else np.diff(sw)) + 1]
    # a request's rank in its warp: requests before it in the warp's own records -- but a
    # request over the same sectors as the one before it (a struct's fields loaded one at a
    # time: the same span of sectors, another instruction) is issued right after it, with no
    # wait between: it takes that request's rank (the replay advances the resident warps a
    # rank at a time).  The same instruction again is a later trip of a loop: a rank of its own
    new_req = np.r_[True, sr[1:] != sr[:-1]]
    secs_w = trace.sectors if in_order else trace.sectors[by_warp]
    first = np.flatnonzero(new_req)
    lo = np.minimum.reduceat(secs_w, first)
    hi = np.maximum.reduceat(secs_w, first)
    slots_w = trace.slots if in_order else trace.slots[by_warp]
    same_span = np.r_[False, (lo[1:] == lo[:-1]) & (hi[1:] == hi[:-1])
                      & (sw[first[1:]] == sw[first[:-1]]) & (slots_w[first[1:]] != slots_w[first[:-1]])]
    _one_trip_a_rank(same_span, slots_w[first])
    new_req = new_req.copy()
    new_req[first[same_span]] = False
    req_count = np.cumsum(new_req) - 1
    rank_sorted = req_count - np.repeat(req_count[starts], np.diff(np.r_[starts, n]))
    if in_order:
        rank = rank_sorted
    else:
        rank = np.empty(n, np.int64)
        rank[by_warp] = rank_sorted
    cta = warps // max(1, warps_per_cta)
    sm = cta % sm_count
    wave = cta // (sm_count * max(1, ctas_per_sm))
    ranks, nwarps = int(rank.max()) + 1, int(warps.max()) + 1
    step = wave * ranks + rank
    if (int(step.max()) + 1) * sm_count * nwarps < 1 << 63:
        # one key (a stable sort keeps the records' order within a request): 2x faster
        order = np.argsort((step * sm_count + sm) * nwarps + warps, kind="stable")
    else:
        order = np.lexsort((np.arange(n), warps, sm, rank, wave))
    return order, sm, step


def _one_trip_a_rank(same_span: np.ndarray, slots: np.ndarray) -> None:
    """Keep a chain of requests that share a rank (``same_span``: each over the sectors of the
    one before) to one trip of the code: where an instruction of the chain comes again, a
    loop went round, and that request starts a rank of its own.  (A byte loop that loads a
    byte and stores it back chains load, store, load ... over one sector: one rank for 32
    trips made every later load wait for the first one's miss.)"""
    candidates = np.flatnonzero(same_span)
    if not len(candidates):
        return
    slot_of = slots.tolist()
    group: set[int] = set()
    prev = -2
    for j in candidates.tolist():
        if j != prev + 1:  # a chain starts with the request before j
            group = {slot_of[j - 1]}
        s = slot_of[j]
        if s in group:
            same_span[j] = False
            group = {s}
        else:
            group.add(s)
        prev = j


def written_before(ranges: list[tuple[int, int]], shift: int, capacity: int) -> np.ndarray:
    """The sampled sectors of ``ranges`` (address, bytes; written in this order) that an LRU
    of ``capacity`` sectors still holds afterwards: the last ``capacity`` of them (uint64)."""
    out: list[np.ndarray] = []
    held = 0
    for start, size in reversed(ranges):
        if held >= capacity:
            break
        first, last = start >> 5, (start + size + 31) >> 5
        # walk back from the end of the range in chunks until the capacity is covered
        hi = last
        while hi > first and held < capacity:
            lo = max(first, hi - max(4096, (capacity - held) << shift))
            secs = np.arange(lo, hi, dtype=np.uint64)
            secs = secs[line_kept(secs, shift)]
            out.append(secs)
            held += len(secs)
            hi = lo
    if not out:
        return np.zeros(0, np.uint64)
    allsecs = np.concatenate(out[::-1]) if len(out) > 1 else out[0]
    # chunks were gathered newest first; put them back in writing order
    return allsecs[-capacity:]


#: sectors a set holds (runtime/models/cache_replay.py): the L1 32 (8 lines' worth), the L2 64
#: (16 lines').  NVIDIA publishes neither.  Against fully associative LRUs of the same
#: capacities, the estimates of the 93 calibration and 13 timing launches move by 1.8 % at
#: most (mean |log error| 0.2550 vs 0.2552 and 0.0774 vs 0.0779), and a lookup scans one set
L1_WAYS = 32

#: sectors of a 128-byte line: the least a sampled cache holds (``sampled_capacity``)
LINE_SECTORS = 4


def sampled_capacity(capacity_bytes: float, sample_factor: int) -> int:
    """Sectors a cache holds at sampling factor ``sample_factor``: its capacity over the factor,
    but, sampled, never less than one 128-byte line.  Sampling scales reuse distances down by the factor
    (SHARDS: an access hits when fewer than capacity / factor sampled lines were touched since
    its line's last access); below one line that is a cache of one line, which hits when no
    other sampled line came between -- what a line reused by its warp every iteration (a GEMM's
    accumulator, a row walk) does.  One sector instead evicted a line's other sectors: at the
    factors of a large launch (2^12 .. 2^17) every L1 held one sector and hit almost never
    (PolyBench gemm at 2048: 0 % L1 hits, the estimate 7.7x the H100's time)."""
    sectors = int(capacity_bytes / 32 / sample_factor)
    return max(LINE_SECTORS if sample_factor > 1 else 1, sectors)
L2_WAYS = 64


def simulate(trace: MemoryTrace, warps_per_cta: int, ctas_per_sm: int, sm_count: int,
             l1_bytes: float, l2_bytes: float, warm: bool = True,
             written: list[tuple[int, int]] | None = None, active_sms: int | None = None,
             l1_ways: int = L1_WAYS, l2_ways: int = L2_WAYS, native: bool = True) -> CacheStats:
    """Replay ``trace`` through per-SM L1s and the shared L2 (module docstring), set-associative
    LRUs of ``l1_ways`` and ``l2_ways`` sectors a set (runtime/models/cache_replay.py).  With
    ``written`` (address, bytes of the memory written before the launch, oldest first) the
    L2 starts holding the last of it, dirty, instead of a warm-up replay of the trace.
    ``native=False``: the reference loop in Python (the same results, ~50x slower)."""
    f = trace.sample_factor
    window = trace.l1_window  # the sampled-only copy below drops it
    st = CacheStats(sample_factor=f, records=len(trace))
    if not len(trace):
        return st
    atomic = trace.kinds == abi.TRACE_ATOMIC
    if atomic.any():
        _, inverse, counts = np.unique(trace.sectors[atomic], return_inverse=True, return_counts=True)
        lanes = np.bincount(inverse, weights=np.maximum(1, trace.lanes[atomic]))
        hot = int(np.argmax(lanes))
        st.atomic_requests = int(atomic.sum())
        st.atomic_max_same_sector = int(counts[hot])
        st.atomic_max_sector_lanes = int(lanes[hot])
        st.atomic_same_address_extra = int(np.maximum(0, trace.lanes[atomic] - 1).sum())
        if trace.atomic_totals is not None and trace.atomic_totals[0] > st.atomic_requests:
            # the buffer ran out: the totals are counted, the hottest sector scaled up
            scale = trace.atomic_totals[0] / st.atomic_requests
            st.atomic_requests, st.atomic_same_address_extra = trace.atomic_totals
            st.atomic_max_same_sector = int(round(st.atomic_max_same_sector * scale))
            st.atomic_max_sector_lanes = int(round(st.atomic_max_sector_lanes * scale))
    sampled = trace.sampled
    if not sampled.all():
        trace = MemoryTrace(trace.sectors[sampled], trace.info[sampled], trace.shift, trace.dropped)
        if not len(trace):
            return st
    rid = request_ids(trace)
    order, sm_of, step_of = replay_order(trace, warps_per_cta, ctas_per_sm, sm_count, rid)
    trace_kinds, trace_slots = trace.kinds, trace.slots
    secs = trace.sectors[order]
    kinds = trace_kinds[order]
    slots = trace_slots[order]
    sms = sm_of[order]
    steps = step_of[order]
    l1_cap = sampled_capacity(l1_bytes, f)
    l2_cap = sampled_capacity(l2_bytes, f)
    level, per_slot, n = replay(secs, kinds, slots, sms, steps, (l1_cap, l1_ways, l2_cap, l2_ways),
                                written=written, shift=trace.shift, warm=warm, native=native)
    n_l1_hit, n_l2, n_l2_hit, n_dram_r, n_dram_w = n
    st.sectors = float(len(secs) * f)
    st.l1_hits = float(n_l1_hit * f)
    st.l2_sectors = float(n_l2 * f)
    st.l2_hits = float(n_l2_hit * f)
    st.dram_read_sectors = float(n_dram_r * f)
    st.dram_write_sectors = float(n_dram_w * f)
    st.per_slot = {k: [float(x * f) for x in v] for k, v in per_slot.items()}
    st.per_slot_requests = _request_levels(order, level, rid, trace_kinds, trace_slots, f)
    # the sampled count of one SM is noisy (its max over SMs would be biased up): the L2
    # traffic spread over the SMs that run CTAs
    if not active_sms:
        active_sms = int(np.count_nonzero(np.bincount(sms)))
    st.busiest_sm_l2_sectors = float(n_l2 * f) / max(1, active_sms)
    if window is not None and len(window) and f >= L1_WINDOW_FROM_FACTOR:
        levels = l1_window_levels(window, warps_per_cta, ctas_per_sm, sm_count, l1_bytes, l1_ways, native)
        if levels is not None:
            _apply_window(st, *levels)
    return st


#: the sampling factor from which the L1 window, not the sampled replay, says which loads hit
#: L1: the sampled L1s then hold 416 sectors or fewer (an H100's L1 over 16), too few lines
#: of a launch's own to tell a reuse that hits from one that misses
L1_WINDOW_FROM_FACTOR = 16
#: a memory slot's L1 share comes from the window where the window saw this many sectors of it
L1_WINDOW_MIN_SECTORS = 32


def l1_window_levels(window: MemoryTrace, warps_per_cta: int, ctas_per_sm: int, sm_count: int, l1_bytes: float,
                     l1_ways: int = L1_WAYS, native: bool = True
                     ) -> tuple[dict[int, list[float]], dict[int, list[float]]] | None:
    """Per memory slot, what the L1 window (``MemoryTrace.l1_window``: every sector of SM 0's
    first-wave CTAs, unsampled) says of L1: [sectors, L1 hits, L2 hits] and [requests, those
    whose slowest sector hit L1, hit L2], replayed through one L1 as SM 0 runs them.  The
    window may end inside a CTA (its buffer full): the L1 then holds the share of its
    capacity the warps the window saw would have (each resident warp its share); None where
    the window holds none of SM 0's first-wave CTAs."""
    wpc = max(1, warps_per_cta)
    warps = window.warps
    cta = warps // wpc
    k = cta // max(1, sm_count)
    sel = (cta % max(1, sm_count) == 0) & (k < max(1, ctas_per_sm))
    if not sel.any():
        return None
    warp = (k[sel] * wpc + warps[sel] % wpc).astype(np.uint64)
    info = (window.info[sel] & ~np.uint64(0xFFFFFFFF)) | warp
    t = MemoryTrace(window.sectors[sel], info)
    share = min(1.0, len(np.unique(warp)) / (max(1, ctas_per_sm) * wpc))
    capacity = max(LINE_SECTORS, int(l1_bytes / 32 * share))
    rid = request_ids(t)
    order, sm, step = replay_order(t, wpc, max(1, ctas_per_sm), 1, rid)
    level, per_slot, _n = replay(t.sectors[order], t.kinds[order], t.slots[order], sm[order], step[order],
                                 (capacity, l1_ways, LINE_SECTORS, L2_WAYS), warm=False, native=native)
    rows = {k: [float(x) for x in v] for k, v in per_slot.items()}
    return rows, _request_levels(order, level, rid, t.kinds, t.slots, 1)


def _apply_window(st: CacheStats, rows: dict[int, list[float]], requests: dict[int, list[float]]) -> None:
    """Each load's L1 share from the window (``l1_window_levels``) in place of the sampled
    replay's; its L1 misses split between L2 and DRAM as the sampled replay has them (the
    DRAM sectors stay: they come from the L2, which set sampling models), so the L2 sees the
    sectors the L1 no longer keeps."""
    l2_before = st.l2_sectors
    for slot, (ws, wl1, _wl2) in rows.items():
        if ws < L1_WINDOW_MIN_SECTORS:
            continue
        wreq = requests.get(slot)
        st.window_levels[slot] = (wl1 / ws, wreq[1] / wreq[0] if wreq and wreq[0] > 0 else wl1 / ws)
        row = st.per_slot.get(slot)
        if row is None:
            continue
        total, l1, l2 = row
        dram = max(0.0, total - l1 - l2)
        l1_new = total * wl1 / ws
        dram_new = min(dram, total - l1_new)
        l2_new = total - l1_new - dram_new
        st.l1_hits += l1_new - l1
        st.l2_sectors -= l1_new - l1
        st.l2_hits += l2_new - l2
        st.per_slot[slot] = [total, l1_new, l2_new]
        req, wreq = st.per_slot_requests.get(slot), requests.get(slot)
        if req is not None and wreq is not None and wreq[0] > 0:
            n, r1, r2 = req
            r1_new = n * wreq[1] / wreq[0]
            to_l2 = r2 / (n - r1) if n - r1 > 0 else 1.0
            st.per_slot_requests[slot] = [n, r1_new, (n - r1_new) * to_l2]
    if l2_before > 0:
        st.busiest_sm_l2_sectors *= st.l2_sectors / l2_before


def replay(secs: np.ndarray, kinds: np.ndarray, slots: np.ndarray, sms: np.ndarray, steps: np.ndarray,
           geometry: tuple[int, int, int, int], written: list[tuple[int, int]] | None = None, shift: int = 0,
           warm: bool = True, native: bool = True) -> tuple[np.ndarray, dict[int, list[int]], tuple[int, ...]]:
    """The replay loop of ``simulate``: records in replay order through caches of ``geometry``
    (L1 sectors, L1 ways, L2 sectors, L2 ways) -> (each record's level: 0 L1, 1 L2, 2 DRAM;
    per slot [sectors, L1 hits, L2 hits]; the counts L1 hits, L2 sectors, L2 hits, DRAM
    reads, DRAM writes).  The L2 starts holding the memory ``written`` before (at sampling
    level ``shift``), else warmed by a replay of the records (``warm``), else empty.
    ``native``: the compiled loop, else the reference."""
    return (_replay_native if native else _replay_python)(secs, kinds, slots, sms, steps, geometry, written, shift, warm)


#: the written memory the L2 starts from: the last twice its capacity (every set then sees
#: more than its ways of it and keeps the last it saw, as a fully associative L2 keeps the
#: last capacity)
WRITTEN_SPAN = 2


def _disjoint(ranges: list[tuple[int, int]]) -> bool:
    """Whether the ranges (address, bytes) share no sector (``written_before`` then gives
    distinct sectors)."""
    spans = sorted((start >> 5, (start + size + 31) >> 5) for start, size in ranges if size > 0)
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def _replay_native(secs, kinds, slots, sms, steps, geometry, written, shift, warm):
    """The replay loop in native code (runtime/models/cache_replay.py)."""
    l1_cap, l1_ways, l2_cap, l2_ways = geometry
    with Caches(int(sms.max(initial=0)) + 1, l1_cap, l1_ways, l2_cap, l2_ways) as caches:
        if written is not None and _disjoint(written):
            caches.fill_written(written, shift, WRITTEN_SPAN * l2_cap, secs)
        elif written is not None:  # sectors written twice: accesses in writing order
            caches.fill(written_before(written, shift, WRITTEN_SPAN * l2_cap), True)
        elif warm:
            caches.fill(secs, kinds >= abi.TRACE_STORE)
        level, rows = caches.replay(secs, kinds, slots, sms, steps)
        n = tuple(caches.count(x) for x in ("l1_hits", "l2", "l2_hits", "dram_r", "dram_w"))
    present = np.zeros(len(rows), bool)
    present[slots] = True
    per_slot = {int(k): rows[k].tolist() for k in np.flatnonzero(present)}
    return level, per_slot, n


def _replay_python(secs, kinds, slots, sms, steps, geometry, written, shift, warm):
    """The reference replay loop: the native loop's semantics over ``OrderedDict`` sets."""
    l1_cap, l1_ways, l2_cap, l2_ways = geometry
    l1_nsets, l1_w, l1_rem = cache_geometry(l1_cap, l1_ways)
    l2_nsets, l2_w, l2_rem = cache_geometry(l2_cap, l2_ways)
    load, store = abi.TRACE_LOAD, abi.TRACE_STORE
    level = np.zeros(len(secs), np.int8)  # where each record's sector came from: 0 L1, 1 L2, 2 DRAM
    # L2 set -> sector -> [dirty, step it was filled at, where the fill came from (1 L2, 2 DRAM)]
    l2: dict[int, OrderedDict[int, list]] = {}

    def l2_access(s: int, j: int, write: bool, step: int) -> tuple[bool, int, int]:
        """(hit, the level the data comes from: 1 L2, 2 DRAM; dirty sectors evicted).  A hit
        on a sector that a miss of the same step is still fetching waits for that miss."""
        ways = set_span(j, l2_w, l2_rem)[1]
        d = l2.get(j)
        if d is None:
            d = l2[j] = OrderedDict()
        e = d.get(s)
        if e is not None:
            d.move_to_end(s)
            if write:
                e[0] = True
            return True, (e[2] if e[1] == step else 1), 0
        d[s] = [write, step, 2]
        if len(d) > ways:
            _, old = d.popitem(last=False)
            return False, 2, 1 if old[0] else 0
        return False, 2, 0

    if written is not None:
        prewarm = written_before(written, shift, WRITTEN_SPAN * l2_cap)
        for s, j in zip(prewarm.tolist(), set_index(prewarm, l2_nsets).tolist()):
            l2_access(s, j, True, -1)
    elif warm:
        for s, j, w in zip(secs.tolist(), set_index(secs, l2_nsets).tolist(), (kinds >= store).tolist()):
            l2_access(s, j, w, -1)
    # per (SM, L1 set): sector -> (step it was filled at, the level the fill came from)
    l1s: dict[tuple[int, int], OrderedDict[int, tuple[int, int]]] = {}
    per_slot: dict[int, list[int]] = {}
    n_l1_hit = n_l2 = n_l2_hit = n_dram_r = n_dram_w = 0
    records = zip(secs.tolist(), kinds.tolist(), slots.tolist(), sms.tolist(), steps.tolist(),
                  set_index(secs, l1_nsets).tolist(), set_index(secs, l2_nsets).tolist())
    for idx, (s, k, slot, sm, step, j1, j2) in enumerate(records):
        c = per_slot.get(slot)
        if c is None:
            c = per_slot[slot] = [0, 0, 0]
        if k == load:
            l1 = l1s.get((sm, j1))
            if l1 is None:
                l1 = l1s[sm, j1] = OrderedDict()
            e1 = l1.get(s)
            if e1 is not None:
                l1.move_to_end(s)
                n_l1_hit += 1
                c[0] += 1
                c[1] += 1
                if e1[0] == step:
                    # a hit on a line another warp's miss of this step is still fetching
                    # (merged in the L1's miss tracking): the warp waits as long as that miss
                    level[idx] = e1[1]
                continue
        elif k == store:
            l1 = l1s.get((sm, j1))
            if l1 is not None and s in l1:
                l1.move_to_end(s)  # write-through: a line present stays, updated (a thread reads back what it stored)
        n_l2 += 1
        hit, lvl, evicted = l2_access(s, j2, k >= store, step)
        n_dram_w += evicted
        if k == store and not hit:
            l2[j2][s][2] = 1  # a stored sector is there for a load of the same step
        if k == load:
            l1[s] = (step, lvl)
            if len(l1) > set_span(j1, l1_w, l1_rem)[1]:
                l1.popitem(last=False)
        if hit:
            n_l2_hit += 1
        if k != store:
            c[0] += 1
            if hit:
                c[2] += 1
            else:
                n_dram_r += 1
            level[idx] = lvl
    return level, per_slot, (n_l1_hit, n_l2, n_l2_hit, n_dram_r, n_dram_w)


def _request_levels(order: np.ndarray, level: np.ndarray, rid: np.ndarray, kinds: np.ndarray, slots: np.ndarray,
                    f: int) -> dict[int, list[float]]:
    """Per load slot: requests, and those whose slowest sector hit L1 or L2.  Records are
    grouped into requests in the emulator's order (``rid``, ``kinds``, ``slots``: a request's
    records are adjacent there, the first marked), then each request waits for its slowest
    record."""
    lv = np.empty(len(order), np.int8)
    lv[order] = level  # back to trace order
    loads = kinds == abi.TRACE_LOAD
    loads |= kinds == abi.TRACE_LOAD_L2
    if not loads.any():
        return {}
    first_idx = np.flatnonzero(np.r_[True, rid[1:] != rid[:-1]])
    worst = np.maximum.reduceat(lv, first_idx)  # request ids do not decrease
    req_slot = slots[first_idx]
    req_load = loads[first_idx]
    out: dict[int, list[float]] = {}
    for slot in np.unique(req_slot[req_load]).tolist():
        sel = req_load & (req_slot == slot)
        w = worst[sel]
        out[int(slot)] = [float(len(w) * f), float((w == 0).sum() * f), float((w == 1).sum() * f)]
    return out


def with_exact_sectors(st: CacheStats, loads: dict[int, float], others: float) -> None:
    """The replay's shares applied to the launch's exact sector counts (``--memory-metrics``
    counts every access's sectors): ``loads`` per load slot, ``others`` the stores' and
    atomics'.  A sampled trace holds a handful of lines at large factors, and their mix of
    slots decides the totals: PolyBench gemm at 2048 kept 3 lines, all of its accumulator
    (load and store every iteration), 2.8x the sectors and none of its L1-resident loads.
    Each load slot keeps the L1 share the window (or else the replay) gave it -- a slot
    neither saw, the replayed loads' -- and its misses' L2 share; DRAM stays as replayed."""
    replayed = [v for v in st.per_slot.values() if v[0] > 0]
    n = sum(v[0] for v in replayed)
    p1 = sum(v[1] for v in replayed) / n if n else 0.0
    miss = n - sum(v[1] for v in replayed)
    q = sum(v[2] for v in replayed) / miss if miss > 0 else 1.0
    l2_before = st.l2_sectors
    rows: dict[int, list[float]] = {}
    for slot, total in loads.items():
        row = st.per_slot.get(slot)
        if slot in st.window_levels:
            r1 = st.window_levels[slot][0]
        elif row and row[0] > 0:
            r1 = row[1] / row[0]
        else:
            r1 = p1
        r2 = row[2] / (row[0] - row[1]) if row and row[0] - row[1] > 0 else q
        rows[slot] = [total, total * r1, total * (1.0 - r1) * r2]
        if slot not in st.per_slot_requests and slot in st.window_levels:
            w = st.window_levels[slot][1]
            st.per_slot_requests[slot] = [1.0, w, (1.0 - w) * r2]
    st.per_slot.update(rows)
    st.sectors = sum(loads.values()) + others
    st.l1_hits = sum(r[1] for r in rows.values())
    st.l2_sectors = st.sectors - st.l1_hits
    st.l2_hits = min(st.l2_sectors, max(0.0, st.l2_sectors - st.dram_read_sectors))
    if l2_before > 0:
        st.busiest_sm_l2_sectors *= st.l2_sectors / l2_before


__all__ = ["CacheStats", "replay", "replay_order", "simulate", "with_exact_sectors", "written_before"]
