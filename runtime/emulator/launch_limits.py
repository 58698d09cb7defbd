"""What a GPU refuses to launch: threads per CTA beyond the kernel's ``.maxntid``/``.reqntid``
(``__launch_bounds__``), and shared memory beyond what the kernel may have (issue 31).

The figures come from the architecture file (``runtime/models/arch/<arch>.toml``,
``[occupancy]``: ``max_threads_per_cta``, ``shared_per_cta_default`` -- static plus dynamic
without the ``cudaFuncAttributeMaxDynamicSharedMemorySize`` opt-in -- and
``shared_per_cta_max``, the most a CTA may opt into); the kernel's own from its directives.
``hypa run`` returns the error a CUDA runtime returns (``cudart/host.py``); ``hypa-opt``
and ``hypa profile`` end the launch with the same message (a launch specification cannot
say whether the program opted in, so it may use up to ``shared_per_cta_max``).  A refusal
for a ``.reqntid``/``.maxntid`` names the directive's ``file:line:col``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from hypa.ptxdialect.dialect import FuncOp

from . import arch_file

_ARCH_DIR = str(arch_file.ARCH_DIR)


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    max_threads_per_cta: int
    #: static + dynamic shared memory of a CTA without the opt-in
    shared_per_cta_default: int
    #: the most static + dynamic shared memory a CTA may opt into
    shared_per_cta_max: int


@lru_cache(maxsize=None)
def arch_limits(arch: str = "sm_90") -> ArchLimits:
    """The launch limits of ``arch`` (``sm_90``, ``sm_80``; another name: sm_90's)."""
    path = os.path.join(_ARCH_DIR, f"{arch}.toml")
    if not os.path.isfile(path):
        path = os.path.join(_ARCH_DIR, "sm_90.toml")
    occ = arch_file.read(path)["occupancy"]
    return ArchLimits(os.path.basename(path)[:-5], int(occ["max_threads_per_cta"]), int(occ["shared_per_cta_default"]),
                      int(occ["shared_per_cta_max"]))


def _dims(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(x, 0) for x in text.replace(",", " ").split())
    except ValueError:
        return None


def kernel_max_threads(func: FuncOp, arch: str = "sm_90") -> int:
    """The most threads a CTA of ``func`` may have: its ``.reqntid``'s or ``.maxntid``'s
    product, at most the architecture's (``cudaFuncAttributes.maxThreadsPerBlock``)."""
    limit = arch_limits(arch).max_threads_per_cta
    for d in (".reqntid", ".maxntid"):
        dims = _dims(func.directive(d))
        if dims:
            n = 1
            for x in dims:
                n *= x
            limit = min(limit, n)
    return limit


def default_dynamic_shared(static: int, arch: str = "sm_90") -> int:
    """The dynamic shared memory a kernel with ``static`` bytes of ``.shared`` may take
    before any opt-in (``cudaFuncAttributes.maxDynamicSharedSizeBytes``)."""
    return max(0, arch_limits(arch).shared_per_cta_default - static)


class Refusal(NamedTuple):
    """Why a GPU would refuse a launch: the CUDA error name, the message, and where the PTX
    says so (``file``, 1-based ``line`` and ``column`` of the ``.reqntid``/``.maxntid``
    directive; None/0 where no directive or no position is known)."""

    code: str
    message: str
    file: str | None = None
    line: int = 0
    column: int = 0

    @property
    def located(self) -> str:
        """``file:line:col: message`` (the message alone where there is no position)."""
        return self.message if self.file is None else f"{self.file}:{self.line}:{self.column}: {self.message}"


def _at(func: FuncOp, directive: str, code: str, message: str) -> Refusal:
    where = func.directive_location(directive)
    return Refusal(code, message, *where) if where else Refusal(code, message)


def launch_error(func: FuncOp, static_shared: int, block: tuple[int, int, int], dynamic: int,
                 max_dynamic: int | None = None, arch: str = "sm_90") -> Refusal | None:
    """Why a GPU would refuse the launch, else None.  ``max_dynamic``: the kernel's dynamic
    shared memory attribute (``None``: opted in as far as the architecture allows)."""
    lim = arch_limits(arch)
    name = func.func_name
    threads = block[0] * block[1] * block[2]
    req = _dims(func.directive(".reqntid"))
    if req:
        want = tuple(req) + (1,) * (3 - len(req))
        if tuple(block) != want[:3]:
            code = "cudaErrorLaunchOutOfResources" if threads > want[0] * want[1] * want[2] else "cudaErrorInvalidValue"
            return _at(func, ".reqntid", code, f"block {tuple(block)} is not the {', '.join(map(str, want[:3]))} "
                                               f"that kernel {name}'s .reqntid requires")
    most = kernel_max_threads(func, arch)
    bound = func.directive(".maxntid")
    if threads > most and bound is not None:  # (the architecture's limit is the launch's own check)
        return _at(func, ".maxntid", "cudaErrorLaunchOutOfResources",
                   f"block {tuple(block)} has {threads} threads, more than the {most} kernel {name} allows "
                   f"(.maxntid {bound}, __launch_bounds__)")
    if max_dynamic is not None and dynamic > max_dynamic:
        how = ("raise it with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)"
               if max_dynamic == default_dynamic_shared(static_shared, arch) else "as set with cudaFuncSetAttribute")
        return Refusal("cudaErrorInvalidValue", f"{dynamic} bytes of dynamic shared memory for kernel {name}, which "
                                                f"may have {max_dynamic} ({static_shared} static; {how})")
    if static_shared + dynamic > lim.shared_per_cta_max:
        return Refusal("cudaErrorInvalidValue", f"kernel {name} would have {static_shared} bytes of static and "
                                                f"{dynamic} of dynamic shared memory, more than the "
                                                f"{lim.shared_per_cta_max} a CTA may have on {lim.arch}")
    return None
