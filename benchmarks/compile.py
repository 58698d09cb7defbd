"""Cold compilation: what a kernel costs before its first CTA runs, by phase.

    python benchmarks/compile.py [--small] [--instructions 1200] [--kernels 24]
        [--modules MODULE.ptx ...] [--launch SPEC.toml ...] [--hypa-cpp PATH] [--repeat 3]
        [--before DIR]

Three measurements, each on an empty compile cache:

1. **kernel**: a generated kernel of ``--instructions`` PTX instructions (``big_kernel``:
   stages of address arithmetic, two global loads, an FMA, a data-dependent branch around a
   store: loads in the slice, stores bounds-checked) in a new process, slice and full mode:
   CPU seconds to prepare (slice), lower (LLVM IR text) and compile it at the baseline tier
   (the helper functions included: a cold cache), and LLVM instructions per PTX
   instruction.  The optimized tier's lowering and compile are timed too.
2. **module**: whole ``hypa profile --timing`` processes on a generated module of
   ``--kernels`` distinct kernels (or the ``--modules`` given, with their ``--launch``
   specs), cold then warm: wall seconds and the phases ``--timing`` reports; with
   ``--hypa-cpp``, HyPA's C++ analyser on the same files in the same run.
3. **tiers**: one launch of a loop kernel at growing grids, whole processes, cold, under
   ``HYPA_JIT=baseline``, ``optimized`` and ``auto``: auto's wall time over the better of the
   other two (the policy's goal: at most 1.2).  Full mode: every instruction runs.

``--before DIR`` runs the same measurements with the ``hypa`` package of another checkout
(DIR holds a ``hypa`` folder or link: ``git archive REV | tar -x -C DIR/hypa``) in the same
run, alternating, and prints the ratios.  ``--small`` (CI) uses a 300-instruction kernel,
6 kernels and two grids, and finishes in well under a minute.  Nothing here asserts a
time: the figures are ratios measured side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# -- generated inputs --------------------------------------------------------------------------


def big_kernel(instructions: int = 1200, name: str = "big", seed: int = 0) -> str:
    """A kernel of ``instructions`` PTX instructions (within a few): stages of index
    arithmetic, two global loads, an FMA and a data-dependent branch around a store.
    ``seed`` varies its constants, so kernels of one module differ."""
    body: list[str] = []
    count = {"r": 0, "f": 0, "p": 0, "rd": 0}

    def reg(kind: str) -> str:
        count[kind] += 1
        return f"%{kind}{count[kind]}"

    a, b, c = (reg("rd") for _ in range(3))
    body += [f"ld.param.u64 {r}, [{name}_param_{i}];" for i, r in enumerate((a, b, c))]
    ga, gb, gc = (reg("rd") for _ in range(3))
    body += [f"cvta.to.global.u64 {g}, {r};" for g, r in ((ga, a), (gb, b), (gc, c))]
    tid, cta, ntid, gid = (reg("r") for _ in range(4))
    body += [f"mov.u32 {tid}, %tid.x;", f"mov.u32 {cta}, %ctaid.x;", f"mov.u32 {ntid}, %ntid.x;",
             f"mad.lo.s32 {gid}, {cta}, {ntid}, {tid};"]
    acc = reg("f")
    body.append(f"mov.f32 {acc}, 0f00000000;")
    stage = 0
    while sum(1 for x in body if not x.endswith(":")) + 16 <= instructions - 1:
        stage += 1
        i1, i2, off, pa, pb, pc = reg("r"), reg("r"), reg("rd"), reg("rd"), reg("rd"), reg("rd")
        x, y, t, u, v, acc2 = (reg("f") for _ in range(6))
        q = reg("p")
        body += [
            f"add.s32 {i1}, {gid}, {stage * 37 + seed};",
            f"and.b32 {i2}, {i1}, 1023;",
            f"mul.wide.u32 {off}, {i2}, 4;",
            f"add.s64 {pa}, {ga}, {off};",
            f"ld.global.f32 {x}, [{pa}];",
            f"add.s64 {pb}, {gb}, {off};",
            f"ld.global.f32 {y}, [{pb}];",
            f"fma.rn.f32 {t}, {x}, {y}, {acc};",
            f"setp.gt.f32 {q}, {t}, 0f3F800000;",
            f"@{q} bra $L_{stage};",
            f"mul.f32 {u}, {t}, 0f3F000000;",
            f"sub.f32 {v}, {u}, {x};",
            f"add.s64 {pc}, {gc}, {off};",
            f"st.global.f32 [{pc}], {v};",
            f"$L_{stage}:",
            f"add.f32 {acc2}, {acc}, {t};",
        ]
        acc = acc2
    while sum(1 for x in body if not x.endswith(":")) < instructions - 1:
        r = reg("r")
        body.append(f"add.s32 {r}, {gid}, {len(body)};")
    body.append("ret;")
    decls = (f"\t.reg .pred %p<{count['p'] + 1}>;\n\t.reg .f32 %f<{count['f'] + 1}>;\n"
             f"\t.reg .b32 %r<{count['r'] + 1}>;\n\t.reg .b64 %rd<{count['rd'] + 1}>;\n")
    text = "\n".join(line if line.endswith(":") else "\t" + line for line in body)
    params = ",\n".join(f"\t.param .u64 {name}_param_{i}" for i in range(3))
    return f".visible .entry {name}(\n{params}\n)\n{{\n{decls}\n{text}\n}}\n"


HEADER = ".version 7.0\n.target sm_70\n.address_size 64\n\n"


def loop_kernel(name: str = "loop") -> str:
    """A kernel whose threads each loop 256 times over loads, FMAs and a store: long enough
    per CTA that the optimized tier repays its compile on large grids."""
    return HEADER + f""".visible .entry {name}(.param .u64 {name}_x, .param .u64 {name}_y)
{{
\t.reg .pred %p<3>;
\t.reg .f32 %f<8>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [{name}_x];
\tld.param.u64 %rd2, [{name}_y];
\tcvta.to.global.u64 %rd3, %rd1;
\tcvta.to.global.u64 %rd4, %rd2;
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd5, %r1, 4;
\tadd.s64 %rd6, %rd3, %rd5;
\tmov.f32 %f1, 0f00000000;
\tmov.u32 %r2, 0;
$L_loop:
\tld.global.f32 %f2, [%rd6];
\tfma.rn.f32 %f1, %f2, %f2, %f1;
\tmul.f32 %f3, %f1, 0f3F000000;
\tsetp.gt.f32 %p2, %f3, 0f4B000000;
\t@%p2 mov.f32 %f1, 0f00000000;
\tadd.s32 %r2, %r2, 1;
\tsetp.lt.u32 %p1, %r2, 256;
\t@%p1 bra $L_loop;
\tadd.s64 %rd7, %rd4, %rd5;
\tst.global.f32 [%rd7], %f1;
\tret;
}}
"""


def kernel_spec(name: str, nparams: int, grid: int, block: int, buffer_bytes: int) -> str:
    bufs = [f"{name}_b{i}" for i in range(nparams)]
    parts = [f'[[launch]]\nkernel = "{name}"\ngrid = {grid}\nblock = {block}\nargs = [{", ".join(map(repr, bufs))}]\n'
             .replace("'", '"')]
    parts += [f'[buffers.{b}]\ndtype = "uint8"\ncount = {buffer_bytes}\n' for b in bufs]
    return "\n".join(parts)


# -- running -------------------------------------------------------------------------------------


def _env(before: str | None, cache: str | None = None, **extra) -> dict:
    env = dict(os.environ, **extra)
    if before:
        env["PYTHONPATH"] = before + os.pathsep + env.get("PYTHONPATH", "")
    if cache:
        env["HYPA_CACHE_DIR"] = cache
    return env


_IN_PROCESS = r"""
import json, os, sys, time
from hypa.ptxdialect.parser import parse_ptx
from hypa.runtime.emulator import jit
from hypa.runtime.emulator.emulator import Emulator
try:
    from hypa.runtime.emulator.lowering import lower
except ImportError:  # a checkout from before helper functions
    from hypa.runtime.emulator.lowering import build_module
    lower = lambda p: str(build_module(p))
path, mode, tiers = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
clock = time.process_time
out = {}
emu = Emulator(parse_ptx(open(path).read()), mode=mode)
t0 = clock(); prog = emu.program(None); t1 = clock()
lowered = lower(prog); t2 = clock()
text = lowered if isinstance(lowered, str) else lowered.text
helpers = [] if isinstance(lowered, str) else lowered.helpers
llvm_lines = sum(1 for line in text.splitlines() + [l for h in helpers for l in h[1].splitlines()]
                 if line.startswith("  ") and not line.lstrip().startswith(";"))
out.update(instructions=len(prog.instructions), llvm_instructions=llvm_lines, prepare=t1 - t0, lower=t2 - t1)
for tier in tiers:
    t3 = clock()
    if tier != "baseline":  # its own lowering (accesses inline), where the checkout has one
        try:
            lowered = lower(prog, tier)
        except TypeError:
            pass
    jit.compile_ir(prog.key, lowered, tier)
    out["compile_" + tier] = clock() - t3
print(json.dumps(out))
"""


def in_process(ptx: str, mode: str, tiers: list[str], before: str | None, work: str) -> dict:
    """prepare / lower / compile seconds (CPU time of the process) of the only kernel of
    ``ptx``, in a new process with an empty cache."""
    path = os.path.join(work, "kernel.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    cache = tempfile.mkdtemp(prefix="cache-", dir=work)
    try:
        p = subprocess.run([sys.executable, "-c", _IN_PROCESS, path, mode, ",".join(tiers)], env=_env(before, cache),
                           capture_output=True, text=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit("compile.py: the in-process measurement failed")
    return json.loads(p.stdout.strip().splitlines()[-1])


def parse_timing(stderr: str) -> dict[str, float]:
    phases: dict[str, float] = {}
    for line in stderr.splitlines():
        m = re.match(r"\s+([\w-]+)\s+([\d.]+)\s+[\d.]+%", line)
        if m:
            phases[m.group(1)] = float(m.group(2))
    return phases


def profile(module: str, spec: str, cache: str, before: str | None, mode: str = "slice",
            **env) -> tuple[float, dict[str, float]]:
    """One whole ``hypa profile --timing`` process: wall seconds and its phases."""
    cmd = [sys.executable, "-m", "hypa.tools.hypa_cli", "profile", module, "--launch", spec, "--format", "csv",
           "-o", os.devnull, "--timing", "--no-progress", "--mode", mode]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=_env(before, cache, **env), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1) or "timing report" not in p.stderr:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"compile.py: hypa profile failed on {module} (exit {p.returncode})")
    return wall, parse_timing(p.stderr)


def hypa_cpp(binary: str, module: str) -> float:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        p = subprocess.run([binary, "-csv", os.path.abspath(module)], cwd=d, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"compile.py: {binary} failed on {module} (exit {p.returncode})")
    return wall


def median(xs: list[float]) -> float:
    return statistics.median(xs)


# -- the three measurements ----------------------------------------------------------------------


def measure_kernel(args, work: str) -> None:
    ptx = HEADER + big_kernel(args.instructions)
    versions = [("now", None)] + ([("before", args.before)] if args.before else [])
    print(f"## A generated kernel of {args.instructions} PTX instructions (in-process CPU seconds, cold cache)\n")
    print("| version | mode | LLVM instr / PTX instr | prepare | lower | compile (baseline) | prepare+lower+compile "
          "| lower+compile (optimized) |")
    print("|---|---|---|---|---|---|---|---|")
    rows = {}
    for mode in ("slice", "full"):
        runs: dict[str, list[dict]] = {v: [] for v, _ in versions}
        for _ in range(args.repeat):
            for v, tree in versions:  # alternating, so both see the same load
                runs[v].append(in_process(ptx, mode, ["baseline", "optimized"], tree, work))
        for v, _ in versions:
            r = {k: median([x[k] for x in runs[v]]) for k in runs[v][0]}
            total = r["prepare"] + r["lower"] + r["compile_baseline"]
            rows[(v, mode)] = total
            print(f"| {v} | {mode} | {r['llvm_instructions'] / r['instructions']:.1f} | {r['prepare']:.2f} | "
                  f"{r['lower']:.2f} | {r['compile_baseline']:.2f} | {total:.2f} | {r['compile_optimized']:.2f} |")
    if args.before:
        for mode in ("slice", "full"):
            print(f"\n{mode} mode: before / now = {rows[('before', mode)] / rows[('now', mode)]:.1f}x", end="")
        print()
    print()


def generated_module(kernels: int, instructions: int) -> str:
    return HEADER + "\n".join(big_kernel(instructions, f"k{i}", seed=i) for i in range(kernels))


def measure_module(args, work: str) -> None:
    inputs = []
    if args.modules:
        for i, m in enumerate(args.modules):
            if i < len(args.launch):
                spec = args.launch[i]
            else:
                sys.path.insert(0, HERE)
                from workload import generate_spec

                spec = os.path.join(work, os.path.basename(m) + ".toml")
                with open(spec, "w") as f:
                    f.write(generate_spec(open(m).read(), 4 << 20))
            inputs.append((m, spec))
    else:
        m = os.path.join(work, f"generated_{args.kernels}.ptx")
        with open(m, "w") as f:
            f.write(generated_module(args.kernels, args.module_instructions))
        spec = os.path.join(work, f"generated_{args.kernels}.toml")
        with open(spec, "w") as f:
            f.write("\n".join(kernel_spec(f"k{i}", 3, 1, 128, 4096) for i in range(args.kernels)))
        inputs.append((m, spec))
    versions = [("now", None)] + ([("before", args.before)] if args.before else [])
    phases = ("start-up", "prepare", "lower", "compile", "emulate")
    print("## Whole `hypa profile --timing` processes (wall seconds; phases from --timing)\n")
    print("| module | version | cache | wall | " + " | ".join(phases) + " |")
    print("|---|---|---|---|" + "---|" * len(phases))
    summary = []
    for m, spec in inputs:
        name = os.path.basename(m)
        res: dict[tuple[str, str], list] = {}
        for _ in range(args.repeat):
            for v, tree in versions:
                cache = tempfile.mkdtemp(prefix="cache-", dir=work)
                try:
                    res.setdefault((v, "cold"), []).append(profile(m, spec, cache, tree))
                    res.setdefault((v, "warm"), []).append(profile(m, spec, cache, tree))
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
        cpp = median([hypa_cpp(args.hypa_cpp, m) for _ in range(args.repeat)]) if args.hypa_cpp else None
        walls = {}
        for (v, c), runs in res.items():
            walls[(v, c)] = median([w for w, _ in runs])
            ph = {p: median([r[1].get(p, 0.0) for r in runs]) for p in phases}
            print(f"| {name} | {v} | {c} | {walls[(v, c)]:.2f} | " + " | ".join(f"{ph[p]:.2f}" for p in phases) + " |")
        summary.append((name, walls, cpp))
    print()
    for name, walls, cpp in summary:
        line = f"{name}: cold {walls[('now', 'cold')]:.2f} s, warm {walls[('now', 'warm')]:.2f} s"
        if args.before:
            line += (f"; before / now: cold {walls[('before', 'cold')] / walls[('now', 'cold')]:.2f}x, "
                     f"warm {walls[('before', 'warm')] / walls[('now', 'warm')]:.2f}x")
        if cpp:
            line += (f"; HyPA C++ {cpp:.2f} s: cold / C++ {walls[('now', 'cold')] / cpp:.2f}, "
                     f"warm / C++ {walls[('now', 'warm')] / cpp:.2f}")
        print(line)
    print()


def measure_tiers(args, work: str) -> None:
    m = os.path.join(work, "loop.ptx")
    with open(m, "w") as f:
        f.write(loop_kernel())
    print("## The JIT tier policy: one launch in full mode, whole processes, cold cache (wall seconds)\n")
    print("| grid (CTAs of 256) | baseline | optimized | auto | auto / best |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for grid in args.grids:
        spec = os.path.join(work, f"loop_{grid}.toml")
        with open(spec, "w") as f:
            f.write(kernel_spec("loop", 2, grid, 256, 1024))
        walls: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for tier in ("baseline", "optimized", "auto"):
                cache = tempfile.mkdtemp(prefix="cache-", dir=work)
                try:
                    walls.setdefault(tier, []).append(
                        profile(m, spec, cache, None, "full", HYPA_JIT=tier, HYPA_COMPILE_JOBS="1")[0])
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
        w = {t: median(v) for t, v in walls.items()}
        ratio = w["auto"] / min(w["baseline"], w["optimized"])
        worst = max(worst, ratio)
        print(f"| {grid} | {w['baseline']:.2f} | {w['optimized']:.2f} | {w['auto']:.2f} | {ratio:.2f} |")
    print(f"\nauto over the better tier, worst: {worst:.2f}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="CI size: 300 instructions, 6 kernels, 2 grids, 1 run")
    ap.add_argument("--instructions", type=int, default=1200, help="PTX instructions of the generated kernel")
    ap.add_argument("--kernels", type=int, default=24, help="kernels of the generated module")
    ap.add_argument("--module-instructions", type=int, default=120, help="PTX instructions of each module kernel")
    ap.add_argument("--modules", nargs="*", default=[], help="PTX modules to profile instead of a generated one")
    ap.add_argument("--launch", action="append", default=[], help="launch spec per module (in order)")
    ap.add_argument("--hypa-cpp", help="HyPA's C++ binary, run on the same modules")
    ap.add_argument("--grids", default="1,64,512,4096", help="grids of the tier measurement")
    ap.add_argument("--only", default="kernel,module,tiers", help="which measurements (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is reported)")
    ap.add_argument("--before", help="a folder holding another checkout as `hypa`, measured alongside")
    args = ap.parse_args(argv)
    if args.small:
        args.instructions, args.kernels, args.module_instructions, args.grids, args.repeat = 300, 6, 60, "1,64", 1
    args.grids = [int(g) for g in args.grids.split(",") if g]
    if args.before:
        args.before = os.path.abspath(args.before)
        if not os.path.isdir(os.path.join(args.before, "hypa")):
            raise SystemExit(f"compile.py: {args.before} holds no `hypa` folder")
    only = set(args.only.split(","))
    work = tempfile.mkdtemp(prefix="hypa-compile-")
    try:
        print(f"# hypa cold compilation ({os.cpu_count()} cores, python {sys.version.split()[0]}, "
              f"{time.strftime('%Y-%m-%d')})\n")
        if "kernel" in only:
            measure_kernel(args, work)
        if "module" in only:
            measure_module(args, work)
        if "tiers" in only:
            measure_tiers(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
