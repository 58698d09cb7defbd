"""Base-pointer analysis (passes/slice.py ``AddressBases``): which objects an address may point into.

Slicing trusts it to leave out stores that cannot alias a sliced load, so an address must
never lose a root, whatever order the questions come in.
"""

from xdsl.context import Context

from hypa.passes.slice import AddressBases, _may_alias, compute_slices
from hypa.passes.ssa import PTXToSSA
from hypa.ptxdialect import InstructionOp, parse_ptx
from hypa.ptxdialect.dialect import FuncOp

from helpers import kernel

# A pointer stepped through a loop by a scalar parameter: ptr' = ptr + n + n.
# Load A reads [ptr] (the loop-carried block argument), load B reads [ptr + n].
STRIDED_LOOP = kernel("k(.param .u64 k_buf, .param .u32 k_n, .param .u64 k_other)", """
    ld.param.u64 %rd1, [k_buf];
    ld.param.u32 %r1, [k_n];
    ld.param.u64 %rd6, [k_other];
    cvta.to.global.u64 %rd2, %rd1;
    cvt.u64.u32 %rd3, %r1;
    mov.u32 %r2, 0;
    mov.u64 %rd4, %rd2;
$L_loop:
    ld.global.u32 %r3, [%rd4];
    add.s64 %rd5, %rd4, %rd3;
    ld.global.u32 %r4, [%rd5];
    setp.eq.u32 %p1, %r4, 0;
    @%p1 bra $L_skip;
    st.global.u32 [%rd5], %r3;
    st.global.u32 [%rd6], %r3;
    st.global.u32 [%rd2+4], %r4;
$L_skip:
    add.s64 %rd4, %rd5, %rd3;
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p2, %r2, 4;
    @%p2 bra $L_loop;
    ret;
""")


def _accesses():
    m = parse_ptx(STRIDED_LOOP)
    PTXToSSA().apply(Context(), m)
    f = next(op for op in m.ops if isinstance(op, FuncOp))
    ops = [op for op in f.walk() if isinstance(op, InstructionOp) and op.spec.name in ("ld", "st")]
    return f, [op for op in ops if "global" in op.modifiers or ".global" in str(op.modifiers)]


def _bases(f):
    return AddressBases(set(f.param_names), set())


def test_every_root_of_a_loop_carried_pointer_whatever_the_query_order():
    f, (load_a, load_b, store_b, store_other, store_base) = _accesses()
    want = frozenset({"param:k_buf", "param:k_n"})
    # load A first: tracing [ptr] walks into the loop and meets ptr again while it is in progress
    b = _bases(f)
    assert b.of_access(load_a) == want
    assert b.of_access(load_b) == want
    # load B first
    b = _bases(f)
    assert b.of_access(load_b) == want
    assert b.of_access(load_a) == want
    assert b.of_access(store_other) == frozenset({"param:k_other"})


def test_a_store_through_the_base_pointer_may_alias_the_sliced_load():
    f, (load_a, load_b, store_b, store_other, store_base) = _accesses()
    b = _bases(f)
    b.of_access(load_a)
    assert b.of_access(store_base) == frozenset({"param:k_buf"})
    assert _may_alias(b.of_access(load_b), b.of_access(store_base))
    assert not _may_alias(b.of_access(load_b), b.of_access(store_other))


def test_the_slice_keeps_every_store_that_may_feed_the_branch():
    m = parse_ptx(STRIDED_LOOP)
    sl = compute_slices(m)["k"]
    stores = [op.operands_ast[0] for op in sl.ops if isinstance(op, InstructionOp) and op.spec.name == "st"]
    # [%rd5] and [%rd2+4] write k_buf, which load B reads; [%rd6] writes k_other only
    assert len(stores) == 2, [str(s) for s in stores]
