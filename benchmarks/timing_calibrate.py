"""Fit the timing model's calibrated parameters ([CAL] in runtime/models/arch/*.toml) to measured
kernel times of the calibration set -- never to the validation set.

    python benchmarks/timing_calibrate.py benchmarks/gpu/results/calibration.h100.json
    python benchmarks/timing_calibrate.py times.json --params core.launch_overhead_us,memory.dram_efficiency \\
        --write runtime/models/arch/sm_90.toml
    python benchmarks/timing_calibrate.py --small    # CI: 8 recorded launches, 2 parameters, 1 sweep

Every measured launch (benchmarks/gpu/time_kernels.py's JSON) is emulated once, with the
address trace; then the parameters named by ``--params`` are fitted by coordinate descent
(each in turn over a log-spaced range around its value, a few sweeps) to minimise the mean
absolute log error of the estimated time (launch overhead included) against the measured
median.  The pipeline graphs and cache replays that a parameter does not change are reused
between trials, so a trial costs the final arithmetic of each estimate.  ``--write`` puts
the fitted values into the arch file (the lines keep their comments).

``--small`` (CI) fits ``core.launch_overhead_us`` and ``core.cta_launch_cycles`` in one sweep
to the launches of ``SMALL_LAUNCHES`` recorded in
``benchmarks/gpu/results/calibration.h100.json`` (or every launch of the files given) and exits 1 when a
launch fails to emulate, the loss is not finite or the fit made it worse.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the launch files ``--small`` keeps (as timing_validate.py's: four PTX files, eight launches)
SMALL_LAUNCHES = ("tests/kernels/launches/saxpy.toml", "tests/kernels/launches/reduce_shared.toml",
                  "tests/kernels/launches/gemm_tiled.toml", "tests/kernels/launches/histogram.toml")

#: what is fitted by default, with the range searched (multiplicative around the value)
DEFAULT_PARAMS = [
    "core.launch_overhead_us", "core.cta_launch_cycles", "core.cta_dispatch_cycles", "memory.dram_efficiency", "memory.l2_bytes_per_clk", "memory.l2_sm_bytes_per_clk",
    "memory.atomic_lane_cycles", "memory.atomic_sectors_per_clk", "memory.atomic_same_address_per_clk", "core.bound_overlap", "core.sm_overlap", "memory.l2_effective_bytes",
    "memory.dram_latency", "memory.l2_latency",
]


def get_param(arch, name: str) -> float:
    group, key = name.split(".", 1)
    if group == "core":
        return float(getattr(arch, key))
    if group == "memory":
        return float(arch.memory[key])
    if group == "classes":
        cname, field = key.split(".")
        return float(getattr(arch.classes[cname], field))
    raise SystemExit(f"unknown parameter {name} (core.X, memory.X or classes.NAME.latency)")


def with_param(arch, name: str, value: float):
    group, key = name.split(".", 1)
    if group == "core":
        return dataclasses.replace(arch, **{key: type(getattr(arch, key))(value)})
    if group == "memory":
        mem = dict(arch.memory)
        mem[key] = float(value)
        return dataclasses.replace(arch, memory=mem)
    cname, field = key.split(".")
    classes = dict(arch.classes)
    classes[cname] = dataclasses.replace(classes[cname], **{field: value})
    return dataclasses.replace(arch, classes=classes)


class Reuse:
    """Keeps pipeline graphs and cache replays between trials whose parameters do not
    change them (installed over runtime.timing's KernelTiming and cache_model.simulate)."""

    def __init__(self):
        from hypa.runtime.models import cache_model, timing

        self.timing, self.cache_model = timing, cache_model
        self._kt: dict = {}
        self._sim: dict = {}
        base_kt, base_sim = timing.KernelTiming, cache_model.simulate
        outer = self

        class CachedTiming(base_kt):  # type: ignore[misc,valid-type]
            def __new__(cls, prog, arch, footprint=None, mem_occupancy=None, reuse_hit=0.0, mem_latency=None,
                        block_execs=None):
                a = timing.load_arch(arch)
                key = (id(prog), repr(sorted(a.classes.items())), repr(sorted(a.units.items())),
                       repr(sorted((k, v) for k, v in a.memory.items() if "latency" in k or k == "lsu_bytes_per_clk")),
                       a.issue_per_cycle, a.fetch_per_cycle, a.pair_window, footprint, reuse_hit,
                       repr(sorted((id(k), v) for k, v in (mem_occupancy or {}).items())),
                       repr(sorted((id(k), v) for k, v in (mem_latency or {}).items())), tuple(block_execs or ()))
                kt = outer._kt.get(key)
                if kt is None:
                    kt = base_kt.__new__(cls)
                    base_kt.__init__(kt, prog, a, footprint, mem_occupancy, reuse_hit, mem_latency, block_execs)
                    outer._kt[key] = kt
                return kt

            def __init__(self, *args, **kwargs):  # done in __new__ (once per key)
                pass

        def cached_sim(trace, *args, **kwargs):
            key = (id(trace), args, repr(sorted(kwargs.items())))
            st = outer._sim.get(key)
            if st is None:
                st = outer._sim[key] = base_sim(trace, *args, **kwargs)
            return st

        timing.KernelTiming = CachedTiming
        cache_model.simulate = cached_sim


def emulate_all(data: dict, jobs: int = 1) -> list[tuple]:
    """(launch, result, program, measured us, where) for every timed launch."""
    from hypa.ptxdialect import parse_ptx_file
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import launches_from_toml
    from hypa.runtime.models.timing import TRACE_RECORDS

    out = []
    files: dict[str, list] = {}
    emus: dict[str, Emulator] = {}
    for k in data.get("kernels", []):
        if "median_us" not in k:
            continue
        try:
            toml = str(ROOT / k["toml"]) if not Path(k["toml"]).is_absolute() else k["toml"]
            if toml not in files:
                files[toml] = launches_from_toml(toml)
            L = files[toml][k["launch_index"]]
            emu = emus.get(L.file)
            if emu is None:
                emu = emus[L.file] = Emulator(parse_ptx_file(L.file), address_trace=TRACE_RECORDS)
            r = emu.run(L, jobs=jobs).without_memory()  # the estimate needs the sizes, not the data
            out.append((L, r, emu.program_for(L), float(k["median_us"]), f"{Path(k['toml']).name}[{k['launch_index']}]"))
        except Exception as e:  # one launch must not stop the fit
            print(f"skipped {k['toml']}[{k['launch_index']}]: {type(e).__name__}: {e}", file=sys.stderr)
    return out


def errors(runs: list[tuple], arch) -> list[float]:
    """log(estimate / measured) per launch."""
    from hypa.runtime.models.timing import estimate

    out = []
    for L, r, prog, meas, _where in runs:
        est = estimate(r, L, arch, program=prog)
        out.append(math.log(est.time_us / meas))
    return out


def loss(errs: list[float]) -> float:
    return statistics.fmean(abs(e) for e in errs)


#: physical ranges a fitted value must stay in (a fit that ends at a bound says the model, not
#: the figure, is what is off there)
BOUNDS = {"memory.dram_latency": (350.0, 900.0), "memory.l2_latency": (150.0, 450.0),
          "memory.l1_latency": (20.0, 60.0), "memory.dram_efficiency": (0.5, 1.0),
          "memory.l2_effective_bytes": (16 << 20, 50 << 20)}


def fit(runs: list[tuple], arch, params: list[str], sweeps: int = 3, points: int = 9) -> tuple:
    """Coordinate descent: each parameter over a log-spaced range around its value (kept
    within ``BOUNDS``)."""
    best = loss(errors(runs, arch))
    for sweep in range(sweeps):
        span = 4.0 / (2 ** sweep)  # x/÷ 4, then 2, then sqrt 2
        for name in params:
            v0 = get_param(arch, name)
            if v0 <= 0:
                cands = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5] if "overlap" in name else [0.0]
            else:
                cands = [v0 * span ** (2 * i / (points - 1) - 1) for i in range(points)]
            if "overlap" in name:
                cands = sorted({min(1.0, c) for c in cands})
            if name in BOUNDS:
                lo_b, hi_b = BOUNDS[name]
                cands = sorted({min(hi_b, max(lo_b, c)) for c in cands})
            for v in cands:
                trial = with_param(arch, name, v)
                lo = loss(errors(runs, trial))
                if lo < best - 1e-9:
                    best, arch = lo, trial
            print(f"sweep {sweep + 1} {name:<40} = {get_param(arch, name):.6g}   mean |log err| {best:.4f}", flush=True)
    return arch, best


def write_arch(path: Path, arch, params: list[str]) -> None:
    """Replace ``key = value`` of each fitted parameter in the arch file, comments kept."""
    text = path.read_text()
    for name in params:
        group, key = name.split(".", 1)
        v = get_param(arch, name)
        shown = f"{v:.4g}" if not float(v).is_integer() else str(int(v))
        if group == "classes":
            raise SystemExit("--write does not edit [classes] entries: copy the value by hand")
        pat = re.compile(rf"^(\[{group}\][\s\S]*?^){re.escape(key)}(\s*=\s*)[^#\n]*?(\s*#|\s*$)", re.M)
        text, n = pat.subn(lambda m: f"{m.group(1)}{key}{m.group(2)}{shown}{m.group(3)}", text, count=1)
        if not n:
            raise SystemExit(f"{path}: no '{key} =' line under [{group}]")
    path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measurements", nargs="*", help="JSON written by benchmarks/gpu/time_kernels.py (calibration set)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--params", default=",".join(DEFAULT_PARAMS), help="comma-separated parameters to fit")
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--write", metavar="ARCH_TOML", help="write the fitted values into this arch file")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--small", action="store_true",
                    help="CI: 2 parameters, 1 sweep, the launches of SMALL_LAUNCHES in benchmarks/gpu/results/"
                         "calibration.h100.json (or every launch of the files given); exit 1 when a launch fails")
    args = ap.parse_args(argv)
    given = bool(args.measurements)
    if args.small:
        args.measurements = args.measurements or [str(ROOT / "benchmarks" / "gpu" / "results" / "calibration.h100.json")]
        if args.params == ",".join(DEFAULT_PARAMS):
            args.params = "core.launch_overhead_us,core.cta_launch_cycles"
        args.sweeps = min(args.sweeps, 1)
    elif not args.measurements:
        ap.error("give the measurements (JSON of benchmarks/gpu/time_kernels.py), or --small")
    from hypa.runtime.models.timing import load_arch

    runs = []
    timed = 0
    for m in args.measurements:
        with open(m) as f:
            data = json.load(f)
        if args.small and not given:
            data["kernels"] = [k for k in data.get("kernels", []) if k.get("toml") in SMALL_LAUNCHES]
        timed += sum(1 for k in data.get("kernels", []) if "median_us" in k)
        runs += emulate_all(data, args.jobs)
    if args.small and (len(runs) != timed or not runs):
        print(f"FAIL: {len(runs)} of {timed} timed launches emulated")
        return 1
    Reuse()
    arch = load_arch(args.arch)
    params = [p for p in args.params.split(",") if p]
    e0 = errors(runs, arch)
    print(f"{len(runs)} launches; before: mean |log err| {loss(e0):.4f}, median |error| "
          f"{100 * statistics.median(abs(math.expm1(e)) for e in e0):.1f} %")
    arch, best = fit(runs, arch, params, args.sweeps)
    e1 = errors(runs, arch)
    print(f"after: mean |log err| {best:.4f}, median |error| {100 * statistics.median(abs(math.expm1(e)) for e in e1):.1f} %")
    for (_L, _r, _p, meas, where), a, b in sorted(zip(runs, e0, e1), key=lambda t: -abs(t[2])):
        print(f"  {where:<36} measured {meas:9.2f} us   error before {100 * math.expm1(a):+7.1f} %   after {100 * math.expm1(b):+7.1f} %")
    for name in params:
        print(f"{name} = {get_param(arch, name):.6g}")
    if args.write:
        write_arch(Path(args.write), arch, params)
        print(f"wrote {args.write}")
    if args.small:
        before = loss(e0)
        if not math.isfinite(best) or best > before + 1e-9:
            print(f"FAIL: mean |log err| {before:.4f} -> {best:.4f}")
            return 1
        print(f"{len(runs)} of {timed} timed launches emulated; the fit kept or lowered the error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
