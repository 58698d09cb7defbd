"""Lowering of a ``KernelProgram`` to LLVM IR: one function runs one warp.

``warp_run(ws, ctx, warp)`` executes the warp from where it stopped until it
exits, waits at a barrier, or fails.  Every SSA value the program emulates
lives in the warp's frame (inside ``ws``) as 32 lanes (``<32 x iN>``; a
predicate is a 32-bit mask), so a warp can stop at a barrier and resume
without saving anything.  Control flow follows GPGPU-Sim's SIMT stack: the
current entry (active mask, reconvergence block) is kept in ``ws``; a
divergent branch pushes the reconvergence entry and the not-taken path, and
reaching the entry's reconvergence block pops.  Every write is masked by the
active lanes (and the guard), so values of lanes waiting on the stack survive.

``run_ctas(ctx, first, last)`` is the CTA scheduler: it runs the warps of each
CTA in turn until every warp has exited, releasing barriers when all the
warps they wait for have arrived.

Per block the code adds 1 to the block's warp counter and the number of
active lanes to its thread counter; branches count divergence; guarded
instructions with a computed guard count the lanes whose guard is true.
"""

from __future__ import annotations

import zlib

from llvmlite import ir
from xdsl.ir import SSAValue

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import FallthroughOp, ImplicitReturnOp, InstructionOp
from hypa.ptxdialect.operands import Operand, iter_regs
from hypa.ptxdialect.printer import instruction_text

from . import abi
from .rules import RULES, rule  # noqa: F401  (rule: re-exported for existing callers)
from .program import KernelProgram, reconvergence, value_bits

LANES = abi.LANES
i1, i8, i16, i32, i64, i128 = (ir.IntType(n) for n in (1, 8, 16, 32, 64, 128))
f16, f32, f64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
ptr = ir.PointerType()


def ivec(bits: int) -> ir.VectorType:
    return ir.VectorType(ir.IntType(bits), LANES)


VPTR = ir.VectorType(ptr, LANES)
MASK = ir.VectorType(i1, LANES)


class LoweringError(Exception):
    pass


# ---------------------------------------------------------------------------
# Instruction rules
# ---------------------------------------------------------------------------

def supported_entries() -> set[str]:
    from . import semantics  # noqa: F401  (registers the rules)

    return set(RULES)


class Emitter:
    """What an instruction rule sees: operands by textual position, results,
    the active lanes and the guard, and helpers for memory and intrinsics."""

    def __init__(self, wg: "WarpCodegen", op: InstructionOp):
        self.wg = wg
        self.b: ir.IRBuilder = wg.b
        self.op = op
        self.spec = op.spec
        self.mods = op.modifiers
        self.types = isa.type_modifiers(self.mods)
        self.args = op.operands_ast
        self.instr_id = wg.prog.instr_ids[op]
        self._map_registers()
        self.active: ir.Value = wg.active
        self.guard: ir.Value | None = None
        g = op.guard_pred
        if g is not None:
            gv = wg.read(op.operands[0])
            self.guard = self.b.not_(gv) if g[1] else gv
        self.exec_mask = self.active if self.guard is None else self.b.and_(self.active, self.guard)

    # -- register mapping -----------------------------------------------------

    def _map_registers(self) -> None:
        op = self.op
        uses, defs = op.register_roles()
        ops = op.instruction_operands()
        res = op.results
        # textual traversal: the same order register_roles uses
        from hypa.ptxdialect.dialect import _def_positions

        dpos = _def_positions(self.spec, self.mods, self.args)
        ui = 1 if op.guard_pred is not None else 0
        di = 0
        self.reg_src: dict[int, SSAValue] = {}
        self.reg_dst: dict[int, SSAValue] = {}
        self.slot_of: list[list[tuple[str, SSAValue]]] = []
        for k, a in enumerate(self.args):
            items: list[tuple[str, SSAValue]] = []
            for _r in iter_regs(a):
                if k in dpos:
                    items.append(("def", res[di]))
                    di += 1
                    if self.spec.inout:
                        ui += 1
                else:
                    items.append(("use", ops[ui]))
                    ui += 1
            self.slot_of.append(items)
        self.tied: list[SSAValue] = []
        if op.guard_pred is not None:
            self.tied = list(ops[len(ops) - len(defs):])
        self.cc_in = ops[ui] if self.spec.cc_use and ui < len(ops) else None
        self.cc_out = res[di] if ".cc" in self.mods and di < len(res) else None

    # -- constants and types ----------------------------------------------------

    def splat(self, value, ty: ir.Type) -> ir.Constant:
        return ir.Constant(ir.VectorType(ty, LANES), value)

    def zeros(self, bits: int) -> ir.Constant:
        return self.splat(0, ir.IntType(bits))

    def call(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        return self.b.call(self.wg.intrinsic(name, ret, [a.type for a in args]), args)

    def fail(self, msg: str) -> LoweringError:
        return LoweringError(f"{self.op.opcode}: {msg}")

    # -- operands ----------------------------------------------------------------

    def operand_node(self, k: int) -> Operand:
        if k >= len(self.args):
            raise self.fail(f"expects an operand {k + 1}")
        return self.args[k]

    def src(self, k: int, bits: int, signed: bool = False) -> ir.Value:
        """Operand ``k`` as ``<32 x i{bits}>`` (registers narrowed or extended)."""
        node = self.operand_node(k)
        return self.value_of(node, k, bits, signed, 0)

    def value_of(self, node: Operand, k: int, bits: int, signed: bool, reg_index: int) -> ir.Value:
        kind = node[0]
        if kind == "reg":
            v = self.slot_of[k][reg_index][1]
            return self.fit(self.wg.read(v), bits, signed)
        if kind == "imm":
            return self.splat(self.imm_bits(node[1], bits), ir.IntType(bits))
        if kind == "sreg":
            return self.fit(self.wg.special_register(node[1]), bits, signed)
        if kind == "sym":
            return self.fit(self.wg.symbol_address(node[1], node[2]), bits, False)
        if kind == "not":
            inner = self.value_of(node[1], k, 1, False, reg_index)
            return self.b.not_(inner)
        raise self.fail(f"unsupported operand {node!r}")

    def imm_bits(self, text: str, bits: int) -> int:
        """The bit pattern of an immediate for a ``bits``-wide operand."""
        from hypa.ptxdialect.operands import is_float_immediate, parse_int_immediate

        if is_float_immediate(text):
            return float_imm_bits(text, bits, self.float_kind(bits))
        v = parse_int_immediate(text)
        fk = self.float_kind(bits)
        if fk is not None and any(t in isa.FLOAT_TYPES for t in self.types):
            return float_imm_bits(str(float(v)), bits, fk)
        return v & ((1 << bits) - 1)

    def float_kind(self, bits: int) -> str | None:
        for t in self.types:
            if t in (".f32",) and bits == 32:
                return "f32"
            if t == ".f64" and bits == 64:
                return "f64"
            if t in (".f16", ".f16x2") and bits in (16, 32):
                return "f16" if bits == 16 else None
            if t in (".bf16",) and bits == 16:
                return "bf16"
        return None

    def fit(self, v: ir.Value, bits: int, signed: bool) -> ir.Value:
        have = v.type.element.width  # type: ignore[attr-defined]
        if have == bits:
            return v
        if have > bits:
            return self.b.trunc(v, ivec(bits))
        return self.b.sext(v, ivec(bits)) if signed else self.b.zext(v, ivec(bits))

    def src_pred(self, k: int) -> ir.Value:
        node = self.operand_node(k)
        if node[0] == "imm":
            return self.splat(1 if self.imm_bits(node[1], 32) else 0, i1)
        return self.value_of(node, k, 1, False, 0)

    def src_float(self, k: int, kind: str) -> ir.Value:
        bits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[kind]
        node = self.operand_node(k)
        if node[0] == "imm":
            return self.to_float(self.splat(float_imm_bits(node[1], bits, kind), ir.IntType(bits)), kind)
        return self.to_float(self.src(k, bits), kind)

    def to_float(self, v: ir.Value, kind: str) -> ir.Value:
        """Integer lanes -> float lanes (f16 and bf16 widen exactly to f32)."""
        if kind == "f32":
            return self.b.bitcast(v, ir.VectorType(f32, LANES))
        if kind == "f64":
            return self.b.bitcast(v, ir.VectorType(f64, LANES))
        from .semantics.floating import bf16_to_f32, f16_to_f32

        return f16_to_f32(self, v) if kind == "f16" else bf16_to_f32(self, v)

    def elements(self, k: int) -> list[Operand]:
        node = self.operand_node(k)
        return list(node[1]) if node[0] == "vec" else [node]

    def src_elements(self, k: int, bits: int, signed: bool = False) -> list[ir.Value]:
        """Each element of a vector operand ``{a, b, ...}`` (or the operand itself)."""
        node = self.operand_node(k)
        if node[0] != "vec":
            return [self.src(k, bits, signed)]
        out = []
        ri = 0
        for el in node[1]:
            if el[0] == "reg":
                out.append(self.value_of(el, k, bits, signed, ri))
                ri += 1
            else:
                out.append(self.value_of(el, k, bits, signed, 0))
        return out

    # -- results ---------------------------------------------------------------

    def dst(self, k: int, value: ir.Value, signed: bool = False, reg_index: int = 0) -> None:
        """Write ``value`` to the register of def operand ``k`` (extended or
        narrowed to the register's width), merged by guard and active lanes."""
        items = self.slot_of[k]
        if not items:
            return  # "_" sink or not a register
        kind, v = items[reg_index]
        if kind != "def":
            raise self.fail(f"operand {k + 1} is not written")
        self.write_def(v, value, signed)

    def write_def(self, v: SSAValue, value: ir.Value, signed: bool = False) -> None:
        if v not in self.wg.prog.slots and v not in self.wg.prog.local_values:
            return  # not emulated (slice mode)
        bits = value_bits(v)
        if bits == 1:
            if value.type != MASK:
                value = self.b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        else:
            vb = value.type.element.width  # type: ignore[attr-defined]
            if vb != bits:
                value = self.fit(value, bits, signed)
        if self.guard is not None:
            j = list(self.op.results).index(v)
            if j < len(self.tied):
                old = self.wg.read(self.tied[j])
                if bits != 1 and old.type != value.type:
                    old = self.fit(old, bits, False)
                value = self.b.select(self.guard, value, old)
        self.wg.write(v, value, self.active)

    def dst_elements(self, k: int, values: list[ir.Value], signed: bool = False) -> None:
        node = self.operand_node(k)
        if node[0] != "vec":
            self.dst(k, values[0], signed)
            return
        ri = 0
        for el, val in zip(node[1], values):
            if el[0] == "reg":
                self.dst(k, val, signed, ri)
                ri += 1

    def dst_pair(self, k: int, first: ir.Value, second: ir.Value | None) -> None:
        """``d|p`` destinations: ``second`` goes to the register after ``|``."""
        node = self.operand_node(k)
        if node[0] == "pair":
            items = self.slot_of[k]
            idx = 0
            if node[1][0] == "reg":
                self.write_def(items[idx][1], first)
                idx += 1
            if second is not None and node[2][0] == "reg":
                self.write_def(items[idx][1], second)
        else:
            self.dst(k, first)

    # -- memory ------------------------------------------------------------------

    def address(self, k: int) -> tuple[str, ir.Value, Operand]:
        """(kind, address lanes as i64, base node) of memory operand ``k``.

        kind is ``"param"`` for a kernel parameter named by symbol (a constant
        offset in the parameter buffer), ``"cparam"`` for a call parameter,
        else ``"reg"`` (the address is in the value).
        """
        node = self.operand_node(k)
        if node[0] != "addr":
            raise self.fail(f"operand {k + 1} is not an address")
        base, off = node[1], node[2]
        if base[0] == "reg":
            v = self.value_of(base, k, 64, False, 0)
            if off:
                v = self.b.add(v, self.splat(off, i64))
            return "reg", v, base
        if base[0] == "imm":
            from hypa.ptxdialect.operands import parse_int_immediate

            return "reg", self.splat(parse_int_immediate(base[1]) + off, i64), base
        if base[0] == "sym":
            return self.wg.symbol_kind(base[1]), self.wg.symbol_address(base[1], base[2] + off), base
        raise self.fail("unsupported address")

    def space(self) -> str:
        sp = isa.state_space(self.spec, self.mods)
        return sp or "generic"

    def load(self, space: str, addr: ir.Value, bits: int, mask: ir.Value, kind: str = "reg") -> ir.Value:
        return self.wg.mem_access(self, space, addr, bits, mask, None, kind)

    def store(self, space: str, addr: ir.Value, value: ir.Value, mask: ir.Value, kind: str = "reg") -> None:
        self.wg.mem_access(self, space, addr, value.type.element.width, mask, value, kind)  # type: ignore[attr-defined]

    def host_pointers(self, space: str, addr: ir.Value, nbytes: int, mask: ir.Value, kind: str = "reg") -> ir.Value:
        """Bounds-checked host pointers (``<32 x ptr>``) for ``nbytes`` at ``addr``."""
        return self.wg.translate(self, space, addr, nbytes, mask, kind)

    def popcount(self, mask: ir.Value) -> ir.Value:
        return self.wg.popcount(mask)


def float_imm_bits(text: str, bits: int, kind: str | None) -> int:
    """Bit pattern of a floating-point immediate (``0f..``, ``0d..`` or decimal)."""
    import struct

    t = text
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t[:2] in ("0f", "0F"):
        raw = int(t[2:], 16)
        val = struct.unpack("<f", struct.pack("<I", raw))[0]
        if kind in ("f32", None) and bits == 32:
            return raw ^ (0x80000000 if neg else 0)
    elif t[:2] in ("0d", "0D"):
        raw = int(t[2:], 16)
        val = struct.unpack("<d", struct.pack("<Q", raw))[0]
        if bits == 64:
            return raw ^ ((1 << 63) if neg else 0)
    else:
        val = float(t)
    if neg:
        val = -val
    if bits == 64:
        return struct.unpack("<Q", struct.pack("<d", val))[0]
    if bits == 32:
        return struct.unpack("<I", struct.pack("<f", val))[0]
    if bits == 16:
        import numpy as np

        if kind == "bf16":
            f = struct.unpack("<I", struct.pack("<f", val))[0]
            return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16) & 0xFFFF
        return int(np.array(val, np.float16).view(np.uint16))
    raise ValueError(f"float immediate {text} for {bits}-bit operand")


# ---------------------------------------------------------------------------
# The warp function
# ---------------------------------------------------------------------------


class WarpCodegen:
    def __init__(self, prog: KernelProgram, module: ir.Module):
        from . import semantics  # noqa: F401  (registers the rules)

        self.prog = prog
        self.module = module
        self._intrinsics: dict[str, ir.Function] = {}
        fnty = ir.FunctionType(i32, [ptr, ptr, i32])
        self.fn = ir.Function(module, fnty, "warp_run")
        self.fn.args[0].add_attribute("noalias")
        self.fn.args[1].add_attribute("noalias")
        self.ws, self.ctx, self.warp = self.fn.args
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.block_bbs: list[ir.Block] = []
        self.resume_bbs: list[ir.Block] = []
        self.barrier_index: dict[InstructionOp, int] = {op: i for i, op in enumerate(prog.barriers)}
        self.active: ir.Value = None  # type: ignore[assignment]
        self._frame = self.b.gep(self.ws, [ir.Constant(i64, abi.WS_FRAME_BYTES_OFFSET)], source_etype=i8)
        self._stable: dict[int, ir.Value] = {}
        self.local_values: dict[SSAValue, ir.Value] = {}
        #: frame values written in the current LLVM block: (value, lanes written,
        #: block); reads under the same active lanes use the value, not a reload
        #: (a load right after a masked store of the same slot cannot forward)
        self.written: dict[SSAValue, tuple[ir.Value, ir.Value, ir.Block]] = {}
        #: set while an instruction that reads other lanes' registers is lowered
        self.cross_lane = False

    # -- helpers -------------------------------------------------------------------

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        f = self._intrinsics.get(name)
        if f is None:
            existing = self.module.globals.get(name)
            if existing is not None:
                f = existing  # type: ignore[assignment]
            else:
                f = ir.Function(self.module, ir.FunctionType(ret, args), name)
            self._intrinsics[name] = f
        return f

    #: context words that do not change while a warp runs: loaded once, at entry
    STABLE_WORDS = frozenset([
        abi.CTX_PARAM, abi.CTX_WIN_BASE, abi.CTX_WIN_SIZE, abi.CTX_WIN_STRIDE, abi.CTX_NWIN,
        abi.CTX_SHARED, abi.CTX_SHARED_SIZE, abi.CTX_LOCAL, abi.CTX_LOCAL_SIZE, abi.CTX_CONST,
        abi.CTX_CONST_SIZE, abi.CTX_CPARAM, abi.CTX_CPARAM_SIZE, abi.CTX_NTID, abi.CTX_NTID + 1,
        abi.CTX_NTID + 2, abi.CTX_NCTAID, abi.CTX_NCTAID + 1, abi.CTX_NCTAID + 2, abi.CTX_CTAID,
        abi.CTX_CTAID + 1, abi.CTX_CTAID + 2, abi.CTX_COUNTERS, abi.CTX_BUDGET, abi.CTX_NWARPS,
        abi.CTX_NTHREADS, abi.CTX_DYN_SHARED, abi.CTX_SMCOUNT, abi.CTX_FLAT_START, abi.CTX_FLAT_END, abi.CTX_FLAT_N,
    ])

    def ctx_word(self, index: int) -> ir.Value:
        v = self._stable.get(index)
        if v is not None:
            return v
        p = self.b.gep(self.ctx, [ir.Constant(i64, index)], source_etype=i64)
        return self.b.load(p, typ=i64)

    def load_stable_words(self) -> None:
        for index in sorted(self.STABLE_WORDS):
            p = self.b.gep(self.ctx, [ir.Constant(i64, index)], source_etype=i64)
            self._stable[index] = self.b.load(p, typ=i64)

    def ret(self, code: int) -> None:
        """Leave warp_run: publish the step count, return ``code``."""
        b = self.b
        self.set_ctx_word(abi.CTX_STEPS, b.load(self.steps, typ=i64))
        b.ret(ir.Constant(i32, code))

    def ctx_ptr(self, index: int) -> ir.Value:
        return self.b.inttoptr(self.ctx_word(index), ptr)

    def set_ctx_word(self, index: int, value: ir.Value) -> None:
        p = self.b.gep(self.ctx, [ir.Constant(i64, index)], source_etype=i64)
        self.b.store(value, p)

    def ws_word_ptr(self, index: int | ir.Value) -> ir.Value:
        idx = ir.Constant(i64, index) if isinstance(index, int) else index
        return self.b.gep(self.ws, [idx], source_etype=i64)

    def ws_word(self, index: int | ir.Value) -> ir.Value:
        return self.b.load(self.ws_word_ptr(index), typ=i64)

    def set_ws_word(self, index: int | ir.Value, value: ir.Value) -> None:
        self.b.store(value, self.ws_word_ptr(index))

    def splat(self, value, ty: ir.Type) -> ir.Constant:
        return ir.Constant(ir.VectorType(ty, LANES), value)

    def splat_value(self, v: ir.Value) -> ir.Value:
        vt = ir.VectorType(v.type, LANES)
        undef = ir.Constant(vt, None)
        ins = self.b.insert_element(undef, v, ir.Constant(i32, 0))
        return self.b.shuffle_vector(ins, undef, ir.Constant(ir.VectorType(i32, LANES), 0))

    def mask_to_i32(self, m: ir.Value) -> ir.Value:
        return self.b.bitcast(m, i32)

    def i32_to_mask(self, m: ir.Value) -> ir.Value:
        return self.b.bitcast(m, MASK)

    def popcount(self, mask: ir.Value) -> ir.Value:
        m = self.mask_to_i32(mask) if mask.type == MASK else mask
        return self.b.call(self.intrinsic("llvm.ctpop.i32", i32, [i32]), [m])

    # -- frame ---------------------------------------------------------------------

    def slot_ptr(self, v: SSAValue) -> ir.Value:
        off = self.prog.slots.get(v)
        if off is None:
            raise LoweringError(f"internal: value {v.name_hint} has no frame slot")
        return self.b.gep(self._frame, [ir.Constant(i64, off)], source_etype=i8)

    def read(self, v: SSAValue) -> ir.Value:
        lv = self.local_values.get(v)
        if lv is not None:
            return lv
        w = self.written.get(v)
        if w is not None and w[2] is self.b.block and (w[1] is None or (w[1] is self.active and not self.cross_lane)):
            return w[0]  # right in every lane (None), or in the active lanes, the only ones the reader looks at
        bits = value_bits(v)
        p = self.slot_ptr(v)
        if bits == 1:
            return self.i32_to_mask(self.b.load(p, typ=i32, align=4))
        return self.b.load(p, typ=ivec(max(bits, 8)), align=64)

    def write(self, v: SSAValue, value: ir.Value, mask: ir.Value, blend: bool = False) -> None:
        """Store ``value`` in the lanes of ``mask``; other lanes keep their value.

        ``blend``: merge with the slot's old value and store the whole vector
        (for block arguments, whose old value the block has usually loaded
        already): the next block's load then forwards from the store, which it
        cannot from a masked store -- a loop's carried values are reloaded on
        every trip."""
        bits = value_bits(v)
        if v in self.prog.local_values:
            # used only later in this block, by the same lanes: no frame slot
            if bits == 1 and value.type != MASK:
                value = self.b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
            elif bits != 1 and value.type.element.width != max(bits, 8):  # type: ignore[attr-defined]
                vt = ivec(max(bits, 8))
                value = self.b.zext(value, vt) if value.type.element.width < vt.element.width else self.b.trunc(value, vt)  # type: ignore[attr-defined]
            self.local_values[v] = value
            return
        p = self.slot_ptr(v)
        if bits == 1:
            old = self.i32_to_mask(self.b.load(p, typ=i32, align=4))
            new = self.b.select(mask, value, old)
            self.b.store(self.mask_to_i32(new), p, align=4)
            self.written[v] = (new, None, self.b.block)
            return
        vt = ivec(max(bits, 8))
        if value.type != vt:
            value = self.b.zext(value, vt) if value.type.element.width < vt.element.width else self.b.trunc(value, vt)  # type: ignore[attr-defined]
        if blend:
            new = self.b.select(mask, value, self.read(v))
            self.b.store(new, p, align=64)
            self.written[v] = (new, None, self.b.block)
            return
        st = self.intrinsic(f"llvm.masked.store.v32i{vt.element.width}.p0", ir.VoidType(), [vt, ptr, MASK])
        self.b.call(st, [value, p, mask])
        if mask is self.active:
            self.written[v] = (value, mask, self.b.block)
        else:
            self.written.pop(v, None)

    # -- lanes and special registers ----------------------------------------------

    def setup_lanes(self) -> None:
        b = self.b
        lane_c = ir.Constant(ivec(32), list(range(LANES)))
        self.lane_ids = lane_c
        wbase = b.mul(self.warp, ir.Constant(i32, LANES))
        self.thread_lin = b.add(self.splat_value(wbase), lane_c)  # <32 x i32>
        ntx = b.trunc(self.ctx_word(abi.CTX_NTID), i32)
        nty = b.trunc(self.ctx_word(abi.CTX_NTID + 1), i32)
        nthreads = b.trunc(self.ctx_word(abi.CTX_NTHREADS), i32)
        vx = self.splat_value(ntx)
        vy = self.splat_value(nty)
        self.tid_x = b.urem(self.thread_lin, vx)
        q = b.udiv(self.thread_lin, vx)
        self.tid_y = b.urem(q, vy)
        self.tid_z = b.udiv(q, vy)
        self.valid = b.icmp_unsigned("<", self.thread_lin, self.splat_value(nthreads))

    def special_register(self, name: str) -> ir.Value:
        b = self.b
        comp = {"x": 0, "y": 1, "z": 2}
        base, _, c = name.partition(".")
        if base == "%tid":
            return {"x": self.tid_x, "y": self.tid_y, "z": self.tid_z}[c or "x"]
        if base in ("%ntid", "%nctaid", "%ctaid"):
            idx = {"%ntid": abi.CTX_NTID, "%nctaid": abi.CTX_NCTAID, "%ctaid": abi.CTX_CTAID}[base] + comp[c or "x"]
            return self.splat_value(b.trunc(self.ctx_word(idx), i32))
        if base == "%laneid":
            return self.lane_ids
        if base == "%warpid":
            return self.splat_value(self.warp)
        if base == "%nwarpid":
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_NWARPS), i32))
        if base in ("%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge"):
            one = self.splat(1, i32)
            eq = b.shl(one, self.lane_ids)
            if base == "%lanemask_eq":
                return eq
            lt = b.sub(eq, one)
            if base == "%lanemask_lt":
                return lt
            if base == "%lanemask_le":
                return b.or_(lt, eq)
            ge = b.not_(lt)
            if base == "%lanemask_ge":
                return ge
            return b.xor(ge, eq)
        if base in ("%clock", "%clock_hi"):
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_STEPS), i32))
        if base in ("%clock64", "%globaltimer"):
            return self.splat_value(self.ctx_word(abi.CTX_STEPS))
        if base == "%nsmid":
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_SMCOUNT), i32))
        if base == "%dynamic_smem_size":
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_DYN_SHARED), i32))
        if base in ("%total_smem_size", "%aggr_smem_size"):
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_SHARED_SIZE), i32))
        # %smid, %gridid, %envregN, %pmN, cluster registers of a 1-CTA cluster
        if base in ("%cluster_nctaid", "%nclusterid", "%cluster_nctarank", "%is_explicit_cluster"):
            return self.splat(1, i32)
        if base in ("%clusterid",):
            idx = abi.CTX_CTAID + comp[c or "x"]
            return self.splat_value(b.trunc(self.ctx_word(idx), i32))
        return self.splat(0, i32)

    # -- symbols ---------------------------------------------------------------------

    def symbol_kind(self, name: str) -> str:
        p = self.prog
        if any(n == name for n, *_ in p.params):
            return "param"
        if name in p.call_params:
            return "cparam"
        if name in p.shared_vars:
            return "shared"
        if name in p.local_vars:
            return "local"
        if name in p.const_vars:
            return "const"
        if name in p.global_vars:
            return "global"
        return "reg"

    def symbol_address(self, name: str, offset: int) -> ir.Value:
        """The address a symbol denotes, as i64 lanes: state-space offset for
        shared/local/const/param variables, a global address for globals."""
        p = self.prog
        for n, _t, off, _s in p.params:
            if n == name:
                return self.splat(off + offset, i64)
        if name in p.call_params:
            return self.splat(p.call_params[name].offset + offset, i64)
        if name in p.shared_vars:
            return self.splat(p.shared_vars[name].offset + offset, i64)
        if name in p.local_vars:
            return self.splat(p.local_vars[name].offset + offset, i64)
        if name in p.const_vars:
            return self.splat(p.const_vars[name].offset + offset, i64)
        if name in p.global_vars:
            gid = list(p.global_vars).index(name) + abi.WIN_FIRST_GLOBAL
            return self.splat((gid << abi.WINDOW_SHIFT) + offset, i64)
        if name == "WARP_SZ":
            return self.splat(32 + offset, i64)  # the ISA's predefined constant: threads per warp
        # a function symbol (mov.u64 %rd, func): an opaque non-zero value, the same in every process
        return self.splat((0xFFFF << abi.WINDOW_SHIFT) + (zlib.crc32(name.encode()) & 0xFFFFFF), i64)

    # -- memory ------------------------------------------------------------------------

    def error_if(self, e: Emitter | None, bad: ir.Value, code: int, addr: ir.Value | None, block: int | None = None) -> None:
        """If any lane of ``bad`` is set: record the error and return RC_ERROR."""
        b = self.b
        bits = self.mask_to_i32(bad)
        anybad = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
        with b.if_then(anybad, likely=False):
            lane = b.call(self.intrinsic("llvm.cttz.i32", i32, [i32, i1]), [bits, ir.Constant(i1, 0)])
            self.set_ctx_word(abi.CTX_ERR_CODE, ir.Constant(i64, code))
            self.set_ctx_word(abi.CTX_ERR_INSTR, ir.Constant(i64, e.instr_id if e is not None else -1))
            self.set_ctx_word(abi.CTX_ERR_BLOCK, ir.Constant(i64, self.cur_block if block is None else block))
            self.set_ctx_word(abi.CTX_ERR_LANE, b.zext(lane, i64))
            self.set_ctx_word(abi.CTX_ERR_WARP, b.zext(self.warp, i64))
            if addr is not None:
                a = b.extract_element(addr, lane)
                self.set_ctx_word(abi.CTX_ERR_ADDR, a if a.type == i64 else b.zext(a, i64))
            self.ret(abi.RC_ERROR)

    def translate(self, e: Emitter, space: str, addr: ir.Value, nbytes: int, mask: ir.Value, kind: str) -> ir.Value:
        """Host pointers for ``nbytes`` at each lane's ``addr`` (i64 lanes), checked."""
        b = self.b
        if addr.type != ivec(64):
            addr = b.zext(addr, ivec(64))
        n = self.splat(nbytes, i64)
        if kind == "param":
            base = self.ctx_word(abi.CTX_PARAM)
            size = self.splat(self.prog.param_bytes, i64)
            off = addr
            host = b.add(self.splat_value(base), off)
            self.error_if(e, b.and_(mask, b.icmp_unsigned(">", b.add(off, n), size)), abi.ERR_OUT_OF_BOUNDS, addr)
            return b.inttoptr(host, VPTR)
        if kind == "cparam" or space == "cparam":
            return self._per_thread(e, abi.CTX_CPARAM, abi.CTX_CPARAM_SIZE, addr, n, mask)
        if space in ("shared", "shared::cta", "shared::cluster"):
            off = b.and_(addr, self.splat(0xFFFFFFFF, i64))
            return self._flat(e, abi.CTX_SHARED, abi.CTX_SHARED_SIZE, off, n, mask, addr)
        if space == "local":
            return self._per_thread(e, abi.CTX_LOCAL, abi.CTX_LOCAL_SIZE, addr, n, mask)
        if space == "const":
            return self._flat(e, abi.CTX_CONST, abi.CTX_CONST_SIZE, addr, n, mask, addr)
        if space == "param":
            # a register address into the kernel parameters (rare)
            off = b.and_(addr, self.splat(abi.OFFSET_MASK, i64))
            base = self.ctx_word(abi.CTX_PARAM)
            self.error_if(e, b.and_(mask, b.icmp_unsigned(">", b.add(off, n), self.splat(self.prog.param_bytes, i64))), abi.ERR_OUT_OF_BOUNDS, addr)
            return b.inttoptr(b.add(self.splat_value(base), off), VPTR)
        # global and generic: window table; addresses outside every window (window 0 or
        # past the last) are flat host addresses, valid inside a registered allocation
        win = b.lshr(addr, self.splat(abi.WINDOW_SHIFT, i64))
        off = b.and_(addr, self.splat(abi.OFFSET_MASK, i64))
        nwin = self.splat_value(self.ctx_word(abi.CTX_NWIN))
        flat = b.or_(b.icmp_unsigned(">=", win, nwin), b.icmp_unsigned("==", win, self.splat(0, i64)))
        flat_lanes = b.and_(mask, flat)
        bits = self.mask_to_i32(flat_lanes)
        bad_bits = self._flat_check(addr, nbytes, bits)
        self.error_if(e, self.i32_to_mask(bad_bits), abi.ERR_OUT_OF_BOUNDS, addr)
        safe_win = b.select(flat, self.splat(0, i64), win)
        tbase = self.ctx_ptr(abi.CTX_WIN_BASE)
        tsize = self.ctx_ptr(abi.CTX_WIN_SIZE)
        tstride = self.ctx_ptr(abi.CTX_WIN_STRIDE)
        wmask = b.and_(mask, b.not_(flat))
        bases = self._gather64(tbase, safe_win, wmask)
        sizes = self._gather64(tsize, safe_win, wmask)
        strides = self._gather64(tstride, safe_win, wmask)
        oob = b.icmp_unsigned(">", b.add(off, n), sizes)
        self.error_if(e, b.and_(wmask, oob), abi.ERR_OUT_OF_BOUNDS, addr)
        lin = b.zext(self.thread_lin, ivec(64))
        host = b.select(flat, addr, b.add(b.add(bases, b.mul(lin, strides)), off))
        return b.inttoptr(host, VPTR)

    def _flat_check(self, addr: ir.Value, nbytes: int, bits: ir.Value) -> ir.Value:
        """The lanes (of ``bits``) whose flat address is in no allocation.  Fast path: every
        lane inside the allocation hit last (one vector compare); else the per-lane search."""
        b = self.b
        pre = b.block
        fn = b.function
        has_flat = fn.append_basic_block("flat")
        fast = fn.append_basic_block("flat.hint")
        slow = fn.append_basic_block("flat.search")
        join = fn.append_basic_block("flat.done")
        b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(i32, 0)), has_flat, join)
        b.position_at_end(has_flat)
        count = self.ctx_word(abi.CTX_FLAT_N)
        b.cbranch(b.icmp_unsigned("!=", count, ir.Constant(i64, 0)), fast, join)
        b.position_at_end(fast)
        hint = self.ctx_word(abi.CTX_FLAT_HINT)
        safe = b.select(b.icmp_unsigned("<", hint, count), hint, ir.Constant(i64, 0))
        start = b.load(b.gep(self.ctx_ptr(abi.CTX_FLAT_START), [safe], source_etype=i64), typ=i64)
        end = b.load(b.gep(self.ctx_ptr(abi.CTX_FLAT_END), [safe], source_etype=i64), typ=i64)
        last = b.add(addr, self.splat(nbytes, i64))
        inside = b.and_(b.and_(b.icmp_unsigned(">=", addr, self.splat_value(start)),
                               b.icmp_unsigned("<=", last, self.splat_value(end))),
                        b.icmp_unsigned(">=", last, addr))
        miss = b.and_(bits, b.not_(self.mask_to_i32(inside)))
        # lanes inside the allowed slack past the bytes asked for: the first such address is kept
        exact = b.load(b.gep(self.ctx_ptr(abi.CTX_FLAT_EXACT_END), [safe], source_etype=i64), typ=i64)
        over = b.and_(b.and_(bits, self.mask_to_i32(inside)),
                      self.mask_to_i32(b.icmp_unsigned(">", last, self.splat_value(exact))))
        with b.if_then(b.icmp_unsigned("!=", over, ir.Constant(i32, 0)), likely=False):
            slack_p = b.gep(self.ctx, [ir.Constant(i64, abi.CTX_FLAT_SLACK)], source_etype=i64)
            lane = b.call(self.intrinsic("llvm.cttz.i32", i32, [i32, i1]), [over, ir.Constant(i1, 0)])
            first = b.extract_element(addr, lane)
            old = b.load(slack_p, typ=i64)
            b.store(b.select(b.icmp_unsigned("==", old, ir.Constant(i64, 0)), first, old), slack_p)
        fast_end = b.block
        b.cbranch(b.icmp_unsigned("==", miss, ir.Constant(i32, 0)), join, slow)
        b.position_at_end(slow)
        ok = b.call(flat_lanes_function(self.module), [self.ctx, addr, ir.Constant(i64, nbytes), miss])
        bad_slow = b.and_(miss, b.not_(ok))
        slow_end = b.block
        b.branch(join)
        b.position_at_end(join)
        bad = b.phi(i32)
        bad.add_incoming(ir.Constant(i32, 0), pre)
        bad.add_incoming(bits, has_flat)
        bad.add_incoming(ir.Constant(i32, 0), fast_end)
        bad.add_incoming(bad_slow, slow_end)
        return bad

    def vector_pointers(self, base: ir.Value, idx: ir.Value, elem_bytes: int) -> ir.Value:
        """``base + idx * elem_bytes`` for every lane (``base`` a pointer, ``idx`` i64 lanes)."""
        b = self.b
        bi = self.splat_value(b.ptrtoint(base, i64))
        return b.inttoptr(b.add(bi, b.mul(idx, self.splat(elem_bytes, i64))), VPTR)

    def _gather64(self, table: ir.Value, idx: ir.Value, mask: ir.Value) -> ir.Value:
        b = self.b
        ptrs = self.vector_pointers(table, idx, 8)
        g = self.intrinsic("llvm.masked.gather.v32i64.v32p0", ivec(64), [VPTR, MASK, ivec(64)])
        return b.call(g, [ptrs, mask, self.splat(0, i64)])

    def _flat(self, e, base_word: int, size_word: int, off: ir.Value, n, mask, addr) -> ir.Value:
        b = self.b
        base = self.ctx_word(base_word)
        size = self.splat_value(self.ctx_word(size_word))
        self.error_if(e, b.and_(mask, b.icmp_unsigned(">", b.add(off, n), size)), abi.ERR_OUT_OF_BOUNDS, addr)
        return b.inttoptr(b.add(self.splat_value(base), off), VPTR)

    def _per_thread(self, e, base_word: int, size_word: int, addr: ir.Value, n, mask) -> ir.Value:
        b = self.b
        off = b.and_(addr, self.splat(abi.OFFSET_MASK, i64))
        base = self.ctx_word(base_word)
        stride = self.ctx_word(size_word)
        size = self.splat_value(stride)
        self.error_if(e, b.and_(mask, b.icmp_unsigned(">", b.add(off, n), size)), abi.ERR_OUT_OF_BOUNDS, addr)
        lin = b.zext(self.thread_lin, ivec(64))
        host = b.add(b.add(self.splat_value(base), b.mul(lin, self.splat_value(stride))), off)
        return b.inttoptr(host, VPTR)

    def mem_access(self, e: Emitter, space: str, addr: ir.Value, bits: int, mask: ir.Value, value: ir.Value | None, kind: str):
        b = self.b
        nbytes = max(bits, 8) // 8
        ptrs = self.translate(e, space, addr, nbytes, mask, kind)
        vt = ivec(max(bits, 8))
        align = ir.Constant(i32, 1)
        del align
        if value is None:
            g = self.intrinsic(f"llvm.masked.gather.v32i{vt.element.width}.v32p0", vt, [VPTR, MASK, vt])
            return b.call(g, [ptrs, mask, ir.Constant(vt, 0)])
        s = self.intrinsic(f"llvm.masked.scatter.v32i{vt.element.width}.v32p0", ir.VoidType(), [vt, VPTR, MASK])
        b.call(s, [value, ptrs, mask])
        return None

    # -- SIMT control --------------------------------------------------------------------

    def load_state(self) -> None:
        b = self.b
        self.cur_mask = b.alloca(i32, name="cur_mask")
        self.cur_rpc = b.alloca(i32, name="cur_rpc")

    def goto(self, target: int) -> None:
        """Continue at block ``target`` with the current entry (pop on reconvergence)."""
        b = self.b
        rpc = b.load(self.cur_rpc, typ=i32)
        hit = b.icmp_signed("==", rpc, ir.Constant(i32, target))
        b.cbranch(hit, self.pop_bb, self.block_bbs[target])

    def push(self, pc: int | ir.Value, rpc: ir.Value, mask: ir.Value) -> None:
        b = self.b
        top = self.ws_word(abi.WS_TOP)
        full = b.icmp_signed(">=", top, ir.Constant(i64, abi.STACK_DEPTH))
        with b.if_then(full, likely=False):
            self.set_ctx_word(abi.CTX_ERR_CODE, ir.Constant(i64, abi.ERR_STACK_OVERFLOW))
            self.set_ctx_word(abi.CTX_ERR_BLOCK, ir.Constant(i64, self.cur_block))
            self.set_ctx_word(abi.CTX_ERR_WARP, b.zext(self.warp, i64))
            self.ret(abi.RC_ERROR)
        base = b.add(ir.Constant(i64, abi.WS_STACK), b.mul(top, ir.Constant(i64, 3)))
        pcv = ir.Constant(i64, pc) if isinstance(pc, int) else b.sext(pc, i64)
        self.set_ws_word(base, pcv)
        self.set_ws_word(b.add(base, ir.Constant(i64, 1)), b.sext(rpc, i64))
        self.set_ws_word(b.add(base, ir.Constant(i64, 2)), b.zext(mask, i64))
        self.set_ws_word(abi.WS_TOP, b.add(top, ir.Constant(i64, 1)))

    def exit_lanes(self, lanes: ir.Value) -> None:
        """Lanes in ``lanes`` (i32 mask) leave the kernel: drop them everywhere."""
        b = self.b
        ex = self.ws_word(abi.WS_EXITED)
        self.set_ws_word(abi.WS_EXITED, b.or_(ex, b.zext(lanes, i64)))

    # -- generation -------------------------------------------------------------------

    def generate(self) -> ir.Function:
        prog = self.prog
        b = self.b
        self.load_state()
        self.load_stable_words()
        self.steps = b.alloca(i64, name="steps")
        b.store(self.ctx_word(abi.CTX_STEPS), self.steps)
        self.setup_lanes()
        self.loop_heads = _retreating_targets(prog.cfg)
        n = prog.num_blocks
        for i in range(n):
            self.block_bbs.append(self.fn.append_basic_block(f"b{i}"))
        self.pop_bb = self.fn.append_basic_block("pop")
        self.dispatch_bb = self.fn.append_basic_block("dispatch")
        self.start_bb = self.fn.append_basic_block("start")
        self.resume_bbs = [self.fn.append_basic_block(f"resume{k}") for k in range(len(prog.barriers))]
        # entry: resume point
        resume = b.trunc(self.ws_word(abi.WS_RESUME), i32)
        sw = b.switch(resume, self.start_bb)
        for k, rb in enumerate(self.resume_bbs):
            sw.add_case(ir.Constant(i32, k + 1), rb)
        # start: the whole warp at block 0
        b.position_at_end(self.start_bb)
        valid = self.mask_to_i32(self.valid)
        b.store(valid, self.cur_mask)
        b.store(ir.Constant(i32, -1), self.cur_rpc)
        self.set_ws_word(abi.WS_TOP, ir.Constant(i64, 0))
        self.set_ws_word(abi.WS_EXITED, ir.Constant(i64, 0))
        b.branch(self.block_bbs[0])
        # pop / dispatch
        b.position_at_end(self.pop_bb)
        top = self.ws_word(abi.WS_TOP)
        empty = b.icmp_signed("<=", top, ir.Constant(i64, 0))
        done_bb = self.fn.append_basic_block("warp_done")
        take_bb = self.fn.append_basic_block("pop_take")
        b.cbranch(empty, done_bb, take_bb)
        b.position_at_end(done_bb)
        self.ret(abi.RC_EXIT)
        b.position_at_end(take_bb)
        ntop = b.sub(top, ir.Constant(i64, 1))
        self.set_ws_word(abi.WS_TOP, ntop)
        base = b.add(ir.Constant(i64, abi.WS_STACK), b.mul(ntop, ir.Constant(i64, 3)))
        pc = b.trunc(self.ws_word(base), i32)
        rpc = b.trunc(self.ws_word(b.add(base, ir.Constant(i64, 1))), i32)
        mask = b.trunc(self.ws_word(b.add(base, ir.Constant(i64, 2))), i32)
        exited = b.trunc(self.ws_word(abi.WS_EXITED), i32)
        mask = b.and_(mask, b.not_(exited))
        b.store(mask, self.cur_mask)
        b.store(rpc, self.cur_rpc)
        # an empty entry, or one already at its reconvergence point (its lanes are in
        # the entry below, which waits there), has nothing to run
        isempty = b.or_(b.icmp_unsigned("==", mask, ir.Constant(i32, 0)), b.icmp_signed("==", pc, rpc))
        b.cbranch(isempty, self.pop_bb, self.dispatch_bb)
        b.position_at_end(self.dispatch_bb)
        dsw = b.switch(pc, self.pop_bb)
        for i in range(n):
            dsw.add_case(ir.Constant(i32, i), self.block_bbs[i])
        for i in range(n):
            self.gen_block(i)
        return self.fn

    def counter_add(self, index: int, value: ir.Value) -> None:
        b = self.b
        base = self.ctx_ptr(abi.CTX_COUNTERS)
        p = b.gep(base, [ir.Constant(i64, index)], source_etype=i64)
        b.store(b.add(b.load(p, typ=i64), value if value.type == i64 else b.zext(value, i64)), p)

    def gen_block(self, bi: int) -> None:
        prog = self.prog
        b = self.b
        self.cur_block = bi
        b.position_at_end(self.block_bbs[bi])
        self.active = self.i32_to_mask(b.load(self.cur_mask, typ=i32))
        self.local_values = {}
        # step budget: counted in every block, checked where loops close
        ninstr = len(prog.block_instrs[bi])
        steps = b.add(b.load(self.steps, typ=i64), ir.Constant(i64, ninstr))
        b.store(steps, self.steps)
        if bi in self.loop_heads:
            over = b.icmp_unsigned(">", steps, self.ctx_word(abi.CTX_BUDGET))
            with b.if_then(over, likely=False):
                self.set_ctx_word(abi.CTX_ERR_CODE, ir.Constant(i64, abi.ERR_STEP_BUDGET))
                self.set_ctx_word(abi.CTX_ERR_BLOCK, ir.Constant(i64, bi))
                self.set_ctx_word(abi.CTX_ERR_WARP, b.zext(self.warp, i64))
                self.ret(abi.RC_ERROR)
        self.counter_add(abi.BLOCK_COUNTERS * bi, ir.Constant(i64, 1))
        self.counter_add(abi.BLOCK_COUNTERS * bi + 1, self.popcount(self.active))
        n_instr = len(prog.block_instrs[bi])
        if n_instr:  # this warp slot's warp-instructions (load balance inside a CTA)
            wp = b.gep(self.ctx_ptr(abi.CTX_COUNTERS), [b.add(ir.Constant(i64, prog.warp_counter_base), b.zext(self.warp, i64))],
                       source_etype=i64)
            b.store(b.add(b.load(wp, typ=i64), ir.Constant(i64, n_instr)), wp)
        block = prog.cfg.blocks[bi]
        term = block.last_op
        for op in block.ops:
            if op is term:
                break
            if isinstance(op, InstructionOp):
                self.gen_instruction(op)
        self.gen_terminator(bi, term)

    def gen_instruction(self, op: InstructionOp) -> None:
        prog = self.prog
        k = prog.pred_counters.get(op)
        if k is not None:
            # lanes whose guard is true (counted whether or not the op is emulated)
            g = op.guard_pred
            gv = self.read(op.operands[0])
            lanes = self.b.and_(self.active, self.b.not_(gv) if g[1] else gv)
            self.counter_add(abi.BLOCK_COUNTERS * prog.num_blocks + k, self.popcount(lanes))
        m = prog.mem_ops.get(op)
        if m is not None:
            self.gen_memory_metrics(op, m)
        if op in prog.barriers:
            self.b.comment(instruction_text(op))
            self.gen_barrier(op)
            return
        if op.spec.name == "call" and _is_assertfail(op):
            # CUDA's assert(): the device runtime prints and traps.  Reaching the
            # call is a fact of control flow, so slice mode stops here as well.
            lanes = self.active
            if op.guard_pred is not None:
                gv = self.read(op.operands[0])
                lanes = self.b.and_(lanes, self.b.not_(gv) if op.guard_pred[1] else gv)
            self.error_if(Emitter(self, op), lanes, abi.ERR_ASSERT, None)
            return
        if op not in prog.emulated:
            return
        name = op.spec.name
        fn = RULES.get(name)
        e = Emitter(self, op)
        if name == "call":
            if _callee_name(op) == "vprintf":
                self.gen_printf(op, e)
            return  # inlined (or an external function the emulator skips)
        if fn is None:
            raise LoweringError(f"'{op.opcode}' has no emulator semantics yet")
        self.cross_lane = op.spec.kind in ("warp", "matrix")
        self.b.comment(instruction_text(op))  # `-t llvm` shows each PTX instruction's lowering
        try:
            fn(e)
        finally:
            self.cross_lane = False

    def gen_printf(self, op: InstructionOp, e: Emitter) -> None:
        """Device ``printf`` (``call vprintf, (fmt, args)``): each active lane, in lane order,
        hands the host addresses of its format and argument buffer to the callback in
        ``abi.CTX_PRINTF`` (none: the call is counted, nothing printed)."""
        from hypa.passes.inline import _call_params

        b = self.b
        argv = _call_params(op)[1]
        if len(argv) != 2 or any(a not in self.prog.call_params for a in argv):
            return
        lanes = self.active
        if op.guard_pred is not None:
            gv = self.read(op.operands[0])
            lanes = b.and_(lanes, b.not_(gv) if op.guard_pred[1] else gv)
        fn = self.ctx_word(abi.CTX_PRINTF)
        with b.if_then(b.icmp_unsigned("!=", fn, ir.Constant(i64, 0)), likely=False):
            words = [self.mem_access(e, "cparam", self.splat(self.prog.call_params[a].offset, i64), 64, lanes, None, "cparam")
                     for a in argv]
            fmt = b.ptrtoint(self.translate(e, "generic", words[0], 1, lanes, "ld"), ivec(64))
            has_args = b.and_(lanes, b.icmp_unsigned("!=", words[1], self.splat(0, i64)))
            args = b.ptrtoint(self.translate(e, "generic", words[1], 1, has_args, "ld"), ivec(64))
            args = b.select(has_args, args, self.splat(0, i64))
            b.call(printf_lanes_function(self.module), [self.ctx, fmt, args, self.mask_to_i32(lanes)])

    def gen_memory_metrics(self, op: InstructionOp, slot: int) -> None:
        """Requests, sectors and lines (global) or wavefronts (shared) of one warp-level access."""
        from hypa.passes.slice import _address_operand_index

        prog = self.prog
        b = self.b
        e = Emitter(self, op)
        name = op.spec.name
        if name == "cp.async":
            ai = 1
            nbytes = _imm_or(e, 2, 16)
        else:
            ai = _address_operand_index(op)
            if ai is None:
                return
            t = e.types[-1] if e.types else ".b32"
            width = next((int(m[2:]) for m in e.mods if m in (".v2", ".v4", ".v8")), 1)
            nbytes = max(1, isa.TYPE_BITS.get(t, 32) // 8) * width
        kind, addr, _base = e.address(ai)
        if kind in ("param", "cparam"):
            return
        space = "global" if name == "cp.async" else e.space()
        mask = e.exec_mask
        bits = self.mask_to_i32(mask)
        base = (abi.BLOCK_COUNTERS * prog.num_blocks + len(prog.pred_counters) + abi.MEM_COUNTERS * slot)
        any_active = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
        self.counter_add(base, b.zext(any_active, i64))
        if space == "generic":
            # classify by the window of the first active lane
            lane0 = b.call(self.intrinsic("llvm.cttz.i32", i32, [i32, i1]), [bits, ir.Constant(i1, 0)])
            a0 = b.extract_element(addr, b.and_(lane0, ir.Constant(i32, 31)))
            is_shared = b.icmp_unsigned("==", b.lshr(a0, ir.Constant(i64, abi.WINDOW_SHIFT)), ir.Constant(i64, abi.WIN_SHARED))
        else:
            is_shared = ir.Constant(i1, 1 if space.startswith("shared") else 0)
        distinct = self.helper_distinct()
        waves = self.helper_wavefronts()
        sectors = b.call(distinct, [b.lshr(addr, self.splat(5, i64)), bits])
        lines = b.call(distinct, [b.lshr(addr, self.splat(7, i64)), bits])
        shift = max(0, nbytes.bit_length() - 1)
        off = b.and_(addr, self.splat(0xFFFFFFFF, i64))
        chunks = b.lshr(off, self.splat(shift, i64))
        words = b.lshr(off, self.splat(2, i64))
        wv = b.call(waves, [chunks, words, bits, ir.Constant(i32, max(1, nbytes // 4))])
        uniq = b.call(distinct, [chunks, bits])
        ideal = b.udiv(b.add(b.mul(uniq, ir.Constant(i32, nbytes)), ir.Constant(i32, 127)), ir.Constant(i32, 128))
        ideal = b.select(any_active, b.select(b.icmp_unsigned("<", ideal, ir.Constant(i32, 1)), ir.Constant(i32, 1), ideal), ir.Constant(i32, 0))
        zero = ir.Constant(i32, 0)
        self.counter_add(base + 1, b.zext(b.select(is_shared, zero, sectors), i64))
        self.counter_add(base + 2, b.zext(b.select(is_shared, zero, lines), i64))
        self.counter_add(base + 3, b.zext(b.select(is_shared, wv, zero), i64))
        self.counter_add(base + 4, b.zext(b.select(is_shared, ideal, zero), i64))

    def helper_distinct(self) -> ir.Function:
        """``i32 hypa_distinct(<32 x i64> v, i32 mask)``: distinct values among the masked lanes."""
        f = self.module.globals.get("hypa_distinct")
        if f is not None:
            return f  # type: ignore[return-value]
        f = ir.Function(self.module, ir.FunctionType(i32, [ivec(64), i32]), "hypa_distinct")
        f.linkage = "internal"
        v, mask = f.args
        b = ir.IRBuilder(f.append_basic_block("entry"))
        cnt = b.alloca(i32)
        b.store(ir.Constant(i32, 0), cnt)
        loop = _Loop(f, b, ir.Constant(i32, 0), ir.Constant(i32, LANES), "i")
        i = loop.i
        on = b.trunc(b.lshr(mask, i), i1)
        with b.if_then(on):
            vi = b.extract_element(v, i)
            splat = b.shuffle_vector(b.insert_element(ir.Constant(ivec(64), None), vi, ir.Constant(i32, 0)),
                                     ir.Constant(ivec(64), None), ir.Constant(ivec(32), 0))
            eq = b.bitcast(b.icmp_unsigned("==", v, splat), i32)
            below = b.sub(b.shl(ir.Constant(i32, 1), i), ir.Constant(i32, 1))
            earlier = b.and_(b.and_(eq, mask), below)
            first = b.icmp_unsigned("==", earlier, ir.Constant(i32, 0))
            b.store(b.add(b.load(cnt, typ=i32), b.zext(first, i32)), cnt)
        loop.close()
        b.ret(b.load(cnt, typ=i32))
        return f

    def helper_wavefronts(self) -> ir.Function:
        """``i32 hypa_wavefronts(<32 x i64> chunk, <32 x i64> word, i32 mask, i32 words)``:
        shared-memory wavefronts of a warp access: the most distinct 4-byte words any of
        the 32 banks must deliver (lanes reading the same chunk share it)."""
        f = self.module.globals.get("hypa_wavefronts")
        if f is not None:
            return f  # type: ignore[return-value]
        f = ir.Function(self.module, ir.FunctionType(i32, [ivec(64), ivec(64), i32, i32]), "hypa_wavefronts")
        f.linkage = "internal"
        chunk, word, mask, nwords = f.args
        b = ir.IRBuilder(f.append_basic_block("entry"))
        counts = b.alloca(i32, size=ir.Constant(i32, LANES))

        def slot(k):
            return b.gep(counts, [k if isinstance(k, ir.Value) else ir.Constant(i32, k)], source_etype=i32)

        for k in range(LANES):
            b.store(ir.Constant(i32, 0), slot(k))
        loop = _Loop(f, b, ir.Constant(i32, 0), ir.Constant(i32, LANES), "i")
        i = loop.i
        on = b.trunc(b.lshr(mask, i), i1)
        with b.if_then(on):
            ci = b.extract_element(chunk, i)
            splat = b.shuffle_vector(b.insert_element(ir.Constant(ivec(64), None), ci, ir.Constant(i32, 0)),
                                     ir.Constant(ivec(64), None), ir.Constant(ivec(32), 0))
            eq = b.bitcast(b.icmp_unsigned("==", chunk, splat), i32)
            below = b.sub(b.shl(ir.Constant(i32, 1), i), ir.Constant(i32, 1))
            first = b.icmp_unsigned("==", b.and_(b.and_(eq, mask), below), ir.Constant(i32, 0))
            with b.if_then(first):
                w0 = b.trunc(b.extract_element(word, i), i32)
                inner = _Loop(f, b, ir.Constant(i32, 0), nwords, "j")
                bank = b.and_(b.add(w0, inner.i), ir.Constant(i32, 31))
                p = slot(bank)
                b.store(b.add(b.load(p, typ=i32), ir.Constant(i32, 1)), p)
                inner.close()
        loop.close()
        mx = ir.Constant(i32, 0)
        for k in range(LANES):
            c = b.load(slot(k), typ=i32)
            mx = b.select(b.icmp_unsigned(">", c, mx), c, mx)
        b.ret(mx)
        return f

    def gen_barrier(self, op: InstructionOp) -> None:
        """Suspend the warp here; the scheduler resumes it when the barrier releases."""
        from .semantics.sync import barrier_suspend, barrier_resume

        b = self.b
        k = self.barrier_index[op]
        e = Emitter(self, op)
        barrier_suspend(e)
        b.store(self.mask_to_i32(self.active), self.cur_mask)
        self.set_ws_word(abi.WS_MASK, b.zext(b.load(self.cur_mask, typ=i32), i64))
        self.set_ws_word(abi.WS_RPC, b.sext(b.load(self.cur_rpc, typ=i32), i64))
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, k + 1))
        self.ret(abi.RC_BARRIER)
        b.position_at_end(self.resume_bbs[k])
        self.local_values = {}
        b.store(b.trunc(self.ws_word(abi.WS_MASK), i32), self.cur_mask)
        b.store(b.trunc(self.ws_word(abi.WS_RPC), i32), self.cur_rpc)
        self.set_ws_word(abi.WS_RESUME, ir.Constant(i64, 0))
        self.active = self.i32_to_mask(b.load(self.cur_mask, typ=i32))
        e = Emitter(self, op)
        barrier_resume(e)

    # -- terminators ---------------------------------------------------------------

    def edge_writes(self, bi: int, slot: int, succ_block, mask: ir.Value) -> None:
        prog = self.prog
        term = prog.cfg.blocks[bi].last_op
        if isinstance(term, FallthroughOp):
            vals = list(term.operands)
        elif isinstance(term, InstructionOp):
            vals = list(term.successor_operands(slot))
        else:
            vals = []
        for a, v in zip(succ_block.args, vals):
            if a in prog.emulated_args:
                self.write(a, self.read(v), mask, blend=True)

    def gen_terminator(self, bi: int, term) -> None:
        prog = self.prog
        b = self.b
        if isinstance(term, InstructionOp):
            b.comment(instruction_text(term))
        cfg = prog.cfg
        active = self.active
        if isinstance(term, FallthroughOp):
            s = term.successors[0]
            self.edge_writes(bi, 0, s, active)
            self.goto(cfg.index[s])
            return
        if isinstance(term, ImplicitReturnOp):
            self.exit_lanes(self.mask_to_i32(active))
            b.branch(self.pop_bb)
            return
        assert isinstance(term, InstructionOp)
        name = term.spec.name
        g = term.guard_pred
        cond = None
        if g is not None:
            gv = self.read(term.operands[0])
            cond = b.not_(gv) if g[1] else gv
        if name == "bra" or (name == "ret" and "hypa.return" in term.attributes):
            is_branch = name == "bra"
            taken = term.successors[0]
            ti = cfg.index[taken]
            if is_branch:
                self.counter_add(abi.BLOCK_COUNTERS * bi + 2, ir.Constant(i64, 0))
            if cond is None:
                self.edge_writes(bi, 0, taken, active)
                self.goto(ti)
                return
            fall = term.successors[-1]
            fi = cfg.index[fall]
            tmask = b.and_(active, cond)
            fmask = b.and_(active, b.not_(cond))
            self.counter_add(abi.BLOCK_COUNTERS * bi + 3, self.popcount(tmask))
            self.edge_writes(bi, 0, taken, tmask)
            self.edge_writes(bi, len(term.successors) - 1, fall, fmask)
            self.gen_two_way(bi, ti, tmask, fi, fmask, is_branch)
            return
        if name == "brx.idx":
            self.gen_brx(bi, term, cond)
            return
        if name in ("ret", "exit"):
            lanes = active if cond is None else b.and_(active, cond)
            self.exit_lanes(self.mask_to_i32(lanes))
            if cond is None:
                b.branch(self.pop_bb)
                return
            rest = b.and_(active, b.not_(cond))
            b.store(self.mask_to_i32(rest), self.cur_mask)
            fall = term.successors[-1]
            self.edge_writes(bi, 0, fall, rest)
            none_left = b.icmp_unsigned("==", self.mask_to_i32(rest), ir.Constant(i32, 0))
            cont = self.fn.append_basic_block(f"b{bi}_cont")
            b.cbranch(none_left, self.pop_bb, cont)
            b.position_at_end(cont)
            self.goto(cfg.index[fall])
            return
        if name == "trap":
            lanes = active if cond is None else b.and_(active, cond)
            self.error_if(None, lanes, abi.ERR_TRAP, None, bi)
            if cond is None:
                b.branch(self.pop_bb)
            else:
                self.goto(cfg.index[term.successors[-1]])
            return
        raise LoweringError(f"unexpected terminator '{term.opcode}'")

    def gen_two_way(self, bi: int, ti: int, tmask: ir.Value, fi: int, fmask: ir.Value, count_branch: bool) -> None:
        b = self.b
        tbits = self.mask_to_i32(tmask)
        fbits = self.mask_to_i32(fmask)
        zero = ir.Constant(i32, 0)
        t_none = b.icmp_unsigned("==", tbits, zero)
        f_none = b.icmp_unsigned("==", fbits, zero)
        all_t = self.fn.append_basic_block(f"b{bi}_taken")
        not_all_t = self.fn.append_basic_block(f"b{bi}_nt")
        b.cbranch(f_none, all_t, not_all_t)
        b.position_at_end(all_t)
        self.goto(ti)
        b.position_at_end(not_all_t)
        all_f = self.fn.append_basic_block(f"b{bi}_fall")
        div = self.fn.append_basic_block(f"b{bi}_diverge")
        b.cbranch(t_none, all_f, div)
        b.position_at_end(all_f)
        self.goto(fi)
        b.position_at_end(div)
        if ti == fi:
            self.goto(ti)
            return
        if count_branch:
            self.counter_add(abi.BLOCK_COUNTERS * bi + 2, ir.Constant(i64, 1))
        r = reconvergence(self.prog, bi)
        cur_rpc = b.load(self.cur_rpc, typ=i32)
        cur_mask = b.load(self.cur_mask, typ=i32)
        if r >= 0:
            # an entry already waiting at r (a loop that keeps diverging) needs no twin
            need = b.icmp_signed("!=", cur_rpc, ir.Constant(i32, r))
            with b.if_then(need):
                self.push(r, cur_rpc, cur_mask)
            new_rpc = ir.Constant(i32, r)
        else:
            new_rpc = cur_rpc
        # a path whose target is the reconvergence point just waits there
        if fi == r:
            b.store(new_rpc, self.cur_rpc)
            b.store(tbits, self.cur_mask)
            self.goto(ti)
            return
        if ti == r:
            b.store(new_rpc, self.cur_rpc)
            b.store(fbits, self.cur_mask)
            self.goto(fi)
            return
        self.push(fi, new_rpc, fbits)
        b.store(new_rpc, self.cur_rpc)
        b.store(tbits, self.cur_mask)
        self.goto(ti)

    def gen_brx(self, bi: int, term: InstructionOp, cond: ir.Value | None) -> None:
        b = self.b
        prog = self.prog
        cfg = prog.cfg
        e = Emitter(self, term)
        idx = e.src(0, 32)
        nt = len(term.successors) - (1 if cond is not None else 0)
        active = self.active
        go = active if cond is None else b.and_(active, cond)
        bad = b.and_(go, b.icmp_unsigned(">=", idx, self.splat(nt, i32)))
        self.error_if(e, bad, abi.ERR_BAD_BRANCH_INDEX, b.zext(idx, ivec(64)))
        groups: list[tuple[int, ir.Value]] = []
        for k in range(nt):
            m = b.and_(go, b.icmp_unsigned("==", idx, self.splat(k, i32)))
            groups.append((cfg.index[term.successors[k]], m))
            self.edge_writes(bi, k, term.successors[k], m)
        if cond is not None:
            fm = b.and_(active, b.not_(cond))
            groups.append((cfg.index[term.successors[-1]], fm))
            self.edge_writes(bi, len(term.successors) - 1, term.successors[-1], fm)
        # how many distinct groups are non-empty
        nonempty = ir.Constant(i32, 0)
        for _t, m in groups:
            nz = b.icmp_unsigned("!=", self.mask_to_i32(m), ir.Constant(i32, 0))
            nonempty = b.add(nonempty, b.zext(nz, i32))
        divergent = b.icmp_unsigned(">", nonempty, ir.Constant(i32, 1))
        self.counter_add(abi.BLOCK_COUNTERS * bi + 2, b.zext(divergent, i64))
        r = reconvergence(prog, bi)
        cur_rpc = b.load(self.cur_rpc, typ=i32)
        cur_mask = b.load(self.cur_mask, typ=i32)
        div_bb = self.fn.append_basic_block(f"b{bi}_brx_div")
        uni_bb = self.fn.append_basic_block(f"b{bi}_brx_uni")
        b.cbranch(divergent, div_bb, uni_bb)
        # uniform: jump to the one non-empty group
        b.position_at_end(uni_bb)
        for k, (t, m) in enumerate(groups):
            nz = b.icmp_unsigned("!=", self.mask_to_i32(m), ir.Constant(i32, 0))
            nxt = self.fn.append_basic_block(f"b{bi}_brx_u{k}")
            hit = self.fn.append_basic_block(f"b{bi}_brx_h{k}")
            b.cbranch(nz, hit, nxt)
            b.position_at_end(hit)
            self.goto(t)
            b.position_at_end(nxt)
        b.branch(self.pop_bb)
        # divergent: reconvergence entry, then one entry per non-empty group
        b.position_at_end(div_bb)
        if r >= 0:
            # as in gen_two_way: an entry already waiting at r needs no twin (the
            # twin would run block r once more, before the real reconvergence)
            need = b.icmp_signed("!=", cur_rpc, ir.Constant(i32, r))
            with b.if_then(need):
                self.push(r, cur_rpc, cur_mask)
            new_rpc = ir.Constant(i32, r)
        else:
            new_rpc = cur_rpc
        for t, m in groups:
            if t == r:
                continue  # lanes that jump straight to r wait in the reconvergence entry
            bits = self.mask_to_i32(m)
            nz = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
            with b.if_then(nz):
                self.push(t, new_rpc, bits)
        b.store(new_rpc, self.cur_rpc)
        b.branch(self.pop_bb)


# ---------------------------------------------------------------------------
# The CTA scheduler
# ---------------------------------------------------------------------------


class _Loop:
    """``for i in range(start, stop)`` in IR; body runs with ``self.i``."""

    def __init__(self, fn: ir.Function, b: ir.IRBuilder, start: ir.Value, stop: ir.Value, name: str):
        self.fn, self.b = fn, b
        self.head = fn.append_basic_block(name + "_head")
        self.body = fn.append_basic_block(name + "_body")
        self.exit = fn.append_basic_block(name + "_exit")
        pre = b.block
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(start.type, name=name)
        self.i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", self.i, stop), self.body, self.exit)
        b.position_at_end(self.body)

    def close(self) -> None:
        b = self.b
        nxt = b.add(self.i, ir.Constant(self.i.type, 1))
        self.i.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)


def build_scheduler(module: ir.Module, warp_run: ir.Function) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(i32, [ptr, i64, i64]), "run_ctas")
    ctx, first, last = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    memset = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, i8, i64, i1]), "llvm.memset.p0.i64")

    def cw(i: int | ir.Value) -> ir.Value:
        idx = ir.Constant(i64, i) if isinstance(i, int) else i
        return b.gep(ctx, [idx], source_etype=i64)

    def ld(p):
        return b.load(p, typ=i64)

    nwarps = ld(cw(abi.CTX_NWARPS))
    ws_stride = ld(cw(abi.CTX_WS_STRIDE))
    ws_base = b.inttoptr(ld(cw(abi.CTX_WS)), ptr)
    nx = ld(cw(abi.CTX_NCTAID))
    ny = ld(cw(abi.CTX_NCTAID + 1))

    def ws_of(w: ir.Value) -> ir.Value:
        return b.gep(ws_base, [b.mul(w, ws_stride)], source_etype=i8)

    def wsw(w: ir.Value, k: int) -> ir.Value:
        return b.gep(ws_of(w), [ir.Constant(i64, k)], source_etype=i64)

    cta_loop = _Loop(fn, b, first, last, "cta")
    cta = cta_loop.i
    b.store(b.urem(cta, nx), cw(abi.CTX_CTAID))
    q = b.udiv(cta, nx)
    b.store(b.urem(q, ny), cw(abi.CTX_CTAID + 1))
    b.store(b.udiv(q, ny), cw(abi.CTX_CTAID + 2))
    b.store(cta, cw(abi.CTX_CTA_LINEAR))
    # the step budget holds for the launch, not only inside loops: a loop-free kernel on a
    # huge grid stops at the first CTA that starts with the budget spent
    over = b.icmp_unsigned(">", ld(cw(abi.CTX_STEPS)), ld(cw(abi.CTX_BUDGET)))
    with b.if_then(over, likely=False):
        b.store(ir.Constant(i64, abi.ERR_STEP_BUDGET), cw(abi.CTX_ERR_CODE))
        b.store(ir.Constant(i64, -1), cw(abi.CTX_ERR_BLOCK))
        b.store(ir.Constant(i64, 0), cw(abi.CTX_ERR_WARP))
        b.store(ir.Constant(i64, 0), cw(abi.CTX_ERR_LANE))
        b.ret(ir.Constant(i32, abi.RC_ERROR))
    zero8 = ir.Constant(i8, 0)
    f = ir.Constant(i1, 0)
    nthreads = ld(cw(abi.CTX_NTHREADS))
    b.call(memset, [b.inttoptr(ld(cw(abi.CTX_SHARED)), ptr), zero8, ld(cw(abi.CTX_SHARED_SIZE)), f])
    b.call(memset, [b.inttoptr(ld(cw(abi.CTX_LOCAL)), ptr), zero8, b.mul(nthreads, ld(cw(abi.CTX_LOCAL_SIZE))), f])
    b.call(memset, [b.inttoptr(ld(cw(abi.CTX_CPARAM)), ptr), zero8, b.mul(nthreads, ld(cw(abi.CTX_CPARAM_SIZE))), f])
    b.call(memset, [ws_base, zero8, b.mul(nwarps, ws_stride), f])
    b.call(memset, [b.gep(ctx, [ir.Constant(i64, abi.CTX_BAR)], source_etype=i64), zero8,
                    ir.Constant(i64, 8 * abi.NUM_BARRIERS * abi.BAR_WORDS), f])
    done_slot = b.alloca(i64, name="done")
    released = b.alloca(i64, name="released")
    b.store(ir.Constant(i64, 0), done_slot)
    round_head = fn.append_basic_block("round")
    b.branch(round_head)
    b.position_at_end(round_head)
    wl = _Loop(fn, b, ir.Constant(i64, 0), nwarps, "w")
    w = wl.i
    status = ld(wsw(w, abi.WS_STATUS))
    ready = b.icmp_signed("==", status, ir.Constant(i64, 0))
    with b.if_then(ready):
        rc = b.call(warp_run, [ws_of(w), ctx, b.trunc(w, i32)])
        is_exit = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_EXIT))
        is_bar = b.icmp_signed("==", rc, ir.Constant(i32, abi.RC_BARRIER))
        with b.if_else(is_exit) as (then, otherwise):
            with then:
                b.store(ir.Constant(i64, 2), wsw(w, abi.WS_STATUS))
                b.store(b.add(b.load(done_slot, typ=i64), ir.Constant(i64, 1)), done_slot)
            with otherwise:
                with b.if_else(is_bar) as (t2, o2):
                    with t2:
                        b.store(ir.Constant(i64, 1), wsw(w, abi.WS_STATUS))
                        bid = ld(wsw(w, abi.WS_BAR_ID))
                        bw = b.add(ir.Constant(i64, abi.CTX_BAR), b.mul(bid, ir.Constant(i64, abi.BAR_WORDS)))
                        wp = cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING)))
                        b.store(b.add(ld(wp), ir.Constant(i64, 1)), wp)
                        b.store(ld(wsw(w, abi.WS_BAR_EXPECT)), cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
                    with o2:
                        b.store(cta, cw(abi.CTX_ERR_CTA))
                        b.ret(ir.Constant(i32, abi.RC_ERROR))
    wl.close()
    done = b.load(done_slot, typ=i64)
    all_done = b.icmp_signed(">=", done, nwarps)
    release_bb = fn.append_basic_block("release")
    next_cta_bb = fn.append_basic_block("next_cta")
    b.cbranch(all_done, next_cta_bb, release_bb)
    b.position_at_end(release_bb)
    b.store(ir.Constant(i64, 0), released)
    live = b.sub(nwarps, done)
    bl = _Loop(fn, b, ir.Constant(i64, 0), ir.Constant(i64, abi.NUM_BARRIERS), "bar")
    bid = bl.i
    bw = b.add(ir.Constant(i64, abi.CTX_BAR), b.mul(bid, ir.Constant(i64, abi.BAR_WORDS)))
    waiting = ld(cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING))))
    arrived = ld(cw(b.add(bw, ir.Constant(i64, abi.BAR_ARRIVED))))
    expected = ld(cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
    expected = b.select(b.icmp_signed("==", expected, ir.Constant(i64, 0)), live, expected)
    go = b.and_(b.icmp_signed(">", waiting, ir.Constant(i64, 0)),
                b.icmp_signed(">=", b.add(waiting, arrived), expected))
    with b.if_then(go):
        rl = _Loop(fn, b, ir.Constant(i64, 0), nwarps, "rel")
        w2 = rl.i
        st = ld(wsw(w2, abi.WS_STATUS))
        mine = b.and_(b.icmp_signed("==", st, ir.Constant(i64, 1)),
                      b.icmp_signed("==", ld(wsw(w2, abi.WS_BAR_ID)), bid))
        with b.if_then(mine):
            b.store(ir.Constant(i64, 0), wsw(w2, abi.WS_STATUS))
        rl.close()
        for src_w, dst_w in ((abi.BAR_PART, abi.BAR_RES_PART), (abi.BAR_TRUE, abi.BAR_RES_TRUE)):
            sp = cw(b.add(bw, ir.Constant(i64, src_w)))
            b.store(ld(sp), cw(b.add(bw, ir.Constant(i64, dst_w))))
            b.store(ir.Constant(i64, 0), sp)
        left = b.sub(b.add(waiting, arrived), expected)
        b.store(b.select(b.icmp_signed(">", left, ir.Constant(i64, 0)), left, ir.Constant(i64, 0)),
                cw(b.add(bw, ir.Constant(i64, abi.BAR_ARRIVED))))
        b.store(ir.Constant(i64, 0), cw(b.add(bw, ir.Constant(i64, abi.BAR_WAITING))))
        b.store(ir.Constant(i64, 0), cw(b.add(bw, ir.Constant(i64, abi.BAR_EXPECTED))))
        b.store(b.add(b.load(released, typ=i64), waiting), released)
    bl.close()
    stuck = b.icmp_signed("==", b.load(released, typ=i64), ir.Constant(i64, 0))
    with b.if_then(stuck, likely=False):
        b.store(ir.Constant(i64, abi.ERR_DEADLOCK), cw(abi.CTX_ERR_CODE))
        b.store(cta, cw(abi.CTX_ERR_CTA))
        b.ret(ir.Constant(i32, abi.RC_ERROR))
    b.branch(round_head)
    b.position_at_end(next_cta_bb)
    cta_loop.close()
    b.ret(ir.Constant(i32, abi.RC_EXIT))
    return fn


def _imm_or(e: Emitter, k: int, default: int) -> int:
    from hypa.ptxdialect.operands import parse_int_immediate

    if k < len(e.args) and e.args[k][0] == "imm":
        return parse_int_immediate(e.args[k][1])
    return default


def _retreating_targets(cfg) -> set[int]:
    """Targets of retreating edges (every cycle has one): where the step budget is checked."""
    n = len(cfg)
    state = [0] * n
    out: set[int] = set()
    if not n:
        return out
    stack = [(0, 0)]
    state[0] = 1
    while stack:
        b, k = stack[-1]
        if k < len(cfg.succs[b]):
            stack[-1] = (b, k + 1)
            s = cfg.succs[b][k]
            if state[s] == 0:
                state[s] = 1
                stack.append((s, 0))
            elif state[s] == 1:
                out.add(s)
        else:
            state[b] = 2
            stack.pop()
    # blocks unreachable from the entry are checked too
    out.update(i for i in range(n) if state[i] == 0)
    return out


def build_module(prog: KernelProgram) -> ir.Module:
    import llvmlite.binding as llvm

    module = ir.Module(name=f"hypa_{prog.func.func_name}")
    module.triple = llvm.get_process_triple()
    wg = WarpCodegen(prog, module)
    wr = wg.generate()
    build_scheduler(module, wr)
    return module

def _cttz(module: ir.Module) -> ir.Function:
    """``llvm.cttz.i32``, declared once per module (WarpCodegen.intrinsic declares it the same way)."""
    return module.globals.get("llvm.cttz.i32") or ir.Function(module, ir.FunctionType(i32, [i32, i1]), "llvm.cttz.i32")


def flat_lanes_function(module: ir.Module) -> ir.Function:
    """``i32 hypa_flat_lanes(ctx, <32 x i64> addr, i64 n, i32 lanes)``: the lanes (bits)
    whose ``[addr, addr + n)`` lies inside one range of the flat table (abi.CTX_FLAT_*).
    Made once per module; the last range hit is tried first."""
    name = "hypa_flat_lanes"
    f = module.globals.get(name)
    if f is not None:
        return f
    f = ir.Function(module, ir.FunctionType(i32, [ptr, ivec(64), i64, i32]), name)
    f.linkage = "internal"
    ctx, addrs, n, lanes = f.args
    entry = f.append_basic_block("entry")
    loop = f.append_basic_block("lane")
    search = f.append_basic_block("search")
    bs_head = f.append_basic_block("bs_head")
    bs_body = f.append_basic_block("bs_body")
    bs_done = f.append_basic_block("bs_done")
    found = f.append_basic_block("found")
    nxt = f.append_basic_block("next")
    done = f.append_basic_block("done")
    b = ir.IRBuilder(entry)

    def word(k):
        return b.load(b.gep(ctx, [ir.Constant(i64, k)], source_etype=i64), typ=i64)

    starts = b.inttoptr(word(abi.CTX_FLAT_START), ptr)
    ends = b.inttoptr(word(abi.CTX_FLAT_END), ptr)
    count = word(abi.CTX_FLAT_N)
    hint_p = b.gep(ctx, [ir.Constant(i64, abi.CTX_FLAT_HINT)], source_etype=i64)
    with b.if_then(b.icmp_unsigned("==", count, ir.Constant(i64, 0))):
        b.ret(ir.Constant(i32, 0))  # no flat memory: no lane is valid
    start_block = b.block
    b.branch(loop)
    # for each lane set in `lanes`
    b.position_at_end(loop)
    rem = b.phi(i32)
    ok = b.phi(i32)
    rem.add_incoming(lanes, start_block)
    ok.add_incoming(ir.Constant(i32, 0), start_block)
    more = b.icmp_unsigned("!=", rem, ir.Constant(i32, 0))
    b.cbranch(more, search, done)
    b.position_at_end(search)
    lane = b.call(_cttz(module), [rem, ir.Constant(i1, 0)])
    a = b.extract_element(addrs, lane)
    end = b.add(a, n)
    no_wrap = b.icmp_unsigned(">=", end, a)
    hint = b.load(hint_p, typ=i64)
    hint_ok = b.icmp_unsigned("<", hint, count)
    safe_hint = b.select(hint_ok, hint, ir.Constant(i64, 0))
    hs = b.load(b.gep(starts, [safe_hint], source_etype=i64), typ=i64)
    he = b.load(b.gep(ends, [safe_hint], source_etype=i64), typ=i64)
    in_hint = b.and_(b.and_(hint_ok, no_wrap), b.and_(b.icmp_unsigned("<=", hs, a), b.icmp_unsigned("<=", end, he)))
    b.cbranch(in_hint, found, bs_head)
    # binary search: the last range whose start <= a
    b.position_at_end(bs_head)
    lo = b.phi(i64)
    hi = b.phi(i64)
    lo.add_incoming(ir.Constant(i64, 0), search)
    hi.add_incoming(count, search)
    b.cbranch(b.icmp_unsigned("<", lo, hi), bs_body, bs_done)
    b.position_at_end(bs_body)
    mid = b.lshr(b.add(lo, hi), ir.Constant(i64, 1))
    ms = b.load(b.gep(starts, [mid], source_etype=i64), typ=i64)
    le = b.icmp_unsigned("<=", ms, a)
    lo.add_incoming(b.select(le, b.add(mid, ir.Constant(i64, 1)), lo), bs_body)
    hi.add_incoming(b.select(le, hi, mid), bs_body)
    b.branch(bs_head)
    b.position_at_end(bs_done)
    k = b.sub(lo, ir.Constant(i64, 1))
    has = b.icmp_unsigned("!=", lo, ir.Constant(i64, 0))
    safe_k = b.select(has, k, ir.Constant(i64, 0))
    ke = b.load(b.gep(ends, [safe_k], source_etype=i64), typ=i64)
    hit = b.and_(b.and_(has, no_wrap), b.icmp_unsigned("<=", end, ke))
    with b.if_then(hit):
        b.store(safe_k, hint_p)
    miss_from = b.block
    b.cbranch(hit, found, nxt)
    b.position_at_end(found)
    k_found = b.phi(i64)
    k_found.add_incoming(safe_hint, search)
    k_found.add_incoming(safe_k, miss_from)
    exact = b.load(b.gep(b.inttoptr(word(abi.CTX_FLAT_EXACT_END), ptr), [k_found], source_etype=i64), typ=i64)
    slack_p = b.gep(ctx, [ir.Constant(i64, abi.CTX_FLAT_SLACK)], source_etype=i64)
    with b.if_then(b.and_(b.icmp_unsigned(">", end, exact), b.icmp_unsigned("==", b.load(slack_p, typ=i64), ir.Constant(i64, 0))),
                   likely=False):
        b.store(a, slack_p)
    bit = b.shl(ir.Constant(i32, 1), lane)
    ok_found = b.or_(ok, bit)
    found_end = b.block
    b.branch(nxt)
    b.position_at_end(nxt)
    ok2 = b.phi(i32)
    ok2.add_incoming(ok_found, found_end)
    ok2.add_incoming(ok, miss_from)
    rem2 = b.and_(rem, b.sub(rem, ir.Constant(i32, 1)))
    rem.add_incoming(rem2, nxt)
    ok.add_incoming(ok2, nxt)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(ok)
    return f


def printf_lanes_function(module: ir.Module) -> ir.Function:
    """``void hypa_printf_lanes(ctx, <32 x i64> fmt, <32 x i64> args, i32 lanes)``: calls
    ``ctx[CTX_PRINTF](ctx, fmt, args)`` for each lane set, lowest first."""
    name = "hypa_printf_lanes"
    f = module.globals.get(name)
    if f is not None:
        return f
    f = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ivec(64), ivec(64), i32]), name)
    f.linkage = "internal"
    ctx, fmts, argss, lanes = f.args
    entry = f.append_basic_block("entry")
    loop = f.append_basic_block("lane")
    body = f.append_basic_block("call")
    done = f.append_basic_block("done")
    b = ir.IRBuilder(entry)
    fnp = b.load(b.gep(ctx, [ir.Constant(i64, abi.CTX_PRINTF)], source_etype=i64), typ=i64)
    b.branch(loop)
    b.position_at_end(loop)
    rem = b.phi(i32)
    rem.add_incoming(lanes, entry)
    b.cbranch(b.icmp_unsigned("!=", rem, ir.Constant(i32, 0)), body, done)
    b.position_at_end(body)
    lane = b.call(_cttz(module), [rem, ir.Constant(i1, 0)])
    cb = b.inttoptr(fnp, ir.FunctionType(ir.VoidType(), [i64, i64, i64]).as_pointer())
    b.call(cb, [b.ptrtoint(ctx, i64), b.extract_element(fmts, lane), b.extract_element(argss, lane)])
    rem.add_incoming(b.and_(rem, b.sub(rem, ir.Constant(i32, 1))), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return f


def _callee_name(call: InstructionOp) -> str | None:
    from hypa.passes.inline import _callee_name as callee

    return callee(call)[0]


def _is_assertfail(call: InstructionOp) -> bool:
    return _callee_name(call) == "__assertfail"
