"""The control-flow graph of a ``ptx.func`` body, as index lists.

The front end already splits bodies into blocks and makes every edge explicit
(branch targets, then the fall-through block for guarded terminators, and
``ptx.fallthrough`` between a block and the label that follows it).  This
module reads those edges into plain lists that the dominance, loop, SSA and
emulator layers share, and finds unreachable blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Block

from hypa.ptxdialect.dialect import FuncOp, InstructionOp, LabelOp

from .dominance import reverse_postorder


#: the attribute ``ptx-inline`` puts on an inlined callee's ``ret``: an edge back to the
#: caller, not a way out of the function
RETURN_ATTR = "hypa.return"


@dataclass
class CFG:
    """Blocks of one function in layout order, with successor/predecessor lists.

    ``succs[b]`` keeps the terminator's successor order (for a guarded branch:
    taken target first, fall-through last) and may name a block twice.
    """

    func: FuncOp
    blocks: list[Block]
    succs: list[list[int]]
    preds: list[list[int]] = field(default_factory=list)
    index: dict[Block, int] = field(default_factory=dict)

    @staticmethod
    def of(func: FuncOp) -> "CFG":
        blocks = list(func.body.blocks)
        index = {b: i for i, b in enumerate(blocks)}
        succs: list[list[int]] = []
        for b in blocks:
            term = b.last_op
            succs.append([index[s] for s in term.successors] if term is not None else [])
        preds: list[list[int]] = [[] for _ in blocks]
        for i, ss in enumerate(succs):
            for s in ss:
                preds[s].append(i)
        return CFG(func, blocks, succs, preds, index)

    def __len__(self) -> int:
        return len(self.blocks)

    @property
    def exits(self) -> list[int]:
        """Blocks that can leave the function: those ending in ``ret``, ``exit``,
        ``trap`` (guarded or not) or the end of the body.  The ``ret`` of an inlined
        callee (``ptx-inline``'s ``hypa.return``) goes back to its caller, so it is
        not an exit: divergence around the call reconverges after it, as on the GPU."""
        out = []
        for i, b in enumerate(self.blocks):
            t = b.last_op
            leaves = isinstance(t, InstructionOp) and t.spec.name in ("ret", "exit", "trap") and RETURN_ATTR not in t.attributes
            if not self.succs[i] or leaves:
                out.append(i)
        return out

    def reachable(self) -> list[bool]:
        seen = [False] * len(self.blocks)
        if not self.blocks:
            return seen
        stack = [0]
        seen[0] = True
        while stack:
            b = stack.pop()
            for s in self.succs[b]:
                if not seen[s]:
                    seen[s] = True
                    stack.append(s)
        return seen

    def unreachable_blocks(self) -> list[int]:
        """Unreachable blocks that hold instructions (directive-only tails after a
        terminator, such as a lone ``.loc`` or ``}``, are not reported)."""
        seen = self.reachable()
        return [i for i, b in enumerate(self.blocks) if not seen[i] and any(isinstance(o, InstructionOp) for o in b.ops)]

    def reverse_postorder(self) -> list[int]:
        """Reachable blocks in reverse postorder from the entry."""
        return reverse_postorder(len(self.blocks), 0, self.succs) if self.blocks else []

    def name(self, i: int) -> str:
        return block_name(self.blocks[i], i)


def block_label(block: Block) -> str | None:
    """The PTX label that begins ``block``, if any."""
    first = block.first_op
    return first.label.data if isinstance(first, LabelOp) else None


def block_name(block: Block, index: int) -> str:
    """A stable, readable name: the block's label, else ``bb<index>``."""
    return block_label(block) or f"bb{index}"
