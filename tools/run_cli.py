"""``hypa run [options] -- PROGRAM ARGS...``: run an unmodified CUDA program (built with
``nvcc -cudart shared``, or a Python program on the driver API) on the CPU, every kernel
launch emulated and counted.

The program loads hypa's ``libcudart.so.<major>`` (``cudart.shim``) and ``libcuda.so.1``
(``cudart.driver_shim``) instead of NVIDIA's;
its stdout, stderr and exit status are its own.  hypa's report goes to ``-o FILE`` (format
from ``--format`` or the file's extension) or, without one, to stderr after the program ends.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from hypa.runtime.emulator import options

from .deadline import EXIT_TIMEOUT, positive_seconds
from .emulate_cli import jobs_count

FORMATS = {".json": "json", ".csv": "csv", ".txt": "table"}


class _Terminated(Exception):
    """SIGTERM or SIGHUP reached ``hypa run`` while its program ran."""

    def __init__(self, sig: int):
        super().__init__(sig)
        self.signal = sig


def _terminated(sig, _frame) -> None:
    raise _Terminated(sig)


#: seconds the program has to end after the signal hypa passes on, before SIGKILL
STOP_GRACE_S = 5.0


def _stop(proc: subprocess.Popen, sig: int) -> None:
    """Pass ``sig`` on to the program; SIGKILL if it has not ended ``STOP_GRACE_S`` later (it
    may handle the signal and go on)."""
    try:
        proc.send_signal(sig)
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _die_with(parent: int):
    """The program's first act (before exec): end with SIGKILL when hypa ends, however hypa
    ends (``PR_SET_PDEATHSIG``, Linux), so no program is left running on its own."""

    try:
        prctl = ctypes.CDLL(None).prctl  # looked up here: the forked child only calls it
    except (OSError, AttributeError):  # not Linux
        return None

    def preexec() -> None:
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # hypa ended before the line above
            os._exit(1)

    return preexec


def add_parser(sub) -> argparse.ArgumentParser:
    rp = sub.add_parser(
        "run", help="run a CUDA program on the CPU, every launch emulated and counted",
        description="Run an unmodified CUDA program built with `nvcc -cudart shared`, or a Python program on "
                    "CUDA's driver API (cuda-python, Numba-CUDA, CuPy, PyCUDA: hypa run -- python script.py): hypa stands in for the CUDA "
                    "runtime and driver, device memory is host memory, and every kernel launch runs in hypa's "
                    "emulator (full mode: the program sees its real results) and is counted as "
                    "`hypa profile` counts it.",
        epilog="examples: hypa run -o run.json -- ./bfs graph.txt\n          hypa run -- python vector_add.py\n\n"
               "The runtime and driver functions provided are listed in hypa/cudart/api.py and driver_api.py "
               "(docs/guide.md, \"hypa run\"); any other libcudart or libcuda function stops the program with a "
               "message naming it.", formatter_class=argparse.RawDescriptionHelpFormatter)
    rp.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS]",
                    help="the program and its arguments, after --")
    rp.add_argument("--arch", default="sm_90",
                    help="the GPU the program sees (device properties, which embedded PTX runs; default sm_90, an H100)")
    rp.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                    help="stop the program after SECONDS of wall-clock time (exit status 124)")
    rp.add_argument("--exact-bounds", action="store_true",
                    help="report every access outside the bytes a program allocated (before or past them), as compute-sanitizer's memcheck "
                         "does (default: as a GPU, which does not fault within CUDA's 256-byte allocation alignment)")
    rp.add_argument("-j", "--jobs", type=jobs_count, default=1, help="CTAs of one launch on N processes (default 1)")
    rp.add_argument("-o", "--output", help="write the report here (default: a table on stderr)")
    rp.add_argument("--format", choices=("table", "json", "csv"), default=None,
                    help="report format (default: from the -o file's extension, else table)")
    rp.add_argument("--by", choices=("launch", "kernel", "line"), default="launch",
                    help="one row per launch, per kernel, or per CUDA source line (build with -lineinfo)")
    rp.add_argument("--capture", metavar="DIR",
                    help="also write each launch as a launch spec with its input buffers to DIR "
                         "(`hypa profile DIR` replays them), as 64 KiB chunks each stored once")
    rp.add_argument("--capture-launches", metavar="SPEC",
                    help="with --capture: only these launches, comma-separated terms any of which selects one: "
                         "an index (7; launches count from 0), a range (0-9, 100-), every n-th (%%10: 0, 10, 20 ...), "
                         "a kernel name as --kernel of `hypa profile` takes it, with * ? [..] wildcards "
                         "(example: 'gemm*,0-9,%%100')")
    rp.add_argument("-q", "--quiet", action="store_true",
                    help="no progress line (by default one on stderr, when it is a terminal, once a run takes more "
                         "than 2 s: the launch, its kernel, thread-instructions emulated per second)")
    rp.add_argument("--timing", action="store_true",
                    help="print where the program's time went inside hypa, per phase (parse, prepare, lower, "
                         "compile, emulate ...), to stderr, as hypa profile --timing does")
    rp.add_argument("--estimate-time", nargs="?", const="sm_90", default=None, metavar="ARCH",
                    help="also estimate each launch's time on ARCH (sm_90 = H100 SXM5, the default; sm_80 = A100; "
                         "or an arch .toml) with the cache model fed by the launch's address trace, as `hypa profile "
                         "--estimate-time` does; the report gets the estimate's columns")
    rp.add_argument("--build-only", action="store_true",
                    help="build hypa's CUDA runtime libraries, print where they are, and stop")
    g = rp.add_argument_group("emulation")
    # full mode by default: the program reads its results back
    options.add_arguments(g, defaults=options.RUN_DEFAULTS)
    return rp


def _fail(msg: str, code: int = 2) -> None:
    print(f"hypa run: error: {msg}", file=sys.stderr)
    sys.exit(code)


#: the CUDA major a program that loads only the driver (a Python program, one linked with
#: -lcuda alone) gets hypa's runtime library for: cuda-python 13's
DRIVER_PROGRAM_MAJOR = 13


def _python_interpreter(exe: str, needed: list[str]) -> tuple[int, int] | None:
    """The Python version of the interpreter ``exe`` (from its ``libpython3.N`` or its name),
    None where it is not one."""
    for name in [*needed, os.path.basename(os.path.realpath(exe)), os.path.basename(exe)]:
        m = re.fullmatch(r"(?:lib)?python(\d)\.(\d+)[a-z]*(?:\.so.*)?", name)
        if m:
            return int(m.group(1)), int(m.group(2))
    if re.fullmatch(r"python3?", os.path.basename(exe)):  # a `python3` its name does not date: ask it
        try:
            p = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                               text=True, timeout=60)
            major, minor = p.stdout.split()
            return int(major), int(minor)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None
    return None


def _check_python(exe: str, version: tuple[int, int]) -> None:
    """hypa runs inside the program's own interpreter: it must be a Python hypa's packages
    (numpy, llvmlite, xdsl) are built for."""
    if version != sys.version_info[:2]:
        _fail(f"{exe} is Python {version[0]}.{version[1]}, and hypa runs inside the program's interpreter: run the "
              f"program with the Python hypa is installed in (Python {sys.version_info[0]}.{sys.version_info[1]}: "
              f"{sys.executable})")


def _program_name(exe: str, argv: list[str], python: tuple[int, int] | None) -> str:
    """What the report and messages call the program: a Python program's script, where given."""
    if python is not None and len(argv) > 1 and not argv[1].startswith("-") and os.path.isfile(argv[1]):
        return argv[1]
    return exe


def _python_environment(env: dict, cudart_soname: str) -> None:
    """What Python GPU packages need to run on hypa's libraries: CuPy's extension modules carry
    CUDA's static runtime, sent to hypa's libcudart as Python loads them (a ``sitecustomize``
    first on PYTHONPATH, ``cudart/static_runtime.py``), CuPy's NVRTC makes PTX, not a cubin
    (``CUPY_COMPILE_WITH_PTX=1``), CuPy reduces with its own kernels, not CUB's, which ship as
    SASS (``CUPY_ACCELERATORS=''``; a program's own settings stand), and ``nvcc --cubin`` (how
    PyCUDA's ``SourceModule`` compiles) makes PTX, through an ``nvcc`` first on PATH."""
    from hypa.cudart import static_runtime

    startup = os.path.join(os.path.dirname(os.path.abspath(static_runtime.__file__)), "python_startup")
    env["PYTHONPATH"] = startup + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["HYPA_CUDART_SONAME"] = cudart_soname
    env.setdefault("CUPY_COMPILE_WITH_PTX", "1")
    env.setdefault("CUPY_ACCELERATORS", "")  # CuPy's own reduction kernels, not CUB's (SASS alone)
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    if nvcc is not None:  # PyCUDA's SourceModule asks nvcc for a cubin: PTX instead (python_startup/bin/nvcc)
        env["HYPA_REAL_NVCC"] = nvcc
        env["PATH"] = os.path.join(startup, "bin") + os.pathsep + env.get("PATH", "")


def run(args: argparse.Namespace) -> int:
    from hypa.cudart import driver_shim, shim
    from hypa.cudart.program import NotAProgram, ProgramInfo, inspect

    if args.build_only:
        try:
            for major in shim.SUPPORTED_MAJORS:
                print(shim.build(major))
            print(driver_shim.build(DRIVER_PROGRAM_MAJOR))
        except shim.BuildError as e:
            _fail(str(e))
        return 0
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        _fail("no program given: hypa run [options] -- PROGRAM [ARGS]")
    if args.estimate_time is not None:
        from hypa.runtime.models.timing import arch_argument

        try:
            arch_argument(args.estimate_time)
        except argparse.ArgumentTypeError as e:
            _fail(f"--estimate-time: {e}")
    try:
        emulation = options.from_arguments(args)
    except options.OptionError as e:
        _fail(str(e))
    if args.capture_launches is not None:
        from hypa.cudart.capture import LaunchSelection

        if not args.capture:
            _fail("--capture-launches needs --capture DIR")
        try:
            LaunchSelection(args.capture_launches)
        except ValueError as e:
            _fail(f"--capture-launches: {e}")
    exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if exe is None or not os.path.isfile(exe):
        _fail(f"{argv[0]}: no such program")
    if not os.access(exe, os.X_OK):
        _fail(f"{exe}: not executable")
    try:
        info = inspect(exe)
    except NotAProgram as e:
        if not re.fullmatch(r"python[\d.]*", os.path.basename(exe)):
            _fail(str(e))
        info = ProgramInfo(exe, [], None, False, False)  # a launcher script (pyenv's shims): asked below
    except OSError as e:
        _fail(f"{exe}: {e.strerror}")
    if info.static_cudart:
        _fail(f"{exe} is linked with the static CUDA runtime (nvcc's default), which hypa cannot stand in for; "
              f"rebuild it with `nvcc -cudart shared`")
    python = _python_interpreter(exe, info.needed)
    major = info.cudart_major
    if major is None:
        if python is None and "libcuda.so.1" not in info.needed:
            _fail(f"{exe} does not load the CUDA runtime (no libcudart.so.N among its libraries: "
                  f"{', '.join(info.needed) or 'none'}) nor the driver (libcuda.so.1); hypa run runs programs built "
                  f"with `nvcc -cudart shared`, and Python programs (hypa run -- python script.py)")
        major = DRIVER_PROGRAM_MAJOR
    if python is not None:
        _check_python(exe, python)
    try:
        lib = shim.build(major)
        driver = driver_shim.build(major)
    except shim.BuildError as e:
        _fail(str(e))
    fmt = args.format or (FORMATS.get(os.path.splitext(args.output)[1].lower(), "table") if args.output else "table")
    if args.capture:
        os.makedirs(args.capture, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="hypa-run-")
    results = os.path.join(tmp, "results.json")
    opts = {"emulation": dataclasses.asdict(emulation), "arch": args.arch, "results": results,
            "capture": os.path.abspath(args.capture) if args.capture else None,
            "capture_launches": args.capture_launches,
            "program": _program_name(exe, argv, python), "exact_bounds": args.exact_bounds, "format": fmt, "by": args.by, "jobs": args.jobs, "quiet": args.quiet,
            "estimate_time": args.estimate_time, "timing": args.timing}
    env = dict(os.environ)
    # the driver library (libcuda.so.1) too, which Python packages load themselves: preloaded,
    # so that a dlopen of it finds hypa's by its soname whatever the search path
    libdirs = os.pathsep.join(dict.fromkeys((os.path.dirname(driver), os.path.dirname(lib))))
    env["LD_LIBRARY_PATH"] = libdirs + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["LD_PRELOAD"] = f"{lib} {driver}" + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["HYPA_SYS_PATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env["HYPA_RUN"] = json.dumps(opts)
    if python is not None:
        _python_environment(env, os.path.basename(lib))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        proc = subprocess.Popen([exe, *argv[1:]], env=env, preexec_fn=_die_with(os.getpid()))
    except OSError as e:
        _fail(f"{exe}: {e.strerror}")
    old_handlers = ({sig: signal.signal(sig, _terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
                    if threading.current_thread() is threading.main_thread() else {})
    try:
        rc = proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"hypa run: error: stopped {os.path.basename(exe)} after {args.timeout:g} s (--timeout)", file=sys.stderr)
        return EXIT_TIMEOUT
    except (KeyboardInterrupt, _Terminated) as e:
        # the program stops too (Ctrl-C reaches the whole process group; `kill` only hypa):
        # with the same signal, then for good
        sig = e.signal if isinstance(e, _Terminated) else signal.SIGINT
        _stop(proc, sig)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"hypa run: interrupted ({signal.Signals(sig).name}); {os.path.basename(exe)} stopped", file=sys.stderr)
        if sig == signal.SIGINT:
            return 130
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)  # ends as the signal's default action would have
        return 128 + sig
    finally:
        for sig, old in old_handlers.items():
            signal.signal(sig, old)
    try:
        with open(results) as f:
            out = json.load(f)
        if args.output:  # the report, copied as it was written (never whole in memory)
            with open(out["text_file"]) as src, open(args.output, "w") as dst:
                shutil.copyfileobj(src, dst)
        else:
            with open(out["text_file"]) as src:
                shutil.copyfileobj(src, sys.stderr)
    except (OSError, ValueError, KeyError):
        out = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc < 0:
        print(f"hypa run: {os.path.basename(exe)} was killed by signal {-rc} ({signal.Signals(-rc).name})", file=sys.stderr)
        rc = 128 - rc
    if out is None:
        print(f"hypa run: {os.path.basename(exe)} ended before hypa could write its results "
              f"(it made no CUDA call, or exited abnormally)", file=sys.stderr)
        return rc
    s = out["summary"]
    failed = f", {s['failed']} failed" if s["failed"] else ""
    print(f"hypa run: {s['launches']} launch{'es' if s['launches'] != 1 else ''} of {s['kernels']} kernel"
          f"{'s' if s['kernels'] != 1 else ''}{failed}; "
          f"{s['thread_instructions']} thread-instructions emulated in {s['emulate_s']:.2f} s; "
          f"program ran {s['wall_s']:.2f} s" + (f"; report in {args.output}" if args.output else ""), file=sys.stderr)
    for iv in s.get("event_intervals", []):  # --estimate-time: what each interval the program timed would take
        n, first = iv["launches"], iv["first_launch"]
        which = "no launch" if n == 0 else f"launch {first}" if n == 1 else f"launches {first}-{first + n - 1}"
        names = ", ".join(iv["kernels"][:3]) + (" ..." if len(iv["kernels"]) > 3 else "")
        print(f"hypa run: event interval over {which}{f' ({names})' if n else ''}: estimated "
              f"{iv['estimate_ms']:.4f} ms on {args.estimate_time} (what cudaEventElapsedTime returned)",
              file=sys.stderr)
    c = s.get("capture")
    if c is not None:
        print(f"hypa run: captured {c['launches']} of {s['launches']} launch{'es' if s['launches'] != 1 else ''} "
              f"in {args.capture}: {c['bytes'] / 1e6:.1f} MB written ({c['bytes']:,} bytes; {c['chunks']:,} new chunk"
              f"{'s' if c['chunks'] != 1 else ''}, {c['manifests']:,} manifest{'s' if c['manifests'] != 1 else ''})"
              + (f"; capture stopped: {c['error']}" if c.get("error") else ""), file=sys.stderr)
    if s.get("timing"):
        print(s["timing"], file=sys.stderr)
    return rc
