"""Single-instruction probes for differential tests of the emulator against a GPU.

``probe_specs()`` lists instruction variants (opcode, modifiers, types);
``probe_inputs(spec, n)`` builds their inputs deterministically (edge cases
first -- 0, -0, denormals, inf, NaN, INT_MIN, shift counts past the width ...
-- then random values), so a recording only stores the GPU's outputs and the
CI side regenerates the inputs and checks their digest.  Each probe runs as
``hypa.runtime.emulator.probe.instruction_kernel`` on the GPU (``harness.py probes``)
and in the emulator's full mode (``tests/unit/test_ground_truth.py``).

``tolerance`` is ``None`` for bit-exact instructions; for ``.approx`` ones it
is ``(kind, bound)`` with kind ``"ulp"``, ``"rel"`` or ``"abs"``: twice the
error the PTX ISA allows each implementation, since both sides approximate.

Pure numpy; importable without hypa (the harness imports it before hypa).
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

import numpy as np

PROBE_SEED = 20251126
DEFAULT_N = 2048


@dataclass(frozen=True)
class ProbeSpec:
    instruction: str
    sources: tuple  # PTX types, or ("imm", text)
    results: tuple
    result_operand: str = "plain"
    guard: bool = False
    tolerance: tuple | None = None  # None: bit-exact; ("ulp"|"rel"|"abs", bound)
    domain: tuple | None = None  # (low, high) for the random part of float inputs
    target: str = "sm_90"
    version: str = "8.5"
    label: str = ""  # disambiguates probes of one instruction
    # the operand list as a template over the registers (results, then sources) where they are
    # not written plainly: ``"{0}.b2, -{1}.h0, {2}, {3}"`` (video selectors, vmad's negations)
    operands: str = ""

    @property
    def id(self) -> str:
        src = ",".join(s if isinstance(s, str) else f"imm:{s[1]}" for s in self.sources)
        s = f"{'@p ' if self.guard else ''}{self.instruction} ({src})"
        if self.operands:
            s += " " + self.operands.format(*"dabcefgh")
        return s + (f" [{self.label}]" if self.label else "")

    def as_dict(self) -> dict:
        return {
            "id": self.id, "instruction": self.instruction, "sources": [list(s) if isinstance(s, tuple) else s for s in self.sources],
            "results": list(self.results), "result_operand": self.result_operand, "guard": self.guard,
            "tolerance": list(self.tolerance) if self.tolerance else None, "domain": list(self.domain) if self.domain else None,
            "target": self.target, "version": self.version, "label": self.label, "operands": self.operands,
        }


def _s(instruction: str, sources, results, **kw) -> ProbeSpec:
    return ProbeSpec(instruction, tuple(sources), tuple(results), **kw)


def probe_specs() -> list[ProbeSpec]:
    out: list[ProbeSpec] = []
    add = out.append
    # -- integer arithmetic --------------------------------------------------
    for t in (".s16", ".u16", ".s32", ".u32", ".s64", ".u64"):
        add(_s(f"add{t}", [t, t], [t]))
        add(_s(f"sub{t}", [t, t], [t]))
        add(_s(f"mul.lo{t}", [t, t], [t]))
        add(_s(f"mul.hi{t}", [t, t], [t]))
        add(_s(f"min{t}", [t, t], [t]))
        add(_s(f"max{t}", [t, t], [t]))
        add(_s(f"div{t}", [t, t], [t]))
        add(_s(f"rem{t}", [t, t], [t]))
        add(_s(f"mad.lo{t}", [t, t, t], [t]))
    for t, w in ((".s16", ".s32"), (".u16", ".u32"), (".s32", ".s64"), (".u32", ".u64")):
        add(_s(f"mul.wide{t}", [t, t], [w]))
        add(_s(f"mad.wide{t}", [t, t, w], [w]))
    add(_s("add.sat.s32", [".s32", ".s32"], [".s32"]))
    add(_s("sub.sat.s32", [".s32", ".s32"], [".s32"]))
    add(_s("mad.hi.s32", [".s32"] * 3, [".s32"]))
    add(_s("mad.hi.sat.s32", [".s32"] * 3, [".s32"]))
    add(_s("mad.hi.u64", [".u64"] * 3, [".u64"]))
    for t in (".s32", ".u32"):
        add(_s(f"mul24.lo{t}", [t, t], [t]))
        add(_s(f"mul24.hi{t}", [t, t], [t]))
        add(_s(f"mad24.lo{t}", [t, t, t], [t]))
        add(_s(f"sad{t}", [t, t, t], [t]))
    for t in (".s16", ".s32", ".s64"):
        add(_s(f"abs{t}", [t], [t]))
        add(_s(f"neg{t}", [t], [t]))
    add(_s("min.relu.s32", [".s32", ".s32"], [".s32"]))
    add(_s("max.relu.s32", [".s32", ".s32"], [".s32"]))
    # -- bits ----------------------------------------------------------------------
    for t in (".b32", ".b64"):
        add(_s(f"popc{t}", [t], [".u32"]))
        add(_s(f"clz{t}", [t], [".u32"]))
        add(_s(f"brev{t}", [t], [t]))
        add(_s(f"and{t}", [t, t], [t]))
        add(_s(f"or{t}", [t, t], [t]))
        add(_s(f"xor{t}", [t, t], [t]))
        add(_s(f"not{t}", [t], [t]))
        add(_s(f"shl{t}", [t, ".u32"], [t]))
        add(_s(f"bfi{t}", [t, t, ".u32", ".u32"], [t]))
    add(_s("cnot.b32", [".b32"], [".b32"]))
    add(_s("shl.b16", [".b16", ".u32"], [".b16"]))
    for t in (".u16", ".s16", ".u32", ".s32", ".u64", ".s64"):
        add(_s(f"shr{t}", [t, ".u32"], [t]))
    for t in (".u32", ".s32", ".u64", ".s64"):
        add(_s(f"bfind{t}", [t], [".u32"]))
        add(_s(f"bfe{t}", [t, ".u32", ".u32"], [t]))
    add(_s("bfind.shiftamt.u32", [".u32"], [".u32"]))
    add(_s("bfind.shiftamt.s32", [".s32"], [".u32"]))
    add(_s("prmt.b32", [".b32", ".b32", ".b32"], [".b32"]))
    for m in (".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"):
        add(_s(f"prmt.b32{m}", [".b32", ".b32", ".b32"], [".b32"]))
    for d in (".l", ".r"):
        for m in (".wrap", ".clamp"):
            add(_s(f"shf{d}{m}.b32", [".b32", ".b32", ".u32"], [".b32"]))
    for lut in ("0x96", "0xe8", "0x1e", "0xf0"):
        add(_s("lop3.b32", [".b32", ".b32", ".b32", ("imm", lut)], [".b32"], label=lut))
    add(_s("dp4a.u32.u32", [".b32", ".b32", ".u32"], [".u32"]))
    add(_s("dp4a.s32.s32", [".b32", ".b32", ".s32"], [".s32"]))
    add(_s("dp4a.s32.u32", [".b32", ".b32", ".s32"], [".s32"]))
    add(_s("dp2a.lo.s32.s32", [".b32", ".b32", ".s32"], [".s32"]))
    add(_s("dp2a.hi.u32.u32", [".b32", ".b32", ".u32"], [".u32"]))
    add(_s("bmsk.clamp.b32", [".b32", ".b32"], [".b32"]))
    add(_s("bmsk.wrap.b32", [".b32", ".b32"], [".b32"]))
    add(_s("szext.clamp.s32", [".b32", ".u32"], [".b32"]))
    add(_s("szext.wrap.u32", [".b32", ".u32"], [".b32"]))
    add(_s("fns.b32", [".b32", ".u32", ".s32"], [".b32"]))
    # -- comparisons and selection -------------------------------------------------
    for c in (".eq", ".ne", ".lt", ".le", ".gt", ".ge"):
        add(_s(f"setp{c}.s32", [".s32", ".s32"], [".pred"]))
        add(_s(f"setp{c}.s64", [".s64", ".s64"], [".pred"]))
    for c in (".lo", ".ls", ".hi", ".hs"):
        add(_s(f"setp{c}.u32", [".u32", ".u32"], [".pred"]))
        add(_s(f"setp{c}.u64", [".u64", ".u64"], [".pred"]))
    for c in (".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".equ", ".neu", ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan"):
        add(_s(f"setp{c}.f32", [".f32", ".f32"], [".pred"]))
        add(_s(f"setp{c}.f64", [".f64", ".f64"], [".pred"]))
    add(_s("setp.lt.and.s32", [".s32", ".s32", ".pred"], [".pred"]))
    add(_s("setp.lt.or.f32", [".f32", ".f32", ".pred"], [".pred"]))
    add(_s("setp.lt.s32", [".s32", ".s32"], [".pred", ".pred"], result_operand="pair", label="pair"))
    add(_s("setp.gtu.f32", [".f32", ".f32"], [".pred", ".pred"], result_operand="pair", label="pair"))
    for t in (".b32", ".b64", ".f32", ".f64"):
        add(_s(f"selp{t}", [t, t, ".pred"], [t]))
    add(_s("set.lt.u32.s32", [".s32", ".s32"], [".u32"]))
    add(_s("set.gtu.f32.f32", [".f32", ".f32"], [".f32"]))
    add(_s("set.eq.s32.f64", [".f64", ".f64"], [".s32"]))
    add(_s("slct.s32.s32", [".s32", ".s32", ".s32"], [".s32"]))
    add(_s("slct.b32.f32", [".b32", ".b32", ".f32"], [".b32"]))
    add(_s("slct.ftz.f32.f32", [".f32", ".f32", ".f32"], [".f32"]))
    for t in (".f32", ".f64"):
        for c in (".finite", ".infinite", ".number", ".notanumber", ".normal", ".subnormal"):
            add(_s(f"testp{c}{t}", [t], [".pred"]))
        add(_s(f"copysign{t}", [t, t], [t]))
    # guarded writes
    add(_s("add.s32", [".s32", ".s32"], [".s32"], guard=True))
    add(_s("fma.rn.f32", [".f32", ".f32", ".f32"], [".f32"], guard=True))
    # -- conversions -------------------------------------------------------------------
    ints = (".u8", ".s8", ".u16", ".s16", ".u32", ".s32", ".u64", ".s64")
    for d in ints:
        for s in ints:
            if d == s:
                continue
            add(_s(f"cvt{d}{s}", [s], [d]))
    for d, s in ((".s8", ".s32"), (".u8", ".s32"), (".s16", ".s32"), (".u16", ".u32"), (".u32", ".s32"), (".s32", ".u32"),
                 (".s32", ".s64"), (".u32", ".s64"), (".u32", ".u64"), (".s64", ".u64"), (".u64", ".s64"), (".u8", ".s8")):
        add(_s(f"cvt.sat{d}{s}", [s], [d]))
    for r in (".rni", ".rzi", ".rmi", ".rpi"):
        for d in (".s8", ".u8", ".s16", ".u16", ".s32", ".u32", ".s64", ".u64"):
            add(_s(f"cvt{r}{d}.f32", [".f32"], [d]))
        for d in (".s32", ".u32", ".s64", ".u64"):
            add(_s(f"cvt{r}{d}.f64", [".f64"], [d]))
        add(_s(f"cvt{r}.f32.f32", [".f32"], [".f32"]))
        add(_s(f"cvt{r}.ftz.f32.f32", [".f32"], [".f32"]))
        add(_s(f"cvt{r}.f64.f64", [".f64"], [".f64"]))
        add(_s(f"cvt{r}.s32.f16", [".f16"], [".s32"]))
    for r in (".rn", ".rz", ".rm", ".rp"):
        for s in (".s32", ".u32", ".s64", ".u64", ".s16", ".u8"):
            add(_s(f"cvt{r}.f32{s}", [s], [".f32"]))
        for s in (".s64", ".u64"):
            add(_s(f"cvt{r}.f64{s}", [s], [".f64"]))
        add(_s(f"cvt{r}.f32.f64", [".f64"], [".f32"]))
        add(_s(f"cvt{r}.ftz.f32.f64", [".f64"], [".f32"]))
        add(_s(f"cvt{r}.f16.f32", [".f32"], [".f16"]))
        add(_s(f"cvt{r}.f16.f64", [".f64"], [".f16"]))
        add(_s(f"cvt{r}.f16.s32", [".s32"], [".f16"]))
        add(_s(f"cvt{r}.bf16.f32", [".f32"], [".bf16"]))
    add(_s("cvt.f64.f32", [".f32"], [".f64"]))
    add(_s("cvt.ftz.f64.f32", [".f32"], [".f64"]))
    add(_s("cvt.f32.f16", [".f16"], [".f32"]))
    add(_s("cvt.f64.f16", [".f16"], [".f64"]))
    add(_s("cvt.f32.bf16", [".bf16"], [".f32"]))
    add(_s("cvt.sat.f32.f32", [".f32"], [".f32"]))
    add(_s("cvt.rn.sat.f32.f64", [".f64"], [".f32"]))
    add(_s("cvt.rn.relu.f16.f32", [".f32"], [".f16"]))
    add(_s("cvt.rn.f16x2.f32", [".f32", ".f32"], [".f16x2"]))
    add(_s("cvt.rn.bf16x2.f32", [".f32", ".f32"], [".bf16x2"]))
    add(_s("cvt.rn.relu.bf16x2.f32", [".f32", ".f32"], [".bf16x2"]))
    add(_s("cvt.rna.tf32.f32", [".f32"], [".b32"]))
    add(_s("cvt.rn.satfinite.e4m3x2.f32", [".f32", ".f32"], [".b16"]))
    add(_s("cvt.rn.satfinite.e5m2x2.f32", [".f32", ".f32"], [".b16"]))
    add(_s("cvt.rn.f16x2.e4m3x2", [".b16"], [".f16x2"]))
    add(_s("cvt.rn.f16x2.e5m2x2", [".b16"], [".f16x2"]))
    # -- f32 / f64 arithmetic ------------------------------------------------------------
    for r in (".rn", ".rz", ".rm", ".rp"):
        for op in ("add", "sub", "mul"):
            add(_s(f"{op}{r}.f32", [".f32", ".f32"], [".f32"]))
            add(_s(f"{op}{r}.f64", [".f64", ".f64"], [".f64"]))
        add(_s(f"fma{r}.f32", [".f32"] * 3, [".f32"]))
        add(_s(f"fma{r}.f64", [".f64"] * 3, [".f64"]))
        add(_s(f"div{r}.f32", [".f32", ".f32"], [".f32"]))
        add(_s(f"div{r}.f64", [".f64", ".f64"], [".f64"]))
        add(_s(f"rcp{r}.f32", [".f32"], [".f32"]))
        add(_s(f"rcp{r}.f64", [".f64"], [".f64"]))
        add(_s(f"sqrt{r}.f32", [".f32"], [".f32"]))
        add(_s(f"sqrt{r}.f64", [".f64"], [".f64"]))
    for m in (".ftz", ".sat", ".ftz.sat"):
        add(_s(f"add.rn{m}.f32", [".f32", ".f32"], [".f32"]))
        add(_s(f"mul.rn{m}.f32", [".f32", ".f32"], [".f32"]))
        add(_s(f"fma.rn{m}.f32", [".f32"] * 3, [".f32"]))
    add(_s("add.f32", [".f32", ".f32"], [".f32"], label="no rounding modifier"))
    add(_s("mad.rn.f32", [".f32"] * 3, [".f32"]))
    add(_s("div.rn.ftz.f32", [".f32", ".f32"], [".f32"]))
    add(_s("sqrt.rn.ftz.f32", [".f32"], [".f32"]))
    add(_s("rcp.rn.ftz.f32", [".f32"], [".f32"]))
    for t in (".f32", ".f64"):
        add(_s(f"abs{t}", [t], [t]))
        add(_s(f"neg{t}", [t], [t]))
        add(_s(f"min{t}", [t, t], [t]))
        add(_s(f"max{t}", [t, t], [t]))
    for m in (".ftz", ".NaN", ".ftz.NaN", ".xorsign.abs"):
        add(_s(f"min{m}.f32", [".f32", ".f32"], [".f32"]))
        add(_s(f"max{m}.f32", [".f32", ".f32"], [".f32"]))
    add(_s("abs.ftz.f32", [".f32"], [".f32"]))
    add(_s("neg.ftz.f32", [".f32"], [".f32"]))
    # approximate functions (tolerance: twice the ISA's bound for one implementation)
    for z in ("", ".ftz"):
        # rcp, sqrt, rsqrt, ex2: bit-exact (the emulator has the H100's MUFU results: runtime/emulator/mufu.py)
        add(_s(f"rcp.approx{z}.f32", [".f32"], [".f32"]))
        add(_s(f"sqrt.approx{z}.f32", [".f32"], [".f32"]))
        add(_s(f"rsqrt.approx{z}.f32", [".f32"], [".f32"]))
        # the ISA states sin/cos.approx errors on [-100pi, 100pi]; random inputs stay within one period
        add(_s(f"sin.approx{z}.f32", [".f32"], [".f32"], tolerance=("abs", 2**-19), domain=(-6.3, 6.3)))
        add(_s(f"cos.approx{z}.f32", [".f32"], [".f32"], tolerance=("abs", 2**-19), domain=(-6.3, 6.3)))
        add(_s(f"ex2.approx{z}.f32", [".f32"], [".f32"], domain=(-130.0, 130.0)))
        # lg2.approx's error is absolute (2^-22.6 on the mantissa's log): near 1 a relative bound is meaningless
        add(_s(f"lg2.approx{z}.f32", [".f32"], [".f32"], tolerance=("absulp", 2**-21), domain=(0.0, 1000.0)))
        add(_s(f"div.approx{z}.f32", [".f32", ".f32"], [".f32"]))
        add(_s(f"div.full{z}.f32", [".f32", ".f32"], [".f32"]))
    add(_s("tanh.approx.f32", [".f32"], [".f32"], tolerance=("rel", 2**-10), domain=(-10.0, 10.0)))
    add(_s("rcp.approx.ftz.f64", [".f64"], [".f64"], tolerance=("rel", 2**-20)))
    add(_s("rsqrt.approx.f64", [".f64"], [".f64"], tolerance=("rel", 2**-20)))
    add(_s("rsqrt.approx.ftz.f64", [".f64"], [".f64"], tolerance=("rel", 2**-20)))
    add(_s("ex2.approx.f16", [".f16"], [".f16"], tolerance=("ulp", 2), domain=(-20.0, 16.0)))
    add(_s("ex2.approx.f16x2", [".f16x2"], [".f16x2"], tolerance=("ulp", 2)))
    add(_s("tanh.approx.f16", [".f16"], [".f16"], tolerance=("ulp", 4)))
    add(_s("tanh.approx.bf16", [".bf16"], [".bf16"], tolerance=("ulp", 4)))
    # -- half precision -----------------------------------------------------------------------
    for t in (".f16", ".f16x2", ".bf16", ".bf16x2"):
        for op in ("add", "sub", "mul"):
            add(_s(f"{op}.rn{t}", [t, t], [t]))
        add(_s(f"fma.rn{t}", [t, t, t], [t]))
        add(_s(f"min{t}", [t, t], [t]))
        add(_s(f"max{t}", [t, t], [t]))
        add(_s(f"min.NaN{t}", [t, t], [t]))
        add(_s(f"neg{t}", [t], [t]))
        add(_s(f"abs{t}", [t], [t]))
        add(_s(f"fma.rn.relu{t}", [t, t, t], [t]))
    for t in (".f16", ".f16x2"):
        add(_s(f"add.rn.ftz.sat{t}", [t, t], [t]))
        add(_s(f"fma.rn.sat{t}", [t, t, t], [t]))
        add(_s(f"add{t}", [t, t], [t], label="no rounding modifier"))
    for c in (".eq", ".lt", ".geu", ".nan"):
        add(_s(f"setp{c}.f16", [".f16", ".f16"], [".pred"]))
    add(_s("setp.lt.f16x2", [".f16x2", ".f16x2"], [".pred", ".pred"], result_operand="pair", label="pair"))
    add(_s("set.lt.f16x2.f16x2", [".f16x2", ".f16x2"], [".f16x2"]))
    out += video_probe_specs()
    return out


def video_probe_specs() -> list[ProbeSpec]:
    """The video instructions (``vadd`` ... ``vset4``): every entry with its types, .sat, the
    secondary operations, merges into c, SIMD masks, byte/half-word selectors and vmad's
    negations, .po and scaling.  All their ids start with the opcode: ``^v[a-z]+[24]?\\.``
    selects them (``harness.py probes --probe-only``)."""
    out: list[ProbeSpec] = []
    w = ".b32"

    def add(instruction: str, operands: str = "", nsrc: int = 3) -> None:
        out.append(_s(instruction, [w] * nsrc, [w], operands=operands))

    plain3, plain4 = "{0}, {1}, {2}", "{0}, {1}, {2}, {3}"
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        for types in (".u32.u32.u32", ".s32.s32.s32", ".s32.u32.s32", ".u32.s32.u32"):
            add(f"{op}{types}", plain3, 2)
            add(f"{op}{types}.sat", plain3, 2)
        add(f"{op}.s32.s32.s32.sat", "{0}, {1}.b1, {2}.h1", 2)
        add(f"{op}.u32.s32.u32", "{0}, {1}.h0, {2}.b3", 2)
        for sec in (".add", ".min", ".max"):
            add(f"{op}.s32.s32.u32{sec}", plain4)
            add(f"{op}.u32.u32.s32.sat{sec}", "{0}, {1}.b2, {2}, {3}")
        for sel in (".b0", ".b1", ".b2", ".b3", ".h0", ".h1"):
            add(f"{op}.s32.s32.s32.sat", "{0}" + sel + ", {1}, {2}, {3}")
        add(f"{op}.u32.u32.u32", "{0}.b3, {1}.h1, {2}.b0, {3}")
        add(f"{op}.u32.u32.u32", plain4)  # c unused
    for op in ("vshl", "vshr"):
        for mode in (".clamp", ".wrap"):
            for types in (".u32.u32.u32", ".s32.s32.u32", ".u32.s32.u32", ".s32.u32.u32"):
                add(f"{op}{types}{mode}", plain3, 2)
            add(f"{op}.s32.s32.u32{mode}.sat", plain3, 2)
            add(f"{op}.u32.u32.u32{mode}.sat", plain3, 2)
            add(f"{op}.s32.s32.u32{mode}.add", plain4)
            add(f"{op}.u32.s32.u32{mode}.max", "{0}, {1}.h1, {2}.b0, {3}")
            add(f"{op}.s32.s32.u32{mode}.sat", "{0}.h1, {1}.b2, {2}, {3}")
            add(f"{op}.u32.u32.u32{mode}.sat", "{0}.b0, {1}, {2}.b1, {3}")
    for types in (".u32.u32.u32", ".s32.s32.s32", ".s32.u32.s32", ".u32.s32.u32", ".s32.u32.u32"):
        add(f"vmad{types}", plain4)
        add(f"vmad{types}.sat", plain4)
        add(f"vmad{types}.shr7", plain4)
        add(f"vmad{types}.shr15.sat", plain4)
        add(f"vmad{types}.po", plain4)
        add(f"vmad{types}", "{0}, -{1}, {2}, {3}")
        add(f"vmad{types}.sat", "{0}, {1}, -{2}, {3}")
        add(f"vmad{types}", "{0}, {1}, {2}, -{3}")
        add(f"vmad{types}.sat", "{0}, {1}, {2}, -{3}")
    add("vmad.u32.u32.u32", "{0}, -{1}, -{2}, {3}")
    add("vmad.s32.s32.u32.shr7", "{0}, -{1}.b1, {2}.h1, {3}")
    add("vmad.u32.u32.u32.po.sat.shr15", "{0}, {1}.h0, {2}.b3, {3}")
    add("vmad.s32.s32.s32.sat.shr15", "{0}, {1}.h1, {2}.h0, -{3}")
    # immediates: is vmad's "-5" the value -5 or a negated 5? (the emulator reads the value)
    out.append(_s("vmad.u32.u32.u32", [w, w, ("imm", "-5")], [w], operands=plain4))
    out.append(_s("vmad.s32.u32.u32", [w, ("imm", "-3"), w], [w], operands=plain4))
    out.append(_s("vadd.u32.u32.u32.sat.add", [w, ("imm", "-7"), w], [w], operands=plain4))
    for cmp in (".eq", ".ne", ".lt", ".le", ".gt", ".ge"):
        add(f"vset.s32.u32{cmp}", plain3, 2)
        add(f"vset.u32.s32{cmp}", "{0}, {1}.b1, {2}.h0", 2)
    add("vset.s32.s32.lt.add", plain4)
    add("vset.u32.u32.ne.min", plain4)
    add("vset.s32.s32.ge.max", plain4)
    add("vset.u32.s32.gt", "{0}.b2, {1}, {2}, {3}")
    add("vset.s32.s32.le", "{0}.h1, {1}.h0, {2}.h1, {3}")
    for n, masks, asel, bsel in (
            (2, (".h0", ".h1", ".h10"), (".h00", ".h13", ".h21", ".h32"), (".h10", ".h03", ".h22", ".h31")),
            (4, (".b0", ".b31", ".b320", ".b3210"), (".b7654", ".b0123", ".b5140", ".b3333"),
             (".b3210", ".b6275", ".b0000", ".b7531"))):
        for op in (f"vadd{n}", f"vsub{n}", f"vavrg{n}", f"vabsdiff{n}", f"vmin{n}", f"vmax{n}"):
            for types in (".u32.u32.u32", ".s32.s32.s32"):
                add(f"{op}{types}", plain4)
                add(f"{op}{types}.sat", plain4)
                add(f"{op}{types}.add", plain4)
            add(f"{op}.s32.u32.s32", plain4)
            add(f"{op}.u32.s32.u32.sat", plain4)
            for k, mask in enumerate(masks):
                add(f"{op}.s32.s32.u32.sat", "{0}" + mask + ", {1}" + asel[k] + ", {2}" + bsel[k] + ", {3}")
                add(f"{op}.u32.s32.s32.add", "{0}" + mask + ", {1}" + bsel[k] + ", {2}" + asel[k] + ", {3}")
        for cmp in (".eq", ".ne", ".lt", ".le", ".gt", ".ge"):
            add(f"vset{n}.s32.u32{cmp}", plain4)
            add(f"vset{n}.u32.s32{cmp}.add", plain4)
        for k, mask in enumerate(masks):
            add(f"vset{n}.s32.s32.lt", "{0}" + mask + ", {1}" + asel[k] + ", {2}" + bsel[k] + ", {3}")
            add(f"vset{n}.u32.u32.ne.add", "{0}" + mask + ", {1}" + bsel[k] + ", {2}" + asel[k] + ", {3}")
    return out


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

_DT = {
    ".u8": np.uint8, ".s8": np.int8, ".b8": np.uint8,
    ".u16": np.uint16, ".s16": np.int16, ".b16": np.uint16, ".f16": np.uint16, ".bf16": np.uint16,
    ".u32": np.uint32, ".s32": np.int32, ".b32": np.uint32, ".f32": np.float32,
    ".f16x2": np.uint32, ".bf16x2": np.uint32,
    ".u64": np.uint64, ".s64": np.int64, ".b64": np.uint64, ".f64": np.float64,
    ".pred": np.uint32,
}
_BITS = {np.uint8: 8, np.int8: 8, np.uint16: 16, np.int16: 16, np.uint32: 32, np.int32: 32, np.float32: 32,
         np.uint64: 64, np.int64: 64, np.float64: 64}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

F32_EDGES = [
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0x3FC00000, 0x40200000, 0xC0200000,
    0x40600000, 0x3EFFFFFF, 0x3F7FFFFF, 0x00000001, 0x007FFFFF, 0x80000001, 0x807FFFFF, 0x00800000,
    0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
    0x7FC12345, 0x4B000000, 0x4B000001, 0x4B800001, 0x4F000000, 0xCF000000, 0xCF000001, 0x4F800000,
    0x5F000000, 0xDF000000, 0x5F800000, 0x40490FDB, 0x42C80000, 0x477FE000, 0x477FF000, 0x33800000,
]
F64_EDGES = [
    0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x3FE0000000000000,
    0x3FF8000000000000, 0x4004000000000000, 0xC004000000000000, 0x3FDFFFFFFFFFFFFF, 0x0000000000000001,
    0x000FFFFFFFFFFFFF, 0x8000000000000001, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
    0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
    0x7FF8000000012345, 0x41E0000000000000, 0xC1E0000000000000, 0x41DFFFFFFFC00000, 0x41F0000000000000,
    0x43E0000000000000, 0xC3E0000000000000, 0x43F0000000000000, 0x4330000000000001, 0x400921FB54442D18,
    0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x36A0000000000000, 0x3690000000000000, 0x380FFFFFC0000000,
]
F16_EDGES = [
    0x0000, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x3E00, 0x4100, 0xC100, 0x0001, 0x03FF, 0x8001, 0x0400,
    0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7E55, 0x3BFF, 0x6800, 0x5640, 0x1400,
]
BF16_EDGES = [
    0x0000, 0x8000, 0x3F80, 0xBF80, 0x3F00, 0x3FC0, 0x4020, 0xC020, 0x0001, 0x007F, 0x8001, 0x0080,
    0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0x7FD5, 0x3F7F, 0x4B00, 0x4F00, 0xCF00,
]


def _int_edges(bits: int) -> list[int]:
    m = (1 << bits) - 1
    vals = [0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, bits - 1, bits, bits + 1,
            -1, -2, -7, -128, 1 << (bits - 1), (1 << (bits - 1)) - 1, (1 << (bits - 1)) + 1, m - 1,
            0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0x0F0F0F0F0F0F0F0F, 0x123456789ABCDEF0, 0x8000000080000000,
            0x00FF00FF00FF00FF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000]
    out = []
    for v in vals:
        u = v & m
        if u not in out:
            out.append(u)
    return out


def _edges(ptx_type: str) -> list[int]:
    """Edge cases as unsigned bit patterns of the type's width."""
    if ptx_type == ".f32":
        return F32_EDGES
    if ptx_type == ".f64":
        return F64_EDGES
    if ptx_type == ".f16":
        return F16_EDGES
    if ptx_type == ".bf16":
        return BF16_EDGES
    if ptx_type in (".f16x2", ".bf16x2"):
        e = F16_EDGES if ptx_type == ".f16x2" else BF16_EDGES
        return [(a << 16) | b for a, b in zip(e, e[3:] + e[:3])] + [(b << 16) | a for a, b in zip(e, e[7:] + e[:7])]
    if ptx_type == ".pred":
        return [0, 1]
    bits = _BITS[_DT[ptx_type]]
    return _int_edges(bits)


def _random(ptx_type: str, n: int, rng: np.random.Generator, domain) -> np.ndarray:
    """n random values as unsigned bit patterns."""
    dt = _DT[ptx_type]
    bits = 1 if ptx_type == ".pred" else _BITS[dt]
    if ptx_type == ".pred":
        return rng.integers(0, 2, n, dtype=np.uint64)
    u = _UINT[bits]
    raw = rng.integers(0, 1 << 63, n, dtype=np.uint64) ^ (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63))
    raw = (raw & np.uint64((1 << bits) - 1)).astype(u)
    k = n // 3
    if ptx_type in (".f32", ".f64"):
        ft = np.float32 if ptx_type == ".f32" else np.float64
        lo, hi = domain if domain else (-100.0, 100.0)
        uni = rng.uniform(lo, hi, n).astype(ft).view(u)
        halves = (rng.integers(-(1 << 24), 1 << 24, n) / 2).astype(ft).view(u)
        out = raw.copy()
        if domain:
            out[:] = uni
            out[: n // 8] = raw[: n // 8]
        else:
            out[k : 2 * k] = uni[k : 2 * k]
            out[2 * k :] = halves[2 * k :]
        return out.astype(np.uint64)
    if ptx_type in (".f16", ".bf16", ".f16x2", ".bf16x2"):
        if domain and ptx_type == ".f16":
            lo, hi = domain
            uni = rng.uniform(lo, hi, n).astype(np.float16).view(np.uint16)
            raw[k:] = uni[k:]
        return raw.astype(np.uint64)
    small = rng.integers(0, 70, n).astype(np.uint64)
    mid = (rng.integers(-1000, 1000, n).astype(np.int64).view(np.uint64)) & np.uint64((1 << bits) - 1)
    out = raw.astype(np.uint64)
    out[k : k + k // 2] = small[k : k + k // 2]
    out[k + k // 2 : 2 * k] = mid[k + k // 2 : 2 * k]
    return out


def probe_inputs(spec: ProbeSpec, n: int = DEFAULT_N, seed: int = PROBE_SEED) -> list[np.ndarray]:
    """One array per non-immediate source (the guard first, with ``guard``), typed
    as ``hypa.runtime.emulator.probe.DTYPES`` expects.  Deterministic in (spec, n, seed)."""
    rng = np.random.default_rng([seed, zlib.crc32(spec.id.encode())])
    types = [s for s in spec.sources if isinstance(s, str)]
    if spec.guard:
        types = [".pred", *types]
    edges = [_edges(t) for t in types]
    # the first half: a mixed-radix walk over the sources' edge cases (every pair of
    # the first two sources' edges when they fit), the rest random
    n_edge = n // 2
    cols = []
    for j, (t, e) in enumerate(zip(types, edges)):
        stride = 1
        for k in range(j):
            stride *= len(edges[k])
        idx = (np.arange(n_edge) // stride) % len(e)
        if j >= 2:  # later sources vary fast too, so every edge appears
            idx = (np.arange(n_edge) * (j + 1) + j) % len(e)
        first = np.array(e, dtype=np.uint64)[idx]
        rest = _random(t, n - n_edge, rng, spec.domain)
        bits = np.concatenate([first, rest.astype(np.uint64)])
        dt = _DT[t]
        if t == ".pred":
            cols.append(bits.astype(np.uint32))
        else:
            w = _BITS[dt]
            cols.append(bits.astype(_UINT[w]).view(dt))
    return cols


def inputs_digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def result_dtype(ptx_type: str):
    return _DT[ptx_type]


__all__ = ["ProbeSpec", "probe_specs", "video_probe_specs", "probe_inputs", "inputs_digest", "result_dtype", "DEFAULT_N", "PROBE_SEED"]


# ---------------------------------------------------------------------------
# Several probes in one kernel (the emulator's side: one compile for many probes)
# ---------------------------------------------------------------------------

_REG = {1: "%p", 16: "%h", 32: "%r", 64: "%rd"}
_DECL = {1: ".pred", 16: ".b16", 32: ".b32", 64: ".b64"}


def _reg_bits(t: str) -> int:
    if t == ".pred":
        return 1
    w = _BITS[_DT[t]]
    return 16 if w <= 16 else w


def _mem(t: str) -> tuple[str, int]:
    """(ld/st type, element bytes) of a source or result array."""
    if t == ".pred":
        return ".u32", 4
    w = _BITS[_DT[t]]
    return {8: ".u8", 16: ".b16", 32: ".b32", 64: ".b64"}[w], w // 8


def grouped_kernel(specs: list[ProbeSpec], name: str = "probes", target: str = "sm_90", version: str = "8.5") -> str:
    """PTX of one kernel applying every probe of ``specs`` to element ``i`` of its
    arrays.  Parameters, in order: per probe its input arrays (the guard first)
    then its output arrays (all ``.u64`` pointers), then ``.u32 n``."""
    counter = {1: 0, 16: 0, 32: 0, 64: 0}

    def reg(bits: int) -> str:
        counter[bits] += 1
        return f"{_REG[bits]}{counter[bits]}"

    params: list[str] = []
    body: list[str] = []
    nreg, ctaid, ntid, tid, gid = reg(32), reg(32), reg(32), reg(32), reg(32)
    oob, gid64 = reg(1), reg(64)
    body += [f"ld.param.u32 {nreg}, [{name}_n];", f"mov.u32 {ctaid}, %ctaid.x;", f"mov.u32 {ntid}, %ntid.x;",
             f"mov.u32 {tid}, %tid.x;", f"mad.lo.s32 {gid}, {ctaid}, {ntid}, {tid};",
             f"setp.ge.u32 {oob}, {gid}, {nreg};", f"@{oob} bra $L_end;", f"cvt.u64.u32 {gid64}, {gid};"]

    def address(param: str, esize: int) -> str:
        p, o, a = reg(64), reg(64), reg(64)
        body.extend([f"ld.param.u64 {p}, [{param}];", f"cvta.to.global.u64 {p}, {p};",
                     f"mul.lo.u64 {o}, {gid64}, {esize};", f"add.s64 {a}, {p}, {o};"])
        return a

    for i, s in enumerate(specs):
        srcs = list(s.sources)
        if s.guard:
            srcs = [".pred", *srcs]
        operands: list[str] = []
        guard_reg = None
        for k, t in enumerate(srcs):
            if not isinstance(t, str):
                operands.append(t[1])
                continue
            pname = f"{name}_{i}_in{k}"
            params.append(f".param .u64 {pname}")
            mt, esize = _mem(t)
            a = address(pname, esize)
            if t == ".pred":
                v, pr = reg(32), reg(1)
                body += [f"ld.global.u32 {v}, [{a}];", f"setp.ne.u32 {pr}, {v}, 0;"]
                if s.guard and k == 0:
                    guard_reg = pr
                else:
                    operands.append(pr)
            else:
                r = reg(_reg_bits(t))
                body.append(f"ld.global{mt} {r}, [{a}];")
                operands.append(r)
        dsts = [reg(_reg_bits(t)) for t in s.results]
        if s.guard:
            for d, t in zip(dsts, s.results):
                body.append(f"setp.ne.u32 {d}, 0, 0;" if t == ".pred" else f"mov.b{_reg_bits(t)} {d}, 0;")
        dtext = "|".join(dsts) if s.result_operand == "pair" else (
            "{" + ", ".join(dsts) + "}" if s.result_operand == "vector" else ", ".join(dsts))
        if s.operands:
            stmt = f"{s.instruction} " + s.operands.format(*dsts, *operands)
        else:
            stmt = f"{s.instruction} {dtext}" + ("".join(", " + o for o in operands))
        body.append((f"@{guard_reg} " if guard_reg else "") + stmt + ";")
        for k, (d, t) in enumerate(zip(dsts, s.results)):
            pname = f"{name}_{i}_out{k}"
            params.append(f".param .u64 {pname}")
            mt, esize = _mem(t)
            a = address(pname, esize)
            if t == ".pred":
                v = reg(32)
                body += [f"selp.u32 {v}, 1, 0, {d};", f"st.global.u32 [{a}], {v};"]
            else:
                body.append(f"st.global{mt} [{a}], {d};")
    params.append(f".param .u32 {name}_n")
    decls = [f".reg {_DECL[b]} {_REG[b]}<{counter[b] + 1}>;" for b in (1, 16, 32, 64)]
    return (f".version {version}\n.target {target}\n.address_size 64\n\n.visible .entry {name}(\n\t"
            + ",\n\t".join(params) + "\n)\n{\n\t" + "\n\t".join(decls + body) + "\n$L_end:\n\tret;\n}\n")
