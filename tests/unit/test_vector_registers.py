"""Vector registers (``.reg .v2 .u32 v``, elements ``v.x``) and register-plus-immediate
operands (``%r1 + 4``), as ``ptxas`` accepts them: parsed, printed back, converted to
SSA and back, sliced and emulated (issue 16).  Expected values are worked out by hand
in the comments; the semantics of ``reg + imm`` (added at the register's width, then
converted like the register) follow the SASS ``ptxas`` makes of it on sm_90
(``VIADD R, R, 0x1`` then ``SHF.R.S32.HI`` for ``cvt.s64.s32 %rd, %r + 1``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hypa.ptxdialect import parse_ptx
from hypa.ptxdialect.diagnostics import PTXError
from hypa.ptxdialect.printer import module_to_ptx as print_ptx

from helpers import emulate, kernel

VEC = kernel("veck(.param .u64 out, .param .u64 in)", """
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.u64 %rd4, %rd2, %rd3;
    ld.global.v2.u32 temp_v, [%rd4];      // (2t, 2t+1): in is arange
    mov.u32 %r2, temp_v.x;                // 2t
    mov.u32 %r3, temp_v.y;                // 2t+1
    mov.v2.u32 temp_v, {%r3, %r2};        // (2t+1, 2t)
    add.u32 temp_v.x, temp_v.x, 100;      // (2t+101, 2t)
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mov.u32 temp_v.y, 55;            // t=0: (101, 55)
    cvt.u16.u32 %rs1, %r1;
    mov.v4.u16 x, {%rs1, %rs1, %rs1, %rs1};
    mov.u16 x.y, 7;                       // (t, 7, t, t)
    mov.u32 %r4, 0;
    setp.lt.u32 %p2, temp_v.y, 6;         // true for t = 1, 2 (2, 4); t = 0: 55; t >= 3: 2t >= 6
    @!%p2 bra $L_skip;
    add.u32 %r4, %r4, 1;
    mov.u16 x.z, 9;                       // (t, 7, 9, t) for t = 1, 2
$L_skip:
    mul.wide.u32 %rd5, %r1, 24;
    add.u64 %rd6, %rd1, %rd5;
    st.global.v2.u32 [%rd6], temp_v;
    mov.b64 %rd7, x;                      // element 0 in the low bits
    st.global.u64 [%rd6+8], %rd7;
    st.global.u32 [%rd6+16], %r1 + 1000;
    st.global.u32 [%rd6+20], %r4 + -1;    // 0 where the branch fell through, else 0xFFFFFFFF
    ret;
""", regs="""\
    .reg .pred %p<3>;
    .reg .b16 %rs<2>;
    .reg .u32 %r<8>;
    .reg .u64 %rd<8>;
    .reg .v2 .u32 temp_v;
    .reg .v4 .u16 x;
""")


def _expected(n: int) -> np.ndarray:
    out = np.zeros(6 * n, dtype=np.uint32)
    for t in range(n):
        taken = t in (1, 2)
        z = 9 if taken else t
        out[6 * t:6 * t + 6] = [
            101 if t == 0 else 2 * t + 101,
            55 if t == 0 else 2 * t,
            t + (7 << 16),
            z + (t << 16),
            t + 1000,
            0 if taken else 0xFFFFFFFF,
        ]
    return out


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_vector_registers_emulate(mode):
    n = 8
    out = np.zeros(6 * n, dtype=np.uint32)
    inp = np.arange(2 * n, dtype=np.uint32)
    res = emulate(VEC, ["out", "in"], {"out": out, "in": inp}, block=n, mode=mode,
                  exact_predicates=True, in_place=True)
    m = res.metrics
    if mode == "full":
        np.testing.assert_array_equal(out, _expected(n))
    # 28 instructions, 2 of them in the fall-through block, which lanes 1 and 2 run:
    # one warp of 8 threads
    assert m["inst_executed"] == 28
    assert m["thread_inst_executed"] == 26 * n + 2 * 2
    assert m["branch"] == 1 and m["divergent_branch"] == 1


def test_vector_registers_round_trip():
    module = parse_ptx(VEC)
    text = print_ptx(module)
    assert ".reg .v2 .u32 temp_v;" in text and ".reg .v4 .u16 x;" in text
    for s in ("ld.global.v2.u32 temp_v, [%rd4];", "mov.u32 %r2, temp_v.x;", "mov.v2.u32 temp_v, {%r3, %r2};",
              "add.u32 temp_v.x, temp_v.x, 100;", "@%p1 mov.u32 temp_v.y, 55;", "mov.u16 x.y, 7;",
              "st.global.v2.u32 [%rd6], temp_v;", "mov.b64 %rd7, x;", "st.global.u32 [%rd6+16], %r1+1000;",
              "st.global.u32 [%rd6+20], %r4+-1;"):
        assert s in text, s
    assert parse_ptx(text).is_structurally_equivalent(module)


def test_vector_registers_ssa():
    from xdsl.context import Context

    from hypa.passes.out_of_ssa import PTXOutOfSSA
    from hypa.passes.ssa import PTXToSSA
    from hypa.ptxdialect.dialect import InstructionOp

    module = parse_ptx(VEC)
    before = print_ptx(module)
    PTXToSSA().apply(Context(), module)
    k = next(op for op in module.walk() if isinstance(op, InstructionOp) and op.operands_ast
             and op.operands_ast[0] == ("elem", ("reg", "temp_v", 0), ".x") and op.spec.name == "add")
    # add.u32 temp_v.x, temp_v.x, 100 reads temp_v and keeps its old value: two operands
    assert [str(o.type) for o in k.operands] == ['!ptx.reg<"v2.u32">'] * 2
    assert str(k.results[0].type) == '!ptx.reg<"v2.u32">'
    PTXOutOfSSA().apply(Context(), module)
    assert print_ptx(module) == before


@pytest.mark.parametrize("stmt, why", [
    ("mov.u32 %r1, v.z;", "of 2 elements"),
    ("mov.u32 %r1, %r2.x;", "not a vector"),
    ("add.u32 %r1, v, 1;", "takes its elements"),
    ("mov.u32 %r1, v;", "does not fit"),
    ("ld.global.v2.u32 %r1, [%rd1];", "needs a vector register"),
    ("ld.global.u32 v, [%rd1];", "use 'ld.v2'"),
    ("mov.v4.u32 v, w;", "of 2 elements"),
    ("mov.v2.u32 v, v.x;", "one element"),
    ("mov.u32 %r1, %r2 - 4;", "write '%r2 + -4'"),
    ("add.f32 %f1, %f1 + 1, %f1;", "needs an integer register"),
])
def test_vector_register_errors(stmt, why):
    src = kernel("k(.param .u64 p)", stmt + "\n    ret;", regs="""\
    .reg .u32 %r<4>;
    .reg .u64 %rd<4>;
    .reg .f32 %f<2>;
    .reg .v2 .u32 v;
    .reg .v4 .u32 w;
""")
    with pytest.raises(PTXError, match=re.escape(why)):
        parse_ptx(src)


def test_vector_register_declaration_errors():
    for decl, why in ((".reg .v2 .pred q;", "predicate"), (".reg .v4 .u64 q;", "128 bits")):
        with pytest.raises(PTXError, match=why):
            parse_ptx(kernel("k()", "ret;", regs="    " + decl + "\n"))


def test_reg_plus_imm_wraps_at_the_register_width():
    # %r1 + 4294967297 adds 1 at 32 bits; cvt.s64.s32 of %r2 + 1 (0x7fffffff) sign-extends
    # the 32-bit sum; %rd1 + 0xFFFFFFFF is a 64-bit add
    src = kernel("k(.param .u64 o)", """
    ld.param.u64 %rd1, [o];
    mov.u32 %r1, 10;
    mov.u32 %r2, 0x7fffffff;
    st.global.u32 [%rd1], %r1 + 4294967297;
    cvt.s64.s32 %rd2, %r2 + 1;
    st.global.u64 [%rd1+8], %rd2;
    mov.u64 %rd3, 0x100000001;
    st.global.u64 [%rd1+16], %rd3 + 0xFFFFFFFF;
    mov.u16 %rs1, %r1 + -12;
    cvt.u32.u16 %r3, %rs1;
    st.global.u32 [%rd1+4], %r3;
    ret;
""")
    out = np.zeros(3, dtype=np.uint64)
    emulate(src, ["o"], {"o": out}, block=1, mode="full", in_place=True)
    w = out.view(np.uint32)
    assert w[0] == 11 and w[1] == 0xFFFE  # 10 - 12 = 0xFFFFFFFE, low 16 bits
    assert out[1] == 0xFFFFFFFF80000000
    assert out[2] == 0x200000000


CALL = """.version 8.0
.target sm_80
.address_size 64

.func (.reg .v2 .u32 out, .reg .u32 %s) f(.reg .v2 .u32 in, .reg .u32 %k)
{
    .reg .v2 .u32 t;
    mov.v2.u32 t, in;
    add.u32 t.x, t.x, %k;
    mov.v2.u32 out, {t.y, t.x};
    add.u32 %s, in.x, in.y;
    ret;
}

.visible .entry k(.param .u64 p)
{
    .reg .v2 .u32 temp_v, res;
    .reg .u32 %r<4>;
    .reg .u64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 16;
    add.u64 %rd3, %rd1, %rd2;
    add.u32 %r2, %r1, 10;
    mov.v2.u32 temp_v, {%r1, %r2};
    call (res, %r3), f, (temp_v, 100);
    st.global.v2.u32 [%rd3], res;
    st.global.u32 [%rd3+8], %r3;
    ret;
}
"""


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_reg_parameters_of_vector_type(mode):
    # .reg parameters are the caller's registers in the inlined copy: temp_v = (t, t+10),
    # res = (t+10, t+100), %r3 = t + (t+10); 10 instructions of the kernel, 5 of f
    out = np.zeros(16, dtype=np.uint32)  # 16 bytes a thread: the .v2 store 8-byte aligned
    m = emulate(CALL, ["p"], {"p": out}, block=4, mode=mode, in_place=True).metrics
    if mode == "full":
        t = np.arange(4, dtype=np.uint32)
        np.testing.assert_array_equal(out.reshape(4, 4)[:, :3], np.stack([t + 10, t + 100, 2 * t + 10], axis=1))
    assert m["inst_executed"] == 15 and m["thread_inst_executed"] == 60


def test_reg_parameter_written_by_the_callee_is_reported():
    from hypa.passes.inline import InlineError

    src = CALL.replace("add.u32 %s, in.x, in.y;", "add.u32 %k, %k, 1;\n    mov.u32 %s, %k;")
    with pytest.raises((InlineError, Exception), match="writes its .reg parameter '%k'"):
        emulate(src, ["p"], {"p": np.zeros(16, dtype=np.uint32)}, block=4, mode="full")
