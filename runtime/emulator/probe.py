"""Single-instruction probe kernels: apply one PTX instruction to arrays.

``instruction_kernel`` writes a kernel in which thread ``i`` loads element
``i`` of every source array, applies the instruction, and stores element
``i`` of every result.  The same kernel runs in the emulator (full mode, see
``run_instruction``) and on a GPU, which is how instruction semantics are
checked against independent references and against hardware.

A source is described by its PTX type (``.f32``, ``.u64``, ``.pred`` ...) or,
to place a literal, by ``("imm", "0f3F800000")``.  Predicates travel as
``u32`` 0/1 in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hypa.ptxdialect import isa

DTYPES = {
    ".u8": np.uint8, ".s8": np.int8, ".b8": np.uint8,
    ".u16": np.uint16, ".s16": np.int16, ".b16": np.uint16, ".f16": np.uint16, ".bf16": np.uint16,
    ".u32": np.uint32, ".s32": np.int32, ".b32": np.uint32, ".f32": np.float32,
    ".f16x2": np.uint32, ".bf16x2": np.uint32, ".u16x2": np.uint32, ".s16x2": np.uint32,
    ".u64": np.uint64, ".s64": np.int64, ".b64": np.uint64, ".f64": np.float64,
    ".pred": np.uint32,
}

_REG = {1: "%p", 16: "%h", 32: "%r", 64: "%rd"}
_DECL = {1: ".pred", 16: ".b16", 32: ".b32", 64: ".b64"}


def _bits(t: str) -> int:
    return 1 if t == ".pred" else isa.TYPE_BITS[t]


def _mem_type(t: str) -> str:
    if t == ".pred":
        return ".u32"
    b = _bits(t)
    return {8: ".u8", 16: ".b16", 32: ".b32", 64: ".b64"}[b]


@dataclass
class Probe:
    ptx: str
    kernel: str
    sources: list  # PTX types or ("imm", text)
    results: list[str]


def instruction_kernel(
    instruction: str,
    sources: Sequence,
    results: Sequence[str],
    target: str = "sm_90",
    version: str = "8.5",
    name: str = "probe",
    result_operand: str = "plain",
    guard: bool = False,
    operands: str = "",
) -> Probe:
    """PTX text of a probe kernel for ``instruction`` (e.g. ``"add.rz.f32"``).

    ``results`` are the PTX types of the destination operands, in order;
    ``result_operand`` is ``"plain"`` (``d, a, b``), ``"pair"`` (``d|p, ...``)
    or ``"vector"`` (``{d0, d1}, ...``).  With ``guard`` the instruction is
    guarded by an extra ``.pred`` source (the first argument array).  ``operands``,
    where given, is the operand list as a template over the registers (results, then
    sources): ``"{0}.b2, -{1}.h0, {2}, {3}"`` (video selectors, vmad's negations).
    """
    counter: dict[int, int] = {1: 0, 16: 0, 32: 0, 64: 0}

    def reg(bits: int) -> str:
        b = 8 if bits == 8 else bits
        b = 16 if b == 8 else b
        counter[b] += 1
        return f"{_REG[b]}{counter[b]}"

    def element_address(param: str, esize: int) -> str:
        """A register with the address of this thread's element of the array in ``param``."""
        p, a, o = reg(64), reg(64), reg(64)
        body.append(f"ld.param.u64 {p}, [{param}];")
        body.append(f"cvta.to.global.u64 {p}, {p};")
        body.append(f"mul.lo.u64 {o}, %rd1, {esize};")
        body.append(f"add.s64 {a}, {p}, {o};")
        return a

    params = []
    body = []
    arrays = []
    srcs = list(sources)
    if guard:
        srcs = [".pred", *srcs]
    for k, s in enumerate(srcs):
        if isinstance(s, tuple):
            continue
        params.append(f".param .u64 {name}_in{k}")
        arrays.append(("in", k, s))
    for k, t in enumerate(results):
        params.append(f".param .u64 {name}_out{k}")
        arrays.append(("out", k, t))
    params.append(f".param .u32 {name}_n")
    body.append(f"ld.param.u32 %r1, [{name}_n];")
    counter[32] = 1
    body.append("mov.u32 %r2, %ctaid.x;")
    body.append("mov.u32 %r3, %ntid.x;")
    body.append("mov.u32 %r4, %tid.x;")
    body.append("mad.lo.s32 %r5, %r2, %r3, %r4;")
    counter[32] = 5
    body.append("setp.ge.u32 %p1, %r5, %r1;")
    counter[1] = 1
    body.append("@%p1 bra $L_end;")
    body.append("cvt.u64.u32 %rd1, %r5;")
    counter[64] = 1
    operand_regs = []
    guard_reg = None
    for k, s in enumerate(srcs):
        if isinstance(s, tuple):
            operand_regs.append(s[1])
            continue
        bits = _bits(s)
        mt = _mem_type(s)
        a = element_address(f"{name}_in{k}", max(bits, 8) // 8 if s != ".pred" else 4)
        if s == ".pred":
            t = reg(32)
            body.append(f"ld.global.u32 {t}, [{a}];")
            pr = reg(1)
            body.append(f"setp.ne.u32 {pr}, {t}, 0;")
            if guard and k == 0:
                guard_reg = pr
            else:
                operand_regs.append(pr)
        else:
            r = reg(bits if bits >= 16 else 16)
            body.append(f"ld.global{mt} {r}, [{a}];" if bits != 8 else f"ld.global.u8 {r}, [{a}];")
            operand_regs.append(r)
    dst_regs = [reg(_bits(t) if _bits(t) >= 16 or t == ".pred" else 16) for t in results]
    if result_operand == "pair":
        dtext = "|".join(dst_regs)
    elif result_operand == "vector":
        dtext = "{" + ", ".join(dst_regs) + "}"
    else:
        dtext = ", ".join(dst_regs)
    if guard:
        # a guarded write keeps the old value where the guard is false: start from 0
        for d, t in zip(dst_regs, results):
            if t == ".pred":
                body.append(f"setp.ne.u32 {d}, 0, 0;")
            else:
                body.append(f"mov.b{max(_bits(t), 16)} {d}, 0;")
    stmt = f"{instruction} {dtext}"
    if operands:
        stmt = f"{instruction} " + operands.format(*dst_regs, *operand_regs)
    elif operand_regs:
        stmt += ", " + ", ".join(operand_regs)
    if guard_reg:
        stmt = f"@{guard_reg} {stmt}"
    body.append(stmt + ";")
    for k, (d, t) in enumerate(zip(dst_regs, results)):
        a = element_address(f"{name}_out{k}", 4 if t == ".pred" else max(_bits(t), 8) // 8)
        if t == ".pred":
            v = reg(32)
            body.append(f"selp.u32 {v}, 1, 0, {d};")
            body.append(f"st.global.u32 [{a}], {v};")
        else:
            body.append(f"st.global{_mem_type(t)} [{a}], {d};")
    body.append("$L_end:")
    body.append("ret;")
    decls = [f".reg {_DECL[b]} {_REG[b]}<{counter[b] + 1}>;" for b in (1, 16, 32, 64)]
    text = (
        f".version {version}\n.target {target}\n.address_size 64\n\n"
        f".visible .entry {name}(\n\t" + ",\n\t".join(params) + "\n)\n{\n\t"
        + "\n\t".join(decls + body).replace("\t$L_end:", "$L_end:") + "\n}\n"
    )
    return Probe(text, name, srcs, list(results))


def run_instruction(
    instruction: str,
    inputs: Sequence[np.ndarray | str],
    sources: Sequence,
    results: Sequence[str],
    result_operand: str = "plain",
    guard: bool = False,
    block: int = 128,
    operands: str = "",
) -> list[np.ndarray]:
    """Emulate ``instruction`` over the input arrays (full mode); one array per result.

    ``inputs`` holds one array per non-immediate source, in order (with
    ``guard``, the guard array first).  Arrays are reinterpreted as the
    source's PTX type (floats may be given as floats, bit patterns as uints).
    """
    from hypa.ptxdialect import parse_ptx

    from .emulator import Emulator
    from .launch import Launch

    probe = instruction_kernel(instruction, sources, results, result_operand=result_operand, guard=guard,
                               operands=operands)
    srcs = [s for s in probe.sources if not isinstance(s, tuple)]
    if len(inputs) != len(srcs):
        raise ValueError(f"{instruction}: {len(srcs)} input arrays needed, {len(inputs)} given")
    n = len(inputs[0]) if inputs else 1
    bufs = {}
    args: list = []
    for k, (arr, t) in enumerate(zip(inputs, srcs)):
        dt = DTYPES[t]
        a = np.ascontiguousarray(arr)
        if a.dtype != dt:
            a = a.astype(dt) if (a.dtype.kind == np.dtype(dt).kind or a.dtype.kind in "biu" and np.dtype(dt).kind in "biu") else a.view(dt) if a.itemsize == np.dtype(dt).itemsize else a.astype(dt)
        bufs[f"in{k}"] = a
        args.append(f"in{k}")
    outs = []
    for k, t in enumerate(results):
        o = np.zeros(n, DTYPES[t])
        bufs[f"out{k}"] = o
        args.append(f"out{k}")
        outs.append(f"out{k}")
    args.append(n)
    grid = max(1, (n + block - 1) // block)
    res = Emulator(parse_ptx(probe.ptx), mode="full").run(
        Launch(kernel=probe.kernel, grid=grid, block=block, args=args, buffers=bufs)
    )
    return [res.buffers[o] for o in outs]
