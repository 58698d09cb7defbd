"""Front end: parse, print, parse again gives the same IR; printed PTX is valid."""

from hypa.ptxdialect import InstructionOp, module_to_ptx, parse_ptx
from hypa.ptxdialect.dialect import FallthroughOp, FuncOp, LabelOp

LOOP = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 k_n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [k_n];
    mov.u32 %r2, 0;
$L_loop:
    add.s32 %r2, %r2, 1;
    setp.lt.s32 %p1, %r2, %r1;
    @%p1 bra $L_loop;
    @!%p1 bra.uni $L_end;
$L_end:
    ret;
}
"""


def test_blocks_split_at_labels_and_after_branches():
    m = parse_ptx(LOOP, "loop.ptx")
    (f,) = [op for op in m.ops if isinstance(op, FuncOp)]
    blocks = list(f.body.blocks)
    # entry, loop header, block after the first branch, $L_end
    assert len(blocks) == 4
    assert isinstance(blocks[0].last_op, FallthroughOp)
    assert isinstance(blocks[1].first_op, LabelOp)
    bra = blocks[1].last_op
    assert isinstance(bra, InstructionOp) and bra.spec.name == "bra"
    # taken edge first, fall-through second
    assert list(bra.successors) == [blocks[1], blocks[2]]
    assert bra.guard_pred == (("reg", "%p1", 0), False)
    neg = blocks[2].last_op
    assert neg.guard_pred == (("reg", "%p1", 0), True)
    assert neg.modifiers == (".uni",)


def test_round_trip_is_a_fixpoint():
    m = parse_ptx(LOOP, "loop.ptx")
    text = module_to_ptx(m)
    m2 = parse_ptx(text, "printed.ptx")
    assert m.is_structurally_equivalent(m2)
    assert module_to_ptx(m2) == text
