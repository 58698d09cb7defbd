"""``hypa``: profile many kernels, and report on them.

    hypa profile kernels/ --launch launches.toml --format csv -o profile.csv
    hypa profile --launch all.toml          # each [[launch]] names its PTX `file`
    hypa profile workloads/resnet18         # a folder with launches.toml
    hypa report kernels/*.ptx --launch launches.toml --cfg saxpy -o report.html
    hypa report profile.json -o report.html # from `hypa profile --format json`

Inputs are files (``.ptx``, ``.cu``, fatbins, cubins, executables, shared
libraries, object files), directories (searched recursively) and globs.
Launches come from a TOML file (docs/guide.md, "Launch specification") or a directory's
``launches.toml``; a launch with ``file`` runs on that file, one without runs
on every given file that defines its kernel.  Kernels that no launch names are
counted statically and the output says so.  Identical launches are analysed
once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence

from hypa import end_of_start_up
from hypa.ptxdialect.diagnostics import HypaError

from .emulate_cli import add_emulation_arguments, fail


def _add_batch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="PTX, CUDA (.cu), fatbin/cubin/ELF files, directories (recursive) or globs")
    add_emulation_arguments(p, with_emulate=False)
    g = p.add_argument_group("inputs")
    g.add_argument("--arch", default="sm_90", help="architecture for compiling .cu files with nvcc (default sm_90)")
    g.add_argument("--nvcc-flags", default="", metavar="FLAGS", help="more nvcc options for .cu files, e.g. '-I include -DN=4'")
    g.add_argument("--ptx-arch", default=None, metavar="ARCH",
                   help="which PTX of a binary that embeds several (compute_80, sm_80 or 80); default: the newest")
    g.add_argument("--no-cuobjdump", action="store_true",
                   help="read embedded PTX with hypa's own fatbin reader even where cuobjdump is installed")
    r = p.add_argument_group("running")
    r.add_argument("--per-cta", action="store_true", help="also count each CTA on its own (per-CTA breakdown)")
    r.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster: a scheduler address (tcp://host:8786), or local[:N] for N local workers")
    r.add_argument("--cta-chunk", type=int, default=0, metavar="N",
                   help="with --scheduler or -j: cut launches of more than N CTAs into ranges of N CTAs")
    r.add_argument("--no-dedup", action="store_true", help="analyse every launch, even identical ones")
    r.add_argument("--fail-fast", action="store_true", help="stop at the first launch that fails")
    r.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    r.add_argument("--no-progress", dest="progress", action="store_false")
    r.add_argument("--timing", action="store_true",
                   help="print where the time went, per phase (start-up, parse, prepare, lower, compile, "
                        "emulate, report ...), to stderr, like mlir-opt --mlir-timing")


def _options(args: argparse.Namespace):
    from hypa.runtime.emulator.options import from_arguments
    from hypa.runtime.report.batch import ProfileOptions
    from hypa.runtime.report.inputs import InputOptions

    return ProfileOptions(
        emulation=from_arguments(args), jobs=args.jobs, per_cta=args.per_cta,
        scheduler=args.scheduler, cta_chunk=args.cta_chunk, dedup=not args.no_dedup, kernel=args.kernel,
        fail_fast=args.fail_fast, estimate_time=getattr(args, "estimate_time", None),
        inputs=InputOptions(arch=args.arch, nvcc_flags=shlex.split(args.nvcc_flags), ptx_arch=args.ptx_arch,
                            cuobjdump=False if args.no_cuobjdump else None),
    )


def _run(args: argparse.Namespace):
    from hypa.runtime.report.batch import run_profile

    return run_profile(args.inputs, [args.launch] if args.launch else None, _options(args), progress=args.progress)


def _report_errors(profile) -> int:
    bad = [r for r in profile.records if r.error is not None and r.reused_from is None]
    for r in bad:
        print(f"hypa: error: launch {r.index} ({r.kernel or '?'} in {r.source.display}): {r.error}", file=sys.stderr)
    return 1 if bad else 0


def output_format(args: argparse.Namespace, tool: str = "hypa") -> None:
    """``-o``'s extension chooses the format where ``--format`` is not given (as ``hypa run``
    does): ``.json``, ``.csv``; a format that contradicts the extension is an error."""
    ext = os.path.splitext(args.output or "")[1].lower()
    by_ext = {".json": "json", ".csv": "csv"}.get(ext)
    if ext in (".html", ".htm"):
        usage_error(tool, f"-o {args.output}: hypa profile writes a table, JSON or CSV; an HTML page is "
                          f"`hypa report ... -o {args.output}`")
    if by_ext is None:
        return
    if args.format == "table":  # the default
        args.format = by_ext
    elif args.format != by_ext:
        usage_error(tool, f"--format {args.format} contradicts -o {args.output} (its extension says {by_ext})")


def usage_error(tool: str, message: str) -> None:
    """Options that contradict each other: exit status 2, as argparse's own errors."""
    print(f"{tool}: error: {message}", file=sys.stderr)
    sys.exit(2)


def profile(args: argparse.Namespace) -> int:
    from hypa.runtime.report import tables as report
    from hypa.runtime.emulator.phases import phase

    output_format(args)
    if args.format == "csv" and args.csv_columns == "memory" and not args.memory_metrics:
        args.memory_metrics = True  # the memory columns are the memory metrics
    prof = _run(args)
    with phase("report"):
        if args.format == "json" and args.by == "launch":
            # records (and per-CTA entries) are written as they are formatted: thousands of
            # launches, millions of CTAs
            out = open(args.output, "w") if args.output else sys.stdout
            try:
                report.write_profile_json(prof, out, args.per_cta, args.by)
            finally:
                if out is not sys.stdout:
                    out.close()
            text = None
        elif args.by == "line":
            text = report.profile_lines(prof, args.format)
        elif args.format == "json":
            text = report.profile_json(prof, args.per_cta, args.by)
        elif args.format == "csv":
            text = report.profile_csv(prof, args.csv_columns, args.per_cta, args.by)
        else:
            text = report.profile_table(prof, args.by, args.per_cta, args.blocks, args.wide)
        if text is not None:
            out = open(args.output, "w") if args.output else sys.stdout
            try:
                out.write(text)
            finally:
                if out is not sys.stdout:
                    out.close()
    if args.format != "table":
        for s in prof.static:
            print(f"kernel {s.kernel} ({s.source.display}): no launch given, counted statically: "
                  f"{s.static_instructions} instructions", file=sys.stderr)
    if args.format != "table" or args.output:
        print(report.summary_line(prof), file=sys.stderr)
    return _report_errors(prof)


def report_cmd(args: argparse.Namespace) -> int:
    from hypa.runtime.report import html as html_report

    jsons = [f for f in args.inputs if f.endswith(".json")]
    if jsons:
        if len(jsons) != len(args.inputs) or args.launch:
            fail("hypa", "give either profile JSON files or inputs to profile, not both")
        dicts: list[dict] = []
        from hypa.runtime.report.files import load_json

        for f in jsons:
            data = load_json(f)  # a regular file, any Unicode encoding, bounded
            problem = html_report.profile_problem(data)
            if problem is not None:
                fail("hypa", f"{f}: not a profile (a JSON list of launches from `hypa profile --format json`): {problem}")
            dicts.extend(data)
        failed = [f"launch {d.get('launch')} ({d['kernel']}): {d['error']}" for d in dicts if "error" in d]
        page = html_report.build([d for d in dicts if "error" not in d], static=[], summary=f"from {', '.join(jsons)}",
                                 cfg=args.cfg, plots_dir=args.plots, title=args.title, input_options=_options(args).inputs,
                                 errors=failed)
        errors = 0
    else:
        from hypa.runtime.report import tables as report
        from hypa.runtime.emulator.phases import phase

        prof = _run(args)
        with phase("report"):
            dicts = report.profile_dicts(prof, args.per_cta)
            by_index = {r.index: r for r in prof.records}
            for d in dicts:  # kernels without line information: their hottest PTX instructions
                rec = by_index.get(d["launch"])
                if "source_lines" not in d and rec is not None and rec.result is not None and rec.result.program is not None:
                    d["hot_instructions"] = report.hot_instructions(rec)
            page = html_report.build(dicts,
                                     static=[report.static_dict(s) for s in prof.static],
                                     summary=report.summary_line(prof), cfg=args.cfg, plots_dir=args.plots,
                                     title=args.title, input_options=_options(args).inputs,
                                     errors=[f"launch {r.index} ({r.kernel}): {r.error}" for r in prof.errors
                                             if r.reused_from is None])
        errors = _report_errors(prof)
    with open(args.output, "w") as f:
        f.write(page.html)
    for n in page.notices:
        print(f"hypa: note: {n}", file=sys.stderr)
    print(f"hypa: wrote {args.output}" + (f" and {len(page.plot_files)} plots in {args.plots}" if page.plot_files else ""),
          file=sys.stderr)
    return errors


def diff_cmd(args: argparse.Namespace) -> int:
    from hypa.runtime.report import diff

    pairs = diff.pair(diff.load(args.a), diff.load(args.b))
    names = (args.a, args.b)
    text = diff.html_page(pairs, names) if args.output and args.output.endswith(".html") else diff.table(pairs, names)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
        print(f"hypa: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def hypa_version() -> str:
    """The installed distribution's version (pyproject.toml's), or "unknown" outside one."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hypa")
    except PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: the version is read (``importlib.metadata``, 6 ms of imports) only when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"hypa {hypa_version()}")
        parser.exit()


def process_start_seconds_ago() -> float | None:
    """Seconds since this process started (Linux: /proc), or None where unknown.

    /proc/self/stat gives the start in clock ticks since boot on CLOCK_BOOTTIME; compare it
    with that clock, not with ``time.time() - btime``: btime is whole seconds and the wall
    clock drifts from the boot clock (NTP), which made start-up read up to a second long."""
    import time

    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


_MAIN_ENTERED = None


def timing_report() -> str:
    """The per-phase report, with the start-up (interpreter and imports before ``main``)
    measured from the process's start time (10 ms resolution) when ``main`` is the command
    line's (called without ``argv``); called from a program, the report starts at ``main``."""
    import time

    from hypa.runtime.emulator import phases

    entered, from_command_line = _MAIN_ENTERED or (time.perf_counter(), False)
    in_main = time.perf_counter() - entered
    ago = process_start_seconds_ago() if from_command_line else None
    startup = max(0.0, ago - in_main) if ago is not None else None
    if startup is not None:
        phases.add("start-up", startup)
    return phases.report(total=in_main + (startup or 0.0))


def main(argv: Sequence[str] | None = None) -> None:
    """The ``hypa`` command; as the process's command line (no ``argv``) it ends the
    process without the interpreter's teardown (tools/fast_exit.py)."""
    if argv is not None:
        return _main(argv)
    try:
        _main(None)
    except SystemExit as e:
        from .fast_exit import exit_now

        exit_now(e)


def _main(argv: Sequence[str] | None) -> None:
    global _MAIN_ENTERED
    import gc
    import time

    _MAIN_ENTERED = (time.perf_counter(), argv is None)
    # A workload's IR is hundreds of thousands of long-lived objects: at the default
    # thresholds the cyclic GC traverses them again and again and finds nothing to free
    # (about a tenth of a warm run); collect rarely instead.  hypa does no linear algebra,
    # so the BLAS thread pool numpy would start only spins.
    gc.set_threshold(100_000, 50, 100)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from hypa.runtime.emulator.phases import phase, reset

    reset()  # a run's report covers that run (main may be called again in one process)
    args_in = sys.argv[1:] if argv is None else list(argv)
    if args_in and args_in[0] not in ("run", "--version", "-h", "--help"):  # `hypa run` emulates inside the program
        try:
            with phase("start-up"):  # what every command loads: xDSL, the ptx dialect, numpy, LLVM
                import hypa.runtime.report.batch  # noqa: F401
        except KeyboardInterrupt:  # Ctrl-C while starting: one line, as later
            from .fast_exit import interrupted

            interrupted("hypa")
    end_of_start_up()  # KeyboardInterrupt from here on, caught below (and in `hypa run`)
    p = argparse.ArgumentParser(prog="hypa", description="hybrid PTX analysis: profile CUDA kernels without a GPU")
    p.add_argument("--version", action=_VersionAction, nargs=0, help="show the version and exit")
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("profile", help="emulate launches and report metrics",
                        description="Emulate launches of many kernels and report their metrics.")
    _add_batch_arguments(pp)
    o = pp.add_argument_group("output")
    o.add_argument("-o", "--output", help="write the report here instead of stdout")
    o.add_argument("--by", choices=("launch", "kernel", "line"), default="launch",
                   help="one row per launch (default), per kernel (launches summed), or per CUDA source line of "
                        "each launch (from -lineinfo's .loc; per PTX instruction without it)")
    o.add_argument("--blocks", action="store_true", help="table: every launch in full, with per-block counts")
    o.add_argument("--wide", action="store_true", help="table: kernel names in full (default: shortened in the middle)")
    rp = sub.add_parser("report", help="write an HTML report with plots and a CFG picture",
                        description="Profile (or read a `hypa profile --format json` file) and write a "
                                    "self-contained HTML page.")
    _add_batch_arguments(rp)
    for a in rp._actions:
        if a.dest in ("format", "csv_columns"):
            a.help = argparse.SUPPRESS
    o = rp.add_argument_group("output")
    o.add_argument("-o", "--output", default="hypa-report.html", help="the HTML page (default hypa-report.html)")
    o.add_argument("--cfg", default=None, metavar="KERNEL",
                   help="kernel whose CFG is drawn (default: the one with the most divergent branches; 'none': no CFG)")
    o.add_argument("--plots", default=None, metavar="DIR", help="also write the plots as PNG files here")
    o.add_argument("--title", default="hypa report", help="the page's title")
    from .run_cli import add_parser as add_run_parser

    add_run_parser(sub)
    dp = sub.add_parser("diff", help="what changed between two profiles (JSON from hypa profile/run)",
                        description="Compare two `--format json` profiles: per kernel and per launch (the k-th launch "
                                    "of a kernel in A with the k-th in B), counts, FLOPs, branch efficiency, memory "
                                    "and estimated time, as A, B and the change.")
    dp.add_argument("a", metavar="A.json")
    dp.add_argument("b", metavar="B.json")
    dp.add_argument("-o", "--output", help="write here; a .html name gives an HTML page (default: a table on stdout)")
    args = p.parse_args(argv)
    if args.command in ("profile", "report"):
        from .deadline import arm

        arm(args.timeout, f"hypa {args.command}")
    try:
        if args.command == "run":
            from .run_cli import run

            sys.exit(run(args))
        if args.command == "diff":
            sys.exit(diff_cmd(args))
        rc = profile(args) if args.command == "profile" else report_cmd(args)
        if args.timing:
            print(timing_report(), file=sys.stderr)
        sys.exit(rc)
    except HypaError as e:
        print(e.render("hypa"), file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        fail("hypa", f"{e.strerror}: {e.filename}")
    except KeyboardInterrupt:
        from .fast_exit import interrupted

        interrupted("hypa")
    except SystemExit:
        raise
    except Exception as e:  # a bug in hypa, not in the input
        if os.environ.get("HYPA_TRACEBACK"):
            raise
        print(f"hypa: internal error: {type(e).__name__}: {e}\n"
              "(this is a bug in hypa; please report it with the command that caused it; "
              "HYPA_TRACEBACK=1 shows where it happened)", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
