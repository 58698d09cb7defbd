"""Front end: parse, print, parse again gives the same IR; printed PTX is valid."""

from hypa.ptxdialect import InstructionOp, module_to_ptx, parse_ptx
from hypa.ptxdialect.dialect import FallthroughOp, FuncOp, LabelOp

from helpers import COUNT_TO_N, kernel

LOOP = kernel("k(.param .u32 k_n)", COUNT_TO_N + """\
    @!%p1 bra.uni $L_end;
$L_end:
    ret;
""")


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


def test_warp_sz_is_a_constant_wherever_one_may_stand():
    """PTX's predefined ``WARP_SZ`` (32): ptxas takes it as a store's data operand too
    (issue 31: `st.u8 [a], WARP_SZ;` was refused as a symbol)."""
    import numpy as np

    from helpers import emulate

    text = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, WARP_SZ;
  st.global.u32 [%rd2], %r1;
  st.global.u8 [%rd2+4], WARP_SZ;
  ret;
}
"""
    r = emulate(text, ["b"], {"b": np.zeros(8, np.uint8)}, block=1, mode="full")
    assert r.buffers["b"].tolist() == [32, 0, 0, 0, 32, 0, 0, 0]
