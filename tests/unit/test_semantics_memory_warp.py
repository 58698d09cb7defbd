"""Full-mode semantics of memory and warp-wide instructions on hand-written PTX:
``atom.cas``, ``cp.async`` (sizes, src-size zero fill, ignore-src), ``shfl.sync.up``
clamping, ``match.all`` with inactive lanes, the WMMA family (every layout, f16/bf16/
tf32/f64/s8 inputs, f16/f32/s32 accumulators), a by-value aggregate parameter, and
loops of warp-wide instructions (no stack growth).  References are numpy or worked
out by hand in the comments."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from hypa.runtime.emulator.lowering import LoweringError

from helpers import KERNEL_PTX, emulate, kernel


def run(ptx: str, args, buffers, block=32, grid=1, mode="full"):
    # in place: the tests read their arrays
    return emulate(ptx, args, buffers, grid=grid, block=block, mode=mode, exact_predicates=True, in_place=True)


# ---------------------------------------------------------------------------
# atom.cas: d = *a; *a = (*a == b) ? c : *a
# ---------------------------------------------------------------------------

CAS = kernel("cas(.param .u64 w, .param .u64 old)", """
    ld.param.u64 %rd1, [w];
    ld.param.u64 %rd2, [old];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    and.b32 %r2, %r1, 1;          // compare value: tid & 1
    add.s32 %r3, %r1, 100;        // new value: tid + 100
    atom.global.cas.b32 %r4, [%rd4], %r2, %r3;
    st.global.u32 [%rd5], %r4;
    ret;
""")


def test_atom_cas_swaps_only_when_the_word_equals_the_compare_operand():
    w = np.zeros(32, np.uint32)  # word 0 everywhere: even threads (compare 0) swap
    old = np.full(32, 7, np.uint32)
    run(CAS, ["w", "old"], {"w": w, "old": old})
    tid = np.arange(32)
    assert np.array_equal(old, np.zeros(32))
    assert np.array_equal(w, np.where(tid % 2 == 0, tid + 100, 0))


# ---------------------------------------------------------------------------
# cp.async
# ---------------------------------------------------------------------------

CP_ASYNC = kernel("cp(.param .u64 src, .param .u64 dst)", """
    .shared .align 16 .b8 buf[4096];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;             // 16 source bytes per thread
    mov.u32 %r2, buf;
    mul.lo.u32 %r3, %r1, 64;              // 64 shared bytes per thread: 4 slots of 16
    add.u32 %r4, %r2, %r3;
    add.u32 %r5, %r4, 16;
    add.u32 %r6, %r4, 32;
    add.u32 %r7, %r4, 48;
    and.b32 %r8, %r1, 15;                 // src-size: tid % 16 (0..15 bytes of 16)
    setp.eq.u32 %p1, %r8, 3;              // ignore-src for tid % 16 == 3
    cp.async.cg.shared.global [%r4], [%rd4], 16;
    cp.async.ca.shared.global [%r5], [%rd4], 8;
    cp.async.cg.shared.global [%r6], [%rd4], 16, %r8;
    cp.async.ca.shared.global [%r7], [%rd4], 4, %p1;
    cp.async.commit_group;
    cp.async.wait_all;
    // copy the 64 bytes to dst as 16 words
    mul.wide.u32 %rd5, %r1, 64;
    add.s64 %rd6, %rd2, %rd5;
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r4];
    st.global.v4.u32 [%rd6], {%r9, %r10, %r11, %r12};
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r4+16];
    st.global.v4.u32 [%rd6+16], {%r9, %r10, %r11, %r12};
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r4+32];
    st.global.v4.u32 [%rd6+32], {%r9, %r10, %r11, %r12};
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r4+48];
    st.global.v4.u32 [%rd6+48], {%r9, %r10, %r11, %r12};
    ret;
""")


def test_cp_async_sizes_zero_fill_and_ignore_src():
    src = (np.arange(32 * 16) % 251 + 1).astype(np.uint8)  # no zero bytes
    dst = np.full(32 * 64, 0xEE, np.uint8)
    run(CP_ASYNC, ["src", "dst"], {"src": src, "dst": dst})
    want = np.zeros((32, 64), np.uint8)
    s = src.reshape(32, 16)
    for t in range(32):
        want[t, 0:16] = s[t]                      # 16 bytes
        want[t, 16:24] = s[t, :8]                 # 8 bytes, the rest of the slot stays 0
        n = t % 16
        want[t, 32 : 32 + n] = s[t, :n]           # src-size n: bytes n..15 zero-filled
        if t % 16 != 3:
            want[t, 48:52] = s[t, :4]             # ignore-src: 4 zero bytes
    assert np.array_equal(dst.reshape(32, 64), want)


def test_cp_async_out_of_bounds_source_is_reported():
    from hypa.runtime.emulator.emulator import EmulationError

    src = np.zeros(32 * 16 - 1, np.uint8)  # one byte short for the last thread
    dst = np.zeros(32 * 64, np.uint8)
    with pytest.raises(EmulationError, match=r"out-of-bounds access .* thread \(31, 0, 0\): cp\.async"):
        run(CP_ASYNC, ["src", "dst"], {"src": src, "dst": dst})


# ---------------------------------------------------------------------------
# shfl.sync.up clamping (the ISA: j = lane - b; valid when j >= maxLane)
# ---------------------------------------------------------------------------

SHFL_UP = kernel("up(.param .u64 out, .param .u32 c)", """
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r5, [c];
    mov.u32 %r1, %tid.x;
    add.u32 %r2, %r1, 1000;
    shfl.sync.up.b32 %r3|%p1, %r2, 2, %r5, -1;
    selp.u32 %r4, 1, 0, %p1;
    mad.lo.u32 %r3, %r4, 100000, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
""")


@pytest.mark.parametrize("c", [0x0, 0x1800, 0x5])
def test_shfl_up_follows_the_isa_clamp(c):
    out = np.zeros(32, np.uint32)
    run(SHFL_UP, ["out", c], {"out": out})
    want = []
    for lane in range(32):
        mask, clamp = (c >> 8) & 31, c & 31
        max_lane = (lane & mask) | (clamp & ~mask)
        j = lane - 2
        ok = j >= max_lane
        want.append((1000 + (j if ok else lane)) + 100000 * ok)
    assert out.tolist() == want


# ---------------------------------------------------------------------------
# match.all with an inactive lane 0
# ---------------------------------------------------------------------------

MATCH_ALL = kernel("m(.param .u64 out)", """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 5;                  // 5 in every lane
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mov.u32 %r2, 77;            // lane 0 holds another value
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
    @%p1 bra $L_skip;                // lane 0 does not take part
    match.all.sync.b32 %r3|%p2, %r2, -1;
    selp.u32 %r4, 1, 0, %p2;
$L_skip:
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    ret;
""")


def test_match_all_ignores_inactive_lanes():
    out = np.zeros(64, np.uint32)
    run(MATCH_ALL, ["out"], {"out": out})
    d, p = out[0::2], out[1::2]
    # lanes 1..31 all hold 5: d = the participating lanes, p = true
    assert d[0] == 0 and p[0] == 0
    assert (d[1:] == 0xFFFFFFFE).all() and (p[1:] == 1).all()


# ---------------------------------------------------------------------------
# vote with the mode before .sync (CUB's inline assembly): the member mask counts
# ---------------------------------------------------------------------------

VOTE_ORDERS = kernel("k(.param .u64 out)", """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 3;                     // every lane but 3
    vote.ballot.sync.b32 %r2, %p1, 0x0000ffff;   // lanes 0..15 asked
    vote.sync.ballot.b32 %r3, %p1, 0x00ff00ff;
    cvt.u64.u32 %rd2, %r1;
    shl.b64 %rd2, %rd2, 3;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r2, %r3};
    ret;
""")


def test_vote_ballot_sync_in_either_order_uses_the_member_mask():
    out = np.zeros(64, np.uint32)
    run(VOTE_ORDERS, ["out"], {"out": out})
    assert (out[0::2] == 0x0000FFF7).all()
    assert (out[1::2] == 0x00FF00F7).all()


# ---------------------------------------------------------------------------
# loops of warp-wide instructions keep the stack bounded
# ---------------------------------------------------------------------------

SHFL_LOOP = kernel("k(.param .u64 out, .param .u32 n)", """
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd1, [out];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
$L:
    shfl.sync.bfly.b32 %r4, %r2, 1, 31, -1;
    add.s32 %r2, %r4, 1;
    atom.global.add.u32 %r5, [%rd1], 0;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p1, %r3, %r1;
    @%p1 bra $L;
    cvt.u64.u32 %rd2, %tid.x;
    shl.b64 %rd2, %rd2, 2;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
""")


def test_a_long_loop_of_shuffles_and_atomics_does_not_grow_the_stack():
    # 300k iterations: an alloca per shuffle or atomic execution (128 bytes)
    # would need ~40 MB of stack; the emulator must not crash
    out = np.zeros(32, np.uint32)
    n = 300_000
    run(SHFL_LOOP, ["out", n], {"out": out})
    # each iteration: swap with the neighbour, add 1 -> after an even count of
    # iterations every lane holds tid + n
    assert np.array_equal(out, np.arange(32) + n)


# ---------------------------------------------------------------------------
# by-value aggregate parameter given as an integer
# ---------------------------------------------------------------------------

AGG = kernel("agg(.param .align 4 .b8 v[4], .param .u64 out)", """
    ld.param.u16 %rs1, [v];
    ld.param.u16 %rs2, [v+2];
    ld.param.u64 %rd1, [out];
    cvt.u32.u16 %r1, %rs1;
    cvt.u32.u16 %r2, %rs2;
    st.global.v2.u32 [%rd1], {%r1, %r2};
    ret;
""")


def test_an_integer_fills_a_by_value_byte_array_parameter():
    out = np.zeros(2, np.uint32)
    run(AGG, [0x38004000, "out"], {"out": out}, block=1)
    assert out.tolist() == [0x4000, 0x3800]


# ---------------------------------------------------------------------------
# WMMA
# ---------------------------------------------------------------------------

# (atype, shape) -> registers of A, B, C/D fragments per C/D type
_NREGS = {
    (".f16", "m16n16k16"): (8, 8), (".f16", "m32n8k16"): (8, 8), (".f16", "m8n32k16"): (8, 8),
    (".bf16", "m16n16k16"): (4, 4), (".bf16", "m32n8k16"): (8, 2), (".bf16", "m8n32k16"): (2, 8),
    (".tf32", "m16n16k8"): (4, 4),
    (".s8", "m16n16k16"): (2, 2), (".u8", "m32n8k16"): (4, 1), (".s8", "m8n32k16"): (1, 4),
    (".f64", "m8n8k4"): (1, 1),
}
_CREGS = {".f32": 8, ".f16": 4, ".s32": 8, ".f64": 2}
_NP = {".f16": np.float16, ".f32": np.float32, ".f64": np.float64, ".s32": np.int32, ".s8": np.int8,
       ".u8": np.uint8, ".bf16": np.uint16, ".tf32": np.float32}


def _regs(prefix: str, first: int, n: int) -> str:
    return "{" + ", ".join(f"{prefix}{first + i}" for i in range(n)) + "}"


#: the registers of the WMMA and mma.sync kernels: fragments of up to 16 registers from %r10 on
FRAGMENT_REGS = """\
    .reg .b32 %r<100>;
    .reg .f32 %f<100>;
    .reg .f64 %fd<100>;
    .reg .b64 %rd<8>;
"""


def wmma_kernel(shape, at, ct, dt, alay, blay, clay, dlay, lda, ldb, ldc, ldd):
    na, nb = _NREGS[(at, shape)]
    ncr, ndr = _CREGS[ct], _CREGS[dt]
    ab_reg = "%fd" if at == ".f64" else "%r"
    c_reg = {".f32": "%f", ".f16": "%r", ".s32": "%r", ".f64": "%fd"}
    a = _regs(ab_reg, 10, na)
    b = _regs(ab_reg, 30, nb)
    c = _regs(c_reg[ct], 50, ncr)
    d = _regs(c_reg[dt], 70, ndr)
    if at == ".f16":
        types = f"{dt}{ct}"
    else:
        types = f"{dt}{at}{at}{ct}"
    return kernel("w(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)", f"""
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u64 %rd4, [pd];
    mov.u32 %r1, {ldb};
    wmma.load.a.sync.aligned{alay}.{shape}.global{at} {a}, [%rd1], {lda};
    wmma.load.b.sync.aligned{blay}.{shape}.global{at} {b}, [%rd2], %r1;
    wmma.load.c.sync.aligned{clay}.{shape}.global{ct} {c}, [%rd3], {ldc};
    wmma.mma.sync.aligned{alay}{blay}.{shape}{types} {d}, {a}, {b}, {c};
    wmma.store.d.sync.aligned{dlay}.{shape}.global{dt} [%rd4], {d}, {ldd};
    ret;
""", regs=FRAGMENT_REGS)


def _store(mat: np.ndarray, layout: str, ld: int, dtype) -> np.ndarray:
    """A matrix in memory: row-major rows of ``ld`` elements, or column-major."""
    r, c = mat.shape
    if layout == ".row":
        buf = np.zeros((r, ld), dtype)
        buf[:, :c] = mat
    else:
        buf = np.zeros((c, ld), dtype)
        buf[:, :r] = mat.T
    return buf.ravel()


def _load(buf: np.ndarray, layout: str, ld: int, r: int, c: int) -> np.ndarray:
    if layout == ".row":
        return buf.reshape(-1, ld)[:r, :c]
    return buf.reshape(-1, ld)[:c, :r].T


def _bf16(x: np.ndarray) -> np.ndarray:
    """f32 values (exactly representable in bf16) -> bf16 bit patterns."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


CASES = [
    # shape, atype, ctype, dtype, A layout, B layout, C layout, D layout
    ("m16n16k16", ".f16", ".f32", ".f32", ".row", ".col", ".row", ".row"),
    ("m16n16k16", ".f16", ".f32", ".f32", ".col", ".row", ".col", ".col"),
    ("m16n16k16", ".f16", ".f16", ".f16", ".row", ".row", ".row", ".col"),
    ("m16n16k16", ".f16", ".f16", ".f32", ".col", ".col", ".col", ".row"),
    ("m32n8k16", ".f16", ".f32", ".f16", ".row", ".col", ".row", ".row"),
    ("m8n32k16", ".f16", ".f32", ".f32", ".col", ".row", ".row", ".col"),
    ("m16n16k16", ".bf16", ".f32", ".f32", ".row", ".col", ".row", ".row"),
    ("m32n8k16", ".bf16", ".f32", ".f32", ".col", ".row", ".col", ".row"),
    ("m8n32k16", ".bf16", ".f32", ".f32", ".row", ".row", ".row", ".row"),
    ("m16n16k8", ".tf32", ".f32", ".f32", ".row", ".col", ".row", ".row"),
    ("m16n16k16", ".s8", ".s32", ".s32", ".row", ".col", ".row", ".row"),
    ("m32n8k16", ".u8", ".s32", ".s32", ".col", ".row", ".col", ".col"),
    ("m8n32k16", ".s8", ".s32", ".s32", ".row", ".row", ".row", ".row"),
    ("m8n8k4", ".f64", ".f64", ".f64", ".row", ".col", ".row", ".col"),
]


@pytest.mark.parametrize("shape,at,ct,dt,alay,blay,clay,dlay", CASES, ids=["".join(c) for c in CASES])
def test_wmma_matches_numpy(shape, at, ct, dt, alay, blay, clay, dlay):
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    rng = np.random.default_rng(zlib.crc32("".join((shape, at, ct, dt, alay, blay)).encode()))
    # operands exactly representable in the input type
    if at in (".s8", ".u8"):
        lo, hi = (-128, 128) if at == ".s8" else (0, 256)
        A = rng.integers(lo, hi, (m, k))
        B = rng.integers(lo, hi, (k, n))
        C = rng.integers(-1000, 1000, (m, n))
    else:
        A = rng.integers(-64, 64, (m, k)) / 32.0
        B = rng.integers(-64, 64, (k, n)) / 32.0
        C = rng.integers(-64, 64, (m, n)) / 8.0
    lda, ldb, ldc, ldd = (max(m, k) + 3, max(k, n) + 5, max(m, n) + 2, max(m, n) + 1)
    if at == ".bf16":
        abuf, bbuf = _store(_bf16(A), alay, lda, np.uint16), _store(_bf16(B), blay, ldb, np.uint16)
    elif at == ".tf32":
        # tf32 ignores the low 13 bits: set them, they must not matter
        abuf = _store(A, alay, lda, np.float32).view(np.uint32) | 0x1FFF
        bbuf = _store(B, blay, ldb, np.float32).view(np.uint32) | 0x1FFF
    else:
        abuf, bbuf = _store(A, alay, lda, _NP[at]), _store(B, blay, ldb, _NP[at])
    cbuf = _store(C, clay, ldc, _NP[ct])
    dbuf = np.full(ldd * max(m, n), 99, _NP[dt])
    ptx = wmma_kernel(shape, at, ct, dt, alay, blay, clay, dlay, lda, ldb, ldc, ldd)
    run(ptx, ["a", "b", "c", "d"], {"a": abuf, "b": bbuf, "c": cbuf, "d": dbuf})
    want = A.astype(np.float64) @ B.astype(np.float64) + C
    got = _load(dbuf, dlay, ldd, m, n).astype(np.float64)
    # small integers and multiples of 1/32: every product and partial sum is exact
    # in f32 (and in f16 for the f16 results: |values| < 2^11 / 32)
    if dt == ".f16":
        want = want.astype(np.float16).astype(np.float64)
    assert np.array_equal(got, want)
    # the padding between rows / columns of D is untouched
    mask = np.ones(dbuf.shape, bool)
    mask.reshape(-1, ldd)[: (m if dlay == ".row" else n), : (n if dlay == ".row" else m)] = False
    assert (dbuf[mask] == 99).all()


def test_wmma_slice_mode_counts_equal_full_mode():
    ptx = wmma_kernel("m16n16k16", ".f16", ".f32", ".f32", ".row", ".col", ".row", ".row", 16, 16, 16, 16)
    bufs = lambda: {"a": np.ones(256, np.float16), "b": np.ones(256, np.float16),  # noqa: E731
                    "c": np.zeros(256, np.float32), "d": np.zeros(256, np.float32)}
    full = run(ptx, ["a", "b", "c", "d"], bufs())
    assert (full.buffers["d"] == 16).all()
    sl = run(ptx, ["a", "b", "c", "d"], bufs(), mode="slice")
    assert sl.metrics.values["thread_inst_executed"] == full.metrics.values["thread_inst_executed"] == 32 * 11


def test_wmma_with_too_few_registers_is_refused():
    ptx = wmma_kernel("m16n16k16", ".f16", ".f32", ".f32", ".row", ".col", ".row", ".row", 16, 16, 16, 16)
    ptx = ptx.replace("{%r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17}, [%rd1]", "{%r10, %r11, %r12, %r13}, [%rd1]")
    with pytest.raises(LoweringError, match="needs 8 registers, not 4"):
        run(ptx, ["a", "b", "c", "d"], {x: np.zeros(256, np.float32) for x in "abcd"})


def test_single_bit_wmma_is_reported_as_not_emulated():
    ptx = kernel("w(.param .u64 pa)", """
    wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32 {%r1, %r2}, {%r3}, {%r4}, {%r5, %r6};
    ret;
""")
    with pytest.raises(LoweringError, match="not emulated"):
        run(ptx, [np.zeros(4, np.uint32)], {})


# ---------------------------------------------------------------------------
# 16-bit float atomics: one rounding of the exact sum, subnormals kept (.noftz)
# ---------------------------------------------------------------------------

HALF_ATOM = kernel("h(.param .u64 w, .param .u64 v, .param .u64 old)", """
    ld.param.u64 %rd1, [w];
    ld.param.u64 %rd2, [v];
    ld.param.u64 %rd3, [old];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r1, %r1, %r2, %r3;
    mul.wide.u32 %rd4, %r1, WIDTH;
    add.s64 %rd5, %rd1, %rd4;
    add.s64 %rd6, %rd2, %rd4;
    add.s64 %rd7, %rd3, %rd4;
    ld.global.bWIDTHBITS %rs1, [%rd6];
    atom.global.add.noftz.TYPE %rs2, [%rd5], %rs1;
    st.global.bWIDTHBITS [%rd7], %rs2;
    ret;
""")


def _nearest_even(exact: np.ndarray, table_bits: np.ndarray, table_vals: np.ndarray) -> np.ndarray:
    """Round f64 values to the 16-bit format given by all its finite values (sorted),
    to nearest, ties to the even bit pattern, overflow to infinity."""
    out = np.empty(exact.shape, np.uint16)
    top = table_vals[-1]
    ulp_top = table_vals[-1] - table_vals[-2]
    for i, x in enumerate(exact):
        if np.isnan(x):
            out[i] = 0x7FFF
            continue
        if abs(x) >= top + ulp_top / 2:
            out[i] = table_bits[-1] + 1 if x > 0 else (table_bits[-1] + 1) | 0x8000  # +/- infinity
            continue
        k = np.searchsorted(table_vals, x)
        cands = [j for j in (k - 1, k) if 0 <= j < len(table_vals)]
        best = min(cands, key=lambda j: (abs(table_vals[j] - x), int(table_bits[j]) & 1))
        out[i] = table_bits[best]
        if x == 0:
            out[i] = 0x8000 if np.signbit(x) else 0
    return out


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_half_atomic_add_rounds_once(fmt):
    rng = np.random.default_rng(7)
    if fmt == "f16":
        to_f64 = lambda u: u.view(np.float16).astype(np.float64)  # noqa: E731
        edges = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00,
                 0x3C01, 0x1400, 0x7BFE, 0x0200]
    else:
        to_f64 = lambda u: (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # noqa: E731
        edges = [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80,
                 0x3F81, 0x3B80, 0x7F7E, 0x0040]
    n = 64 * 32
    w = rng.integers(0, 1 << 16, n).astype(np.uint16)
    v = rng.integers(0, 1 << 16, n).astype(np.uint16)
    e = np.array(edges, np.uint16)
    # every edge against every edge, then random pairs, then near-equal magnitudes
    pairs = np.array(np.meshgrid(e, e)).reshape(2, -1)
    w[: pairs.shape[1]], v[: pairs.shape[1]] = pairs
    k = pairs.shape[1]
    w[k : k + 256] = rng.integers(0x3C00, 0x3C40, 256) if fmt == "f16" else rng.integers(0x3F80, 0x3F90, 256)
    v[k : k + 256] = w[k : k + 256] ^ 0x8000 ^ rng.integers(0, 4, 256).astype(np.uint16)
    old = np.zeros(n, np.uint16)
    w0 = w.copy()
    ptx = HALF_ATOM.replace("WIDTHBITS", "16").replace("WIDTH", "2").replace("TYPE", fmt)
    run(ptx, ["w", "v", "old"], {"w": w, "v": v, "old": old}, block=32, grid=64)
    assert np.array_equal(old, w0)
    allbits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(invalid="ignore"):
        vals = to_f64(allbits)
    finite = np.isfinite(vals) & ~((allbits == 0x8000))
    order = np.argsort(vals[finite], kind="stable")
    tb, tv = allbits[finite][order], vals[finite][order]
    with np.errstate(invalid="ignore"):
        exact = to_f64(w0) + to_f64(v)
        nan_w = np.isnan(to_f64(w))
    want = _nearest_even(exact, tb, tv)
    assert np.array_equal(nan_w, np.isnan(exact))
    assert np.array_equal(w[~nan_w], want[~nan_w])


def test_packed_and_vector_atomics():
    ptx = kernel("p(.param .u64 w)", """
    ld.param.u64 %rd1, [w];
    mov.b32 %r1, 0x40003C00;                        // f16x2 (1.0, 2.0)
    atom.global.add.noftz.f16x2 %r2, [%rd1], %r1;
    mov.b32 %r3, 0x40003F80;                        // bf16x2 (1.0, 2.0)
    red.global.add.noftz.bf16x2 [%rd1+4], %r3;
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f40000000;
    atom.global.v2.f32.add {%f3, %f4}, [%rd1+8], {%f1, %f2};
    ret;
""")
    w = np.zeros(4, np.uint32)
    run(ptx, ["w"], {"w": w})
    assert w[0:1].view(np.float16).tolist() == [32.0, 64.0]
    assert w[1:2].view(np.uint16).tolist() == [0x4200, 0x4280]  # bf16 32.0, 64.0
    assert w[2:4].view(np.float32).tolist() == [32.0, 64.0]


# ---------------------------------------------------------------------------
# barriers: bar.red, named barriers with bar.arrive
# ---------------------------------------------------------------------------

BAR_RED = kernel("r(.param .u64 out)", """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    rem.u32 %r2, %r1, 3;
    setp.eq.u32 %p1, %r2, 0;                 // true for tid % 3 == 0
    setp.lt.u32 %p2, %r1, 1000;              // true everywhere
    setp.gt.u32 %p3, %r1, 1000;              // false everywhere
    bar.red.popc.u32 %r3, 0, %p1;
    bar.red.and.pred %p4, 1, %p2;
    bar.red.or.pred %p5, 2, %p3;
    selp.u32 %r4, 1, 0, %p4;
    selp.u32 %r5, 1, 0, %p5;
    mad.lo.u32 %r6, %r4, 10000, %r3;
    mad.lo.u32 %r6, %r5, 100000, %r6;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
    ret;
""")


def test_bar_red_popc_and_or():
    out = np.zeros(100, np.uint32)
    run(BAR_RED, ["out"], {"out": out}, block=100)  # 4 warps, the last with 4 threads
    # popc: threads 0, 3, ..., 99 -> 34; and: true; or: false
    assert (out == 34 + 10000).all()


NAMED = kernel("n(.param .u64 out)", """
    .shared .align 4 .b32 box[32];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    shl.b32 %r3, %r2, 2;
    mov.u32 %r4, box;
    add.u32 %r4, %r4, %r3;
    setp.PRODUCER.u32 %p1, %r1, 32;          // the producer warp
    @%p1 bra $L_consumer;
    mad.lo.u32 %r5, %r2, 7, 3;
    st.shared.u32 [%r4], %r5;
    bar.arrive 1, 64;
    bra.uni $L_end;
$L_consumer:
    bar.sync 1, 64;
    ld.shared.u32 %r6, [%r4];
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
$L_end:
    ret;
""")


@pytest.mark.parametrize("producer", ["ge", "lt"], ids=["warp0-produces", "warp1-produces"])
def test_named_barrier_with_arrive(producer):
    out = np.zeros(32, np.uint32)
    run(NAMED.replace("PRODUCER", producer), ["out"], {"out": out}, block=64)
    assert np.array_equal(out, np.arange(32) * 7 + 3)


# ---------------------------------------------------------------------------
# mma.sync and ldmatrix: the fragment layouts of the PTX ISA
# (groupID g = lane / 4, threadID_in_group t = lane % 4)
# ---------------------------------------------------------------------------

# (row, col) of element i of a lane's fragment, written out per the ISA's figures
def _a_m16n8k16(g, t, i):
    return (g if i in (0, 1, 4, 5) else g + 8, 2 * t + (i & 1) + (8 if i >= 4 else 0))


def _b_m16n8k16(g, t, i):
    return (2 * t + (i & 1) + (8 if i >= 2 else 0), g)


def _c_m16n8(g, t, i):
    return (g if i < 2 else g + 8, 2 * t + (i & 1))


def _a_m16n8k8_f16(g, t, i):
    return (g if i < 2 else g + 8, 2 * t + (i & 1))


def _b_m16n8k8_f16(g, t, i):
    return (2 * t + i, g)


def _a_m16n8k8_tf32(g, t, i):
    return (g if i in (0, 2) else g + 8, t if i < 2 else t + 4)


def _b_m16n8k8_tf32(g, t, i):
    return (t if i == 0 else t + 4, g)


def _a_m16n8k4_tf32(g, t, i):
    return (g if i == 0 else g + 8, t)


def _b_m16n8k4_tf32(g, t, i):
    return (t, g)


def _a_m8n8k4_f64(g, t, i):
    return (g, t)


def _b_m8n8k4_f64(g, t, i):
    return (t, g)


def _c_m8n8_f64(g, t, i):
    return (g, 2 * t + i)


MMA_CASES = {
    # name: (shape, types, (A, B, C) element counts per lane, layouts)
    "m16n8k16.f32.f16.f16.f32": ((16, 8, 16), (".f32", ".f16", ".f16", ".f32"), (8, 4, 4), (_a_m16n8k16, _b_m16n8k16, _c_m16n8)),
    "m16n8k16.f16.f16.f16.f16": ((16, 8, 16), (".f16", ".f16", ".f16", ".f16"), (8, 4, 4), (_a_m16n8k16, _b_m16n8k16, _c_m16n8)),
    "m16n8k16.f32.bf16.bf16.f32": ((16, 8, 16), (".f32", ".bf16", ".bf16", ".f32"), (8, 4, 4), (_a_m16n8k16, _b_m16n8k16, _c_m16n8)),
    "m16n8k8.f32.f16.f16.f32": ((16, 8, 8), (".f32", ".f16", ".f16", ".f32"), (4, 2, 4), (_a_m16n8k8_f16, _b_m16n8k8_f16, _c_m16n8)),
    "m16n8k8.f32.tf32.tf32.f32": ((16, 8, 8), (".f32", ".tf32", ".tf32", ".f32"), (4, 2, 4), (_a_m16n8k8_tf32, _b_m16n8k8_tf32, _c_m16n8)),
    "m16n8k4.f32.tf32.tf32.f32": ((16, 8, 4), (".f32", ".tf32", ".tf32", ".f32"), (2, 1, 4), (_a_m16n8k4_tf32, _b_m16n8k4_tf32, _c_m16n8)),
    "m8n8k4.f64.f64.f64.f64": ((8, 8, 4), (".f64", ".f64", ".f64", ".f64"), (1, 1, 2), (_a_m8n8k4_f64, _b_m8n8k4_f64, _c_m8n8_f64)),
}


def _elem_bytes(t):
    return {".f16": 2, ".bf16": 2, ".tf32": 4, ".f32": 4, ".f64": 8}[t]


def _encode(vals: np.ndarray, t: str) -> np.ndarray:
    """Values (exactly representable) -> their bytes in type t."""
    if t == ".f16":
        return vals.astype(np.float16).view(np.uint8)
    if t == ".bf16":
        return _bf16(vals).view(np.uint8)
    if t in (".f32", ".tf32"):
        return vals.astype(np.float32).view(np.uint8)
    return vals.astype(np.float64).view(np.uint8)


def _decode(raw: np.ndarray, t: str) -> np.ndarray:
    return raw.view({".f16": np.float16, ".f32": np.float32, ".f64": np.float64}[t]).astype(np.float64)


def mma_kernel(name, types, counts):
    dt, at, bt, ct = types
    ab_wide = at == ".f64"
    rbits = 64 if ab_wide else 32
    per = {2: 2, 4: 1, 8: 1}[_elem_bytes(at)]
    na, nb = counts[0] // per, counts[1] // per
    cper = 2 if ct == ".f16" else 1
    dper = 2 if dt == ".f16" else 1
    nc, nd = counts[2] // cper, counts[2] // dper
    creg = {".f32": "%f", ".f16": "%r", ".f64": "%fd"}
    abreg = "%fd" if ab_wide else "%r"
    lines = []
    off = 0
    for prefix, first, n, bits in ((abreg, 10, na, rbits), (abreg, 20, nb, rbits), (creg[ct], 30, nc, 64 if ct == ".f64" else 32)):
        for i in range(n):
            lines.append(f"    ld.global.b{bits} {prefix}{first + i}, [%rd3+{off}];")
            off += bits // 8
    a = _regs(abreg, 10, na)
    b = _regs(abreg, 20, nb)
    c = _regs(creg[ct], 30, nc)
    d = _regs(creg[dt], 40, nd)
    dbits = 64 if dt == ".f64" else 32
    stores = [f"    st.global.b{dbits} [%rd4+{i * dbits // 8}], {creg[dt]}{40 + i};" for i in range(nd)]
    ptx = kernel("mm(.param .u64 frag, .param .u64 out, .param .u32 fstride, .param .u32 ostride)", f"""
    ld.param.u64 %rd1, [frag];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [fstride];
    ld.param.u32 %r2, [ostride];
    mov.u32 %r3, %laneid;
    mul.wide.u32 %rd5, %r3, %r1;
    add.s64 %rd3, %rd1, %rd5;
    mul.wide.u32 %rd6, %r3, %r2;
    add.s64 %rd4, %rd2, %rd6;
{chr(10).join(lines)}
    mma.sync.aligned.{name.split('.')[0]}.row.col{''.join(types)} {d}, {a}, {b}, {c};
{chr(10).join(stores)}
    ret;
""", regs=FRAGMENT_REGS)
    return ptx, off, nd * dbits // 8


@pytest.mark.parametrize("name", list(MMA_CASES))
def test_mma_sync_fragment_layouts(name):
    (m, n, k), types, counts, (la, lb, lc) = MMA_CASES[name]
    dt, at, bt, ct = types
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    A = rng.integers(-64, 64, (m, k)) / 32.0
    B = rng.integers(-64, 64, (k, n)) / 32.0
    C = rng.integers(-64, 64, (m, n)) / 8.0
    ptx, fbytes, obytes = mma_kernel(name, types, counts)
    frag = np.zeros((32, fbytes), np.uint8)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        parts = [
            _encode(np.array([A[la(g, t, i)] for i in range(counts[0])]), at),
            _encode(np.array([B[lb(g, t, i)] for i in range(counts[1])]), bt),
            _encode(np.array([C[lc(g, t, i)] for i in range(counts[2])]), ct),
        ]
        frag[lane] = np.concatenate(parts)
    out = np.zeros((32, obytes), np.uint8)
    run(ptx, ["frag", "out", fbytes, obytes], {"frag": frag.ravel(), "out": out.ravel()})
    D = np.full((m, n), np.nan)
    for lane in range(32):
        vals = _decode(out[lane], dt)
        for i, v in enumerate(vals):
            D[lc(lane >> 2, lane & 3, i)] = v
    want = A @ B + C  # exact: multiples of 1/1024 below 2^7
    if dt == ".f16":
        want = want.astype(np.float16).astype(np.float64)
    assert np.array_equal(D, want)


LDMATRIX = kernel("lm(.param .u64 src, .param .u64 out)", """
    .shared .align 16 .b8 tiles[1024];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %laneid;
    // copy 4 tiles of 8 x 8 b16 into shared memory, rows 32 bytes apart (16 bytes of
    // padding after each row); each lane copies 8 elements
    mov.u32 %r2, tiles;
    mov.u32 %r3, 0;
$L_copy:
    mad.lo.u32 %r4, %r1, 8, %r3;            // element index 0..255 = (matrix, row, col)
    mul.wide.u32 %rd3, %r4, 2;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.b16 %rs1, [%rd4];
    shr.u32 %r5, %r4, 3;                    // matrix * 8 + row
    and.b32 %r6, %r4, 7;                    // col
    mad.lo.u32 %r7, %r5, 32, %r2;
    mad.lo.u32 %r7, %r6, 2, %r7;
    st.shared.b16 [%r7], %rs1;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 8;
    @%p1 bra $L_copy;
    bar.sync 0;
    // lane l gives the address of row (l % 8) of matrix (l / 8), in reverse matrix order
    shr.u32 %r8, %r1, 3;
    sub.u32 %r8, 3, %r8;
    and.b32 %r9, %r1, 7;
    mad.lo.u32 %r10, %r8, 8, %r9;
    mad.lo.u32 %r11, %r10, 32, %r2;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22, %r23}, [%r11];
    ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r24, %r25, %r26, %r27}, [%r11];
    ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r28, %r29}, [%r11];
    ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 %r30, [%r11];
    mul.wide.u32 %rd5, %r1, 48;  // 11 words a lane in 12: v4 stores need 16-byte alignment
    add.s64 %rd6, %rd2, %rd5;
    st.global.v4.b32 [%rd6], {%r20, %r21, %r22, %r23};
    st.global.v4.b32 [%rd6+16], {%r24, %r25, %r26, %r27};
    st.global.v2.b32 [%rd6+32], {%r28, %r29};
    st.global.b32 [%rd6+40], %r30;
    ret;
""")


def test_ldmatrix_layouts():
    src = np.arange(256, dtype=np.uint16) * 3 + 1  # matrix q, row r, col c: element 64q + 8r + c
    out = np.zeros(32 * 12, np.uint32)
    run(LDMATRIX, ["src", "out"], {"src": src, "out": out})
    mats = src.reshape(4, 8, 8)[::-1]  # lanes 8i.. address matrix 3 - i

    def pair(lo, hi):
        return int(lo) | (int(hi) << 16)

    got = out.reshape(32, 12)[:, :11]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        want = [pair(mats[i][g][2 * t], mats[i][g][2 * t + 1]) for i in range(4)]
        want += [pair(mats[i][2 * t][g], mats[i][2 * t + 1][g]) for i in range(4)]
        want += [pair(mats[i][g][2 * t], mats[i][g][2 * t + 1]) for i in range(2)]
        want += [pair(mats[0][2 * t][g], mats[0][2 * t + 1][g])]
        assert got[lane].tolist() == want, lane


def test_triton_matmul_ldmatrix_mma_sync():
    """The Triton tl.dot kernel (ldmatrix, ldmatrix.trans, mma.sync m16n8k16) on a
    70 x 40 by 40 x 50 product: two 64 x 64 tiles, both partial."""
    from hypa.ptxdialect import parse_ptx_file

    M, N, K = 70, 50, 40
    rng = np.random.default_rng(0)
    A = (rng.integers(-8, 8, (M, K)) / 8).astype(np.float16)
    B = (rng.integers(-8, 8, (K, N)) / 8).astype(np.float16)
    C = np.zeros(M * N, np.float16)
    r = emulate(parse_ptx_file(str(KERNEL_PTX / "triton" / "matmul.sm_80.ptx")),
                ["A", "B", "C", M, N, K, K, 1, N, 1, N, 1, "s1", "s2"],
                {"A": A.ravel(), "B": B.ravel(), "C": C, "s1": np.zeros(16, np.uint8), "s2": np.zeros(16, np.uint8)},
                grid=(2, 1), block=128, shared_bytes=16384, mode="full")
    # products of multiples of 1/8 below 1, sums of 40: exact in f32, one f16 rounding
    want = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float16)
    assert np.array_equal(r.buffers["C"].reshape(M, N), want)
    assert not C.any()  # the caller's array is not written (in_place=False, the default)
