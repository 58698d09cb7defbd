"""Compare the timing estimate (runtime/models/timing.py) with measured kernel times.

    python benchmarks/timing_validate.py benchmarks/gpu/results/kernel_times.h100.json
    python benchmarks/timing_validate.py times.json --arch sm_90 --metric batched_us \\
        --registers measured --overhead measured --json comparison.json
    python benchmarks/timing_validate.py --small     # CI: 8 recorded launches of 4 test kernels

The measurements come from benchmarks/gpu/time_kernels.py (CUDA events on the
GPU).  Every timed launch is emulated here (slice mode, block counts only),
estimated on ``--arch``, and compared:

    error % = 100 * (estimate - measured) / measured

printed per kernel with the estimate's bound, then the median and worst
absolute error.  ``--overhead measured`` replaces the arch file's fixed
launch overhead by the recorded empty-kernel time; ``--registers measured``
takes occupancy from ptxas's register counts (recorded by time_kernels.py)
instead of the SSA-liveness estimate.  The "kernel" columns compare the time
above the launch overhead (estimate cycles / clock vs measured - empty
kernel), which the overhead does not hide for short kernels.

``--small`` (CI) compares the launches of ``SMALL_LAUNCHES`` recorded in
``benchmarks/gpu/results/calibration.h100.json`` (or every launch of the file given; a check
that the comparison runs, not a validation, as these launches are in the calibration set;
``kernel_times.h100.json`` predates time_kernels.py's spacer kernel, so its short launches
carry ~3 us more launch overhead than the arch file's) and exits 1 when one of them fails to
emulate or estimate, or an estimate is not a positive number.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the launch files ``--small`` keeps (small test kernels: four PTX files, eight launches)
SMALL_LAUNCHES = ("tests/kernels/launches/saxpy.toml", "tests/kernels/launches/reduce_shared.toml",
                  "tests/kernels/launches/gemm_tiled.toml", "tests/kernels/launches/histogram.toml")


@dataclass
class Row:
    toml: str
    launch_index: int
    kernel: str
    grid: list[int]
    block: list[int]
    measured_us: float
    estimated_us: float
    error_pct: float
    bound: str
    cycles: float
    kernel_measured_us: float | None
    kernel_estimated_us: float
    kernel_error_pct: float | None
    registers: int
    registers_source: str
    emulate_s: float = 0.0  # slice-mode emulation with the address trace
    estimate_s: float = 0.0  # the estimate itself (cache replay, pipeline graphs)
    plain_emulate_s: float | None = None  # slice-mode emulation without the trace (--cost)


def compare(data: dict, arch: str = "sm_90", metric: str = "median_us", registers: str = "estimated",
            overhead: str = "arch", memory_metrics: bool = False, jobs: int = 1,
            no_trace: bool = False, cost: bool = False) -> tuple[list[Row], list[str]]:
    """Estimate every measured launch of ``data`` (time_kernels.py's JSON)."""
    from hypa.ptxdialect import parse_ptx_file
    from hypa.runtime.emulator.demangle import demangle
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import launches_from_toml
    from hypa.runtime.models.timing import TRACE_RECORDS, load_arch
    from hypa.runtime.report.batch import estimate_run

    a = load_arch(arch)
    empty = (data.get("empty_kernel") or {}).get(metric)
    if overhead == "measured" and empty is None:
        raise SystemExit(f"--overhead measured: the measurements hold no empty_kernel {metric}")
    overhead_us = empty if overhead == "measured" else a.launch_overhead_us
    rows: list[Row] = []
    skipped: list[str] = []
    launch_files: dict[str, list] = {}
    emulators: dict[str, Emulator] = {}
    plain_emulators: dict[str, Emulator] = {}
    for k in data.get("kernels", []):
        where = f"{k.get('toml')}[{k.get('launch_index')}]"
        if metric not in k:
            skipped.append(f"{where}: {k.get('status', 'not timed')}")
            continue
        try:
            toml = str(ROOT / k["toml"])
            if toml not in launch_files:
                launch_files[toml] = launches_from_toml(toml)
            L = launch_files[toml][k["launch_index"]]
            emu = emulators.get(L.file)
            if emu is None:
                emu = emulators[L.file] = Emulator(parse_ptx_file(L.file), memory_metrics=memory_metrics,
                                                   address_trace=0 if no_trace else TRACE_RECORDS)
            t0 = time.perf_counter()
            r = emu.run(L, jobs=jobs)
            t1 = time.perf_counter()
            regs = k.get("num_regs") if registers == "measured" else None
            est = estimate_run(emu, L, r, a, registers=regs)
            t2 = time.perf_counter()
            est_s = t2 - t1
            plain = None
            if cost:
                pe = plain_emulators.get(L.file)
                if pe is None:
                    pe = plain_emulators[L.file] = Emulator(parse_ptx_file(L.file))
                pe.run(L, jobs=jobs)  # compile outside the timing
                t3 = time.perf_counter()
                pe.run(L, jobs=jobs)
                plain = time.perf_counter() - t3
                t0 = time.perf_counter()
                emu.run(L, jobs=jobs)  # the traced run, compiled too
                t1 = time.perf_counter()
        except Exception as e:  # report and go on: one kernel must not stop the comparison
            skipped.append(f"{where}: {type(e).__name__}: {e}")
            continue
        measured = float(k[metric])
        estimated = est.cycles / a.clock_mhz + overhead_us
        kern_est = est.cycles / a.clock_mhz
        kern_meas = measured - empty if empty is not None else None
        rows.append(Row(
            toml=k["toml"], launch_index=k["launch_index"], kernel=demangle(est.kernel).split("(")[0],
            grid=list(L.grid), block=list(L.block), measured_us=measured, estimated_us=estimated,
            error_pct=100.0 * (estimated - measured) / measured, bound=est.bound, cycles=est.cycles,
            kernel_measured_us=kern_meas, kernel_estimated_us=kern_est,
            kernel_error_pct=(100.0 * (kern_est - kern_meas) / kern_meas) if kern_meas and kern_meas > 0.5 else None,
            registers=est.occupancy.registers, registers_source=est.occupancy.registers_source,
            emulate_s=t1 - t0, estimate_s=est_s, plain_emulate_s=plain,
        ))
    return rows, skipped


def percentile(xs: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``xs``."""
    ys = sorted(xs)
    return ys[min(len(ys) - 1, max(0, math.ceil(q / 100 * len(ys)) - 1))]


def summarize(rows: list[Row], long_us: float = 20.0) -> dict:
    """Error statistics for every launch, for launches of at least ``long_us`` measured
    (the time is the kernel's, not the launch's) and for the shorter ones."""
    def stats(errs: list[tuple[float, Row]]) -> dict:
        if not errs:
            return {"n": 0}
        absolute = [abs(e) for e, _ in errs]
        worst_e, worst_r = max(errs, key=lambda t: abs(t[0]))
        return {
            "n": len(errs), "median_abs_error_pct": statistics.median(absolute),
            "p90_abs_error_pct": percentile(absolute, 90),
            "mean_abs_error_pct": statistics.fmean(absolute), "worst_abs_error_pct": abs(worst_e),
            "worst_error_pct": worst_e,
            "worst": f"{worst_r.kernel} {worst_r.toml}[{worst_r.launch_index}]",
            "within_25_pct": sum(1 for x in absolute if x <= 25) / len(absolute),
            "within_50_pct": sum(1 for x in absolute if x <= 50) / len(absolute),
            "off_by_2x": sum(1 for e, _ in errs if e >= 100 or e <= -50),
        }

    timed = [(r.error_pct, r) for r in rows]
    cost = [r for r in rows if r.plain_emulate_s]
    return {"total": stats(timed),
            "long": stats([(e, r) for e, r in timed if r.measured_us >= long_us]),
            "short": stats([(e, r) for e, r in timed if r.measured_us < long_us]),
            "kernel": stats([(r.kernel_error_pct, r) for r in rows if r.kernel_error_pct is not None]),
            "estimate_s_median": statistics.median([r.estimate_s for r in rows]) if rows else None,
            "estimate_over_emulation_max": max((r.estimate_s + r.emulate_s - r.plain_emulate_s) / r.plain_emulate_s
                                               for r in cost) if cost else None,
            "estimate_over_emulation_median": statistics.median([(r.estimate_s + r.emulate_s - r.plain_emulate_s) / r.plain_emulate_s
                                                                 for r in cost]) if cost else None,
            "long_us": long_us}


def render(rows: list[Row], summary: dict, skipped: list[str], arch: str, metric: str) -> str:
    out = [f"timing estimate ({arch}) vs measured {metric}", ""]
    out.append(f"{'kernel':<24} {'launch':<24} {'grid':>14} {'block':>11} {'meas us':>9} {'est us':>9}"
               f" {'err %':>8} {'kern err %':>10}  bound")
    for r in rows:
        g = "x".join(map(str, r.grid))
        b = "x".join(map(str, r.block))
        ke = f"{r.kernel_error_pct:+10.1f}" if r.kernel_error_pct is not None else f"{'-':>10}"
        launch = f"{Path(r.toml).name}[{r.launch_index}]"
        out.append(f"{r.kernel[:24]:<24} {launch[-24:]:<24} {g:>14} {b:>11}"
                   f" {r.measured_us:9.2f} {r.estimated_us:9.2f} {r.error_pct:+8.1f} {ke}  {r.bound}")
    out.append("")
    for key, title in (("total", "time (launch overhead included), every launch"),
                       ("long", f"launches measured >= {summary['long_us']:g} us"),
                       ("short", f"launches measured < {summary['long_us']:g} us"),
                       ("kernel", "time above the launch overhead (kernels measured > 0.5 us above it)")):
        s = summary[key]
        if not s["n"]:
            out.append(f"{title}: no kernels")
            continue
        out.append(f"{title}: {s['n']} launches, median |error| {s['median_abs_error_pct']:.1f} %,"
                   f" 90th percentile {s['p90_abs_error_pct']:.1f} %, mean {s['mean_abs_error_pct']:.1f} %,"
                   f" worst {s['worst_error_pct']:+.1f} % ({s['worst']}), off by 2x or more: {s['off_by_2x']},"
                   f" within 25 %: {100 * s['within_25_pct']:.0f} %, within 50 %: {100 * s['within_50_pct']:.0f} %")
    if summary.get("estimate_s_median") is not None:
        out.append(f"cost: the estimate takes {1000 * summary['estimate_s_median']:.1f} ms per launch (median)")
    if summary.get("estimate_over_emulation_max") is not None:
        out.append(f"cost of trace + estimate over a plain slice-mode emulation: median "
                   f"{summary['estimate_over_emulation_median']:.2f}x, at most {summary['estimate_over_emulation_max']:.2f}x")
    for s in skipped:
        out.append(f"skipped: {s}")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measurements", nargs="?", help="JSON written by benchmarks/gpu/time_kernels.py")
    ap.add_argument("--arch", default="sm_90", help="architecture of the estimate (default sm_90)")
    ap.add_argument("--metric", default="median_us", choices=("median_us", "mean_us", "min_us", "batched_us"))
    ap.add_argument("--registers", default="estimated", choices=("estimated", "measured"),
                    help="occupancy from the SSA-liveness estimate or from ptxas's recorded num_regs")
    ap.add_argument("--overhead", default="arch", choices=("arch", "measured"),
                    help="launch overhead from the arch file or the recorded empty kernel")
    ap.add_argument("--memory-metrics", action="store_true", help="time memory instructions from measured sectors")
    ap.add_argument("--cost", action="store_true",
                    help="also emulate each launch without the trace, to report what trace + estimate cost over it")
    ap.add_argument("--long-us", type=float, default=20.0, help="launches at least this long are reported apart")
    ap.add_argument("--no-trace", action="store_true",
                    help="estimate without the address trace (the cache model): the older bounds")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="emulate CTAs in N processes")
    ap.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    ap.add_argument("--max-median-error", type=float, default=None, metavar="PCT",
                    help="exit with status 1 when the median |error| exceeds PCT")
    ap.add_argument("--small", action="store_true",
                    help="CI: the launches of SMALL_LAUNCHES in benchmarks/gpu/results/calibration.h100.json "
                         "(or every launch of the file given); exit 1 when one fails")
    args = ap.parse_args(argv)
    given = args.measurements
    if args.small and not given:
        args.measurements = str(ROOT / "benchmarks" / "gpu" / "results" / "calibration.h100.json")
    if not args.measurements:
        ap.error("give the measurements (JSON of benchmarks/gpu/time_kernels.py), or --small")
    with open(args.measurements) as f:
        data = json.load(f)
    if args.small and not given:
        data["kernels"] = [k for k in data.get("kernels", []) if k.get("toml") in SMALL_LAUNCHES]
    rows, skipped = compare(data, args.arch, args.metric, args.registers, args.overhead, args.memory_metrics, args.jobs,
                            args.no_trace, args.cost)
    summary = summarize(rows, args.long_us)
    dev = data.get("device", {})
    if dev:
        print(f"measured on {dev.get('name', '?')} ({dev.get('sm_count', '?')} SMs, {dev.get('clock_mhz', '?')} MHz"
              f" max clock), recorded {data.get('recorded', '?')}")
    sys.stdout.write(render(rows, summary, skipped, args.arch, args.metric))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arch": args.arch, "metric": args.metric, "rows": [asdict(r) for r in rows],
                       "summary": summary, "skipped": skipped}, f, indent=2)
            f.write("\n")
    if args.small:
        timed = sum(1 for k in data["kernels"] if args.metric in k)
        bad = [f"{r.toml}[{r.launch_index}]: estimate {r.estimated_us} us" for r in rows
               if not (math.isfinite(r.estimated_us) and r.estimated_us > 0)]
        if len(rows) != timed or bad or not timed:
            print(f"FAIL: {len(rows)} of {timed} timed launches estimated" + "".join(f"; {b}" for b in bad))
            return 1
        print(f"{len(rows)} of {timed} timed launches emulated and estimated")
    if args.max_median_error is not None and summary["total"]["n"]:
        if summary["total"]["median_abs_error_pct"] > args.max_median_error:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
