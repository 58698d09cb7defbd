"""racecheck's warning: the shared-memory hazards a launch's generated code counted
(``lowering/racecheck.py``), and the first one in words: kernel, CTA, both threads, both
instructions with their CUDA source lines (where the PTX has ``.loc``), the shared offset.
The same words for ``--racecheck`` and for its sample (on by default: the first CTA of each
kernel's first launch), which says so at the end."""

from __future__ import annotations

import re

import numpy as np

from hypa.ptxdialect.dialect import InstructionOp, RawDirectiveOp

from .. import abi
from .demangle import demangle

_LOC = re.compile(r"\s*(\d+)\s+(\d+)")
_FILE = re.compile(r'\s*(\d+)\s+"([^"]*)"')
#: compute-sanitizer's names of the hazards, in the order of their counts (abi.RACE_*)
KINDS = ("WAW", "WAR", "RAW")
COUNT_WORDS = range(abi.CTX_RACE_COUNT, abi.CTX_RACE_COUNT + len(KINDS))
#: the end of racecheck's sample's warning (``EmulationOptions.racecheck_sample``): what was
#: checked, and how to check everything
SAMPLED = ("racecheck's sample: the first CTA of the kernel's first launch; --racecheck checks every CTA of "
           "every launch")
#: what a worker process sends back (cta_ranges.run_forked): the counts, then the first hazard
WORDS = range(abi.CTX_RACE_COUNT, abi.CTX_RACE_CTA + 1)


def source_line(prog, op: InstructionOp) -> str | None:
    """``file:line`` of an instruction: the last ``.loc`` before it in layout order (``-lineinfo``
    or ``-G`` builds), or None."""
    files = {}
    for top in getattr(prog.module, "ops", ()):
        if isinstance(top, RawDirectiveOp) and top.directive.data == ".file":
            m = _FILE.match(top.text.data)
            if m:
                files[m.group(1)] = m.group(2).rsplit("/", 1)[-1]
    loc = None
    for block in prog.cfg.blocks:
        for o in block.ops:
            if isinstance(o, RawDirectiveOp) and o.directive.data == ".loc":
                m = _LOC.match(o.text.data)
                if m:
                    loc = f"{files.get(m.group(1), 'file ' + m.group(1))}:{m.group(2)}"
            elif o is op:
                return loc
    return None


def hazards(prog, launch, ctx: np.ndarray, cta_and_thread) -> str | None:
    """The warning (None: no hazard).  ``cta_and_thread(launch, cta, warp, lane)``: CUDA's
    coordinates of a CTA and a thread."""
    counts = [int(ctx[i]) for i in COUNT_WORDS]
    n = sum(counts)
    if n <= 0:
        return None
    kind = KINDS[int(ctx[abi.CTX_RACE_KIND])]
    cta = int(ctx[abi.CTX_RACE_CTA])
    tid = int(ctx[abi.CTX_RACE_THREAD])
    other = int(ctx[abi.CTX_RACE_OTHER]) & 0xFFFFFFFFFFFFFFFF
    other_tid = ((other >> abi.RACE_THREAD_SHIFT) & ((1 << (abi.RACE_ATOMIC_BIT - abi.RACE_THREAD_SHIFT)) - 1)) - 1
    other_atomic = bool(other >> abi.RACE_ATOMIC_BIT & 1)
    coords, thread = cta_and_thread(launch, cta, tid // abi.LANES, tid % abi.LANES)
    _c, other_thread = cta_and_thread(launch, cta, other_tid // abi.LANES, other_tid % abi.LANES)

    def described(i: int) -> tuple[str, InstructionOp | None]:
        if not 0 <= i < min(len(prog.instructions), (1 << (64 - abi.RACE_INSTR_SHIFT)) - 1):  # past: not recorded
            return "an instruction", None
        op = prog.instructions[i]
        line = source_line(prog, op)
        return f"{prog.instruction_text(i)}" + (f" ({line})" if line else ""), op

    later, later_op = described(int(ctx[abi.CTX_RACE_INSTR]))
    earlier, _ = described(other >> abi.RACE_INSTR_SHIFT)
    atomic = later_op is not None and later_op.spec.name in ("atom", "red")
    verb = "reads" if kind == "RAW" else "updates" if atomic else "writes"
    before = "read" if kind == "WAR" else "updated" if other_atomic else "wrote"
    addr = int(ctx[abi.CTX_RACE_ADDR])
    parts = ", ".join(f"{c} {k}" for k, c in zip(KINDS, counts) if c)
    return (f"racecheck: {n} shared-memory hazard{'s' if n != 1 else ''} between threads of a CTA with no barrier "
            f"between the accesses ({parts}); the first: kernel {demangle(prog.func.func_name)}, CTA {coords}: {kind} hazard "
            f"at shared offset {addr:#x}: thread {thread} {verb} it with {later} after thread {other_thread} "
            f"{before} it with {earlier}")
