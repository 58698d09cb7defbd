"""wgmma.mma_async in full mode (issue 16): one warpgroup (128 threads) multiplies a 64xK A by
a KxN B from shared-memory matrix descriptors (A also from registers) in every swizzle mode
and major-ness, with scale-d, imm-scale-a/b and imm-trans-a/b.  The shared-memory images and
the fragment layouts are written here from the PTX ISA's figures ("Asynchronous Warpgroup
Level Matrix Shared Memory Layout", "Register Fragments"); the values are small integers, so
every product and sum is exact and the expected D is numpy's A @ B (+ C)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import ISA_PROGRAMS, emulate, gpu_recorded_run, kernel, nvcc, ptxas, requires, run_hypa

from hypa.runtime.emulator.lowering import LoweringError

SMEM = 49152  # the most static shared memory a kernel may declare
B_AT = 8192  # B's byte offset in the shared array (1024-byte aligned, like A's)
SWIZZLE_FIELD = {0: 0, 128: 1, 64: 2, 32: 3}


def _g(l):
    return l >> 2


def _t(l):
    return l & 3


def d_coords(lane_lin: int, i: int) -> tuple[int, int]:
    """(row, col) of accumulator element i of thread lane_lin of the warpgroup (ISA figure
    "WGMMA .m64nNk16 register fragment layout for accumulator matrix D")."""
    w, l = lane_lin // 32, lane_lin % 32
    return 16 * w + _g(l) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * _t(l) + (i & 1)


def a_coords(at: str, lane_lin: int, i: int) -> tuple[int, int]:
    """(row, col) of A element i (f16/bf16: 8 halves in 4 registers; tf32: 4 registers)."""
    w, l = lane_lin // 32, lane_lin % 32
    if at == "tf32":
        return 16 * w + _g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1)
    return 16 * w + _g(l) + 8 * ((i >> 1) & 1), 2 * _t(l) + (i & 1) + 8 * (i >> 2)


def layout_offset(mn: int, kk: int, esz: int, k_major: bool, width: int, lbo: int, sbo: int) -> int:
    """Byte offset of element (mn, kk) in the canonical layout, before the swizzle."""
    t = 16 // esz
    if k_major:
        if width == 0:
            return (mn % 8) * 16 + (mn // 8) * sbo + (kk % t) * esz + (kk // t) * lbo
        return (mn % 8) * width + (mn // 8) * sbo + kk * esz
    if width == 0:
        return (mn % t) * esz + (mn // t) * sbo + (kk % 8) * 16 + (kk // 8) * lbo
    per_row = width // esz
    return (mn % per_row) * esz + (mn // per_row) * lbo + (kk % 8) * width + (kk // 8) * sbo


def swizzle(addr: int, width: int) -> int:
    """16-byte chunk c of a swizzle row r (of 32/64/128 bytes) goes to chunk c ^ (r mod
    width/16): address bits [4, 4+b) ^= bits [7, 7+b)."""
    if width == 0:
        return addr
    return addr ^ (((addr >> 7) & (width // 16 - 1)) << 4)


def strides(rows: int, esz: int, k_major: bool, width: int) -> tuple[int, int]:
    """(LBO, SBO) of a dense matrix of ``rows`` MN indices and one instruction's K (32 bytes)."""
    if k_major:
        return (128, 256) if width == 0 else (16, 8 * width)
    t = 16 // esz
    if width == 0:
        return rows // t * 128, 128  # K groups after all MN core matrices; MN core matrices 128 B apart
    return 8 * width, (rows * esz // width) * 8 * width


def place(img: np.ndarray, at_byte: int, mat: np.ndarray, esz: int, k_major: bool, width: int) -> int:
    """Write the MN x K matrix ``mat`` (raw integer bits) into the byte image; its descriptor."""
    rows, kdim = mat.shape
    lbo, sbo = strides(rows, esz, k_major, width)
    for mn in range(rows):
        for kk in range(kdim):
            a = swizzle(at_byte + layout_offset(mn, kk, esz, k_major, width, lbo, sbo), width)
            img[a:a + esz] = np.frombuffer(int(mat[mn, kk]).to_bytes(esz, "little"), np.uint8)
    return ((at_byte >> 4) & 0x3FFF) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_FIELD[width] << 62)


def bits_of(x: np.ndarray, at: str) -> np.ndarray:
    if at == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.int64)
    if at == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
    return x.astype(np.float32).view(np.uint32).astype(np.int64)


def wgmma_kernel(dt: str, at: str, n: int, a_regs: bool, trans: tuple[int, int], scale: tuple[int, int],
                 scale_d: str, target: str = "sm_90a", after: str = "") -> str:
    """``k(a, b, c, d, desc_a, desc_b, img)``: copy the shared image ``img`` (SMEM bytes) into
    shared memory, C's fragment from ``c``, A's registers from ``a``, then one wgmma and D's
    fragment to ``d`` (thread t's element i at t * elements + i)."""
    k = 8 if at == "tf32" else 16
    per = 2 if dt == "f16" else 1
    nd = n // 2 // per
    dreg = "%r" if dt == "f16" else "%f"
    dregs = ", ".join(f"{dreg}{100 + j}" for j in range(nd))
    loads = "\n".join(f"    ld.global.b32 {dreg}{100 + j}, [%rd20+{4 * j}];" for j in range(nd))
    stores = "\n".join(f"    st.global.b32 [%rd21+{4 * j}], {dreg}{100 + j};" for j in range(nd))
    a_op = "{%r10, %r11, %r12, %r13}" if a_regs else "%rd10"
    imms = f"{scale[0]}, {scale[1]}"
    if at != "tf32":
        imms += f", {trans[1]}" if a_regs else f", {trans[0]}, {trans[1]}"
    sd = "%p1" if scale_d == "reg" else scale_d
    body = f"""
    .shared .align 1024 .b8 smem[{SMEM}];
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [img];
    mov.u32 %r2, %r1;
$copy:
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r3, [%rd3];
    mov.u32 %r4, smem;
    mad.lo.s32 %r4, %r2, 4, %r4;
    st.shared.u32 [%r4], %r3;
    add.s32 %r2, %r2, 128;
    setp.lt.u32 %p2, %r2, {SMEM // 4};
    @%p2 bra $copy;
    bar.sync 0;
    mov.u32 %r5, smem;
    cvt.u64.u32 %rd5, %r5;
    shr.u64 %rd5, %rd5, 4;
    ld.param.u64 %rd6, [desc_a];
    add.s64 %rd10, %rd6, %rd5;
    ld.param.u64 %rd7, [desc_b];
    add.s64 %rd11, %rd7, %rd5;
    ld.param.u64 %rd8, [a];
    mul.wide.u32 %rd9, %r1, 16;
    add.s64 %rd8, %rd8, %rd9;
    ld.global.v4.b32 {{%r10, %r11, %r12, %r13}}, [%rd8];
    ld.param.u64 %rd20, [c];
    mul.wide.u32 %rd9, %r1, {4 * nd};
    add.s64 %rd20, %rd20, %rd9;
    ld.param.u64 %rd21, [d];
    add.s64 %rd21, %rd21, %rd9;
    setp.ne.s32 %p1, {1 if scale_d == "reg" else 0}, 0;
{loads}
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n{n}k{k}.{dt}.{at}.{at} {{{dregs}}}, {a_op}, %rd11, {sd}, {imms};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
{after}
{stores}
    ret;"""
    regs = f"""    .reg .pred %p<4>;
    .reg .b32 %r<{100 + nd}>;
    .reg .f32 %f<{100 + nd}>;
    .reg .b64 %rd<30>;
"""
    sig = ("k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d, .param .u64 desc_a, "
           ".param .u64 desc_b, .param .u64 img)")
    return kernel(sig, body, regs=regs, target=target, version="8.0")


def run_wgmma(dt="f32", at="f16", n=8, a_regs=False, trans=(0, 0), scale=(1, 1), scale_d="0",
              width_a=0, width_b=0, seed=0, mode="full", mats=None, after=""):
    """Emulate one wgmma; (D as the kernel wrote it, numpy's expected D in the same order).
    ``mats``: (A, B, C) instead of random small integers."""
    rng = np.random.default_rng(seed)
    k = 8 if at == "tf32" else 16
    esz = 4 if at == "tf32" else 2
    A = rng.integers(-3, 4, (64, k)).astype(np.float32)
    B = rng.integers(-3, 4, (k, n)).astype(np.float32)
    C = rng.integers(-8, 9, (64, n)).astype(np.float32)
    if mats is not None:
        A, B, C = mats
    img = np.zeros(SMEM, np.uint8)
    ka, kb = not trans[0], not trans[1]  # imm-trans: MN-major
    desc_a = place(img, 0, bits_of(A, at), esz, ka, width_a)
    desc_b = place(img, B_AT, bits_of(B.T, at), esz, kb, width_b)
    per = 2 if dt == "f16" else 1
    ne = n // 2
    # A's registers, C's fragment
    a_words = np.zeros((128, 4), np.uint32)
    abits = bits_of(A, at)
    for t in range(128):
        if at == "tf32":
            for i in range(4):
                a_words[t, i] = abits[a_coords(at, t, i)]
        else:
            for i in range(8):
                a_words[t, i // 2] |= np.uint32(abits[a_coords(at, t, i)] << (16 * (i % 2)))
    cfrag = np.zeros((128, ne), np.float32)
    for t in range(128):
        for i in range(ne):
            cfrag[t, i] = C[d_coords(t, i)]
    cbuf = cfrag.astype(np.float16).view(np.uint32) if dt == "f16" else cfrag
    sa, sb = scale
    want = (sa * A) @ (sb * B) + (C if scale_d in ("1", "reg") else 0)
    wfrag = np.array([[want[d_coords(t, i)] for i in range(ne)] for t in range(128)], np.float32)
    ptx = wgmma_kernel(dt, at, n, a_regs, trans, scale, scale_d, after=after)
    d = np.zeros(128 * ne // per, np.uint32)
    res = emulate(ptx, ["a", "b", "c", "d", desc_a, desc_b, "img"],
                  {"a": a_words.reshape(-1), "b": np.zeros(1, np.uint32), "c": cbuf.reshape(-1).copy(), "d": d,
                   "img": img.view(np.uint32).copy()},
                  block=128, kernel="k", mode=mode)
    run_wgmma.last = res
    got = res.buffers["d"]
    got = got.view(np.float16).astype(np.float32) if dt == "f16" else got.view(np.float32)
    return got.reshape(128, ne), wfrag, ptx


@pytest.mark.parametrize("width", [0, 32, 64, 128])
def test_f16_k_major_every_swizzle(width):
    got, want, _ = run_wgmma(n=16, width_a=width, width_b=width, scale_d="1", seed=width)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("width", [0, 32, 128])
def test_f16_mn_major_transposed(width):
    got, want, _ = run_wgmma(n=64, trans=(1, 1), width_a=width, width_b=width, seed=3 + width)
    np.testing.assert_array_equal(got, want)


def test_bf16_a_from_registers_negated_operands_and_scale_d_register():
    got, want, _ = run_wgmma(at="bf16", n=24, a_regs=True, scale=(-1, -1), scale_d="reg", width_b=64, seed=7)
    np.testing.assert_array_equal(got, want)


def test_f16_accumulator_and_trans_b_only():
    got, want, _ = run_wgmma(dt="f16", n=32, trans=(0, 1), scale_d="1", width_a=128, width_b=32, seed=9)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("a_regs", [False, True])
def test_tf32(a_regs):
    got, want, _ = run_wgmma(at="tf32", n=16, a_regs=a_regs, scale=(1, -1), scale_d="1", width_a=32, width_b=128,
                             seed=11)
    np.testing.assert_array_equal(got, want)


def test_n256_scale_d_zero_ignores_c():
    got, want, _ = run_wgmma(n=256, width_a=128, width_b=128, scale_d="0", seed=13)
    np.testing.assert_array_equal(got, want)


def test_hand_computed_fragments():
    """A all ones, B[k][j] = j, C[r][j] = r: D[r][j] = 16 j + r.  Thread 0 holds (0, 0), (0, 1),
    (8, 0), (8, 1); thread 37 (warp 1, lane 5: rows 16 + 1 and 16 + 9, columns 2 and 3)."""
    mats = (np.ones((64, 16), np.float32), np.tile(np.arange(8, dtype=np.float32), (16, 1)),
            np.repeat(np.arange(64, dtype=np.float32)[:, None], 8, axis=1))
    got, _want, _ = run_wgmma(n=8, scale_d="1", width_a=128, width_b=64, mats=mats)
    assert got[0].tolist() == [0, 16, 8, 24]
    assert got[37].tolist() == [32 + 17, 48 + 17, 32 + 25, 48 + 25]


def test_descriptor_outside_shared_memory_is_an_error_in_both_modes():
    for mode in ("full", "slice"):
        rng_desc = (SMEM + 4096) >> 4  # B past the end of the CTA's shared memory
        ptx = wgmma_kernel("f32", "f16", 8, False, (0, 0), (1, 1), "0")
        img = np.zeros(SMEM // 4, np.uint32)
        with pytest.raises(Exception) as err:
            emulate(ptx, ["a", "b", "c", "d", 0, rng_desc | (8 << 16) | (16 << 32), "img"],
                    {"a": np.zeros(512, np.uint32), "b": np.zeros(1, np.uint32), "c": np.zeros(512, np.uint32),
                     "d": np.zeros(512, np.uint32), "img": img}, block=128, kernel="k", mode=mode)
        assert "out-of-bounds access" in str(err.value) and "wgmma.mma_async" in str(err.value), str(err.value)
        assert f"beyond the {SMEM} bytes this CTA has" in str(err.value)


def test_unemulated_forms_say_why():
    ptx = kernel("k()", """
    wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%f1, %f2, %f3, %f4}, %rd1, %rd2, 1, 1, 1;
    ret;""", regs="    .reg .f32 %f<8>;\n    .reg .b64 %rd<4>;\n", target="sm_90a")
    with pytest.raises(LoweringError, match=r"\.f32\.e4m3\.e4m3 is not emulated .*FP8"):
        emulate(ptx, mode="full")


@requires("ptxas")
def test_kernels_assemble_for_sm_90a(tmp_path):
    for args in (("f32", "f16", 16, False, (0, 0), (1, 1), "1"), ("f16", "f16", 32, True, (0, 1), (1, -1), "reg"),
                 ("f32", "tf32", 16, True, (0, 0), (-1, 1), "0"), ("f32", "bf16", 256, False, (1, 1), (1, 1), "0")):
        f = tmp_path / "k.ptx"
        f.write_text(wgmma_kernel(*args))
        r = ptxas(f, "sm_90a")
        assert r.returncode == 0, r.stderr


#: what tests/cuda_programs/isa/wgmma_gemm.cu prints: per case 0 mismatches against the host's
#: exact reference; the checksums and elements are that reference's (e.g. the first case's
#: D[0][0] = sum_k A[0][k] B[k][0] = sum_k (5k % 7 - 3)(2k % 5 - 2) = 1)
PROGRAM_STDOUT = (
    "f16_n64_sw128: no error, 0 mismatches, sum = -9.00, D[0][0] = 0x1p+0, D[5][7] = -0x1.8p+3, "
    "D[63][63] = -0x1p+3, D[17][3] = 0x41200000\n"
    "f16_n128_areg_transb_sw128: no error, 0 mismatches, sum = -7.00, D[0][0] = -0x1.8p+1, D[5][7] = -0x1.ep+3, "
    "D[63][127] = 0x1p+3, D[17][3] = 0x41300000\n"
    "tf32_n32_sw64_sw32: no error, 0 mismatches, sum = 2.00, D[0][0] = -0x1.3p+2, D[5][7] = -0x1.6p+1, "
    "D[63][31] = 0x1.bp+2, D[17][3] = 0xbf400000\n"
    "f16acc_n16_transa_interleave: no error, 0 mismatches, sum = -5.00, D[0][0] = -0x1.4p+2, D[5][7] = 0x1.2p+3, "
    "D[63][15] = -0x1p+1, D[17][3] = 0xc1100000\n"
    "PASS\n"
)


def test_first_program_element_by_hand():
    """D[0][0] of the program's first case, from its a_val/b_val (scale-d 0)."""
    assert sum(((5 * k) % 7 - 3) * ((2 * k) % 5 - 2) for k in range(16)) == 1


def test_wgmma_gemm_program_under_hypa_run(tmp_path):
    """nvcc -arch=sm_90a embeds compute_90 and compute_90a PTX; hypa run takes the sm_90a one."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    exe = tmp_path / "wgmma_gemm"
    p = nvcc(ISA_PROGRAMS / "wgmma_gemm.cu", exe, arch="sm_90a")
    assert p.returncode == 0, p.stderr
    r = run_hypa("run", "--", exe, timeout=300)
    if r.returncode != 0 and "cannot build its CUDA runtime library" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    assert r.stdout == PROGRAM_STDOUT, r.stderr
    assert "racecheck" not in r.stderr  # racecheck's sample (on by default) finds no shared-memory hazard
    gpu = gpu_recorded_run("wgmma_gemm")
    if gpu is not None:
        assert (gpu["rc"], gpu["stdout"]) == (0, r.stdout)


def test_slice_mode_branch_on_wgmma_result_pulls_in_the_shared_stores():
    """A branch on D makes the wgmma a slice member; its shared-memory operands must then be
    written in slice mode too (isa.MEMORY_FACTS: wgmma reads shared memory), so the branch goes
    the same way as in full mode, in the threads whose D[0] is positive and the others."""
    after = """    setp.gt.f32 %p3, %f100, 0f00000000;
    @%p3 bra $pos;
    add.s32 %r2, %r2, 1;
$pos:"""
    counts = {}
    for mode in ("slice", "full"):  # slice first: shared memory holds nothing of this launch's data yet
        _got, want, _ = run_wgmma(n=16, width_a=128, width_b=32, seed=21, mode=mode, after=after)
        counts[mode] = run_wgmma.last.metrics.thread_opcodes["add.s32"]
    positive = int((want[:, 0] > 0).sum())
    assert 0 < positive < 128
    # the copy loop's add.s32 runs SMEM / 4 / 128 times per thread; the branch skips one more
    loop = SMEM // 4 // 128 * 128
    assert counts == {"full": loop + 128 - positive, "slice": loop + 128 - positive}


def test_tritons_matmul_computes_a_times_b():
    """Triton's tl.dot on sm_90a (tests/kernels/ptx/triton/matmul.sm_90.ptx, 64x64 tiles, K step
    32: cp.async into swizzled shared memory, descriptors built in registers, two m64n64k16
    wgmma per step with imm-trans-b 1, scale-d a predicate) on a 100x40 by 40x96 product of
    small integers: every element exact in full mode; slice mode counts the same."""
    from helpers import ROOT

    ptx = (ROOT / "tests" / "kernels" / "ptx" / "triton" / "matmul.sm_90.ptx").read_text()
    rng = np.random.default_rng(2)
    M, N, K = 100, 96, 40
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(np.float16)
    counts = {}
    for mode in ("full", "slice"):
        res = emulate(ptx, ["a", "b", "c", M, N, K, K, 1, N, 1, N, 1, 0, 0],
                      {"a": a.reshape(-1).copy(), "b": b.reshape(-1).copy(), "c": np.zeros(M * N, np.float16)},
                      grid=(2, 2, 1), block=128, kernel="matmul", mode=mode, shared_bytes=32768)
        counts[mode] = res.metrics.values["inst_executed"]
        if mode == "full":
            got = res.buffers["c"].reshape(M, N).astype(np.float32)
            np.testing.assert_array_equal(got, a.astype(np.float32) @ b.astype(np.float32))
    assert counts["full"] == counts["slice"]



def test_a_binary_for_sm_90a_gives_its_sm_90a_ptx(tmp_path):
    """nvcc -arch=sm_90a embeds the kernels as compute_90 PTX (first, without the wgmma that
    __CUDA_ARCH_FEAT_SM90_ALL guards) and compute_90a PTX; the GPU runs the sm_90a code, so
    hypa profile (cuobjdump or its own fatbin reader) and hypa run take that one."""
    from hypa.runtime.report.inputs import InputOptions, arch_specific, load_sources

    assert (arch_specific(".target sm_90\n"), arch_specific(".version 8.0\n.target sm_90a\n")) == (False, True)
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    exe = tmp_path / "wgmma_gemm"
    p = nvcc(ISA_PROGRAMS / "wgmma_gemm.cu", exe, arch="sm_90a")
    assert p.returncode == 0, p.stderr
    for cuobjdump in (None, False):
        (src,) = load_sources(str(exe), InputOptions(cuobjdump=cuobjdump))
        assert arch_specific(src.ptx) and src.ptx.count("wgmma.mma_async.sync") == 4
