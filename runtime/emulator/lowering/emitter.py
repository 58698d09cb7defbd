"""The ``Emitter``: what a lowering rule sees of one instruction.

A rule (``semantics/``) reads operands by their textual position (``src``,
``src_pred``, ``src_elements``, ``address``), writes results (``dst``,
``dst_pair``, ``dst_elements``: merged by the guard and the active lanes), and
reaches memory through ``load``/``store``/``host_pointers``, which translate
and bounds-check addresses (``addressing.py``).  The emitter maps the
instruction's registers to the SSA values of the frame once, when it is made.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import SSAValue

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import InstructionOp, RegType, def_positions, keeps_old_values
from hypa.ptxdialect.operands import Operand, is_float_immediate, leaves, parse_int_immediate

from ..program import value_bits
from . import initcheck
from .addressing import access, check_alignment, host_pointers
from .function import WarpFunction
from .rules import LoweringError
from .types import MASK, float_imm_bits, i1, i64, ivec


def vector_shape(v: SSAValue) -> tuple[int, int] | None:
    """(elements, bits of each) of a vector register's SSA value (``!ptx.reg<"v2.u32">``:
    one value of 64 bits, element 0 in the low bits), or None for a scalar."""
    t = v.type
    if isinstance(t, RegType):
        vt = isa.VECTOR_REG_TYPES.get("." + t.type_name)
        if vt is not None:
            return vt[0], isa.TYPE_BITS[vt[1]]
    return None


#: the node standing for each register of ``iter_regs(node)``, in the same order: the
#: register itself, its element ``v.x`` or ``reg + imm``
_REGISTER_NODES = frozenset(["reg", "elem", "radd"])


class Emitter:
    """What an instruction rule sees: operands by textual position, results,
    the active lanes and the guard, and helpers for memory and intrinsics."""

    def __init__(self, wf: WarpFunction, op: InstructionOp):
        self.wf = wf
        self.b: ir.IRBuilder = wf.b
        self.op = op
        self.spec = op.spec
        self.mods = op.modifiers
        self.types = isa.type_modifiers(self.mods)
        self.args = op.operands_ast
        self.instr_id = wf.prog.instr_ids[op]
        self._map_registers()
        self.active: ir.Value = wf.active
        self.guard: ir.Value | None = wf.guard_lanes(op)
        self.exec_mask = self.active if self.guard is None else self.b.and_(self.active, self.guard)

    # -- register mapping -----------------------------------------------------

    def _map_registers(self) -> None:
        """``slot_of[k]``: the (role, SSA value, node) of each register in operand ``k`` (node:
        the register, its element ``v.x`` or ``reg + imm``); ``tied``: the old values of the
        results of a guarded op or one that writes a vector element; ``cc_in``/``cc_out``:
        the carry flag."""
        op = self.op
        _uses, defs = op.register_roles()
        ops = op.instruction_operands()
        res = op.results
        # textual traversal: the same order register_roles uses
        dpos = def_positions(self.spec, self.mods, self.args)
        ui = 1 if op.guard_pred is not None else 0
        di = 0
        self.slot_of: list[list[tuple[str, SSAValue, Operand]]] = []
        #: an ``inout`` entry's first operand: the values its registers hold before it runs
        self.inout_uses: list[SSAValue] = []
        for k, a in enumerate(self.args):
            items: list[tuple[str, SSAValue, Operand]] = []
            for node in leaves(a, _REGISTER_NODES):
                if k in dpos:
                    items.append(("def", res[di], node))
                    di += 1
                    if self.spec.inout:
                        self.inout_uses.append(ops[ui])
                        ui += 1
                else:
                    items.append(("use", ops[ui], node))
                    ui += 1
            self.slot_of.append(items)
        self.defs = defs
        self.tied: list[SSAValue] = []
        if keeps_old_values(op.guard_pred, self.spec, self.mods, self.args):
            self.tied = list(ops[len(ops) - len(defs):])
        self._elements_written: dict[tuple[str, int], ir.Value] = {}
        self.cc_in = ops[ui] if self.spec.cc_use and ui < len(ops) else None
        self.cc_out = res[di] if ".cc" in self.mods and di < len(res) else None

    # -- constants and types ----------------------------------------------------

    def splat(self, value, ty: ir.Type) -> ir.Constant:
        return self.wf.splat(value, ty)

    def zeros(self, bits: int) -> ir.Constant:
        return self.splat(0, ir.IntType(bits))

    def call(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        return self.b.call(self.wf.intrinsic(name, ret, [a.type for a in args]), args)

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
            return self.fit(self.wf.read(v), bits, signed)
        if kind == "elem":  # v.y: element 1 of the packed vector register
            v = self.slot_of[k][reg_index][1]
            _n, w = vector_shape(v)  # type: ignore[misc]
            whole = self.wf.read(v)
            idx = isa.ELEMENT_FIELDS[node[2]]
            part = self.b.lshr(whole, ir.Constant(whole.type, idx * w)) if idx else whole
            return self.fit(self.b.trunc(part, ivec(w)), bits, signed)
        if kind == "radd":  # %rd1 + 8: added at the register's width (ptxas wraps there)
            v = self.slot_of[k][reg_index][1]
            r = self.wf.read(v)
            rb = r.type.element.width  # type: ignore[attr-defined]
            r = self.b.add(r, self.splat(node[2] & ((1 << rb) - 1), ir.IntType(rb)))
            return self.fit(r, bits, signed)
        if kind == "imm":
            return self.splat(self.imm_bits(node[1], bits), ir.IntType(bits))
        if kind == "sreg":
            return self.fit(self.wf.special_register(node[1]), bits, signed)
        if kind == "sym":
            return self.fit(self.wf.symbol_address(node[1], node[2]), bits, False)
        if kind == "not":
            inner = self.value_of(node[1], k, 1, False, reg_index)
            return self.b.not_(inner)
        raise self.fail(f"unsupported operand {node!r}")

    def imm_bits(self, text: str, bits: int) -> int:
        """The bit pattern of an immediate for a ``bits``-wide operand."""
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

    def elements(self, k: int) -> list[Operand]:
        node = self.operand_node(k)
        return list(node[1]) if node[0] == "vec" else [node]

    def src_elements(self, k: int, bits: int, signed: bool = False) -> list[ir.Value]:
        """Each element of a vector operand ``{a, b, ...}`` or vector register (or the
        operand itself)."""
        node = self.operand_node(k)
        if node[0] == "reg" and self.slot_of[k]:
            shape = vector_shape(self.slot_of[k][0][1])
            if shape is not None:  # a vector register: its elements, x in the low bits
                n, w = shape
                whole = self.wf.read(self.slot_of[k][0][1])
                parts = [self.b.lshr(whole, ir.Constant(whole.type, i * w)) if i else whole for i in range(n)]
                return [self.fit(self.b.trunc(p, ivec(w)), bits, signed) for p in parts]
        if node[0] != "vec":
            return [self.src(k, bits, signed)]
        out = []
        ri = 0
        for el in node[1]:
            if el[0] in ("reg", "elem", "radd"):
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
        kind, v, node = items[reg_index]
        if kind != "def":
            raise self.fail(f"operand {k + 1} is not written")
        if node[0] == "elem":
            value = self._insert_element(v, node, value)
        self.write_def(v, value, signed)

    def _insert_element(self, v: SSAValue, node: Operand, value: ir.Value) -> ir.Value:
        """The vector register ``v`` with the element ``node`` (``v.y``) replaced by ``value``;
        the other elements are the register's old value, or what this statement wrote
        before (``ld.v2.u32 {v.y, v.x}, [a]`` writes both)."""
        j = list(self.op.results).index(v)
        key = (self.defs[j][1], self.defs[j][2])
        old = self._elements_written.get(key)
        if old is None:
            old = self.wf.read(self.tied[j])
        _n, w = vector_shape(v)  # type: ignore[misc]
        shift = isa.ELEMENT_FIELDS[node[2]] * w
        wide = old.type
        part = self.fit(value, w, False)
        part = self.b.zext(part, wide) if wide.element.width > w else part  # type: ignore[attr-defined]
        keep = ir.Constant(wide, ~(((1 << w) - 1) << shift) & ((1 << wide.element.width) - 1))  # type: ignore[attr-defined]
        new = self.b.or_(self.b.and_(old, keep), self.b.shl(part, ir.Constant(wide, shift)) if shift else part)
        self._elements_written[key] = new
        return new

    def write_def(self, v: SSAValue, value: ir.Value, signed: bool = False) -> None:
        if v not in self.wf.prog.slots and v not in self.wf.prog.local_values:
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
                old = self.wf.read(self.tied[j])
                if bits != 1 and old.type != value.type:
                    old = self.fit(old, bits, False)
                value = self.b.select(self.guard, value, old)
        self.wf.write(v, value, self.active)

    def dst_elements(self, k: int, values: list[ir.Value], signed: bool = False) -> None:
        node = self.operand_node(k)
        if node[0] == "reg" and self.slot_of[k] and len(values) > 1:
            shape = vector_shape(self.slot_of[k][0][1])
            if shape is not None:  # a vector register: pack, element 0 in the low bits
                n, w = shape
                wide = ivec(n * w)
                acc = None
                for i, val in enumerate(values[:n]):
                    part = self.b.zext(self.fit(val, w, False), wide)
                    part = self.b.shl(part, ir.Constant(wide, i * w)) if i else part
                    acc = part if acc is None else self.b.or_(acc, part)
                self.dst(k, acc, signed)
                return
        if node[0] != "vec":
            self.dst(k, values[0], signed)
            return
        ri = 0
        for el, val in zip(node[1], values):
            if el[0] in ("reg", "elem"):
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
            return "reg", self.splat(parse_int_immediate(base[1]) + off, i64), base
        if base[0] == "sym":
            return self.wf.symbol_kind(base[1]), self.wf.symbol_address(base[1], base[2] + off), base
        raise self.fail("unsupported address")

    def space(self) -> str:
        sp = isa.state_space(self.spec, self.mods)
        return sp or "generic"

    def load(self, space: str, addr: ir.Value, bits: int, mask: ir.Value, kind: str = "reg") -> ir.Value:
        return access(self.wf, self.instr_id, space, addr, bits, mask, None, kind)

    def store(self, space: str, addr: ir.Value, value: ir.Value, mask: ir.Value, kind: str = "reg") -> None:
        access(self.wf, self.instr_id, space, addr, value.type.element.width, mask, value, kind)  # type: ignore[attr-defined]

    def host_pointers(self, space: str, addr: ir.Value, nbytes: int | ir.Value, mask: ir.Value, kind: str = "reg",
                      intent: str = initcheck.UNKNOWN) -> ir.Value:
        """Bounds-checked host pointers (``<32 x ptr>``) for ``nbytes`` at ``addr``; ``intent``:
        what the access does with the bytes, for initcheck (unknown: they count as written)
        and racecheck (unknown: not tracked)."""
        return host_pointers(self.wf, self.instr_id, space, addr, nbytes, mask, kind, intent)

    def check_alignment(self, addr: ir.Value, nbytes: int, mask: ir.Value) -> None:
        """Stop with a misaligned-address error where a lane of ``mask`` has an ``addr`` that
        is not a multiple of ``nbytes`` (``addressing.check_alignment``)."""
        check_alignment(self.wf, self.instr_id, addr, nbytes, mask)

    def entry_alloca(self, ty: ir.Type) -> ir.Value:
        """Stack space in the warp function's entry block.  An ``alloca`` where the
        instruction is would run every time the instruction does, and the stack
        only shrinks when the warp function returns (at a barrier or the exit): a
        loop in the kernel would grow it without bound."""
        entry = self.b.function.entry_basic_block
        eb = ir.IRBuilder(entry)
        eb.position_at_start(entry)
        return eb.alloca(ty)
