#!/usr/bin/env python3
"""Whole CUDA programs under ``hypa run``: wall time, thread-instructions emulated per
second, beside GPGPU-Sim's published simulation rates and, where a GPU is present
(``--native``), the same program's wall time on it.

    python benchmarks/run_programs.py tests/cuda_programs/*.cu            # builds with nvcc -cudart shared
    python benchmarks/run_programs.py --native --json out.json build/*    # on a GPU machine: both
    python benchmarks/run_programs.py benchmarks/programs/matmul.cu:1024 benchmarks/programs/bfs.cu:200000 \
        --gpu-times tests/ground_truth/hypa_run/h200_native.json          # GPU times recorded on the device
    python benchmarks/run_programs.py --small        # CI: matmul 32 and bfs 500, one warm run (skipped without nvcc)

A program is ``PATH[:ARGS]`` (ARGS separated by commas).

Each program runs as a user would run it: a fresh process, ``--cold`` with an empty
compile cache (``HYPA_CACHE_DIR`` set to a new folder), else with the cache the first run
filled (warm).  GPGPU-Sim's rates are the published figures quoted in the issue that asked
for this command (0.18-0.45 M thread-instructions per second); they are constants here,
not measurements.  ``--small`` (CI) runs the two bundled programs at small sizes, cold and
once warm, and exits 1 when one fails (exit status, no launch, no thread-instruction).

``--flat-ratio`` measures instead how fast ``hypa run`` emulates a launch whose memory is
the program's own (flat memory, looked up per access) against ``hypa profile --mode full``
of the same launch captured with ``--capture`` (windows): per launch the emulator's
``duration_ms`` (the profile's includes copying the captured buffers), the fastest of
``--repeat`` alternating runs, summed.  The counts of both must be equal, and with
``--max-ratio R`` the run must be at most R times the profile (exit status 1 otherwise)::

    python benchmarks/run_programs.py --flat-ratio benchmarks/programs/matvec.cu:2048,3
    python benchmarks/run_programs.py --flat-ratio --small --max-ratio 1.3     # CI: under a minute
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

GPGPU_SIM_RATES = (0.18e6, 0.45e6)  # thread-instructions per second, published


def build(src: str, out_dir: str, arch: str) -> str:
    exe = os.path.join(out_dir, os.path.splitext(os.path.basename(src))[0])
    subprocess.run(["nvcc", "-cudart", "shared", f"-arch={arch}", "-o", exe, src], check=True)
    return exe


def hypa_run(exe: str, cache: str, extra: list[str], argv: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        env = dict(os.environ, HYPA_CACHE_DIR=cache)
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "hypa.tools.hypa_cli", "run", *extra, "--format", "json", "-o", out,
                            "--", exe, *argv], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        launches = json.load(open(out)) if os.path.exists(out) else []
    return {"wall_s": wall, "rc": p.returncode, "launches": len(launches),
            "thread_inst": sum(int(x["thread_inst_executed"]) for x in launches)}


def launch_times(path: str) -> list[tuple[int, float]]:
    """(thread-instructions, duration_ms) of each launch of a JSON report."""
    d = json.load(open(path))
    d = d if isinstance(d, list) else d["launches"]
    return [(int(x["thread_inst_executed"]), float(x["duration_ms"])) for x in d]


def flat_ratio(exe: str, argv: list[str], work: str, repeat: int, jit: str) -> dict:
    """``hypa run``'s emulation time of each launch against ``hypa profile --mode full`` of the
    same launches captured (see the module docstring); fastest of ``repeat`` alternating runs."""
    cap = tempfile.mkdtemp(dir=work)
    env = dict(os.environ, HYPA_CACHE_DIR=os.path.join(work, "cache"), HYPA_JIT=jit)
    hypa = [sys.executable, "-m", "hypa.tools.hypa_cli"]
    rj, pj = os.path.join(work, "run.json"), os.path.join(work, "profile.json")
    first = subprocess.run([*hypa, "run", "--capture", cap, "--format", "json", "-o", rj, "--", exe, *argv],
                           env=env, capture_output=True, text=True)
    if first.returncode != 0:
        raise SystemExit(f"{exe}: hypa run --capture failed (exit {first.returncode}): {first.stderr.strip()[-500:]}")
    runs, profs = [], []
    for k in range(repeat + 1):  # the first round fills the compile cache for the profile, and is not counted
        r = subprocess.run([*hypa, "run", "--format", "json", "-o", rj, "--", exe, *argv],
                           env=env, capture_output=True, text=True)
        p = subprocess.run([*hypa, "profile", cap, "--mode", "full", "--no-dedup", "--format", "json", "-o", pj],
                           env=env, capture_output=True, text=True)
        for proc, what in ((r, "hypa run"), (p, "hypa profile")):
            if proc.returncode != 0:
                raise SystemExit(f"{exe}: {what} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
        if k:
            runs.append(launch_times(rj))
            profs.append(launch_times(pj))
    counts_run, counts_prof = [c for c, _ in runs[0]], [c for c, _ in profs[0]]
    run_ms = sum(min(r[i][1] for r in runs) for i in range(len(counts_run)))
    prof_ms = sum(min(p[i][1] for p in profs) for i in range(len(counts_prof)))
    return {"program": " ".join([os.path.basename(exe), *argv]), "launches": len(counts_run),
            "thread_inst": sum(counts_run), "same_counts": counts_run == counts_prof,
            "run_ms": run_ms, "profile_ms": prof_ms, "ratio": run_ms / prof_ms if prof_ms else float("inf")}


#: ``--flat-ratio --small``: one matvec launch over a 4 MiB matrix (two arrays read alternately)
SMALL_FLAT = ["benchmarks/programs/matvec.cu:1024,2"]


def flat_main(args, work: str) -> int:
    programs = args.programs or (SMALL_FLAT if args.small else ["benchmarks/programs/matvec.cu:2048,3"])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if shutil.which("nvcc") is None and any(p.split(":", 1)[0].endswith(".cu") for p in programs):
        print("run_programs.py --flat-ratio: nvcc not found, which builds the programs; nothing measured")
        return 0 if args.small else 1
    rows = []
    for prog in programs:
        path, a_ = (prog.split(":", 1) + [""])[:2]
        if not os.path.exists(path) and os.path.exists(os.path.join(here, path)):
            path = os.path.join(here, path)
        exe = build(path, work, args.arch) if path.endswith(".cu") else path
        rows.append(flat_ratio(exe, [a for a in a_.split(",") if a], work, args.repeat, args.jit))
    print(f"{'program':<24} {'launches':>8} {'thread_inst':>12} {'run ms':>9} {'profile ms':>10} {'run/profile':>11}  counts")
    bad = 0
    for r in rows:
        over = args.max_ratio is not None and r["ratio"] > args.max_ratio
        bad += over or not r["same_counts"]
        print(f"{r['program']:<24} {r['launches']:>8} {r['thread_inst']:>12} {r['run_ms']:>9.1f} {r['profile_ms']:>10.1f} "
              f"{r['ratio']:>11.2f}  {'same' if r['same_counts'] else 'DIFFER'}{'  over --max-ratio' if over else ''}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if bad else 0


def native(exe: str, argv: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([exe, *argv], capture_output=True)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*", help=".cu sources (built with nvcc -cudart shared) or executables")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--native", action="store_true", help="also time each program on this machine's GPU")
    ap.add_argument("--repeat", type=int, default=3, help="warm runs per program (the median is reported)")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--gpu-times", metavar="JSON",
                    help="native.json from benchmarks/gpu/hypa_run_native.sh: show each program's GPU wall time (b_<name> ARGS)")
    ap.add_argument("--flat-ratio", action="store_true",
                    help="hypa run's emulation time against hypa profile --mode full of the same captured launches")
    ap.add_argument("--small", action="store_true",
                    help="CI: benchmarks/programs/matmul.cu:32 and bfs.cu:500 (unless programs are given), one warm run; "
                         "exit 1 when a program fails; without nvcc, say so and exit 0 (with --flat-ratio: its small "
                         "default program)")
    ap.add_argument("--max-ratio", type=float, help="--flat-ratio: exit 1 where run/profile is above this")
    ap.add_argument("--jit", default="optimized", choices=("auto", "baseline", "optimized"),
                    help="--flat-ratio: HYPA_JIT of both sides (default optimized)")
    args = ap.parse_args()
    if args.flat_ratio:
        work = tempfile.mkdtemp(prefix="hypa-bench-")
        try:
            sys.exit(flat_main(args, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if args.small:
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
        args.programs = args.programs or [os.path.join(here, "matmul.cu") + ":32", os.path.join(here, "bfs.cu") + ":500"]
        args.repeat = 1
        if any(p.split(":", 1)[0].endswith(".cu") for p in args.programs) and shutil.which("nvcc") is None:
            print("skipped: nvcc is not on the PATH (the programs are built with nvcc -cudart shared)")
            return 0
    elif not args.programs:
        ap.error("give programs (PATH[:ARGS]), or --small")
    work = tempfile.mkdtemp(prefix="hypa-bench-")
    rows = []
    try:
        gpu = json.load(open(args.gpu_times)) if args.gpu_times else None
        if gpu is not None:
            gpu = gpu.get("programs", gpu)
            args.native = True
        specs = [(p.split(":", 1) + [""])[:2] for p in args.programs]
        try:
            exes = [(build(p, work, args.arch) if p.endswith(".cu") else p, [a for a in a_.split(",") if a]) for p, a_ in specs]
        except subprocess.CalledProcessError as e:
            print(f"FAIL: {' '.join(e.cmd)} exited with status {e.returncode}", file=sys.stderr)
            return 1
        for exe, argv in exes:
            cold_cache = tempfile.mkdtemp(dir=work)
            cold = hypa_run(exe, cold_cache, [], argv)
            warm_runs = sorted((hypa_run(exe, cold_cache, [], argv) for _ in range(args.repeat)), key=lambda r: r["wall_s"])
            warm = warm_runs[len(warm_runs) // 2]
            row = {"program": " ".join([os.path.basename(exe), *argv]), "rc": cold["rc"], "launches": cold["launches"],
                   "thread_inst": cold["thread_inst"], "cold_s": cold["wall_s"], "warm_s": warm["wall_s"],
                   "rate_warm": cold["thread_inst"] / warm["wall_s"] if warm["wall_s"] else 0.0}
            if gpu is not None:
                rec = gpu.get(" ".join(["b_" + os.path.basename(exe), *argv])) or gpu.get(" ".join(["t_" + os.path.basename(exe), *argv]))
                row["gpu_s"] = min(rec["wall_s"]) if rec else float("nan")
            elif args.native:
                row["gpu_s"] = native(exe, argv, args.repeat)
            rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = f"{'program':<22} {'rc':>3} {'launches':>8} {'thread_inst':>12} {'cold s':>7} {'warm s':>7} {'inst/s warm':>12} {'x GPGPU-Sim':>13}"
    if args.native:
        head += f" {'GPU s':>7} {'warm/GPU':>8}"
    print(head)
    for r in rows:
        lo, hi = (r["rate_warm"] / GPGPU_SIM_RATES[1], r["rate_warm"] / GPGPU_SIM_RATES[0])
        line = (f"{r['program']:<22} {r['rc']:>3} {r['launches']:>8} {r['thread_inst']:>12} {r['cold_s']:>7.2f} "
                f"{r['warm_s']:>7.2f} {r['rate_warm']:>12.3g} {lo:>6.0f}-{hi:<6.0f}")
        if args.native:
            line += f" {r['gpu_s']:>7.2f} {r['warm_s'] / r['gpu_s']:>8.1f}"
        print(line)
    tot_i = sum(r["thread_inst"] for r in rows)
    tot_w = sum(r["warm_s"] for r in rows)
    if tot_w:
        rate = tot_i / tot_w
        print(f"all programs: {tot_i} thread-instructions in {tot_w:.2f} s warm = {rate:.3g}/s, "
              f"{rate / GPGPU_SIM_RATES[1]:.0f}-{rate / GPGPU_SIM_RATES[0]:.0f}x GPGPU-Sim's published rates "
              f"(whole processes: start-up, PTX parsing, compilation and the program's own host work included)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.small:
        failed = [r["program"] for r in rows if r["rc"] != 0 or not r["launches"] or not r["thread_inst"]]
        for name in failed:
            print(f"FAIL {name}: `hypa run` exited with a failure or counted no launch")
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
