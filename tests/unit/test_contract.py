"""FMA contraction as ptxas does it (passes/contract.py): which add/sub the GPU fuses with a
mul, and the values hypa then computes.

The expected fusions were read from ``ptxas -arch=sm_90`` (CUDA 13) SASS of each case below
(``FFMA``/``DFMA``/``HFMA2`` where fused, ``FMUL`` + ``FADD`` where not):

    ptxas -arch=sm_90 case.ptx -o case.cubin && nvdisasm -c case.cubin | grep -E "FMUL|FADD|FFMA|DFMA|HFMA2"

``test_rule_matches_ptxas`` repeats that comparison where ``ptxas`` and ``nvdisasm`` are
installed (the ``nvidia-cuda-nvdisasm`` wheel of the test extra provides the latter).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from helpers import emulate, which

from hypa.passes.contract import CONTRACT_ATTR, contractions
from hypa.ptxdialect import parse_ptx

HEAD = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n, .param .f32 g)
{
  .reg .f32 %f<40>;
  .reg .f64 %d<10>;
  .reg .b16 %h<10>;
  .reg .b32 %hh<10>;
  .reg .b64 %rd<4>;
  .reg .b32 %r<4>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.f32 %f1, [%rd2];
  ld.global.f32 %f2, [%rd2+4];
  ld.global.f32 %f3, [%rd2+8];
  ld.global.f32 %f4, [%rd2+12];
  ld.global.f64 %d1, [%rd2+64];
  ld.global.f64 %d2, [%rd2+72];
  ld.global.b16 %h1, [%rd2+100];
  ld.global.b16 %h2, [%rd2+102];
  ld.global.b32 %hh1, [%rd2+104];
  ld.global.b32 %hh2, [%rd2+108];
  setp.gt.s32 %p1, %r1, 5;
  ld.param.f32 %f10, [g];
"""

#: case -> (body, the destinations of the adds/subs ptxas fuses: from the SASS)
CASES = {
    "mul_add": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+16], %f6;", ["%f6"]),
    "mul_also_stored": ("mul.f32 %f5, %f1, %f3; add.f32 %f6, %f5, %f4; st.global.f32 [%rd2+20], %f6;"
                        "st.global.f32 [%rd2+24], %f5;", []),
    "mul_rn": ("mul.rn.f32 %f5, %f2, %f3; add.f32 %f6, %f5, %f4; st.global.f32 [%rd2+28], %f6;", []),
    "add_rn": ("mul.f32 %f5, %f2, %f4; add.rn.f32 %f6, %f5, %f1; st.global.f32 [%rd2+32], %f6;", []),
    "sub_of_product": ("mul.f32 %f5, %f3, %f4; sub.f32 %f6, %f1, %f5; st.global.f32 [%rd2+36], %f6;", ["%f6"]),
    "product_minus": ("mul.f32 %f5, %f1, %f4; sub.f32 %f6, %f5, %f2; st.global.f32 [%rd2+36], %f6;", ["%f6"]),
    "two_products": ("mul.f32 %f5, %f1, %f4; mul.f32 %f6, %f2, %f3; add.f32 %f7, %f5, %f6;"
                     "st.global.f32 [%rd2+40], %f7;", ["%f7"]),
    "one_mul_two_adds": ("mul.f32 %f5, %f4, %f4; add.f32 %f6, %f5, %f1; add.f32 %f7, %f5, %f2;"
                         "st.global.f32 [%rd2+44], %f6; st.global.f32 [%rd2+48], %f7;", ["%f6", "%f7"]),
    "mul_ftz_add": ("mul.ftz.f32 %f5, %f1, %f1; add.f32 %f6, %f5, %f2; st.global.f32 [%rd2+52], %f6;", []),
    "mul_add_ftz": ("mul.f32 %f5, %f4, %f4; add.ftz.f32 %f6, %f5, %f2; st.global.f32 [%rd2+28], %f6;", []),
    "ftz_both": ("mul.ftz.f32 %f5, %f1, %f2; add.ftz.f32 %f6, %f5, %f3; st.global.f32 [%rd2+16], %f6;", ["%f6"]),
    "mul_sat": ("mul.sat.f32 %f5, %f2, %f2; add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+56], %f6;", []),
    "add_sat": ("mul.f32 %f5, %f2, %f2; add.sat.f32 %f6, %f5, %f4; st.global.f32 [%rd2+24], %f6;", ["%f6"]),
    "f64": ("mul.f64 %d3, %d1, %d2; add.f64 %d4, %d3, %d1; st.global.f64 [%rd2+80], %d4;", ["%d4"]),
    "mul_feeds_mul": ("mul.f32 %f5, %f3, %f4; add.f32 %f6, %f5, %f1; mul.f32 %f7, %f5, %f2;"
                      "st.global.f32 [%rd2+20], %f6; st.global.f32 [%rd2+24], %f7;", []),
    "square_twice": ("mul.f32 %f5, %f2, %f3; add.f32 %f6, %f5, %f5; st.global.f32 [%rd2+28], %f6;", []),
    "chain": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mul.f32 %f7, %f6, %f4; add.f32 %f8, %f7, %f1;"
              "st.global.f32 [%rd2+48], %f8;", ["%f6", "%f8"]),
    "guarded_add": ("mul.f32 %f5, %f1, %f2; @%p1 add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+16], %f6;", ["%f6"]),
    "guarded_mul": ("@%p1 mul.f32 %f5, %f3, %f4; add.f32 %f6, %f5, %f1; st.global.f32 [%rd2+20], %f6;", []),
    "f16": ("mul.f16 %h3, %h1, %h2; add.f16 %h4, %h3, %h1; st.global.b16 [%rd2+112], %h4;", ["%h4"]),
    "f16x2": ("mul.f16x2 %hh3, %hh1, %hh2; add.f16x2 %hh4, %hh3, %hh1; st.global.b32 [%rd2+116], %hh4;", ["%hh4"]),
    "bf16": ("mul.bf16 %h3, %h1, %h2; add.bf16 %h4, %h3, %h1; st.global.b16 [%rd2+112], %h4;", ["%h4"]),
    "other_block": ("mul.f32 %f5, %f2, %f4; @%p1 bra L1; add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+40], %f6;"
                    "L1:", []),
    # a product of a register and a kernel parameter or an immediate: ptxas sinks it into the
    # block that uses it (the parameter stays in the constant bank: no register more is live)
    "other_block_param": ("mul.f32 %f5, %f2, %f10; @%p1 bra L1; add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+40], %f6;"
                          "L1:", ["%f6"]),
    "other_block_imm": ("mul.f32 %f5, %f2, 0f40400000; @%p1 bra L1; sub.f32 %f6, %f3, %f5;"
                        "st.global.f32 [%rd2+40], %f6; L1:", ["%f6"]),
    "other_block_param_stored": ("mul.f32 %f5, %f2, %f10; @%p1 bra L1; add.f32 %f6, %f5, %f3;"
                                 "st.global.f32 [%rd2+40], %f6; L1: st.global.f32 [%rd2+44], %f5;", []),
    "two_blocks_param": ("mul.f32 %f5, %f1, %f10; add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+16], %f6;"
                         "@%p1 bra L1; add.f32 %f7, %f5, %f4; st.global.f32 [%rd2+20], %f7; L1:", ["%f6", "%f7"]),
    "same_and_other_block": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; st.global.f32 [%rd2+16], %f6;"
                             "@%p1 bra L1; add.f32 %f7, %f5, %f4; st.global.f32 [%rd2+20], %f7; L1:", []),
}


def _ptx(body: str) -> str:
    lines = []
    for part in re.split(r"(?<=;)|(?<=:)", body):
        part = part.strip()
        if part:
            lines.append(part if part.endswith(":") else "  " + part)
    return HEAD + "\n".join(lines) + "\n  ret;\n}\n"


def fused(ptx: str) -> list[str]:
    """Destinations of the adds/subs passes/contract.py fuses (kernel in SSA form)."""
    from xdsl.context import Context

    from hypa.passes.ssa import PTXToSSA
    from hypa.ptxdialect.dialect import FuncOp

    module = parse_ptx(ptx)
    PTXToSSA(verify=False).apply(Context(), module)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return sorted(op.operands_ast[0] if isinstance(op.operands_ast[0], str) else str(op.operands_ast[0][1])
                  for op in contractions(func))


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_gives_ptxas_fusions(case: str) -> None:
    body, expected = CASES[case]
    got = fused(_ptx(body))
    assert len(got) == len(expected), (case, got, expected)
    for dst in expected:
        assert any(dst in g for g in got), (case, got, expected)


def _nvdisasm() -> str | None:
    return which("nvdisasm")


@pytest.mark.skipif(not shutil.which("ptxas") or not _nvdisasm(), reason="needs ptxas and nvdisasm")
@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_matches_ptxas(case: str, tmp_path) -> None:
    """Fused multiply-adds in ptxas's SASS of each case = the adds the rule fuses."""
    body, expected = CASES[case]
    src = tmp_path / "case.ptx"
    src.write_text(_ptx(body))
    subprocess.run(["ptxas", "-arch=sm_90", str(src), "-o", str(tmp_path / "case.cubin")], check=True)
    sass = subprocess.run([_nvdisasm(), "-c", str(tmp_path / "case.cubin")], check=True,
                          capture_output=True, text=True).stdout
    fmas = len(re.findall(r"\b(FFMA|DFMA|HFMA2)\b", sass))
    assert fmas == len(expected), (case, sass)


#: a mul before a loop, the sub using it inside (Parboil cp: ``gridspacing * x`` before the atom
#: loop): ptxas sinks it into the loop and fuses it when one operand is a kernel parameter (SASS
#: ``FFMA R, R, UR, -R`` in the unrolled body, no ``FMUL``), not when both are registers
LOOP = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n, .param .f32 g)
{
  .reg .f32 %f<20>;
  .reg .b64 %rd<8>;
  .reg .b32 %r<8>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  cvta.to.global.u64 %rd2, %rd1;
  FACTOR
  mov.u32 %r2, %tid.x;
  cvt.rn.f32.u32 %f2, %r2;
  mul.f32 %f3, %f2, %f1;
  mov.u32 %r3, 0;
  mov.f32 %f9, 0f00000000;
L1:
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f4, [%rd4];
  sub.f32 %f5, %f3, %f4;
  add.f32 %f9, %f9, %f5;
  add.s32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra L1;
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f9;
  ret;
}
"""
LOOP_FACTORS = {"param": ("ld.param.f32 %f1, [g];", ["%f5"]), "register": ("ld.global.f32 %f1, [%rd2+4];", [])}


@pytest.mark.parametrize("factor", sorted(LOOP_FACTORS))
def test_a_product_by_a_parameter_fuses_into_a_loop(factor: str, tmp_path) -> None:
    text, expected = LOOP_FACTORS[factor]
    ptx = LOOP.replace("FACTOR", text)
    got = fused(ptx)
    assert len(got) == len(expected) and all(any(d in g for g in got) for d in expected), got
    nvdisasm = _nvdisasm()
    if not shutil.which("ptxas") or not nvdisasm:
        pytest.skip("needs ptxas and nvdisasm")
    (tmp_path / "loop.ptx").write_text(ptx)
    subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "loop.ptx"), "-o", str(tmp_path / "loop.cubin")], check=True)
    sass = subprocess.run([nvdisasm, "-c", str(tmp_path / "loop.cubin")], check=True, capture_output=True, text=True).stdout
    assert ("FMUL" in sass) == (not expected), sass
    assert ("FFMA" in sass) == bool(expected), sass


def test_a_sunk_product_computes_fused(tmp_path) -> None:
    """The loop kernel emulated: each trip's sub rounds once (fused) with the parameter
    factor, so the sums differ from computing the product first (``--no-fmad``)."""
    ptx = LOOP.replace("FACTOR", "ld.param.f32 %f1, [g];")
    n = 32  # one warp: every lane has read every a[i] before any stores its sum into a[t]
    a = (np.arange(n, dtype=np.float32) * np.float32(0.37)).astype(np.float32)
    outs = {fmad: emulate(ptx, ["a", n, 0.1], {"a": a}, block=n, mode="full", fmad=fmad).buffers["a"]
            for fmad in (True, False)}
    assert not np.array_equal(outs[True], outs[False])
    # thread t: sum over i of fma(t, 0.1f, -a[i]) (each trip rounds once), in float32
    t, g = np.arange(n, dtype=np.float64), np.float64(np.float32(0.1))
    want = np.zeros(n, np.float32)
    for i in range(n):
        want = (want + (t * g - np.float64(a[i])).astype(np.float32)).astype(np.float32)
    assert np.array_equal(outs[True], want)


FUSED = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 q)
{
  .reg .f32 %f<20>;
  .reg .f64 %d<10>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd3, [q];
  cvta.to.global.u64 %rd2, %rd1;
  cvta.to.global.u64 %rd4, %rd3;
  ld.global.f32 %f1, [%rd2];
  ld.global.f32 %f2, [%rd2+4];
  ld.global.f32 %f3, [%rd2+8];
  mul.f32 %f4, %f1, %f2;
  add.f32 %f5, %f4, %f3;
  st.global.f32 [%rd2+12], %f5;
  mul.f32 %f6, %f1, %f2;
  sub.f32 %f7, %f6, %f3;
  st.global.f32 [%rd2+16], %f7;
  mul.f32 %f8, %f1, %f2;
  neg.f32 %f9, %f3;
  sub.f32 %f10, %f9, %f8;
  st.global.f32 [%rd2+20], %f10;
  mul.f32 %f11, %f1, %f2;
  add.f32 %f12, %f11, %f3;
  st.global.f32 [%rd2+24], %f12;
  st.global.f32 [%rd2+28], %f11;
  ld.global.f64 %d1, [%rd4];
  ld.global.f64 %d2, [%rd4+8];
  ld.global.f64 %d3, [%rd4+16];
  mul.f64 %d4, %d1, %d2;
  add.f64 %d5, %d4, %d3;
  st.global.f64 [%rd4+24], %d5;
  ret;
}
"""


@pytest.mark.parametrize("fmad", [True, False])
def test_fused_values(fmad: bool) -> None:
    """a = 1 + 2**-12: a*a = 1 + 2**-11 + 2**-24 exactly, which rounds (a tie, to even) to
    1 + 2**-11 in f32; with c = -(1 + 2**-11) the fused a*a + c is 2**-24 and the unfused 0.
    The same in f64 with a = 1 + 2**-30 (2**-60)."""
    a = np.float32(1 + 2**-12)
    c = -np.float32(1 + 2**-11)
    p = np.array([a, a, c, 0, 0, 0, 0, 0], np.float32)
    da = 1 + 2**-30
    q = np.array([da, da, -(1 + 2**-29), 0], np.float64)
    r = emulate(FUSED, ["p", "q"], {"p": p, "q": q}, block=1, mode="full", fmad=fmad)
    out, dout = r.buffers["p"], r.buffers["q"]
    tiny = 2.0**-24 if fmad else 0.0
    assert out[3] == np.float32(tiny)                          # a*a + c
    assert out[4] == np.float32(2 + 2**-10)                    # a*a - c: 2**-24 is below half an ulp of 2
    assert out[5] == np.float32(-tiny)                         # -c - a*a
    assert out[6] == 0.0 and out[7] == np.float32(a * a)       # the mul is also stored: never fused
    assert dout[3] == (2.0**-60 if fmad else 0.0)


def test_the_pass_marks_in_hypa_opt_pipelines() -> None:
    from xdsl.context import Context

    from hypa.passes.contract import ContractFMA
    from hypa.passes.ssa import PTXToSSA

    module = parse_ptx(FUSED)
    PTXToSSA(verify=False).apply(Context(), module)
    ContractFMA().apply(Context(), module)
    marks = [op.attributes[CONTRACT_ATTR].value.data for op in module.walk() if CONTRACT_ATTR in op.attributes]
    assert marks == [1, 1, 2, 1]


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_program_prints_what_the_h100_prints(tmp_path) -> None:
    """tests/cuda_programs/isa/fma_contraction.cu (a Julia set, Horner polynomials, cross
    products, an f64 expression: nvcc leaves mul/sub pairs in cross3's PTX that ptxas fuses)
    under ``hypa run`` prints the H100's checksums bit for bit (recorded by
    benchmarks/gpu/isa_programs_native.sh)."""
    from helpers import ISA_PROGRAMS, gpu_recorded_run, nvcc, run_hypa

    exe = tmp_path / "fma_contraction"
    b = nvcc(ISA_PROGRAMS / "fma_contraction.cu", exe)
    assert b.returncode == 0, b.stderr
    gpu = gpu_recorded_run("fma_contraction")
    assert gpu is not None and gpu["rc"] == 0
    r = run_hypa("run", "--", str(exe), timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == gpu["stdout"]
    assert "cross3 checksum 424f881fa4bb386d" in r.stdout  # the H100's (2026-11-27)
    assert "racecheck" not in r.stderr  # racecheck's sample (on by default) finds no shared-memory hazard
    # nvcc's spelling turns contraction off: cross3's mul/sub pairs round twice, and differ
    off = run_hypa("run", "--fmad=false", "--", str(exe), timeout=600, cwd=str(tmp_path))
    assert off.returncode == 0, off.stderr
    assert "cross3 checksum adc7bec6455a6d3f" in off.stdout
    assert off.stdout.replace("adc7bec6455a6d3f", "424f881fa4bb386d") == gpu["stdout"]


ACROSS_TURN = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .f32 %f<10>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.f32 %f1, [%rd2];
  ld.global.f32 %f2, [%rd2+4];
  ld.global.f32 %f3, [%rd2+8];
  add.f32 %f4, %f1, %f2;
  mul.f32 %f5, %f4, %f1;
  add.f32 %f6, %f5, %f3;
  st.global.f32 [%rd2+12], %f6;
  add.f32 %f7, %f3, %f5;
  st.global.f32 [%rd2+16], %f7;
  ret;
}
"""


@pytest.mark.parametrize("schedule", ["interleave", "warp"])
@pytest.mark.parametrize("fmad", [True, False])
def test_fused_add_after_a_turn(schedule: str, fmad: bool) -> None:
    """The second add fused with the mul comes after a store, where the interleaved schedule
    ends a warp's turn: it reads the mul's operands there, so %f4 (otherwise read only by the
    mul, before the store) must outlive the turn (it had no frame slot: "internal: value f4
    has no frame slot", Parboil's histo under ``hypa run``).  a = 1 + 2**-12, %f4 = a + 0,
    c = -(1 + 2**-11): fused, a*a + c is 2**-24, unfused 0 (test_fused_values)."""
    a = np.float32(1 + 2**-12)
    p = np.array([a, 0, -np.float32(1 + 2**-11), 7, 7], np.float32)
    r = emulate(ACROSS_TURN, ["p"], {"p": p}, block=64, mode="full", fmad=fmad, schedule=schedule)
    tiny = np.float32(2.0**-24 if fmad else 0.0)
    assert list(r.buffers["p"][3:]) == [tiny, tiny]
