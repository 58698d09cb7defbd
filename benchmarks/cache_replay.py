"""Time the cache model's replay (runtime/models/cache_model.simulate) on a full trace.

    python benchmarks/cache_replay.py            # native loop, then the Python reference once
    python benchmarks/cache_replay.py --small    # CI: 512 warps, 3 MB written, exit 1 unless native == Python

The trace is synthetic and as long as the estimate keeps (timing.TRACE_RECORDS, 131 K
records): 8192 warps in CTAs of 8, each warp four requests of four sectors -- a load of its
own line, a load of its neighbour warp's (an L1 hit on the same SM), a load bypassing L1 and
a store -- replayed on the H100's geometry (132 SMs, 2 CTAs an SM, a 200 KB L1, the L2's
fitted 25 MB), with the L2 warmed by a replay and filled from 48 MB of copied-in buffers.
The exit status is 1 when the native replay and the Python reference disagree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from hypa.runtime import abi
from hypa.runtime.emulator.memory_trace import MemoryTrace
from hypa.runtime.models.cache_model import simulate


def trace(warps: int = 8192) -> MemoryTrace:
    w = np.arange(warps, dtype=np.uint64)
    requests = [(0, abi.TRACE_LOAD, w), (0, abi.TRACE_LOAD, w ^ np.uint64(1)),
                (1 << 20, abi.TRACE_LOAD_L2, w), (2 << 20, abi.TRACE_STORE, w)]
    secs, infos, keys = [], [], []
    for r, (base, kind, line) in enumerate(requests):
        for j in range(4):
            secs.append(np.uint64(base) + line * np.uint64(4) + np.uint64(j))
            first = np.uint64(abi.TRACE_FIRST if j == 0 else 0)
            infos.append(w | (np.uint64(r) << np.uint64(32)) | (np.uint64(kind) << np.uint64(48)) | first)
            keys.append(w * np.uint64(16) + np.uint64(4 * r + j))
    order = np.argsort(np.concatenate(keys), kind="stable")  # the emulator's order: warp by warp
    return MemoryTrace(np.concatenate(secs)[order], np.concatenate(infos)[order])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--no-python", action="store_true", help="skip the Python reference loop")
    ap.add_argument("--small", action="store_true",
                    help="CI: 512 warps, 3 MB written, 3 repeats, always checked against the Python reference")
    args = ap.parse_args()
    warps = 512 if args.small else 8192
    if args.small:
        args.repeat, args.no_python = min(args.repeat, 3), False
    written = [(0, 2 << 20), (2 << 20, 1 << 20)] if args.small else [(0, 32 << 20), (32 << 20, 16 << 20)]
    t = trace(warps)
    cases = {"warm-up replay": {}, f"{sum(n for _, n in written) >> 20} MB written": {"written": written}}
    print(f"{len(t)} records")
    if len(t) != 16 * warps:  # four requests of four sectors a warp
        print(f"FAIL: the trace has {len(t)} records, not {16 * warps}")
        return 1
    different = 0
    for name, kw in cases.items():
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            st = simulate(t, 8, 2, 132, 200_000, 24939500, **kw)
            times.append(time.perf_counter() - t0)
        rest = times[1:] or times
        line = (f"{name:15s} native: first {times[0] * 1e3:6.1f} ms (compile or load, fresh arrays), then min "
                f"{min(rest) * 1e3:5.1f} / median {statistics.median(rest) * 1e3:5.1f} ms")
        if not args.no_python:
            t0 = time.perf_counter()
            ref = simulate(t, 8, 2, 132, 200_000, 24939500, **kw, native=False)
            line += f"; Python {(time.perf_counter() - t0) * 1e3:7.1f} ms" + ("" if ref == st else " (DIFFERENT)")
            different += ref != st
        print(line)
    if different:
        print(f"FAIL: the native replay differs from the Python reference in {different} of {len(cases)} cases")
        return 1
    if not args.no_python:
        print(f"native replay equals the Python reference in {len(cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
