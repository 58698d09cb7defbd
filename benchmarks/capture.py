#!/usr/bin/env python3
"""``hypa run --capture`` against the same run without it: wall time (whole processes, runs
alternated, median), bytes written, and the capture hashing every chunk (``--hashed``: what
kernels without written-page tracking, and ``-j``, do).

    python benchmarks/capture.py                                          # slices.cu, 200 launches
    python benchmarks/capture.py benchmarks/programs/slices.cu:20 --repeat 1   # the small mode
    python benchmarks/capture.py /tmp/3DConvolution --hashed              # an executable

A program is ``PATH[:ARGS]`` (ARGS separated by commas); a ``.cu`` is built with
``nvcc -cudart shared``.  The issue's target: at most 2x the wall time, at most 1 GB written,
for PolyBench/GPU's 3DConvolution.  Exits 1 where a run fails or the capture's launch count
differs from the run's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build(src: str, out_dir: str, arch: str) -> str:
    exe = os.path.join(out_dir, os.path.splitext(os.path.basename(src))[0])
    subprocess.run(["nvcc", "-cudart", "shared", f"-arch={arch}", "-o", exe, src], check=True)
    return exe


def run(exe: str, argv: list[str], cache: str, capture: str | None, tracking: str = "1") -> dict:
    if capture:
        shutil.rmtree(capture, ignore_errors=True)
    env = dict(os.environ, HYPA_CACHE_DIR=cache, HYPA_CAPTURE_TRACKING=tracking)
    extra = ["--capture", capture] if capture else []
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "hypa.tools.hypa_cli", "run", *extra, "-o", os.devnull, "--", exe, *argv],
                       env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    m = re.search(r"hypa run: (\d+) launch", p.stderr)
    c = re.search(r"captured (\d+) of \d+ launch\w* in .*\(([\d,]+) bytes; ([\d,]+) new chunk", p.stderr)
    if p.returncode != 0 or m is None or (capture and c is None):
        sys.exit(f"{exe} failed under hypa run (exit {p.returncode}):\n{p.stderr[-2000:]}")
    row = {"wall_s": wall, "launches": int(m[1])}
    if c:
        row.update(captured=int(c[1]), bytes=int(c[2].replace(",", "")), chunks=int(c[3].replace(",", "")))
        if row["captured"] != row["launches"]:
            sys.exit(f"captured {row['captured']} of {row['launches']} launches")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", nargs="?", default=os.path.join(HERE, "programs", "slices.cu"),
                    help="PATH[:ARGS]: a .cu (built with nvcc -cudart shared) or an executable (default: slices.cu)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each kind, alternated (the median is reported)")
    ap.add_argument("--hashed", action="store_true", help="also capture hashing every chunk (no written-page tracking)")
    args = ap.parse_args()
    path, _, a = args.program.partition(":")
    work = tempfile.mkdtemp(prefix="hypa-capture-bench-")
    try:
        exe = build(path, work, args.arch) if path.endswith(".cu") else path
        argv = [x for x in a.split(",") if x]
        cache, cap = os.path.join(work, "cache"), os.path.join(work, "cap")
        run(exe, argv, cache, None)  # fills the compile cache: every timed run is warm
        kinds = {"no capture": (None, "1"), "capture": (cap, "1")}
        if args.hashed:
            kinds["capture, hashing every chunk"] = (cap, "0")
        rows: dict[str, list[dict]] = {k: [] for k in kinds}
        for _ in range(args.repeat):
            for k, (c, tracking) in kinds.items():
                rows[k].append(run(exe, argv, cache, c, tracking))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = sorted(r["wall_s"] for r in rows["no capture"])[args.repeat // 2]
    print(f"{os.path.basename(exe)} {' '.join(argv)}: {rows['no capture'][0]['launches']} launches, "
          f"median of {args.repeat} alternated runs")
    for k, rs in rows.items():
        wall = sorted(r["wall_s"] for r in rs)[args.repeat // 2]
        written = f"  {rs[0]['bytes'] / 1e6:9.1f} MB written, {rs[0]['chunks']} chunks" if "bytes" in rs[0] else ""
        print(f"  {k:<30} {wall:7.2f} s  {wall / base:5.2f}x{written}")


if __name__ == "__main__":
    main()
