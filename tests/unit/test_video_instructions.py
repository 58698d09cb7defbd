"""Video instructions (``vadd`` ... ``vset4``, issue 16): the front end reads their selectors
(``%r1.b0``, ``%r2.h10``, ``d.b31``) and vmad's negations and accepts exactly the forms
``ptxas -arch=sm_90`` accepts (each verdict below was ptxas's), the IR prints them back, and
the emulator computes what the PTX ISA's pseudo-code gives.

The expected values are worked out by hand from the ISA's pseudo-code, each with its
derivation; the GPU's answers come from the probes (``benchmarks/gpu/probes.py``, variants
``video.*``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import ElementwiseKernel, emulate, emulate_elementwise, kernel, requires

from hypa.ptxdialect import isa, parse_ptx
from hypa.ptxdialect.diagnostics import PTXError

#: (statement, a, b, c, expected d): {d} {a} {b} {c} are 32-bit registers holding the inputs
CASES = [
    # scalar: wrap, saturation to the destination type
    ("vadd.u32.u32.u32 {d}, {a}, {b}", 0xFFFFFFFF, 1, 0, 0),  # 2**32: low 32 bits
    # an unsigned full-word .sat only raises negatives to 0: 2**32 keeps its low 32 bits (H100)
    ("vadd.u32.u32.u32.sat {d}, {a}, {b}", 0xFFFFFFFF, 1, 0, 0),
    ("vadd.s32.s32.s32.sat {d}, {a}, {b}", 0x7FFFFFFF, 1, 0, 0x7FFFFFFF),  # 2**31 -> S32_MAX
    ("vadd.s32.u32.u32.sat {d}, {a}, {b}", 0xFFFFFFFF, 0xFFFFFFFF, 0, 0x7FFFFFFF),  # 0x1fffffffe -> S32_MAX
    ("vsub.u32.u32.u32.sat {d}, {a}, {b}", 1, 2, 0, 0),  # -1 -> U32_MIN
    ("vsub.s32.u32.u32.sat {d}, {a}, {b}", 1, 2, 0, 0xFFFFFFFF),  # -1 fits .s32
    # selected bytes and half-words, sign- or zero-extended by .atype/.btype
    ("vadd.s32.s32.u32 {d}, {a}.b1, {b}.b0", 0x00008000, 0x000000FF, 0, 0x7F),  # -128 + 255
    ("vadd.s32.u32.u32 {d}, {a}.b1, {b}.b0", 0x00008000, 0x000000FF, 0, 0x17F),  # 128 + 255
    ("vsub.s32.s32.s32 {d}, {a}.h1, {b}.h0", 0xFFFE0000, 3, 0, 0xFFFFFFFB),  # -2 - 3
    ("vadd.u32.u32.u32 {d}, {a}.b3, {b}.h1", 0xAB000000, 0x00010000, 0, 0xAC),  # 0xab + 1
    ("vabsdiff.u32.s32.s32 {d}, {a}, {b}", 0x80000000, 0x7FFFFFFF, 0, 0xFFFFFFFF),  # |-2**31 - (2**31-1)|
    ("vmin.s32.s32.u32 {d}, {a}, {b}", 0xFFFFFFFF, 5, 0, 0xFFFFFFFF),  # min(-1, 5)
    ("vmin.u32.u32.u32 {d}, {a}, {b}", 0xFFFFFFFF, 5, 0, 5),  # min(2**32-1, 5)
    ("vmax.s32.s32.s32 {d}, {a}, {b}", 0xFFFFFFFF, 5, 0, 5),
    # secondary operation on c, whose sign is dtype's
    ("vadd.u32.u32.u32.add {d}, {a}, {b}, {c}", 1, 2, 0xFFFFFFFF, 2),  # 3 + 2**32-1, low 32 bits
    ("vsub.s32.s32.s32.min {d}, {a}, {b}, {c}", 10, 3, 0xFFFFFFF0, 0xFFFFFFF0),  # min(7, -16)
    ("vsub.u32.s32.s32.min {d}, {a}, {b}, {c}", 10, 3, 0xFFFFFFF0, 7),  # min(7, 2**32-16)
    ("vabsdiff.u32.u32.u32.max {d}, {a}, {b}, {c}", 3, 10, 100, 100),  # max(7, 100)
    ("vadd.u32.u32.u32.sat.add {d}, {a}, {b}, {c}", 0xFFFFFFFF, 1, 5, 5),  # 2**32 -> 0 (as above), then + 5
    # the secondary min/max: vadd/vsub compare their 32-bit result sign-extended (recorded rows)
    ("vadd.s32.s32.u32.max {d}, {a}, {b}, {c}", 0x7FFFFFFF, 1, 0xF, 0xF),  # max(-2**31, 15)
    ("vadd.u32.u32.s32.sat.max {d}, {a}.b2, {b}, {c}", 0xFFFFFFFE, 0x7FFFFFFF, 0x9ABCDEF0, 0x800000FE),
    ("vshl.u32.s32.u32.wrap.max {d}, {a}.h1, {b}.b0, {c}", 0x80000000, 0x1F, 5, 0),  # -2**46 as unsigned
    # the shift's 64 bits wrap as ptxas's SASS computes them: 0x8306bdf3 << 32 is negative
    ("vshl.s32.u32.u32.clamp.min {d}, {a}, {b}.b0, {c}", 0x8306BDF3, 0x80, 0xFFFFFFFF, 0),
    ("vadd.u32.u32.u32 {d}, {a}, {b}, {c}", 1, 2, 100, 3),  # four operands, no secondary op: c unused
    ("vadd.s32.s32.s32 {d}, {a}, -3", 1, 0, 0, 0xFFFFFFFE),  # an immediate
    # merge into c at the destination selector (saturating to the byte/half-word)
    ("vadd.u32.u32.u32 {d}.b2, {a}, {b}, {c}", 0x12, 0x34, 0xAABBCCDD, 0xAA46CCDD),
    ("vadd.u32.u32.u32.sat {d}.b0, {a}, {b}, {c}", 200, 100, 0xAABBCCDD, 0xAABBCCFF),  # 300 -> U8_MAX
    # a signed byte/half .sat clamps the value read as unsigned: negatives give the maximum (H100)
    ("vadd.s32.s32.s32.sat {d}.b0, {a}, {b}, {c}", 0xFFFFFFFF, 0, 0x55555555, 0x5555557F),  # -1 -> 127
    # d.h1 gets bits 31..16 of the result: 0 after a half-word .sat, the high half after vshl's
    ("vsub.s32.s32.s32.sat {d}.h1, {a}, {b}, {c}", 0xFFFF8000, 1, 0xAABBCCDD, 0x0000CCDD),
    ("vshl.s32.s32.u32.clamp.sat {d}.h1, {a}.b2, {b}, {c}", 0x55555555, 15, 0x3F, 0x002A003F),  # 0x2a8000
    ("vadd.u32.u32.u32 {d}.h0, {a}, {b}, {c}", 0x0001FFFF, 1, 0xAABBCCDD, 0xAABB0000),  # 0x20000, low 16 bits
    # shifts: .clamp (at 32) and .wrap (mod 32); the .s34 intermediate
    ("vshl.u32.u32.u32.clamp {d}, {a}, {b}", 1, 40, 0, 0),  # 1 << 32
    ("vshl.u32.u32.u32.wrap {d}, {a}, {b}", 1, 40, 0, 0x100),  # 1 << 8
    ("vshr.s32.s32.u32.wrap {d}, {a}, {b}", 0x80000000, 4, 0, 0xF8000000),  # -2**31 >> 4
    ("vshr.u32.u32.u32.wrap {d}, {a}, {b}", 0x80000000, 4, 0, 0x08000000),
    ("vshr.s32.s32.u32.clamp {d}, {a}, {b}", 0x80000000, 100, 0, 0xFFFFFFFF),  # >> 32: the sign
    ("vshl.u32.u32.u32.clamp.sat {d}, {a}, {b}", 0x80000000, 1, 0, 0xFFFFFFFF),  # 2**32 -> U32_MAX
    ("vshl.u32.u32.u32.clamp.sat {d}, {a}, {b}", 0xFFFFFFFF, 2, 0, 0),  # 0x3fffffffc as .s34 is -4 -> 0
    ("vshr.u32.u32.u32.clamp {d}.b1, {a}.h1, {b}.b0, {c}", 0xFF000000, 0x104, 0xAABBCCDD, 0xAABBF0DD),
    # vset: 1 or 0, then the secondary operation or merge (unsigned)
    ("vset.s32.u32.lt {d}, {a}, {b}", 0xFFFFFFFF, 0, 0, 1),  # -1 < 0 (.atype .s32)
    ("vset.u32.u32.lt {d}, {a}, {b}", 0xFFFFFFFF, 0, 0, 0),  # 2**32-1 < 0
    ("vset.s32.s32.ne {d}.b3, {a}, {b}, {c}", 1, 2, 0xAABBCCDD, 0x01BBCCDD),
    ("vset.u32.u32.eq.add {d}, {a}, {b}, {c}", 7, 7, 41, 42),
    ("vset.s32.s32.ge.max {d}, {a}, {b}, {c}", 8, 0, 0xFFFFFFFF, 1),  # max(1, -1): c signed as .atype (H100)
    ("vset.u32.u32.eq.max {d}, {a}, {b}, {c}", 1, 2, 0xFFFFFFFF, 0xFFFFFFFF),  # max(0, 2**32-1): c unsigned
    # vmad: a signed 32x32-bit product in 64 bits, c sign-extended, negations, .po, scaling,
    # saturation by the final sign
    ("vmad.u32.u32.u32.sat {d}, {a}, {b}, {c}", 8, 0, 0xFFFFFFFF, 0),  # c is -1 -> 0 (H100)
    ("vmad.u32.u32.u32.shr7 {d}, {a}, {b}, {c}", 0x10, 0, 0x80000001, 0xFF000000),  # logical >> 7 of 64 bits
    ("vmad.u32.u32.u32 {d}, {a}, {b}, {c}", 0x10000, 0x10000, 5, 5),  # 2**32 + 5
    ("vmad.u32.u32.u32.sat {d}, {a}, {b}, {c}", 0x10000, 0x10000, 5, 0xFFFFFFFF),
    ("vmad.s32.s32.s32 {d}, -{a}, {b}, {c}", 3, 4, 20, 8),  # ~12 + 20 + 1
    ("vmad.u32.u32.u32 {d}, {a}, {b}, -{c}", 3, 4, 20, 0xFFFFFFF8),  # 12 + ~20 + 1 = -8 (final signed)
    ("vmad.u32.u32.u32.sat {d}, {a}, {b}, -{c}", 3, 4, 20, 0xFFFFFFF8),  # -8 is in the .s32 range
    ("vmad.u32.u32.u32 {d}, -{a}, -{b}, {c}", 3, 4, 5, 17),  # two negations cancel
    ("vmad.u32.u32.u32.po {d}, {a}, {b}, {c}", 3, 4, 5, 18),  # + 1
    ("vmad.u32.u32.u32.shr7 {d}, {a}, {b}, {c}", 0x100, 0x100, 0x80, 0x201),  # 0x10080 >> 7
    ("vmad.s32.s32.s32.shr15 {d}, {a}, {b}, {c}", 0xFFFF0000, 2, 0, 0xFFFFFFFC),  # -131072 >> 15
    ("vmad.s32.s32.s32.sat {d}, {a}, {b}, {c}", 0x7FFFFFFF, 2, 0, 0x7FFFFFFF),
    ("vmad.s32.s32.u32 {d}, {a}.b0, {b}.h1, {c}", 0xFF, 0x00020000, 10, 8),  # -1 * 2 + 10
    # 2-way SIMD: .asel .h10 and .bsel .h32 by default, mask .h10
    ("vadd2.u32.u32.u32 {d}, {a}, {b}, {c}", 0x0001FFFF, 0x00020001, 0, 0x00030000),
    ("vadd2.u32.u32.u32.sat {d}, {a}, {b}, {c}", 0x0001FFFF, 0x00020001, 0, 0x0003FFFF),
    ("vadd2.s32.s32.s32.sat {d}, {a}, {b}, {c}", 0x7FFF8000, 0x00018000, 0, 0x7FFF8000),
    ("vsub2.s32.s32.s32 {d}, {a}.h01, {b}.h23, {c}", 0x00050003, 0x00010002, 0, 0x00010004),  # (3-2, 5-1)
    ("vmax2.u32.u32.u32 {d}, {a}.h32, {b}.h10, {c}", 0x00100001, 0x00020003, 0, 0x00100003),  # a picks b's
    ("vadd2.u32.u32.u32 {d}.h1, {a}, {b}, {c}", 0x00010001, 0x00020002, 0xAAAABBBB, 0x0003BBBB),
    ("vabsdiff2.u32.u32.u32.add {d}, {a}, {b}, {c}", 0x00010009, 0x00050002, 100, 111),  # 100 + 7 + 4
    ("vsub2.s32.s32.s32.add {d}, {a}, {b}, {c}", 0x00000001, 0x00030002, 0, 0xFFFFFFFC),  # -1 + -3
    ("vsub2.s32.s32.s32.add {d}.h1, {a}, {b}, {c}", 0x00000001, 0x00030002, 10, 7),  # 10 - 3
    ("vavrg2.u32.u32.u32 {d}, {a}, {b}, {c}", 0x00030001, 0x00040002, 0, 0x00040002),  # (1+2+1)>>1, (3+4+1)>>1
    ("vavrg2.s32.s32.s32 {d}, {a}, {b}, {c}", 0xFFFFFFFF, 0xFFFE0000, 0, 0xFFFEFFFF),  # -1 >> 1, -3 >> 1
    ("vmin2.s32.s32.s32 {d}, {a}, {b}, {c}", 0x80000001, 0x00018000, 0, 0x80008000),
    ("vmin2.u32.u32.u32 {d}, {a}, {b}, {c}", 0x80000001, 0x00018000, 0, 0x00010001),
    ("vset2.u32.u32.lt {d}, {a}, {b}, {c}", 0x00010005, 0x00020003, 0, 0x00010000),
    ("vset2.s32.s32.ne.add {d}, {a}, {b}, {c}", 0x00010005, 0x00010003, 7, 8),
    ("vset2.u32.u32.eq {d}.h0, {a}, {b}, {c}", 0x12345678, 0x12345678, 0xAAAABBBB, 0xAAAA0001),
    # 4-way SIMD: .asel .b3210 and .bsel .b7654 by default, mask .b3210
    ("vadd4.u32.u32.u32 {d}, {a}, {b}, {c}", 0x01FF7F80, 0x01010101, 0, 0x02008081),
    ("vadd4.u32.u32.u32.sat {d}, {a}, {b}, {c}", 0x01FF7F80, 0x01010101, 0, 0x02FF8081),
    ("vadd4.s32.s32.s32.sat {d}, {a}, {b}, {c}", 0x01FF7F80, 0x01010101, 0, 0x02007F81),  # 1,-1,127,-128 + 1
    ("vmax4.u32.u32.u32 {d}, {a}.b0123, {b}.b4567, {c}", 0x01020304, 0, 0, 0x04030201),  # bytes reversed
    ("vset4.u32.u32.gt {d}.b31, {a}, {b}, {c}", 0x05050505, 0x04060406, 0xAABBCCDD, 0x01BB01DD),
    ("vabsdiff4.u32.u32.u32.add {d}, {a}, {b}, {c}", 0x0A141E28, 0x28141E0A, 1, 61),  # 1 + 30 + 0 + 0 + 30
    ("vabsdiff4.u32.s32.s32 {d}, {a}, {b}, {c}", 0x7F7F7F7F, 0x80808080, 0, 0xFFFFFFFF),  # |127 - -128| = 255
    ("vabsdiff4.s32.s32.s32.sat {d}, {a}, {b}, {c}", 0x7F7F7F7F, 0x80808080, 0, 0x7F7F7F7F),  # 255 -> S8_MAX
    ("vavrg4.s32.s32.s32 {d}, {a}, {b}, {c}", 0x03FD0100, 0, 0, 0x02FE0100),  # 3 -> 2, -3 -> -2, 1 -> 1, 0 -> 0
    ("vsub4.s32.s32.s32.add {d}.b20, {a}, {b}, {c}", 0x01020304, 0x04030201, 0, 2),  # (2-3) + (4-1)
    ("vmin4.u32.s32.u32 {d}, {a}, {b}, {c}", 0xFF000000, 0x01000000, 0, 0xFF000000),  # min(-1, 1) in byte 3
    ("vmin4.u32.u32.u32 {d}, {a}.b7654, {b}.b3210, {c}", 0x00000009, 0x00000003, 0, 3),  # a picks b's bytes
]


def _kernel(statements: list[str]) -> str:
    """Thread i loads a, b, c (row i) and stores each statement's d to out[i, k]."""
    k = ElementwiseKernel()
    ra, rb, rc = (k.load(n, ".b32") for n in "abc")
    out = k.param("out", 4 * len(statements))
    d = k.reg("%d", ".b32")
    for j, st in enumerate(statements):
        k.add("mov.b32 %d, 0xdeadbeef; " + st.format(d=d, a=ra, b=rb, c=rc) + f"; st.global.b32 [{out}+{4 * j}], %d")
    return k.ptx()


def test_hand_computed_cases():
    statements = sorted({c[0] for c in CASES})
    col = {s: j for j, s in enumerate(statements)}
    n = len(CASES)
    a, b, c = (np.array([case[i] for case in CASES], dtype=np.uint32) for i in (1, 2, 3))
    out = np.zeros((n, len(statements)), dtype=np.uint32)
    res = emulate_elementwise(_kernel(statements), [a, b, c, out], n)[3]
    got = [int(res[i, col[case[0]]]) for i, case in enumerate(CASES)]
    bad = [(case[0], hex(case[1]), hex(case[2]), hex(case[3]), hex(case[4]), hex(g))
           for case, g in zip(CASES, got) if g != case[4]]
    assert not bad, bad


def test_every_video_entry_is_emulated_and_counted_as_integer():
    names = {case[0].split(".")[0] for case in CASES}
    video = {i.name for i in isa.INSTRUCTIONS if i.video}
    assert names == video == set(
        "vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 "
        "vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4".split())
    for name in video:
        instr = isa.INSTRUCTIONS_BY_NAME[name]
        mods = (".u32", ".s32", ".u32")
        assert instr.status == "full" and isa.category(instr, mods) == "int"
        assert isa.flop_weights(instr, mods) == ("", 0)


# -- the front end: what ptxas -arch=sm_90 accepts (A) and rejects (R) ------------------------

#: each statement with ptxas's verdict (CUDA 13, -arch=sm_90), and for rejections what hypa says
FORMS = [
    ("A", "vadd.s32.u32.s32.sat %r4, %r1.b0, %r2.h1;", ""),
    ("A", "vshr.s32.s32.u32.wrap %r4.b0, %r1.h1, %r2.b2, %r3;", ""),
    ("A", "vmad.u32.u32.u32.po.sat.shr7 %r4, %r1.b1, %r2, %r3;", ""),
    ("A", "vmad.s32.s32.s32 %r4, -%r1.b0, %r2.h1, %r3;", ""),
    ("A", "vmad.s32.s32.s32 %r4, -%r1, -%r2, -%r3;", ""),
    ("A", "vsub2.s32.s32.s32.sat %r4.h0, %r1.h10, %r2.h32, %r1;", ""),
    ("A", "vmin4.s32.u32.u32.add %r4.b20, %r1.b0000, %r2.b2222, %r1;", ""),
    ("A", "vset4.u32.u32.ne.add %r4.b31, %r1, %r2, %r3;", ""),
    ("A", "vadd.u32.u32.u32 %r4, %r1, %r2, %r3;", ""),
    ("A", "vadd.u32.u32.u32.add %r4, %r1, %r2, 9;", ""),
    ("A", "vadd.u32.u32.u32.sat.sat %r4, %r1, %r2;", ""),
    ("A", "vadd.u32.u32.u32 %b1, %b2, %b3;", ""),
    ("R", "vadd2.u32.u32.u32.sat.add %r4, %r1, %r2, %r3;", ".sat cannot be used with the secondary accumulate"),
    ("R", "vset4.u32.u32.ne.max %r4, %r1, %r2, %r3;", "unknown modifier '.max' for 'vset4'"),
    ("R", "vmad.u32.u32.u32.po %r4, -%r1, %r2, %r3;", "negation cannot be used with .po"),
    ("R", "vmad.s32.s32.s32 %r4, -%r1, %r2, -%r3;", "limited to a or b (the product), or c"),
    ("R", "vmad.u32.u32.u32.shr7.shr15 %r4, %r1, %r2, %r3;", "at most one of .shr7 and .shr15"),
    ("R", "vmad.u32.u32.u32 %r4.b0, %r1, %r2, %r3;", "'.b0' is not a selector 'vmad' takes there"),
    ("R", "vmad.u32.u32.u32 %r4, %r1, %r2, %r3.b0;", "operand c takes no selector"),
    ("R", "vadd4.u32.u32.u32 %r4.b01, %r1, %r2, %r3;", "'.b01' is not a selector 'vadd4' takes there"),
    ("R", "vadd4.u32.u32.u32 %r4, %r1.b8765, %r2, %r3;", "'.b8765' is not a selector"),
    ("R", "vadd4.u32.u32.u32 %r4, %r1.h10, %r2, %r3;", "'.h10' is not a selector"),
    ("R", "vadd2.u32.u32.u32 %r4, %r1.h1, %r2, %r3;", "'.h1' is not a selector"),
    ("R", "vadd2.u32.u32.u32 %r4.h01, %r1, %r2, %r3;", "'.h01' is not a selector"),
    ("R", "vadd.u32.u32.u32 %r4, %r1.h10, %r2;", "'.h10' is not a selector"),
    ("R", "vadd.u32.u32.u32.add %r4.b0, %r1, %r2, %r3;", "needs four operands and no secondary operation"),
    ("R", "vadd.u32.u32.u32 %r4.b0, %r1, %r2;", "needs four operands and no secondary operation"),
    ("R", "vadd.u32.u32.u32.add %r4, %r1, %r2;", "a secondary operation needs the operand c"),
    ("R", "vadd.u32.u32 %r4, %r1, %r2;", "takes 3 types"),
    ("R", "vadd.u32.u32.u32.min.max %r4, %r1, %r2, %r3;", "at most one secondary operation"),
    ("R", "vadd.u32.u32.u32.add.add %r4, %r1, %r2, %r3;", "at most one secondary operation"),
    ("R", "vshl.u32.u32.s32 %r4, %r1, %r2;", "(.btype) must be .u32"),
    ("R", "vshl.u32.u32.u32 %r4, %r1, %r2;", "exactly one of .clamp and .wrap"),
    ("R", "vset.u32.u32.u32.lt %r4, %r1, %r2;", "takes 2 types"),
    ("R", "vset.u32.u32.lt.lt %r4, %r1, %r2;", "exactly one comparison"),
    ("R", "vset.u32.u32.lt.sat %r4, %r1, %r2;", "unknown modifier '.sat' for 'vset'"),
    ("R", "vadd2.u32.u32.u32 %r4, %r1, 7, %r3;", "'vadd2' takes registers only here"),
    ("R", "vadd.u32.u32.u32 %rd1, %r1, %r2;", "is a .u64 register; video instructions take 32-bit integer registers"),
    ("R", "vadd.u32.u32.u32 %r1, %f2, %r3;", "is a .f32 register"),
    ("R", "vadd.u32.u32.u32 %r4, %tid.x, %r3;", "video instructions take 32-bit registers"),
    ("R", "vadd.u32.u32.u32 %r4, -%r1, %r2;", "negation is for vmad's sources only"),
    ("R", "vadd.u32.u32.u32 _, %r1, %r2;", "video instructions take 32-bit registers"),
    ("R", "add.u32 %r4, %r1.b0, %r2;", "a video selector, which only video instructions take"),
    ("R", "add.u32 %r4, -%r1, %r2;", "operand negation is for vmad only"),
]

_REGS = """\
    .reg .b32 %r<10>;
    .reg .b32 %b<4>;
    .reg .f32 %f<4>;
    .reg .u64 %rd<4>;
"""


def _module(statement: str) -> str:
    return kernel("k()", f"    {statement}\n    ret;", regs=_REGS, target="sm_90")


@pytest.mark.parametrize("verdict,statement,message", FORMS, ids=[f[1] for f in FORMS])
def test_front_end_accepts_what_ptxas_accepts(verdict, statement, message):
    if verdict == "A":
        parse_ptx(_module(statement))
        return
    with pytest.raises(PTXError) as err:
        parse_ptx(_module(statement))
    text = str(err.value)
    assert message in text and re.search(r":11:(5|\d\d): error", text), text  # file:line:col


@requires("ptxas")
def test_ptxas_verdicts(tmp_path):
    """The verdicts of FORMS are ptxas's (and CASES' statements all assemble)."""
    from helpers import ptxas

    for verdict, statement, _ in FORMS:
        f = tmp_path / "f.ptx"
        f.write_text(_module(statement))
        assert (ptxas(f, "sm_90").returncode == 0) == (verdict == "A"), statement
    f = tmp_path / "cases.ptx"
    f.write_text(_kernel(sorted({c[0] for c in CASES})))
    p = ptxas(f, "sm_90")
    assert p.returncode == 0, p.stderr


def test_selectors_print_back_and_survive_ssa():
    from xdsl.context import Context

    from hypa.passes.out_of_ssa import PTXOutOfSSA
    from hypa.passes.ssa import PTXToSSA
    from hypa.ptxdialect.printer import module_to_ptx as print_ptx

    src = _kernel(sorted({c[0] for c in CASES}))
    module = parse_ptx(src)
    text = print_ptx(module)
    for s in ("vmad.s32.s32.s32 %d, -%in_a, %in_b, %in_c;", "vsub4.s32.s32.s32.add %d.b20, %in_a, %in_b, %in_c;",
              "vmax4.u32.u32.u32 %d, %in_a.b0123, %in_b.b4567, %in_c;",
              "vshr.u32.u32.u32.clamp %d.b1, %in_a.h1, %in_b.b0, %in_c;"):
        assert s in text, s
    assert parse_ptx(text).is_structurally_equivalent(module)
    PTXToSSA().apply(Context(), module)
    PTXOutOfSSA().apply(Context(), module)
    assert "vmad.s32.s32.s32 %d, -%in_a, %in_b, %in_c;" in print_ptx(module)


# -- slice mode: a video result that decides a branch -------------------------------------------

BRANCHY = kernel("k(.param .u64 out)", """
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0x01020304;
    mov.u32 %r9, 0;
    vset4.u32.u32.lt.add %r3, %r1.b3210, %r2.b7654, %r9;
    vabsdiff2.u32.u32.u32.add %r4.h0, %r1, %r2.h32, %r3;
    setp.ge.u32 %p1, %r4, 6;
    @%p1 bra $L_big;
    add.u32 %r5, %r4, 100;
    add.u32 %r5, %r5, 100;
$L_big:
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd1, %rd1, %rd2;
    st.global.u32 [%rd1], %r4;
    ret;
""", regs="    .reg .pred %p<2>;\n    .reg .b32 %r<10>;\n    .reg .b64 %rd<4>;\n", target="sm_90")


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_video_result_decides_a_branch(mode):
    # thread t (0..7): the bytes of t (3 to 0) are (0, 0, 0, t) and of %r2 (1, 2, 3, 4):
    # vset4 counts 0<1, 0<2, 0<3 and t<4 -> %r3 = 3 + (t<4).  vabsdiff2 with the mask .h0
    # adds element 0 only, |t - 0x0304| = 772 - t: %r4 = 775 - t + (t<4) >= 6, so every
    # thread branches over the two adds: 12 instructions
    out = np.zeros(8, dtype=np.uint32)
    res = emulate(BRANCHY, ["out"], {"out": out}, block=8, mode=mode, in_place=True, exact_predicates=True)
    if mode == "full":
        t = np.arange(8)
        np.testing.assert_array_equal(out, 775 - t + (t < 4))
    m = res.metrics
    assert m["inst_executed"] == 12 and m["thread_inst_executed"] == 96
    assert m["branch"] == 1 and m["divergent_branch"] == 0
