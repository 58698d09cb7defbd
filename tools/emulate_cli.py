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

#: (module, class) of the errors a launch reports as ``prog: error: ...``
_ERROR_CLASSES = (
    ("hypa.runtime.emulator.launch", "LaunchError"),
    ("hypa.runtime.emulator.emulator", "EmulationError"),
    ("hypa.runtime.emulator.program", "ProgramError"),
    ("hypa.runtime.models.timing", "TimingError"),
    ("hypa.runtime.emulator.lowering.rules", "LoweringError"),
)


def loaded_errors() -> tuple[type[Exception], ...]:
    """The classes of ``_ERROR_CLASSES`` whose modules are loaded, for an ``except`` clause:
    an exception of a class that was never imported cannot have been raised."""
    out = []
    for m, c in _ERROR_CLASSES:
        cls = getattr(sys.modules.get(m), c, None)
        if cls is not None:
            out.append(cls)
    return tuple(out)


def arch_argument(text: str) -> str:
    """argparse ``type=`` of ``--estimate-time``: ``runtime/models/timing.py``'s check, loaded when the option is given."""
    from hypa.runtime.models.timing import arch_argument as check

    return check(text)


def add_emulation_arguments(p: argparse.ArgumentParser, with_emulate: bool = True) -> None:
    """The emulation options.  With ``with_emulate`` (``hypa-opt``), ``--step-budget``
    defaults to None and ``run_launches`` substitutes the emulator's default, so that
    parsing the options does not load the emulator."""
    if with_emulate:
        step_budget_default = None
    else:
        from hypa.runtime.emulator.emulator import DEFAULT_STEP_BUDGET as step_budget_default
    g = p.add_argument_group("emulation")
    if with_emulate:
        g.add_argument("--emulate", nargs="?", const="", default=None, metavar="SPEC",
                       help="emulate a launch and print its metrics instead of the IR; SPEC is "
                            "'grid=N block=N args=a,b,... buffer.NAME=dtype:count[:init] kernel=NAME'")
    g.add_argument("--launch", metavar="FILE", help="launches from a TOML file (docs/guide.md, \"Launch specification\")")
    g.add_argument("--mode", choices=("slice", "full"), default="slice",
                   help="emulate only the slice (default) or every instruction")
    g.add_argument("--format", choices=("table", "json", "csv"), default="table", help="output format")
    g.add_argument("--csv-columns", choices=("hypa-py", "hypa", "blocks", "mix", "memory"), default="hypa-py",
                   help="CSV rows: one per launch with our columns (hypa-py) or HyPA's (Kernel, Static, Dynamic, "
                        "%% to execute); or one per basic block (blocks), per opcode of the kernel and of each "
                        "block (mix), per memory instruction (memory, with --memory-metrics)")
    g.add_argument("--exact-predicates", action="store_true", default=None,
                   help="also slice guard predicates so predicated-off counts are exact (default: as a slice "
                        "recorded in the IR says, else off)")
    g.add_argument("--step-budget", type=int, default=step_budget_default, metavar="N",
                   help="stop after N warp-instructions (runaway loops)")
    g.add_argument("--stack-size", type=int, default=None, metavar="BYTES",
                   help="call stack per thread for recursion and alloca (default 1024, CUDA's cudaLimitStackSize)")
    g.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="stop the whole command after SECONDS of wall-clock time (exit status 124)")
    g.add_argument("--kernel", default=None, help="kernel to launch (mangled or demangled name)")
    g.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="spread CTAs over N processes")
    g.add_argument("--memory-metrics", action="store_true",
                   help="also slice memory addresses: sectors/lines per request (global), bank conflicts (shared)")
    g.add_argument("--no-bounds-check", dest="bounds_check", action="store_false", default=True,
                   help="slice mode: do not compute and bounds-check the addresses of accesses outside the "
                        "slice (faster; an out-of-bounds access then goes unreported)")
    g.add_argument("--no-initcheck", dest="initcheck", action="store_false", default=True,
                   help="do not track which shared/local bytes were written (initcheck: a read of a byte no "
                        "thread wrote is a warning; off in slice mode with --no-bounds-check)")
    g.add_argument("--strict", action="store_true",
                   help="a read of shared/local memory never written (initcheck) is an error, not a warning")
    g.add_argument("--reconvergence", choices=("yield", "ipdom"), default="yield",
                   help="where divergent lanes of a warp reconverge (warp-level counts only): at the immediate "
                        "post-dominator, except that lanes waiting there go on alone when others run a spin loop "
                        "(ptxas's YIELD, as on the GPU; the default), or always at the immediate post-dominator")
    g.add_argument("--estimate-time", nargs="?", const="sm_90", default=None, metavar="ARCH", type=arch_argument,
                   help="also estimate the kernel's cycles and time on ARCH (sm_90 = H100 SXM5, the default; "
                        "sm_80 = A100; or an arch .toml): runtime/models/timing.py")


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
    from hypa.runtime import abi
    from hypa.runtime.emulator.emulator import DEFAULT_STEP_BUDGET, Emulator

    budget = args.step_budget if args.step_budget is not None else DEFAULT_STEP_BUDGET
    stack = getattr(args, "stack_size", None)
    emu = Emulator(module, mode=args.mode, exact_predicates=args.exact_predicates, step_budget=budget,
                   stack_size=abi.DEFAULT_STACK_SIZE if stack is None else stack,
                   memory_metrics=getattr(args, "memory_metrics", False),
                   bounds_check=getattr(args, "bounds_check", True), initcheck=getattr(args, "initcheck", True),
                   strict=getattr(args, "strict", False), reconvergence=getattr(args, "reconvergence", "yield"),
                   address_trace=_trace_records(args))
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
        from hypa.runtime.models.timing import estimate_run

        result.time_estimate = estimate_run(emu, launch, result, arch)  # type: ignore[attr-defined]
        result.memory_trace = None  # read by the estimate alone; launches must not accumulate traces
        if not getattr(args, "memory_metrics", False):  # traced for the estimate, shown only if asked
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


def fail(prog: str, msg: str) -> None:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    sys.exit(1)

