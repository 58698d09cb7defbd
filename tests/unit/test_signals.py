"""SIGINT and SIGTERM stop hypa while a launch's native code runs (issue 31, case 2).

Each command runs a kernel that would spin for hours; the signal comes once its compiled
code is in the cache (the launch starts right after), and the command must end with the
exit status a Ctrl-C gives (130) or the signal's own, with one line and no traceback.  The
30 s limits are generous bounds on "stopped", not timings: without the fix each case runs
until its step budget, minutes away.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import HYPA, HYPA_OPT, build_cuda_program

# an endless loop (n = 0 never comes): --step-budget 1e15 keeps the budget from ending it
SPIN_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 n)
{
    .reg .pred %p;
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    ld.param.u32 %r2, [n];
    mov.u32 %r1, 1;
$L_loop:
    add.s32 %r1, %r1, 3;
    setp.ne.s32 %p, %r2, 0;
    @%p bra $L_loop;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""

SPIN_CU = r"""
#include <cstdio>
__global__ void spin(unsigned *out, unsigned n) {
    unsigned x = threadIdx.x;
    while (n) x = x * 3 + 1;
    out[threadIdx.x] = x;
}
int main() {
    unsigned *d;
    cudaMalloc(&d, 1024);
    printf("launching\n");
    fflush(stdout);
    spin<<<2, 64>>>(d, 1);
    printf("synchronize: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
"""

LIMIT_S = 30


def _start(cmd: list[str], cache: str) -> subprocess.Popen:
    """``cmd`` in a session of its own (a process group to signal), SIGINT at its default
    action (a background shell ignores it, and its children would too)."""
    env = dict(os.environ, HYPA_CACHE_DIR=cache)
    env.pop("HYPA_NO_CACHE", None)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_launch(proc: subprocess.Popen, cache: str) -> None:
    """Until the kernel's compiled code is in the (fresh) cache: the launch runs next."""
    deadline = time.monotonic() + 240
    while not glob.glob(os.path.join(cache, "*.o")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the kernel was never compiled"
        time.sleep(0.1)
    time.sleep(1.0)  # well inside the launch's loop


def _stopped(proc: subprocess.Popen) -> tuple[int, str]:
    try:
        _out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"still running {LIMIT_S} s after the signal")
    return proc.returncode, err


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def spin_ptx(tmp_path):
    p = tmp_path / "spin.ptx"
    p.write_text(SPIN_PTX)
    return p


@pytest.mark.parametrize("group", [True, False], ids=["process-group", "process"])
def test_hypa_opt_sigint_stops_native_code(tmp_path, spin_ptx, group):
    cache = str(tmp_path / "cache")
    proc = _start([*HYPA_OPT, "--mode", "full", "--step-budget", "1000000000000000",
                   "--emulate=grid=1 block=64 args=out,1 buffer.out=uint32:64:zeros", str(spin_ptx)], cache)
    _wait_for_launch(proc, cache)
    (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
    rc, err = _stopped(proc)
    assert rc == 130, err
    assert err == "hypa-opt: interrupted\n"


# A sitecustomize (first on PYTHONPATH) that sends the process SIGINT when it first looks for
# the module $HYPA_TEST_SIGINT_AT: Ctrl-C at a chosen moment of start-up, the same on any
# machine (a sleep would land in the interpreter's own start-up on a slow one, before any of
# hypa's code runs -- Python's traceback there is not hypa's to change).
SIGINT_AT_IMPORT = """
import os, signal, sys
_target = os.environ.get("HYPA_TEST_SIGINT_AT")

class _SigintAt:
    def find_spec(self, name, path=None, target=None):
        if name == _target:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

if _target:
    sys.meta_path.insert(0, _SigintAt())
"""


@pytest.mark.parametrize(("tool", "module"), [
    ("hypa-opt", "hypa.tools"), ("hypa-opt", "xdsl.dialects.builtin"), ("hypa-opt", "hypa.ptxdialect.dialect"),
    ("hypa", "hypa.tools"), ("hypa", "xdsl.dialects.builtin"), ("hypa", "numpy"), ("hypa", "llvmlite.binding"),
])
def test_sigint_while_starting_is_one_line(tmp_path, spin_ptx, tool, module):
    """Ctrl-C while the command still imports xDSL, numpy and LLVM (found by benchmarks/fuzz.py's
    signal family: a KeyboardInterrupt traceback from inside a module being loaded).  The
    signal comes as ``module`` starts to load, from hypa's first module on."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SIGINT_AT_IMPORT)
    cmd = [*HYPA_OPT, str(spin_ptx)] if tool == "hypa-opt" else [*HYPA, "profile", str(spin_ptx)]
    env = dict(os.environ, HYPA_CACHE_DIR=str(tmp_path / "cache"), HYPA_TEST_SIGINT_AT=module,
               PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (proc.returncode, proc.stderr) == (130, f"{tool}: interrupted\n"), (proc.returncode, proc.stderr)
    assert proc.stdout == ""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_hypa_profile_sigint_stops_native_code(tmp_path, spin_ptx, jobs):
    """-j 2 splits the launch's 4 CTAs over forked workers: Ctrl-C reaches them too."""
    cache = str(tmp_path / "cache")
    launches = tmp_path / "spin.toml"
    launches.write_text(f'[[launch]]\nfile = "{spin_ptx}"\nkernel = "spin"\ngrid = 4\nblock = 64\n'
                        'args = ["out", 1]\n[buffers.out]\ndtype = "uint32"\ncount = 64\ninit = "zeros"\n')
    proc = _start([*HYPA, "profile", "--mode", "full", "--step-budget", "1000000000000000",
                   "-j", jobs, "--launch", str(launches)], cache)
    _wait_for_launch(proc, cache)
    os.killpg(proc.pid, signal.SIGINT)
    rc, err = _stopped(proc)
    assert rc == 130, err
    assert err.strip().splitlines()[-1] == "hypa: interrupted"
    assert "Traceback" not in err
    time.sleep(0.5)
    assert _group_gone(proc.pid)  # no worker left behind


@pytest.fixture(scope="module")
def spin_program(tmp_path_factory):
    return build_cuda_program(tmp_path_factory.mktemp("spin"), "spin", SPIN_CU)


def _hypa_run(spin_program, cache: str) -> subprocess.Popen:
    proc = _start([*HYPA, "run", "--", str(spin_program)], cache)
    _wait_for_launch(proc, cache)
    return proc


def test_hypa_run_ctrl_c(tmp_path, spin_program):
    """Ctrl-C: SIGINT to the process group, hypa and the program that hosts the emulator."""
    cache = str(tmp_path / "cache")
    proc = _hypa_run(spin_program, cache)
    os.killpg(proc.pid, signal.SIGINT)
    rc, err = _stopped(proc)
    assert rc == 130, err
    assert err == "hypa run: interrupted (SIGINT); spin stopped\n"
    assert _group_gone(proc.pid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_hypa_run_signal_to_hypa_alone_stops_the_program(tmp_path, spin_program, sig):
    """``kill hypa``: the program (another process, running the launch) must not go on alone."""
    cache = str(tmp_path / "cache")
    proc = _hypa_run(spin_program, cache)
    proc.send_signal(sig)
    rc, err = _stopped(proc)
    assert rc == (130 if sig == signal.SIGINT else -sig), err
    assert err == f"hypa run: interrupted ({sig.name}); spin stopped\n"
    assert _group_gone(proc.pid)


def test_hypa_run_parent_killed_leaves_no_orphan(tmp_path, spin_program):
    """Even SIGKILL, which hypa cannot pass on: the program ends with it."""
    cache = str(tmp_path / "cache")
    proc = _hypa_run(spin_program, cache)
    proc.kill()
    proc.communicate(timeout=LIMIT_S)
    deadline = time.monotonic() + LIMIT_S
    while not _group_gone(proc.pid):
        assert time.monotonic() < deadline, "the program still runs after hypa was killed"
        time.sleep(0.1)


OWN_HANDLER_CU = r"""
#include <cstdio>
#include <csignal>
static volatile sig_atomic_t got = 0;
static void on_int(int) { got = 1; }
__global__ void spin(unsigned *out, unsigned n) {
    unsigned x = threadIdx.x;
    while (n) x = x * 3 + 1;
    out[threadIdx.x] = x;
}
int main() {
    signal(SIGINT, on_int);
    unsigned *d;
    cudaMalloc(&d, 1024);
    spin<<<2, 64>>>(d, 1);
    printf("synchronize: %s, handler ran: %d\n", cudaGetErrorName(cudaDeviceSynchronize()), (int)got);
    return 0;
}
"""


def test_hypa_run_program_with_its_own_sigint_handler(tmp_path):
    """A program that handles SIGINT itself: its handler runs, the launch it waits on stops
    (cudaErrorLaunchTimeout, as a launch stopped by the step budget) and the program goes on."""
    exe = build_cuda_program(tmp_path, "own", OWN_HANDLER_CU)
    cache = str(tmp_path / "cache")
    proc = _start([*HYPA, "run", "--", str(exe)], cache)
    _wait_for_launch(proc, cache)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 1
    os.kill(int(children[0]), signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"still running {LIMIT_S} s after the signal")
    assert proc.returncode == 0, err
    assert out == "synchronize: cudaErrorLaunchTimeout, handler ran: 1\n"
    assert "hypa run: launch 0 (_Z4spinPjj): stopped by a signal the program handles\n" in err
