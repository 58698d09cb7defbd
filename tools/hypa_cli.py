"""``hypa``: profile many kernels.

    hypa profile kernel.ptx --launch launches.toml --format csv -o profile.csv
    hypa profile --launch all.toml          # each [[launch]] names its PTX `file`

Launches come from a TOML file (DESIGN.md section 6); a launch with ``file``
runs on that file, one without runs on every given file that defines its
kernel.  Kernels that no launch names are counted statically and the output
says so.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from hypa.ptxdialect.diagnostics import PTXError

from .emulate_cli import ERRORS, add_emulation_arguments, fail


def _parse_file(path: str, cache: dict):
    from hypa.ptxdialect import parse_ptx_file

    if path not in cache:
        cache[path] = parse_ptx_file(path)
    return cache[path]


def profile(args: argparse.Namespace) -> int:
    from hypa.passes.count import count_function
    from hypa.ptxdialect.dialect import FuncOp
    from hypa.runtime.emulator import Emulator
    from hypa.runtime.launch import launches_from_toml
    from hypa.runtime.report import render

    files = [os.path.abspath(f) for f in args.files]
    for f in files:
        if not os.path.isfile(f):
            fail("hypa", f"no such file: {f}")
    launches = launches_from_toml(args.launch) if args.launch else []
    if not files and not any(L.file for L in launches):
        fail("hypa", "give PTX files, or a --launch TOML whose launches name their `file`")
    modules: dict = {}
    emulators: dict = {}
    results = []
    launched: set[tuple[str, str]] = set()
    for L in launches:
        targets = [os.path.abspath(L.file)] if L.file else files
        ran = False
        for f in targets:
            m = _parse_file(f, modules)
            kernels = [op for op in m.ops if isinstance(op, FuncOp) and op.is_kernel and not op.is_declaration]
            if L.kernel is not None and not any(_matches(k.func_name, L.kernel) for k in kernels):
                continue
            emu = emulators.get(f)
            if emu is None:
                emu = emulators[f] = Emulator(m, mode=args.mode, exact_predicates=args.exact_predicates,
                                              step_budget=args.step_budget)
            r = emu.run(L, jobs=args.jobs)
            results.append(r)
            launched.add((f, r.kernel))
            ran = True
            if L.kernel is None:
                break
        if not ran:
            fail("hypa", f"no file defines kernel '{L.kernel}'")
    static_only = []
    for f in files:
        m = _parse_file(f, modules)
        for op in m.ops:
            if isinstance(op, FuncOp) and op.is_kernel and not op.is_declaration and (f, op.func_name) not in launched:
                static_only.append((f, count_function(op)))
    out = open(args.output, "w") if args.output else sys.stdout
    try:
        if results:
            out.write(render(results, args.format, args.csv_columns))
        if static_only:
            if args.format == "json":
                import json

                out.write(json.dumps([{"file": f, "kernel": c.name, "static_instructions": c.total.instructions,
                                       "note": "no launch given: static counts only"} for f, c in static_only], indent=2) + "\n")
            else:
                stream = out if args.format == "table" else sys.stderr
                for f, c in static_only:
                    stream.write(f"kernel {c.name} ({os.path.basename(f)}): no launch given, counted statically: "
                                 f"{c.total.instructions} instructions\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _matches(mangled: str, name: str) -> bool:
    from hypa.runtime.demangle import demangle

    d = demangle(mangled)
    return name in (mangled, d, d.split("(")[0])


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="hypa", description="hybrid PTX analysis: profile CUDA kernels without a GPU")
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("profile", help="emulate launches and report metrics")
    pp.add_argument("files", nargs="*", help="PTX files")
    pp.add_argument("-o", "--output", help="write the report here instead of stdout")
    add_emulation_arguments(pp, with_emulate=False)
    args = p.parse_args(argv)
    try:
        sys.exit(profile(args))
    except PTXError as e:
        print(e, file=sys.stderr)
        sys.exit(1)
    except ERRORS as e:
        fail("hypa", str(e))
    except OSError as e:
        fail("hypa", f"{e.strerror}: {e.filename}")


if __name__ == "__main__":
    main()
