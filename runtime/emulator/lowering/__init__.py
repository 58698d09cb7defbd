"""Lowering of a ``KernelProgram`` (``runtime/emulator/program.py``) to LLVM IR, which the JIT compiles.

The module has two functions: ``warp_run(ws, ctx, warp)`` runs one warp until it exits,
waits at a barrier or fails; ``run_ctas(ctx, first, last)`` schedules the CTAs of a range
and their warps.  ``hypa-opt -t llvm`` prints it.  The package's modules, each importing
only those above it in this list:

- ``types``: lane types (``<32 x iN>``, masks), PTX type facts, immediates' bit patterns
- ``rules``: the rule registry keyed by ISA entry, and ``LoweringError``
- ``irbuild``: counted loops, a scalar broadcast, ``llvm.cttz``, helper functions
- ``softfloat``: rounding to any float format on integers, exact float arithmetic
- ``function``: ``WarpFunction``, the warp function's state: context, frame, lanes, errors
- ``outline``: helper functions built once per module for code every access repeats
- ``initcheck``: the shadow of shared/local bytes written (reads of bytes no thread wrote)
- ``racecheck``: the shadow of shared-memory accesses since the last barrier (hazards)
- ``addressing``: state-space addresses to bounds-checked host pointers, flat lookup
- ``hoisted``: slice mode's bounds checks hoisted to a loop's entry (``passes/hoist_checks.py``)
- ``emitter``: ``Emitter``, what a rule sees of one instruction
- ``semantics/``: the rules, one module per instruction family
- ``memory_metrics``: the ``--memory-metrics`` counters
- ``printf``: device ``printf``
- ``calls``: real calls and returns (recursion, indirect calls: a per-thread stack)
- ``heap``: device ``malloc``/``free``
- ``warp``: ``WarpCodegen``, the SIMT control flow and each block's lowering
- ``scheduler``: the CTA scheduler
"""

from __future__ import annotations

from llvmlite import ir

from ..program import KernelProgram
from .irbuild import Lowered, split_module
from .rules import LoweringError
from .types import float_imm_bits

__all__ = ["Lowered", "LoweringError", "build_module", "float_imm_bits", "lower", "supported_entries"]


def build_module(prog: KernelProgram, outline: bool = True) -> ir.Module:
    """The LLVM module of ``prog``: ``warp_run`` and ``run_ctas``.  ``outline``: memory
    accesses call helper functions (``outline.py``); else their code is built inline."""
    import llvmlite.binding as llvm

    from .scheduler import build_scheduler
    from .warp import WarpCodegen

    module = ir.Module(name=f"hypa_{prog.func.func_name}")
    module.triple = llvm.get_process_triple()
    codegen = WarpCodegen(prog, module)
    codegen.outline = outline
    build_scheduler(module, codegen.generate())
    return module


def lower(prog: KernelProgram, tier: str = "baseline") -> Lowered:
    """The IR text the JIT compiles at ``tier``: the module of ``build_module``, which
    declares its helper functions, and their texts (``irbuild.split_module``).  The baseline
    tier calls the memory accesses' helpers (small IR: fast to compile); the optimized tier
    builds them inline, as LLVM's optimizer wants them: inlined helpers return through a
    merge that keeps their error paths inside the warp function's loop, where LICM spent 4x
    longer on them than on inline checks that leave it (5 s instead of 1.3 s on a kernel of
    1,200 instructions).

    The cyclic GC is paused meanwhile: lowering makes tens of thousands of objects that all
    live until the text is made, and collections that traverse them find nothing (30% of
    the lowering's time at the default thresholds)."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    try:
        return split_module(build_module(prog, outline=tier == "baseline"))
    finally:
        if paused:
            gc.enable()


def supported_entries() -> set[str]:
    """The ISA entries that have a lowering rule."""
    from . import semantics  # noqa: F401  (registers the rules
    from .rules import RULES

    return set(RULES)
