"""``hypa-opt``: xDSL's optimizer driver with a PTX front end and a PTX target.

    hypa-opt kernel.ptx                 # print the IR (register form)
    hypa-opt kernel.ptx -t ptx          # print PTX again
    hypa-opt -p ptx-to-ssa kernel.ptx   # run a pipeline

Everything ``xdsl-opt`` offers (``-p``, ``-o``, ``--split-input-file``,
``--print-op-generic`` ...) works the same way.  Errors in the input are
reported as ``file:line:col: error: ...`` with exit code 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from hypa.ptxdialect.diagnostics import PTXError


class HypaOptMain(xDSLOptMain):
    version_format = "hypa-opt (hypa 0.1.0) built on xdsl {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="hypa modular optimizer driver for PTX", args=args)

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
        except ValueError as e:
            print(f"hypa-opt: error: {e}", file=sys.stderr)
            sys.exit(1)


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
