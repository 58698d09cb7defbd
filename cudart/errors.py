"""``cudaError_t``: values, names and messages (``errors.tsv``, as CUDA 13's runtime
gives them, so a program that prints ``cudaGetErrorString`` prints what it would on a GPU),
and which error an emulation failure becomes."""

from __future__ import annotations

import os

from hypa.runtime import abi


def read_table(filename: str = "errors.tsv") -> dict[int, tuple[str, str]]:
    """An error table of this folder (code, name and message, tab-separated; ``#`` comments):
    ``errors.tsv`` (the runtime's), ``driver_errors.tsv`` (the driver's)."""
    out = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), filename)) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            code, name, text = line.rstrip("\n").split("\t")
            out[int(code)] = (name, text)
    return out


ERRORS = read_table()
globals().update({name: code for code, (name, _t) in ERRORS.items()})


def describe(code: int) -> tuple[str, str]:
    """(name, message) of an error value; unknown values as CUDA names them."""
    return ERRORS.get(code, ("cudaErrorUnknown", "unrecognized error code"))


_FROM_EMULATION = {
    abi.ERR_OUT_OF_BOUNDS: "cudaErrorIllegalAddress",
    abi.ERR_BAD_WINDOW: "cudaErrorIllegalAddress",
    abi.ERR_MISALIGNED: "cudaErrorMisalignedAddress",
    abi.ERR_ASSERT: "cudaErrorAssert",
    abi.ERR_TEXTURE: "cudaErrorIllegalAddress",
    abi.ERR_STEP_BUDGET: "cudaErrorLaunchTimeout",
    abi.ERR_DEADLOCK: "cudaErrorLaunchTimeout",
    abi.ERR_BARRIER_COUNT: "cudaErrorLaunchTimeout",  # a GPU waits at the barrier until the watchdog stops it
    abi.ERR_TRAP: "cudaErrorLaunchFailure",
    abi.ERR_STACK_OVERFLOW: "cudaErrorLaunchFailure",
    abi.ERR_BAD_BRANCH_INDEX: "cudaErrorIllegalInstruction",
    abi.ERR_CLUSTER_RANK: "cudaErrorIllegalAddress",
    abi.ERR_NO_CLUSTER: "cudaErrorIllegalInstruction",
}


def for_emulation_error(code: int) -> int:
    """The sticky error a failed launch leaves, as the GPU would report it."""
    name = _FROM_EMULATION.get(code, "cudaErrorLaunchFailure")
    return next(c for c, (n, _t) in ERRORS.items() if n == name)
