"""The ``llvm`` output target: ``hypa-opt kernel.ptx -t llvm`` prints the LLVM IR the emulator
compiles for each kernel (``-t 'llvm{mode=full}'`` for the whole kernel, ``kernel=NAME`` for
one), so the lowering of any instruction can be read and FileCheck-tested.

The module is prepared as the emulator prepares it (``runtime/emulator/program.py``): a slice that
``slice-branches`` recorded in the IR is what gets lowered; without one the passes run first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target


@dataclass(frozen=True)
class LLVMTarget(Target):
    name: ClassVar[str] = "llvm"

    mode: str = "slice"
    kernel: str = ""
    exact_predicates: bool = False
    memory_metrics: bool = False

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from .lowering import LoweringError, lower
        from .program import ProgramError, find_kernel, module_kernels, prepare

        try:
            kernels = [find_kernel(module, self.kernel)] if self.kernel else module_kernels(module)
            for k in kernels:
                prog = prepare(module, k, self.mode, True if self.exact_predicates else None,
                               memory_metrics=self.memory_metrics)
                output.write(f"; kernel {k.func_name} ({prog.mode} mode)\n")
                output.write(lower(prog).full_text())
                output.write("\n")
        except (ProgramError, LoweringError) as e:
            raise DiagnosticException(f"-t llvm: {e}") from None
