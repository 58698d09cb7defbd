"""Whole workloads as a user runs them: whole processes, cold and warm compile cache.

    python benchmarks/workload.py MODULE.ptx [MODULE.ptx ...] [--launch SPEC.toml ...]
        [--jobs 1,2] [--hypa-cpp PATH/TO/hypa] [--scale 1,2,5,10] [--repeat 3]
    python benchmarks/workload.py --small      # CI: a 3-kernel module written here

For each module, ``hypa profile MODULE --launch SPEC --timing`` runs as a new
process, first with an empty compile cache (cold), then again with the cache
it filled (warm); the per-phase seconds come from ``--timing`` (start-up,
parse, prepare, lower, compile, emulate, report ...) and the wall time from
outside the process.  Without ``--launch`` a spec is generated the way HyPA
runs XLA modules: one CTA per kernel, the block size of the kernel's
``.reqntid``/``.maxntid`` (else 256), a zero-filled buffer of ``--buffer-bytes``
(default 64 MiB: what HyPA's XLA kernels address) for every parameter.  Every
process's peak resident memory is reported beside its time (``ru_maxrss``).  With ``--hypa-cpp``, HyPA's C++ analyser runs on the same
files in the same run (``hypa -csv MODULE``; it writes its CSV into a scratch
folder).  ``--scale`` also builds modules of 1x, 2x, 5x, 10x the kernels (the
kernels repeated under new names) and reports wall time and the work the cold
run counted (``--timing``: operations copied, functions prepared), which must
grow at most linearly (copies that differ only in names are prepared once:
operations are copied for the first copy only).

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
    return [(name, nparams, dims[0] * dims[1] * dims[2]) for name, nparams, dims in _kernel_blocks(ptx)]


def _kernel_blocks(ptx: str) -> list[tuple[str, int, tuple[int, int, int]]]:
    """(kernel, parameter count, block dimensions: its ``.reqntid``/``.maxntid``, else 256)."""
    out = []
    for m in re.finditer(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)([^{]*)\{", ptx):
        name, params, directives = m.group(1), m.group(2), m.group(3)
        nparams = len(re.findall(r"\.param\b", params))
        d = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", directives)
        dims = (256, 1, 1)
        if d:
            dims = tuple(int(g) if g else 1 for g in d.groups())  # a .reqntid launch must match it exactly
        out.append((name, nparams, dims))
    return out


def generate_spec(ptx: str, buffer_bytes: int, rename: str = "") -> str:
    """One launch per kernel: one CTA, the kernel's block size, a zeroed buffer per parameter."""
    parts = []
    for name, nparams, dims in _kernel_blocks(ptx):
        k = name + rename
        bufs = [f"{k}_p{i}" for i in range(nparams)]
        args = ", ".join(f'"{b}"' for b in bufs)
        block = dims[0] if dims[1:] == (1, 1) else list(dims)
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


def run_process(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[float, int, int, str, str]:
    """A whole process: wall seconds, peak resident memory (MiB, ``ru_maxrss`` of that
    child alone), exit status, stdout, stderr."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    out_r, err_r = p.stdout, p.stderr
    # read both pipes to the end, then reap the child with wait4 for its own usage
    import threading

    chunks: dict[str, str] = {}
    t = threading.Thread(target=lambda: chunks.__setitem__("err", err_r.read()))
    t.start()
    chunks["out"] = out_r.read()
    t.join()
    _pid, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    return wall, usage.ru_maxrss // 1024, p.returncode, chunks["out"], chunks["err"]


def hypa_profile(module: str, spec: str, cache: str, jobs: int, out_csv: str) -> tuple[float, dict, dict, str, int]:
    """One whole `hypa profile` process: wall seconds, phases, work, stderr, peak RSS (MiB).
    A launch that fails fails the benchmark."""
    env = dict(os.environ, HYPA_CACHE_DIR=cache)
    cmd = [sys.executable, "-m", "hypa.tools.hypa_cli", "profile", module, "--launch", spec, "--format", "csv",
           "-o", out_csv, "--timing", "--no-progress"]
    if jobs > 1:
        cmd += ["-j", str(jobs)]
    wall, rss, rc, _out, err = run_process(cmd, env)
    if rc != 0:
        sys.stderr.write(err)
        raise SystemExit(f"workload.py: hypa profile failed on {module} (exit {rc})")
    phases, work = parse_timing(err)
    return wall, phases, work, err, rss


def hypa_cpp(binary: str, module: str) -> tuple[float, int]:
    """HyPA's C++ analyser on one file (it writes its CSV and logs into the working folder):
    wall seconds and peak RSS (MiB)."""
    with tempfile.TemporaryDirectory() as d:
        wall, rss, rc, _out, _err = run_process([binary, "-csv", os.path.abspath(module)], cwd=d)
    if rc != 0:
        raise SystemExit(f"workload.py: {binary} failed on {module} (exit {rc})")
    return wall, rss


def median_runs(fn, repeat: int):
    runs = [fn() for _ in range(repeat)]
    walls = [r[0] if isinstance(r, tuple) else r for r in runs]
    i = walls.index(statistics.median_low(walls))
    return runs[i]


PHASES = ("start-up", "parse", "prepare", "launches", "lower", "compile", "emulate", "workers", "report", "other")


def phase_row(label: str, wall: float, phases: dict[str, float], rss: int) -> str:
    cells = [f"{phases.get(p, 0.0):.2f}" if p in phases else "-" for p in PHASES]
    return f"| {label} | {wall:.2f} | {rss} | " + " | ".join(cells) + " |"


def small_module(kernels: int = 3) -> str:
    """A module shaped like XLA's (pointer parameters only, ``.reqntid``): kernel k computes
    ``out[i] = in[i] * k + 1`` over its 128 threads -- the CI mode's input."""
    parts = [".version 8.0\n.target sm_80\n.address_size 64\n"]
    for k in range(kernels):
        parts.append(f"""
.visible .entry fusion_{k}(.param .u64 fusion_{k}_in, .param .u64 fusion_{k}_out) .reqntid 128, 1, 1
{{
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [fusion_{k}_in];
    ld.param.u64 %rd2, [fusion_{k}_out];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    fma.rn.f32 %f2, %f1, {float(k):.1f}, 1.0;
    add.s64 %rd7, %rd4, %rd5;
    st.global.f32 [%rd7], %f2;
    ret;
}}
""".replace("{float(k):.1f}", f"0f{_f32_hex(float(k))}"))
    return "".join(parts)


def _f32_hex(v: float) -> str:
    import struct

    return struct.pack(">f", v).hex().upper()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="PTX modules")
    ap.add_argument("--small", action="store_true",
                    help="CI's mode: a 3-kernel module written here, 64 MiB buffers, scaled 1x and 2x")
    ap.add_argument("--launch", action="append", default=[], help="launch spec per module (in order); default: generated")
    ap.add_argument("--buffer-bytes", type=int, default=64 << 20,
                    help="bytes per buffer of a generated spec (default 64 MiB)")
    ap.add_argument("--jobs", default="1", help="comma-separated -j values to measure (default 1)")
    ap.add_argument("--hypa-cpp", help="HyPA's C++ binary, run on the same files for comparison")
    ap.add_argument("--scale", default="", help="comma-separated multiples of the first module, e.g. 1,2,5,10")
    ap.add_argument("--scale-jobs", type=int, default=1, help="-j for the scaling runs")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (the median is reported)")
    ap.add_argument("--keep", help="keep generated specs, modules and caches in this folder")
    args = ap.parse_args(argv)

    work_dir = args.keep or tempfile.mkdtemp(prefix="hypa-workload-")
    os.makedirs(work_dir, exist_ok=True)
    if args.small:
        small = os.path.join(work_dir, "small_module.ptx")
        with open(small, "w") as f:
            f.write(small_module())
        args.modules = [small, *args.modules]
        args.scale = args.scale or "1,2"
    if not args.modules:
        ap.error("give PTX modules, or --small")
    jobs_list = [int(j) for j in args.jobs.split(",") if j]
    print(f"# hypa workload benchmark ({os.cpu_count()} cores, python {sys.version.split()[0]})\n")
    print("Seconds; wall = the whole process measured from outside; RSS = its peak resident memory (MiB); "
          "phases from `hypa profile --timing`.\n")
    print("| run | wall | RSS | " + " | ".join(PHASES) + " |")
    print("|---|---|---" + "|---" * len(PHASES) + "|")
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

            cw, cp, _, _, crss = median_runs(cold, args.repeat)
            cache = os.path.join(work_dir, f"cache-warm-{name}-{jobs}")
            hypa_profile(module, spec, cache, jobs, out_csv)  # fill
            ww, wp, wwork, _, wrss = median_runs(lambda: hypa_profile(module, spec, cache, jobs, out_csv), args.repeat)
            print(phase_row(f"{name} ({nk} kernels) -j{jobs} cold", cw, cp, crss))
            print(phase_row(f"{name} ({nk} kernels) -j{jobs} warm", ww, wp, wrss))
            row[f"cold_j{jobs}"] = cw
            row[f"warm_j{jobs}"] = ww
            row[f"rss_j{jobs}"] = max(crss, wrss)
        if args.hypa_cpp:
            row["hypa_cpp"], row["hypa_cpp_rss"] = median_runs(lambda: hypa_cpp(args.hypa_cpp, module), args.repeat)
        summary.append(row)

    print("\n| module | kernels | PTX lines | " + " | ".join(
        f"cold -j{j} | warm -j{j} | peak RSS -j{j}" for j in jobs_list)
        + (" | HyPA C++ | its RSS | C++/cold -j1 | C++/warm -j1 |" if args.hypa_cpp else " |"))
    print("|---|---|---|" + "---|---|---|" * len(jobs_list) + ("---|---|---|---|" if args.hypa_cpp else ""))
    for row in summary:
        cells = [f"{row[f'cold_j{j}']:.2f} | {row[f'warm_j{j}']:.2f} | {row[f'rss_j{j}']} MiB" for j in jobs_list]
        extra = ""
        if args.hypa_cpp:
            c = row["hypa_cpp"]
            base = jobs_list[0]
            extra = (f" | {c:.2f} | {row['hypa_cpp_rss']} MiB | {c / row[f'cold_j{base}']:.2f}x"
                     f" | {c / row[f'warm_j{base}']:.2f}x")
        print(f"| {row['module']} | {row['kernels']} | {row['lines']} | " + " | ".join(cells) + extra + " |")
    if len(summary) > 1:
        tot = {k: (max if k.endswith("rss") or k.startswith("rss") else sum)(r[k] for r in summary)
               for k in summary[0] if k not in ("module",)}
        cells = [f"{tot[f'cold_j{j}']:.2f} | {tot[f'warm_j{j}']:.2f} | {tot[f'rss_j{j}']} MiB (max)" for j in jobs_list]
        extra = ""
        if args.hypa_cpp:
            base = jobs_list[0]
            extra = (f" | {tot['hypa_cpp']:.2f} | {tot['hypa_cpp_rss']} MiB (max)"
                     f" | {tot['hypa_cpp'] / tot[f'cold_j{base}']:.2f}x"
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
            # the work counted is the cold run's: a warm one prepares from records and copies nothing
            cw, _, work, _, _ = hypa_profile(mod, spec, cache, args.scale_jobs, os.path.join(work_dir, "s.csv"))
            ww, _, _, _, _ = hypa_profile(mod, spec, cache, args.scale_jobs, os.path.join(work_dir, "s.csv"))
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
