"""Whole workloads as a user runs them: whole processes, cold and warm compile cache.

    python benchmarks/workload.py MODULE.ptx [MODULE.ptx ...] [--launch SPEC.toml ...]
        [--jobs 1,2] [--hypa-cpp PATH/TO/hypa] [--scale 1,2,5,10] [--repeat 3]

For each module, ``hypa profile MODULE --launch SPEC --timing`` runs as a new
process, first with an empty compile cache (cold), then again with the cache
it filled (warm); the per-phase seconds come from ``--timing`` (start-up,
parse, prepare, lower, compile, emulate, report ...) and the wall time from
outside the process.  Without ``--launch`` a spec is generated the way HyPA
runs XLA modules: one CTA per kernel, the block size of the kernel's
``.reqntid``/``.maxntid`` (else 256), a zero-filled buffer of ``--buffer-bytes``
for every parameter.  With ``--hypa-cpp``, HyPA's C++ analyser runs on the same
files in the same run (``hypa -csv MODULE``; it writes its CSV into a scratch
folder).  ``--scale`` also builds modules of 1x, 2x, 5x, 10x the kernels (the
kernels repeated under new names) and reports wall time and the work counted
by ``--timing`` (operations copied, functions prepared), which must grow
linearly.

Nothing here asserts a time: the figures are ratios measured in one run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# -- launch specs and scaled modules ------------------------------------------------------------


def kernel_signatures(ptx: str) -> list[tuple[str, int, int]]:
    """(kernel, parameter count, block size) of every ``.entry`` in a PTX text."""
    out = []
    for m in re.finditer(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)([^{]*)\{", ptx):
        name, params, directives = m.group(1), m.group(2), m.group(3)
        nparams = len(re.findall(r"\.param\b", params))
        d = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", directives)
        block = 256
        if d:
            block = 1
            for g in d.groups():
                block *= int(g) if g else 1
        out.append((name, nparams, block))
    return out


def generate_spec(ptx: str, buffer_bytes: int, rename: str = "") -> str:
    """One launch per kernel: one CTA, the kernel's block size, a zeroed buffer per parameter."""
    parts = []
    for name, nparams, block in kernel_signatures(ptx):
        k = name + rename
        bufs = [f"{k}_p{i}" for i in range(nparams)]
        args = ", ".join(f'"{b}"' for b in bufs)
        parts.append(f'[[launch]]\nkernel = "{k}"\ngrid = 1\nblock = {block}\nargs = [{args}]\n')
        for b in bufs:
            parts.append(f'[buffers.{b}]\ndtype = "uint8"\ncount = {buffer_bytes}\n')
    return "\n".join(parts)


def function_names(ptx: str) -> list[str]:
    names = re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx)
    names += re.findall(r"\.func\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(", ptx)
    return list(dict.fromkeys(names))


def scaled_module(ptx: str, copies: int) -> str:
    """The module with its functions repeated ``copies`` times, copy k renamed ``NAME_xk``."""
    m = re.search(r"^[^\n/]*\.(?:entry|func)\b", ptx, re.M)
    if not m:
        return ptx
    head, body = ptx[: m.start()], ptx[m.start():]
    # functions, and the module-level variables declared among them (a copy redefining them
    # would be invalid PTX: ptxas and hypa reject a variable defined twice)
    names = set(function_names(ptx)) | set(re.findall(
        r"^[ \t]*(?:\.(?:visible|extern|weak|common)\s+)*\.(?:global|shared|const)\s+[^;{(]*?"
        r"([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\]\s*)*(?:=[^;]*)?;", body, re.M))
    pat = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    out = [head, body]
    for k in range(1, copies):
        out.append(pat.sub(lambda g: f"{g.group(1)}_x{k}", body))
    return "\n".join(out)


def scaled_spec(ptx: str, copies: int, buffer_bytes: int) -> str:
    return "\n".join(generate_spec(ptx, buffer_bytes, "" if k == 0 else f"_x{k}") for k in range(copies))


# -- running -----------------------------------------------------------------------------------


def parse_timing(stderr: str) -> tuple[dict[str, float], dict[str, int]]:
    phases: dict[str, float] = {}
    work: dict[str, int] = {}
    in_work = False
    for line in stderr.splitlines():
        if line.strip() == "work done:":
            in_work = True
            continue
        if in_work:
            m = re.match(r"\s+(\d+)\s+(.*)$", line)
            if m:
                work[m.group(2)] = int(m.group(1))
            continue
        m = re.match(r"\s+([\w-]+)\s+([\d.]+)\s+[\d.]+%", line)
        if m:
            phases[m.group(1)] = float(m.group(2))
    return phases, work


def hypa_profile(module: str, spec: str, cache: str, jobs: int, out_csv: str) -> tuple[float, dict, dict, str]:
    """One whole `hypa profile` process: wall seconds, phases, work, stderr."""
    env = dict(os.environ, HYPA_CACHE_DIR=cache)
    cmd = [sys.executable, "-m", "hypa.tools.hypa_cli", "profile", module, "--launch", spec, "--format", "csv",
           "-o", out_csv, "--timing", "--no-progress"]
    if jobs > 1:
        cmd += ["-j", str(jobs)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"workload.py: hypa profile failed on {module} (exit {p.returncode})")
    phases, work = parse_timing(p.stderr)
    return wall, phases, work, p.stderr


def hypa_cpp(binary: str, module: str) -> float:
    """HyPA's C++ analyser on one file (it writes its CSV and logs into the working folder)."""
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        p = subprocess.run([binary, "-csv", os.path.abspath(module)], cwd=d, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"workload.py: {binary} failed on {module} (exit {p.returncode})")
    return wall


def median_runs(fn, repeat: int):
    runs = [fn() for _ in range(repeat)]
    walls = [r[0] if isinstance(r, tuple) else r for r in runs]
    i = walls.index(statistics.median_low(walls))
    return runs[i]


PHASES = ("start-up", "parse", "prepare", "launches", "lower", "compile", "emulate", "workers", "report", "other")


def phase_row(label: str, wall: float, phases: dict[str, float]) -> str:
    cells = [f"{phases.get(p, 0.0):.2f}" if p in phases else "-" for p in PHASES]
    return f"| {label} | {wall:.2f} | " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="+", help="PTX modules")
    ap.add_argument("--launch", action="append", default=[], help="launch spec per module (in order); default: generated")
    ap.add_argument("--buffer-bytes", type=int, default=4 << 20, help="bytes per buffer of a generated spec (default 4 MiB)")
    ap.add_argument("--jobs", default="1", help="comma-separated -j values to measure (default 1)")
    ap.add_argument("--hypa-cpp", help="HyPA's C++ binary, run on the same files for comparison")
    ap.add_argument("--scale", default="", help="comma-separated multiples of the first module, e.g. 1,2,5,10")
    ap.add_argument("--scale-jobs", type=int, default=1, help="-j for the scaling runs")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (the median is reported)")
    ap.add_argument("--keep", help="keep generated specs, modules and caches in this folder")
    args = ap.parse_args(argv)

    work_dir = args.keep or tempfile.mkdtemp(prefix="hypa-workload-")
    os.makedirs(work_dir, exist_ok=True)
    jobs_list = [int(j) for j in args.jobs.split(",") if j]
    print(f"# hypa workload benchmark ({os.cpu_count()} cores, python {sys.version.split()[0]})\n")
    print("Seconds; wall = the whole process measured from outside; phases from `hypa profile --timing`.\n")
    print("| run | wall | " + " | ".join(PHASES) + " |")
    print("|---|---" + "|---" * len(PHASES) + "|")
    summary = []
    for i, module in enumerate(args.modules):
        with open(module) as f:
            ptx = f.read()
        if i < len(args.launch):
            spec = args.launch[i]
        else:
            spec = os.path.join(work_dir, os.path.basename(module) + ".toml")
            with open(spec, "w") as f:
                f.write(generate_spec(ptx, args.buffer_bytes))
        nk = len(kernel_signatures(ptx))
        name = os.path.basename(module)
        out_csv = os.path.join(work_dir, name + ".csv")
        row = {"module": name, "kernels": nk, "lines": ptx.count("\n")}
        for jobs in jobs_list:

            def cold():
                cache = tempfile.mkdtemp(prefix="cache-", dir=work_dir)
                try:
                    return hypa_profile(module, spec, cache, jobs, out_csv)
                finally:
                    shutil.rmtree(cache, ignore_errors=True)

            cw, cp, _, _ = median_runs(cold, args.repeat)
            cache = os.path.join(work_dir, f"cache-warm-{name}-{jobs}")
            hypa_profile(module, spec, cache, jobs, out_csv)  # fill
            ww, wp, wwork, _ = median_runs(lambda: hypa_profile(module, spec, cache, jobs, out_csv), args.repeat)
            print(phase_row(f"{name} ({nk} kernels) -j{jobs} cold", cw, cp))
            print(phase_row(f"{name} ({nk} kernels) -j{jobs} warm", ww, wp))
            row[f"cold_j{jobs}"] = cw
            row[f"warm_j{jobs}"] = ww
        if args.hypa_cpp:
            row["hypa_cpp"] = median_runs(lambda: hypa_cpp(args.hypa_cpp, module), args.repeat)
        summary.append(row)

    print("\n| module | kernels | PTX lines | " + " | ".join(
        f"cold -j{j} | warm -j{j}" for j in jobs_list) + (" | HyPA C++ | C++/cold -j1 | C++/warm -j1 |" if args.hypa_cpp else " |"))
    print("|---|---|---|" + "---|---|" * len(jobs_list) + ("---|---|---|" if args.hypa_cpp else ""))
    for row in summary:
        cells = [f"{row[f'cold_j{j}']:.2f} | {row[f'warm_j{j}']:.2f}" for j in jobs_list]
        extra = ""
        if args.hypa_cpp:
            c = row["hypa_cpp"]
            base = jobs_list[0]
            extra = f" | {c:.2f} | {c / row[f'cold_j{base}']:.2f}x | {c / row[f'warm_j{base}']:.2f}x"
        print(f"| {row['module']} | {row['kernels']} | {row['lines']} | " + " | ".join(cells) + extra + " |")
    if len(summary) > 1:
        tot = {k: sum(r[k] for r in summary) for k in summary[0] if k not in ("module",)}
        cells = [f"{tot[f'cold_j{j}']:.2f} | {tot[f'warm_j{j}']:.2f}" for j in jobs_list]
        extra = ""
        if args.hypa_cpp:
            base = jobs_list[0]
            extra = (f" | {tot['hypa_cpp']:.2f} | {tot['hypa_cpp'] / tot[f'cold_j{base}']:.2f}x"
                     f" | {tot['hypa_cpp'] / tot[f'warm_j{base}']:.2f}x")
        print(f"| all | {tot['kernels']} | {tot['lines']} | " + " | ".join(cells) + extra + " |")

    if args.scale:
        base_ptx = open(args.modules[0]).read()
        print(f"\nScaling ({os.path.basename(args.modules[0])} repeated under new names, -j{args.scale_jobs}):\n")
        print("| copies | kernels | cold wall | warm wall | warm / 1x | operations copied | functions prepared |")
        print("|---|---|---|---|---|---|---|")
        first_warm = None
        for k in [int(x) for x in args.scale.split(",") if x]:
            mod = os.path.join(work_dir, f"scaled_{k}x.ptx")
            spec = os.path.join(work_dir, f"scaled_{k}x.toml")
            with open(mod, "w") as f:
                f.write(scaled_module(base_ptx, k))
            with open(spec, "w") as f:
                f.write(scaled_spec(base_ptx, k, args.buffer_bytes))
            cache = os.path.join(work_dir, f"cache-scaled-{k}")
            shutil.rmtree(cache, ignore_errors=True)
            cw, _, _, _ = hypa_profile(mod, spec, cache, args.scale_jobs, os.path.join(work_dir, "s.csv"))
            ww, _, work, _ = hypa_profile(mod, spec, cache, args.scale_jobs, os.path.join(work_dir, "s.csv"))
            first_warm = first_warm or ww
            copied = work.get("operations copied from the input", 0)
            funcs = work.get("functions prepared (kernels and the functions they call)", 0)
            print(f"| {k}x | {len(kernel_signatures(base_ptx)) * k} | {cw:.2f} | {ww:.2f} | {ww / first_warm:.2f} "
                  f"| {copied} | {funcs} |")
    if not args.keep:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
