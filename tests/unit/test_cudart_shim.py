"""hypa's libcudart.so.12/.13: built from cudart/api.py, NVIDIA's soname and version node on
every exported symbol, a stub for every name NVIDIA exports that hypa does not implement."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hypa.cudart import api, shim

from helpers import requires, run_hypa


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    if shim.compiler() is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("cudart")
    try:
        return {m: shim.build(m, out_dir=str(d / str(m))) for m in shim.SUPPORTED_MAJORS}
    except shim.BuildError as e:
        pytest.skip(str(e))


@requires("readelf")
@pytest.mark.parametrize("major", shim.SUPPORTED_MAJORS)
def test_soname_version_node_and_exports(libs, major):
    lib = libs[major]
    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
    assert f"Library soname: [libcudart.so.{major}]" in dyn
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True, text=True).stdout
    exported = {}
    for line in syms.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[4] == "GLOBAL" and parts[6] != "UND":
            name, _, ver = parts[7].partition("@@")
            exported[name] = ver
    wanted = set(shim.exported_names()) | {p.name for p in api.API}
    assert wanted <= set(exported)
    assert {exported[n] for n in wanted} == {f"libcudart.so.{major}"}
    assert "hypa_unsupported" not in exported and "hypa_call" not in exported  # internals stay local


def test_every_prototype_is_implemented_by_the_host_runtime():
    from hypa.cudart.host import HostRuntime

    for p in api.API:
        name = p.name.removesuffix("_ptsz").removesuffix("_ptds").removesuffix("_ptsa")
        name = name.lstrip("_") if name.startswith("__cuda") else name
        assert callable(getattr(HostRuntime, name, None)), p.name


def test_unsupported_major_is_a_clear_error():
    with pytest.raises(shim.BuildError, match="not CUDA 11"):
        shim.build(11)


@requires("nvcc")
def test_the_static_runtime_is_recognised(tmp_path):
    from hypa.cudart.program import inspect

    (tmp_path / "k.cu").write_text("__global__ void k(int *p) { *p = 1; }\nint main() { int *p; cudaMalloc(&p, 4); k<<<1, 1>>>(p); return 0; }\n")
    for flags, static, major in (([], True, None), (["-cudart", "shared"], False, 13)):
        exe = tmp_path / ("s" if static else "d")
        subprocess.run(["nvcc", *flags, "-o", str(exe), str(tmp_path / "k.cu")], check=True, capture_output=True)
        info = inspect(str(exe))
        assert (info.static_cudart, info.cudart_major) == (static, major)
        assert info.has_device_code


@requires("nvcc", "g++")
def test_a_program_linked_against_cuda_12_runs_on_hypas_libcudart_so_12(libs, tmp_path):
    """nvcc 13's objects linked against a libcudart.so.12 (hypa's own, which carries the
    same soname and version node as NVIDIA's) need libcudart.so.12: hypa run serves it."""
    (tmp_path / "k.cu").write_text(
        "#include <cstdio>\n__global__ void k(int *p) { p[threadIdx.x] = threadIdx.x * 2; }\n"
        "int main() { int *p, h[32]; cudaMalloc(&p, 128); k<<<1, 32>>>(p); cudaMemcpy(h, p, 128, cudaMemcpyDeviceToHost);\n"
        "  printf(\"%d %s\\n\", h[31], cudaGetErrorName(cudaGetLastError())); return 0; }\n")
    subprocess.run(["nvcc", "-cudart", "shared", "-arch=sm_90", "-c", "-o", str(tmp_path / "k.o"), str(tmp_path / "k.cu")],
                   check=True, capture_output=True)
    lib12 = libs[12]
    exe = tmp_path / "k12"
    subprocess.run(["g++", str(tmp_path / "k.o"), "-o", str(exe), f"-L{os.path.dirname(lib12)}",
                    "-l:libcudart.so.12"], check=True, capture_output=True)
    from hypa.cudart.program import inspect

    assert inspect(str(exe)).cudart_major == 12
    out = tmp_path / "r.json"
    p = run_hypa("run", "-o", out, "--", exe)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "62 cudaSuccess\n"
    (r,) = json.loads(out.read_text())
    assert r["thread_inst_executed"] == 32 * 8  # ld.param, mov, mul, cvta, mul.wide, add, st, ret


EMBEDS_PYTHON = """
import ctypes, os, sys, threading
lib = ctypes.CDLL(sys.argv[1])
n = ctypes.c_int(-1)
print("count", lib.cudaGetDeviceCount(ctypes.byref(n)), n.value)
print("threads", len(os.listdir("/proc/self/task")))  # hypa started none
print("bad device", lib.cudaSetDevice(7))
other = []
t = threading.Thread(target=lambda: other.append(lib.cudaGetLastError()))
t.start(); t.join()
print("last error: other thread", other[0], "this thread", lib.cudaGetLastError(), lib.cudaGetLastError())
"""


def test_a_program_that_embeds_python_runs_hypa_on_its_own_threads(libs, tmp_path):
    """Where the program already runs Python (here: Python loading the library with ctypes), hypa
    uses that interpreter on the calling thread and starts no thread of its own; the last error
    is still per thread, and the records are written when that interpreter finalizes (the C
    library's destructor comes later, and calling into Python then crashed)."""
    results = tmp_path / "results.json"
    env = dict(os.environ, HYPA_RUN=json.dumps({"results": str(results)}), OPENBLAS_NUM_THREADS="1",
               HYPA_SYS_PATH=os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))
    (tmp_path / "embeds.py").write_text(EMBEDS_PYTHON)
    p = subprocess.run([sys.executable, str(tmp_path / "embeds.py"), libs[13]], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "count 0 1\nthreads 1\nbad device 101\nlast error: other thread 0 this thread 101 0\n"
    assert json.loads(results.read_text())["summary"]["launches"] == 0
