"""Misaligned accesses (issue 31.4): an access whose address is not a multiple of its size (a
vector's whole size: ``ld.v4.u32`` needs 16 bytes) stops the launch with a misaligned-address
error in both modes (slice mode with ``--no-bounds-check``: the accesses it performs), and under
``hypa run`` leaves the sticky cudaErrorMisalignedAddress, as a GPU does."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import build_cuda_program, emulate, kernel, run_hypa

from hypa.runtime.emulator.emulator import EmulationError

WHERE = "misaligned address at kernel k, CTA (0, 0, 0), thread (0, 0, 0): "

GLOBAL = """
    ld.param.u64 %rd1, [k_out];
    cvta.to.global.u64 %rd2, %rd1;
{access}
    st.global.u32 [%rd2], %r1;
    ret;
"""
SHARED = """
    .shared .align 16 .b8 buf[64];
    mov.u32 %r5, buf;
{access}
    ld.param.u64 %rd1, [k_out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    ret;
"""

CASES = {
    "ld.global.v4.u32+4": (GLOBAL, "    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2+4];",
                           "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2+4]; (block bb0) accesses 16 bytes at "
                           "0x80000000004, which is not a multiple of 16"),
    "ld.global.u32+1": (GLOBAL, "    ld.global.u32 %r1, [%rd2+1];",
                        "ld.global.u32 %r1, [%rd2+1]; (block bb0) accesses 4 bytes at 0x80000000001, "
                        "which is not a multiple of 4"),
    "st.shared.v4+4": (SHARED, "    st.shared.v4.u32 [%r5+4], {%r1, %r2, %r3, %r4};",
                       "st.shared.v4.u32 [%r5+4], {%r1, %r2, %r3, %r4}; (block bb0) accesses 16 bytes at 0x4, "
                       "which is not a multiple of 16"),
    "atom.shared.u64+4": (SHARED, "    atom.shared.add.u64 %rd5, [%r5+4], 1;\n    cvt.u32.u64 %r1, %rd5;",
                          "atom.shared.add.u64 %rd5, [%r5+4], 1; (block bb0) accesses 8 bytes at 0x4, "
                          "which is not a multiple of 8"),
}


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_misaligned_access_stops_the_launch(case, mode):
    body, access, message = CASES[case]
    ptx = kernel("k(.param .u64 k_out)", body.format(access=access))
    with pytest.raises(EmulationError) as err:
        emulate(ptx, ["out"], {"out": np.zeros(16, np.uint32)}, block=32, mode=mode)
    assert str(err.value) == WHERE + message


def test_slice_mode_without_bounds_checks_checks_the_accesses_it_performs():
    """``--no-bounds-check`` in slice mode computes no address outside the slice (what it is
    for); an access the slice performs (its value decides a branch) is still checked."""
    body, access, message = CASES["ld.global.u32+1"]
    ptx = kernel("k(.param .u64 k_out)", body.format(access=access + "\n    setp.eq.u32 %p1, %r1, 7;\n"
                                                     "    @%p1 bra $L_out;\n    add.u32 %r1, %r1, 1;\n$L_out:"))
    with pytest.raises(EmulationError) as err:
        emulate(ptx, ["out"], {"out": np.zeros(16, np.uint32)}, block=32, mode="slice", bounds_check=False)
    assert str(err.value) == WHERE + message
    ptx = kernel("k(.param .u64 k_out)", body.format(access=access))  # the load is outside the slice
    emulate(ptx, ["out"], {"out": np.zeros(16, np.uint32)}, block=32, mode="slice", bounds_check=False)


def test_aligned_vector_accesses_run():
    ptx = kernel("k(.param .u64 k_out)", GLOBAL.format(access="    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2+16];"))
    out = np.arange(16, dtype=np.uint32)
    r = emulate(ptx, ["out"], {"out": out}, block=1, mode="full")
    assert int(r.buffers["out"][0]) == 4


def test_ldmatrix_rows_must_be_16_byte_aligned():
    """ldmatrix's row addresses come from lanes 0-7 (.x1): the message names the lane that gives one."""
    ptx = kernel("k(.param .u64 k_out)", """
    .shared .align 16 .b8 tile[256];
    mov.u32 %r5, tile;
    mov.u32 %r6, %tid.x;
    shl.b32 %r7, %r6, 4;
    setp.eq.u32 %p1, %r6, 5;
    selp.u32 %r8, 8, 0, %p1;
    add.u32 %r7, %r7, %r8;
    add.u32 %r9, %r5, %r7;
    ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r9];
    ld.param.u64 %rd1, [k_out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    ret;
""")
    with pytest.raises(EmulationError) as err:
        emulate(ptx, ["out"], {"out": np.zeros(4, np.uint32)}, block=32, mode="full")
    assert str(err.value) == ("misaligned address at kernel k, CTA (0, 0, 0), thread (5, 0, 0): "
                              "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r9]; (block bb0) accesses 16 bytes "
                              "at 0x58, which is not a multiple of 16")


FLOAT4 = r"""
#include <cstdio>
__global__ void store4(float *p) { *(float4 *)(p + 1) = make_float4(1, 2, 3, 4); }
int main() {
  float *d; cudaMalloc(&d, 64);
  store4<<<1, 1>>>(d);
  cudaError_t l = cudaGetLastError();
  cudaError_t s = cudaDeviceSynchronize();
  cudaError_t m = cudaMemset(d, 0, 64);
  printf("launch %s, sync %s, later %s\n", cudaGetErrorName(l), cudaGetErrorName(s), cudaGetErrorName(m));
  return 0;
}
"""


def test_float4_store_at_plus_4_is_a_sticky_misaligned_address(tmp_path):
    """stdout is what an H100 printed (driver 580.159.04, nvcc 13.0, 2026-11-28)."""
    p = run_hypa("run", "--", build_cuda_program(tmp_path, "float4", FLOAT4))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "launch cudaSuccess, sync cudaErrorMisalignedAddress, later cudaErrorMisalignedAddress\n"
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("hypa run:") and "misaligned" in ln]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("hypa run: launch 0: misaligned address at kernel _Z6store4Pf, CTA (0, 0, 0), "
                               "thread (0, 0, 0): st.global.v4.f32 "), lines[0]
    assert lines[0].endswith(", which is not a multiple of 16"), lines[0]


def test_hoisted_checks_prove_alignment_too():
    """A loop's checks hoisted to its preheader (slice mode) prove a lane only where each access's
    base and step are multiples of its size: a load at +1026 in the column-sum loop is reported
    as without hoisting and in full mode."""
    from test_hoist_checks import COLSUM

    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.options import EmulationOptions
    from hypa.runtime.emulator.program import prepare

    ptx = COLSUM.replace("[%rd5+1024]", "[%rd5+1026]")
    assert prepare(parse_ptx(ptx), "colsum", EmulationOptions(mode="slice")).hoist is not None
    message = ("misaligned address at kernel colsum, CTA (0, 0, 0), thread (0, 0, 0): ld.global.f32 %f2, [%rd5+1026]; "
               "(block $L_loop) accesses 4 bytes at 0x80000000402, which is not a multiple of 4")
    for options in ({"mode": "slice"}, {"mode": "slice", "hoist_checks": False}, {"mode": "full"}):
        with pytest.raises(EmulationError) as err:
            emulate(ptx, [4, "a", "out"], {"a": np.ones(4096, np.float32), "out": np.zeros(256, np.float32)},
                    block=256, **options)
        assert str(err.value) == message, options
    # aligned, the same loop runs with its checks hoisted
    emulate(COLSUM, [4, "a", "out"], {"a": np.ones(4096, np.float32), "out": np.zeros(256, np.float32)}, block=256)


WMMA = """
    ld.param.u64 %rd1, [k_a];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [k_off];
    cvt.u64.u32 %rd3, %r1;
    add.s64 %rd4, %rd2, %rd3;
    ld.param.u32 %r2, [k_ld];
    {op}
    ret;
"""
WMMA_REGS = "    .reg .b32 %r<20>;\n    .reg .b64 %rd<8>;\n    .reg .f32 %f<10>;\n"
WMMA_LOAD = ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10}, "
             "[%rd4], %r2;")
WMMA_STORE = ("wmma.store.d.sync.aligned.col.m16n16k16.global.f32 [%rd4], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, "
              "%r2;")
WMMA_OPS = {"load": WMMA_LOAD,
            "store": "add.s64 %rd5, %rd2, 4096;\n    wmma.load.c.sync.aligned.col.m16n16k16.global.f32 "
                     "{%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd5], 16;\n    " + WMMA_STORE}


#: what an H100 did with these (driver 580.159.04, nvcc 13.0, 2026-11-28; one process per case,
#: every fragment register used): (op, byte offset of the matrix, stride in elements) -> fault
H100_WMMA = {("load", 2, 16): "cudaErrorMisalignedAddress", ("store", 2, 16): "cudaErrorMisalignedAddress",
             ("load", 0, 16): None, ("load", 4, 16): None, ("load", 16, 16): None, ("load", 0, 17): None,
             ("load", 0, 19): None, ("load", 0, 20): None, ("store", 4, 16): None, ("store", 16, 16): None,
             ("store", 0, 17): None, ("store", 0, 18): None}


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("op,message", [
    ("load", f"{WMMA_LOAD} (block bb0) accesses 4 bytes at 0x80000000002, which is not a multiple of 4"),
    ("store", f"{WMMA_STORE} (block bb0) accesses 4 bytes at 0x80000000002, which is not a multiple of 4"),
])
def test_wmma_matrix_address_must_be_register_aligned(mode, op, message):
    """A matrix 2 bytes off faults on an H100 (``H100_WMMA``), and here in both modes (slice mode
    checks the fragments it does not load, ``check_access``)."""
    assert H100_WMMA[(op, 2, 16)] == "cudaErrorMisalignedAddress"
    ptx = kernel("k(.param .u64 k_a, .param .u32 k_off, .param .u32 k_ld)", WMMA.format(op=WMMA_OPS[op]),
                 regs=WMMA_REGS)
    with pytest.raises(EmulationError) as err:
        emulate(ptx, ["a", 2, 16], {"a": np.zeros(8192, np.uint8)}, block=32, mode=mode)
    assert str(err.value) == WHERE + message


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("op,offset,stride", sorted(k for k, v in H100_WMMA.items() if v is None))
def test_wmma_rows_an_h100_runs_run(mode, op, offset, stride):
    """The PTX ISA asks each row (column) to start at a multiple of the lane's fragment size (32
    bytes here); an H100 runs rows 4 or 16 bytes off and odd strides, so hypa does too (and a
    stored matrix lands where the stride puts it)."""
    ptx = kernel("k(.param .u64 k_a, .param .u32 k_off, .param .u32 k_ld)", WMMA.format(op=WMMA_OPS[op]),
                 regs=WMMA_REGS)
    a = np.zeros(8192, np.uint8)
    a[4096:5120] = np.arange(256, dtype=np.float32).view(np.uint8)
    r = emulate(ptx, ["a", offset, stride], {"a": a}, block=32, mode=mode)
    if op == "store" and mode == "full":  # C (16 x 16, column-major, at byte 4096) at offset, columns `stride` apart
        out = r.buffers["a"][offset: offset + 4 * stride * 16].view(np.float32).reshape(16, stride)[:, :16]
        assert (out == np.arange(256, dtype=np.float32).reshape(16, 16)).all()
