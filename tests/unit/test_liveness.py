"""passes/liveness.py: live-in/live-out sets of small SSA functions, worked out by hand.

Values are named as the MLIR printer names them: the register, then ``_1``, ``_2`` for
its later definitions in program order (block arguments included).
"""

from xdsl.context import Context

from hypa.passes.cfg import CFG
from hypa.passes.liveness import Liveness
from hypa.passes.ssa import PTXToSSA
from hypa.ptxdialect import parse_ptx
from hypa.ptxdialect.dialect import FuncOp

from helpers import COUNT_TO_N, kernel


def analyse(body: str, params: str = "") -> tuple[CFG, Liveness, dict]:
    m = parse_ptx(kernel(f"k({params})", body, visible=False))
    PTXToSSA().apply(Context(), m)
    func = next(op for op in m.ops if isinstance(op, FuncOp))
    cfg = CFG.of(func)
    names, seen = {}, {}
    for block in cfg.blocks:
        for v in [*block.args, *(r for op in block.ops for r in op.results)]:
            k = seen.get(v.name_hint, 0)
            seen[v.name_hint] = k + 1
            names[v] = v.name_hint + (f"_{k}" if k else "")
    return cfg, Liveness.of(cfg), names


def sets(cfg: CFG, live: Liveness, names: dict) -> list[tuple[set[str], set[str]]]:
    return [({names[v] for v in live.live_in(b)}, {names[v] for v in live.live_out(b)}) for b in range(len(cfg))]


def test_loop_values_live_across_the_back_edge():
    cfg, live, names = analyse(COUNT_TO_N + "    st.global.u32 [%rd1], %r2;\n    ret;", ".param .u32 k_n")
    assert cfg.succs == [[1], [1, 2], []]
    assert sets(cfg, live, names) == [
        # the entry defines everything it passes on: %rd1 (an entry value), %r1, and
        # %r2 = 0, which the fall-through hands to the loop's argument %r2_1
        (set(), {"rd1", "r1", "r2"}),
        # %r1 (the bound) and %rd1 (read after the loop) are live around the back edge;
        # the loop's own argument %r2_1 is not live into it: the edges define it
        ({"rd1", "r1"}, {"rd1", "r1", "r2_2"}),
        ({"rd1", "r2_2"}, set()),
    ]


def test_diamond_value_live_on_one_side_only():
    cfg, live, names = analyse("""
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, 5;
    setp.lt.u32 %p1, %r1, 4;
    @%p1 bra $L_else;
    add.s32 %r2, %r1, 1;
    bra $L_join;
$L_else:
    mul.lo.s32 %r2, %r3, 3;
$L_join:
    st.global.u32 [%rd1], %r2;
    st.global.u32 [%rd1+4], %r1;
    ret;
""")
    assert cfg.succs == [[2, 1], [3], [3], []]
    assert sets(cfg, live, names) == [
        (set(), {"rd1", "r1", "r3"}),
        # the then side: %r3 is dead here (only the else side reads it); the %r2 it
        # passes to the join's argument is live out on the edge
        ({"rd1", "r1"}, {"rd1", "r1", "r2"}),
        ({"rd1", "r1", "r3"}, {"rd1", "r1", "r2_1"}),
        ({"rd1", "r1"}, set()),
    ]


def test_while_loop_accumulator_through_header_arguments():
    cfg, live, names = analyse("""
    ld.param.u32 %r1, [k_n];
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
$L_head:
    setp.ge.s32 %p1, %r2, %r1;
    @%p1 bra $L_done;
    add.s32 %r3, %r3, %r2;
    add.s32 %r2, %r2, 1;
    bra $L_head;
$L_done:
    st.global.u32 [%rd1], %r3;
    ret;
""", ".param .u32 k_n")
    assert cfg.succs == [[1], [3, 2], [1], []]
    head_args = {names[a] for a in cfg.blocks[1].args}
    assert head_args == {"r2_1", "r3_1"}
    assert sets(cfg, live, names) == [
        (set(), {"rd1", "r1", "r2", "r3"}),
        ({"rd1", "r1"}, {"rd1", "r1", "r2_1", "r3_1"}),
        # the body reads both header arguments and passes their successors on the back edge
        ({"rd1", "r1", "r2_1", "r3_1"}, {"rd1", "r1", "r2_2", "r3_2"}),
        # the exit reads the header's argument %r3_1, not the body's %r3_2
        ({"rd1", "r3_1"}, set()),
    ]
