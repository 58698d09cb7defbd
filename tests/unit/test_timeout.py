"""``--timeout SECONDS``: a wall-clock limit that holds whatever the command is doing
(here: native emulator code spinning under a step budget too large to stop it), for
hypa-opt, hypa profile (also with forked workers) and hypa run.  Exit status 124."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

SPIN = """.version 8.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u32 n)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\tmov.u32 %r1, 0;
L:
\tadd.u32 %r1, %r1, 1;
\tsetp.ne.u32 %p1, %r1, 0;
\t@%p1 bra L;
\tret;
}
"""


def _run(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout)


def test_hypa_opt_stops_at_its_timeout(tmp_path):
    (tmp_path / "spin.ptx").write_text(SPIN)
    r = _run("hypa.tools.hypa_opt", str(tmp_path / "spin.ptx"), "--emulate=grid=64 block=1024 args=1",
             "--step-budget", "100000000000000", "--timeout", "2")
    assert r.returncode == 124, r.stderr
    assert r.stderr.strip().endswith("hypa-opt: error: stopped after 2 s (--timeout)")


def test_hypa_profile_stops_its_workers_at_its_timeout(tmp_path):
    (tmp_path / "spin.ptx").write_text(SPIN)
    (tmp_path / "l.toml").write_text('[[launch]]\nkernel = "spin"\ngrid = 64\nblock = 256\nargs = [1]\n' * 4)
    r = _run("hypa.tools.hypa_cli", "profile", str(tmp_path / "spin.ptx"), "--launch", str(tmp_path / "l.toml"),
             "--step-budget", "100000000000000", "-j", "2", "--timeout", "2.5")
    assert r.returncode == 124, r.stderr
    assert "hypa profile: error: stopped after 2.5 s (--timeout)" in r.stderr
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path / "l.toml") not in ps  # no worker left running


@pytest.mark.parametrize("value", ["0", "-1", "nan", "x"])
def test_a_timeout_must_be_positive_seconds(tmp_path, value):
    (tmp_path / "spin.ptx").write_text(SPIN)
    r = _run("hypa.tools.hypa_opt", str(tmp_path / "spin.ptx"), f"--timeout={value}")
    assert r.returncode == 2 and "argument --timeout:" in r.stderr, r.stderr


def test_hypa_run_stops_the_program_at_its_timeout(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    (tmp_path / "spin.cu").write_text(
        "__global__ void spin(volatile int *f) { while (*f == 0) {} }\n"
        "int main() { int *d; cudaMalloc(&d, 4); cudaMemset(d, 0, 4); spin<<<1, 32>>>(d);\n"
        "  cudaDeviceSynchronize(); return 0; }\n")
    b = subprocess.run(["nvcc", "-cudart", "shared", "-arch=sm_90", "-o", str(tmp_path / "spin"),
                        str(tmp_path / "spin.cu")], capture_output=True, text=True)
    if b.returncode != 0:
        pytest.skip(f"nvcc failed: {b.stderr[-300:]}")
    r = _run("hypa.tools.hypa_cli", "run", "--step-budget", "100000000000000", "--timeout", "3", "--",
             str(tmp_path / "spin"), timeout=300)
    assert r.returncode == 124, r.stderr
    assert r.stderr.strip().endswith("hypa run: error: stopped spin after 3 s (--timeout)")
