"""The ``ptx`` output target: ``hypa-opt ... -t ptx`` prints PTX text.

SSA-form functions are converted back to register form on a copy of the
module first (``ptx-out-of-ssa``), so the target never changes its input.
"""

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
        from hypa.passes.out_of_ssa import PTXOutOfSSA
        from hypa.passes.ssa import SSA_ATTR
        from hypa.ptxdialect.printer import print_ptx

        if any(SSA_ATTR in op.attributes for op in module.ops):
            module = module.clone()
            PTXOutOfSSA().apply(ctx, module)
        print_ptx(module, output)
