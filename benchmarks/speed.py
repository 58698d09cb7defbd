"""The README's *Speed* section, measured: every figure it quotes, by one command.

    python benchmarks/speed.py [--xla DIR] [--hypa-cpp PATH] [-o FILE]
    python benchmarks/speed.py --small           # CI: each measurement in its small mode

Runs the benchmarks below one after the other, each a fresh process with its own empty
compile cache, and prints their results as Markdown under a header that names the date and
the machine (CPU, cores, memory).  ``--xla DIR`` adds HyPA's XLA modules
(``module_*.ptx``, not in this repository) to the whole-workload table, beside HyPA's C++
analyser with ``--hypa-cpp``.  Figures are ratios within one run: this machine's speed drifts
between runs.  A benchmark that fails fails this command (exit status 1).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import workload  # noqa: E402  (benchmarks/workload.py: whole processes and their peak RSS)


def machine() -> str:
    """The CPU model, cores, memory and Python of this machine, in one line."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        mem_text = f"{mem:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        mem_text = "? GiB"
    return f"{model}, {os.cpu_count()} cores, {mem_text}, Python {platform.python_version()}, {platform.system()}"


#: the launch that ``launches_rss`` repeats: out[off + i] = a[off + i] + b[off + i]
ADD_AT = """.version 8.0
.target sm_80
.address_size 64
.visible .entry add_at(.param .u64 add_out, .param .u64 add_a, .param .u64 add_b, .param .u32 add_off)
{
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [add_off];
    add.s32 %r3, %r1, %r2;
    mul.wide.u32 %rd1, %r3, 4;
    ld.param.u64 %rd2, [add_a];
    add.s64 %rd3, %rd2, %rd1;
    ld.global.f32 %f1, [%rd3];
    ld.param.u64 %rd4, [add_b];
    add.s64 %rd5, %rd4, %rd1;
    ld.global.f32 %f2, [%rd5];
    add.f32 %f3, %f1, %f2;
    ld.param.u64 %rd6, [add_out];
    add.s64 %rd7, %rd6, %rd1;
    st.global.f32 [%rd7], %f3;
    ret;
}
"""


def launches_spec(launches: int, buffer_bytes: int) -> str:
    """``launches`` distinct launches of ``add_at`` over three buffers of ``buffer_bytes``
    (zeros, random, arange)."""
    count = buffer_bytes // 4
    parts = [f'[[launch]]\nkernel = "add_at"\ngrid = 1\nblock = 256\nargs = ["out", "a", "b", {k * (count // launches)}]\n'
             for k in range(launches)]
    parts.append(f'[buffers.out]\ndtype = "float32"\ncount = {count}\n'
                 f'[buffers.a]\ndtype = "float32"\ncount = {count}\ninit = {{ random = {{ seed = 1 }} }}\n'
                 f'[buffers.b]\ndtype = "float32"\ncount = {count}\ninit = "arange"\n')
    return "\n".join(parts)


def launches_rss(work: str, counts: list[int], buffer_bytes: int) -> str:
    """Peak RSS of whole ``hypa profile`` processes as the number of launches grows."""
    ptx = os.path.join(work, "add_at.ptx")
    with open(ptx, "w") as f:
        f.write(ADD_AT)
    rows = [f"Peak memory against the number of launches (`hypa profile`, distinct launches of one kernel over "
            f"three {buffer_bytes >> 20} MiB buffers: zeros, random, arange):\n",
            "| launches | wall | peak RSS |", "|---|---|---|"]
    for n in counts:
        spec = os.path.join(work, f"launches_{n}.toml")
        with open(spec, "w") as f:
            f.write(launches_spec(n, buffer_bytes))
        env = dict(os.environ, HYPA_CACHE_DIR=os.path.join(work, "cache-rss"))
        wall, rss, rc, _out, err = workload.run_process(
            [sys.executable, "-m", "hypa.tools.hypa_cli", "profile", ptx, "--launch", spec, "--format", "csv",
             "-o", os.path.join(work, "rss.csv"), "--no-progress"], env)
        if rc != 0:
            sys.stderr.write(err)
            raise SystemExit(f"speed.py: hypa profile of {n} launches failed (exit {rc})")
        rows.append(f"| {n} | {wall:.2f} s | {rss} MiB |")
    return "\n".join(rows)


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, os.path.join(HERE, name), *args]


def measurements(args: argparse.Namespace, work: str) -> list[tuple[str, list[str] | None, object]]:
    """(title, command or None, builtin) in the order of the README's section."""
    small = ["--small"] if args.small else []
    xla = sorted(glob.glob(os.path.join(args.xla, "module_*.ptx"))) if args.xla else []
    if args.small or not xla:
        wl = script("workload.py", "--small")
    else:
        wl = script("workload.py", *xla, "--repeat", "3", *(["--hypa-cpp", args.hypa_cpp] if args.hypa_cpp else []))
    counts = [5, 50] if args.small else [10, 100, 400]
    out: list[tuple[str, list[str] | None, object]] = [
        ("Whole workloads (64 MiB buffers a parameter)", wl, None),
        ("Memory and the number of launches", None,
         lambda: launches_rss(work, counts, (32 if args.small else 64) << 20)),
        ("`hypa run --capture`", script("capture.py", *(small or ["--repeat", "3"])), None),
        ("`hypa run` memory accesses against `hypa profile --mode full`", script("run_programs.py", "--flat-ratio", *small), None),
        ("Cold compilation: a 1,200-instruction kernel, a many-kernel module, the JIT tier policy",
         script("compile.py", *(small or ["--repeat", "3"])), None),
        ("Slice mode's bounds checks (hoisted out of loops, and not) against none", script("emulate.py", "--bounds", *small), None),
        ("Slice against full mode, whole `hypa-opt --emulate` processes",
         script("emulate.py", "--processes", *(["--iters", "200"] if args.small else [])), None),
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xla", metavar="DIR", help="a folder with HyPA's XLA modules (module_*.ptx)")
    ap.add_argument("--hypa-cpp", metavar="PATH", help="HyPA's C++ analyser, measured beside hypa on the XLA modules")
    ap.add_argument("--small", action="store_true", help="CI: every measurement in its small mode")
    ap.add_argument("-o", "--output", help="write the section here too")
    args = ap.parse_args(argv)
    lines = [f"Measured {datetime.date.today().isoformat()} on {machine()} by `python benchmarks/speed.py"
             + (" --small" if args.small else "") + (" --xla DIR" if args.xla else "")
             + (" --hypa-cpp PATH" if args.hypa_cpp else "") + "`.", ""]
    print(lines[0] + "\n", flush=True)
    failed = []
    with tempfile.TemporaryDirectory(prefix="hypa-speed-") as work:
        for title, cmd, builtin in measurements(args, work):
            t0 = time.perf_counter()
            if cmd is not None:
                env = dict(os.environ, HYPA_CACHE_DIR=os.path.join(work, "cache-" + str(len(lines))))
                p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
                body = p.stdout.rstrip()
                if p.returncode != 0:
                    failed.append(title)
                    body += f"\n\n(FAILED, exit {p.returncode})\n" + p.stderr[-2000:]
                shown = " ".join("python" if c == sys.executable else
                                 os.path.relpath(c, ROOT) if os.path.isabs(c) and c.startswith(ROOT) else c
                                 for c in cmd)
                header = f"### {title}\n\n`{shown}` ({time.perf_counter() - t0:.0f} s)\n"
            else:
                body = builtin()
                header = f"### {title}\n\n(`benchmarks/speed.py`, {time.perf_counter() - t0:.0f} s)\n"
            block = f"{header}\n{body}\n"
            print(block, flush=True)
            lines.append(block)
    if args.output:
        with open(args.output, "w") as f:
            f.write("\n".join(lines))
    if failed:
        print(f"FAIL: {', '.join(failed)}")
        return 1
    print(f"speed: {len(lines) - 2} measurements")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
