"""Bulk asynchronous copies, st.async/red.async, stmatrix and movmatrix (issue 16).

The kernels are the lit tests' (tests/filecheck/Execution), which check the counts in both
modes; here the values, computed by hand from the PTX ISA's definitions, in full mode, and
the same counts in slice mode, which bounds-checks the copies outside its slice."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ROOT, emulate, ptx_header, ptxas, which

from hypa.runtime.emulator.emulator import EmulationError

EXEC = ROOT / "tests" / "filecheck" / "Execution"
KERNELS = ["emulate-bulk-copy.ptx", "emulate-st-async.ptx", "emulate-stmatrix.ptx", "emulate-cluster.ptx",
           "emulate-mbarrier-pipeline.ptx", "emulate-mbarrier-tokens.ptx", "emulate-mbarrier-polling.ptx"]


@pytest.mark.skipif(which("ptxas") is None, reason="ptxas is not installed")
@pytest.mark.parametrize("name", KERNELS)
def test_kernels_are_valid_ptx(name):
    r = ptxas(EXEC / name, "sm_90")
    assert r.returncode == 0, r.stderr


def _bulk(mode: str):
    src = np.arange(64, dtype=np.uint32) * 3
    acc = np.arange(64, dtype=np.uint32)
    return emulate((EXEC / "emulate-bulk-copy.ptx").read_text(), ["src", "dst", "acc"],
                   {"src": src, "dst": np.zeros(64, np.uint32), "acc": acc}, block=64, mode=mode)


def test_bulk_copy_through_expect_tx():
    """src (3i) copied into shared memory, +1000 by each thread, copied back (dst = 3i + 1000)
    and added into acc (i + 3i + 1000)."""
    r = _bulk("full")
    i = np.arange(64)
    assert r.buffers["dst"].tolist() == (3 * i + 1000).tolist()
    assert r.buffers["acc"].tolist() == (4 * i + 1000).tolist()
    assert (r.metrics["inst_executed"], r.metrics["thread_inst_executed"]) == (48, 1288)


def test_bulk_copy_counts_in_slice_mode():
    """Slice mode counts the same and leaves the buffers alone (the bulk-group copies are
    outside the slice: their bytes are checked, not moved)."""
    full, sliced = _bulk("full"), _bulk("slice")
    keys = ("inst_executed", "thread_inst_executed", "not_predicated_off_thread_inst_executed", "branch",
            "divergent_branch")
    assert [sliced.metrics[k] for k in keys] == [full.metrics[k] for k in keys] == [48, 1288, 1288, 8, 3]
    assert sliced.buffers["dst"].tolist() == [0] * 64
    assert sliced.buffers["acc"].tolist() == list(range(64))


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_bulk_copy_out_of_bounds(mode):
    with pytest.raises(EmulationError, match=r"cp\.async\.bulk\.global\.shared::cta\.bulk_group .*buffer 'dst' byte 0, "
                                             r"which holds 252 bytes"):
        emulate((EXEC / "emulate-bulk-copy.ptx").read_text(), ["src", "dst", "acc"],
                {"src": np.zeros(64, np.uint32), "dst": np.zeros(63, np.uint32), "acc": np.zeros(64, np.uint32)},
                block=64, mode=mode)


def _reduce_kernel(op: str, t: str) -> str:
    """Thread t writes v[t] into shared memory; thread 0 reduces the 8 values into acc with
    cp.reduce.async.bulk (bulk group), ``op`` on ``t``."""
    wide = t.endswith("64")
    reg, w = ("%rd", 8) if wide else ("%r", 4)
    return ptx_header("sm_90", "8.0") + f"""
.visible .entry red(.param .u64 acc, .param .u64 v)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    .shared .align 16 .b8 sbuf[64];
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [acc];
    ld.param.u64 %rd2, [v];
    cvta.to.global.u64 %rd3, %rd2;
    mul.wide.u32 %rd4, %r1, {w};
    add.s64 %rd5, %rd3, %rd4;
    ld.global.{t[1:] if t[1] != 'b' else 'u' + t[2:]} {reg}6, [%rd5];
    mov.u32 %r2, sbuf;
    cvt.u32.u64 %r3, %rd4;
    add.u32 %r4, %r2, %r3;
    st.shared.{t[1:]} [%r4], {reg}6;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
    cp.reduce.async.bulk.global.shared::cta.bulk_group{op}{t} [%rd1], [%r2], {8 * w};
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
$L_end:
    ret;
}}
"""


REDUCTIONS = [
    (".add", ".u32"), (".add", ".s32"), (".add", ".u64"), (".min", ".u32"), (".min", ".s32"), (".max", ".s32"),
    (".max", ".u64"), (".min", ".s64"), (".and", ".b32"), (".or", ".b32"), (".xor", ".b64"), (".inc", ".u32"),
    (".dec", ".u32"), (".add", ".f32"), (".add", ".f64"),
]


def _expected(op: str, a, b):
    if op == ".inc":
        return np.where(a >= b, 0, a + 1)
    if op == ".dec":
        return np.where((a == 0) | (a > b), b, a - 1)
    if op in (".and", ".or", ".xor"):
        return {".and": np.bitwise_and, ".or": np.bitwise_or, ".xor": np.bitwise_xor}[op](a, b)
    return {".add": a + b, ".min": np.minimum(a, b), ".max": np.maximum(a, b)}[op]


@pytest.mark.parametrize("op,t", REDUCTIONS)
def test_cp_reduce_async_bulk(op, t, tmp_path):
    """Element-wise ``acc[i] = acc[i] op v[i]`` over 8 elements, with signs, zeros and wrap
    points (inc/dec wrap at v)."""
    dt = {"u32": np.uint32, "s32": np.int32, "b32": np.uint32, "u64": np.uint64, "s64": np.int64, "b64": np.uint64,
          "f32": np.float32, "f64": np.float64}[t[1:]]
    acc = np.array([0, 1, 5, 7, 3, 100, 9, 2], dtype=dt)
    v = np.array([0, 1, 3, 7, 10, 2, 9, 1], dtype=dt)
    if t[1] == "s":
        acc[1::3] *= -1
        v[2::3] *= -1
    if t[1] == "f":
        acc = acc + dt(0.25)
    ptx = _reduce_kernel(op, t)
    if which("ptxas"):
        (tmp_path / "red.ptx").write_text(ptx)
        r = ptxas(tmp_path / "red.ptx", "sm_90")
        assert r.returncode == 0, r.stderr
    want = _expected(op, acc.copy(), v)
    res = emulate(ptx, ["acc", "v"], {"acc": acc, "v": v}, block=8, mode="full")
    assert res.buffers["acc"].tolist() == want.tolist()


def test_st_async_and_red_async():
    """Lane l stores 7l with st.async and adds l with red.async (both completing 4 bytes on
    the mbarrier); after the wait lane l reads word 31 - l and the sum 496: 496000 + 7(31 - l)."""
    r = emulate((EXEC / "emulate-st-async.ptx").read_text(), ["out"], {"out": np.zeros(32, np.uint32)},
                kernel="sta", block=32, mode="full")
    assert r.buffers["out"].tolist() == [496000 + 7 * (31 - lane) for lane in range(32)]


def _fragment_value(i: int, row: int, col: int) -> int:
    """The kernel's matrix i: register i of lane l holds halves (i << 8 | 2l) and
    (i << 8 | 2l + 1), and lane l holds row l/4, columns 2(l%4) and 2(l%4)+1 (the ISA's
    fragment), so element (row, col) is 256i + 8 row + col."""
    lane, half = 4 * row + col // 2, col % 2
    return (i << 8) | (2 * lane + half)


def test_stmatrix_and_movmatrix_layouts():
    r = emulate((EXEC / "emulate-stmatrix.ptx").read_text(), ["out"], {"out": np.zeros(288, np.uint32)},
                kernel="mat", block=32, mode="full")
    out = r.buffers["out"]
    stored = out[:128].view(np.uint16).reshape(4, 8, 8)  # matrix, row (16 bytes each), column
    trans = out[128:256].view(np.uint16).reshape(4, 8, 8)
    for i in range(4):
        for row in range(8):
            for col in range(8):
                assert stored[i, row, col] == _fragment_value(i, row, col) == 256 * i + 8 * row + col
                assert trans[i, row, col] == _fragment_value(i, col, row)
    # movmatrix of matrix 0: lane l gets rows 2(l%4) and 2(l%4)+1 of column l/4
    want = [(8 * (2 * (lane % 4)) + lane // 4) | ((8 * (2 * (lane % 4) + 1) + lane // 4) << 16) for lane in range(32)]
    assert out[256:].tolist() == want
    assert r.metrics["inst_executed"] == 44


def test_cluster_of_one_cta():
    """Thread t ends with 5t + 100000: it read back, across two cluster barriers, the value
    thread 63 - t computed from thread t's first store (getctarank 0, %cluster_ctarank 0,
    %cluster_nctarank 1)."""
    r = emulate((EXEC / "emulate-cluster.ptx").read_text(), ["out"], {"out": np.zeros(64, np.uint32)},
                kernel="clu", block=64, grid=2, mode="full")
    assert r.buffers["out"].tolist() == [5 * t + 100000 for t in range(64)]


def test_tensor_copies_say_why_they_are_not_emulated():
    ptx = ptx_header("sm_90", "8.0") + """
.visible .entry k(.param .u64 map)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b64 bar;
    .shared .align 128 .b8 tile[1024];
    ld.param.u64 %rd1, [map];
    mov.u32 %r1, 0;
    cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [tile], [%rd1, {%r1}], [bar];
    ret;
}
"""
    from hypa.runtime.emulator.lowering.rules import LoweringError  # noqa: F401  (the error type the emulator reports)

    with pytest.raises(Exception, match=r"'cp\.async\.bulk\.tensor\.1d\.shared::cluster\.global\.tile\.mbarrier::"
                                        r"complete_tx::bytes' has no emulator semantics: the \.tensor forms read "
                                        r"a CUtensorMap"):
        emulate(ptx, ["map"], {"map": np.zeros(16, np.uint64)}, mode="full")


ST_BULK = ptx_header("sm_100", "8.6") + """
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b32 sh[32];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, sh;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    add.u32 %r5, %r1, 100;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 st.bulk.weak.shared::cta [%r2+16], SIZE, 0;
    bar.sync 0;
    ld.shared.u32 %r6, [%r4];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r6;
    ret;
}
"""


def test_st_bulk_zeroes_and_is_checked(tmp_path):
    """st.bulk (sm_100) zeroes 64 bytes from word 4: words 4..19 read 0, the others 100 + t;
    256 bytes run past the 128 bytes of shared memory, an error in both modes."""
    ptx = ST_BULK.replace("SIZE", "64")
    if which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        r = ptxas(tmp_path / "k.ptx", "sm_100")
        assert r.returncode == 0, r.stderr
    res = emulate(ptx, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode="full")
    assert res.buffers["out"].tolist() == [0 if 4 <= t < 20 else 100 + t for t in range(32)]
    for mode in ("full", "slice"):
        with pytest.raises(EmulationError, match=r"@%p1 st\.bulk\.weak\.shared::cta \[%r2\+16\], 256, 0; \(block bb0\) "
                                                 r"touches shared memory offset 0x10, beyond the 128 bytes"):
            emulate(ST_BULK.replace("SIZE", "256"), ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)


LDMATRIX = ptx_header("sm_90", "8.0") + """
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 m[128];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, m;
    shl.b32 %r3, %r1, STRIDE;
    add.u32 %r4, %r2, %r3;
    ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r5}, [%r4];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r1;
    ret;
}
"""


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_ldmatrix_rows_are_checked_in_both_modes(mode):
    """ldmatrix's value feeds nothing here, so slice mode leaves it out of the slice and only
    checks its 16-byte rows: 8 rows 16 bytes apart fit the 128 bytes, 32 bytes apart do not."""
    emulate(LDMATRIX.replace("STRIDE", "4"), ["out"], {"out": np.zeros(32, np.uint32)}, mode=mode)
    with pytest.raises(EmulationError, match=r"ldmatrix\.sync\.aligned\.m8n8\.x1\.shared\.b16 \{%r5\}, \[%r4\]; .*"
                                             r"touches shared memory offset 0x80, beyond the 128 bytes"):
        emulate(LDMATRIX.replace("STRIDE", "5"), ["out"], {"out": np.zeros(32, np.uint32)}, mode=mode)
