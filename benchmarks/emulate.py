"""Emulator throughput: full mode thread-instructions/s, slice vs full speedup, compile time.

    python benchmarks/emulate.py [--iters 2000] [--threads 65536]
    python benchmarks/emulate.py --processes [--iters 40000] [--fmas 17]
    python benchmarks/emulate.py --racecheck-sample [--mode slice] [--repeats 5]   # also --bounds, --initcheck ...

``--processes`` measures as a user does: whole ``hypa-opt --emulate`` processes (start-up,
parse, preparation, compile and emulation), slice mode beside full mode, cold (an empty
compile cache) and warm; with 17 FMAs per trip the slice is 3 of 20 loop instructions (15%).

The kernel is compute-bound: each thread runs a loop whose body is 24
independent fma.rn.f32 plus the loop control (add, setp, bra): the slice is
the 3 control instructions (about 11% of the body), so slice mode emulates
about a tenth of what full mode does.  Also reports peak RSS for a launch of
1M threads of a memory-bound kernel (saxpy).  Figures are ratios measured in
one run on this machine; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import Launch

FMAS = 24


def compute_kernel(FMAS: int = FMAS) -> str:
    regs = "\n".join(f"\tmov.f32 %f{k}, 0f3F800000;" for k in range(FMAS))
    body = "\n".join(f"\tfma.rn.f32 %f{k}, %f{k}, %f{FMAS}, %f{FMAS + 1};" for k in range(FMAS))
    sums = "\n".join(f"\tadd.f32 %f{FMAS + 2}, %f{FMAS + 2}, %f{k};" for k in range(FMAS))
    return f""".version 8.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u32 spin_iters, .param .u64 spin_out)
{{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.reg .f32 %f<{FMAS + 3}>;
\t.reg .b64 %rd<4>;
\tld.param.u32 %r1, [spin_iters];
\tmov.u32 %r2, 0;
\tmov.f32 %f{FMAS}, 0f3F7FF000;
\tmov.f32 %f{FMAS + 1}, 0f3A800000;
\tmov.f32 %f{FMAS + 2}, 0f00000000;
{regs}
$L_loop:
{body}
\tadd.s32 %r2, %r2, 1;
\tsetp.lt.s32 %p1, %r2, %r1;
\t@%p1 bra $L_loop;
{sums}
\tmov.u32 %r3, %ctaid.x;
\tmov.u32 %r4, %ntid.x;
\tmov.u32 %r5, %tid.x;
\tmad.lo.s32 %r3, %r3, %r4, %r5;
\tld.param.u64 %rd1, [spin_out];
\tmul.wide.u32 %rd2, %r3, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.f32 [%rd3], %f{FMAS + 2};
\tret;
}}
"""


def whole_processes(iters: int, threads: int, fmas: int) -> None:
    """slice vs full mode as whole `hypa-opt` processes, cold and warm compile cache."""
    import shutil
    import subprocess
    import sys
    import tempfile

    d = tempfile.mkdtemp(prefix="hypa-emulate-")
    path = os.path.join(d, "spin.ptx")
    with open(path, "w") as f:
        f.write(compute_kernel(fmas))
    spec = f"grid={threads // 256} block=256 args={iters},out buffer.out=float32:{threads}:zeros"
    print(f"kernel: {fmas} fma.rn.f32 + add, setp, bra per trip, {iters} trips, {threads} threads; "
          f"command: hypa-opt --emulate='{spec}' --mode MODE spin.ptx")
    walls: dict[tuple[str, str], float] = {}
    for mode in ("full", "slice"):
        cache = os.path.join(d, f"cache-{mode}")
        for state in ("cold", "warm"):
            env = dict(os.environ, HYPA_CACHE_DIR=cache)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "hypa.tools.hypa_opt", f"--emulate={spec}", "--mode", mode,
                                "--step-budget", str(10**13),
                                "--format", "json", path], env=env, capture_output=True, text=True)
            walls[mode, state] = time.perf_counter() - t0
            if p.returncode:
                raise SystemExit(p.stderr)
            import json

            r = json.loads(p.stdout)[0]
            print(f"{mode:>5} {state}: {walls[mode, state]:.2f} s wall, thread_inst_executed "
                  f"{r['thread_inst_executed']:.3e}, executed_fraction {r['executed_fraction']:.3f}")
    for state in ("cold", "warm"):
        print(f"slice vs full, whole processes, {state} cache: {walls['full', state] / walls['slice', state]:.1f}x")
    shutil.rmtree(d, ignore_errors=True)


#: column sums, as PolyBench's mean and correlation kernels walk a matrix: thread t adds
#: a[j*cols + t] over the n rows, one load a trip, its address affine in the trip
COLUMN_SUMS = """.version 8.0
.target sm_80
.address_size 64
.visible .entry colsum(.param .u32 n, .param .u32 cols, .param .u64 a, .param .u64 out)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .f32 %f<3>;
\t.reg .b64 %rd<9>;
\tld.param.u32 %r1, [n];
\tld.param.u32 %r5, [cols];
\tld.param.u64 %rd1, [a];
\tld.param.u64 %rd2, [out];
\tcvta.to.global.u64 %rd3, %rd1;
\tmov.u32 %r6, %ctaid.x;
\tmov.u32 %r7, %ntid.x;
\tmov.u32 %r2, %tid.x;
\tmad.lo.s32 %r2, %r6, %r7, %r2;
\tmov.f32 %f1, 0f00000000;
\tmov.u32 %r3, 0;
\tmov.u32 %r4, %r2;
$L_loop:
\tmul.wide.s32 %rd4, %r4, 4;
\tadd.s64 %rd5, %rd3, %rd4;
\tld.global.f32 %f2, [%rd5];
\tadd.f32 %f1, %f1, %f2;
\tadd.s32 %r4, %r4, %r5;
\tadd.s32 %r3, %r3, 1;
\tsetp.lt.s32 %p2, %r3, %r1;
\t@%p2 bra $L_loop;
\tcvta.to.global.u64 %rd6, %rd2;
\tmul.wide.u32 %rd7, %r2, 4;
\tadd.s64 %rd8, %rd6, %rd7;
\tst.global.f32 [%rd8], %f1;
\tret;
}
"""


#: the bundled launches ``--small`` keeps: loops whose checks are hoisted
SMALL_SPECS = ("gemm_tiled", "layernorm", "softmax")
#: bundled specs whose counts depend on how warps interleave (test_kernels_full.SCHEDULE_DEPENDENT)
SCHEDULE_DEPENDENT = {"atomic_cas"}


def _cases(small: bool) -> list:
    """(name, module, launches) of ``bounds_cost``: saxpy, the FMA loop, column sums and every
    bundled launch spec of one PTX file (``small``: smaller launches, three specs)."""
    import glob

    from hypa.ptxdialect import parse_ptx_file
    from hypa.runtime.emulator.launch import launches_from_toml

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    saxpy = os.path.join(root, "examples", "saxpy.ptx")
    n = 1 << (16 if small else 20)
    rows, cols = (64, 4096) if small else (256, 16384)
    threads = 4096 if small else 65536
    cases = [(f"saxpy {n} threads", parse_ptx_file(saxpy),
              [Launch(grid=n // 256, block=256, args=[n, 2.0, "x", "y"],
                      buffers={"x": np.arange(n, dtype=np.float32), "y": np.ones(n, np.float32)})]),
             (f"FMA loop {threads} threads", parse_ptx(compute_kernel()),
              [Launch(kernel="spin", grid=threads // 256, block=256, args=[200, "out"],
                      buffers={"out": np.zeros(threads, np.float32)})]),
             (f"column sums {rows}x{cols}", parse_ptx(COLUMN_SUMS),
              [Launch(kernel="colsum", grid=cols // 256, block=256, args=[rows, cols, "a", "out"],
                      buffers={"a": np.ones(rows * cols, np.float32), "out": np.zeros(cols, np.float32)})])]
    for spec in sorted(glob.glob(os.path.join(root, "tests", "kernels", "launches", "*.toml"))):
        if small and os.path.basename(spec)[:-5] not in SMALL_SPECS:
            continue
        launches = launches_from_toml(spec)
        files = {L.file for L in launches}
        if len(files) != 1 or None in files:
            continue
        cases.append((os.path.basename(spec)[:-5], parse_ptx_file(files.pop()), launches))
    return cases


def _warm_up(mode: str, **kw) -> None:
    """LLVM's start-up and the helpers every kernel calls, compiled before any measured compile."""
    Emulator(parse_ptx(compute_kernel()), mode=mode, **kw).run(
        Launch(kernel="spin", grid=1, block=32, args=[1, "out"], buffers={"out": np.zeros(32, np.float32)}))


def compile_all(kw: dict, mode: str, small: bool) -> None:
    """Child of ``cold_compile``: compile every case's kernels with the options ``kw`` in this
    new process (no compile cache) at both JIT tiers, and print the CPU seconds per case and
    tier as JSON (CPU time: the machine's other load changes it less than wall time)."""
    import json

    from hypa.runtime.emulator.jit import compile_ir
    from hypa.runtime.emulator.lowering import lower

    os.environ["HYPA_NO_CACHE"] = "1"
    cases = _cases(small)
    _warm_up(mode, **kw)
    out = {}
    for name, module, launches in cases:
        emu = Emulator(module, mode=mode, **kw)
        progs = {}
        for L in launches:
            p = emu.program_for(L)
            progs[p.key] = p
        seconds = [0.0, 0.0]
        for p in progs.values():
            p.materialize()
            for k, tier in enumerate(("baseline", "optimized")):
                t0 = time.process_time()
                compile_ir(p.key, lambda: lower(p, tier), tier)  # noqa: B023 (called here)
                seconds[k] += time.process_time() - t0
        out[name] = seconds
    print(json.dumps(out))


def cold_compile(variants: dict, mode: str, small: bool, repeats: int) -> None:
    """Every case's kernels compiled cold at both tiers, in a new process per variant
    (alternating, ``repeats`` each, the median per case and tier): no variant compiles helpers
    the other one then reuses.  The baseline tier is what every launch pays; the optimized one
    what a long launch pays besides (``runtime/emulator/jit.py``)."""
    import json
    import statistics
    import subprocess
    import sys

    got: dict[str, list[dict]] = {v: [] for v in variants}
    for _ in range(repeats):
        for v, kw in variants.items():
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--compile-all", json.dumps(kw),
                                "--mode", mode] + (["--small"] if small else []),
                               capture_output=True, text=True, env=dict(os.environ, HYPA_NO_CACHE="1"))
            if p.returncode:
                raise SystemExit(p.stderr)
            got[v].append(json.loads(p.stdout.strip().splitlines()[-1]))
    for k, tier in enumerate(("baseline", "optimized")):
        med = {v: {name: statistics.median(r[name][k] for r in runs) for name in runs[0]} for v, runs in got.items()}
        on, off = sum(med["on"].values()), sum(med["off"].values())
        worst = max(med["on"], key=lambda n: med["on"][n] / med["off"][n] if med["off"][n] else 0)
        print(f"cold compile, {tier} tier, CPU time, a new process per variant (median of {repeats}): "
              f"{on:.2f} s on / {off:.2f} s off = {on / off:.2f}x; the most: {worst} "
              f"{med['on'][worst] / med['off'][worst]:.2f}x")


def bounds_cost(repeats: int, option: str = "bounds_check", mode: str = "slice", small: bool = False) -> int:
    """``mode`` with and without an ``Emulator`` option (``bounds_check``: slice mode's bounds
    checks, also with them but without hoisting them out of loops; ``initcheck``: the shadow
    bytes of shared/local memory; ``racecheck``: its shadow of shared memory; ``racecheck_sample``:
    racecheck's sample, each repeat checking the first CTA of each kernel's first launch again,
    as each new process does), the same launches in one process: every bundled launch
    spec (tests/kernels/launches), saxpy on 1M threads (three accesses a thread, all outside
    the slice), the FMA loop (no access in the loop) and column sums (a loop of loads whose
    checks are hoisted).  Emulation time is the median of ``repeats`` runs of the compiled
    code, alternating the variants, in CPU seconds of this process (one process runs them: its
    wall time on a quiet machine, and less moved by the load of a shared one); compile time is
    the first run's.  ``small``: smaller
    launches and three bundled specs.  Returns 1 when the variants count differently."""
    import statistics

    os.environ.setdefault("HYPA_NO_CACHE", "1")
    cases = _cases(small)
    if option == "bounds_check":
        variants = {"on": {"bounds_check": True}, "unhoisted": {"bounds_check": True, "hoist_checks": False},
                    "off": {"bounds_check": False}}
    elif option == "schedule":  # "on": the interleaved schedule, "off": the warp schedule
        variants = {"on": {"schedule": "interleave"}, "off": {"schedule": "warp"}}
    else:
        variants = {"on": {option: True}, "off": {option: False}}
    tot = dict.fromkeys(variants, 0.0)
    ctot = dict.fromkeys(variants, 0.0)
    for kw in variants.values():  # LLVM's start-up and the shared helpers are not the first case's compile
        _warm_up(mode, **kw)
    print(f"{mode} mode, {option} on vs off" + (" (unhoisted: on, every access checked where it is)"
                                                if "unhoisted" in variants else ""))
    head = f"{'launches':<26} {'on ms':>9}" + (f" {'unhoisted ms':>13}" if "unhoisted" in variants else "")
    print(head + f" {'off ms':>9} {'on/off':>7}" + (f" {'unhoisted/off':>14}" if "unhoisted" in variants else "")
          + f" {'compile on/off':>15}" + (f" {'unhoisted/off':>14}" if "unhoisted" in variants else ""))
    for name, module, launches in cases:
        emus = {v: Emulator(module, mode=mode, **kw) for v, kw in variants.items()}
        comp = {v: sum(emu.run(L).compile_ms for L in launches) / 1000 for v, emu in emus.items()}
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(repeats):
            for v, emu in emus.items():
                emu.sample_races_again()  # racecheck's sample: each repeat's first launches, as a new process's
                t0 = time.process_time()
                for L in launches:
                    emu.run(L)
                times[v].append(time.process_time() - t0)
        med = {v: statistics.median(t) for v, t in times.items()}
        for v in variants:
            tot[v] += med[v]
            ctot[v] += comp[v]
        row = f"{name:<26} {1000 * med['on']:>9.2f}"
        if "unhoisted" in variants:
            row += f" {1000 * med['unhoisted']:>13.2f}"
        row += f" {1000 * med['off']:>9.2f} {med['on'] / med['off']:>7.2f}"
        if "unhoisted" in variants:
            row += f" {med['unhoisted'] / med['off']:>14.2f}"
        row += f" {comp['on'] / comp['off'] if comp['off'] else float('nan'):>15.2f}"
        if "unhoisted" in variants:
            row += f" {comp['unhoisted'] / comp['off'] if comp['off'] else float('nan'):>14.2f}"
        print(row)
        for emu in emus.values():
            emu.sample_races_again()
        runs = {v: [emu.run(L) for L in launches] for v, emu in emus.items()}
        counts = {v: [r.metrics.values for r in rs] for v, rs in runs.items()}
        for r in runs["on"]:
            for note in r.notes:
                if note.startswith("racecheck:"):
                    print(f"  {name}: {note}")
        if option == "schedule" and name in SCHEDULE_DEPENDENT:
            continue  # contended CAS loops take as many trips as the interleaving makes them
        if any(c != counts["off"] for c in counts.values()):
            print(f"FAIL {name}: the counts differ with {option} " + ", ".join(variants))
            return 1
    line = f"all: emulation {tot['on']:.3f} s on / {tot['off']:.3f} s off = {tot['on'] / tot['off']:.2f}x"
    if "unhoisted" in variants:
        line += f" (unhoisted {tot['unhoisted']:.3f} s = {tot['unhoisted'] / tot['off']:.2f}x)"
    line += f"; compile {ctot['on']:.2f} s / {ctot['off']:.2f} s = {ctot['on'] / ctot['off']:.2f}x"
    if "unhoisted" in variants:
        line += f" (unhoisted {ctot['unhoisted']:.2f} s = {ctot['unhoisted'] / ctot['off']:.2f}x)"
    print(line)
    print(f"{len(cases)} cases, the same counts with {option} " + " and ".join(variants))
    if option == "racecheck_sample":  # helpers compiled by one variant are reused by the other above
        cold_compile(variants, mode, small, repeats)
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--threads", type=int, default=65536)
    ap.add_argument("--processes", action="store_true", help="whole hypa-opt processes, slice vs full mode")
    ap.add_argument("--fmas", type=int, default=17, help="with --processes: FMAs per loop trip (default 17: 15%% slice)")
    ap.add_argument("--bounds", action="store_true",
                    help="slice mode with bounds checks (hoisted out of loops, and not) vs without "
                         "(--no-bounds-check) on the bundled launches")
    ap.add_argument("--initcheck", action="store_true",
                    help="initcheck (shadow bytes of shared/local memory) on vs off (--no-initcheck), full mode")
    ap.add_argument("--racecheck", action="store_true",
                    help="racecheck (shared-memory hazards) on vs off (the default), full mode; hazards found are "
                         "printed (the bundled kernels have none)")
    ap.add_argument("--racecheck-sample", action="store_true",
                    help="racecheck's sample (the first CTA of each kernel's first launch; on by default) vs "
                         "--no-racecheck-sample, full mode (--mode slice: slice mode); each repeat samples again")
    ap.add_argument("--mode", choices=("full", "slice"), default="full",
                    help="with --initcheck/--racecheck/--racecheck-sample/--schedule: the mode measured (default full)")
    ap.add_argument("--schedule", action="store_true",
                    help="the interleaved warp schedule (hypa run's default) vs the warp schedule, full mode; the "
                         "counts must agree but for contended CAS loops")
    ap.add_argument("--repeats", type=int, default=5,
                    help="with --bounds/--initcheck/--racecheck/--racecheck-sample/--schedule: runs of each variant "
                         "(median)")
    ap.add_argument("--small", action="store_true",
                    help="with --bounds/--initcheck/--racecheck/--racecheck-sample/--schedule: smaller launches, three "
                         "bundled specs, one run of "
                         "each variant")
    ap.add_argument("--compile-all", metavar="JSON", help=argparse.SUPPRESS)  # cold_compile's child
    a = ap.parse_args()
    if a.compile_all:
        import json

        compile_all(json.loads(a.compile_all), a.mode, a.small)
        return
    if a.bounds or a.initcheck or a.racecheck or a.racecheck_sample or a.schedule:
        repeats = 1 if a.small else a.repeats
        option = ("initcheck" if a.initcheck else "schedule" if a.schedule else
                  "racecheck_sample" if a.racecheck_sample else "racecheck")
        args = (repeats, "bounds_check", "slice") if a.bounds else (repeats, option, a.mode)
        raise SystemExit(bounds_cost(*args, small=a.small))
    if a.processes:
        whole_processes(a.iters or 40000, a.threads, a.fmas)
        return
    a.iters = a.iters or 2000
    os.environ.setdefault("HYPA_NO_CACHE", "1")
    m = parse_ptx(compute_kernel())
    block = 256
    grid = a.threads // block
    res = {}
    for mode in ("full", "slice"):
        out = np.zeros(a.threads, np.float32)
        emu = Emulator(m, mode=mode)
        L = Launch(kernel="spin", grid=grid, block=block, args=[a.iters, "out"], buffers={"out": out})
        t0 = time.perf_counter()
        r = emu.run(L)  # includes compilation
        first = time.perf_counter() - t0
        compile_s = r.compile_ms / 1000  # the second run reuses the compiled code
        t0 = time.perf_counter()
        r = emu.run(L)
        second = time.perf_counter() - t0
        res[mode] = (r, first, second)
        ti = r.metrics["thread_inst_executed"]
        print(f"{mode:>5}: {ti:.3e} thread-instructions in {second:.3f} s "
              f"({ti / second:.3e} /s; emulated {r.metrics['executed_fraction'] * ti / second:.3e} /s), "
              f"compile+first run {first:.3f} s, compile {compile_s:.3f} s")
    full, slc = res["full"], res["slice"]
    assert full[0].metrics.values == {**slc[0].metrics.values, "executed_fraction": full[0].metrics["executed_fraction"]}
    print(f"slice fraction (static): {3}/{FMAS * 2 + 3 + 12} ; executed fraction {slc[0].metrics['executed_fraction']:.3f}")
    print(f"slice vs full speedup (end to end, compiled): {full[2] / slc[2]:.1f}x")
    # peak RSS for 1M threads of saxpy
    saxpy = open(os.path.join(os.path.dirname(__file__), "..", "examples", "saxpy.ptx")).read()
    n = 1 << 20
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    r = Emulator(parse_ptx(saxpy), mode="slice").run(
        Launch(grid=n // 256, block=256, args=[n, 2.0, "x", "y"], buffers={"x": x, "y": y}))
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"saxpy 1M threads (slice): {dt:.3f} s, peak RSS {after / 1024:.0f} MiB (grew {max(0, after - before) / 1024:.0f} MiB; buffers 8 MiB)")


if __name__ == "__main__":
    main()
