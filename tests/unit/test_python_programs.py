"""Python programs on CUDA's driver API under `hypa run` (issue 30): hypa's libcuda.so.1
(cudart/driver_shim.py, cudart/driver.py), `hypa run -- python script.py`, and the cuda-python
and Numba-CUDA programs tests/cuda_programs/python/driver_api.py and numba_jit.py against an
H100's recording (tests/ground_truth/hypa_run/python_native.json,
benchmarks/gpu/python_programs_native.sh); the CuPy and PyCUDA programs beside them
(cupy_native.json, benchmarks/gpu/cupy_programs_native.py), which CI does not run (CuPy is the
`python-gpu` extra; PyCUDA builds from source), and CuPy's static CUDA runtime sent to hypa's
(cudart/static_runtime.py) on a stand-in module, which it does."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hypa.cudart import driver_api, driver_shim, shim

from helpers import requires, run_hypa

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "cuda_programs" / "python" / "driver_api.py"
NUMBA_PROGRAM = ROOT / "tests" / "cuda_programs" / "python" / "numba_jit.py"
RECORDED = json.loads((ROOT / "tests" / "ground_truth" / "hypa_run" / "python_native.json").read_text())


@pytest.fixture(scope="module")
def libcuda(tmp_path_factory):
    if shim.compiler() is None:
        pytest.skip("no C compiler")
    try:
        return driver_shim.build(13, out_dir=str(tmp_path_factory.mktemp("driver")))
    except shim.BuildError as e:
        pytest.skip(str(e))


@requires("readelf")
def test_soname_unversioned_exports_and_the_runtime_it_needs(libcuda):
    dyn = subprocess.run(["readelf", "-d", libcuda], capture_output=True, text=True).stdout
    assert "Library soname: [libcuda.so.1]" in dyn and "Shared library: [libcudart.so.13]" in dyn
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", libcuda], capture_output=True, text=True).stdout
    exported = {}
    for line in syms.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[4] == "GLOBAL" and parts[6] != "UND":
            exported[parts[7]] = line
    assert set(driver_api.exported_names()) <= set(exported)
    assert len(driver_api.exported_names()) == 682  # NVIDIA's driver 580's functions
    assert not any("@" in name for name in exported)  # no version nodes, as NVIDIA's has none
    assert "hypa_unsupported" not in exported and "hypa_procs" not in exported


def test_every_driver_prototype_is_a_driver_export_and_implemented():
    from hypa.cudart.host import HostRuntime

    exports = set(driver_api.exported_names())
    for p in driver_api.DRIVER_API:
        assert p.name in exports, p.name
        assert callable(getattr(HostRuntime, p.name, None)), p.name
    assert set(driver_api.IN_C) <= exports


def test_the_error_table_is_the_drivers():
    errors = driver_api.errors()
    assert errors[0] == ("CUDA_SUCCESS", "no error")
    assert errors[500] == ("CUDA_ERROR_NOT_FOUND", "named symbol not found")
    assert errors[700] == ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered")
    assert len(errors) == 101


# a kernel whose counts are known by hand: p[tid] = 3 * tid for tid < n
TRIPLE_PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry triple(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    mul.lo.u32 %r3, %r2, 3;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
DONE:
    ret;
}
"""
# 32 threads run the first five instructions and ret, the 20 with tid < 20 the four between
TRIPLE_THREAD_INSTRUCTIONS = 32 * 5 + 20 * 4 + 32

CTYPES_PROGRAM = r"""
import ctypes, sys
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

cu = ctypes.CDLL("libcuda.so.1")
mode, image = sys.argv[1], open(sys.argv[2], "rb").read()
dptr = c_uint64()
print("before cuInit:", cu.cuMemAlloc_v2(byref(dptr), c_size_t(64)))
print("cuInit:", cu.cuInit(0))
print("no context:", cu.cuMemAlloc_v2(byref(dptr), c_size_t(64)))

gpa = cu.cuGetProcAddress_v2
gpa.argtypes = [c_char_p, POINTER(c_void_p), c_int, c_uint64, POINTER(c_int)]
names = ["cuMemAlloc", "cuMemAlloc_v2", "cuCtxCreate", "cuCtxCreate_v2", "cuCtxCreate_v3", "cuCtxCreate_v4",
         "cuGetErrorName", "cuLinkCreate", "cuLinkCreate_v2", "cuFuncGetName"]
where = {ctypes.cast(getattr(cu, n), c_void_p).value: n for n in names}
for name, version in (("cuMemAlloc", 3020), ("cuCtxCreate", 11040), ("cuCtxCreate", 13000), ("cuMemAlloc", 2000),
                      ("cuGetErrorName", 13000), ("cuLinkCreate", 13000), ("cuLinkCreate", 5000),
                      ("cuFuncGetName", 13000), ("cuNoSuchCall", 13000)):
    fn, status = c_void_p(), c_int(-1)
    r = gpa(name.encode(), byref(fn), version, 0, byref(status))
    print("cuGetProcAddress", name, version, "->", r, status.value, where.get(fn.value))
text = c_char_p()
print("cuGetErrorName(700):", cu.cuGetErrorName(700, byref(text)), text.value.decode())
print("cuGetErrorString(12345):", cu.cuGetErrorString(12345, byref(text)), text.value)

ctx = c_void_p()
if mode == "mixed":  # the runtime first: its primary context is current, its memory the driver's too
    rt = ctypes.CDLL("libcudart.so.13")
    rp = c_void_p()
    print("cudaMalloc:", rt.cudaMalloc(byref(rp), c_size_t(128)))
    print("cuCtxGetCurrent:", cu.cuCtxGetCurrent(byref(ctx)), ctx.value is not None)
else:
    print("cuCtxCreate:", cu.cuCtxCreate_v4(byref(ctx), None, 0, 0))
mod, f = c_void_p(), c_void_p()
buf = ctypes.create_string_buffer(image)
r = cu.cuModuleLoadDataEx(byref(mod), buf, 0, None, None)
print("cuModuleLoadDataEx:", r)
print("cuModuleGetFunction:", cu.cuModuleGetFunction(byref(f), mod, b"triple"))
if mode == "mixed":
    dptr.value = rp.value
else:
    print("cuMemAlloc:", cu.cuMemAlloc_v2(byref(dptr), c_size_t(128)))
print("cuMemsetD32:", cu.cuMemsetD32_v2(dptr, c_uint(0xFFFFFFFF), c_size_t(32)))
cu.cuLaunchKernel.argtypes = [c_void_p] + [c_uint] * 7 + [c_void_p] * 3
n = c_int(20)
if mode == "extra":  # the arguments packed in one buffer, at the parameters' offsets
    class Args(ctypes.Structure):
        _fields_ = [("p", c_uint64), ("n", c_int)]
    packed, size = Args(dptr.value, 20), c_size_t(ctypes.sizeof(Args))
    extra = (c_void_p * 5)(1, ctypes.addressof(packed), 2, ctypes.addressof(size), 0)
    r = cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, None, ctypes.addressof(extra))
elif mode == "legacy":  # before cuLaunchKernel: the block shape and argument bytes set on the function
    cu.cuParamSetv.argtypes = [c_void_p, c_int, c_void_p, c_uint]
    print("legacy:", cu.cuFuncSetBlockShape(f, 32, 1, 1), cu.cuParamSetv(f, 0, ctypes.addressof(dptr), 8),
          cu.cuParamSeti(f, 8, c_uint(20)), cu.cuParamSetSize(f, c_uint(12)), cu.cuFuncSetBlockShape(f, 0, 1, 1))
    r = cu.cuLaunchGrid(f, 1, 1)
else:
    bad = c_uint64(0)  # mode "fault": a store through a null pointer
    params = (c_void_p * 2)(ctypes.addressof(bad if mode == "fault" else dptr), ctypes.addressof(n))
    r = cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, None, ctypes.addressof(params), None)
print("cuLaunchKernel:", r, "cuCtxSynchronize:", cu.cuCtxSynchronize())
out = (c_int * 32)()
if mode == "mixed":
    print("cudaMemcpy:", rt.cudaMemcpy(out, rp, c_size_t(128), 2))
else:
    print("cuMemcpyDtoH:", cu.cuMemcpyDtoH_v2(out, dptr, c_size_t(128)))
print("p:", list(out))
if mode == "fault":  # the fault is sticky: later calls report it, as on a GPU
    print("later cuMemAlloc:", cu.cuMemAlloc_v2(byref(dptr), c_size_t(64)))
if mode == "unsupported":
    cu.cuFuncGetName(byref(c_char_p()), f)
    print("not reached")
"""

TRIPLE_RESULT = "p: " + str([3 * i for i in range(20)] + [-1] * 12) + "\n"


def _ctypes_program(tmp_path: Path, mode: str, image: bytes) -> subprocess.CompletedProcess:
    (tmp_path / "prog.py").write_text(CTYPES_PROGRAM)
    (tmp_path / "image").write_bytes(image)
    return run_hypa("run", "-o", tmp_path / "r.json", "--", sys.executable, tmp_path / "prog.py", mode,
                    tmp_path / "image")


def test_a_python_program_on_the_driver_api_through_ctypes(libcuda, tmp_path):
    """cuInit and contexts are required, cuGetProcAddress gives each version's variant (a stub
    for a variant hypa does not implement, none for an unknown name), the error texts are the
    driver's, and a PTX module's launch through kernelParams is counted as by hand."""
    p = _ctypes_program(tmp_path, "params", TRIPLE_PTX.encode())
    assert p.returncode == 0, p.stderr
    assert p.stdout == (
        "before cuInit: 3\ncuInit: 0\nno context: 201\n"
        "cuGetProcAddress cuMemAlloc 3020 -> 0 0 cuMemAlloc_v2\n"
        "cuGetProcAddress cuCtxCreate 11040 -> 0 0 cuCtxCreate_v3\n"
        "cuGetProcAddress cuCtxCreate 13000 -> 0 0 cuCtxCreate_v4\n"
        "cuGetProcAddress cuMemAlloc 2000 -> 0 0 cuMemAlloc\n"
        "cuGetProcAddress cuGetErrorName 13000 -> 0 0 cuGetErrorName\n"
        "cuGetProcAddress cuLinkCreate 13000 -> 0 0 cuLinkCreate_v2\n"
        "cuGetProcAddress cuLinkCreate 5000 -> 0 0 cuLinkCreate\n"
        "cuGetProcAddress cuFuncGetName 13000 -> 0 0 cuFuncGetName\n"
        "cuGetProcAddress cuNoSuchCall 13000 -> 500 1 None\n"
        "cuGetErrorName(700): 0 CUDA_ERROR_ILLEGAL_ADDRESS\ncuGetErrorString(12345): 1 None\n"
        "cuCtxCreate: 0\ncuModuleLoadDataEx: 0\ncuModuleGetFunction: 0\ncuMemAlloc: 0\ncuMemsetD32: 0\n"
        "cuLaunchKernel: 0 cuCtxSynchronize: 0\ncuMemcpyDtoH: 0\n" + TRIPLE_RESULT)
    (r,) = json.loads((tmp_path / "r.json").read_text())
    assert (r["kernel"], r["thread_inst_executed"], r["inst_executed"]) == ("triple", TRIPLE_THREAD_INSTRUCTIONS, 10)
    assert "hypa run: 1 launch of 1 kernel" in p.stderr


def test_the_legacy_launch_takes_the_block_shape_and_argument_bytes_set_before(libcuda, tmp_path):
    """cuFuncSetBlockShape, cuParamSetv/Seti/SetSize and cuLaunchGrid (PyCUDA sets the block
    shape so; older programs launch so): the same launch, counts and results as kernelParams;
    a zero block dimension is CUDA_ERROR_INVALID_VALUE and keeps the shape set before."""
    p = _ctypes_program(tmp_path, "legacy", TRIPLE_PTX.encode())
    assert p.returncode == 0, p.stderr
    assert "legacy: 0 0 0 0 1\ncuLaunchKernel: 0 cuCtxSynchronize: 0\n" in p.stdout
    assert p.stdout.endswith(TRIPLE_RESULT)
    (r,) = json.loads((tmp_path / "r.json").read_text())
    assert (r["kernel"], r["block"], r["thread_inst_executed"]) == ("triple", [32, 1, 1], TRIPLE_THREAD_INSTRUCTIONS)


def test_a_call_hypas_driver_does_not_provide_stops_the_program_naming_it(libcuda, tmp_path):
    p = _ctypes_program(tmp_path, "unsupported", TRIPLE_PTX.encode())
    assert p.returncode == 1
    assert p.stdout.endswith(TRIPLE_RESULT)  # the output before it, flushed
    assert "prog.py called cuFuncGetName, which hypa's CUDA driver (libcuda.so.1) does not provide" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_program_mixing_runtime_and_driver_calls_sees_one_device(libcuda, tmp_path):
    """cudaMalloc'ed memory, the runtime's primary context current without cuCtxCreate, a driver
    launch on that memory, cudaMemcpy back."""
    p = _ctypes_program(tmp_path, "mixed", TRIPLE_PTX.encode())
    assert p.returncode == 0, p.stderr
    assert "cudaMalloc: 0\ncuCtxGetCurrent: 0 True\ncuModuleLoadDataEx: 0\n" in p.stdout
    assert p.stdout.endswith("cuLaunchKernel: 0 cuCtxSynchronize: 0\ncudaMemcpy: 0\n" + TRIPLE_RESULT)


def test_a_kernel_fault_is_reported_at_the_next_synchronization_and_stays(libcuda, tmp_path):
    p = _ctypes_program(tmp_path, "fault", TRIPLE_PTX.encode())
    assert p.returncode == 0, p.stderr
    # the launch itself succeeds (asynchronous); the copy returns the sticky error, not the data
    assert p.stdout.endswith("cuLaunchKernel: 0 cuCtxSynchronize: 700\ncuMemcpyDtoH: 700\n"
                             "p: " + str([0] * 32) + "\nlater cuMemAlloc: 700\n")
    assert "hypa run: launch 0:" in p.stderr and "Traceback" not in p.stderr


@requires("nvcc")
def test_a_fatbin_with_ptx_loads_and_extra_passes_the_arguments(libcuda, tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void triple(int *p, int n) {\n'
                                   "  int i = threadIdx.x; if (i < n) p[i] = 3 * i; }\n")
    subprocess.run(["nvcc", "-fatbin", "-arch=sm_90", "-o", str(tmp_path / "k.fatbin"), str(tmp_path / "k.cu")],
                   check=True, capture_output=True)
    p = _ctypes_program(tmp_path, "extra", (tmp_path / "k.fatbin").read_bytes())
    assert p.returncode == 0, p.stderr
    assert "cuModuleLoadDataEx: 0\n" in p.stdout and p.stdout.endswith(TRIPLE_RESULT)


@requires("nvcc")
def test_a_cubin_without_ptx_stops_with_how_to_get_ptx(libcuda, tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void triple(int *p, int n) { p[threadIdx.x] = n; }\n')
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.cu")],
                   check=True, capture_output=True)
    p = _ctypes_program(tmp_path, "params", (tmp_path / "k.cubin").read_bytes())
    assert p.returncode == 1
    assert "cuModuleLoadDataEx: the module is a cubin (machine code, SASS) and holds no PTX; hypa runs PTX" in p.stderr
    assert "--gpu-architecture=compute_90" in p.stderr and "Traceback" not in p.stderr
    assert "Numba-CUDA makes machine code when nvJitLink is installed (nvidia-nvjitlink" in p.stderr
    assert "cuModuleLoadDataEx:" not in p.stdout


def test_a_python_hypa_cannot_run_inside_is_refused(tmp_path):
    other = tmp_path / "python3.9"
    other.symlink_to("/bin/true")
    p = run_hypa("run", "--", other, "script.py")
    assert p.returncode == 2
    assert p.stderr.startswith(f"hypa run: error: {other} is Python 3.9, and hypa runs inside the program's interpreter")
    assert len(p.stderr.splitlines()) == 1


def _cuda_python() -> str | None:
    """Why cuda-python's driver program cannot run here (None: it can)."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return "cuda-python (cuda-bindings) is not installed"
    try:
        nvrtc.nvrtcVersion()
    except Exception as e:  # noqa: BLE001  (the package's loader error: libnvrtc missing)
        return f"NVRTC is not installed (pip install nvidia-cuda-nvrtc): {e}"
    return None


@pytest.mark.skipif(_cuda_python() is not None, reason=str(_cuda_python()))
def test_the_cuda_python_program_prints_what_an_h100_prints_and_its_counts(tmp_path):
    """driver_api.py (NVRTC, cuModuleLoadDataEx, cuLaunchKernel with kernelParams, streams,
    events, cuMemsetD8/D32, a shared-memory reduction, atomics): the H100's stdout, and per
    launch the counts of the instrumented kernels on the H100 where NVRTC made the same PTX."""
    out = tmp_path / "r.json"
    p = run_hypa("run", "-o", out, "--", sys.executable, PROGRAM)
    native = RECORDED["programs"]["driver_api.py"]
    assert (p.returncode, p.stdout) == (native["rc"], native["stdout"]), p.stderr
    assert "hypa run: 3 launches of 3 kernels" in p.stderr
    records = json.loads(out.read_text())
    sys.path.insert(0, str(PROGRAM.parent))
    try:
        import driver_api as program
    finally:
        sys.path.pop(0)
    ptx = program.compile_ptx(9, 0).rstrip(b"\0 ")
    if hashlib.sha256(ptx).hexdigest() != RECORDED["kernels_ptx_sha256"]:
        pytest.skip("this NVRTC makes other PTX than the H100's (nvidia-cuda-nvrtc 13.0.88): its counts differ")
    keys = ("inst_executed", "thread_inst_executed", "not_predicated_off_thread_inst_executed", "flop_count_sp",
            "branch", "divergent_branch")
    got = [(r["kernel"], r["grid"], r["block"], {k: r[k] for k in keys}) for r in records]
    want = [(c["kernel"], c["grid"], c["block"],
             {k: c["metrics"][k] for k in keys}) for c in RECORDED["counts"]["driver_api.py"]]
    assert got == want


def test_a_launcher_script_named_python_is_asked_its_version(tmp_path):
    """pyenv's `python` is a shell script that starts the real one: hypa run asks it which
    Python it starts, and runs the program in it."""
    launcher = tmp_path / "python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    launcher.chmod(0o755)
    (tmp_path / "hello.py").write_text("print('hello')\n")
    p = run_hypa("run", "--", launcher, tmp_path / "hello.py")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello\n"
    assert "ended before hypa could write its results (it made no CUDA call" in p.stderr


# the linker: two PTX inputs, one defining what the other declares .extern (a function and a
# variable with an initializer), linked and loaded; the variable read and written through
# cuModuleGetGlobal; a launch through cuLaunchKernelEx; what cuPointerGetAttribute and
# cuMemGetAddressRange say of an address inside an allocation
LIB_PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .global .align 4 .u32 scale = 3;

.visible .func (.reg .u32 r) scaled(.reg .u32 x)
{
    .reg .u32 %s;
    ld.global.u32 %s, [scale];
    mul.lo.u32 r, x, %s;
    ret;
}
"""

MAIN_PTX = """
.version 8.0
.target sm_90
.address_size 64

.extern .global .align 4 .u32 scale;
.extern .func (.reg .u32 r) scaled(.reg .u32 x);

.visible .entry times_scale(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    call (%r2), scaled, (%r1);
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""

LINK_PROGRAM = r"""
import ctypes, sys
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

cu = ctypes.CDLL("libcuda.so.1")
mode, lib, main = sys.argv[1], open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
ctx, state, image, size = c_void_p(), c_void_p(), c_void_p(), c_size_t()
cu.cuInit(0)
cu.cuCtxCreate_v4(byref(ctx), None, 0, 0)
cu.cuLinkAddData_v2.argtypes = [c_void_p, c_int, c_char_p, c_size_t, c_char_p, c_uint, c_void_p, c_void_p]
print("cuLinkCreate:", cu.cuLinkCreate_v2(0, None, None, byref(state)))
if mode == "cubin":  # machine code: hypa links PTX alone
    cu.cuLinkAddData_v2(state, 0, lib, len(lib), b"kernels.cubin", 0, None, None)
    print("not reached")
for name, text in ((b"lib.ptx", lib), (b"main.ptx", main)):
    print("cuLinkAddData:", cu.cuLinkAddData_v2(state, 1, text, len(text), name, 0, None, None))
print("cuLinkComplete:", cu.cuLinkComplete(state, byref(image), byref(size)))
mod, f = c_void_p(), c_void_p()
print("cuModuleLoadData:", cu.cuModuleLoadData(byref(mod), image))
print("cuLinkDestroy:", cu.cuLinkDestroy(state))
print("cuModuleGetFunction:", cu.cuModuleGetFunction(byref(f), mod, b"times_scale"))
var, nbytes, value = c_uint64(), c_size_t(), c_uint()
print("cuModuleGetGlobal:", cu.cuModuleGetGlobal_v2(byref(var), byref(nbytes), mod, b"scale"), nbytes.value)
print("missing global:", cu.cuModuleGetGlobal_v2(byref(var), byref(nbytes), mod, b"nothing"))
cu.cuMemcpyDtoH_v2(byref(value), var, c_size_t(4))
print("scale:", value.value)
value.value = 5
cu.cuMemcpyHtoD_v2(var, byref(value), c_size_t(4))
dptr = c_uint64()
cu.cuMemAlloc_v2(byref(dptr), c_size_t(128))
memtype, start, length = c_uint(), c_uint64(), c_size_t()
print("memory type:", cu.cuPointerGetAttribute(byref(memtype), 2, c_uint64(dptr.value + 8)), memtype.value)
print("range start:", cu.cuPointerGetAttribute(byref(start), 11, c_uint64(dptr.value + 8)), start.value == dptr.value)
print("cuMemGetAddressRange:", cu.cuMemGetAddressRange_v2(byref(start), byref(length), c_uint64(dptr.value + 8)),
      start.value == dptr.value, length.value)
host = ctypes.create_string_buffer(64)
print("host memory:", cu.cuPointerGetAttribute(byref(memtype), 2, c_uint64(ctypes.addressof(host))))

class Config(ctypes.Structure):
    _fields_ = [("grid", c_uint * 3), ("block", c_uint * 3), ("shared", c_uint), ("stream", c_void_p),
                ("attrs", c_void_p), ("numAttrs", c_uint)]

class Attribute(ctypes.Structure):
    _fields_ = [("id", c_uint), ("pad", ctypes.c_char * 4), ("value", c_uint * 16)]

cluster = Attribute(4, b"", (c_uint * 16)(*(2, 1, 1) if mode == "cluster" else (1, 1, 1)))
config = Config((c_uint * 3)(1, 1, 1), (c_uint * 3)(32, 1, 1), 0, None, ctypes.addressof(cluster), 1)
params = (c_void_p * 1)(ctypes.addressof(dptr))
cu.cuLaunchKernelEx.argtypes = [c_void_p, c_void_p, c_void_p, c_void_p]
print("cuLaunchKernelEx:", cu.cuLaunchKernelEx(ctypes.addressof(config), f, params, None))
out = (c_int * 32)()
cu.cuMemcpyDtoH_v2(out, c_uint64(dptr.value), c_size_t(128))
print("p:", list(out))
"""


def _link_program(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    (tmp_path / "prog.py").write_text(LINK_PROGRAM)
    (tmp_path / "lib.ptx").write_text(LIB_PTX)
    (tmp_path / "main.ptx").write_text(MAIN_PTX)
    return run_hypa("run", "-o", tmp_path / "r.json", "--", sys.executable, tmp_path / "prog.py", mode,
                    tmp_path / "lib.ptx", tmp_path / "main.ptx")


def test_ptx_linked_by_the_driver_loads_with_its_globals_and_launches_through_cuLaunchKernelEx(libcuda, tmp_path):
    """What Numba-CUDA does: cuLink* over PTX inputs (an .extern function and variable resolved
    across them, as -rdc objects are linked), the linked image loaded, a module variable read
    and written by its address, a cuLaunchKernelEx launch; the pointer queries of an address
    inside an allocation."""
    p = _link_program(tmp_path, "link")
    assert p.returncode == 0, p.stderr
    assert p.stdout == (
        "cuLinkCreate: 0\ncuLinkAddData: 0\ncuLinkAddData: 0\ncuLinkComplete: 0\ncuModuleLoadData: 0\n"
        "cuLinkDestroy: 0\ncuModuleGetFunction: 0\ncuModuleGetGlobal: 0 4\nmissing global: 500\nscale: 3\n"
        "memory type: 0 2\nrange start: 0 True\ncuMemGetAddressRange: 0 True 128\nhost memory: 1\n"
        "cuLaunchKernelEx: 0\np: " + str([5 * i for i in range(32)]) + "\n")
    (r,) = json.loads((tmp_path / "r.json").read_text())
    assert r["kernel"] == "times_scale" and r["grid"] == [1, 1, 1] and r["block"] == [32, 1, 1]


def test_machine_code_handed_to_the_linker_stops_the_program_naming_it(libcuda, tmp_path):
    p = _link_program(tmp_path, "cubin")
    assert p.returncode == 1
    assert "cuLinkAddData: kernels.cubin is a cubin (machine code, SASS), which holds no PTX hypa can run" in p.stderr
    assert "not reached" not in p.stdout and "Traceback" not in p.stderr


def test_a_thread_block_cluster_stops_the_program_naming_it(libcuda, tmp_path):
    p = _link_program(tmp_path, "cluster")
    assert p.returncode == 1
    assert "cuLaunchKernelEx: a thread block cluster of 2x1x1 CTAs, which hypa does not emulate" in p.stderr
    assert "cuLaunchKernelEx:" not in p.stdout and "Traceback" not in p.stderr


def _numba_cuda() -> str | None:
    """Why Numba-CUDA's program cannot run here (None: it may; the test also compiles)."""
    if importlib.util.find_spec("numba_cuda") is None:
        return "numba-cuda is not installed (pip install 'hypa[test]')"
    return None


def _numba_cuda_compiles() -> str | None:
    """Why Numba-CUDA cannot compile a kernel here (NVVM missing, a NumPy it does not support)."""
    try:
        from numba import cuda, int32

        def kernel(a):
            a[0] = 1

        cuda.compile_ptx(kernel, (int32[:],), cc=(9, 0))
    except Exception as e:  # noqa: BLE001  (the package's own error: what it lacks)
        return f"Numba-CUDA cannot compile here: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None


@pytest.mark.skipif(_numba_cuda() is not None, reason=str(_numba_cuda()))
def test_the_numba_cuda_program_prints_what_an_h100_prints_and_its_counts(tmp_path):
    """numba_jit.py (@cuda.jit kernels: a shared-memory block reduction with syncthreads and
    cuda.atomic.add, a shared-memory histogram of atomics, a scaled add; NVVM's PTX linked by
    cuLink*, loaded by cuLibraryLoadData, launched by cuLaunchKernelEx): the H100's stdout, and
    per launch the counts of the instrumented kernels on the H100 -- of the PTX this Numba-CUDA
    made where it is the H100's, else of the H100's PTX emulated here."""
    why = _numba_cuda_compiles()
    if why:
        pytest.skip(why)
    out, ptx_dir = tmp_path / "r.json", tmp_path / "ptx"
    p = run_hypa("run", "-o", out, "--", sys.executable, NUMBA_PROGRAM, "--ptx", ptx_dir)
    native = RECORDED["programs"]["numba_jit.py"]
    assert (p.returncode, p.stdout) == (native["rc"], native["stdout"]), p.stderr
    assert "hypa run: 3 launches of 3 kernels" in p.stderr
    keys = ("inst_executed", "thread_inst_executed", "not_predicated_off_thread_inst_executed", "flop_count_sp",
            "branch", "divergent_branch")
    want = [(c["kernel"], c["grid"], c["block"], {k: c["metrics"][k] for k in keys})
            for c in RECORDED["counts"]["numba_jit.py"]]
    h100_ptx = RECORDED["numba_ptx"]
    if all((ptx_dir / f"{name}.ptx").read_text() == text for name, text in h100_ptx.items()):
        records = json.loads(out.read_text())
    else:  # another Numba-CUDA or NVVM: its launches, on the H100's PTX (entry names and all)
        toml = (ptx_dir / "launches.toml").read_text()
        for name, text in h100_ptx.items():
            mine = re.search(r"\.entry\s+([\w$]+)", (ptx_dir / f"{name}.ptx").read_text()).group(1)
            toml = toml.replace(f'"{mine}"', '"' + re.search(r"\.entry\s+([\w$]+)", text).group(1) + '"')
            (ptx_dir / f"{name}.ptx").write_text(text)
        (ptx_dir / "launches.toml").write_text(toml)
        q = run_hypa("profile", "--launch", ptx_dir / "launches.toml", "--format", "json", "-o", tmp_path / "h.json")
        assert q.returncode == 0, q.stderr
        records = json.loads((tmp_path / "h.json").read_text())
    got = [(r["kernel"], r["grid"], r["block"], {k: r[k] for k in keys}) for r in records]


CUPY_PROGRAM = ROOT / "tests" / "cuda_programs" / "python" / "cupy_kernels.py"
CUPY_RECORDED_PATH = ROOT / "tests" / "ground_truth" / "hypa_run" / "cupy_native.json"


def _cupy() -> str | None:
    """Why the CuPy program cannot run here (None: it can).  CuPy is not in the `test` extra
    (a 70 MB wheel; CI does not run this test): `pip install -e '.[python-gpu]'`."""
    try:
        import cupy  # noqa: F401
        from cupy.cuda import compiler  # noqa: F401
    except ImportError as e:
        return f"CuPy is not installed (pip install -e '.[python-gpu]'): {e}"
    if not any(os.path.isfile(os.path.join(d, "include", "cuda_runtime.h"))
               for d in (os.environ.get("CUDA_PATH", ""), "/usr/local/cuda")):
        return "CuPy 14 needs CUDA's headers (CUDA_PATH, or pip install 'cupy-cuda13x[ctk]')"
    return None


@pytest.mark.skipif(_cupy() is not None, reason=str(_cupy()))
def test_the_cupy_program_prints_what_an_h100_prints_and_its_counts(tmp_path):
    """cupy_kernels.py (RawKernel, ElementwiseKernel, ReductionKernel: CuPy's extension modules
    carry CUDA's static runtime, sent to hypa's libcudart; NVRTC makes PTX as hypa run sets
    CUPY_COMPILE_WITH_PTX=1): the H100's stdout, and per kernel the counts of the H100's
    instrumented kernels (benchmarks/gpu/cupy_programs_native.py) where NVRTC made the same
    kernel code (the .entry; the rest of a module differs with CUDA's headers).  Exit is clean:
    CuPy's modules and pools released while the interpreter finalizes do not reach hypa's
    torn-down runtime (cudart/host.py, _finish)."""
    recorded = json.loads(CUPY_RECORDED_PATH.read_text())
    native = recorded["programs"]["cupy_kernels.py"]
    out, cap = tmp_path / "r.json", tmp_path / "cap"
    env = dict(os.environ, CUPY_CACHE_DIR=str(tmp_path / "cupy-cache"))
    env.setdefault("CUDA_PATH", "/usr/local/cuda")
    p = run_hypa("run", "-o", out, "--capture", cap, "--", sys.executable, CUPY_PROGRAM, env=env)
    assert (p.returncode, p.stdout) == (native["rc"], native["stdout"]), p.stderr
    assert "hypa run: 3 launches of 3 kernels;" in p.stderr, p.stderr
    records = json.loads(out.read_text())
    assert [r["kernel"] for r in records] == ["axpy_mod", "squared_diff", "l1_norm"]
    sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
    try:
        from cupy_programs_native import entry_sha256
    finally:
        sys.path.pop(0)
    modules = [f.read_text() for f in sorted(cap.glob("module_*.ptx"))]
    here = {k: next(h for h in (entry_sha256(m, k) for m in modules) if h) for k in native["counts"]}
    if here != {k: v["entry"] for k, v in native["ptx_sha256"].items()}:
        pytest.skip("this NVRTC makes other PTX than the H100's: its counts differ")
    keys = ("inst_executed", "thread_inst_executed", "not_predicated_off_thread_inst_executed", "flop_count_sp",
            "branch", "divergent_branch")
    got = {r["kernel"]: {k: r[k] for k in keys} for r in records}
    want = {k: {m: c[m] for m in keys} for k, c in native["counts"].items()}
    assert got == want


# An extension module as CuPy's are: CUDA's static runtime linked in, its functions local
# symbols (here two stand-ins; the bytes /cudart.shm. mark the static runtime).
STATIC_RUNTIME_MODULE = r"""
#include <Python.h>
__attribute__((used)) static const char mark[] = "/cudart.shm.%x";
__attribute__((noinline)) static int cudaGetDeviceCount(int *n) {
    volatile int k = 0;
    for (int i = 0; i < 3; i++) k += i;
    *n = k;
    return 999;  /* as the static copy over hypa's driver: it cannot initialize */
}
__attribute__((noinline)) static int __cudaPushCallConfiguration(unsigned gx, unsigned gy) {
    volatile unsigned s = gx + gy;
    return (int)s;
}
static PyObject *count(PyObject *self, PyObject *args) {
    int n = -1;
    int r = cudaGetDeviceCount(&n);
    return Py_BuildValue("(ii)", r, n);
}
static PyObject *launch(PyObject *self, PyObject *args) {
    return PyLong_FromLong(__cudaPushCallConfiguration(1, 2));
}
static PyMethodDef methods[] = {{"count", count, METH_NOARGS, 0}, {"launch", launch, METH_NOARGS, 0}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "cub", 0, -1, methods};
PyMODINIT_FUNC PyInit_cub(void) { return PyModule_Create(&def); }
"""


@pytest.fixture(scope="module")
def static_runtime_module(tmp_path_factory):
    import sysconfig

    cc = shim.compiler()
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("ext")
    (d / "cub.c").write_text(STATIC_RUNTIME_MODULE)
    so = d / f"cub{sysconfig.get_config_var('EXT_SUFFIX')}"
    p = subprocess.run([cc, "-O0", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o", so, d / "cub.c"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot build a Python extension module here: {p.stderr[-300:]}")
    return d


def test_the_static_runtime_in_an_extension_module_is_sent_to_hypas(libcuda, static_runtime_module, tmp_path):
    """Its cudaGetDeviceCount, a local symbol, answers as hypa's does under hypa run (one
    device, cudaSuccess), as the static copy does without (999 here); a __cuda* launch call of
    the module's own kernels stops the program naming the library (CuPy's cub: CUB)."""
    from hypa.cudart import static_runtime

    so = next(static_runtime_module.glob("cub*.so"))
    assert static_runtime.holds_static_runtime(str(so))
    assert set(static_runtime.runtime_functions(str(so))) == {"cudaGetDeviceCount", "__cudaPushCallConfiguration"}
    script = tmp_path / "prog.py"
    script.write_text("import sys, cub\nprint(cub.count())\nif sys.argv[1:]: print(cub.launch())\n")
    env = dict(os.environ, PYTHONPATH=str(static_runtime_module))
    native = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env)
    assert native.stdout == "(999, 3)\n"
    p = run_hypa("run", "--", sys.executable, script, env=env)
    assert (p.returncode, p.stdout) == (0, "(0, 1)\n"), p.stderr
    p = run_hypa("run", "--", sys.executable, script, "launch", env=env)
    assert (p.returncode, p.stdout) == (1, "(0, 1)\n"), p.stderr
    assert "a call of __cudaPushCallConfiguration of CUB (cub." in p.stderr
    assert "hypa runs PTX, and cannot run them" in p.stderr and "Traceback" not in p.stderr


PYCUDA_PROGRAM = ROOT / "tests" / "cuda_programs" / "python" / "pycuda_kernels.py"


def _pycuda() -> str | None:
    """Why the PyCUDA program cannot run here (None: it can).  PyCUDA builds from source (no
    wheel on the package index), against CUDA's headers and a libcuda.so: not in any extra."""
    import shutil

    try:
        import pycuda  # noqa: F401
    except ImportError as e:
        return f"PyCUDA is not installed: {e}"
    if shutil.which("nvcc") is None:
        return "PyCUDA's SourceModule needs nvcc"
    return _cuda_python()


@pytest.mark.skipif(_pycuda() is not None, reason=str(_pycuda()))
def test_the_pycuda_program_prints_what_an_h100_prints_and_its_counts(tmp_path):
    """pycuda_kernels.py: SourceModule (nvcc --cubin, made PTX by the nvcc hypa run puts first
    on PATH), PyCUDA's launches (cuFuncSetBlockShape, cuLaunchKernel with `extra`), cuCtxDetach
    at exit.  It prints what PyCUDA 2026.1 printed on an H100, and each launch reports the
    counts the H100 read from the same PTX instrumented (tests/ground_truth/hypa_run/
    pycuda_native.json, benchmarks/gpu/pycuda_programs_native.sh); where this nvcc makes other
    PTX, the counts are not compared."""
    recorded = json.loads((ROOT / "tests" / "ground_truth" / "hypa_run" / "pycuda_native.json").read_text())
    out, cap = tmp_path / "r.json", tmp_path / "cap"
    (tmp_path / "pycuda-cache").mkdir()  # compiled afresh, not from a GPU run's cubin
    env = dict(os.environ, PYCUDA_CACHE_DIR=str(tmp_path / "pycuda-cache"))
    p = run_hypa("run", "-o", out, "--capture", cap, "--", sys.executable, PYCUDA_PROGRAM, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == recorded["stdout"]
    assert "hypa run: 3 launches of 3 kernels;" in p.stderr, p.stderr
    records = json.loads(out.read_text())
    keys = ("inst_executed", "thread_inst_executed", "not_predicated_off_thread_inst_executed", "flop_count_sp",
            "branch", "divergent_branch")
    got = [(r["kernel"], r["grid"], r["block"], {k: r[k] for k in keys}) for r in records]
    want = [(c["kernel"], c["grid"], c["block"], {k: c["metrics"][k] for k in keys}) for c in recorded["counts"]]
    if hashlib.sha256((cap / "module_0.ptx").read_bytes()).hexdigest() != recorded["ptx_sha256"]:
        pytest.skip("this nvcc makes other PTX than the H100 machine's: its counts differ")
    assert got == want
