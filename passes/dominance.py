"""Dominators and post-dominators (Cooper, Harvey and Kennedy's iterative algorithm).

Post-dominance is computed on the reversed graph from a *virtual exit* that
every exit block (``ret``, ``exit``, ``trap``, end of body) flows into.  Blocks
that cannot reach any exit (infinite loops) are given an edge to the virtual
exit too, so every block has an immediate post-dominator; for such blocks the
reconvergence point is the virtual exit.  The emulator reconverges divergent
warps at immediate post-dominators (GPGPU-Sim's IPDOM discipline).
"""

from __future__ import annotations

from collections.abc import Sequence

VIRTUAL_EXIT = -1


def reverse_postorder(n: int, entry: int, succs: Sequence[Sequence[int]]) -> list[int]:
    """The blocks reachable from ``entry`` in reverse postorder (iterative depth-first search)."""
    order: list[int] = []
    seen = [False] * n
    seen[entry] = True
    stack: list[tuple[int, int]] = [(entry, 0)]
    while stack:
        b, k = stack[-1]
        if k < len(succs[b]):
            stack[-1] = (b, k + 1)
            s = succs[b][k]
            if not seen[s]:
                seen[s] = True
                stack.append((s, 0))
        else:
            stack.pop()
            order.append(b)
    order.reverse()
    return order


def immediate_dominators(n: int, entry: int, succs: Sequence[Sequence[int]]) -> list[int | None]:
    """``idom[b]`` for every block (``None`` for the entry and unreachable blocks).

    Correct on irreducible graphs: the algorithm iterates to a fixpoint over
    the reverse postorder.
    """
    preds: list[list[int]] = [[] for _ in range(n)]
    for b, ss in enumerate(succs):
        for s in ss:
            preds[s].append(b)
    order = reverse_postorder(n, entry, succs)
    po_num = [-1] * n
    for i, b in enumerate(reversed(order)):
        po_num[b] = i
    idom: list[int | None] = [None] * n
    idom[entry] = entry

    def intersect(a: int, b: int) -> int:
        while a != b:
            while po_num[a] < po_num[b]:
                a = idom[a]  # type: ignore[assignment]
            while po_num[b] < po_num[a]:
                b = idom[b]  # type: ignore[assignment]
        return a

    changed = True
    while changed:
        changed = False
        for b in order:
            if b == entry:
                continue
            new: int | None = None
            for p in preds[b]:
                if idom[p] is None:
                    continue
                new = p if new is None else intersect(p, new)
            if new is not None and idom[b] != new:
                idom[b] = new
                changed = True
    idom[entry] = None
    return idom


def dominates(idom: Sequence[int | None], a: int, b: int) -> bool:
    """True if ``a`` dominates ``b`` (every block dominates itself)."""
    x: int | None = b
    while x is not None:
        if x == a:
            return True
        x = idom[x]
    return False


def immediate_post_dominators(
    n: int, succs: Sequence[Sequence[int]], exits: Sequence[int] | None = None
) -> list[int]:
    """``ipdom[b]`` for every block; ``VIRTUAL_EXIT`` (-1) when only the
    virtual exit post-dominates ``b``.  ``exits``: blocks with an edge to the
    virtual exit (default: blocks without successors); a guarded ``ret`` has
    one besides its fall-through edge."""
    exit_node = n
    rsuccs: list[list[int]] = [[] for _ in range(n + 1)]
    for b, ss in enumerate(succs):
        for s in ss:
            rsuccs[s].append(b)
    for b in (exits if exits is not None else [b for b, ss in enumerate(succs) if not ss]):
        rsuccs[exit_node].append(b)
    # blocks that reach no exit: connect them to the virtual exit as well
    reaches = [False] * (n + 1)
    reaches[exit_node] = True
    stack = [exit_node]
    while stack:
        x = stack.pop()
        for p in rsuccs[x]:
            if not reaches[p]:
                reaches[p] = True
                stack.append(p)
    for b in range(n):
        if not reaches[b]:
            rsuccs[exit_node].append(b)
    ipdom_full = immediate_dominators(n + 1, exit_node, rsuccs)
    return [VIRTUAL_EXIT if (d is None or d == exit_node) else d for d in ipdom_full[:n]]


def dominance_frontiers(n: int, idom: Sequence[int | None], preds: Sequence[Sequence[int]]) -> list[set[int]]:
    """Dominance frontier of every block (Cytron et al.)."""
    df: list[set[int]] = [set() for _ in range(n)]
    for b in range(n):
        ps = [p for p in preds[b]]
        if len(ps) < 2:
            continue
        for p in ps:
            runner: int | None = p
            while runner is not None and runner != idom[b]:
                df[runner].add(b)
                runner = idom[runner]
    return df


def dominator_tree_children(idom: Sequence[int | None]) -> list[list[int]]:
    children: list[list[int]] = [[] for _ in idom]
    for b, d in enumerate(idom):
        if d is not None:
            children[d].append(b)
    return children
