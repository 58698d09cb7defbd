"""The timing estimate's memory side: the address trace the emulator records and the L1/L2
replay of runtime/models/cache_model.py, with counts worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from hypa.runtime import abi
from hypa.runtime.emulator.memory_trace import MemoryTrace, line_kept
from hypa.runtime.models.cache_model import (CacheStats, l1_window_levels, replay, replay_order, sampled_capacity,
                                             simulate, with_exact_sectors)
from hypa.runtime.models.cache_replay import Caches, geometry, set_index
from hypa.runtime.models.timing import cta_imbalance

from helpers import emulate


def trace(records: list[tuple[int, int, int, int]], shift: int = 0, requests: bool = True) -> MemoryTrace:
    """(sector, warp, slot, kind) records; each its own warp-level request unless
    ``requests`` is false (then adjacent records of one warp and slot form one)."""
    sec = np.array([r[0] for r in records], np.uint64)
    first = abi.TRACE_FIRST if requests else 0
    info = np.array([r[1] | (r[2] << 32) | (r[3] << 48) | first for r in records], np.uint64)
    return MemoryTrace(sec, info, shift)


LD, ST, AT = abi.TRACE_LOAD, abi.TRACE_STORE, abi.TRACE_ATOMIC
#: the hand-computed replays hold for the compiled loop and the Python reference alike
NATIVE = pytest.mark.parametrize("native", [True, False], ids=["native", "python"])


def test_replay_runs_resident_warps_in_lock_step():
    # warp 0 accesses sectors 0,1,2; warp 1 (same CTA) 10,11; both on SM 0
    t = trace([(0, 0, 0, LD), (1, 0, 0, LD), (2, 0, 0, LD), (10, 1, 0, LD), (11, 1, 0, LD)])
    order, sm, step = replay_order(t, warps_per_cta=2, ctas_per_sm=1, sm_count=4)
    assert t.sectors[order].tolist() == [0, 10, 1, 11, 2]
    assert sm.tolist() == [0] * 5
    assert step[order].tolist() == [0, 0, 1, 1, 2]  # the k-th accesses of both warps: one step
    # one request of three sectors (not marked apart): its records stay together
    t = trace([(0, 0, 0, LD), (1, 0, 0, LD), (2, 0, 0, LD), (10, 1, 0, LD), (11, 1, 0, LD)], requests=False)
    order, sm, step = replay_order(t, 2, 1, 4)
    assert t.sectors[order].tolist() == [0, 1, 2, 10, 11] and step[order].tolist() == [0] * 5
    # two CTAs of one warp: CTA 1 goes to SM 1; with one SM and one CTA per SM, CTA 1 is
    # a later wave and runs after CTA 0
    t = trace([(0, 0, 0, LD), (1, 0, 0, LD), (10, 1, 0, LD), (11, 1, 0, LD)])
    order, sm, step = replay_order(t, 1, 1, 2)
    assert t.sectors[order].tolist() == [0, 10, 1, 11] and sm.tolist() == [0, 0, 1, 1]
    order, sm, step = replay_order(t, 1, 1, 1)
    assert t.sectors[order].tolist() == [0, 1, 10, 11]
    assert step[order].tolist() == [0, 1, 2, 3]  # the second wave's steps follow the first's


def test_a_structs_fields_share_a_step():
    """A 16-byte struct loaded a 4-byte field at a time (cuda-samples' alignedTypes): the
    field loads (slots 0 and 1) cover the same sectors and issue back to back, so they take
    one step -- the replay advances every resident warp a step at a time, and a step per field
    put all the GPU's other warps' requests between them.  The same instruction again (a
    loop's next trip, slot 0 after slot 0) and a load of other sectors take steps of their own."""
    rec = [(0, 0, 0, LD), (1, 0, 0, LD), (0, 0, 1, LD), (1, 0, 1, LD), (0, 0, 1, LD), (1, 0, 1, LD),
           (8, 0, 2, LD), (9, 0, 2, LD)]
    t = trace(rec, requests=False)
    t.info[[0, 2, 4, 6]] |= np.uint64(abi.TRACE_FIRST)
    order, sm, step = replay_order(t, 1, 1, 1)
    assert step.tolist() == [0, 0, 0, 0, 1, 1, 2, 2]


def test_a_loop_that_loads_and_stores_one_byte_a_trip_takes_a_step_a_trip():
    """A byte loop (HeCBench chacha20's keystream XOR: load p[i], store p[i], i += 1) chains
    load, store, load ... over one sector, each request over the sectors of the one before
    from another instruction.  Only one trip shares a step: the load's instruction again
    starts the next.  (All 32 trips in one step made each later load wait for the first
    one's miss: 4x the H200's time.)  A loop of three instructions on one sector, and a
    chain that comes back to its second instruction (0 1 2 1), split the same way."""
    t = trace([(5, 0, k % 2, LD if k % 2 == 0 else ST) for k in range(8)])
    order, sm, step = replay_order(t, 1, 1, 1)
    assert step.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    t = trace([(5, 0, k % 3, LD) for k in range(6)])
    assert replay_order(t, 1, 1, 1)[2].tolist() == [0, 0, 0, 1, 1, 1]
    t = trace([(5, 0, s, LD) for s in (0, 1, 2, 1, 3)])
    assert replay_order(t, 1, 1, 1)[2].tolist() == [0, 0, 0, 1, 1]
    # the request's L1 level: each load after the first trip's hits L1 at once
    st = simulate(trace([(5, 0, k % 2, LD if k % 2 == 0 else ST) for k in range(8)]), 1, 1, 1,
                  l1_bytes=1 << 16, l2_bytes=1 << 20)
    assert st.per_slot_requests[0] == [4.0, 3.0, 1.0]


@NATIVE
def test_l1_hits_l2_hits_and_dram_by_hand(native):
    # one warp reads sectors 0..3 twice: 4 L1 hits; the L2 is warm (the launch ran
    # before), so the 4 misses hit L2 and nothing comes from DRAM
    rec = [(s, 0, 0, LD) for s in range(4)] * 2
    st = simulate(trace(rec), 1, 1, 1, l1_bytes=4 * 32, l2_bytes=1 << 20, native=native)
    assert (st.sectors, st.l1_hits, st.l2_sectors, st.l2_hits, st.dram_read_sectors) == (8, 4, 4, 4, 0)
    assert st.slot_levels(0) == (0.5, 0.5, 0.0)
    # an L1 of 2 sectors: LRU evicts each sector before its reuse (0 1 2 3 0 1 2 3)
    st = simulate(trace(rec), 1, 1, 1, l1_bytes=2 * 32, l2_bytes=1 << 20, native=native)
    assert (st.l1_hits, st.l2_sectors) == (0, 8)
    # an L2 of 2 sectors, cold and warm: every access misses
    st = simulate(trace(rec), 1, 1, 1, l1_bytes=2 * 32, l2_bytes=2 * 32, warm=False, native=native)
    assert (st.l2_hits, st.dram_read_sectors) == (0, 8)


@NATIVE
def test_a_sampled_cache_holds_at_least_one_line(native):
    """At sampling factor 2^8 an L1 of 3 * 256 sectors scales to 3 sectors -- less than the line
    a warp reuses every iteration (a GEMM's accumulator: load, then store, its 4 sectors).  It
    holds one line (SHARDS: hit when no other sampled line came between), so the 4 loads of
    every iteration after the first hit: 3 x 4 = 12 hits of 16, where a 3-sector LRU evicted
    each sector before its reuse (0 hits).  Unsampled, the same capacity is 3 * 256 sectors."""
    rec = [(s, 0, 0, LD) for s in range(4)] * 4
    st = simulate(trace(rec, shift=8), 1, 1, 1, l1_bytes=3 * 256 * 32, l2_bytes=1 << 30, native=native)
    assert (st.l1_hits, st.sectors) == (12 * 256, 16 * 256)
    assert sampled_capacity(3 * 256 * 32, 256) == 4 and sampled_capacity(3 * 32, 1) == 3
    # the H100's L1 (1,664 lines): 52 sectors at 2^7, one line (not 1.6 sectors) at 2^12
    assert (sampled_capacity(1664 * 128, 128), sampled_capacity(1664 * 128, 4096)) == (52, 4)


@NATIVE
def test_stores_write_back_dirty_sectors_and_invalidate_l1(native):
    # load s0, store s0 (written through, the L1 copy updated), load s0 again: an L1 hit
    st = simulate(trace([(0, 0, 0, LD), (0, 0, 1, ST), (0, 0, 2, LD)]), 1, 1, 1, 1024, 1024, native=native)
    assert (st.l1_hits, st.l2_sectors, st.l2_hits) == (1, 2, 2)
    # a store does not allocate in L1: a load after a store to a new sector misses it
    st = simulate(trace([(5, 0, 1, ST), (5, 0, 2, LD)]), 1, 1, 1, 1024, 1024, native=native)
    assert (st.l1_hits, st.l2_sectors) == (0, 2)
    # stores to 4 sectors through a 2-sector L2: the warm replay leaves 2 dirty sectors,
    # the measured one evicts all 4 it writes (dirty) before the end: 4 DRAM writes
    st = simulate(trace([(s, 0, 0, ST) for s in range(4)]), 1, 1, 1, 1024, 2 * 32, native=native)
    assert (st.dram_write_sectors, st.dram_read_sectors) == (4, 0)
    # a footprint that fits: no DRAM traffic in steady state
    st = simulate(trace([(s, 0, 0, ST) for s in range(4)]), 1, 1, 1, 1024, 8 * 32, native=native)
    assert (st.dram_write_sectors, st.dram_read_sectors) == (0, 0)


@NATIVE
def test_atomics_count_per_sector(native):
    rec = [(7, w, 0, AT) for w in range(5)] + [(9, 0, 0, AT)]
    st = simulate(trace(rec), 1, 1, 4, 1024, 1024, native=native)
    assert (st.atomic_requests, st.atomic_max_same_sector) == (6, 5)


def test_sampling_keeps_whole_lines():
    secs = np.arange(4096, dtype=np.uint64)
    k1 = line_kept(secs, 3)
    # the four sectors of a 128-byte line are kept or dropped together, ~1/8 of the lines
    assert (k1.reshape(-1, 4) == k1.reshape(-1, 4)[:, :1]).all()
    assert 0.08 < k1.mean() < 0.17
    # a deeper level keeps a subset
    assert not (line_kept(secs, 4) & ~k1).any()


SAXPY = """.version 8.0
.target sm_80
.address_size 64
.visible .entry saxpy(.param .u32 n, .param .f32 a, .param .u64 x, .param .u64 y)
{
    .reg .pred %p; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
    ld.param.u32 %r1, [n];
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p, %r5, %r1;
    @%p bra DONE;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    ld.global.f32 %f3, [%rd5];
    fma.rn.f32 %f3, %f1, %f2, %f3;
    st.global.f32 [%rd5], %f3;
DONE:
    ret;
}
"""


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_emulator_trace_of_saxpy(mode):
    # 700 floats: x and y are read once, y written once, 88 sectors each (4 per warp, 21
    # full warps, 28 threads of the 22nd: 4 sectors); every record names its warp, slot
    # and kind; CTA 3 (threads 768..1023) has nothing to do
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(1024, dtype=np.float32)
    r = emulate(SAXPY, [700, 2.0, x, y], grid=4, block=256, mode=mode, address_trace=4096)
    t = r.memory_trace
    assert t.shift == 0 and len(t) == 264
    assert np.bincount(t.kinds).tolist() == [176, 0, 88]
    assert sorted(set(t.slots.tolist())) == [0, 1, 2]
    assert t.warps.max() == 21  # 700 threads: warps 0..21 of 4 x 8
    # warp-instructions per CTA: 18 for a warp with work (10 to the branch, 7, ret), 11
    # for one without; CTA 2 has 5 full warps, one partial (18) and 2 idle ones
    assert r.cta_steps.tolist() == [144, 144, 6 * 18 + 2 * 11, 8 * 11]
    # no barrier: one scheduling round, whose longest warp ran 18 (11 in the idle CTA)
    assert r.cta_critical_steps.tolist() == [18, 18, 18, 11]
    # a buffer of 64 records: sampled down, every kept record's line kept at that level
    r = emulate(SAXPY, [700, 2.0, x, y], grid=4, block=256, mode=mode, address_trace=64)
    t = r.memory_trace
    assert t.shift >= 3 and 0 < len(t) <= 64 and line_kept(t.sectors, t.shift).all()
    st = simulate(t, 8, 8, 132, 200_000, 40 << 20)
    assert 264 * 0.5 < st.sectors < 264 * 2  # the sampled estimate of 264 sectors


def test_l1_window_holds_sm0s_first_wave_unsampled():
    """The L1 window keeps every sector of the CTAs SM 0 runs first -- linear ids 0, 132,
    264 of 300 CTAs of one warp -- whatever the sampled trace kept: each of those CTAs'
    warp reads x and y (one sector each, 8 floats) and writes y, 3 records a CTA."""
    n = 300 * 8
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, dtype=np.float32)
    r = emulate(SAXPY, [n, 2.0, x, y], grid=300, block=8, mode="slice", address_trace=64)
    t = r.memory_trace
    assert t.shift >= 3  # the trace itself is sampled down
    w = t.l1_window
    assert sorted(set((w.warps).tolist())) == [0, 132, 264] and len(w) == 9
    assert np.bincount(w.kinds).tolist() == [6, 0, 3]
    # sectors: CTA c reads x[8c..8c+7], one sector, at x's window + 32 c bytes
    x_sectors = sorted(int(s) for s, k, sl in zip(w.sectors, w.kinds, w.slots) if sl == 0)
    assert [b - x_sectors[0] for b in x_sectors] == [0, 132, 264]


@NATIVE
def test_l1_window_decides_l1_hits_of_a_sampled_trace(native):
    """At sampling factor 2^6 the per-SM L1s are the window's business: SM 0's first-wave
    CTAs (0 and 2 of 2 SMs x 2 CTAs) each read 16 sectors (slot 0), then the same 16 again
    (slot 1): slot 1's 32 sectors (32 requests of one) all hit L1, slot 0's none; CTA 1 (SM 1)
    is not in the window.  The sampled trace says slot 1 never hits (what it kept holds no
    reuse); with the window its sectors all hit L1 and leave the L2 (DRAM stays as sampled:
    none)."""
    def reads(warp: int, base: int) -> list[tuple[int, int, int, int]]:
        return [(base + k, warp, 0, LD) for k in range(16)] + [(base + k, warp, 1, LD) for k in range(16)]

    window = trace(reads(0, 0) + reads(2, 100) + reads(1, 200))
    rows, requests = l1_window_levels(window, 1, 2, 2, 64 * 32, native=native)
    assert rows[0] == [32.0, 0.0, 0.0] and rows[1] == [32.0, 32.0, 0.0]
    assert requests[1] == [32.0, 32.0, 0.0] and requests[0] == [32.0, 0.0, 0.0]
    sampled = trace([(0, 0, 0, LD), (1000, 0, 1, LD)], shift=6)  # no reuse in what was kept
    sampled.l1_window = window
    st = simulate(sampled, 1, 2, 2, l1_bytes=64 * 32, l2_bytes=1 << 30, native=native)
    assert st.per_slot[1][:2] == [64.0, 64.0] and st.per_slot[0][1] == 0.0
    assert (st.l1_hits, st.l2_sectors) == (64.0, 64.0)
    sampled.l1_window = None
    st = simulate(sampled, 1, 2, 2, l1_bytes=64 * 32, l2_bytes=1 << 30, native=native)
    assert (st.l1_hits, st.l2_sectors) == (0.0, 128.0)


def test_exact_sectors_carry_the_replayed_shares():
    """A sampled replay that kept 100 sectors of slot 0 (60 L1 hits, 30 L2 hits) and none of
    slot 1, whose L1 window says slot 1 hits 90 %: the exact counts (1,000 and 2,000 load
    sectors, 500 store sectors) take slot 0's shares and slot 1's window share, its misses
    the replayed loads' L2 share (30 of 40); L2 sees everything L1 does not keep."""
    st = CacheStats(sample_factor=64, sectors=164.0, l1_hits=60.0, l2_sectors=104.0, l2_hits=94.0,
                    dram_read_sectors=10.0, per_slot={0: [100.0, 60.0, 30.0]},
                    per_slot_requests={0: [25.0, 10.0, 12.0]}, busiest_sm_l2_sectors=52.0)
    st.window_levels[1] = (0.9, 0.5)
    with_exact_sectors(st, {0: 1000.0, 1: 2000.0}, 500.0)
    assert st.per_slot[0] == pytest.approx([1000.0, 600.0, 300.0])
    assert st.per_slot[1] == pytest.approx([2000.0, 1800.0, 150.0])
    assert (st.sectors, st.l1_hits, st.l2_sectors) == pytest.approx((3500.0, 2400.0, 1100.0))
    assert st.per_slot_requests[1] == pytest.approx([1.0, 0.5, 0.375])
    assert st.busiest_sm_l2_sectors == pytest.approx(52.0 * 1100.0 / 104.0)


def test_cta_imbalance():
    assert cta_imbalance([5, 5, 5, 5], 2) == 1.0
    # slots get 4 | 1+1+1+1: makespan 4 against 3 rounds x mean 1.6
    assert cta_imbalance([4, 1, 1, 1, 1], 2) == pytest.approx(4 / 4.8)
    # one CTA 10x the others, fewer CTAs than slots: the busiest slot is that CTA
    assert cta_imbalance([10, 1, 1, 1], 8) == pytest.approx(10 / 3.25)


def test_trace_from_worker_processes():
    # -j 2: each worker traces its CTA range; the parts come back in CTA order
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(1024, dtype=np.float32)
    one = emulate(SAXPY, [700, 2.0, x, y], grid=4, block=256, address_trace=4096)
    two = emulate(SAXPY, [700, 2.0, x, y], grid=4, block=256, address_trace=4096, jobs=2)
    assert two.cta_steps.tolist() == one.cta_steps.tolist()
    assert two.cta_critical_steps.tolist() == one.cta_critical_steps.tolist()
    a, b = one.memory_trace, two.memory_trace
    assert sorted(zip(a.sectors.tolist(), a.info.tolist())) == sorted(zip(b.sectors.tolist(), b.info.tolist()))


ATOMIC_ONE = """.version 8.0
.target sm_80
.address_size 64
.visible .entry bump(.param .u64 p)
{
    .reg .b32 %r<3>; .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 32;
    cvt.u64.u32 %rd2, %r2;
    add.s64 %rd1, %rd1, %rd2;
    atom.global.add.u32 %r1, [%rd1], 1;
    ret;
}
"""


def test_atomic_lanes_per_sector():
    # 2 CTAs x 64 threads: lanes of warp 0 add to word 0, warp 1 to word 8 (byte 32: the next
    # sector): 4 requests of 32 lanes, 2 per sector
    a = np.zeros(16, dtype=np.uint32)
    r = emulate(ATOMIC_ONE, [a], grid=2, block=64, mode="full", address_trace=1024)
    t = r.memory_trace
    assert len(t) == 4 and t.lanes.tolist() == [32] * 4 and set(t.kinds.tolist()) == {AT}
    st = simulate(t, 2, 1, 132, 1024, 1 << 20)
    assert (st.atomic_requests, st.atomic_max_same_sector, st.atomic_max_sector_lanes) == (4, 2, 64)
    assert st.atomic_same_address_extra == 4 * 31
    assert r.buffers["<array 0>"][[0, 8]].tolist() == [64, 64]


def test_atomics_past_a_full_buffer_are_counted():
    # 8 CTAs x 64 threads = 16 requests of 32 lanes into a 4-record buffer: the totals are
    # counted outside it, the hottest sector scaled up from the records kept
    a = np.zeros(16, dtype=np.uint32)
    r = emulate(ATOMIC_ONE, [a], grid=8, block=64, mode="full", address_trace=4)
    t = r.memory_trace
    assert len(t) == 4 and t.atomic_totals == (16, 16 * 31)
    st = simulate(t, 2, 1, 132, 1024, 1 << 20)
    assert (st.atomic_requests, st.atomic_same_address_extra) == (16, 16 * 31)
    assert st.atomic_max_sector_lanes == 8 * 32  # 4 records of one sector x (16 / 4)


@NATIVE
def test_a_request_waits_for_its_slowest_sector(native):
    # one warp, one load slot: request 1 reads sectors 0..3 (all miss L1), request 2 reads
    # 0..3 again (all hit L1), request 3 reads 0..2 and 9 (one L1 miss): requests wait for
    # L2 (warm), L1, L2; sector shares alone would say 3 of 12 L2 ... 5 of 12
    F = abi.TRACE_FIRST
    rec = []
    for secs in ([0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 9]):
        for j, s in enumerate(secs):
            rec.append((s, 0, 0, LD))
    t = trace(rec, requests=False)
    t.info[[0, 4, 8]] |= np.uint64(F)
    st = simulate(t, 1, 1, 1, 1024, 1 << 20, native=native)
    assert st.per_slot_requests[0] == [3.0, 1.0, 2.0]
    assert st.request_levels(0) == (1 / 3, 2 / 3, 0.0)
    assert st.slot_levels(0) == (7 / 12, 5 / 12, 0.0)


def test_emulated_requests_are_marked():
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(1024, dtype=np.float32)
    r = emulate(SAXPY, [700, 2.0, x, y], grid=4, block=256, address_trace=4096)
    t = r.memory_trace
    # 22 warps with work x 3 accesses, each request's first sector marked
    assert int(t.request_starts.sum()) == 22 * 3


BARRIER_PHASES = """.version 8.0
.target sm_80
.address_size 64
.visible .entry phases()
{
    .reg .pred %p; .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p, %r1, 0;
    @%p bra SYNC;
    mov.u32 %r2, 0;
LOOP:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p, %r2, 10;
    @%p bra LOOP;
SYNC:
    bar.sync 0;
    setp.ne.u32 %p, %r1, 32;
    @%p bra DONE;
    add.u32 %r3, %r1, 1;
    add.u32 %r3, %r3, 1;
DONE:
    ret;
}
"""


def test_critical_steps_follow_the_busiest_warp_of_each_barrier_phase():
    # 2 warps.  Before the barrier warp 0 runs 3 + 1 + 10 x 3 = 34 warp-instructions
    # (mov setp bra, mov, the loop), warp 1 runs 3 and waits; after it warp 0 runs
    # 1 (bar.sync) + 2 + 1 (ret) = 4 more, warp 1 (lane 32 works) 1 + 2 + 2 + 1 = 6
    r = emulate(BARRIER_PHASES, [], grid=1, block=64, address_trace=64)
    assert r.cta_steps.tolist() == [34 + 4 + 3 + 6]
    assert r.cta_critical_steps.tolist() == [34 + 6]


def test_a_hit_on_a_line_in_flight_waits_for_the_miss():
    # two warps of one CTA load sector 0 in the same step: the first misses L1 and (cold)
    # L2, the second finds the line allocated but still on its way -- it waits as long as
    # the first (DRAM), though it counts as an L1 hit; a later step's hit is a real hit
    rec = [(0, 0, 0, LD), (0, 1, 0, LD), (0, 0, 0, LD)]
    st = simulate(trace(rec), 2, 1, 1, 1024, 1 << 20, warm=False)
    assert (st.l1_hits, st.l2_sectors, st.dram_read_sectors) == (2, 1, 1)
    assert st.per_slot_requests[0] == [3.0, 1.0, 0.0]  # two wait for DRAM, one hits L1
    # warps on two SMs: the second SM's L2 access hits the sector the first one's miss is
    # fetching (same step): an L2 hit that waits for DRAM
    st = simulate(trace([(0, 0, 0, LD), (0, 1, 0, LD)]), 1, 1, 2, 1024, 1 << 20, warm=False)
    assert (st.l1_hits, st.l2_hits, st.dram_read_sectors) == (0, 1, 1)
    assert st.per_slot_requests[0] == [2.0, 0.0, 0.0]
    # a store's sector is there for a load of the same step (nothing to fetch)
    st = simulate(trace([(0, 0, 1, ST), (0, 1, 0, LD)]), 1, 1, 2, 1024, 1 << 20, warm=False)
    assert st.per_slot_requests[0] == [1.0, 0.0, 1.0]


@NATIVE
def test_a_hit_on_a_sector_fetched_in_the_same_step_waits_for_the_fetch(native):
    # warps 0 and 1 of one CTA load sector 0 in step 0 (cold L2): warp 0 misses to DRAM,
    # warp 1 hits the L1 line warp 0 is still fetching and waits as long (DRAM); warp 0's
    # second load (step 1) hits L1 for real
    t = trace([(0, 0, 0, LD), (0, 0, 0, LD), (0, 1, 0, LD)])
    st = simulate(t, 2, 1, 1, 1024, 1024, warm=False, native=native)
    assert (st.l1_hits, st.l2_sectors, st.dram_read_sectors) == (2, 1, 1)
    assert st.per_slot_requests[0] == [3.0, 1.0, 0.0]  # requests served by L1, L2: DRAM for two
    # the same through L2 (loads bypassing L1): warp 1's L2 hit waits for warp 0's miss
    LD2 = abi.TRACE_LOAD_L2
    st = simulate(trace([(0, 0, 0, LD2), (0, 1, 0, LD2)]), 2, 1, 1, 1024, 1024, warm=False, native=native)
    assert (st.l2_hits, st.dram_read_sectors) == (1, 1)
    assert st.per_slot_requests[0] == [2.0, 0.0, 0.0]


def test_cache_geometry():
    # 100 sectors of 32 ways: 3 sets sharing the capacity exactly (34 + 33 + 33); a cache
    # smaller than its ways is one fully associative set
    assert geometry(100, 32) == (3, 33, 1)
    assert geometry(4, 32) == (1, 4, 0)
    assert geometry(4096, 16) == (256, 16, 0)
    # a line's four sectors share a set
    s = set_index(np.arange(4000, dtype=np.uint64), 37)
    assert (s.reshape(-1, 4) == s.reshape(-1, 4)[:, :1]).all() and set(s.tolist()) == set(range(37))


def one_set_lines(nsets: int) -> tuple[int, int, int]:
    """First sectors of two lines in one set of ``nsets`` and of one line in another."""
    first = set_index(np.arange(0, 4096, 4, dtype=np.uint64), nsets)
    same = np.flatnonzero(first == first[0])
    other = np.flatnonzero(first != first[0])
    return 0, 4 * int(same[1]), 4 * int(other[0])


@NATIVE
def test_set_conflicts_evict_in_a_one_way_cache(native):
    LD2 = abi.TRACE_LOAD_L2
    a, b, c = one_set_lines(2)
    # an L2 of 2 sectors in 2 sets of 1 way, cold, loads bypassing L1: lines a and b share a
    # set and evict each other (a b a b: 4 DRAM reads), a and c do not (2 L2 hits)
    l2 = dict(l1_bytes=1024, l2_bytes=2 * 32, warm=False, native=native)
    st = simulate(trace([(s, 0, 0, LD2) for s in (a, b, a, b)]), 1, 1, 1, l2_ways=1, **l2)
    assert (st.l2_hits, st.dram_read_sectors) == (0, 4)
    st = simulate(trace([(s, 0, 0, LD2) for s in (a, c, a, c)]), 1, 1, 1, l2_ways=1, **l2)
    assert (st.l2_hits, st.dram_read_sectors) == (2, 2)
    # the same 2 sectors as one set of 2 ways (fully associative): a b a b hits twice
    st = simulate(trace([(s, 0, 0, LD2) for s in (a, b, a, b)]), 1, 1, 1, l2_ways=2, **l2)
    assert (st.l2_hits, st.dram_read_sectors) == (2, 2)
    # a dirty sector a conflict evicts is a DRAM write: store a, load b; not so for c
    st = simulate(trace([(a, 0, 0, ST), (b, 0, 1, LD2)]), 1, 1, 1, l2_ways=1, **l2)
    assert (st.dram_write_sectors, st.dram_read_sectors) == (1, 1)
    st = simulate(trace([(a, 0, 0, ST), (c, 0, 1, LD2)]), 1, 1, 1, l2_ways=1, **l2)
    assert (st.dram_write_sectors, st.dram_read_sectors) == (0, 1)
    # an L1 of 2 sectors in 2 sets of 1 way (the L2 large and warm): a b a b never hits L1,
    # a c a c hits twice
    l1 = dict(l1_bytes=2 * 32, l2_bytes=1 << 20, l1_ways=1, native=native)
    st = simulate(trace([(s, 0, 0, LD) for s in (a, b, a, b)]), 1, 1, 1, **l1)
    assert (st.l1_hits, st.l2_hits) == (0, 4)
    st = simulate(trace([(s, 0, 0, LD) for s in (a, c, a, c)]), 1, 1, 1, **l1)
    assert (st.l1_hits, st.l2_hits) == (2, 2)


def random_trace(rng: np.random.Generator, n: int) -> MemoryTrace:
    """Records of warps in the emulator's order (one warp after another), a few slots, all
    kinds, over a footprint small enough for reuse, hits of one step and set conflicts."""
    kinds = rng.choice([LD, abi.TRACE_LOAD_L2, ST, AT], n, p=[0.55, 0.15, 0.2, 0.1]).astype(np.uint64)
    warps = np.sort(rng.integers(0, int(rng.integers(1, 48)), n)).astype(np.uint64)
    slots = rng.integers(0, 6, n).astype(np.uint64)
    first = (rng.random(n) < 0.5).astype(np.uint64)
    sectors = rng.integers(0, int(rng.integers(8, 3000)), n).astype(np.uint64)
    info = warps | (slots << np.uint64(32)) | (kinds << np.uint64(48)) | (first << np.uint64(63))
    return MemoryTrace(sectors, info, int(rng.integers(0, 2)))


@pytest.mark.parametrize("seed", range(8))
def test_native_replay_matches_the_reference(seed):
    # the compiled loop and the Python loop agree on every count and every record's level,
    # for caches of any shape (1 way, ways not dividing the capacity, fully associative),
    # warmed by a replay, cold, or holding the memory written before (distinct sectors or not)
    rng = np.random.default_rng(seed)
    t = random_trace(rng, int(rng.integers(200, 3000)))
    wpc, cps, sms = int(rng.integers(1, 5)), int(rng.integers(1, 3)), int(rng.choice([1, 3, 8]))
    caps = dict(l1_bytes=32.0 * int(rng.integers(1, 300)), l2_bytes=32.0 * int(rng.integers(1, 1500)),
                l1_ways=int(rng.choice([1, 3, 4, 32])), l2_ways=int(rng.choice([1, 5, 16, 64])))
    top = 32 * 3000
    prewarms = [dict(warm=True), dict(warm=False), dict(written=[(0, top // 3), (top // 2, top // 2)]),
                dict(written=[(40, top // 2), (top // 4 + 8, top // 2)])]
    for kw in prewarms:
        a = simulate(t, wpc, cps, sms, **caps, **kw, native=True)
        b = simulate(t, wpc, cps, sms, **caps, **kw, native=False)
        assert a == b, kw
    assert a.sectors == len(t) * t.sample_factor and a.l1_hits > 0 or caps["l1_bytes"] == 32
    order, sm, step = replay_order(t, wpc, cps, sms)
    recs = (t.sectors[order], t.kinds[order], t.slots[order], sm[order], step[order])
    f = t.sample_factor
    geo = (max(1, int(caps["l1_bytes"] / 32 / f)), caps["l1_ways"], max(1, int(caps["l2_bytes"] / 32 / f)), caps["l2_ways"])
    for kw in prewarms:
        lv_a, slot_a, n_a = replay(*recs, geo, **kw, shift=t.shift, native=True)
        lv_b, slot_b, n_b = replay(*recs, geo, **kw, shift=t.shift, native=False)
        assert lv_a.tolist() == lv_b.tolist() and slot_a == slot_b and n_a == n_b
        assert set(lv_a.tolist()) <= {0, 1, 2}


def test_replay_order_by_one_key_or_by_lexsort():
    # the order sorts by one packed key where it fits 63 bits, else by lexsort: the same order
    # (2**20 SMs fit, 2**45 do not; each CTA has an SM of its own either way)
    t = random_trace(np.random.default_rng(1), 500)
    a, b = replay_order(t, 1, 1, 1 << 20), replay_order(t, 1, 1, 1 << 45)
    assert a[0].tolist() == b[0].tolist() and a[2].tolist() == b[2].tolist()
    assert a[2][a[0]].tolist() == sorted(a[2].tolist())  # steps in replay order do not decrease


def test_reused_cache_arrays_start_empty():
    # a replay reuses the arrays of the one before (what it left is never read): the same
    # trace gives the same counts after a replay of another one, and on fresh arrays
    rng = np.random.default_rng(5)
    t1, t2 = random_trace(rng, 2000), random_trace(rng, 2000)
    first = simulate(t1, 2, 1, 3, 64 * 32, 200 * 32, l2_ways=4)
    simulate(t2, 2, 1, 3, 64 * 32, 200 * 32, l2_ways=4, written=[(0, 32 * 3000)])
    assert simulate(t1, 2, 1, 3, 64 * 32, 200 * 32, l2_ways=4) == first
    assert simulate(t1, 2, 1, 3, 64 * 32, 200 * 32, l2_ways=4, native=False) == first


def test_native_replay_checks_its_arrays():
    with Caches(2, 64, 4, 64, 4) as c:
        secs = np.arange(4, dtype=np.uint64)
        kinds = np.zeros(4, np.int8)
        with pytest.raises(ValueError, match="SM outside 0..1"):
            c.replay(secs, kinds, np.zeros(4, np.int64), np.array([0, 1, 2, 0]), np.zeros(4, np.int64))
        with pytest.raises(ValueError, match="differ in length"):
            c.replay(secs, kinds[:3], np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int64))
        level, rows = c.replay(secs, kinds, np.array([0, 2, 2, 0]), np.zeros(4, np.int64), np.zeros(4, np.int64))
        # four cold loads (nothing filled the L2): DRAM for each, counted in their slots
        assert level.tolist() == [2, 2, 2, 2] and rows.tolist() == [[2, 0, 0], [0, 0, 0], [2, 0, 0]]
    with pytest.raises(ValueError, match="released"):
        c.fill(secs, True)


def test_the_replay_loop_is_compiled_once_per_process():
    from hypa.runtime.emulator import phases

    def compiles() -> int:  # compiled, or loaded from the JIT's disk cache
        return sum(v for k, v in phases.work().items() if "cache replay" in k)

    t = trace([(0, 0, 0, LD), (1, 0, 0, LD)])
    simulate(t, 1, 1, 1, 1024, 1024)
    before = compiles()
    simulate(t, 1, 1, 2, 2048, 4096, written=[(0, 64)])
    simulate(t, 1, 1, 1, 1024, 1024, warm=False)
    assert compiles() == before


def test_replay_order_of_records_not_in_warp_order():
    # records of CTA ranges merged out of warp order give the order they give sorted by warp
    t = random_trace(np.random.default_rng(3), 800)
    w = t.warps
    descending = np.lexsort((np.arange(len(w)), -w))  # the last warp first, a warp's records in order
    assert (np.diff(w[descending]) < 0).any()
    u = MemoryTrace(t.sectors[descending], t.info[descending])
    a, b = replay_order(t, 2, 1, 3), replay_order(u, 2, 1, 3)
    assert t.sectors[a[0]].tolist() == u.sectors[b[0]].tolist() and a[2][a[0]].tolist() == b[2][b[0]].tolist()
