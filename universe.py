"""Registers the ``ptx`` dialect, hypa's passes and the ``ptx`` and ``ptx-llvm`` targets with xDSL.

Found through the ``xdsl.universe`` entry point, so plain ``xdsl-opt`` sees
them too (``xdsl-opt -p ptx-to-ssa file.mlir``).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target


def _get_ptx_dialect() -> Dialect:
    from hypa.ptxdialect.dialect import PTX

    return PTX


def _get_ptx_target() -> type[Target]:
    from hypa.tools.ptx_target import PTXTarget

    return PTXTarget


def _get_llvm_target() -> type[Target]:
    from hypa.runtime.emulator.llvm_target import LLVMTarget

    return LLVMTarget


def _passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from hypa.passes import get_all_passes

    return get_all_passes()


HYPA_UNIVERSE = Universe(
    all_dialects={"ptx": _get_ptx_dialect},
    all_passes=_passes(),
    # hypa-opt shows the emulator's lowering as "-t llvm"; xDSL's own "llvm" target (the
    # llvm dialect as text) keeps that name everywhere else, so it is registered as "ptx-llvm"
    all_targets={"ptx": _get_ptx_target, "ptx-llvm": _get_llvm_target},
)
