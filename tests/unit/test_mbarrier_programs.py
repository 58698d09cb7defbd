"""CUDA programs using mbarrier, bulk asynchronous copies, cluster instructions, stmatrix and
movmatrix through inline PTX (tests/cuda_programs/isa, issue 16), run under ``hypa run``:
the exact stdout, hand-computed (each program also checks every value itself and prints
PASS), and the GPU's stdout where ``benchmarks/gpu/isa_programs_native.sh`` recorded it
(``helpers.gpu_recorded_run``).  Skipped without nvcc."""

from __future__ import annotations

import shutil

import pytest
from helpers import ISA_PROGRAMS, gpu_recorded_run, nvcc, run_hypa

STDOUT = {
    # out[32 b + l] = 2304 b + 12 l + 975; the sum over both CTAs
    "mbarrier_pipeline": "no error\nout[0] = 975, out[31] = 1347, out[32] = 3279, sum = 148032\nPASS\n",
    # out[256 b + t] = 256 b + 2 t, acc[t] = 256 + 4 t
    "bulk_copy": "no error\nout[1] = 2, out[300] = 344, acc[0] = 256, acc[255] = 1276\nPASS\n",
    # element (r, c) of matrix i is 256 i + 8 r + c; trans[k] holds (c, r); lane 5 of the
    # movmatrix gets rows 2 and 3 of column 1: 17 and 25
    "stmatrix": "no error\nplain[9] = 9, trans[9] = 9, plain[200] = 776, trans[200] = 769, moved[5] = 0x00190011\n"
                "0 mismatches\nPASS\n",
    # 1000 * (0 + ... + 63) + 7 (63 - t) + 100000 * %cluster_nctarank (1)
    "cluster_async": "no error\nout[0] = 2116441, out[63] = 2116000, out[64] = 2116441, ranks[5] = 0\nPASS\n"
                     "without a cluster: cudaErrorIllegalInstruction\n",
}


@pytest.fixture(scope="module")
def ready():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    probe = run_hypa("run", "--build-only", timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"hypa cannot build its CUDA runtime library here: {probe.stderr.strip()}")


@pytest.mark.parametrize("name", sorted(STDOUT))
def test_program(ready, name, tmp_path):
    exe = tmp_path / name
    p = nvcc(ISA_PROGRAMS / f"{name}.cu", exe)
    assert p.returncode == 0, p.stderr
    r = run_hypa("run", "--", exe, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == STDOUT[name], r.stderr
    assert "racecheck" not in r.stderr  # racecheck's sample (on by default) finds no shared-memory hazard
    if name == "cluster_async":  # st.async in a kernel without a cluster: the launch fails, as on the H100
        assert "needs a cluster launch: the kernel declares no cluster" in r.stderr
    gpu = gpu_recorded_run(name)
    if gpu is not None:
        assert (gpu["rc"], gpu["stdout"]) == (0, r.stdout)
