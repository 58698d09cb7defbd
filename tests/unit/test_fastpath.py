"""The front end's fast paths build the same IR as the generic constructors.

The parser creates operations with ``dialect.new_op`` (no generic
``Operation.create`` bookkeeping), links them into blocks directly instead of
``Block.add_ops``, sets successors without the property setter, and reads most
body statements with a regular-expression fast path instead of the token
parser.  Each shortcut is checked here against the slow, generic way.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile

import pytest
from xdsl.dialects.builtin import IntAttr, StringAttr
from xdsl.ir import Block, Region

from hypa.ptxdialect import parse_ptx
from hypa.ptxdialect.dialect import (
    INSTRUCTION_OPS,
    ArgsAttr,
    FallthroughOp,
    FuncOp,
    GuardAttr,
    ImplicitReturnOp,
    LabelOp,
    RegDeclOp,
    RegNamesAttr,
    new_op,
    modifiers_attr,
    string_attr,
)
from hypa.ptxdialect.parser import _fast_str, _link_ops, _set_successors
from hypa.ptxdialect.printer import module_to_ptx

from helpers import HEADER, ROOT, kernel, ptxas


def _uses(block: Block) -> list[tuple[int, int]]:
    return sorted((id(u.operation), u.index) for u in block.uses)


def test_new_op_equals_create():
    props = {
        "mods": modifiers_attr(".lo.s32"),
        "args": ArgsAttr.fast((("reg", "%r1", 0), ("reg", "%r2", 0), ("imm", "4"), ("reg", "%r3", 0))),
        "guard": GuardAttr.fast((("reg", "%p1", 0), True)),
    }
    cls = INSTRUCTION_OPS["mad"]
    fast = new_op(cls, dict(props))
    slow = cls.create(properties=dict(props))
    assert fast.is_structurally_equivalent(slow)
    assert fast.properties == slow.properties and fast.attributes == slow.attributes
    assert fast.location == slow.location
    assert list(fast.operands) == list(slow.operands) == []
    assert list(fast.results) == list(slow.results) == []
    assert list(fast.successors) == list(slow.successors) == []
    assert fast.regions == slow.regions == ()
    assert fast.parent is None and fast.next_op is None and fast.prev_op is None
    fast.verify()
    # the register-form accessors agree
    assert fast.operands_ast == slow.operands_ast
    assert fast.guard_pred == slow.guard_pred
    assert fast.modifiers == slow.modifiers == (".lo", ".s32")
    assert fast.register_roles() == slow.register_roles()


def test_fast_attributes_equal_verified_ones():
    assert _fast_str("$L__BB0_1") == StringAttr("$L__BB0_1")
    assert hash(_fast_str("x")) == hash(StringAttr("x"))
    args = (("addr", ("reg", "%rd1", 0), 8, ""), ("vec", (("reg", "%f1", 0), ("imm", "0f3F800000"))))
    assert ArgsAttr.fast(args) == ArgsAttr(args)
    assert RegNamesAttr.fast((("%r", 4),)) == RegNamesAttr((("%r", 4),))
    assert GuardAttr.fast((("reg", "%p", 0), False)) == GuardAttr((("reg", "%p", 0), False))


def _ops():
    bra = INSTRUCTION_OPS["bra"]
    return [
        new_op(LabelOp, {"label": StringAttr("L")}),
        new_op(RegDeclOp, {"ptx_type": StringAttr(".b32"), "names": RegNamesAttr.fast((("%r", 4),)), "scope": IntAttr(0)}),
        new_op(bra, {"mods": modifiers_attr(""), "args": ArgsAttr.fast((("sym", "L", 0),))}),
    ]


def test_link_ops_equals_add_ops():
    a, b = Block(), Block()
    fast_ops, slow_ops = _ops(), _ops()
    _link_ops(a, fast_ops)
    b.add_ops(slow_ops)
    assert a.is_structurally_equivalent(b)
    assert list(a.ops) == fast_ops
    assert list(reversed(a.ops)) == list(reversed(fast_ops))
    assert a.first_op is fast_ops[0] and a.last_op is fast_ops[-1]
    for i, op in enumerate(fast_ops):
        assert op.parent is a
        assert op.prev_op is (fast_ops[i - 1] if i else None)
        assert op.next_op is (fast_ops[i + 1] if i + 1 < len(fast_ops) else None)
    # the linked block is an ordinary block: ops can be moved and erased
    fast_ops[1].detach()
    assert list(a.ops) == [fast_ops[0], fast_ops[2]]
    empty = Block()
    _link_ops(empty, [])
    assert empty.is_empty and empty.first_op is None and empty.last_op is None


def test_set_successors_equals_setter():
    targets = [Block(), Block()]
    fast = new_op(FallthroughOp, {})
    _set_successors(fast, targets)
    ref_targets = [Block(), Block()]
    slow = FallthroughOp.create(successors=ref_targets)
    assert list(fast.successors) == targets
    for t, r in zip(targets, ref_targets):
        assert [(u.operation is fast, u.index) for u in t.uses] == [(u.operation is slow, u.index) for u in r.uses]
    # replacing successors later goes through the setter and must see the uses
    fast.successors = [targets[1]]
    assert not list(targets[0].uses)
    assert [u.index for u in targets[1].uses] == [0]


SAMPLE = r"""
.version 8.0
.target sm_80
.address_size 64
.global .align 4 .b8 tab[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.func (.param .b32 r) callee(.param .b32 a)
{
	.reg .b32 %x<2>;
	ld.param.b32 %x0, [a];
	st.param.b32 [r+0], %x0;
	ret;
}
.visible .entry k(.param .u64 k_p, .param .u32 k_n)
{
	.reg .pred %p<4>;
	.reg .b32 %r<20>;
	.reg .f32 %f<8>;
	.reg .b64 %rd<8>;
	.loc 1 3 1
	ld.param.u64 %rd1, [k_p];
	ld.param.u32 %r1, [k_n];
	mov.u32 %r2, %tid.x; mov.u32 %r3, %ctaid.x;   // two on a line
	mad.lo.s32 %r4, %r3, %ntid.x, %r2;
	setp.ge.s32 %p1, %r4, %r1;
	@%p1 bra $L__BB1_4;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.s32 %rd3, %r4, 4;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.v2.f32 {%f1, %f2}, [%rd4+-8];
	ld.global.f32 %f3, [tab+4];
$L__BB1_2:  // loop head
	.loc 2 10 5, function_name $L__info_string0, inlined_at 1 3 1
	fma.rn.f32 %f4, %f1, 0f3F000000, %f2;
	shfl.sync.down.b32 %r5|%p2, %r4, 16, 31, -1;
	add.s32 %r4, %r4, 1;
	setp.lt.s32 %p3, %r4, 10;
	@!%p3 bra.uni $L__BB1_3;
	bra.uni $L__BB1_2;
$L__BB1_3:
	{ // callseq 0, 0
	.reg .b32 %r1;
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .align 4 .b8 retval0[4];
	call.uni (retval0),
	callee,
	(
	param0
	);
	ld.param.b32 %r6, [retval0];
	}
	st.global.v4.f32 [%rd4], {%f1, %f2, %f3, %f4};
	st.global.u32 [%rd4], %r1;
$L__BB1_4:
	ret;
}
"""


def test_fast_path_equals_token_parser_on_sample():
    fast = parse_ptx(SAMPLE, "sample.ptx")
    slow = parse_ptx(SAMPLE, "sample.ptx", fast=False)
    assert fast.is_structurally_equivalent(slow)
    assert module_to_ptx(fast) == module_to_ptx(slow)
    # block names (not part of structural equality) agree too
    (kf,) = [op for op in fast.ops if isinstance(op, FuncOp) and op.func_name == "k"]
    (ks,) = [op for op in slow.ops if isinstance(op, FuncOp) and op.func_name == "k"]
    assert [b.name_hint for b in kf.body.blocks] == [b.name_hint for b in ks.body.blocks]
    assert "$L__BB1.2" in [b.name_hint for b in kf.body.blocks]
    # the nested scope's %r1 shadows the outer one; the store after the scope
    # reads the outer register again
    texts = [(op.name, op.operands_ast) for b in kf.body.blocks for op in b.ops if op.name == "ptx.st"]
    assert (("addr", ("sym", "param0", 0), 0, ""), ("reg", "%r1", 1)) in [t for _, t in texts]
    assert (("addr", ("reg", "%rd4", 0), 0, ""), ("reg", "%r1", 0)) in [t for _, t in texts]


def test_comment_text_is_never_read_as_a_statement():
    # a statement the fast path does not take ('{', '.reg') after a comment
    # holding "word:" or "x;" must not make the fast path read the comment
    src = (
        HEADER + ".visible .entry k()\n{\n"
        "\t// note: a comment with a colon\n\t{\n\t// mov.u32 %r1, 1;\n\t.reg .b32 %t;\n"
        "\t// L2:\n\t}\n\t/* $L3: */\n\tret;\n}\n"
    )
    fast = parse_ptx(src, "c.ptx")
    assert fast.is_structurally_equivalent(parse_ptx(src, "c.ptx", fast=False))
    f = [op for op in fast.ops if isinstance(op, FuncOp)][0]
    assert [op.name for b in f.body.blocks for op in b.ops] == [
        "ptx.scope_begin", "ptx.reg", "ptx.scope_end", "ptx.ret",
    ]


def test_blocks_end_in_terminators_and_ops_are_linked():
    m = parse_ptx(SAMPLE, "sample.ptx")
    for f in (op for op in m.ops if isinstance(op, FuncOp)):
        for b in f.body.blocks:
            ops = list(b.ops)
            assert ops and ops[-1] is b.last_op and ops[0] is b.first_op
            assert all(op.parent is b for op in ops)
            assert ops[-1].name in ("ptx.fallthrough", "ptx.implicit_ret", "ptx.bra", "ptx.ret")
            for s in ops[-1].successors:
                assert any(u.operation is ops[-1] for u in s.uses)
    m.verify()
    # a function whose body runs off its end gets an implicit return
    callee = [op for op in m.ops if isinstance(op, FuncOp)][0]
    m2 = parse_ptx(SAMPLE.replace("st.param.b32 [r+0], %x0;\n\tret;", "st.param.b32 [r+0], %x0;"), "s.ptx")
    callee2 = [op for op in m2.ops if isinstance(op, FuncOp)][0]
    assert isinstance(list(callee2.body.blocks)[-1].last_op, ImplicitReturnOp)
    assert not isinstance(list(callee.body.blocks)[-1].last_op, ImplicitReturnOp)


def _repo_ptx_files() -> list[str]:
    pats = ["examples/*.ptx", "tests/kernels/ptx/*.ptx", "tests/filecheck/**/*.ptx"]
    out: list[str] = []
    for p in pats:
        out.extend(glob.glob(os.path.join(ROOT, p), recursive=True))
    return sorted(f for f in out if "/errors/" not in f and "/Output/" not in f)


@pytest.mark.parametrize("path", _repo_ptx_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_fast_path_equals_token_parser_on_repo_files(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        fast = parse_ptx(text, path)
    except Exception as e:  # a file that is meant to fail must fail the same way
        with pytest.raises(type(e)) as slow_err:
            parse_ptx(text, path, fast=False)
        assert str(slow_err.value) == str(e)
        return
    slow = parse_ptx(text, path, fast=False)
    assert fast.is_structurally_equivalent(slow)


def test_region_built_by_parser_is_an_ordinary_region():
    m = parse_ptx(SAMPLE, "sample.ptx")
    f = [op for op in m.ops if isinstance(op, FuncOp)][-1]
    clone = f.clone()
    assert clone.is_structurally_equivalent(f)
    r = Region()
    assert r.parent is None


INLINE_ASM_STYLE = kernel("k(.param .u64 k_p)", """
	ld.param.u64 %rd1, [k_p];
	setp.ne.s32 %p1, %r1, 0;
	// begin inline asm
	{.reg.b16         h, r;
 .reg.b32         f;
  mov.b16         h, %rs1;
  cvt.f32.f16     f, h;
  mov.b32         %r2, f;
}
	// end inline asm
	vote.ballot.sync.b32 %r3, %p1, 0xffffffff;
	vote.sync.ballot.b32 %r3, %p1, -1;
	ret;
""")


def test_real_world_spellings_from_inline_assembly():
    # '.reg.b16' without a space and 'vote.<mode>.sync' both occur in nvcc
    # output (inline assembly of cuda_fp16.hpp and CUB); ptxas accepts both
    m = parse_ptx(INLINE_ASM_STYLE, "asm.ptx")
    assert m.is_structurally_equivalent(parse_ptx(INLINE_ASM_STYLE, "asm.ptx", fast=False))
    f = [op for op in m.ops if isinstance(op, FuncOp)][0]
    ops = [op for b in f.body.blocks for op in b.ops]
    regs = [op for op in ops if isinstance(op, RegDeclOp)]
    assert [(r.ptx_type.data, r.names.data, r.scope.data) for r in regs[-2:]] == [
        (".b16", (("h", 0), ("r", 0)), 1), (".b32", (("f", 0),), 1),
    ]
    cvt = [op for op in ops if op.name == "ptx.cvt"][0]
    assert cvt.operands_ast == (("reg", "f", 1), ("reg", "h", 1))
    votes = [op for op in ops if op.name.startswith("ptx.vote")]
    assert [(v.name, v.modifiers, len(v.operands_ast)) for v in votes] == [
        ("ptx.vote", (".ballot", ".sync", ".b32"), 3), ("ptx.vote.sync", (".ballot", ".b32"), 3),
    ]
    text = module_to_ptx(m)
    assert "\t\t.reg .b16 h, r;" in text and "vote.ballot.sync.b32 %r3, %p1, 0xffffffff;" in text
    assert module_to_ptx(parse_ptx(text, "printed.ptx")) == text
    if shutil.which("ptxas"):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "asm.ptx")
            with open(p, "w") as fh:
                fh.write(text)
            r = ptxas(p, "sm_80")
            assert r.returncode == 0, r.stderr
