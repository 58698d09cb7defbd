"""Dominators, post-dominators and loops on hand-drawn graphs (answers worked out by hand)."""

from hypa.passes.dominance import (
    VIRTUAL_EXIT,
    dominance_frontiers,
    dominates,
    immediate_dominators,
    immediate_post_dominators,
)
from hypa.passes.loops import find_loops


def preds_of(succs):
    preds = [[] for _ in succs]
    for b, ss in enumerate(succs):
        for s in ss:
            preds[s].append(b)
    return preds


def test_diamond():
    #   0 -> 1, 2 ; 1 -> 3 ; 2 -> 3
    succs = [[1, 2], [3], [3], []]
    assert immediate_dominators(4, 0, succs) == [None, 0, 0, 0]
    assert immediate_post_dominators(4, succs) == [3, 3, 3, VIRTUAL_EXIT]
    df = dominance_frontiers(4, immediate_dominators(4, 0, succs), preds_of(succs))
    assert df == [set(), {3}, {3}, set()]


def test_irreducible_two_entry_cycle():
    # 0 -> 1, 2 ; 1 <-> 2 ; 2 -> 3.  The cycle {1, 2} has two entries, so
    # neither 1 nor 2 dominates the other: both are immediately dominated by 0.
    succs = [[1, 2], [2], [1, 3], []]
    idom = immediate_dominators(4, 0, succs)
    assert idom == [None, 0, 0, 2]
    assert not dominates(idom, 1, 2) and not dominates(idom, 2, 1)
    info = find_loops(4, 0, succs, preds_of(succs), idom)
    assert info.loops == []  # no natural loop: no back edge's target dominates its source
    assert not info.is_reducible
    assert len(info.irreducible_edges) == 1
    u, h = info.irreducible_edges[0]
    assert {u, h} == {1, 2}


def test_irreducible_classic_three_node():
    # The classic irreducible graph: 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 1, plus an
    # exit from 1.  Post-dominators are still defined from the virtual exit.
    succs = [[1, 2], [2, 3], [1], []]
    assert immediate_dominators(4, 0, succs) == [None, 0, 0, 1]
    assert immediate_post_dominators(4, succs) == [1, 3, 1, VIRTUAL_EXIT]


def test_nested_loops_and_depth():
    # 0 -> 1 (outer header) -> 2 (inner header) -> 2 | 3 ; 3 -> 1 | 4
    succs = [[1], [2], [2, 3], [1, 4], []]
    idom = immediate_dominators(5, 0, succs)
    assert idom == [None, 0, 1, 2, 3]
    info = find_loops(5, 0, succs, preds_of(succs), idom)
    assert info.is_reducible
    by_header = {lp.header: lp for lp in info.loops}
    assert by_header[1].blocks == {1, 2, 3}
    assert by_header[2].blocks == {2}
    assert by_header[2].parent is by_header[1]
    assert (by_header[1].depth, by_header[2].depth) == (1, 2)
    assert by_header[1].exits(succs) == [(3, 4)]


def test_infinite_loop_post_dominated_by_virtual_exit():
    # 0 -> 1 | 3 ; 1 -> 2 ; 2 -> 1 (never exits) ; 3 exits
    succs = [[1, 3], [2], [1], []]
    ipdom = immediate_post_dominators(4, succs)
    assert ipdom[0] == VIRTUAL_EXIT
    assert ipdom[1] == VIRTUAL_EXIT and ipdom[2] == VIRTUAL_EXIT
    assert ipdom[3] == VIRTUAL_EXIT


def test_guarded_exit_edge():
    # 0 -> 1 ; 1 -> 2 (fall-through of "@p ret") ; 2 -> 1 | 3 ; 3 exits.
    # Block 1 can also leave the function, so only the exit post-dominates it.
    succs = [[1], [2], [1, 3], []]
    assert immediate_post_dominators(4, succs)[1] == 2
    assert immediate_post_dominators(4, succs, exits=[1, 3])[1] == VIRTUAL_EXIT


def test_unreachable_blocks_have_no_idom():
    succs = [[1], [], [1]]
    assert immediate_dominators(3, 0, succs) == [None, 0, None]
