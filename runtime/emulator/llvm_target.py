"""The ``llvm`` output target: ``hypa-opt kernel.ptx -t llvm`` prints the LLVM IR the emulator
compiles for each kernel (``-t 'llvm{mode=full}'`` for the whole kernel, ``kernel=NAME`` for
one), so the lowering of any instruction can be read and FileCheck-tested.

The module is prepared as the emulator prepares it (``runtime/emulator/program.py``): a slice that
``slice-branches`` recorded in the IR is what gets lowered; without one the passes run first.
The target's options are ``kernel`` and every emulation option that changes the code
(``EmulationOptions.key()``: ``mode``, ``exact-predicates``, ``bounds-check`` ...), taken from
``runtime/emulator/options.py``.
"""

from __future__ import annotations

import dataclasses
from typing import IO, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from .options import EmulationOptions


def code_option_fields() -> list[dataclasses.Field]:
    """The emulation options that change the compiled code: the target's options."""
    return [f for f in dataclasses.fields(EmulationOptions) if f.metadata.get("code")]


def _emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
    from .lowering import LoweringError, lower
    from .program import ProgramError, find_kernel, module_kernels, prepare

    options = EmulationOptions.of(None, **{f.name: getattr(self, f.name) for f in code_option_fields()})
    try:
        kernels = [find_kernel(module, self.kernel)] if self.kernel else module_kernels(module)
        for k in kernels:
            prog = prepare(module, k, options)
            output.write(f"; kernel {k.func_name} ({prog.mode} mode)\n")
            output.write(lower(prog).full_text())
            output.write("\n")
    except (ProgramError, LoweringError) as e:
        raise DiagnosticException(f"-t llvm: {e}") from None


_HINTS = get_type_hints(EmulationOptions)
LLVMTarget = dataclasses.make_dataclass(
    "LLVMTarget",
    [("kernel", str, dataclasses.field(default=""))]
    + [(f.name, _HINTS[f.name], dataclasses.field(default=f.default)) for f in code_option_fields()],
    bases=(Target,), frozen=True,
    namespace={"name": "llvm", "emit": _emit, "__module__": __name__,
               "__doc__": "``-t llvm``: the LLVM IR of each kernel, with the emulation options that change it."},
)
