"""The ISA table: opcode resolution, operand roles, categories, FLOP weights."""

from __future__ import annotations

import glob
import os
import re

import pytest
from xdsl.traits import IsTerminator

from hypa.ptxdialect import InstructionOp, PTXSyntaxError, isa, parse_ptx
from hypa.ptxdialect.dialect import CC_REG, INSTRUCTION_OPS, split_mods

from helpers import ROOT, kernel, ptx_header

COVERAGE_DIR = os.path.join(ROOT, "tests", "filecheck", "Dialect", "ptx")


def resolve(token: str) -> tuple[str, tuple[str, ...]]:
    instr, mods = isa.resolve_opcode(token)
    return instr.name, mods


# ---------------------------------------------------------------------------
# Opcode resolution
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token, entry, mods",
    [
        ("add.s32", "add", (".s32",)),
        ("add.rn.f32.f16", "add", (".rn", ".f32", ".f16")),
        ("ld.global.nc.L1::no_allocate.v4.f32", "ld", (".global", ".nc", ".L1::no_allocate", ".v4", ".f32")),
        ("match.any.sync.b32", "match", (".any", ".sync", ".b32")),
        ("min.ftz.NaN.xorsign.abs.f32", "min", (".ftz", ".NaN", ".xorsign", ".abs", ".f32")),
        ("fma.rn.oob.relu.f16", "fma", (".rn", ".oob", ".relu", ".f16")),
        ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16", "wmma.load",
         (".a", ".sync", ".aligned", ".row", ".m16n16k16", ".global", ".f16")),
        ("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32", "mma",
         (".sp::ordered_metadata", ".sync", ".aligned", ".m16n8k32", ".row", ".col", ".f32", ".bf16", ".bf16", ".f32")),
        ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16", "wgmma.mma_async",
         (".sp", ".sync", ".aligned", ".m64n8k32", ".f32", ".f16", ".f16")),
        ("tcgen05.ld.sync.aligned.16x32bx2.x2.pack::16b.b32", "tcgen05.ld",
         (".sync", ".aligned", ".16x32bx2", ".x2", ".pack::16b", ".b32")),
        ("vote.sync.ballot.b32", "vote.sync", (".ballot", ".b32")),
        ("vote.ballot.b32", "vote", (".ballot", ".b32")),
        ("exit", "exit", ()),
    ],
)
def test_resolve_opcode(token, entry, mods):
    assert resolve(token) == (entry, mods)


@pytest.mark.parametrize(
    "token, entry",
    [
        # the longest entry that is a dot-prefix wins
        ("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32", "red.async"),
        ("red.global.add.f32", "red"),
        ("st.async.release.gpu.global.b32", "st.async"),
        ("st.bulk.weak.shared::cta", "st.bulk"),
        ("st.global.v4.f32", "st"),
        ("cp.async.ca.shared.global", "cp.async"),
        ("cp.async.wait_all", "cp.async.wait_all"),
        ("cp.async.mbarrier.arrive.noinc.shared.b64", "cp.async.mbarrier.arrive"),
        ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "cp.async.bulk"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", "cp.async.bulk.tensor"),
        ("cp.async.bulk.prefetch.L2.global", "cp.async.bulk.prefetch"),
        ("cp.async.bulk.prefetch.tensor.2d.L2.global.tile", "cp.async.bulk.prefetch.tensor"),
        ("cp.async.bulk.wait_group.read", "cp.async.bulk.wait_group"),
        ("cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group", "cp.reduce.async.bulk.tensor"),
        ("multimem.st.relaxed.sys.global.f32", "multimem.st"),
        ("multimem.st.async.release.sys.global.f32", "multimem.st.async"),
        ("multimem.cp.async.bulk.global.shared::cta.bulk_group", "multimem.cp.async.bulk"),
        ("bar.sync", "bar"),
        ("bar.warp.sync", "bar.warp.sync"),
        ("barrier.sync.aligned", "barrier"),
        ("barrier.cluster.arrive.release", "barrier.cluster"),
        ("shfl.sync.bfly.b32", "shfl.sync"),
        ("shfl.bfly.b32", "shfl"),
        ("cvt.pack.sat.u16.s32", "cvt.pack"),
        ("cvt.rn.f16.f32", "cvt"),
        ("brx.idx.uni", "brx.idx"),
        ("tcgen05.mma.ws.sp.cta_group::1.kind::f16", "tcgen05.mma"),
        ("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned", "tcgen05.relinquish_alloc_permit"),
    ],
)
def test_longest_prefix(token, entry):
    assert resolve(token)[0] == entry


def test_double_colon_qualifier_on_the_entry_name():
    assert resolve("tcgen05.fence::before_thread_sync") == ("tcgen05.fence", ("::before_thread_sync",))
    assert resolve("tcgen05.wait::ld.sync.aligned") == ("tcgen05.wait", ("::ld", ".sync", ".aligned"))
    # a `::` part that is not glued to an entry name is an ordinary modifier
    assert resolve("ld.shared::cta.u32") == ("ld", (".shared::cta", ".u32"))
    with pytest.raises(isa.UnknownModifier) as e:
        isa.resolve_opcode("tcgen05.fence::sideways")
    assert e.value.modifier == "::sideways"


@pytest.mark.parametrize("token", ["foo.s32", "cp", "cp.foo.bar", "tcgen05", "multimem"])
def test_unknown_opcode(token):
    with pytest.raises(isa.UnknownOpcode) as e:
        isa.resolve_opcode(token)
    assert e.value.args[0] == token.split(".")[0]


@pytest.mark.parametrize(
    "token, entry, modifier",
    [
        ("add.s33", "add", ".s33"),
        ("abs.relu.s32", "abs", ".relu"),  # abs has no .relu (ptxas: illegal modifier)
        ("bar.sync.aligned", "bar", ".aligned"),  # only barrier takes .aligned
        ("ld.global.f16", "ld", ".f16"),  # ld has no half types (use .b16)
        ("mov.u8", "mov", ".u8"),
        ("mma.sync.aligned.m16n8q16.row.col.f32.f16.f16.f32", "mma", ".m16n8q16"),
        ("tcgen05.ld.sync.aligned.16x64.x2.b32", "tcgen05.ld", ".16x64"),
        ("red.global.cas.b32", "red", ".cas"),  # cas/exch are atom-only
    ],
)
def test_unknown_modifier(token, entry, modifier):
    with pytest.raises(isa.UnknownModifier) as e:
        isa.resolve_opcode(token)
    assert e.value.instr.name == entry
    assert e.value.modifier == modifier


def test_modifier_tokens_are_single_parts():
    """A modifier token never contains a dot (``.xorsign.abs`` is two tokens)."""
    for instr in isa.INSTRUCTIONS:
        for m in instr.mods:
            assert re.fullmatch(r"(\.|::)[\w:]+", m), (instr.name, m)
        for p in instr.patterns:
            re.compile(p)


def test_pattern_families():
    for t in ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
              "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0",
              "tcgen05.mma.cta_group::2.kind::mxf8f6f4.block_scale.scale_vec::1X",
              "tcgen05.mma.cta_group::1.kind::f16.collector::a::lastuse",
              "tcgen05.st.sync.aligned.32x32b.x128.b32"):
        isa.resolve_opcode(t)


def test_parser_reports_unknown_modifier_and_arity():
    src = ptx_header("sm_90", "9.0") + ".entry k()\n{{\n .reg .b32 %r<4>;\n {}\n ret;\n}}\n"
    with pytest.raises(PTXSyntaxError, match=r"unknown modifier '\.xorsign' for 'add'"):
        parse_ptx(src.format("add.xorsign.s32 %r1, %r2, %r3;"))
    with pytest.raises(PTXSyntaxError, match="unknown opcode 'vfoo'"):
        parse_ptx(src.format("vfoo.u32 %r1, %r2, %r3;"))
    with pytest.raises(PTXSyntaxError, match="'add' expects 3 operands, found 2"):
        parse_ptx(src.format("add.s32 %r1, %r2;"))
    with pytest.raises(PTXSyntaxError, match="'mbarrier.try_wait' expects 3 to 4 operands, found 5"):
        parse_ptx(src.format("mbarrier.try_wait.b64 %r1, [%r2], %r3, 4, 5;"))


# ---------------------------------------------------------------------------
# Operand roles
# ---------------------------------------------------------------------------

_KERNEL = kernel("k()", """
    BODY
    ret;
""", before="""
.func (.reg .b32 fr) helper(.reg .b32 fa)
{
    mov.b32 fr, fa;
    ret;
}
.func sink(.reg .b32 fa)
{
    ret;
}""", target="sm_90a", version="9.0", visible=False)


def roles(stmt: str):
    m = parse_ptx(_KERNEL.replace("BODY", stmt), "roles.ptx")
    ops = [op for op in m.walk() if isinstance(op, InstructionOp)]
    op = ops[-2]  # the statement under test, before the kernel's ret
    uses, defs = op.register_roles()
    name = lambda rs: tuple(r[1] for r in rs)  # noqa: E731
    return name(uses), name(defs)


def test_roles_setp_pair():
    assert roles("setp.lt.f32 %p1|%p2, %f1, %f2;") == (("%f1", "%f2"), ("%p1", "%p2"))
    assert roles("setp.eq.and.s32 %p1, %r1, %r2, !%p3;") == (("%r1", "%r2", "%p3"), ("%p1",))


def test_roles_bar_red_writes_bar_sync_does_not():
    assert roles("bar.red.popc.u32 %r1, 0, %p1;") == (("%p1",), ("%r1",))
    assert roles("barrier.red.and.pred %p2, 1, %r3, !%p1;") == (("%r3", "%p1"), ("%p2",))
    assert roles("bar.sync %r1, %r2;") == (("%r1", "%r2"), ())
    assert roles("bar.arrive 1, %r2;") == (("%r2",), ())


def test_roles_call():
    assert roles("call.uni (%r1), helper, (%r2);") == (("%r2",), ("%r1",))
    assert roles("call.uni sink, (%r2);") == (("%r2",), ())


def test_roles_wgmma_accumulator_is_inout():
    uses, defs = roles("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, %p1, 1, 1, 0, 1;")
    assert defs == ("%f1", "%f2", "%f3", "%f4")
    assert uses == ("%f1", "%f2", "%f3", "%f4", "%rd1", "%rd2", "%p1")
    # mma takes its accumulator as a separate input: d is only written
    uses, defs = roles("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, {%r3}, {%f5, %f6, %f7, %f1};")
    assert defs == ("%f1", "%f2", "%f3", "%f4")
    assert uses == ("%r1", "%r2", "%r3", "%f5", "%f6", "%f7", "%f1")


def test_roles_carry_flag():
    uses, defs = roles("add.cc.u32 %r1, %r2, %r3;")
    assert CC_REG[1] not in uses and defs == ("%r1", CC_REG[1])
    uses, defs = roles("addc.cc.u32 %r4, %r5, %r6;")
    assert uses == ("%r5", "%r6", CC_REG[1]) and defs == ("%r4", CC_REG[1])
    uses, defs = roles("addc.u32 %r4, %r5, %r6;")
    assert uses == ("%r5", "%r6", CC_REG[1]) and defs == ("%r4",)
    assert isa.INSTRUCTIONS_BY_NAME["madc"].cc_use and not isa.INSTRUCTIONS_BY_NAME["mad"].cc_use


def test_roles_stores_sinks_and_guards():
    assert roles("st.global.v2.f32 [%rd1+8], {%f1, %f2};") == (("%rd1", "%f1", "%f2"), ())
    assert roles("mbarrier.arrive.shared::cta.b64 _, [%r1];") == (("%r1",), ())
    assert roles("elect.sync %r1|%p1, 0xffffffff;") == ((), ("%r1", "%p1"))
    # a guarded write also reads the previous value of what it writes
    assert roles("@%p1 add.s32 %r1, %r2, %r3;") == (("%p1", "%r2", "%r3", "%r1"), ("%r1",))
    assert roles("atom.global.cas.b32 %r1, [%rd1], %r2, %r3;") == (("%rd1", "%r2", "%r3"), ("%r1",))


@pytest.mark.parametrize(
    "token, n",
    [
        ("tcgen05.ld.sync.aligned.32x32b.x2.b32", 1),
        ("tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32", 2),  # r and redval
        ("tcgen05.st.sync.aligned.32x32b.x2.b32", 0),
        ("bar.red.or.pred", 1),
        ("barrier.arrive", 0),
        ("ld.global.f32", 1),
        ("st.global.f32", 0),
        ("red.global.add.f32", 0),
        ("atom.global.add.f32", 1),
        ("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group", 0),
        ("wmma.store.d.sync.aligned.row.m16n16k16.f32", 0),
        ("stmatrix.sync.aligned.m8n8.x1.shared.b16", 0),
        ("ldmatrix.sync.aligned.m8n8.x1.shared.b16", 1),
        ("clusterlaunchcontrol.query_cancel.is_canceled.pred.b128", 1),
        ("sust.b.1d.b32.trap", 0),
        ("suld.b.1d.b32.trap", 1),
    ],
)
def test_num_defs(token, n):
    instr, mods = isa.resolve_opcode(token)
    assert instr.num_defs(mods) == n


def test_terminators():
    terms = {i.name for i in isa.INSTRUCTIONS if i.terminator}
    assert terms == {"bra", "brx.idx", "ret", "exit", "trap"}


# ---------------------------------------------------------------------------
# Categories and FLOPs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token, flops",
    [
        ("add.f32", ("sp", 1)),
        ("sub.rn.f32", ("sp", 1)),
        ("mul.rn.f64", ("dp", 1)),
        ("fma.rn.f64", ("dp", 2)),
        ("mad.rn.f32", ("sp", 2)),
        ("add.f16x2", ("hp", 2)),
        ("add.rn.bf16", ("hp", 1)),
        ("fma.rn.f16x2", ("hp", 4)),
        ("fma.rn.f32x2", ("sp", 4)),
        ("fma.rn.sat.f32.bf16", ("sp", 2)),  # mixed precision counts by its f32 result
        ("div.rn.f32", ("special", 1)),
        ("div.approx.f32", ("special", 1)),
        ("rcp.approx.ftz.f64", ("special", 1)),
        ("ex2.approx.f16x2", ("special", 2)),
        ("tanh.approx.f32", ("special", 1)),
        ("sqrt.rn.f64", ("special", 1)),
        ("add.s32", ("", 0)),
        ("mul.wide.s32", ("", 0)),
        ("div.s32", ("", 0)),
        ("setp.lt.f32", ("", 0)),
        ("min.f32", ("", 0)),
        ("neg.f64", ("", 0)),
        ("abs.ftz.f32", ("", 0)),
        ("cvt.rn.f32.s32", ("", 0)),
        ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", ("", 0)),
    ],
)
def test_flop_weights(token, flops):
    assert isa.flop_weights(*isa.resolve_opcode(token)) == flops


@pytest.mark.parametrize(
    "token, cat",
    [
        ("add.s32", "int"),
        ("add.f32", "fp32"),
        ("add.rn.f32.f16", "fp32"),
        ("fma.rn.f64", "fp64"),
        ("fma.rn.bf16x2", "fp16"),
        ("setp.lt.f64", "fp64"),
        ("setp.lt.u32", "int"),
        ("lop3.b32", "int"),
        ("sin.approx.f32", "sfu"),
        ("cvt.rn.f32.f64", "convert"),
        ("cvt.pack.sat.u16.s32", "convert"),
        ("ld.global.f32", "mem"),
        ("atom.global.add.u32", "atomic"),
        ("red.async.release.gpu.global.add.u32", "atomic"),
        ("bra.uni", "control"),
        ("call.uni", "control"),
        ("bar.sync", "sync"),
        ("shfl.sync.idx.b32", "warp"),
        ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", "matrix"),
        ("tex.2d.v4.f32.f32", "texture"),
        ("vadd4.u32.u32.u32", "int"),
        ("nanosleep.u32", "misc"),
    ],
)
def test_category(token, cat):
    assert isa.category(*isa.resolve_opcode(token)) == cat
    assert cat in isa.CATEGORIES


def test_state_space():
    assert isa.state_space(*isa.resolve_opcode("ld.shared::cta.u32")) == "shared"
    assert isa.state_space(*isa.resolve_opcode("st.global.f32")) == "global"
    assert isa.state_space(*isa.resolve_opcode("ld.u32")) == "generic"
    assert isa.state_space(*isa.resolve_opcode("add.s32")) is None


def test_type_modifiers():
    assert isa.type_modifiers((".rn", ".f32", ".s32")) == (".f32", ".s32")
    assert isa.type_modifiers((".sync", ".m8n8k32", ".s32", ".u4", ".s4", ".s32")) == (".s32", ".u4", ".s4", ".s32")
    assert all(t in isa.TYPE_BITS for t in isa.ALL_TYPES | isa.INSTR_ONLY_TYPES)


# ---------------------------------------------------------------------------
# Table-wide invariants
# ---------------------------------------------------------------------------


def test_every_entry_has_a_generated_op_class():
    assert set(INSTRUCTION_OPS) == set(isa.INSTRUCTIONS_BY_NAME)
    for name, cls in INSTRUCTION_OPS.items():
        instr = isa.INSTRUCTIONS_BY_NAME[name]
        assert cls.name == "ptx." + name
        assert cls.ISA is instr
        assert issubclass(cls, InstructionOp)
        assert cls.has_trait(IsTerminator) == instr.terminator


def test_op_classes_are_what_irdl_op_definition_makes():
    """The op classes share one derived IRDL definition per shape (start-up time): each has
    exactly the definition and members that xDSL's ``irdl_op_definition`` gives that class,
    and traits of its own."""
    import dataclasses
    from typing import ClassVar

    from xdsl.irdl import irdl_op_definition, traits_def
    from xdsl.irdl.operations import OpDef

    from hypa.ptxdialect import dialect as d

    for instr in isa.INSTRUCTIONS:
        ns = {"name": instr.op_name, "ISA": instr, "__annotations__": {"ISA": ClassVar[isa.Instr]},
              "__module__": d.__name__}
        bases: tuple = (InstructionOp,)
        if instr.terminator:
            ns["traits"] = traits_def(IsTerminator())
            bases = (d.BlockTerminator, InstructionOp)
        ref = irdl_op_definition(type("Ref", bases, ns))
        cls = INSTRUCTION_OPS[instr.name]
        got, want = cls.get_irdl_definition(), ref.get_irdl_definition()
        for f in dataclasses.fields(OpDef):
            a, b = getattr(got, f.name), getattr(want, f.name)
            if f.name == "traits":
                a, b = a.traits, b.traits
            assert a == b, (instr.name, f.name)
        assert set(vars(cls)) == set(vars(ref)), instr.name
    assert len({id(c.get_irdl_definition().traits) for c in INSTRUCTION_OPS.values()}) == len(INSTRUCTION_OPS)


def test_status_partitions_the_table():
    parse, full = isa.parse_only_entries(), isa.fully_described_entries()
    assert not set(parse) & set(full)
    assert sorted(parse + full) == sorted(isa.INSTRUCTIONS_BY_NAME)
    assert {i.status for i in isa.INSTRUCTIONS} == {"full", "parse"}
    assert "tcgen05.mma" in parse and "tensormap.replace" in parse and "tex" in full
    assert "add" in full and "ld" in full and "wgmma.mma_async" in full


def test_coverage_rows():
    rows = isa.coverage_rows()
    assert [r[0] for r in rows] == [i.name for i in isa.INSTRUCTIONS]
    for name, kind, status in rows:
        assert kind in isa.KINDS and status in ("full", "parse")
    assert ("cp.async.bulk.tensor", "mem", "full") in rows


def test_entries_are_well_formed():
    for i in isa.INSTRUCTIONS:
        assert i.kind in isa.KINDS
        if i.arity is not None:
            lo, hi = i.arity
            assert 0 <= lo <= hi
            assert i.num_defs(()) <= hi
        assert not (i.inout and i.defs == 0)
        assert not ((i.flops or i.special) and i.kind not in ("arith", "sfu"))
    assert isa.INSTRUCTIONS_BY_NAME["call"].arity is None


def _coverage_module_ops():
    files = sorted(glob.glob(os.path.join(COVERAGE_DIR, "isa_*.ptx")))
    assert files
    for path in files:
        with open(path) as f:
            m = parse_ptx(f.read(), path)
        for op in m.walk():
            if isinstance(op, InstructionOp):
                yield op


def test_coverage_files_name_every_entry():
    """The lit files under Dialect/ptx hold a statement of every table entry."""
    seen = {op.spec.name for op in _coverage_module_ops()}
    assert seen == set(isa.INSTRUCTIONS_BY_NAME), sorted(set(isa.INSTRUCTIONS_BY_NAME) - seen)


def test_decoded_modifiers_match_resolution():
    """The dialect's view of the modifiers agrees with the table's split."""
    for op in _coverage_module_ops():
        mods = op.properties["mods"].text
        assert split_mods(mods) == isa.resolve_opcode(op.spec.name + mods)[1] == op.modifiers


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(COVERAGE_DIR, "isa_*.ptx"))), ids=os.path.basename)
def test_coverage_files_round_trip(path):
    from hypa.ptxdialect import module_to_ptx

    with open(path) as f:
        m = parse_ptx(f.read(), path)
    text = module_to_ptx(m)
    m2 = parse_ptx(text, "printed.ptx")
    assert m.is_structurally_equivalent(m2)
    assert module_to_ptx(m2) == text


def test_every_entry_has_its_memory_transfer_and_sync_facts():
    """One table of instruction facts: the slicer (memory_effect), the timing model
    (classify) and batch keys read these, so they must be complete and consistent."""
    from hypa.ptxdialect import isa

    for i in isa.INSTRUCTIONS:
        assert i.memory in isa.MEMORY_EFFECTS, i.name
        assert i.transfer in isa.TRANSFERS, i.name
        assert i.sync in isa.SYNC_ROLES, i.name
        if i.transfer == "load":
            assert i.memory == "r", i.name
        if i.transfer == "store":
            assert i.memory == "w", i.name
        if i.kind == "atomic":  # atomics and reductions always write memory
            assert "w" in i.memory, i.name
        if i.kind in ("arith", "logic", "sfu", "convert", "control"):
            assert not i.memory and not i.transfer, i.name
    # the drift the single table removed: an asynchronous multimem store is a store for
    # timing and a writer for slicing alike; cp.async reads and writes
    assert isa.INSTRUCTIONS_BY_NAME["multimem.st.async"].memory == "w"
    assert isa.INSTRUCTIONS_BY_NAME["multimem.st.async"].transfer == "store"
    assert isa.INSTRUCTIONS_BY_NAME["cp.async"].memory == "rw"
    assert {i.name for i in isa.INSTRUCTIONS if i.sync == "barrier"} == {"bar", "barrier", "barrier.cluster"}


def test_every_entry_has_its_lane_and_timing_facts_and_a_timing_class():
    """Cross-lane behaviour and timing family come from the table too; every entry then
    gets a timing class the architecture files describe."""
    import tomllib

    from hypa.ptxdialect import isa
    from hypa.ptxdialect.dialect import INSTRUCTION_OPS, ArgsAttr, modifiers_attr
    from hypa.runtime.models.timing import ARCH_DIR, classify

    for i in isa.INSTRUCTIONS:
        assert i.lanes in isa.LANES and i.timing in isa.TIMING_FAMILIES, i.name
        if i.kind == "warp":
            assert i.lanes == "cross", i.name
        if i.timing == "tensor":
            assert i.kind == "matrix" and i.lanes == "cross", i.name
        if i.timing in ("int_mul", "div", "int_compare"):
            assert i.kind == "arith", i.name
        if i.timing in ("int_slow", "int_bitwise"):
            assert i.kind == "logic", i.name
        if i.timing in ("cp_async", "prefetch"):
            assert i.kind == "mem", i.name
    with open(ARCH_DIR / "sm_90.toml", "rb") as f:
        classes = set(tomllib.load(f)["classes"])
    for name, cls in INSTRUCTION_OPS.items():
        op = cls.create(properties={"mods": modifiers_attr(""), "args": ArgsAttr.fast(())})
        assert classify(op) in classes, name
    cross = {i.name for i in isa.INSTRUCTIONS if i.lanes == "cross"}
    assert {"shfl.sync", "vote.sync", "match", "redux.sync", "activemask", "mma", "ldmatrix"} <= cross
    assert "add" not in cross and "ld" not in cross


def test_slicer_and_timing_model_read_the_table():
    from hypa.passes.slice import memory_effect
    from hypa.ptxdialect import parse_ptx
    from hypa.ptxdialect.dialect import InstructionOp
    from hypa.runtime.models.timing import classify

    text = kernel("k(.param .u64 k_p)", """
    ld.param.u64 %rd1, [k_p];
    ld.global.u32 %r1, [%rd1];
    st.global.u32 [%rd1], %r1;
    atom.global.add.u32 %r2, [%rd1], 1;
    red.global.add.u32 [%rd1], 1;
    bar.sync 0;
    ret;
""")
    ops = [op for op in parse_ptx(text).walk() if isinstance(op, InstructionOp)]
    got = [(op.opcode, memory_effect(op), classify(op)) for op in ops]
    assert got == [
        ("ld.param.u64", (True, False), "ld_param"),
        ("ld.global.u32", (True, False), "ld_global"),
        ("st.global.u32", (False, True), "st_global"),
        ("atom.global.add.u32", (True, True), "atom_global"),
        ("red.global.add.u32", (False, True), "atom_global"),
        ("bar.sync", (False, False), "barrier"),
        ("ret", (False, False), "branch"),
    ]
