"""Command-line glue shared by ``hypa-opt --emulate`` and ``hypa profile``:
building launches from options, running them, printing results.

Importing this module is cheap: the emulator, numpy, the report and the timing
model load only when a launch runs (``hypa-opt -p ...`` never pays for them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .deadline import positive_seconds

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from hypa.runtime.emulator.emulator import Emulator, LaunchResult
    from hypa.runtime.emulator.launch import Launch

def arch_argument(text: str) -> str:
    """argparse ``type=`` of ``--estimate-time``: ``runtime/models/timing.py``'s check, loaded when the option is given."""
    from hypa.runtime.models.timing import arch_argument as check

    return check(text)


def add_emulation_arguments(p: argparse.ArgumentParser, with_emulate: bool = True) -> None:
    """The emulation options: ``EmulationOptions``' fields (runtime/emulator/options.py), and
    what says which launches to run and how to print them.  With ``with_emulate``
    (``hypa-opt``): ``--emulate``."""
    from hypa.runtime.emulator import options

    g = p.add_argument_group("emulation")
    if with_emulate:
        g.add_argument("--emulate", nargs="?", const="", default=None, metavar="SPEC",
                       help="emulate a launch and print its metrics instead of the IR; SPEC is "
                            "'grid=N block=N args=a,b,... buffer.NAME=dtype:count[:init] kernel=NAME'")
    g.add_argument("--launch", metavar="FILE", help="launches from a TOML file (docs/guide.md, \"Launch specification\")")
    g.add_argument("--format", choices=("table", "json", "csv"), default="table", help="output format")
    g.add_argument("--csv-columns", choices=("hypa-py", "hypa", "blocks", "mix", "memory"), default="hypa-py",
                   help="CSV rows: one per launch with our columns (hypa-py) or HyPA's (Kernel, Static, Dynamic, "
                        "%% to execute); or one per basic block (blocks), per opcode of the kernel and of each "
                        "block (mix), per memory instruction (memory, with --memory-metrics)")
    g.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="stop the whole command after SECONDS of wall-clock time (exit status 124)")
    g.add_argument("--kernel", default=None, help="kernel to launch (mangled or demangled name)")
    g.add_argument("-j", "--jobs", type=jobs_count, default=1, metavar="N", help="spread CTAs over N processes")
    g.add_argument("--estimate-time", nargs="?", const="sm_90", default=None, metavar="ARCH", type=arch_argument,
                   help="also estimate the kernel's cycles and time on ARCH (sm_90 = H100 SXM5, the default; "
                        "sm_80 = A100; or an arch .toml): runtime/models/timing.py")
    options.add_arguments(g)


def emulation_options(args: argparse.Namespace):
    """The ``EmulationOptions`` of a command line (with ``--estimate-time``, the address trace
    its cache model reads)."""
    from hypa.runtime.emulator import options

    return options.from_arguments(args, address_trace=_trace_records(args))


def launches_from_args(args: argparse.Namespace) -> list[Launch]:
    from hypa.runtime.emulator.launch import LaunchError, launch_from_cli, launches_from_toml

    launches: list[Launch] = []
    if getattr(args, "launch", None):
        launches.extend(launches_from_toml(args.launch))
    spec = getattr(args, "emulate", None)
    if spec:
        launches.append(launch_from_cli(spec))
    if not launches:
        raise LaunchError("no launch given: use --emulate='grid=... block=... args=...' or --launch FILE")
    return launches


def select_kernel(module: ModuleOp, launches: Sequence[Launch], name: str | None) -> list[Launch]:
    """With ``--kernel NAME``: the launches of that kernel (a launch that names none is given
    it), as ``hypa profile --kernel`` does; a name the module does not define is an error,
    and so is a filter that leaves no launch."""
    if not name:
        return list(launches)
    from hypa.runtime.report.batch import kernel_matches
    from hypa.runtime.emulator.launch import LaunchError
    from hypa.runtime.emulator.program import find_kernel

    mangled = find_kernel(module, name).func_name  # ProgramError names the kernels there are
    out = []
    for L in launches:
        if L.kernel is None:
            L.kernel = mangled
        if kernel_matches(mangled, L.kernel) or L.kernel == mangled:
            out.append(L)
    if not out:
        given = ", ".join(sorted({str(L.kernel) for L in launches}))
        raise LaunchError(f"--kernel {name}: none of the launches ({given}) is of kernel {mangled}")
    return out


def run_launches(module: ModuleOp, launches: Sequence[Launch], args: argparse.Namespace) -> list[LaunchResult]:
    from hypa.runtime.emulator.emulator import Emulator

    emu = Emulator(module, options=emulation_options(args))
    launches = select_kernel(module, launches, getattr(args, "kernel", None))
    results = []
    for L in launches:  # one launch's memory at a time: the metrics are what is printed
        r = emu.run(L, jobs=args.jobs, keep_buffers=False)
        attach_estimate(r, emu, L, args)
        results.append(r)
    return results


def _trace_records(args: argparse.Namespace) -> int:
    """Address-trace records per launch: with ``--estimate-time``, for its cache model."""
    if not getattr(args, "estimate_time", None):
        return 0
    from hypa.runtime.models.timing import TRACE_RECORDS

    return TRACE_RECORDS


def attach_estimate(result: LaunchResult, emu: Emulator, launch: Launch, args: argparse.Namespace) -> None:
    """With ``--estimate-time``: the timing estimate of ``result`` (``result.time_estimate``)."""
    arch = getattr(args, "estimate_time", None)
    if arch:
        from hypa.runtime.models.timing import estimate

        result.time_estimate = estimate(result, launch, arch, program=emu.program_for(launch))  # type: ignore[attr-defined]
        result.memory_trace = None  # read by the estimate alone; launches must not accumulate traces
        if not args.memory_metrics:  # traced for the estimate, shown only if asked
            result.metrics.memory = None


def render_results(results: Sequence[LaunchResult], args: argparse.Namespace) -> str:
    from hypa.runtime.report.tables import render

    text = render(results, args.format, args.csv_columns)
    if any(getattr(r, "time_estimate", None) is not None for r in results):
        from hypa.runtime.models.timing import add_to_report

        text = add_to_report(text, results, args.format)
    return text


def emit(results: Sequence[LaunchResult], args: argparse.Namespace, out) -> None:
    out.write(render_results(results, args))


def jobs_count(text: str) -> int:
    """argparse ``type=`` of ``-j``: a number of processes, at least 1."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text!r}")
    return n


def fail(prog: str, msg: str) -> None:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    sys.exit(1)

