"""``ptx-to-ssa``: every register definition becomes a distinct SSA value.

Construction follows Braun et al., "Simple and Efficient Construction of
Static Single Assignment Form" (CC 2013): registers are read and written block
by block, merges become block arguments ("phis") only where needed, and
trivial phis are removed.  This is what makes slices exact where HyPA's
name-based def-use was wrong: a register written on two paths reaches its use
through a block argument that depends on *both* definitions.

Registers are keyed by ``(name, scope)``, so a register declared in a nested
``{ }`` scope is distinct from an outer one of the same name.  A guarded
definition ``@p add %r1, ...`` also reads the old ``%r1`` (register_roles puts
it among the uses): in SSA it is a per-lane merge of old and new value.  The
carry flag of ``add.cc``/``addc`` is the implicit register ``%cc``.  A register
read before any write on some path reads a ``ptx.entry_value`` (undefined, or
the argument of a ``.reg`` parameter).

The function is marked ``hypa.ssa``; ``register_roles`` says which register
each operand and result stands for, so PTX can be printed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.core import SSAValues
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from hypa.ptxdialect.dialect import (
    EntryValueOp,
    FallthroughOp,
    FuncOp,
    InstructionOp,
    RegisterTypes,
    IntsAttr,
    reg_type,
)
from hypa.ptxdialect.operands import Operand, format_reg_annotated

from .cfg import CFG
from .dominance import dominates, immediate_dominators

SSA_ATTR = "hypa.ssa"
CC_TYPE = "cc"

RegKey = tuple[str, int]


def is_ssa(func: FuncOp) -> bool:
    return SSA_ATTR in func.attributes


def register_types(func: FuncOp) -> RegisterTypes:
    """Declared type of every register of a function (``.reg`` and ``.reg`` params)."""
    types = RegisterTypes.of(func)
    types.singles[("%cc", 0)] = CC_TYPE
    return types


# ---------------------------------------------------------------------------
# Abstract values of the construction
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class _Def:
    op_index: int
    result: int


@dataclass(eq=False)
class _Undef:
    key: RegKey


@dataclass(eq=False)
class _Phi:
    block: int
    key: RegKey
    incoming: dict[int, object] = field(default_factory=dict)
    users: list["_Phi"] = field(default_factory=list)
    replaced_by: object = None
    arg: BlockArgument | None = None


def _resolve(v: object) -> object:
    while isinstance(v, _Phi) and v.replaced_by is not None:
        v = v.replaced_by
    return v


class _Builder:
    def __init__(self, cfg: CFG):
        self.cfg = cfg
        self.current: dict[RegKey, dict[int, object]] = {}
        self.sealed = [False] * len(cfg)
        self.filled = [False] * len(cfg)
        self.incomplete: dict[int, dict[RegKey, _Phi]] = {}
        self.phis: list[_Phi] = []
        self.undefs: dict[RegKey, _Undef] = {}

    def write(self, key: RegKey, block: int, value: object) -> None:
        self.current.setdefault(key, {})[block] = value

    def read(self, key: RegKey, block: int) -> object:
        defs = self.current.get(key)
        if defs is not None and block in defs:
            return defs[block]
        # walk chains of sealed single-predecessor blocks iteratively: code built
        # with -G has thousands of them, deeper than Python's recursion limit
        chain: list[int] = []
        seen: set[int] = set()
        val: object
        while defs is None or block not in defs:
            preds = self.cfg.preds[block]
            if not (self.sealed[block] and preds and len(set(preds)) == 1):
                val = self._read_recursive(key, block)
                break
            if block in seen:  # a cycle no entry reaches (unreachable code): nothing defines it
                val = self.undef(key)
                break
            seen.add(block)
            chain.append(block)
            block = preds[0]
        else:
            val = defs[block]
        for c in chain:
            self.write(key, c, val)
        return val

    def undef(self, key: RegKey) -> _Undef:
        u = self.undefs.get(key)
        if u is None:
            u = self.undefs[key] = _Undef(key)
        return u

    def _read_recursive(self, key: RegKey, block: int) -> object:
        preds = self.cfg.preds[block]
        val: object
        if not self.sealed[block]:
            phi = _Phi(block, key)
            self.phis.append(phi)
            self.incomplete.setdefault(block, {})[key] = phi
            val = phi
        elif not preds:
            val = self.undef(key)
        elif len(set(preds)) == 1:
            val = self.read(key, preds[0])
        else:
            phi = _Phi(block, key)
            self.phis.append(phi)
            self.write(key, block, phi)
            val = self._add_operands(phi)
        self.write(key, block, val)
        return val

    def _add_operands(self, phi: _Phi) -> object:
        for p in self.cfg.preds[phi.block]:
            if p in phi.incoming:
                continue
            v = self.read(phi.key, p)
            phi.incoming[p] = v
            if isinstance(v, _Phi):
                v.users.append(phi)
        return self._try_remove_trivial(phi)

    def _try_remove_trivial(self, phi: _Phi) -> object:
        same: object = None
        for v in phi.incoming.values():
            v = _resolve(v)
            if v is same or v is phi:
                continue
            if same is not None:
                return phi
            same = v
        if same is None:
            same = self.undef(phi.key)
        phi.replaced_by = same
        for u in phi.users:
            if u is not phi and u.replaced_by is None:
                self._try_remove_trivial(u)
        return same

    def seal(self, block: int) -> None:
        if self.sealed[block]:
            return
        self.sealed[block] = True
        for phi in self.incomplete.pop(block, {}).values():
            self._add_operands(phi)


def convert_function(func: FuncOp) -> None:
    """Rewrite one function from register form into SSA form, in place."""
    if func.is_declaration or is_ssa(func):
        return
    cfg = CFG.of(func)
    types = register_types(func)
    b = _Builder(cfg)
    n = len(cfg)

    order = cfg.reverse_postorder()
    in_order = set(order)
    order += [i for i in range(n) if i not in in_order]

    old_ops: list[InstructionOp] = []
    op_uses: list[list[object]] = []
    op_defs: list[tuple[Operand, ...]] = []
    op_block: list[int] = []

    def try_seal(block: int) -> None:
        if all(b.filled[p] for p in cfg.preds[block]):
            b.seal(block)

    for bi in order:
        try_seal(bi)
        for op in cfg.blocks[bi].ops:
            if not isinstance(op, InstructionOp):
                continue
            uses, defs = op.register_roles()
            vals = [b.read(_key(u), bi) for u in uses]
            idx = len(old_ops)
            old_ops.append(op)
            op_uses.append(vals)
            op_defs.append(defs)
            op_block.append(bi)
            for k, d in enumerate(defs):
                b.write(_key(d), bi, _Def(idx, k))
        b.filled[bi] = True
        for s in cfg.succs[bi]:
            try_seal(s)
    for bi in range(n):
        b.seal(bi)

    # -- materialize -----------------------------------------------------------
    live_phis: dict[int, list[_Phi]] = {}
    for phi in b.phis:
        if phi.replaced_by is None:
            live_phis.setdefault(phi.block, []).append(phi)
    for bi, phis in live_phis.items():
        block = cfg.blocks[bi]
        for phi in phis:
            phi.arg = block.insert_arg(_type(types, phi.key), len(block.args))
            phi.arg.name_hint = _hint(phi.key)

    entry = cfg.blocks[0]
    entry_values: dict[RegKey, SSAValue] = {}

    def entry_value(key: RegKey) -> SSAValue:
        v = entry_values.get(key)
        if v is None:
            ev = EntryValueOp.create(
                properties={"reg": StringAttr(format_reg_annotated(("reg", key[0], key[1])))},
                result_types=[_type(types, key)],
            )
            ev.results[0].name_hint = _hint(key)
            first = entry.first_op
            if first is None:
                entry.add_op(ev)
            else:
                entry.insert_op_before(ev, first)
            v = entry_values[key] = ev.results[0]
        return v

    # each instruction becomes its SSA form in place: results for the registers it writes
    # now, operands for those it reads below (register-form operations have neither, so
    # nothing refers to them yet; rebuilding every operation would cost twice as much)
    new_ops: list[InstructionOp] = old_ops
    for op, defs in zip(old_ops, op_defs):
        if defs:
            op.results = SSAValues(OpResult(_type(types, _key(d)), op, i) for i, d in enumerate(defs))
            for r, d in zip(op.results, defs):
                r.name_hint = _hint(_key(d))

    def mat(v: object) -> SSAValue:
        v = _resolve(v)
        if isinstance(v, _Def):
            return new_ops[v.op_index].results[v.result]
        if isinstance(v, _Phi):
            assert v.arg is not None
            return v.arg
        assert isinstance(v, _Undef)
        return entry_value(v.key)

    def edge_args(pred: int, succ_block: Block) -> list[SSAValue]:
        si = cfg.index[succ_block]
        return [mat(phi.incoming[pred]) for phi in live_phis.get(si, [])]

    for op, new, vals, bi in zip(old_ops, new_ops, op_uses, op_block):
        operands = [mat(v) for v in vals]
        sizes = []
        for s in new.successors:
            args = edge_args(bi, s)
            operands.extend(args)
            sizes.append(len(args))
        if any(sizes):
            new.properties["succ_sizes"] = IntsAttr.fast(tuple(sizes))
        if operands:
            new.operands = operands

    for bi, block in enumerate(cfg.blocks):
        term = block.last_op
        if isinstance(term, FallthroughOp):
            args = edge_args(bi, term.successors[0])
            if args:
                term.operands = args

    func.attributes[SSA_ATTR] = UnitAttr()


def _key(r: Operand) -> RegKey:
    return (r[1], r[2])


def _type(types: RegisterTypes, key: RegKey):
    return reg_type(types.get(key, ".b32"))


def _hint(key: RegKey) -> str:
    name = key[0].lstrip("%") or "r"
    return name if key[1] == 0 else f"{name}.s{key[1]}"


# ---------------------------------------------------------------------------
# Dominance verifier (xDSL's verifier does not check it)
# ---------------------------------------------------------------------------


def value_location(v: SSAValue) -> tuple[Block, Operation | None]:
    """The block defining ``v`` and its defining op (None for a block argument)."""
    if isinstance(v, BlockArgument):
        return v.block, None
    op = v.owner
    assert isinstance(op, Operation) and op.parent is not None
    return op.parent, op


def verify_dominance(func: FuncOp) -> None:
    """Every use is dominated by its definition (uses on an edge are checked at
    the end of the predecessor).  Unreachable blocks are not checked."""
    if func.is_declaration:
        return
    cfg = CFG.of(func)
    idom = immediate_dominators(len(cfg), 0, cfg.succs)
    reach = cfg.reachable()
    for bi, block in enumerate(cfg.blocks):
        if not reach[bi]:
            continue
        position = {op: i for i, op in enumerate(block.ops)}
        for op in block.ops:
            n_instr = len(op.operands)
            edge_from = None
            if isinstance(op, InstructionOp):
                n_instr = len(op.instruction_operands())
            elif isinstance(op, FallthroughOp):
                n_instr = 0
            for k, v in enumerate(op.operands):
                dblock, dop = value_location(v)
                di = cfg.index.get(dblock)
                if di is None:
                    raise VerifyException(f"operand of '{op.name}' is defined outside the function")
                on_edge = k >= n_instr
                if di == bi:
                    if on_edge or dop is None or position[dop] < position[op]:
                        continue
                    raise VerifyException(f"operand {k} of '{op.name}' is used before its definition in {cfg.name(bi)}")
                if not dominates(idom, di, bi):
                    raise VerifyException(
                        f"operand {k} of '{op.name}' in {cfg.name(bi)} is not dominated by its definition in {cfg.name(di)}"
                    )
            del edge_from


@dataclass(frozen=True)
class PTXToSSA(ModulePass):
    """Convert every function body from register form to SSA form."""

    name = "ptx-to-ssa"

    #: check that every definition dominates its uses afterwards (the emulator, which
    #: converts each kernel it prepares, leaves it off: the construction guarantees it)
    verify: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.ops:  # functions are top-level operations
            if isinstance(func, FuncOp):
                convert_function(func)
                if self.verify:
                    verify_dominance(func)
