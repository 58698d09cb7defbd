"""Integer, logic, bit-manipulation, comparison and selection semantics.

Every case below is an instruction (or a short chain such as ``add.cc`` ->
``addc``) applied to a few hundred inputs, edge cases included (0, 1, -1,
INT_MIN, INT_MAX, UINT_MAX, shift counts and bit-field positions past the
width, carries that ripple through a whole chain).  The emulator's output
(full mode) is compared bit for bit with a reference computed here in plain
Python from the PTX ISA's definition of the instruction -- never from the
emulator's code.  Where the ISA leaves a result unspecified (integer division
by zero, ``fns`` with a base past bit 31, ...) the reference follows what an
H100/H200 returned; those cases are marked ``hw`` in ``HARDWARE_DEFINED``.

Cases sharing their inputs are compiled together into one kernel (a *group*),
so the whole file costs about twenty compilations; every case is still its
own test, named after the instruction.

Running this file as a script on a machine with CuPy and a GPU
(``python tests/unit/test_semantics_int.py --gpu``) runs the same kernels on
the GPU and checks the references against the hardware.
"""

from __future__ import annotations

import itertools
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

try:  # the GPU check (``--gpu``) runs where pytest may be missing
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

from helpers import DTYPE, PRED, WIDTH, ElementwiseKernel, InputGroup, emulate_elementwise, run_elementwise_on_gpu

# ---------------------------------------------------------------------------
# Bit-pattern helpers (values are Python ints holding unsigned bit patterns)
# ---------------------------------------------------------------------------


def M(bits: int) -> int:
    return (1 << bits) - 1


def sx(v: int, bits: int) -> int:
    """The two's-complement value of a ``bits``-wide pattern."""
    v &= M(bits)
    return v - (1 << bits) if v >> (bits - 1) else v


def val(v: int, bits: int, signed: bool) -> int:
    return sx(v, bits) if signed else v & M(bits)


def clamp(v: int, bits: int, signed: bool) -> int:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, M(bits))
    return min(max(v, lo), hi) & M(bits)


def bit(v: int, i: int) -> int:
    return (v >> i) & 1


def popcount(v: int) -> int:
    return bin(v).count("1")


def trunc_div(a: int, b: int) -> int:
    """C division: the quotient rounded toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trunc_rem(a: int, b: int) -> int:
    return a - b * trunc_div(a, b)


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_of(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & M(32)))[0]


def lanes(v: int, width: int, n: int) -> list[int]:
    return [(v >> (width * i)) & M(width) for i in range(n)]


def pack(parts: Sequence[int], width: int) -> int:
    out = 0
    for i, p in enumerate(parts):
        out |= (p & M(width)) << (width * i)
    return out


# ---------------------------------------------------------------------------
# Cases and groups
# ---------------------------------------------------------------------------


@dataclass
class Case:
    """One instruction (or chain) under test.

    ``body``: PTX statements; ``{name}`` is an input register of the group,
    ``{d0}``, ``{d1}``... the results (stored), ``{t0}``... scratch registers
    of the type given in ``temps``.  ``ref(x)`` gets one element's inputs as
    attributes and returns the result bit pattern (a tuple for several).
    ``hw``: also assembled by ``ptxas`` (False for PTX newer than 9.0).
    """

    id: str
    body: str
    outs: list[str]
    ref: Callable
    temps: list[str] = field(default_factory=list)
    hw: bool = True


@dataclass
class Group(InputGroup):
    def add(self, id: str, body: str, outs: str | list[str], ref: Callable, **kw) -> None:
        outs = [outs] if isinstance(outs, str) else outs
        self.cases.append(Case(f"{id}", body, outs, ref, **kw))

    def expected(self, case: Case) -> list[np.ndarray]:
        res: list[list[int]] = [[] for _ in case.outs]
        for row in self.rows():
            r = case.ref(SimpleNamespace(**row))
            r = r if isinstance(r, tuple) else (r,)
            assert len(r) == len(case.outs), case.id
            for k, (v, t) in enumerate(zip(r, case.outs)):
                res[k].append(int(v) & M(WIDTH[t]))
        return [np.array(col, dtype=DTYPE[t]) for col, t in zip(res, case.outs)]


def kernel_ptx(group: Group, cases: Sequence[Case] | None = None, name: str = "k") -> str:
    """One kernel: thread i loads element i of every input, runs every case,
    and stores element i of every result."""
    cases = group.cases if cases is None else cases
    k = ElementwiseKernel("8.5", "sm_90", name)
    regs = {iname: k.load(iname, t) for iname, (t, _vals) in group.inputs.items()}
    layout = output_layout(cases)
    slots: dict[str, list[str]] = {t: [] for t in layout}
    for ci, case in enumerate(cases):
        names = dict(regs)
        for j, t in enumerate(case.outs):
            names[f"d{j}"] = k.reg(f"%o{ci}_{j}", t)
        for j, t in enumerate(case.temps):
            names[f"t{j}"] = k.reg(f"%s{ci}_{j}", t)
        k.add(case.body.format(**names))
        for j, t in enumerate(case.outs):
            r = names[f"d{j}"]
            if t == PRED:
                w = k.reg(f"%ow{ci}_{j}", ".b32")
                k.add(f"selp.u32 {w}, 1, 0, {r}")
                r = w
            slots[t].append(r)
    # results: one buffer per type, thread i's results in row i, stored as vectors
    for t, (width, vlen) in layout.items():
        row = -(-len(slots[t]) // vlen) * vlen
        regs_t = slots[t] + [slots[t][-1]] * (row - len(slots[t]))
        addr = k.param(f"out{t[1:]}", row * width // 8)
        st = ".b32" if t == PRED else t
        for j in range(0, row, vlen):
            k.add(f"st.global.v{vlen}{st} [{addr}+{j * width // 8}], {{{', '.join(regs_t[j:j + vlen])}}}")
    return k.ptx()


def output_layout(cases: Sequence[Case]) -> dict[str, tuple[int, int]]:
    """Result types in use -> (bits per element in memory, vector length of a store)."""
    used = [t for c in cases for t in c.outs]
    return {t: (32 if t == PRED else WIDTH[t], 2 if t == ".b64" else 4) for t in WIDTH if t in used}


def _buffers(group: Group, cases: Sequence[Case]):
    ins = [np.array(v, dtype=DTYPE[t]) for t, v in group.inputs.values()]
    outs = []
    for t, (_w, vlen) in output_layout(cases).items():
        k = sum(c.outs.count(t) for c in cases)
        outs.append(np.zeros((group.n, -(-k // vlen) * vlen), DTYPE[t]))
    return ins, outs


def run_emulator(group: Group, cases: Sequence[Case] | None = None) -> dict[str, list[np.ndarray]]:
    cases = group.cases if cases is None else cases
    ins, outs = _buffers(group, cases)
    got = emulate_elementwise(kernel_ptx(group, cases), ins + outs, group.n)[len(ins):]
    return _split(cases, [g.reshape(o.shape) for g, o in zip(got, outs)])


def run_cuda(group: Group, cases: Sequence[Case]) -> dict[str, list[np.ndarray]]:  # pragma: no cover
    ins, outs = _buffers(group, cases)
    return _split(cases, run_elementwise_on_gpu(kernel_ptx(group, cases), ins + outs, group.n)[len(ins):])


def _split(cases: Sequence[Case], bufs: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
    by_type = dict(zip(output_layout(cases), bufs))
    col = {t: 0 for t in by_type}
    out: dict[str, list[np.ndarray]] = {}
    for c in cases:
        out[c.id] = []
        for t in c.outs:
            out[c.id].append(by_type[t][:, col[t]])
            col[t] += 1
    return out


def mismatches(group: Group, case: Case, got: list[np.ndarray], limit: int = 8) -> list[str]:
    exp = group.expected(case)
    lines = []
    for k, (e, g) in enumerate(zip(exp, got)):
        bad = np.nonzero(e != g)[0]
        for i in bad[:limit]:
            ins = ", ".join(f"{n}={v[1][i]:#x}" for n, v in group.inputs.items())
            lines.append(f"{case.id} d{k}: {ins}: expected {int(e[i]):#x}, got {int(g[i]):#x}")
        if len(bad) > limit:
            lines.append(f"... {len(bad)} of {len(e)} elements differ in d{k}")
    return lines


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

RNG = np.random.default_rng(20261126)


def rand(bits: int, n: int) -> list[int]:
    return [int(x) for x in RNG.integers(0, 1 << bits, size=n, dtype=np.uint64 if bits == 64 else np.int64)]


def edges(bits: int) -> list[int]:
    m, h = M(bits), 1 << (bits - 1)
    vals = [0, 1, 2, 3, 7, 0x7F, 0x80, 0xFF, h - 1, h, h + 1, m, m - 1, m - 6,
            m // 3, (m // 3) * 2, 1 << (bits // 2), (1 << (bits // 2)) - 1]
    return sorted({v & m for v in vals})


def pairs(bits: int, extra: int = 160) -> tuple[list[int], list[int]]:
    e = edges(bits)
    a, b = zip(*itertools.product(e, e))
    return list(a) + rand(bits, extra), list(b) + rand(bits, extra)


def triples(bits: int, cbits: int | None = None, extra: int = 200) -> tuple[list[int], list[int], list[int]]:
    cbits = cbits or bits
    e = edges(bits)
    a, b = zip(*itertools.product(e, e))
    ce = edges(cbits)
    c = [ce[(i * 7) % len(ce)] for i in range(len(a))]
    return list(a) + rand(bits, extra), list(b) + rand(bits, extra), c + rand(cbits, extra)


def preds(n: int) -> list[int]:
    return [int(x) for x in RNG.integers(0, 2, size=n)]


# ---------------------------------------------------------------------------
# Hardware-defined results (the ISA leaves them unspecified)
# ---------------------------------------------------------------------------

#: what an H200 (driver 580, CUDA 13.0 JIT, sm_90) returned where the ISA does not
#: say, or where the hardware departs from the ISA's text; the references follow it
HARDWARE_DEFINED = {
    "div by 0": "all ones, for every type and whatever the dividend's sign",
    "rem by 0": "all ones, for every type",
    "div.s INT_MIN / -1": "INT_MIN (rem: 0), i.e. wrap-around",
    "carry flag": "a true carry: sub.cc/subc leave NOT borrow in CC.CF and subc computes "
                  "a + ~b + CF, so a chain that mixes add and sub sees the carry, not the borrow",
    "bfe/bfi .b64/.u64/.s64": "position and length are NOT reduced to 0..255 (the 32-bit "
                              "forms are): any value >= 64 acts as past the msb",
    "fns offset INT_MIN": "0, whatever the mask and base",
    "fns base > 31": "0xffffffff (the ISA says undefined)",
}


def ref_div(a: int, b: int, bits: int, signed: bool) -> int:
    x, y = val(a, bits, signed), val(b, bits, signed)
    if y == 0:
        return M(bits)
    return trunc_div(x, y) & M(bits)


def ref_rem(a: int, b: int, bits: int, signed: bool) -> int:
    x, y = val(a, bits, signed), val(b, bits, signed)
    if y == 0:
        return M(bits)
    return trunc_rem(x, y) & M(bits)


# ---------------------------------------------------------------------------
# The groups
# ---------------------------------------------------------------------------

SIGNS = ((".u", False), (".s", True))


def _arith(bits: int) -> Group:
    a, b = pairs(bits)
    t = f".b{bits}"
    g = Group(f"arith{bits}", {"a": (t, a), "b": (t, b)})
    for sfx, sg in SIGNS:
        ty = f"{sfx}{bits}"

        def v(x, sg=sg):
            return val(x, bits, sg)

        g.add(f"add{ty}", f"add{ty} {{d0}}, {{a}}, {{b}}", t, lambda x: x.a + x.b)
        g.add(f"sub{ty}", f"sub{ty} {{d0}}, {{a}}, {{b}}", t, lambda x: x.a - x.b)
        g.add(f"mul.lo{ty}", f"mul.lo{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, v=v: v(x.a) * v(x.b))
        g.add(f"mul.hi{ty}", f"mul.hi{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, v=v: (v(x.a) * v(x.b)) >> bits)
        if bits < 64:
            g.add(f"mul.wide{ty}", f"mul.wide{ty} {{d0}}, {{a}}, {{b}}", f".b{2 * bits}",
                  lambda x, v=v: v(x.a) * v(x.b))
        g.add(f"div{ty}", f"div{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, sg=sg: ref_div(x.a, x.b, bits, sg))
        g.add(f"rem{ty}", f"rem{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, sg=sg: ref_rem(x.a, x.b, bits, sg))
        g.add(f"min{ty}", f"min{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, v=v: min(v(x.a), v(x.b)))
        g.add(f"max{ty}", f"max{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, v=v: max(v(x.a), v(x.b)))
    s = f".s{bits}"
    g.add(f"abs{s}", f"abs{s} {{d0}}, {{a}}", t, lambda x: abs(sx(x.a, bits)))
    g.add(f"neg{s}", f"neg{s} {{d0}}, {{a}}", t, lambda x: -sx(x.a, bits))
    g.add(f"and{t}", f"and{t} {{d0}}, {{a}}, {{b}}", t, lambda x: x.a & x.b)
    g.add(f"or{t}", f"or{t} {{d0}}, {{a}}, {{b}}", t, lambda x: x.a | x.b)
    g.add(f"xor{t}", f"xor{t} {{d0}}, {{a}}, {{b}}", t, lambda x: x.a ^ x.b)
    g.add(f"not{t}", f"not{t} {{d0}}, {{a}}", t, lambda x: ~x.a)
    g.add(f"cnot{t}", f"cnot{t} {{d0}}, {{a}}", t, lambda x: 1 if x.a == 0 else 0)
    if bits >= 32:
        g.add(f"popc{t}", f"popc{t} {{d0}}, {{a}}", ".b32", lambda x: popcount(x.a))
        g.add(f"clz{t}", f"clz{t} {{d0}}, {{a}}", ".b32", lambda x: bits - x.a.bit_length())
        g.add(f"brev{t}", f"brev{t} {{d0}}, {{a}}", t,
              lambda x: int(format(x.a, f"0{bits}b")[::-1], 2))
        for sfx, sg in SIGNS:
            ty = f"{sfx}{bits}"

            def bfind(a, sg=sg, shiftamt=False):
                if sg and bit(a, bits - 1):
                    a = ~a & M(bits)
                if a == 0:
                    return M(32)
                d = a.bit_length() - 1
                return bits - 1 - d if shiftamt else d

            g.add(f"bfind{ty}", f"bfind{ty} {{d0}}, {{a}}", ".b32", lambda x, f=bfind: f(x.a))
            g.add(f"bfind.shiftamt{ty}", f"bfind.shiftamt{ty} {{d0}}, {{a}}", ".b32",
                  lambda x, f=bfind: f(x.a, shiftamt=True))
    if bits == 32:
        g.add("add.sat.s32", "add.sat.s32 {d0}, {a}, {b}", t, lambda x: clamp(sx(x.a, 32) + sx(x.b, 32), 32, True))
        g.add("sub.sat.s32", "sub.sat.s32 {d0}, {a}, {b}", t, lambda x: clamp(sx(x.a, 32) - sx(x.b, 32), 32, True))
        for op, fn in (("min", min), ("max", max)):
            g.add(f"{op}.relu.s32", f"{op}.relu.s32 {{d0}}, {{a}}, {{b}}", t,
                  lambda x, fn=fn: max(fn(sx(x.a, 32), sx(x.b, 32)), 0))
        for sfx, sg in SIGNS:
            ty = f"{sfx}32"

            def m24(a, b, sg=sg):
                return val(a & M(24), 24, sg) * val(b & M(24), 24, sg)

            g.add(f"mul24.lo{ty}", f"mul24.lo{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, f=m24: f(x.a, x.b))
            g.add(f"mul24.hi{ty}", f"mul24.hi{ty} {{d0}}, {{a}}, {{b}}", t, lambda x, f=m24: f(x.a, x.b) >> 16)
        _packed_cases(g)
    return g


def _simd(a: int, b: int | None, width: int, signed: bool, fn) -> int:
    n = 32 // width
    xs = [val(p, width, signed) for p in lanes(a, width, n)]
    if b is None:
        return pack([fn(p) for p in xs], width)
    ys = [val(p, width, signed) for p in lanes(b, width, n)]
    return pack([fn(p, q) for p, q in zip(xs, ys)], width)


def _packed_cases(g: Group) -> None:
    """.u16x2/.s16x2 (PTX 8.0) and .u8x4/.s8x4 (PTX 9.2: not assembled here)."""
    for width, hw in ((16, True), (8, False)):
        n = 32 // width
        for sfx, sg in SIGNS:
            ty = f"{sfx}{width}x{n}"
            ops = [("add", lambda p, q: p + q), ("min", min), ("max", max)]
            if width == 8:
                ops.append(("sub", lambda p, q: p - q))
            for op, fn in ops:
                g.add(f"{op}{ty}", f"{op}{ty} {{d0}}, {{a}}, {{b}}", ".b32",
                      lambda x, fn=fn, sg=sg, width=width: _simd(x.a, x.b, width, sg, fn), hw=hw)
            g.add(f"add.sat{ty}", f"add.sat{ty} {{d0}}, {{a}}, {{b}}", ".b32",
                  lambda x, sg=sg, width=width: _simd(x.a, x.b, width, sg, lambda p, q: clamp(p + q, width, sg)),
                  hw=False)
            if sg:
                for op, fn in (("min", min), ("max", max)):
                    g.add(f"{op}.relu{ty}", f"{op}.relu{ty} {{d0}}, {{a}}, {{b}}", ".b32",
                          lambda x, fn=fn, width=width: _simd(x.a, x.b, width, True, lambda p, q: max(fn(p, q), 0)),
                          hw=hw)
    g.add("neg.s8x4", "neg.s8x4 {d0}, {a}", ".b32", lambda x: _simd(x.a, None, 8, True, lambda p: -p), hw=False)


def _mad(bits: int) -> Group:
    a, b, c = triples(bits)
    t = f".b{bits}"
    inputs = {"a": (t, a), "b": (t, b), "c": (t, c)}
    if bits < 64:
        inputs["cw"] = (f".b{2 * bits}", triples(bits, 2 * bits)[2])
    g = Group(f"mad{bits}", inputs)
    for sfx, sg in SIGNS:
        ty = f"{sfx}{bits}"

        def v(x, sg=sg):
            return val(x, bits, sg)

        g.add(f"mad.lo{ty}", f"mad.lo{ty} {{d0}}, {{a}}, {{b}}, {{c}}", t, lambda x, v=v: v(x.a) * v(x.b) + x.c)
        g.add(f"mad.hi{ty}", f"mad.hi{ty} {{d0}}, {{a}}, {{b}}, {{c}}", t,
              lambda x, v=v: ((v(x.a) * v(x.b)) >> bits) + x.c)
        if bits < 64:
            g.add(f"mad.wide{ty}", f"mad.wide{ty} {{d0}}, {{a}}, {{b}}, {{cw}}", f".b{2 * bits}",
                  lambda x, v=v: v(x.a) * v(x.b) + x.cw)
        g.add(f"sad{ty}", f"sad{ty} {{d0}}, {{a}}, {{b}}, {{c}}", t,
              lambda x, v=v: x.c + (v(x.b) - v(x.a) if v(x.a) < v(x.b) else v(x.a) - v(x.b)))
    if bits == 32:
        g.add("mad.hi.sat.s32", "mad.hi.sat.s32 {d0}, {a}, {b}, {c}", t,
              lambda x: clamp(((sx(x.a, 32) * sx(x.b, 32)) >> 32) + sx(x.c, 32), 32, True))
        for sfx, sg in SIGNS:
            ty = f"{sfx}32"

            def m24(a, b, sg=sg):
                return val(a & M(24), 24, sg) * val(b & M(24), 24, sg)

            g.add(f"mad24.lo{ty}", f"mad24.lo{ty} {{d0}}, {{a}}, {{b}}, {{c}}", t, lambda x, f=m24: f(x.a, x.b) + x.c)
            g.add(f"mad24.hi{ty}", f"mad24.hi{ty} {{d0}}, {{a}}, {{b}}, {{c}}", t,
                  lambda x, f=m24: (f(x.a, x.b) >> 16) + x.c)
        g.add("mad24.hi.sat.s32", "mad24.hi.sat.s32 {d0}, {a}, {b}, {c}", t,
              lambda x: clamp(sx((val(x.a & M(24), 24, True) * val(x.b & M(24), 24, True)) >> 16, 32)
                              + sx(x.c, 32), 32, True))
        for ta, sa in SIGNS:
            for tb, sb in SIGNS:
                tys = f"{ta}32{tb}32"

                def dp4a(x, sa=sa, sb=sb):
                    va = [val(p, 8, sa) for p in lanes(x.a, 8, 4)]
                    vb = [val(p, 8, sb) for p in lanes(x.b, 8, 4)]
                    return x.c + sum(p * q for p, q in zip(va, vb))

                g.add(f"dp4a{tys}", f"dp4a{tys} {{d0}}, {{a}}, {{b}}, {{c}}", t, dp4a)
                for mode, sel in ((".lo", 0), (".hi", 2)):
                    def dp2a(x, sa=sa, sb=sb, sel=sel):
                        va = [val(p, 16, sa) for p in lanes(x.a, 16, 2)]
                        vb = [val(p, 8, sb) for p in lanes(x.b, 8, 4)]
                        return x.c + va[0] * vb[sel] + va[1] * vb[sel + 1]

                    g.add(f"dp2a{mode}{tys}", f"dp2a{mode}{tys} {{d0}}, {{a}}, {{b}}, {{c}}", t, dp2a)
    return g


def _carry(bits: int) -> Group:
    """Extended-precision chains: the carry flag must ripple through them."""
    m = M(bits)
    pool = [0, 1, 2, m, m - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1]
    n = 400
    pick = RNG.integers(0, len(pool) + 2, size=(6, n))
    rnd = [rand(bits, n) for _ in range(6)]
    cols = [[pool[p] if p < len(pool) else r for p, r in zip(pick[k], rnd[k])] for k in range(6)]
    t = f".b{bits}"
    g = Group(f"carry{bits}", {f"{s}{k}": (t, cols[3 * (s == 'b') + k]) for s in "ab" for k in range(3)}
              | {"p": (PRED, preds(n))})
    W = bits

    def num(x, s):
        return sum(getattr(x, f"{s}{k}") << (W * k) for k in range(3))

    def limbs(v, k=4):
        v &= M(W * k)
        return tuple((v >> (W * i)) & m for i in range(k))

    for sfx in (".u", ".s"):
        ty = f"{sfx}{bits}"
        g.add(f"add.cc{ty}>addc.cc>addc.cc>addc",
              f"add.cc{ty} {{d0}}, {{a0}}, {{b0}}; addc.cc{ty} {{d1}}, {{a1}}, {{b1}}; "
              f"addc.cc{ty} {{d2}}, {{a2}}, {{b2}}; addc{ty} {{d3}}, 0, 0", [t] * 4,
              lambda x: limbs(num(x, "a") + num(x, "b")))
        g.add(f"sub.cc{ty}>subc.cc>subc.cc>subc",
              f"sub.cc{ty} {{d0}}, {{a0}}, {{b0}}; subc.cc{ty} {{d1}}, {{a1}}, {{b1}}; "
              f"subc.cc{ty} {{d2}}, {{a2}}, {{b2}}; subc{ty} {{d3}}, 0, 0", [t] * 4,
              lambda x: limbs(num(x, "a") - num(x, "b")))
    u = f".u{bits}"
    g.add(f"add.cc{u}>addc (no carry out)", f"add.cc{u} {{d0}}, {{a0}}, {{b0}}; addc{u} {{d1}}, {{a1}}, {{b1}}",
          [t] * 2, lambda x: (x.a0 + x.b0, x.a1 + x.b1 + ((x.a0 + x.b0) >> W)))
    g.add(f"sub.cc{u}>subc (no borrow out)", f"sub.cc{u} {{d0}}, {{a0}}, {{b0}}; subc{u} {{d1}}, {{a1}}, {{b1}}",
          [t] * 2, lambda x: (x.a0 - x.b0, x.a1 - x.b1 - (1 if x.a0 < x.b0 else 0)))

    def mad_chain(x, sg):
        v = (lambda q: val(q, W, sg))
        p0 = v(x.a0) * v(x.b0)
        lo, hi = p0 & m, (p0 >> W) & m
        d0 = lo + x.a1
        c0 = d0 >> W
        d1 = hi + x.a2 + c0
        c1 = d1 >> W
        d2 = ((v(x.a1) * v(x.b1)) & m) + x.b2 + c1
        return d0, d1, d2

    for sfx, sg in SIGNS:
        ty = f"{sfx}{bits}"
        g.add(f"mad.lo.cc{ty}>madc.hi.cc>madc.lo",
              f"mad.lo.cc{ty} {{d0}}, {{a0}}, {{b0}}, {{a1}}; madc.hi.cc{ty} {{d1}}, {{a0}}, {{b0}}, {{a2}}; "
              f"madc.lo{ty} {{d2}}, {{a1}}, {{b1}}, {{b2}}", [t] * 3, lambda x, sg=sg: mad_chain(x, sg))

    def mad_hi_chain(x):
        hi = ((x.a0 * x.b0) >> W) & m
        d0 = hi + x.a1
        d1 = ((x.a2 * x.b2) >> W) + x.b1 + (d0 >> W)
        return d0, d1, d1 >> W

    g.add(f"mad.hi.cc{u}>madc.hi.cc>addc",
          f"mad.hi.cc{u} {{d0}}, {{a0}}, {{b0}}, {{a1}}; madc.hi.cc{u} {{d1}}, {{a2}}, {{b2}}, {{b1}}; "
          f"addc{u} {{d2}}, 0, 0", [t] * 3, mad_hi_chain)
    # a guarded add.cc whose guard is false leaves the flag of the previous one
    g.add(f"add.cc{u}>@p add.cc>addc",
          f"add.cc{u} {{d0}}, {{a0}}, {{b0}}; @{{p}} add.cc{u} {{t0}}, {{a1}}, {{b1}}; addc{u} {{d1}}, 0, 0",
          [t] * 2, lambda x: (x.a0 + x.b0, ((x.a1 + x.b1) if x.p else (x.a0 + x.b0)) >> W), temps=[t])
    # Mixed chains (hardware-defined): the flag is a true carry, so subtraction
    # a - b - borrow runs as a + ~b + CF and leaves CF = NOT borrow.
    g.add(f"add.cc{u}>subc", f"add.cc{u} {{d0}}, {{a0}}, {{b0}}; subc{u} {{d1}}, {{a1}}, {{b1}}", [t] * 2,
          lambda x: (x.a0 + x.b0, x.a1 + (~x.b1 & m) + ((x.a0 + x.b0) >> W)))
    g.add(f"sub.cc{u}>addc", f"sub.cc{u} {{d0}}, {{a0}}, {{b0}}; addc{u} {{d1}}, {{a1}}, {{b1}}", [t] * 2,
          lambda x: (x.a0 - x.b0, x.a1 + x.b1 + (1 if x.a0 >= x.b0 else 0)))
    g.add(f"sub.cc{u}>subc.cc>addc", f"sub.cc{u} {{d0}}, {{a0}}, {{b0}}; subc.cc{u} {{d1}}, {{a1}}, {{b1}}; "
          f"addc{u} {{d2}}, 0, 0", [t] * 3,
          lambda x: limbs(num(x, "a") - num(x, "b"), 2) + (0 if (x.a1 << W | x.a0) < (x.b1 << W | x.b0) else 1,))
    g.add(f"sub.cc{u}>madc.lo", f"sub.cc{u} {{d0}}, {{a0}}, {{b0}}; madc.lo{u} {{d1}}, {{a1}}, {{b1}}, {{a2}}",
          [t] * 2, lambda x: (x.a0 - x.b0, x.a1 * x.b1 + x.a2 + (1 if x.a0 >= x.b0 else 0)))
    return g


SHIFTS = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127, 128, 255, 256, 257,
          0x10000, 0x7FFFFFFF, 0x80000000, 0x80000010, 0xFFFFFFFF, 0xFFFFFFE0]


def _shift(bits: int) -> Group:
    ae = edges(bits) + rand(bits, 6)
    a, n = zip(*itertools.product(ae, SHIFTS))
    a, n = list(a) + rand(bits, 100), list(n) + [int(x) for x in RNG.integers(0, 2 * bits + 2, size=100)]
    t = f".b{bits}"
    inputs = {"a": (t, a), "n": (".b32", n)}
    if bits == 32:
        inputs["b"] = (t, rand(32, len(a)))
    g = Group(f"shift{bits}", inputs)
    g.add(f"shl.b{bits}", f"shl.b{bits} {{d0}}, {{a}}, {{n}}", t, lambda x: x.a << min(x.n, bits))
    for ty in (f".b{bits}", f".u{bits}"):
        g.add(f"shr{ty}", f"shr{ty} {{d0}}, {{a}}, {{n}}", t, lambda x: x.a >> min(x.n, bits))
    g.add(f"shr.s{bits}", f"shr.s{bits} {{d0}}, {{a}}, {{n}}", t, lambda x: sx(x.a, bits) >> min(x.n, bits))
    if bits == 32:
        for d in (".l", ".r"):
            for mode in (".clamp", ".wrap"):
                def shf(x, d=d, mode=mode):
                    k = min(x.n, 32) if mode == ".clamp" else x.n & 31
                    w = (x.b << 32) | x.a
                    return (w << k) >> 32 if d == ".l" else w >> k

                g.add(f"shf{d}{mode}.b32", f"shf{d}{mode}.b32 {{d0}}, {{a}}, {{b}}, {{n}}", t, shf)
    return g


POSITIONS = [0, 1, 2, 3, 5, 7, 8, 15, 16, 24, 30, 31, 32, 33, 40, 62, 63, 64, 65, 100, 127, 128,
             200, 254, 255, 256, 257, 0x1FF, 0x123, 0x80000001, 0xFFFFFFFF]


def _bitfield(bits: int) -> Group:
    p, ln = zip(*itertools.product(POSITIONS, POSITIONS))
    n = len(p)
    t = f".b{bits}"
    a = [(x if i % 3 else (M(bits) if i % 2 else 1 << (bits - 1))) for i, x in enumerate(rand(bits, n))]
    g = Group(f"bitfield{bits}", {"a": (t, a), "base": (t, rand(bits, n)), "p": (".b32", list(p)),
                                  "l": (".b32", list(ln))})
    msb = bits - 1
    # the ISA reduces position and length to 0..255; the 64-bit forms on hardware don't
    lim = 0xFF if bits == 32 else M(32)
    for sfx, sg in SIGNS:
        ty = f"{sfx}{bits}"

        def bfe(x, sg=sg):
            pos, ln = x.p & lim, x.l & lim
            sbit = 0 if (not sg or ln == 0) else bit(x.a, min(pos + ln - 1, msb))
            d = 0
            for i in range(bits):
                d |= (bit(x.a, pos + i) if (i < ln and pos + i <= msb) else sbit) << i
            return d

        g.add(f"bfe{ty}", f"bfe{ty} {{d0}}, {{a}}, {{p}}, {{l}}", t, bfe)

    def bfi(x):
        pos, ln = x.p & lim, x.l & lim
        f = x.base
        i = 0
        while i < min(ln, bits) and pos + i <= msb:
            f = (f & ~(1 << (pos + i))) | (bit(x.a, i) << (pos + i))
            i += 1
        return f

    g.add(f"bfi.b{bits}", f"bfi.b{bits} {{d0}}, {{a}}, {{base}}, {{p}}, {{l}}", t, bfi)
    if bits == 32:
        for mode in (".clamp", ".wrap"):
            for sfx, sg in SIGNS:
                def szext(x, mode=mode, sg=sg):
                    n = x.p
                    if mode == ".wrap":
                        n &= 31
                    if n == 0:
                        return 0
                    if n >= 32:
                        return x.a
                    return val(x.a & M(n), n, sg)

                g.add(f"szext{mode}{sfx}32", f"szext{mode}{sfx}32 {{d0}}, {{a}}, {{p}}", t, szext)

            def bmsk(x, mode=mode):
                pos, width = x.p, x.l
                if mode == ".wrap":
                    pos, width = pos & 31, width & 31
                elif pos >= 32:
                    return 0
                width = min(width, 32)
                return sum(1 << i for i in range(pos, min(pos + width, 32)))

            g.add(f"bmsk{mode}.b32", f"bmsk{mode}.b32 {{d0}}, {{p}}, {{l}}", t, bmsk)
    return g


def ref_fns(mask: int, base: int, offset: int) -> int:
    """The n-th set bit of ``mask`` counted from bit ``base`` (ISA pseudocode)."""
    if offset == 0x80000000:
        return 0  # hardware-defined (see HARDWARE_DEFINED)
    offset = sx(offset, 32)
    if offset == 0:
        return base if base < 32 and bit(mask, base) else M(32)
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if bit(mask, pos):
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return M(32)


def _fns() -> Group:
    masks = [0, M(32), 0xAAAAAAAA, 0x80000001, 1, 0x80000000, 0x00F000F0] + rand(32, 9)
    bases = list(range(32)) * 3 + [32, 33, 63, 64, 255, 256, 0x80000000, M(32)]  # > 31: hardware-defined
    offs = list(range(-34, 35)) + [0x7FFFFFFF, 0x80000000, 0x80000001]
    n = 900
    m = [masks[i % len(masks)] for i in range(n)]
    b = [bases[int(i)] for i in RNG.integers(0, len(bases), size=n)]
    o = [offs[int(i)] & M(32) for i in RNG.integers(0, len(offs), size=n)]
    g = Group("fns", {"mask": (".b32", m), "base": (".b32", b), "off": (".b32", o)})
    g.add("fns.b32", "fns.b32 {d0}, {mask}, {base}, {off}", ".b32", lambda x: ref_fns(x.mask, x.base, x.off))
    return g


#: byte indices (d.b0, d.b1, d.b2, d.b3) per selector c[1:0], from the ISA's prmt mode table
PRMT_MODES = {
    ".f4e": [(0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)],
    ".b4e": [(0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)],
    ".rc8": [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)],
    ".ecl": [(0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)],
    ".ecr": [(0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)],
    ".rc16": [(0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)],
}


def ref_prmt(a: int, b: int, c: int, mode: str | None) -> int:
    src = lanes((b << 32) | a, 8, 8)
    if mode is None:
        out = []
        for k in range(4):
            sel = (c >> (4 * k)) & 0xF
            byte = src[sel & 7]
            out.append(0xFF if (sel & 8 and byte & 0x80) else (0 if sel & 8 else byte))
        return pack(out, 8)
    return pack([src[i] for i in PRMT_MODES[mode][c & 3]], 8)


def _prmt() -> Group:
    n = 600
    a, b = rand(32, n), rand(32, n)
    a[:8] = [0x80FF7F01, 0x00000000, 0xFFFFFFFF, 0x7F80FF00, 0x01234567, 0x89ABCDEF, 0x80808080, 0x7F7F7F7F]
    c = rand(32, n)
    for i in range(256):  # every selector nibble in every position, with high bits set
        c[i] = ((i & 0xF) * 0x1111 ^ ((i >> 4) << 4)) | (0xABCD0000 if i % 2 else 0)
    g = Group("prmt", {"a": (".b32", a), "b": (".b32", b), "c": (".b32", c)})
    g.add("prmt.b32", "prmt.b32 {d0}, {a}, {b}, {c}", ".b32", lambda x: ref_prmt(x.a, x.b, x.c, None))
    for mode in PRMT_MODES:
        g.add(f"prmt.b32{mode}", f"prmt.b32{mode} {{d0}}, {{a}}, {{b}}, {{c}}", ".b32",
              lambda x, mode=mode: ref_prmt(x.a, x.b, x.c, mode))
    return g


def ref_lop3(a: int, b: int, c: int, lut: int) -> int:
    d = 0
    for i in range(32):
        d |= bit(lut, (bit(a, i) << 2) | (bit(b, i) << 1) | bit(c, i)) << i
    return d


#: truth tables run through the emulator (every one of the 256 runs on the GPU
#: check, and the lowering's algebraic normal form is checked for all 256 below)
LOP3_LUTS = sorted({0x00, 0xFF, 0xF0, 0xCC, 0xAA, 0x0F, 0x33, 0x55, 0x80, 0xFE, 0x96, 0x69, 0xE8, 0x17,
                    0xCA, 0xB8, 0xD8, 0xE2, 0x1A, 0x40, 0x3C, 0x5A, 0x66, 0x01, 0x7F, 0xC0, 0x88, 0xA0,
                    0xFC, 0xFA, 0xEE, 0x6A, 0x78, 0x1E, 0xF8, 0x2D, 0x3F, 0x9C, 0x71, 0x4B})


def _lop3(luts: Sequence[int] = LOP3_LUTS) -> Group:
    n = 160
    g = Group("lop3", {"a": (".b32", rand(32, n)), "b": (".b32", rand(32, n)), "c": (".b32", rand(32, n)),
                       "q": (PRED, preds(n))})
    g.inputs["a"][1][:4] = [0, M(32), 0, 0xF0F0F0F0]
    g.inputs["b"][1][:4] = [0, M(32), 0, 0xCCCCCCCC]
    g.inputs["c"][1][:4] = [0, M(32), 0, 0xAAAAAAAA]
    for lut in luts:
        g.add(f"lop3.b32 {lut:#04x}", f"lop3.b32 {{d0}}, {{a}}, {{b}}, {{c}}, {lut:#x}", ".b32",
              lambda x, lut=lut: ref_lop3(x.a, x.b, x.c, lut))
    for op in (".or", ".and"):
        for lut in (0x00, 0x80, 0xFE, 0x96, 0x3F, 0xFF):
            def lp(x, op=op, lut=lut):
                d = ref_lop3(x.a, x.b, x.c, lut)
                p = (d != 0) or x.q if op == ".or" else (d != 0) and x.q
                return d, int(p)

            g.add(f"lop3{op}.b32 d|p {lut:#04x}", f"lop3{op}.b32 {{d0}}|{{d1}}, {{a}}, {{b}}, {{c}}, {lut:#x}, {{q}}",
                  [".b32", PRED], lp)
        g.add(f"lop3{op}.b32 _|p 0x3f", f"lop3{op}.b32 _|{{d0}}, {{a}}, {{b}}, {{c}}, 0x3f, !{{q}}", PRED,
              lambda x, op=op: int(((ref_lop3(x.a, x.b, x.c, 0x3F) != 0) or not x.q) if op == ".or"
                                   else ((ref_lop3(x.a, x.b, x.c, 0x3F) != 0) and not x.q)))
    return g


CMP = {
    ".eq": (lambda p, q: p == q, None), ".ne": (lambda p, q: p != q, None),
    ".lt": (lambda p, q: p < q, "t"), ".le": (lambda p, q: p <= q, "t"),
    ".gt": (lambda p, q: p > q, "t"), ".ge": (lambda p, q: p >= q, "t"),
    ".lo": (lambda p, q: p < q, "u"), ".ls": (lambda p, q: p <= q, "u"),
    ".hi": (lambda p, q: p > q, "u"), ".hs": (lambda p, q: p >= q, "u"),
}
BOOL = {".and": lambda p, q: p and q, ".or": lambda p, q: p or q, ".xor": lambda p, q: p != q}


def ref_cmp(op: str, a: int, b: int, ty: str) -> bool:
    fn, kind = CMP[op]
    bits = int(ty[2:])
    signed = ty[1] == "s" and kind == "t"
    return fn(val(a, bits, signed), val(b, bits, signed))


def _compare(bits: int) -> Group:
    a, b = pairs(bits, extra=80)
    # plenty of equal operands
    for i in range(0, len(a), 5):
        b[i] = a[i]
    t = f".b{bits}"
    g = Group(f"compare{bits}", {"a": (t, a), "b": (t, b), "c": (PRED, preds(len(a)))})
    for sfx in (".u", ".s", ".b"):
        ty = f"{sfx}{bits}"
        for op in CMP:
            if sfx == ".b" and op not in (".eq", ".ne"):
                continue  # bit-size types compare for equality only (ptxas)
            if sfx == ".s" and CMP[op][1] == "u":
                continue  # ptxas: "Mismatch between instruction type and comparison qualifier"
            g.add(f"setp{op}{ty}", f"setp{op}{ty} {{d0}}, {{a}}, {{b}}", PRED,
                  lambda x, op=op, ty=ty: int(ref_cmp(op, x.a, x.b, ty)))
    s = f".s{bits}"
    u = f".u{bits}"
    for bop, fn in BOOL.items():
        for neg in ("", "!"):
            def pq(x, fn=fn, neg=neg, op=".lt", ty=s):
                t_ = ref_cmp(op, x.a, x.b, ty)
                c = (not x.c) if neg else bool(x.c)
                return int(fn(t_, c)), int(fn(not t_, c))

            g.add(f"setp.lt{bop}{s} p|q, {neg}c", f"setp.lt{bop}{s} {{d0}}|{{d1}}, {{a}}, {{b}}, {neg}{{c}}",
                  [PRED, PRED], pq)
        g.add(f"setp.hi{bop}{u} p, c", f"setp.hi{bop}{u} {{d0}}, {{a}}, {{b}}, {{c}}", PRED,
              lambda x, fn=fn: int(fn(ref_cmp(".hi", x.a, x.b, u), bool(x.c))))
    g.add(f"setp.ge{u} p|q", f"setp.ge{u} {{d0}}|{{d1}}, {{a}}, {{b}}", [PRED, PRED],
          lambda x: (int(ref_cmp(".ge", x.a, x.b, u)), int(not ref_cmp(".ge", x.a, x.b, u))))
    g.add(f"setp.eq{u} _|q", f"setp.eq{u} _|{{d0}}, {{a}}, {{b}}", PRED,
          lambda x: int(not ref_cmp(".eq", x.a, x.b, u)))
    for op in (".eq", ".lt", ".ge", ".lo", ".hs"):
        for dt in (".u32", ".s32", ".f32"):
            for st in ((u,) if CMP[op][1] == "u" else (s, u)):
                one = 0x3F800000 if dt == ".f32" else M(32)
                g.add(f"set{op}{dt}{st}", f"set{op}{dt}{st} {{d0}}, {{a}}, {{b}}", ".b32",
                      lambda x, op=op, st=st, one=one: one if ref_cmp(op, x.a, x.b, st) else 0)
    for bop, fn in BOOL.items():
        g.add(f"set.le{bop}.u32{s} !c", f"set.le{bop}.u32{s} {{d0}}, {{a}}, {{b}}, !{{c}}", ".b32",
              lambda x, fn=fn: M(32) if fn(ref_cmp(".le", x.a, x.b, s), not x.c) else 0)
        g.add(f"set.ne{bop}.f32{u} c", f"set.ne{bop}.f32{u} {{d0}}, {{a}}, {{b}}, {{c}}", ".b32",
              lambda x, fn=fn: 0x3F800000 if fn(ref_cmp(".ne", x.a, x.b, u), bool(x.c)) else 0)
    return g


FLOAT_CONDS = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), 1e-40, -1e-40, 1e-45, -1e-45,
               3.5, -2.25, 1.2e-38, -1.2e-38]


def _select() -> Group:
    n = 256
    fc = [f32_bits(v) for v in FLOAT_CONDS] + [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345]
    cf = [fc[i % len(fc)] for i in range(n)]
    ci = edges(32)
    cs = [ci[i % len(ci)] for i in range(n)]
    g = Group("select", {
        "a16": (".b16", rand(16, n)), "b16": (".b16", rand(16, n)),
        "a32": (".b32", rand(32, n)), "b32": (".b32", rand(32, n)),
        "a64": (".b64", rand(64, n)), "b64": (".b64", rand(64, n)),
        "p": (PRED, preds(n)), "q": (PRED, preds(n)), "cs": (".b32", cs), "cf": (".b32", cf),
    })
    for bits in (16, 32, 64):
        tys = [f".b{bits}", f".u{bits}", f".s{bits}"] + ([".f32"] if bits == 32 else [".f64"] if bits == 64 else [])
        t = f".b{bits}"
        for ty in tys:
            g.add(f"selp{ty}", f"selp{ty} {{d0}}, {{a{bits}}}, {{b{bits}}}, {{p}}", t,
                  lambda x, bits=bits: getattr(x, f"a{bits}") if x.p else getattr(x, f"b{bits}"))
            g.add(f"slct{ty}.s32", f"slct{ty}.s32 {{d0}}, {{a{bits}}}, {{b{bits}}}, {{cs}}", t,
                  lambda x, bits=bits: getattr(x, f"a{bits}") if sx(x.cs, 32) >= 0 else getattr(x, f"b{bits}"))
            for ftz in ("", ".ftz"):
                def slctf(x, bits=bits, ftz=ftz):
                    c = f32_of(x.cf)
                    if ftz and (x.cf & 0x7F800000) == 0:
                        c = 0.0  # subnormal -> (signed) zero, which is >= 0
                    return getattr(x, f"a{bits}") if c >= 0.0 else getattr(x, f"b{bits}")

                g.add(f"slct{ftz}{ty}.f32", f"slct{ftz}{ty}.f32 {{d0}}, {{a{bits}}}, {{b{bits}}}, {{cf}}", t, slctf)
    for op, fn in (("and", lambda p, q: p and q), ("or", lambda p, q: p or q), ("xor", lambda p, q: p != q)):
        g.add(f"{op}.pred", f"{op}.pred {{d0}}, {{p}}, {{q}}", PRED, lambda x, fn=fn: int(fn(bool(x.p), bool(x.q))))
        g.add(f"{op}.pred !q", f"{op}.pred {{d0}}, {{p}}, !{{q}}", PRED,
              lambda x, fn=fn: int(fn(bool(x.p), not x.q)))
    g.add("not.pred", "not.pred {d0}, {p}", PRED, lambda x: int(not x.p))
    return g


def build_groups() -> list[Group]:
    groups = []
    for bits in (16, 32, 64):
        groups += [_arith(bits), _mad(bits)]
    groups += [_carry(32), _carry(64)]
    groups += [_shift(16), _shift(32), _shift(64), _bitfield(32), _bitfield(64)]
    groups += [_fns(), _prmt(), _lop3(), _compare(16), _compare(32), _compare(64), _select()]
    return groups


GROUPS = build_groups()
GROUP_BY_NAME = {g.name: g for g in GROUPS}
CASES = [(g.name, c.id) for g in GROUPS for c in g.cases]
assert len(set(CASES)) == len(CASES), "duplicate case id"

# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------

if pytest is not None:

    @pytest.fixture(scope="module", autouse=True)
    def _private_cache(tmp_path_factory):
        """Compile into a fresh cache: a stale one could hold older semantics."""
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HYPA_CACHE_DIR", str(tmp_path_factory.mktemp("hypa-cache")))
            yield

    _RESULTS: dict[str, dict[str, list[np.ndarray]]] = {}

    def _results(group: str) -> dict[str, list[np.ndarray]]:
        if group not in _RESULTS:
            _RESULTS[group] = run_emulator(GROUP_BY_NAME[group])
        return _RESULTS[group]

    @pytest.mark.parametrize("group,case", CASES, ids=[f"{g}:{c}" for g, c in CASES])
    def test_instruction(group: str, case: str) -> None:
        g = GROUP_BY_NAME[group]
        c = next(c for c in g.cases if c.id == case)
        bad = mismatches(g, c, _results(group)[case])
        assert not bad, "\n".join(bad)

    # -- the single-instruction probe (what the GPU harness also builds) --------

    def test_probe_guarded_add() -> None:
        from hypa.runtime.emulator.probe import run_instruction

        a = np.array(edges(32) * 4, np.uint32)
        b = a[::-1].copy()
        g = np.array([i % 3 == 0 for i in range(len(a))], np.uint32)
        (d,) = run_instruction("add.s32", [g, a, b], [".s32", ".s32"], [".s32"], guard=True)
        exp = np.where(g != 0, a + b, 0).astype(np.uint32)
        np.testing.assert_array_equal(d.view(np.uint32), exp)

    @pytest.mark.parametrize("text,imm,ref", [
        ("shl.b32", "33", lambda a: 0),
        ("shr.s32", "40", lambda a: M(32) if a >> 31 else 0),
        ("bfe.s32", None, None),
    ], ids=["shl.b32 imm33", "shr.s32 imm40", "bfe.s32 imm"])
    def test_probe_immediates(text, imm, ref) -> None:
        from hypa.runtime.emulator.probe import run_instruction

        a = np.array(edges(32) + rand(32, 40), np.uint32)
        if text == "bfe.s32":
            (d,) = run_instruction(text, [a], [".b32", ("imm", "28"), ("imm", "8")], [".b32"])
            exp = [sx(int(v) >> 28, 4) & M(32) for v in a]
        else:
            (d,) = run_instruction(text, [a], [".b32", ("imm", imm)], [".b32"])
            exp = [ref(int(v)) for v in a]
        np.testing.assert_array_equal(d.view(np.uint32), np.array(exp, np.uint32))

    def test_probe_setp_pair() -> None:
        from hypa.runtime.emulator.probe import run_instruction

        a, b = (np.array(v, np.uint32) for v in pairs(32, extra=10))
        p, q = run_instruction("setp.lt.s32", [a, b], [".s32", ".s32"], [".pred", ".pred"], result_operand="pair")
        lt = a.view(np.int32) < b.view(np.int32)
        np.testing.assert_array_equal(p, lt.astype(np.uint32))
        np.testing.assert_array_equal(q, (~lt).astype(np.uint32))

    def test_lop3_normal_form_all_luts() -> None:
        """The lowering writes lop3 as an XOR of AND monomials: check the monomials
        of all 256 truth tables against the table itself, bit by bit."""
        from hypa.runtime.emulator.lowering.semantics.integer import lop3_anf

        va, vb, vc = 0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA  # every (a, b, c) combination
        for lut in range(256):
            d = 0
            for s in lop3_anf(lut):
                term = M(32)
                for v, x in ((4, va), (2, vb), (1, vc)):
                    if s & v:
                        term &= x
                d ^= term
            assert d == ref_lop3(va, vb, vc, lut), f"lop3 {lut:#04x}"

    def test_every_integer_entry_is_covered() -> None:
        """Each ISA entry of this family has at least one case here."""
        family = ("add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi "
                  "szext bmsk dp4a dp2a addc subc madc and or xor not cnot lop3 shf shl shr prmt setp set "
                  "selp slct").split()
        seen = set()
        for g in GROUPS:
            for c in g.cases:
                for stmt in c.body.split(";"):
                    words = [w for w in stmt.split() if not w.startswith("@")]
                    if words:
                        seen.add(words[0].split(".")[0])
        assert set(family) <= seen, sorted(set(family) - seen)


# ---------------------------------------------------------------------------
# The same kernels on a GPU (CuPy): checks the references against hardware
# ---------------------------------------------------------------------------


def gpu_check(names: Sequence[str] = ()) -> int:  # pragma: no cover
    import cupy as cp

    failures = 0
    for g in GROUPS:
        if names and g.name not in names:
            continue
        if g.name == "lop3":
            g = _lop3(range(256))
        cases = [c for c in g.cases if c.hw]
        try:
            got = run_cuda(g, cases)
        except cp.cuda.driver.CUDADriverError as exc:
            print(f"{g.name}: module rejected ({exc}); trying case by case", flush=True)
            got = {}
            for c in cases:
                try:
                    got.update(run_cuda(g, [c]))
                except cp.cuda.driver.CUDADriverError as exc2:
                    print(f"  REJECTED {c.id}: {exc2}")
        ok = 0
        for c in cases:
            if c.id not in got:
                continue
            bad = mismatches(g, c, got[c.id], limit=6)
            if bad:
                failures += 1
                print("\n".join("  MISMATCH " + b for b in bad))
            else:
                ok += 1
        print(f"{g.name}: {ok}/{len(cases)} cases agree with the GPU", flush=True)
    return failures


if __name__ == "__main__":  # pragma: no cover
    if "--gpu" in sys.argv:
        sys.exit(1 if gpu_check([a for a in sys.argv[1:] if not a.startswith("-")]) else 0)
    if "--ptx" in sys.argv:
        print(kernel_ptx(GROUP_BY_NAME[sys.argv[-1]]))
