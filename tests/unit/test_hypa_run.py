"""``hypa run``: unmodified CUDA programs (tests/cuda_programs/*.cu, built with
``nvcc -cudart shared -arch=sm_90``) run on the CPU with hypa's libcudart.

Each program checks its own results and prints PASS; here we check its whole stdout, its
exit status, hypa's messages on stderr, and the per-launch JSON report: the launches, their
kernels, grids and blocks, equal counts for launches that do identical work, and exact counts
computed by hand from the PTX nvcc 13.0 generates (``nvcc -ptx -arch=sm_90 X.cu``; the
derivations are in EXACT below).  The module is skipped when nvcc is not on PATH or hypa
cannot build its runtime library (no C compiler).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from helpers import ROOT, nvcc, run_hypa

PROGRAMS_DIR = os.path.join(ROOT, "tests", "cuda_programs")
PROGRAMS = sorted(f[:-3] for f in os.listdir(PROGRAMS_DIR) if f.endswith(".cu"))
TIMEOUT = 300
STATIC = "static_runtime"  # multi_kernel.cu built with nvcc's default, the static runtime


# -- building and running ----------------------------------------------------------------


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    records: list | None  # the JSON report, None without one

    def launches(self) -> list[dict]:
        """The launches that ran (a launch that failed is absent or marked with an error)."""
        assert self.records is not None, self.stderr
        return [r for r in self.records if not r.get("error")]


def _nvcc_version() -> str:
    out = subprocess.run(["nvcc", "--version"], check=False, capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def _build(src: str, exe: str, shared: bool = True) -> tuple[str, subprocess.CompletedProcess]:
    return exe, nvcc(src, exe, shared=shared, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """Every program, built once (in parallel); name -> executable."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    probe = run_hypa("run", "--build-only", timeout=TIMEOUT)
    if probe.returncode != 0:
        pytest.skip(f"hypa cannot build its CUDA runtime library here: {probe.stderr.strip()}")
    out = tmp_path_factory.mktemp("cuda_programs")
    jobs = [(os.path.join(PROGRAMS_DIR, f"{n}.cu"), str(out / n), True) for n in PROGRAMS]
    jobs.append((os.path.join(PROGRAMS_DIR, "multi_kernel.cu"), str(out / STATIC), False))
    # nvcc waits on its subprocesses' I/O as much as on the CPU: twice the cores is fastest
    workers = min(len(jobs), 2 * (os.cpu_count() or 1), 8)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda j: _build(*j), jobs))
    failed = [f"{exe}:\n{p.stderr}" for exe, p in results if p.returncode != 0]
    if failed:
        pytest.fail("nvcc failed:\n" + "\n".join(failed))
    exes = {os.path.basename(exe): exe for exe, _ in results}
    return exes


def hypa_run(exe: str, *options: str, report: str | None = None) -> Run:
    """``hypa run [options] --format json -o REPORT -- EXE`` (no -o when report is None)."""
    if report is not None:
        options += ("--format", "json", "-o", report)
    p = run_hypa("run", *options, "--", exe, timeout=TIMEOUT)
    records = None
    if report is not None and os.path.exists(report):
        with open(report) as f:
            records = json.load(f)
    return Run(p.returncode, p.stdout, p.stderr, records)


#: programs whose counts EXACT derives under another schedule than hypa run's default: a contended
#: CAS loop takes as many trips as the warps' interleaving makes it (on a GPU, a different number
#: each run); the derivation has each warp run its loop alone (``--schedule warp``)
RUN_FLAGS = {"atomics_2d": ("--schedule", "warp")}


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory) -> dict[str, Run]:
    """Every program run once under ``hypa run`` with a JSON report (two at a time)."""
    out = tmp_path_factory.mktemp("reports")
    with concurrent.futures.ThreadPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        futures = {n: pool.submit(hypa_run, built[n], *RUN_FLAGS.get(n, ()), report=str(out / f"{n}.json"))
                   for n in PROGRAMS}
        return {n: f.result() for n, f in futures.items()}


# -- what each program prints and launches ------------------------------------------------

STDOUT = {
    "multi_kernel": "sum of y = 25600.0\nz[7] = 21, z[8] = -8, w[4] = 1275, w[5] = 5\nPASS\n",
    "bfs": "levels: 0 1 2 3 4 5 2 3 3 4 4 -1\niterations = 6\nPASS\n",
    "symbols": "y[0..3] = 1 7 25 61\nafter coef[0] = 10: 10 16 34 70\ncounter = 192\n"
               "coef = 10 2 3 1\ntable[7] = 103.5\nPASS\n",
    "dyn_shared": "partial[0] = 988, partial[7] = 1028\ntotal = 8166 (expected 8166)\nPASS\n",
    "streams_events": "elapsed: cudaSuccess, time > 0: yes\nh[0] = 5, h[511] = 516\nPASS\n",
    "managed": "a[1] = 3, a[255] = 765, total = 97920\nPASS\n",
    "device_printf": "host: before\n"
                     "thread 0: value 10, half 0.00, even\n"
                     "thread 1: value 11, half 0.50, odd\n"
                     "thread 2: value 14, half 1.00, even\n"
                     "thread 3: value 19, half 1.50, odd\n"
                     "block 0 says 1.500000e-03 and 1099511627776 (ok)\n"
                     "host: after (cudaSuccess)\nPASS\n",
    "assert_fail": "launching\ncudaDeviceSynchronize: cudaErrorAssert\nlater cudaMalloc: cudaErrorAssert\n"
                   "cudaGetLastError: cudaErrorAssert\nPASS\n",
    "out_of_bounds": "first kernel: cudaSuccess\ncudaDeviceSynchronize: cudaErrorIllegalAddress\n"
                     "later cudaMemcpy: cudaErrorIllegalAddress\nPASS\n",
    "unsupported_call": "before cudaIpcGetMemHandle\n",
    "device_props": "devices: 1, current: 0\nname: NVIDIA H100 80GB HBM3\nSMs: 132\ncompute capability: 9.0\n"
                    "warp size: 32, max threads per block: 1024\nPASS\n",
    "atomics_2d": "c[39][47] = 164\nhist: 240 240 240 240 240 240 240 240\n"
                  "sum = 157440, max = 164, cas count = 1920\nPASS\n",
    "struct_ptrs": "x[0] = 1.75, x[63] = 127.75\ndiag = 0 103 206 309\nPASS\n",
    "clock_wait": "clock rate: 1980000 kHz, waits of 495000 cycles: done\nPASS\n",  # as an H100 printed it
    # what an H100 printed (3 runs, 2026-11-27: nvcc -cudart shared -arch=sm_90 graphs.cu)
    "graphs": "capture: 4 nodes, status while capturing 1, y[3] = 6, y[255] = 510\n"
              "explicit: 1 root node, y[3] = 7, host calls 1\nupdated: y[3] = 2, host calls 2\n"
              "sync while capturing: cudaErrorStreamCaptureUnsupported, end: cudaErrorStreamCaptureInvalidated, "
              "graph none\npool: threshold kept, z[255] = 127.5\nPASS\n",
    # hypa's Python, numpy and LLVM allocate on a thread of their own (cudart/shim.py): the
    # program's own malloc gets fresh zeroed pages as natively, never hypa's garbage.  This,
    # fork_child's and host_threads' are what an H100 printed (3 runs each, 2026-11-28:
    # nvcc -cudart shared -arch=sm_90 PROGRAM.cu)
    "host_heap": "x[n-1]: 131071.0 524288.5\nmalloc 64 KiB: all zero\nmalloc 1 MiB: all zero\n"
                 "malloc 4 MiB: all zero\nx[n-1]: 2998.0\nPASS\n",
    # the child of fork() gets cudaErrorInitializationError (3) from every runtime call
    "fork_child": "child: cudaMalloc: 3 cudaErrorInitializationError (initialization error)\n"
                  "child: cudaMemcpy: cudaErrorInitializationError\nchild: cudaGetLastError: cudaErrorInitializationError\n"
                  "parent: child exited with 7\nparent: cudaSuccess, h[31] = 93\nPASS\n",
    "host_threads": "other thread: cudaErrorInvalidDevice; main's last error: cudaSuccess; other's: cudaErrorInvalidDevice\n"
                    "sums: 2272 66272 130272 194272\nsigwait caught 20 SIGINTs\nPASS\n",
}

EXIT = {"unsupported_call": 1}

# The launches that complete, in order: (kernel, grid, block).
G1, B32 = (1, 1, 1), (32, 1, 1)
LAUNCHES = {
    "multi_kernel": [("_Z4fillPff", (4, 1, 1), (256, 1, 1))] * 2
                    + [(k, (4, 1, 1), (256, 1, 1)) for k in ("_Z5saxpyfPKfPf", "_Z6squarePf", "_Z8odd_evenPi",
                                                             "_Z7divergePKiPi")],
    "bfs": [("_Z11init_levelsPii", G1, B32)] + [("_Z9bfs_levelPKiS0_PiiS1_", G1, B32)] * 6,
    "symbols": [("_Z4polyPKfPf", (2, 1, 1), B32)] * 3 + [("_Z10fill_tablev", G1, (8, 1, 1))],
    "dyn_shared": [("_Z9block_sumPKiPi", (8, 1, 1), (128, 1, 1)), ("_Z9block_sumPKiPi", G1, (8, 1, 1)),
                   ("_Z16scale_via_sharedPKiPii", G1, (8, 1, 1))],
    "streams_events": [("_Z3incPii", (2, 1, 1), (128, 1, 1))] * 2,
    "managed": [("_Z6triplePi", (4, 1, 1), (64, 1, 1))],
    "device_printf": [("_Z5helloi", G1, (4, 1, 1)), ("_Z8one_linefx", G1, G1)],
    "assert_fail": [],
    "out_of_bounds": [("_Z9ok_kernelPi", G1, B32)],
    "unsupported_call": [("_Z4noopPi", G1, B32)],
    "device_props": [("_Z4markPi", (132, 1, 1), B32)],
    "atomics_2d": [("_Z5add2dPKiS0_Pi", (3, 5, 1), (16, 8, 1)), ("_Z5statsPKiPiS1_S1_S1_", (3, 5, 1), (16, 8, 1))],
    "struct_ptrs": [("_Z6affine6AffinePf", (2, 1, 1), B32), ("_Z9fill_rowsPPf", (4, 1, 1), B32),
                    ("_Z11gather_diagPKPfS_", G1, (4, 1, 1))],
    "clock_wait": [("_Z11clock_blockPll", G1, G1)] * 4 + [("_Z6wait64Pxx", (2, 1, 1), B32)],
    # the captured graph twice (scale, add), the explicit graph twice (add), the pool's scale;
    # the kernel of the invalidated capture never runs
    "graphs": [(k, (2, 1, 1), (128, 1, 1)) for k in ("_Z5scalePffi", "_Z3addPKfPfi", "_Z5scalePffi", "_Z3addPKfPfi",
                                                    "_Z3addPKfPfi", "_Z3addPKfPfi", "_Z5scalePffi")],
    "host_heap": [("_Z5scalePffi", (g, 1, 1), (256, 1, 1)) for g in (256, 4096, 4)],
    "fork_child": [("_Z4iotaPi", G1, B32)] * 2,  # the parent's: the child launches nothing
    "host_threads": [("_Z4fillPii", G1, (64, 1, 1))] * 40,  # 4 threads x 5, then 20 from main
}

# Launches (indices into LAUNCHES) that do identical work, so every count must be equal.
IDENTICAL = {
    "multi_kernel": [(0, 1)],
    "symbols": [(0, 1, 2)],
    "streams_events": [(0, 1)],
    "graphs": [(0, 2, 6), (1, 3, 4, 5)],
    "clock_wait": [(0, 1, 2, 3)],
}

# The summary line where a launch failed (it is not in LAUNCHES).
SUMMARY = {"assert_fail": "1 launch of 1 kernel, 1 failed;", "out_of_bounds": "2 launches of 2 kernels, 1 failed;"}

COUNTED = ("inst_executed", "thread_inst_executed", "branch", "divergent_branch", "flop_count_sp", "flop_count_dp")


def test_every_program_has_expectations():
    assert set(PROGRAMS) == set(STDOUT) == set(LAUNCHES), "a program in tests/cuda_programs without expectations here"
    assert len(PROGRAMS) >= 10


@pytest.mark.parametrize("name", PROGRAMS)
def test_program(runs, name):
    """Exact stdout (hypa's own lines never in it), exit status, the launches in the report,
    and equal counts for launches that do identical work."""
    r = runs[name]
    assert r.stdout == STDOUT[name], r.stderr
    assert r.rc == EXIT.get(name, 0), r.stderr
    got = [(d["kernel"], tuple(d["grid"]), tuple(d["block"])) for d in r.launches()]
    assert got == LAUNCHES[name]
    assert [d["launch"] for d in r.launches()] == sorted(d["launch"] for d in r.launches())
    for group in IDENTICAL.get(name, []):
        counts = [{k: r.launches()[i][k] for k in COUNTED} for i in group]
        assert all(c == counts[0] for c in counts), counts
    for d in r.launches():
        assert d["mode"] == "full" and d["thread_inst_executed"] > 0 and d["inst_executed"] > 0
        assert d["thread_inst_executed"] <= 32 * d["inst_executed"]
        assert d["divergent_branch"] <= d["branch"]
    # the summary on stderr counts the launches, the failed ones included
    n, kernels = len(LAUNCHES[name]), len({k for k, _, _ in LAUNCHES[name]})
    default = f"{n} launch{'es' if n != 1 else ''} of {kernels} kernel{'s' if kernels != 1 else ''};"
    assert f"hypa run: {SUMMARY.get(name, default)}" in r.stderr


# -- exact counts, computed by hand from nvcc 13.0's PTX ----------------------------------------
#
# Per launch: (inst_executed, thread_inst_executed, branch, divergent_branch, flop_count_sp).
# inst_executed counts warp-instructions, thread_inst_executed thread-instructions, branch
# the warp-level executions of bra (conditional or not; ret is no branch), divergent_branch
# those whose active threads did not all go the same way.  An fma is 2 flops.


def _uniform(instructions: int, threads: int, flops_per_thread: int = 0) -> tuple:
    """A kernel every thread runs straight through (no branch), in full warps of 32."""
    assert threads % 32 == 0 or threads < 32
    warps = max(1, threads // 32)
    return (instructions * warps, instructions * threads, 0, 0, flops_per_thread * threads)


def _bfs_counts() -> list[tuple]:
    """init_levels, then bfs_level per level of bfs.cu's graph, one warp of 32 threads.

    init_levels (15 instructions): threads 0-11 run all 15, threads 12-31 the 8 up to
    `@%p1 bra` and `ret`: 12*15 + 20*9 = 360; the warp runs 15; 1 branch, divergent.

    bfs_level's PTX, per thread: A = 12 (5 ld.param, cvta, 3 mov, mad, setp, @p1 bra);
    threads v > 11 then `ret` (13 in all).  B = 6 (cvt, mul.wide, add, ld level[v], setp,
    @p2 bra); threads not in the frontier then `ret` (19).  C = 7 (cvta, shl, add, 2 ld row,
    setp, @p3 bra), D = 4 (3 address computations, cvta); then per edge E = 6 (ld col, mul,
    add, ld level[u], setp, @p4 bra), F = 5 when level[u] < 0 (add, st level, mov, st changed,
    ld row[v+1]), G = 4 (add, add, setp, @p5 bra); then `ret`: 30 + 10*deg + 5*new.
    The warp runs A+B+C+D (29), 10 per edge slot of its longest list plus 5 where any thread
    finds a new node, and ret; @p1 and @p2 always diverge (12 of 32 threads have a node, 1-3
    of those are in the frontier), @p4/@p5 where the threads go different ways.  Threads of
    one warp run in lockstep: within an edge slot all loads of level[u] come before the stores.
    """
    row = [0, 1, 4, 7, 9, 11, 12, 14, 15, 18, 20, 22, 22]
    col = [1, 0, 2, 6, 1, 3, 8, 2, 4, 3, 5, 4, 1, 7, 6, 2, 9, 10, 8, 10, 8, 9]
    V = 12
    out = [(15, 12 * 15 + 20 * 9, 1, 1, 0)]
    level = [0] + [-1] * (V - 1)
    cur = 0
    while True:
        frontier = [v for v in range(V) if level[v] == cur]
        assert frontier and all(row[v + 1] > row[v] for v in frontier)  # so @p3 never diverges
        deg = {v: row[v + 1] - row[v] for v in frontier}
        threads = 20 * 13 + (V - len(frontier)) * 19 + sum(30 + 10 * deg[v] for v in frontier)
        warp, branch, divergent = 29 + 1, 3, 2
        changed = False
        for k in range(max(deg.values())):
            active = [v for v in frontier if deg[v] > k]
            new = [v for v in active if level[col[row[v] + k]] < 0]
            for v in new:
                level[col[row[v] + k]] = cur + 1
            threads += 5 * len(new)
            warp += 10 + (5 if new else 0)
            branch += 2
            divergent += (0 < len(new) < len(active)) + (0 < sum(deg[v] > k + 1 for v in active) < len(active))
            changed |= bool(new)
        out.append((warp, threads, branch, divergent, 0))
        if not changed:
            return out
        cur += 1


def _block_sum_counts(blocks: int, threads: int) -> tuple:
    """dyn_shared.cu's block_sum: the tree reduction over strides threads/2 ... 1 (L of them).

    Per thread t: 18 before the loop (2 ld.param, 3 mov, mad, cvta, mul.wide, add, ld, shl,
    mov, add, st.shared, bar, shr, setp, @p1 bra); per stride s: setp, @p2 bra, 6 more where
    t < s (shl, add, 2 ld.shared, add, st.shared), bar, shr, setp, @p3 bra; then setp, @p4 bra,
    5 more for t == 0 (ld.shared, cvta, mul.wide, add, st.global), ret.  Summed over the
    threads of a block the `t < s` parts give 6 * (threads - 1).  Per warp w: the 6 run where
    any lane t < s (32w < s); @p2 diverges where s splits the warp, @p4 in warp 0.
    """
    strides = []
    s = threads // 2
    while s:
        strides.append(s)
        s //= 2
    L = len(strides)
    thread = threads * (18 + 6 * L + 3) + 6 * (threads - 1) + 5
    warp = branch = divergent = 0
    for w in range((threads + 31) // 32):
        lo, hi = 32 * w, min(32 * w + 32, threads)
        warp += 18 + 6 * L + 6 * sum(lo < s for s in strides) + 3 + (5 if w == 0 else 0)
        branch += 2 + 2 * L
        divergent += sum(lo < s < hi for s in strides) + (w == 0)
    return (blocks * warp, blocks * thread, blocks * branch, blocks * divergent, 0)


EXACT = {
    "multi_kernel": [
        _uniform(11, 1024),  # fill: 2 ld.param, cvta, 3 mov, mad, mul.wide, add, st, ret
        _uniform(11, 1024),
        _uniform(17, 1024, 2),  # saxpy: 3 ld.param, 2 cvta, 3 mov, mad, mul.wide, 2 add, 2 ld, fma, st, ret
        _uniform(12, 1024, 1),  # square: ld.param, cvta, 3 mov, mad, mul.wide, add, ld, mul, st, ret
        _uniform(15, 1024),  # odd_even: the if/else is and, setp, neg, mul, selp: no branch
        # diverge: 10 up to `@%p1 bra` (2 ld.param, 3 mov, mad, and, setp, mov); threads with
        # tid % 4 == 0 (8 per warp) then 9 (cvta, mul.wide, add, 3 x (ld, mad)), the other 24
        # `bra.uni`; all 5 more (cvta, mul.wide, add, st, ret).  Per warp: 10+1+9+5 = 25
        # warp-instructions, 8*24 + 24*16 = 576 thread-instructions, 2 branches, 1 divergent.
        (25 * 32, 576 * 32, 2 * 32, 32, 0),
    ],
    "bfs": _bfs_counts(),
    "symbols": [
        # poly: 2 ld.param, 2 cvta, 3 mov, mad, mul.wide, add, ld.global, 4 ld.const, 3 fma,
        # add, st, mov, atom, ret = 23; 3 fma = 6 flops a thread
        _uniform(23, 64, 6), _uniform(23, 64, 6), _uniform(23, 64, 6),
        # fill_table: ld base, cvt, mov, cvt, fma, mul.wide, mov, add, st, ret = 10, 8 threads
        (10, 80, 0, 0, 16),
    ],
    "dyn_shared": [
        _block_sum_counts(8, 128),  # (2440, 70648, 512, 48, 0)
        _block_sum_counts(1, 8),  # (62, 359, 8, 4, 0)
        (24, 8 * 24, 0, 0, 0),  # scale_via_shared: 24 instructions, 8 threads, no branch
    ],
    "streams_events": [_uniform(13, 256), _uniform(13, 256)],  # inc: ..., ld, add, st, ret
    "managed": [_uniform(14, 256)],  # triple: ..., ld, mul, st, mov, atom, ret
    "device_printf": [
        (27, 4 * 27, 0, 0, 4),  # hello: 27 with the vprintf call sequence; t * 0.5f is 1 flop
        (21, 21, 0, 0, 0),  # one_line: 21, one thread; cvt.f64.f32 is no flop
    ],
    "out_of_bounds": [(7, 7 * 32, 0, 0, 0)],  # ok_kernel: ld.param, cvta, mov, mul.wide, add, st, ret
    "unsupported_call": [(8, 8 * 32, 0, 0, 0)],  # noop: ok_kernel's 7 and a mov of 0
    # mark, 132 CTAs of one warp: thread 0 runs 11 (ld.param, mov, setp, @p bra, cvta, mov, add,
    # mul.wide, add, st, ret), the other 31 threads 5 (up to the branch, then ret)
    "device_props": [(11 * 132, (11 + 31 * 5) * 132, 132, 132, 0)],
    "atomics_2d": [
        _uniform(24, 1920),  # add2d: 3 ld.param, 3 cvta, 6 mov, 3 mad, mul.wide, 3 add.s64, 2 ld, add, st, ret
        # stats: 30 before the CAS loop, 5 a trip (add, atom.cas, setp, mov, @p bra), ret.  All
        # lanes of a warp read the same count, and each trip one CAS succeeds, so lane k of a
        # warp leaves after k+1 trips: 528 trips a warp, 32 loop branches of which 31 diverge.
        # The loop is a spin loop (ptxas's YIELD, docs/design.md, "Execution model"): each lane that
        # leaves runs the ret on its own, 32 a warp.
        # 60 warps: 60 * (30 + 32*5 + 32) = 13320, 60 * (32*31 + 5*528) = 217920.
        (13320, 217920, 1920, 1860, 0),
    ],
    "struct_ptrs": [
        # affine: 11 to `@%p1 bra` (5 ld.param of the struct's fields and the pointer, 3 mov, mad,
        # setp, bra), 11 in the body (fma, cvt.f64, 2 add.f32, setp, selp ...), ret; all 64 < n:
        # 4 flops a thread (fma = 2, 2 add), one uniform branch a warp
        (2 * 23, 64 * 23, 2, 0, 64 * 4),
        _uniform(14, 128),  # fill_rows: ld of the row pointer from the device array, st
        (17, 4 * 17, 0, 0, 0),  # gather_diag: 4 threads, 17 instructions
    ],
    "assert_fail": [],
    # the clock advances one cycle per warp-instruction (runtime/emulator/clock.py).
    # clock_block, one thread: 6 before the loop (2 ld.param, mov %clock64, setp, mov, @p bra)
    # read the clock after 6; a trip is 5 (mov %clock64, sub, and, setp, @p bra), so 99,000
    # trips reach the 495,000 cycles; then cvta, st, ret.  99,001 branches, none divergent.
    # wait64, 2 CTAs of one warp: 6 before the loop, 25,000 trips of 4 (mov, sub, setp, bra)
    # reach 100,000; then mov %tid, setp, @p bra (divergent), thread 0 runs 5 more, ret.
    "clock_wait": [(6 + 5 * 99_000 + 3,) * 2 + (1 + 99_000, 0, 0)] * 4
                  + [(2 * (6 + 4 * 25_000 + 3 + 5 + 1), 2 * (32 * (6 + 4 * 25_000 + 3 + 1) + 5),
                      2 * (1 + 25_000 + 1), 2, 0)],
}


@pytest.fixture(scope="module")
def nvcc_release(built) -> str:
    return _nvcc_version()


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_counts(runs, nvcc_release, name):
    if nvcc_release != "13.0":
        pytest.skip(f"the counts were derived from nvcc 13.0's PTX; this is nvcc {nvcc_release}")
    got = [tuple(d[k] for k in ("inst_executed", "thread_inst_executed", "branch", "divergent_branch",
                                "flop_count_sp")) for d in runs[name].launches()]
    assert got == EXACT[name]
    for d in runs[name].launches():
        assert d["flop_count_dp"] == 0
        assert sum(b["thread_inst_executed"] for b in d["blocks"]) == d["thread_inst_executed"]
        assert sum(b["inst_executed"] for b in d["blocks"]) == d["inst_executed"]


def test_hand_computed_tables_match_the_derivations():
    """The closed forms behind EXACT give the numbers worked out on paper."""
    assert _block_sum_counts(8, 128) == (2440, 70648, 512, 48, 0)
    assert _block_sum_counts(1, 8) == (62, 359, 8, 4, 0)
    assert [c[1] for c in _bfs_counts()] == [360, 514, 539, 575, 596, 586, 509]
    assert [c[3] for c in _bfs_counts()] == [1, 2, 2, 3, 4, 3, 2]


# -- program-specific behaviour ---------------------------------------------------------------


def test_bfs_host_loop_follows_the_device(runs):
    """One bfs_level launch per iteration the host printed; the work changes with the frontier."""
    r = runs["bfs"]
    iterations = int(re.search(r"iterations = (\d+)", r.stdout).group(1))
    levels = [d for d in r.launches() if d["kernel"] == "_Z9bfs_levelPKiS0_PiiS1_"]
    assert len(levels) == iterations == 6
    assert len({d["thread_inst_executed"] for d in levels}) > 1


def test_assert_reports_the_failing_thread(runs):
    r = runs["assert_fail"]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("hypa run: launch 0: assertion failed")]
    assert len(lines) == 1, r.stderr
    line = lines[0]
    # a[37] is negative: block 1, thread 5 of 32-thread blocks
    assert "_Z12check_nonnegPKi" in line and "CTA (1, 0, 0)" in line and "thread (5, 0, 0)" in line
    assert "assert_fail.cu:10" in line and "Assertion `a[i] >= 0` failed" in line
    assert "hypa run:" not in r.stdout


def test_out_of_bounds_names_kernel_thread_and_address(runs):
    r = runs["out_of_bounds"]
    lines = [ln for ln in r.stderr.splitlines() if "out-of-bounds" in ln]
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("hypa run: launch 1:")
    assert "_Z10bad_kernelPix" in line and "CTA (0, 0, 0)" in line and "thread (3, 0, 0)" in line
    # the address touched is a + (1 << 32) ints: 16 GiB past the allocation's start
    addresses = [int(a, 16) for a in re.findall(r"0x[0-9a-f]+", line)]
    assert any(x - y == 4 << 32 for x in addresses for y in addresses), line
    assert "128-byte" in line


def test_unsupported_call_stops_the_program(runs):
    r = runs["unsupported_call"]
    assert r.rc == 1
    assert "called cudaIpcGetMemHandle, which hypa's CUDA runtime does not provide" in r.stderr
    assert "after cudaIpcGetMemHandle" not in r.stdout and "FAIL" not in r.stdout


def test_static_runtime_is_refused(built):
    r = hypa_run(built[STATIC])
    assert r.rc == 2
    assert "-cudart shared" in r.stderr
    assert r.stdout == ""  # the program never ran


def test_report_goes_to_stderr_not_stdout(built):
    """Without -o the program's stdout is its own; the table and the summary are on stderr."""
    r = hypa_run(built["multi_kernel"])
    assert r.rc == 0
    assert r.stdout == STDOUT["multi_kernel"]
    assert "inst_executed" in r.stderr and "thread_inst" in r.stderr
    for kernel in ("fill(float*, float)", "saxpy(float, float const*, float*)", "diverge(int const*, int*)"):
        assert kernel in r.stderr
    assert "hypa run: 6 launches of 5 kernels;" in r.stderr
    # the per-kernel section adds up the two identical fill launches
    per_kernel = r.stderr.split("per kernel:", 1)[1]
    fill = next(ln for ln in per_kernel.splitlines() if ln.startswith("fill(float*, float)"))
    numbers = fill[len("fill(float*, float)"):].split()
    assert numbers[:4] == ["2", "0", str(2 * 352), str(2 * 11264)]


def test_timing_reports_the_programs_phases(built):
    """``--timing``: where the program's process spent its time, per phase, as ``hypa
    profile --timing`` prints it; the five kernels are prepared, lowered and compiled once
    each (or found in the cache) and the six launches emulated."""
    r = hypa_run(built["multi_kernel"], "--timing")
    assert r.rc == 0 and r.stdout == STDOUT["multi_kernel"]
    table = r.stderr.split("===-- hypa run timing report (the program's process) --===", 1)[1]
    phases = {ln.split()[0]: ln.split() for ln in table.splitlines() if ln.startswith("  ") and "%" in ln}
    assert phases["emulate"][3] == "6"
    assert "5  kernels prepared" in table


@pytest.fixture(scope="module")
def jobs2(built, tmp_path_factory) -> Run:
    return hypa_run(built["atomics_2d"], "-j", "2", report=str(tmp_path_factory.mktemp("jobs") / "r.json"))


def test_jobs_counts_match_one_process(runs, jobs2):
    """-j 2 runs CTAs in worker processes at the same time, as a GPU does; the counts are
    those of one process, except where they depend on that interleaving: the atomicCAS
    retry loop of ``stats`` goes round again whenever another CTA's CAS came in between
    (on a GPU too), so there a second process can only add instructions and branches."""
    one = [{k: d[k] for k in ("kernel", "grid", "block", *COUNTED)} for d in runs["atomics_2d"].launches()]
    two = [{k: d[k] for k in ("kernel", "grid", "block", *COUNTED)} for d in jobs2.launches()]
    racy = [i for i, d in enumerate(one) if d["kernel"] == "_Z5statsPKiPiS1_S1_S1_"]
    assert len(racy) == 1 and len(two) == len(one)
    assert [d for i, d in enumerate(two) if i not in racy] == [d for i, d in enumerate(one) if i not in racy]
    (i,) = racy
    for k in ("inst_executed", "thread_inst_executed", "branch"):
        assert two[i][k] >= one[i][k]
    assert two[i]["divergent_branch"] == one[i]["divergent_branch"] or two[i]["branch"] > one[i]["branch"]


def test_jobs_results_match_one_process(jobs2):
    assert jobs2.stdout == STDOUT["atomics_2d"]
    assert jobs2.rc == 0


def test_racecheck_finds_no_hazard_in_the_programs(built, runs):
    """Every program above again under ``--racecheck`` (tests/unit/test_racecheck.py): their
    kernels synchronise what they share, so no hazard is reported, and the programs print and
    exit as without it.  Nor does racecheck's sample, on by default (the runs above)."""
    for name, r in runs.items():
        assert not any("racecheck" in n for d in r.records or [] for n in d.get("notes", [])), name
        assert "racecheck" not in r.stderr, name
    with concurrent.futures.ThreadPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        checked = dict(zip(PROGRAMS, pool.map(lambda n: hypa_run(built[n], "--racecheck"), PROGRAMS)))
    for name, r in checked.items():
        assert "racecheck" not in r.stderr, (name, r.stderr)
        assert (r.rc, r.stdout) == (runs[name].rc, runs[name].stdout), name


#: the optional dependencies (pyproject's extras); `hypa run` of a default build needs none
OPTIONAL = ("tqdm", "matplotlib", "dask", "distributed")


def test_runs_with_only_the_core_dependencies(built, runs, tmp_path):
    """A default CUDA 13 build (Zstandard-compressed PTX) under ``hypa run`` with every optional
    package made unimportable (in hypa and in the interpreter the program embeds): the same
    output, exit status and counts as with them (issue 26: the default install could not read
    nvcc 13's PTX)."""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in OPTIONAL:
        (blocked / f"{name}.py").write_text(f"raise ImportError('{name} is blocked: core dependencies only')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocked), os.environ.get("PYTHONPATH", "")]))
    report = tmp_path / "r.json"
    p = run_hypa("run", "--format", "json", "-o", str(report), "--", built["multi_kernel"], timeout=TIMEOUT, env=env)
    want = runs["multi_kernel"]
    assert (p.returncode, p.stdout) == (want.rc, want.stdout), p.stderr
    assert "blocked" not in p.stderr
    got = json.loads(report.read_text())
    assert [r["thread_inst_executed"] for r in got] == [r["thread_inst_executed"] for r in want.launches()]
