"""Separate compilation (``nvcc -rdc=true``): the objects' PTX linked as nvlink links their
machine code (ptxdialect/link.py), under ``hypa run`` and ``hypa profile``."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from helpers import emulate, nvcc, run_hypa

from hypa.ptxdialect import parse_ptx
from hypa.ptxdialect.diagnostics import PTXError
from hypa.ptxdialect.link import link_ptx

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

#: the caller: an extern function and an extern variable, a static helper named like the callee's
CALLER = HEAD + """.file 1 "a.cu"
.extern .func (.param .b32 func_retval0) twice(.param .b32 twice_param_0);
.extern .global .align 4 .u32 counter;
.func (.param .b32 func_retval0) helper(.param .b32 helper_param_0)
{
.reg .b32 %r<3>;
ld.param.u32 %r1, [helper_param_0];
add.s32 %r2, %r1, 100;
st.param.b32 [func_retval0+0], %r2;
ret;
}
.visible .entry k(.param .u64 k_out)
{
.reg .b32 %r<8>;
.reg .b64 %rd<5>;
ld.param.u64 %rd1, [k_out];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
.loc 1 7 3
{
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 retval0;
call.uni (retval0), twice, (param0);
ld.param.b32 %r2, [retval0+0];
}
{
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 retval0;
call.uni (retval0), helper, (param0);
ld.param.b32 %r3, [retval0+0];
}
add.s32 %r4, %r2, %r3;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd2, %rd3;
st.global.u32 [%rd4], %r4;
mov.u64 %rd3, counter;
atom.global.add.u32 %r5, [%rd3], 1;
ret;
}
"""

#: the callee: defines twice and counter; its own static helper (x * 2)
CALLEE = HEAD + """.file 1 "b.cu"
.visible .global .align 4 .u32 counter = 5;
.func (.param .b32 func_retval0) helper(.param .b32 helper_param_0)
{
.reg .b32 %r<3>;
ld.param.u32 %r1, [helper_param_0];
shl.b32 %r2, %r1, 1;
st.param.b32 [func_retval0+0], %r2;
ret;
}
.visible .func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
.reg .b32 %r<3>;
.loc 1 3 1
ld.param.u32 %r1, [twice_param_0];
{
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 retval0;
call.uni (retval0), helper, (param0);
ld.param.b32 %r2, [retval0+0];
}
st.param.b32 [func_retval0+0], %r2;
ret;
}
"""


def test_linked_objects_run_as_one_module() -> None:
    """out[i] = twice(i) + helper_a(i) = 2i + (i + 100): each static helper stays its object's;
    counter (5, defined in b) counts the 32 threads."""
    text = link_ptx([("a", CALLER), ("b", CALLEE)])
    r = emulate(text, ["out"], {"out": np.zeros(32, np.uint32)}, kernel="k", mode="full")
    assert list(r.buffers["out"]) == [3 * i + 100 for i in range(32)]
    assert "helper$rdc1" in text and ".extern" not in text
    assert text.count(".version") == 1 and text.count(".file 2 \"b.cu\"") == 1 and ".loc 2 3 1" in text


@pytest.mark.skipif(not shutil.which("ptxas"), reason="needs ptxas")
def test_ptxas_accepts_the_linked_module(tmp_path) -> None:
    src = tmp_path / "linked.ptx"
    src.write_text(link_ptx([("a", CALLER), ("b", CALLEE)]))
    p = subprocess.run(["ptxas", "-arch=sm_90", str(src), "-o", str(tmp_path / "l.cubin")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_multiple_definition_is_a_located_error() -> None:
    with pytest.raises(PTXError, match=r"^b2:5:32: error: multiple definition of counter \(also defined in b\)"):
        link_ptx([("a", CALLER), ("b", CALLEE), ("b2", CALLEE)])


def test_weak_definition_yields_and_unresolved_extern_stays() -> None:
    weak = CALLEE.replace(".visible .func (.param .b32 func_retval0) twice", ".weak .func (.param .b32 func_retval0) twice")
    strong = HEAD + """.visible .func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
.reg .b32 %r<3>;
ld.param.u32 %r1, [twice_param_0];
mul.lo.s32 %r2, %r1, 7;
st.param.b32 [func_retval0+0], %r2;
ret;
}
"""
    text = link_ptx([("a", CALLER), ("weak", weak), ("strong", strong)])
    r = emulate(text, ["out"], {"out": np.zeros(32, np.uint32)}, kernel="k", mode="full")
    assert list(r.buffers["out"]) == [7 * i + i + 100 for i in range(32)]  # the .visible twice
    lone = link_ptx([("a", CALLER), ("x", HEAD + ".visible .global .u32 other;\n")])
    assert ".extern .func (.param .b32 func_retval0) twice" in lone
    parse_ptx(lone)


RDC_MAIN = r"""
#include <cstdio>
__device__ float scale(float x);
extern __device__ int counter;
static __device__ __noinline__ int helper(int x) { return x + 100; }
static __device__ int table[4] = {1, 2, 3, 4};
__global__ void k(float *x, int *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { x[i] = scale(x[i]); atomicAdd(&counter, 1); y[i] = helper(i) + table[i & 3]; }
}
int main() {
  float h[64]; int hy[64]; for (int i = 0; i < 64; ++i) h[i] = i;
  float *d; int *dy; cudaMalloc(&d, sizeof h); cudaMalloc(&dy, sizeof hy);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  k<<<2, 32>>>(d, dy, 64);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
  int c = 0; cudaMemcpyFromSymbol(&c, counter, sizeof c);
  printf("%g %g %d %d %d\n", h[1], h[63], c, hy[5], hy[63]);
  return 0;
}
"""
RDC_LIB = r"""
__device__ int counter = 0;
static __device__ __noinline__ float helper(float x) { return x * 3.0f; }
static __device__ int table[4] = {10, 20, 30, 40};
__device__ float scale(float x) { return helper(x) + table[1]; }
"""


@pytest.fixture(scope="module")
def rdc_program(tmp_path_factory):
    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    d = tmp_path_factory.mktemp("rdc")
    (d / "main.cu").write_text(RDC_MAIN)
    (d / "lib.cu").write_text(RDC_LIB)
    b = nvcc(d / "main.cu", d / "rdc", "-rdc=true", str(d / "lib.cu"))
    assert b.returncode == 0, b.stderr
    return d / "rdc"


def test_hypa_run_links_separately_compiled_objects(rdc_program) -> None:
    """x[i] = 3i + table_lib[1] (20); y[i] = i + 100 + table_main[i & 3]; 64 atomics."""
    r = run_hypa("run", "--", str(rdc_program), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "23 209 64 107 167\n"
    assert "SASS" not in r.stderr


def test_hypa_profile_reads_the_linked_ptx(rdc_program) -> None:
    r = run_hypa("profile", str(rdc_program), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "kernel _Z1kPfPii" in r.stdout + r.stderr and "no PTX" not in r.stderr


def test_a_call_into_the_device_runtime_is_named() -> None:
    from hypa.runtime.emulator.program import ProgramError

    text = HEAD + """.extern .func (.param .b64 func_retval0) cudaGetParameterBufferV2(.param .b64 p0, .param .b64 p1);
.visible .entry k(.param .u64 k_out)
{
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [k_out];
{
.param .b64 param0;
st.param.b64 [param0+0], %rd1;
.param .b64 param1;
st.param.b64 [param1+0], %rd1;
.param .b64 retval0;
call.uni (retval0), cudaGetParameterBufferV2, (param0, param1);
ld.param.b64 %rd2, [retval0+0];
}
st.global.u64 [%rd1], %rd2;
ret;
}
"""
    with pytest.raises(ProgramError, match=r"^kernel k calls 'cudaGetParameterBufferV2' of the CUDA device runtime "
                                           r"\(cudadevrt: kernel launches from the device, dynamic parallelism\), "
                                           r"which hypa does not provide$"):
        emulate(text, ["out"], {"out": np.zeros(4, np.uint64)}, kernel="k", mode="full")
