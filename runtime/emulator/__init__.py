"""The emulator layer: a kernel's PTX prepared (runtime/emulator/program.py), lowered to LLVM IR
(lowering/), JIT-compiled (jit.py) and run over a launch's memory (launch.py, flat_memory.py,
device_heap.py, textures.py) by warps of 32 lanes (emulator.py, cta_ranges.py, executor.py).

It imports only ``runtime.abi`` and ``runtime.metrics`` from the runtime (the layers above it --
models, report -- read its results).  The public names are importable from the package
(``from hypa.runtime.emulator import Emulator``); they load on first use, so importing a
leaf module (``launch``, ``phases``) stays cheap.
"""

from __future__ import annotations

import importlib

#: public name -> the module (in this package) that defines it
_EXPORTS = {
    "Emulator": "emulator", "LaunchResult": "emulator", "EmulationError": "emulator",
    "emulate": "emulator", "DEFAULT_STEP_BUDGET": "options", "EmulationOptions": "options",
    "Launch": "launch", "LaunchError": "launch", "BufferSpec": "launch",
    "KernelProgram": "program", "ProgramError": "program",
}


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


__all__ = sorted(_EXPORTS)
