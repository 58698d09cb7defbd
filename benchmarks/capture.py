#!/usr/bin/env python3
"""``hypa run --capture`` against the same run without it: wall time (whole processes, runs
alternated, median), bytes written, and the capture hashing every chunk (``--hashed``: what
kernels without written-page tracking, and ``-j``, do).

    python benchmarks/capture.py                                  # slices.cu: 200 launches over two 64 MiB arrays
    python benchmarks/capture.py --small                          # CI: 20 launches, one run each, and the replay
    python benchmarks/capture.py /tmp/3DConvolution --hashed      # an executable (PolyBench/GPU's 3DConvolution)

A program is ``PATH[:ARGS]`` (ARGS separated by commas); a ``.cu`` is built with
``nvcc -cudart shared``.  The issue's target: at most 2x the wall time, at most 1 GB written,
for PolyBench/GPU's 3DConvolution.  Exits 1 where a run fails, the capture's launch count
differs from the run's, or (``--small``, ``--replay``) ``hypa profile`` of the capture counts
differently from the run.  Without nvcc, a ``.cu`` is skipped (said, exit 0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SLICES = os.path.join(HERE, "programs", "slices.cu")
COUNTS = ("inst_executed", "thread_inst_executed", "branch", "divergent_branch")


class Failed(Exception):
    pass


def hypa(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hypa.tools.hypa_cli", *args], env=env, capture_output=True, text=True)


def run(exe: str, argv: list[str], cache: str, capture: str | None, tracking: str = "1", report: str = os.devnull) -> dict:
    if capture:
        shutil.rmtree(capture, ignore_errors=True)
    env = dict(os.environ, HYPA_CACHE_DIR=cache, HYPA_CAPTURE_TRACKING=tracking)
    extra = ["--capture", capture] if capture else []
    t = time.perf_counter()
    p = hypa("run", *extra, "--format", "json", "-o", report, "--", exe, *argv, env=env)
    wall = time.perf_counter() - t
    m = re.search(r"hypa run: (\d+) launch", p.stderr)
    c = re.search(r"captured (\d+) of \d+ launch\w* in .*\(([\d,]+) bytes; ([\d,]+) new chunk", p.stderr)
    if p.returncode != 0 or m is None or (capture and c is None):
        raise Failed(f"{exe} failed under hypa run (exit {p.returncode}):\n{p.stderr[-2000:]}")
    row = {"wall_s": wall, "launches": int(m[1])}
    if c:
        row.update(captured=int(c[1]), bytes=int(c[2].replace(",", "")), chunks=int(c[3].replace(",", "")))
        if row["captured"] != row["launches"]:
            raise Failed(f"captured {row['captured']} of {row['launches']} launches")
    return row


def replay(cap: str, report: str, cache: str) -> int:
    """``hypa profile`` of the capture: the launches whose counts equal the run's (else Failed)."""
    p = hypa("profile", cap, "--format", "json", env=dict(os.environ, HYPA_CACHE_DIR=cache))
    if p.returncode != 0:
        raise Failed(f"hypa profile {cap} failed:\n{p.stderr[-2000:]}")
    ran, again = json.load(open(report)), json.loads(p.stdout)
    bad = [(a["launch"], k) for a, b in zip(ran, again) for k in COUNTS if a[k] != b[k]]
    if len(ran) != len(again) or bad:
        raise Failed(f"the replay of {len(again)} launches differs from the run's {len(ran)}: {bad[:5]}")
    return len(again)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", nargs="?", help="PATH[:ARGS]: a .cu (built with nvcc -cudart shared) or an executable "
                                               "(default: benchmarks/programs/slices.cu)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each kind, alternated (the median is reported)")
    ap.add_argument("--hashed", action="store_true", help="also capture hashing every chunk (no written-page tracking)")
    ap.add_argument("--replay", action="store_true", help="also replay the capture with hypa profile: the same counts")
    ap.add_argument("--small", action="store_true", help="CI: slices.cu with 20 launches, one run of each kind, "
                                                         "hashed too, and the replay")
    args = ap.parse_args()
    program = args.program or (SLICES + ":20" if args.small else SLICES)
    if args.small:
        args.repeat, args.hashed, args.replay = 1, True, True
    path, _, a = program.partition(":")
    if path.endswith(".cu") and shutil.which("nvcc") is None:
        print("skipped: nvcc is not on the PATH (the programs are built with nvcc -cudart shared)")
        return 0
    work = tempfile.mkdtemp(prefix="hypa-capture-bench-")
    try:
        if path.endswith(".cu"):
            exe = os.path.join(work, os.path.splitext(os.path.basename(path))[0])
            subprocess.run(["nvcc", "-cudart", "shared", f"-arch={args.arch}", "-o", exe, path], check=True)
        else:
            exe = path
        argv = [x for x in a.split(",") if x]
        cache, cap, report = os.path.join(work, "cache"), os.path.join(work, "cap"), os.path.join(work, "run.json")
        run(exe, argv, cache, None)  # fills the compile cache: every timed run is warm
        kinds = {"no capture": (None, "1"), "capture": (cap, "1")}
        if args.hashed:
            kinds["capture, hashing every chunk"] = (cap + "-hashed", "0")
        rows: dict[str, list[dict]] = {k: [] for k in kinds}
        for _ in range(args.repeat):
            for k, (c, tracking) in kinds.items():
                rows[k].append(run(exe, argv, cache, c, tracking, report))
        replayed = replay(cap, report, cache) if args.replay else None
        same = None
        if args.hashed:  # tracked or hashed, a capture holds the same files
            same = all(sorted(os.listdir(os.path.join(cap, d))) == sorted(os.listdir(os.path.join(cap + "-hashed", d)))
                       for d in ("chunks", "buffers"))
            if not same:
                raise Failed("the capture with written-page tracking stored other chunks than the one hashing every chunk")
    except Failed as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = sorted(r["wall_s"] for r in rows["no capture"])[args.repeat // 2]
    print(f"{os.path.basename(exe)} {' '.join(argv)}: {rows['no capture'][0]['launches']} launches, "
          f"median of {args.repeat} alternated runs")
    for k, rs in rows.items():
        wall = sorted(r["wall_s"] for r in rs)[args.repeat // 2]
        written = f"  {rs[0]['bytes'] / 1e6:9.1f} MB written, {rs[0]['chunks']} chunks" if "bytes" in rs[0] else ""
        print(f"  {k:<30} {wall:7.2f} s  {wall / base:5.2f}x{written}")
    if same:
        print("tracked and hashed captures stored the same chunks and manifests")
    if replayed is not None:
        print(f"replay: {replayed} launches, the same counts as the run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
