"""Liveness of SSA values over a function's control-flow graph (``passes/cfg.py``).

A value is live at a point when some path from that point reads it before the end of the
function.  Block arguments are defined at the start of their block; the values a
terminator passes to a successor's arguments (``bra``'s successor operands,
``ptx.fallthrough``'s operands) are read on the edge, at the end of the block that passes
them, so they are live out of that block and not live into the successor.  One backward
dataflow, shared by ``ptx-out-of-ssa`` (interference), the emulator's real calls (the
values a call saves) and the timing model (the register estimate).

The sets are kept as integer bitmasks over a numbering of the values (``values``,
``index``): the fixed point over thousands of blocks of ``-G`` code stays cheap, and a
caller that scans instructions (the register estimate) can stay in masks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from xdsl.ir import Operation, SSAValue

from hypa.ptxdialect.dialect import FallthroughOp, InstructionOp

from .cfg import CFG


def op_uses(op: Operation) -> Sequence[SSAValue]:
    """The values ``op`` reads where it stands (a terminator's edge operands excluded)."""
    if isinstance(op, InstructionOp):
        return op.instruction_operands()
    if isinstance(op, FallthroughOp):
        return ()
    return op.operands


def edge_uses(term: Operation) -> list[list[SSAValue]]:
    """Per successor slot of a terminator: the values it passes to the successor's arguments."""
    if isinstance(term, FallthroughOp):
        return [list(term.operands)]
    if isinstance(term, InstructionOp):
        return [list(term.successor_operands(k)) for k in range(len(term.successors))]
    return [[] for _ in term.successors]


@dataclass
class Liveness:
    """Live-in and live-out values of every block of ``cfg``, as bitmasks over ``values``."""

    cfg: CFG
    values: list[SSAValue]
    index: dict[SSAValue, int]
    live_in_masks: list[int]
    live_out_masks: list[int]

    @staticmethod
    def of(cfg: CFG) -> "Liveness":
        index: dict[SSAValue, int] = {}
        values: list[SSAValue] = []

        def bit(v: SSAValue) -> int:
            k = index.get(v)
            if k is None:
                k = index[v] = len(values)
                values.append(v)
            return 1 << k

        n = len(cfg)
        defs = [0] * n  # block arguments and results of the block's ops
        upward = [0] * n  # read before any definition in the block (edge reads included)
        edges = [0] * n  # read on the edges out of the block
        for b, block in enumerate(cfg.blocks):
            d = 0
            for a in block.args:
                d |= bit(a)
            up = 0
            for op in block.ops:
                for v in op_uses(op):
                    up |= bit(v) & ~d
                for v in op.results:
                    d |= bit(v)
            e = 0
            term = block.last_op
            if term is not None:
                for vals in edge_uses(term):
                    for v in vals:
                        e |= bit(v)
            defs[b], upward[b], edges[b] = d, up | (e & ~d), e
        live_in = [0] * n
        live_out = [0] * n
        changed = True
        while changed:
            changed = False
            for b in reversed(range(n)):
                out = edges[b]
                for s in cfg.succs[b]:
                    out |= live_in[s]  # never holds the successor's own arguments
                inn = upward[b] | (out & ~defs[b])
                if out != live_out[b] or inn != live_in[b]:
                    live_out[b], live_in[b] = out, inn
                    changed = True
        return Liveness(cfg, values, index, live_in, live_out)

    def values_of(self, mask: int) -> set[SSAValue]:
        out = set()
        while mask:
            low = mask & -mask
            out.add(self.values[low.bit_length() - 1])
            mask ^= low
        return out

    def live_in(self, block: int) -> set[SSAValue]:
        """Values live at the start of ``block`` (its own arguments excluded)."""
        return self.values_of(self.live_in_masks[block])

    def live_out(self, block: int) -> set[SSAValue]:
        """Values live at the end of ``block``, those it passes to successors included."""
        return self.values_of(self.live_out_masks[block])
