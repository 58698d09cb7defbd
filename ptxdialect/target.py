"""The ``ptx`` output target: ``hypa-opt ... -t ptx`` prints PTX text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


@dataclass(frozen=True)
class PTXTarget(Target):
    name: ClassVar[str] = "ptx"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from hypa.passes.out_of_ssa import ptx_namer
        from hypa.ptxdialect.printer import print_ptx

        print_ptx(module, output, ptx_namer(module))
