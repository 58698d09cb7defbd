"""What `hypa run` does where a program goes beyond it: instructions without semantics stop
with a message and a sticky error (the program's next call says the kernel did not run), host
callbacks on streams run in order.  (Grid-wide synchronization runs: tests/unit/test_schedule.py.)"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from helpers import build_cuda_program, run_hypa

CALLBACKS = r"""
#include <cstdio>
__global__ void inc(int *p) { atomicAdd(p, 1); }
void CUDART_CB on_stream(cudaStream_t, cudaError_t status, void *data) { printf("callback %d %s\n", *(int *)data, cudaGetErrorName(status)); }
void CUDART_CB host_fn(void *data) { printf("host fn %d\n", *(int *)data); }
int main() {
  int *d, h = 0, tag1 = 1, tag2 = 2; cudaStream_t s; cudaStreamCreate(&s);
  cudaMalloc(&d, 4); cudaMemsetAsync(d, 0, 4, s);
  inc<<<2, 32, 0, s>>>(d);
  cudaStreamAddCallback(s, on_stream, &tag1, 0);
  cudaLaunchHostFunc(s, host_fn, &tag2);
  cudaMemcpyAsync(&h, d, 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s);
  printf("sum %d\n", h);
  return 0;
}
"""


def _build_and_run(tmp_path, name: str, src: str) -> subprocess.CompletedProcess:
    return run_hypa("run", "--", build_cuda_program(tmp_path, name, src))


def test_stream_callbacks_and_host_functions_run_in_stream_order(tmp_path):
    p = _build_and_run(tmp_path, "callbacks", CALLBACKS)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "callback 1 cudaSuccess\nhost fn 2\nsum 64\n"


HOST_FN_CALLS = r"""
#include <cstdio>
#include <cstdlib>
__global__ void k(int *p) { *p = 5; }
int *d;
void CUDART_CB peek(void *) { int h = 0; printf("in host fn: %s", cudaGetErrorName(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost))); printf(" %d\n", h); }
void CUDART_CB leave(void *) { printf("exit in host fn\n"); exit(3); }
int main() {
  cudaMalloc(&d, 4); k<<<1, 1>>>(d);
  cudaLaunchHostFunc(0, peek, 0);
  cudaLaunchHostFunc(0, leave, 0);
  cudaDeviceSynchronize();
  printf("not reached\n");
  return 0;
}
"""


def test_host_functions_may_call_the_runtime_and_exit(tmp_path):
    """hypa runs host functions on its own thread, inside the call that enqueued them: a
    runtime call made there runs at once (CUDA forbids such calls; hypa must not wait for
    itself), and exit() there still writes the records (1 launch in the summary)."""
    p = _build_and_run(tmp_path, "host_fn_calls", HOST_FN_CALLS)
    assert p.stdout == "in host fn: cudaSuccess 5\nexit in host fn\n"
    assert p.returncode == 3 and "hypa run: 1 launch of 1 kernel;" in p.stderr, p.stderr


EXIT_IN_HANDLER = r"""
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
__global__ void spin(long long *p, long long n) { for (long long i = 0; i < n; i++) *(volatile long long *)p += i; }
void on_alarm(int) { printf("alarm during the launch\n"); exit(4); }
int main() {
  long long *d; cudaMalloc(&d, 8);
  signal(SIGALRM, on_alarm);
  alarm(1);
  spin<<<1, 1>>>(d, 1LL << 40);  // far longer than a second
  cudaDeviceSynchronize();
  printf("not reached\n");
  return 0;
}
"""


def test_exit_in_a_signal_handler_during_a_call_ends_the_program(tmp_path):
    """A handler that calls exit() while its thread waits for hypa's thread (here: in a long
    launch) ends the program at once: the exit does not wait for the call it interrupted
    (that waited for itself, a hang), and the records are not written."""
    exe = build_cuda_program(tmp_path, "exit_in_handler", EXIT_IN_HANDLER)
    p = run_hypa("run", "--timeout", "120", "--", exe)
    assert p.stdout == "alarm during the launch\n"
    assert p.returncode == 4 and "ended before hypa could write its results" in p.stderr, p.stderr


CTRL_C = r"""
#include <csignal>
#include <cstdio>
__global__ void k(int *p) { *p = 1; }
int main() {
  int *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); cudaDeviceSynchronize();
  printf("raising SIGINT\n"); fflush(stdout);
  raise(SIGINT);  // what Ctrl-C sends: the program has no handler, so it ends here
  cudaDeviceSynchronize();
  printf("still running\n");
  return 0;
}
"""


def test_ctrl_c_stops_the_program(tmp_path):
    """SIGINT's default action ends the program as natively: hypa's interpreter must not keep
    the handler Python installs when it imports ``signal`` (which turned Ctrl-C into a
    KeyboardInterrupt inside hypa, and the program went on).  SIGINT starts at its default in
    ``hypa run`` (a test run in the background may inherit it ignored)."""
    exe = build_cuda_program(tmp_path, "ctrl_c", CTRL_C)
    p = run_hypa("run", "--", exe, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout == "raising SIGINT\n"
    assert p.returncode == 130 and "ctrl_c was killed by signal 2 (SIGINT)" in p.stderr, p.stderr


PRINTF_ORDER = r"""
#include <cstdio>
__global__ void k() { printf("device %d\n", threadIdx.x); }
int main() { printf("host 1\n"); k<<<1, 2>>>(); printf("host 2 (after the launch, before the sync)\n"); cudaDeviceSynchronize(); printf("host 3\n"); k<<<1,1>>>(); printf("host 4\n"); return 0; }
"""


def test_device_printf_is_flushed_where_cuda_flushes_it(tmp_path):
    """Recorded on an H200 (stdout to a pipe): device output appears at the synchronisation,
    after the host's line printed between launch and sync; the last launch is never
    synchronised, so its line is dropped (hypa says so on stderr)."""
    p = _build_and_run(tmp_path, "printf_order", PRINTF_ORDER)
    assert p.returncode == 0, p.stderr
    gpu = os.path.join(os.path.dirname(__file__), "..", "ground_truth", "hypa_run", "printf_order_h200.txt")
    assert p.stdout == open(gpu).read()
    assert "1 line(s) of device printf output were never flushed" in p.stderr


SASS_ONLY = r"""
#include <cstdio>
__global__ void k(int *x) { x[threadIdx.x] = 1; }
int main() {
  int *d; cudaMalloc(&d, 128); k<<<1, 32>>>(d);
  int h[32] = {0}; cudaMemcpy(h, d, 128, cudaMemcpyDeviceToHost);
  printf("after %d\n", h[0]);
  return 0;
}
"""


def test_device_code_hypa_cannot_run_stops_the_program(tmp_path):
    """A GPU runs SASS-only code; hypa cannot, and going on would hand the program garbage
    (issue 26: PolyBench printed 261,121 mismatches): the launch stops the program, exit 1."""
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    (tmp_path / "so.cu").write_text(SASS_ONLY)
    b = subprocess.run(["nvcc", "-cudart", "shared", "-gencode", "arch=compute_90,code=sm_90", "-o",
                        str(tmp_path / "so"), str(tmp_path / "so.cu")], capture_output=True, text=True)
    assert b.returncode == 0, b.stderr
    p = run_hypa("run", "--", str(tmp_path / "so"))
    assert p.returncode == 1
    assert p.stdout == ""  # "after" never printed
    assert "holds machine code (SASS) for sm_90 and no PTX" in p.stderr
    assert "stopping the program (its results would be wrong)" in p.stderr


@pytest.mark.parametrize("name", ["async_fault", "read_before_allocation"])
def test_faults_surface_where_the_gpu_surfaces_them(tmp_path, name):
    """tests/cuda_programs/faults/: what the H100 printed on each of 5 runs (recorded by
    benchmarks/gpu/faults_native.sh into tests/ground_truth/hypa_run/faults_native.json): a fault
    is seen at the next synchronizing call, not at the cudaEventRecord after the launch; a read
    72 bytes before an allocation does not fault (hypa warns)."""
    import json

    from helpers import ROOT

    src = (ROOT / "tests" / "cuda_programs" / "faults" / f"{name}.cu").read_text()
    gpu = json.loads((ROOT / "tests" / "ground_truth" / "hypa_run" / "faults_native.json").read_text())
    p = run_hypa("run", "--", build_cuda_program(tmp_path, name, src))
    assert p.returncode == 0, p.stderr
    assert {p.stdout} == set(gpu["programs"][name])
    if name == "read_before_allocation":
        assert "72 bytes before the 9216-byte device allocation" in p.stderr


def test_estimate_time_puts_the_timing_model_in_the_report(tmp_path):
    """``hypa run --estimate-time [ARCH]``: every launch of tests/cuda_programs/graphs.cu gets
    the timing model's estimate on ARCH in the JSON report (launches doing the same work the
    same estimate); an unknown architecture is an error before the program starts."""
    import json

    from helpers import ROOT

    exe = build_cuda_program(tmp_path, "graphs", (ROOT / "tests" / "cuda_programs" / "graphs.cu").read_text())
    got = {}
    for arch in ("sm_90", "sm_80"):
        out = tmp_path / f"{arch}.json"
        p = run_hypa("run", "--estimate-time", arch, "-o", str(out), "--", exe)
        assert p.returncode == 0, p.stderr
        recs = json.loads(out.read_text())
        assert [r["time_estimate"]["arch"] for r in recs] == [arch] * 7
        assert all(r["time_estimate"]["time_us"] > 0 for r in recs) and "memory" not in recs[0]
        got[arch] = [r["time_estimate"]["time_us"] for r in recs]
        assert got[arch][0] == got[arch][2] and got[arch][1] == got[arch][3]  # the graph launched twice
    assert got["sm_90"] != got["sm_80"]
    bad = run_hypa("run", "--estimate-time", "sm_77", "--", exe)
    assert bad.returncode == 2 and "unknown architecture 'sm_77'" in bad.stderr and bad.stdout == ""


def test_estimate_time_lists_the_event_intervals_the_program_timed(tmp_path):
    """tests/cuda_programs/streams_events.cu times its two launches with events: the run lists
    that interval with the sum of the two launches' estimates, which is what its
    cudaEventElapsedTime returned."""
    import json
    import re

    from helpers import ROOT

    exe = build_cuda_program(tmp_path, "se", (ROOT / "tests" / "cuda_programs" / "streams_events.cu").read_text())
    out = tmp_path / "r.json"
    p = run_hypa("run", "--estimate-time", "-o", str(out), "--", exe)
    assert p.returncode == 0, p.stderr
    each = [r["time_estimate"]["time_us"] for r in json.loads(out.read_text())]
    m = re.search(r"hypa run: event interval over launches 0-1 \(inc\(int\*, int\)\): estimated ([0-9.]+) ms on "
                  r"sm_90 \(what cudaEventElapsedTime returned\)", p.stderr)
    assert m, p.stderr
    assert float(m.group(1)) == pytest.approx(sum(each) / 1000, abs=1e-4)
    plain = run_hypa("run", "--", exe)
    assert "event interval" not in plain.stderr



LONG_RUN = r"""
#include <cstdio>
__global__ void spin(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int k = 0; k < n; ++k) v = v * 0.999f + 0.001f;
  x[i] = v;
}
int main() {
  float *x; cudaMalloc(&x, 1 << 20);
  for (int r = 0; r < 8; ++r) spin<<<64, 256>>>(x, 200000);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
"""


def _on_a_terminal(*args: str) -> tuple[int, str, str]:
    """``hypa run args...`` with stderr on a pseudo-terminal: (exit status, stdout, stderr)."""
    import pty
    import sys

    master, slave = pty.openpty()
    p = subprocess.run([sys.executable, "-m", "hypa.tools.hypa_cli", "run", *args], stderr=slave,
                       stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, timeout=300)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other side is closed
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    return p.returncode, p.stdout, err.decode(errors="replace")


def test_progress_line_on_a_terminal_and_quiet(tmp_path):
    """A run longer than 2 s shows a progress line on a terminal (launch, kernel, throughput),
    rewritten in place and cleared before the report; ``--quiet`` has none."""
    exe = build_cuda_program(tmp_path, "long", LONG_RUN)
    rc, out, err = _on_a_terminal("--", str(exe))
    assert rc == 0 and out == "done\n"
    lines = [seg for seg in err.split("\r") if seg.startswith("hypa run: launch ")]
    assert lines, err[:2000]
    assert all("(spin(float*, int))" in ln and "thread-instructions/s emulated" in ln for ln in lines)
    assert "\x1b[K" in err and "\r\x1b[K" in err  # rewritten in place, then cleared
    rc, out, err = _on_a_terminal("--quiet", "--", str(exe))
    assert rc == 0 and out == "done\n" and "hypa run: launch " not in err
