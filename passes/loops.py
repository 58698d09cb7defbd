"""Natural loops and irreducible control flow.

A back edge ``u -> h`` is an edge whose target dominates its source; its
natural loop is ``h`` plus every block that reaches ``u`` without passing
through ``h``.  A retreating edge (target before source in a depth-first
order) whose target does *not* dominate its source makes the graph
irreducible: such a cycle has several entries and no single header.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .dominance import dominates


@dataclass
class Loop:
    header: int
    latches: list[int]
    blocks: set[int]
    parent: "Loop | None" = None
    children: list["Loop"] = field(default_factory=list)

    @property
    def depth(self) -> int:
        d, p = 1, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d

    def exits(self, succs: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
        """Edges leaving the loop, ``(from, to)``."""
        return [(b, s) for b in sorted(self.blocks) for s in succs[b] if s not in self.blocks]


@dataclass
class LoopInfo:
    loops: list[Loop]
    irreducible_edges: list[tuple[int, int]]

    @property
    def is_reducible(self) -> bool:
        return not self.irreducible_edges


def find_loops(
    n: int, entry: int, succs: Sequence[Sequence[int]], preds: Sequence[Sequence[int]], idom: Sequence[int | None]
) -> LoopInfo:
    reachable = [idom[b] is not None or b == entry for b in range(n)]
    # retreating edges from an iterative DFS
    state = [0] * n  # 0 new, 1 on stack, 2 done
    retreating: list[tuple[int, int]] = []
    stack: list[tuple[int, int]] = [(entry, 0)]
    state[entry] = 1
    while stack:
        b, k = stack[-1]
        if k < len(succs[b]):
            stack[-1] = (b, k + 1)
            s = succs[b][k]
            if state[s] == 0:
                state[s] = 1
                stack.append((s, 0))
            elif state[s] == 1:
                retreating.append((b, s))
        else:
            state[b] = 2
            stack.pop()
    back_edges: dict[int, list[int]] = {}
    irreducible: list[tuple[int, int]] = []
    for u, h in retreating:
        if dominates(idom, h, u):
            back_edges.setdefault(h, []).append(u)
        else:
            irreducible.append((u, h))
    loops: list[Loop] = []
    for h, latches in sorted(back_edges.items()):
        body = {h}
        work = [u for u in latches if u != h]
        body.update(work)
        while work:
            x = work.pop()
            for p in preds[x]:
                if reachable[p] and p not in body:
                    body.add(p)
                    work.append(p)
        loops.append(Loop(h, sorted(latches), body))
    # nesting: the parent is the smallest strictly larger loop containing the header
    for lp in loops:
        cands = [o for o in loops if o is not lp and lp.header in o.blocks and lp.blocks <= o.blocks and len(o.blocks) > len(lp.blocks)]
        if cands:
            lp.parent = min(cands, key=lambda o: len(o.blocks))
            lp.parent.children.append(lp)
    return LoopInfo(loops, irreducible)
