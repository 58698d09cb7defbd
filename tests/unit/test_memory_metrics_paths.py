"""The memory-metrics counters and the address trace on each of their paths
(runtime/emulator/lowering/memory_metrics.py): a bitmap when the lanes' sectors (shared chunks) lie
within 64 of each other, a shortcut for 32 lanes a constant stride apart, else a sort in 16-,
32- or 64-bit lanes.  Each case's lanes sit on one side of a threshold or just across it;
every count is worked out by hand from the lanes' indices."""

import numpy as np
import pytest

from helpers import emulate, kernel

# thread t (t < n) reads idx[t], then a[idx] (4 bytes: global, and the same address as a
# generic access) and the shared chunk idx of 4 bytes (stored, and loaded through a generic
# address), 8, 16 and 1 bytes (idx modulo the chunks of 16 KiB: 4096, 2048, 1024, 16384)
GATHER = kernel("k(.param .u64 k_a, .param .u64 k_idx, .param .u32 k_n)", """
    .shared .align 16 .b8 sh[16384];
    ld.param.u64 %rd1, [k_a];
    ld.param.u64 %rd2, [k_idx];
    ld.param.u32 %r9, [k_n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, %r9;
    @%p1 bra DONE;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd1, %rd5;
    ld.global.f32 %f1, [%rd6];
    ld.f32 %f2, [%rd6];
    mov.u32 %r3, sh;
    and.b32 %r20, %r2, 4095;
    shl.b32 %r4, %r20, 2;
    add.s32 %r5, %r3, %r4;
    st.shared.f32 [%r5], %f1;
    mov.u64 %rd7, sh;
    cvta.shared.u64 %rd8, %rd7;
    cvt.u64.u32 %rd9, %r4;
    add.s64 %rd10, %rd8, %rd9;
    ld.u32 %r6, [%rd10];
    and.b32 %r21, %r2, 2047;
    shl.b32 %r7, %r21, 3;
    add.s32 %r8, %r3, %r7;
    ld.shared.v2.u32 {%r10, %r11}, [%r8];
    and.b32 %r22, %r2, 1023;
    shl.b32 %r12, %r22, 4;
    add.s32 %r13, %r3, %r12;
    ld.shared.v4.u32 {%r14, %r15, %r16, %r17}, [%r13];
    and.b32 %r23, %r2, 16383;
    add.s32 %r18, %r3, %r23;
    ld.shared.u8 %rs1, [%r18];
DONE:
    ret;
""")

T = np.arange(32)
SPREAD = np.where(T < 31, 16 * T, 0)  # sectors 0, 2 .. 60 of a
EVEN = np.where(T < 31, 2 * T, 0)  # words 0, 2 .. 60 of sh
DUPS = 24 + T % 8  # 8 words, each read by two lanes

# (indices of lanes 0..31, active lanes, global sectors and lines, then wavefronts and
# ideal wavefronts of the 4-, 8-, 16- and 1-byte shared accesses)
CASES = {
    # a[31 - t]: elements 0..31, 4 sectors of one line.  Words 0..31: one per bank.  8-byte
    # chunks 0..31: chunks 16 apart share two banks (2 wavefronts; 256 bytes: 2 ideal);
    # 16-byte chunks 8 apart share four (4; 512 bytes: 4); bytes 0..31 are 4 to a word,
    # words 0..7 in banks 0..7 (lanes on one word share it: 1 wavefront; 32 bytes: 1 ideal)
    "reversed": (31 - T, 32, (4, 1), (1, 1), (2, 2), (4, 4), (1, 1)),
    # sectors 0, 2 .. 60 and 63: within 64 of sector 0; lines 0..15.  Words 16t and 504:
    # banks 0 (16 of them), 16 (15) and 24.  8-byte chunks: 31 in group 0 (504 is in 8);
    # 16-byte: all 32 in group 0.  Bytes 16t: words 4t (banks 4(t % 8): 4 at most), 126
    "span 63": (np.where(T < 31, SPREAD, 504), 32, (32, 16), (16, 1), (31, 2), (32, 4), (4, 1)),
    # the same with sector 64 (element 512) last: 64 past sector 0; a 17th line; word 512
    # is in bank 0 (17), chunk 512 in group 0 of either width; byte 512 in word 128, bank 0
    "span 64": (np.where(T < 31, SPREAD, 512), 32, (32, 17), (17, 1), (32, 2), (32, 4), (5, 1)),
    # elements 24..31 and 528..535 twice each: sectors 3 and 66 (63 apart, 66 past the
    # line of sector 3), lines 0 and 16.  Words in banks 24..31 and 16..23; 8-byte chunks
    # in groups 8..15 and 0..7 (128 bytes: 1 ideal); 16-byte chunks two to each group of
    # four banks; bytes 24..31 and 528..535: words 6, 7, 132, 133 (banks 6, 7, 4, 5)
    "lines 0 and 16": (np.where(T < 16, DUPS, DUPS + 504), 32, (2, 2), (1, 1), (1, 1), (2, 2), (1, 1)),
    # elements 32..39 and 536..543: sectors 4 and 67, within 64 of sector 4's line; bytes:
    # words 8, 9, 134, 135
    "lines 1 and 16": (np.where(T < 16, DUPS + 8, DUPS + 512), 32, (2, 2), (1, 1), (1, 1), (2, 2), (1, 1)),
    # a[33 (31 - t)]: 132 bytes apart, a sector and a line each.  Words 33k: bank k; chunks
    # 33k in group k % 16 (8 bytes) or k % 8 (16 bytes); bytes 33k: words 8k + k / 4, all
    # in different banks
    "scattered": (33 * (31 - T), 32, (32, 32), (1, 1), (2, 2), (4, 4), (1, 1)),
    # lanes 0..19 active, the others' index far away: elements 0..19, sectors 0..2.
    # 8-byte chunks 0..19: groups 0..3 twice (160 bytes: 2 ideal); 16-byte: groups 0..3
    # three times (320 bytes: 3 ideal); bytes 0..19: words 0..4, a bank each
    "partial warp": (np.where(T < 20, T, 1000), 20, (3, 1), (1, 1), (2, 2), (3, 3), (1, 1)),
    # words 0, 2 .. 60 and 63 (63 past word 0): banks 0..30 even twice but bank 30 (62 is
    # missing), bank 31 once.  8-byte chunks: 0, 16, 32, 48 in group 0; 16-byte: 0, 8 .. 56
    # in group 0.  Bytes: two in each word 0..15, a bank each.  Elements: sectors 0..7,
    # lines 0 and 1
    "words 0..63": (np.where(T < 31, EVEN, 63), 32, (8, 2), (2, 1), (4, 2), (8, 4), (1, 1)),
    # the same with 64 last: bank 0 has words 0, 32, 64; chunk 64 joins group 0 of either
    # width; byte 64 is word 16's only one (bank 16).  Element 64: sector 8, line 2
    "words 0..64": (np.where(T < 31, EVEN, 64), 32, (9, 3), (3, 1), (5, 2), (9, 4), (1, 1)),
    # sorted in 32-bit lanes: elements 128t are sectors 16t of lines 4t; words 128t (3968
    # past word 0) all in bank 0; 8-byte chunks 128 (t % 16): 16 in group 0 (128 bytes: 1
    # ideal); 16-byte chunks 128 (t % 8): 8 in group 0; bytes 128t: words 32t, bank 0
    "words 0..3968": (128 * T, 32, (32, 32), (32, 1), (16, 1), (8, 1), (32, 1)),
    # elements 24t: sectors 3t (93 past sector 0), lines 3t / 4: 0..23.  Words 24t: banks
    # 24t % 32, 8 lanes each; 8-byte chunks 24t: groups 8t % 16, 0 and 8; 16-byte chunks
    # 24t: all in group 0; bytes 24t: words 6t, banks 6t % 32, 2 lanes each
    "sectors 3 apart": (24 * T, 32, (32, 24), (8, 1), (16, 2), (32, 4), (2, 1)),
    # a[32768 (31 - t)]: 131072 bytes apart, sectors 4096k (126976 apart: 32-bit lanes);
    # every shared access is to chunk 0
    "4 MiB apart": (32768 * (31 - T), 32, (32, 32), (1, 1), (1, 1), (1, 1), (1, 1)),
}

KINDS = {"ld.global.f32": "global", "ld.f32": "global", "st.shared.f32": 4, "ld.u32": 4,
         "ld.shared.v2.u32": 8, "ld.shared.v4.u32": 16, "ld.shared.u8": 1}


def run(idx: np.ndarray, n: int, mode: str, **options):
    a = np.zeros(1 << 20, np.float32)
    return emulate(GATHER, ["a", "idx", n], {"a": a, "idx": idx.astype(np.uint32)}, block=32, mode=mode,
                   **options)


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("case", list(CASES))
def test_counts_on_either_side_of_the_span_threshold(case, mode):
    idx, n, (sectors, lines), *shared = CASES[case]
    r = run(idx, n, mode, memory_metrics=True)
    by = {m.instruction.split()[0]: m for m in r.metrics.memory_instructions}
    assert set(by) == {"ld.global.u32", *KINDS}
    # idx[0..n): 4n bytes from the buffer's start
    assert (by["ld.global.u32"].sectors, by["ld.global.u32"].lines) == ((4 * n + 31) // 32, 1)
    want = dict(zip((4, 8, 16, 1), shared))
    for name, kind in KINDS.items():
        m = by[name]
        assert m.requests == 1, name
        if kind == "global":
            assert (m.space, m.sectors, m.lines, m.wavefronts) == ("global", sectors, lines, 0), name
        else:
            assert (m.space, m.sectors, m.lines, (m.wavefronts, m.ideal_wavefronts)) == ("shared", 0, 0, want[kind]), name


@pytest.mark.parametrize("case,sectors,lanes", [
    # one record per distinct sector, in the order of the lowest lane on it: descending here
    ("reversed", [3, 2, 1, 0], [1, 1, 1, 1]),
    ("scattered", [132 * k // 32 for k in range(31, -1, -1)], [1] * 32),
    # sector 3 first (lanes 0..15), then 66; two lanes on each sector's first word
    ("lines 0 and 16", [3, 66], [2, 2]),
    ("lines 1 and 16", [4, 67], [2, 2]),
    ("partial warp", [0, 1, 2], [1, 1, 1]),
    ("4 MiB apart", [4096 * k for k in range(31, -1, -1)], [1] * 32),
    ("span 63", [2 * t for t in range(31)] + [63], [1] * 32),
    ("words 0..3968", [16 * t for t in range(32)], [1] * 32),
    ("sectors 3 apart", [3 * t for t in range(32)], [1] * 32),
])
def test_trace_records_in_lane_order(case, sectors, lanes):
    from hypa.ptxdialect.printer import instruction_text

    idx, n, *_ = CASES[case]
    r = run(idx, n, "slice", address_trace=1024)
    t = r.memory_trace
    base = r.memory_ranges[0][0] >> 5  # buffer a
    slots = {instruction_text(op).split()[0]: s for op, s in r.program.mem_ops.items()}
    for name in ("ld.global.f32", "ld.f32"):  # global, and generic on a global address
        mine = t.slots == slots[name]
        assert (t.sectors[mine].astype(np.int64) - base).tolist() == sectors, name
        assert t.lanes[mine].tolist() == lanes
        assert t.request_starts[mine].tolist() == [True] + [False] * (len(sectors) - 1)


# lanes 0..15 read b[t], lanes 16..31 a[t]: two buffers a window apart (2**35 sectors)
TWO_BUFFERS = kernel("k(.param .u64 k_a, .param .u64 k_b)", """
    ld.param.u64 %rd1, [k_a];
    ld.param.u64 %rd2, [k_b];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    selp.b64 %rd3, %rd2, %rd1, %p1;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5];
    ret;
""")


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_one_access_to_two_buffers(mode):
    # b[0..15]: sectors 0 and 1 of b; a[16..31]: sectors 2 and 3 of a; a line of each.  The
    # records follow the lanes: b's sectors first, though b's window is above a's
    bufs = {"a": np.zeros(32, np.float32), "b": np.zeros(32, np.float32)}
    r = emulate(TWO_BUFFERS, ["a", "b"], bufs, block=32, mode=mode, address_trace=1024)
    (m,) = r.metrics.memory_instructions
    assert (m.requests, m.sectors, m.lines) == (1, 4, 2)
    (a, _), (b, _) = r.memory_ranges
    t = r.memory_trace
    assert t.sectors.tolist() == [(b >> 5) + 0, (b >> 5) + 1, (a >> 5) + 2, (a >> 5) + 3]
