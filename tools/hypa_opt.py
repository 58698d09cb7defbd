"""``hypa-opt``: xDSL's optimizer driver with a PTX front end and a PTX target.

    hypa-opt kernel.ptx                 # print the IR (register form)
    hypa-opt kernel.ptx -t ptx          # print PTX again
    hypa-opt -p ptx-to-ssa kernel.ptx   # run a pipeline
    hypa-opt --slice-branches --emulate='grid=4 block=256 args=...' kernel.ptx

Every registered pass is also a flag (``--slice-branches``,
``--slice-branches="exact-predicates=true"``), as in ``mlir-opt``; flags and
``-p`` compose in command-line order.  ``--emulate``/``--launch`` run the
emulator on the result and print metrics instead of IR.

Everything ``xdsl-opt`` offers (``-p``, ``-o``, ``--split-input-file``,
``--print-op-generic`` ...) works the same way.  Errors in the input are
reported as ``file:line:col: error: ...`` with exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from hypa.ptxdialect.diagnostics import PTXError

from .emulate_cli import ERRORS, add_emulation_arguments, emit, launches_from_args, run_launches


class _PassFlag(argparse.Action):
    """``--pass-name[=options]``: append the pass to the pipeline, in order."""

    def __call__(self, parser, namespace, values, option_string=None):
        flags = list(getattr(namespace, "pass_flags", None) or [])
        opts = (values or "").strip()
        if opts.startswith("{"):
            opts = opts[1:-1]
        flags.append(self.dest if not opts else f"{self.dest}{{{opts}}}")
        namespace.pass_flags = flags


_LISTED = {"ptx-build-cfg", "ptx-to-ssa", "ptx-out-of-ssa", "slice-branches", "count-instructions", "print-cfg-dot", "instrument-block-counters"}


class HypaOptMain(xDSLOptMain):
    version_format = "hypa-opt (hypa 0.1.0) built on xdsl {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="hypa modular optimizer driver for PTX", args=args)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add_emulation_arguments(arg_parser)
        arg_parser.set_defaults(pass_flags=[])
        g = arg_parser.add_argument_group("passes (as flags, applied in command-line order)")
        for name in sorted(self.available_passes):
            g.add_argument(f"--{name}", dest=name, nargs="?", const="", action=_PassFlag, metavar="OPTIONS",
                           help=argparse.SUPPRESS if name not in _LISTED else f"run the {name} pass")

    def setup_pipeline(self) -> None:
        flags = getattr(self.args, "pass_flags", None) or []
        if flags:
            self.args.passes = ",".join([p for p in [self.args.passes] if p] + flags)
        super().setup_pipeline()

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_ptx_chunk(io: IO[bytes]) -> ModuleOp:
            from hypa.ptxdialect.parser import parse_ptx

            text = io.read().decode("utf-8", errors="replace")
            return parse_ptx(text, self.get_input_name(), getattr(self, "_chunk_offset", 0))

        self.available_frontends["ptx"] = parse_ptx_chunk

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        self._chunk_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def run(self) -> None:
        try:
            if self.args.emulate is not None or self.args.launch:
                self.run_emulation()
            else:
                super().run()
        except PTXError as e:
            print(e, file=sys.stderr)
            sys.exit(1)
        except (ParseError, VerifyException, DiagnosticException, PassFailedException) as e:
            print(f"{self.get_input_name()}: error: {e}", file=sys.stderr)
            sys.exit(1)
        except FileNotFoundError as e:
            print(f"hypa-opt: error: {e.strerror}: '{e.filename}'", file=sys.stderr)
            sys.exit(1)
        except ERRORS as e:
            print(f"hypa-opt: error: {e}", file=sys.stderr)
            sys.exit(1)
        except ValueError as e:
            print(f"hypa-opt: error: {e}", file=sys.stderr)
            sys.exit(1)

    def run_emulation(self) -> None:
        """Parse, run the pipeline, emulate the launches, print metrics."""
        launches = launches_from_args(self.args)
        chunks, ext = self.prepare_input()
        chunk, offset = chunks[0]
        module = self.parse_chunk(chunk, ext, offset)
        chunk.close()
        assert module is not None
        self.apply_passes(module)
        if "slice-branches" in (self.args.passes or "") and self.args.mode != "slice":
            print("hypa-opt: note: --slice-branches with --mode=full: the slice is marked but every instruction is emulated", file=sys.stderr)
        results = run_launches(module, launches, self.args)
        out = self.prepare_output()
        try:
            emit(results, self.args, out)
        finally:
            if out is not sys.stdout:
                out.close()


def main(argv: Sequence[str] | None = None) -> None:
    try:
        HypaOptMain(args=argv).run()
    except FileNotFoundError as e:
        print(f"hypa-opt: error: {e.strerror}: '{e.filename}'", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
