"""ptx-to-ssa, its dominance verifier, and ptx-out-of-ssa."""

import pytest
from xdsl.context import Context
from xdsl.utils.exceptions import VerifyException

from hypa.passes.out_of_ssa import PTXOutOfSSA
from hypa.passes.ssa import PTXToSSA, convert_function, verify_dominance
from hypa.ptxdialect import InstructionOp, module_to_ptx, parse_ptx
from hypa.ptxdialect.dialect import EntryValueOp, FuncOp

from helpers import COUNT_TO_N, kernel


def func_of(module):
    return next(op for op in module.ops if isinstance(op, FuncOp))


def instrs(func):
    return [op for op in func.body.walk() if isinstance(op, InstructionOp)]


def to_ssa(body, params=""):
    m = parse_ptx(kernel(f"k({params})", body, visible=False))
    PTXToSSA().apply(Context(), m)
    return m


def test_nested_scope_registers_are_distinct():
    m = to_ssa("""
    mov.u32 %r1, 1;
    {
        .reg .b32 %r1;
        mov.u32 %r1, 2;
        add.s32 %r2, %r1, 1;
    }
    add.s32 %r2, %r1, 3;
    ret;
""")
    mov_outer, mov_inner, add_inner, add_outer, _ret = instrs(func_of(m))
    # inside the scope %r1 is the inner register, after it the outer one again
    assert add_inner.operands[0] is mov_inner.results[0]
    assert add_outer.operands[0] is mov_outer.results[0]
    assert mov_inner.operands_ast[0] == ("reg", "%r1", 1)


def test_guarded_definition_merges_old_value():
    m = to_ssa("""
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 4;
    mov.u32 %r2, 5;
    @%p1 add.s32 %r2, %r2, 1;
    ret;
""")
    mov_tid, setp, mov5, add, _ret = instrs(func_of(m))
    # guard, the textual %r2, then the old %r2 kept where the guard is false
    assert list(add.operands) == [setp.results[0], mov5.results[0], mov5.results[0]]


def test_carry_flag_is_an_implicit_register():
    m = to_ssa("""
    mov.u32 %r1, -1;
    mov.u32 %r2, 1;
    add.cc.u32 %r3, %r1, %r2;
    addc.u32 %r4, 0, 0;
    ret;
""")
    _a, _b, addcc, addc, _ret = instrs(func_of(m))
    assert len(addcc.results) == 2  # %r3 and the carry
    assert addc.operands[-1] is addcc.results[1]


def test_read_before_write_is_an_entry_value():
    m = to_ssa("""
    add.s32 %r2, %r1, 1;
    ret;
""")
    f = func_of(m)
    evs = [op for op in f.body.walk() if isinstance(op, EntryValueOp)]
    assert len(evs) == 1 and evs[0].reg.data == "%r1"
    assert instrs(f)[0].operands[0] is evs[0].results[0]
    # the entry value prints as nothing
    assert "entry_value" not in module_to_ptx(parse_ptx(kernel("k()", "add.s32 %r2, %r1, 1;\nret;\n", visible=False)))


def test_dominance_verifier_rejects_use_before_def():
    m = to_ssa("""
    mov.u32 %r1, 1;
    add.s32 %r2, %r1, 1;
    ret;
""")
    f = func_of(m)
    mov, add, _ret = instrs(f)
    verify_dominance(f)
    add.detach()
    mov.parent.insert_op_before(add, mov)
    with pytest.raises(VerifyException, match="used before its definition"):
        verify_dominance(f)


def test_dominance_verifier_rejects_non_dominating_block():
    m = to_ssa("""
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_a;
    mov.u32 %r2, 7;
$L_a:
    mov.u32 %r3, 1;
    ret;
""")
    f = func_of(m)
    ops = instrs(f)
    seven, last = ops[3], ops[4]
    verify_dominance(f)
    last.operands = [seven.results[0]]  # %r2 is not defined on the taken path
    with pytest.raises(VerifyException, match="not dominated"):
        verify_dominance(f)


def test_out_of_ssa_renames_interfering_values():
    m = to_ssa("""
    mov.u32 %r1, 1;
    mov.u32 %r2, %r1;
    mov.u32 %r1, 2;
    add.s32 %r3, %r1, %r2;
    ld.param.u64 %rd1, [k_out];
    st.global.u32 [%rd1], %r3;
    ret;
""", ".param .u64 k_out")
    f = func_of(m)
    one, copy, two, add = instrs(f)[:4]
    # move the copy after the second definition of %r1: now both values of
    # %r1 are live at once and one of them must move to a fresh register
    copy.detach()
    two.parent.insert_op_after(copy, two)
    verify_dominance(f)
    PTXOutOfSSA().apply(Context(), m)
    text = module_to_ptx(m)
    assert ".reg .b32 %ssa0;" in text
    body = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("mov", "add"))]
    assert body == [
        "mov.u32 %r1, 1;",
        "mov.u32 %ssa0, 2;",
        "mov.u32 %r2, %r1;",
        "add.s32 %r3, %ssa0, %r2;",
    ]


def test_out_of_ssa_without_interference_is_the_original():
    m = parse_ptx(kernel("k(.param .u32 k_n)", COUNT_TO_N + "    ret;\n"))
    before = module_to_ptx(m)
    PTXToSSA().apply(Context(), m)
    PTXOutOfSSA().apply(Context(), m)
    assert module_to_ptx(m) == before


def test_out_of_ssa_copies_on_split_edges():
    # A loop whose latch is a guarded branch carries %r2 and %r3.  Swapping the
    # values that flow back into them makes the block arguments need copies on
    # the back edge: a taken edge, so it is split into a new labelled block,
    # and the parallel copy is a swap through a temporary.
    src = kernel("k(.param .u32 k_n)", """
    ld.param.u32 %r1, [k_n];
    mov.u32 %r2, 1;
    mov.u32 %r3, 2;
$L_loop:
    add.s32 %r2, %r2, 1;
    add.s32 %r3, %r3, 1;
    add.s32 %r1, %r1, -1;
    setp.gt.s32 %p1, %r1, 0;
    @%p1 bra $L_loop;
    add.s32 %r4, %r2, %r3;
    ret;
""")
    m = parse_ptx(src)
    PTXToSSA().apply(Context(), m)
    f = func_of(m)
    loop = list(f.body.blocks)[1]
    bra = loop.last_op
    back = list(bra.successor_operands(0))
    homes = [v.name_hint for v in back]
    i2, i3 = homes.index("r2"), homes.index("r3")
    ops = list(bra.operands)
    base = len(ops) - len(back) - len(bra.successor_operands(1))
    ops[base + i2], ops[base + i3] = ops[base + i3], ops[base + i2]
    bra.operands = ops
    PTXOutOfSSA().apply(Context(), m)
    text = module_to_ptx(m)
    assert "@%p1 bra $L__hypa_edge0;" in text
    edge = text[text.index("$L__hypa_edge0:"):].splitlines()[1:5]
    assert [ln.strip() for ln in edge] == [
        "mov.b32 %ssa0, %r3;",
        "mov.b32 %r3, %r2;",
        "mov.b32 %r2, %ssa0;",
        "bra.uni $L_loop;",
    ]
    # the split block is placed after a block that does not fall through
    assert text.index("ret;") < text.index("$L__hypa_edge0:")
    parse_ptx(text)


def test_long_chains_of_blocks_convert_without_deep_recursion():
    # nvcc -G emits thousands of consecutive blocks: a register defined at the top and read at
    # the bottom is looked up through each of them (it overflowed Python's recursion limit)
    n = 3000
    body = "mov.u32 %r1, 7;\n" + "".join(f"bra.uni $L{i};\n$L{i}:\n" for i in range(n))
    m = parse_ptx(kernel("k(.param .u64 k_o)", body + "ld.param.u64 %rd1, [k_o];\nst.global.u32 [%rd1], %r1;\nret;\n"))
    f = next(op for op in m.ops if isinstance(op, FuncOp))
    convert_function(f)
    verify_dominance(f)
    st = next(op for op in f.walk() if isinstance(op, InstructionOp) and op.spec.name == "st")
    mov = st.operands[-1].owner
    assert isinstance(mov, InstructionOp) and mov.spec.name == "mov"


def test_an_unreachable_cycle_of_single_predecessor_blocks_reads_as_undefined():
    # $A and $B only reach each other: walking single predecessors must not go round forever
    src = kernel("k(.param .u64 k_o)", """
    ld.param.u64 %rd1, [k_o];
    ret;
$A:
    add.u32 %r2, %r1, 1;
    bra.uni $B;
$B:
    st.global.u32 [%rd1], %r1;
    bra.uni $A;
""")
    m = parse_ptx(src)
    f = next(op for op in m.ops if isinstance(op, FuncOp))
    convert_function(f)
    add = next(op for op in f.walk() if isinstance(op, InstructionOp) and op.spec.name == "add")
    assert isinstance(add.operands[0].owner, EntryValueOp)
