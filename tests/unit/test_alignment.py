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
