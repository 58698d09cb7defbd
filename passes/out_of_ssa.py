"""``ptx-out-of-ssa``: SSA form back to register form, so PTX can be printed.

Every SSA value is assigned a register: the one its definition wrote in the
original program (its *home*) unless another value already assigned that
register is live at its definition, in which case it gets a fresh register.
Values are visited in dominance order, which finds every interference: a
value live at a definition point is defined by a dominator of that point.

Block arguments become copies on their incoming edges (parallel copies made
sequential, cycles broken with a temporary).  An edge that leaves a block with
several successors is split: the fall-through edge by a block placed right
after the branch, a taken edge by a labelled block that jumps on.  A guarded
definition must write the register its old value lives in; where the two
differ the result gets a fresh register and an unguarded ``mov`` copies the old
value first.  Where nothing interferes (the usual case: ``ptx-to-ssa`` moves no
instruction) the output is the original register form exactly.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect.dialect import (
    INSTRUCTION_OPS,
    ArgsAttr,
    EntryValueOp,
    FallthroughOp,
    FuncOp,
    GuardAttr,
    InstructionOp,
    LabelOp,
    RegDeclOp,
    RegType,
    RegNamesAttr,
    WordsAttr,
    def_positions,
    keeps_old_values,
    new_op,
    modifiers_attr,
    string_attr,
)
from hypa.ptxdialect.isa import TYPE_BITS, VECTOR_REG_TYPES
from hypa.ptxdialect.operands import Operand, iter_regs, map_regs

from .cfg import CFG, block_label
from .dominance import dominator_tree_children, immediate_dominators
from .liveness import Liveness, edge_uses, op_uses
from .ssa import CC_TYPE, SSA_ATTR, is_ssa

Name = tuple[str, int]  # (register name, scope)


def _type_of(v: SSAValue) -> str:
    t = v.type
    return "." + t.type_name if isinstance(t, RegType) else ".b32"


class _Homes:
    """The original register of every SSA value of a function."""

    def __init__(self, cfg: CFG):
        self.home: dict[SSAValue, Name] = {}
        incoming: dict[BlockArgument, list[SSAValue]] = {}
        for block in cfg.blocks:
            for op in block.ops:
                if isinstance(op, EntryValueOp):
                    r = op.register
                    self.home[op.results[0]] = (r[1], r[2])
                elif isinstance(op, InstructionOp) and op.results:
                    _u, defs = op.register_roles()
                    for v, d in zip(op.results, defs):
                        self.home[v] = (d[1], d[2])
            term = block.last_op
            if term is not None:
                for s, vals in zip(term.successors, edge_uses(term)):
                    for a, v in zip(s.args, vals):
                        incoming.setdefault(a, []).append(v)
        # a block argument merges one register: take it from its inputs
        changed = True
        while changed:
            changed = False
            for a, vals in incoming.items():
                if a in self.home:
                    continue
                for v in vals:
                    if v in self.home:
                        self.home[a] = self.home[v]
                        changed = True
                        break
        for block in cfg.blocks:
            for i, a in enumerate(block.args):
                self.home.setdefault(a, (f"%phi{i}", 0))

    def __getitem__(self, v: SSAValue) -> Name:
        return self.home[v]


class _Function:
    def __init__(self, func: FuncOp):
        self.func = func
        self.cfg = CFG.of(func)
        self.homes = _Homes(self.cfg)
        self.names: dict[SSAValue, Name] = {}
        self.fresh_count = 0
        self.fresh_decls: dict[str, list[str]] = {}
        self.taken: set[str] = set()
        self.taken_ranges: dict[str, int] = {}  # declared ranges %r<N>, however large N is
        for op in func.body.walk():
            if isinstance(op, RegDeclOp):
                for n, count in op.names.data:
                    if count:
                        self.taken_ranges[n] = max(count, self.taken_ranges.get(n, 0))
                    else:
                        self.taken.add(n)
            if isinstance(op, LabelOp):
                self.taken.add(op.label.data)

    def is_taken(self, name: str) -> bool:
        if name in self.taken:
            return True
        stem = name.rstrip("0123456789")
        digits = name[len(stem):]
        return bool(digits) and stem in self.taken_ranges and int(digits) < self.taken_ranges[stem]

    def fresh(self, ptx_type: str) -> Name:
        while self.is_taken(f"%ssa{self.fresh_count}"):
            self.fresh_count += 1
        name = f"%ssa{self.fresh_count}"
        self.taken.add(name)
        self.fresh_decls.setdefault(_decl_type(ptx_type), []).append(name)
        return (name, 0)

    def fresh_label(self, stem: str) -> str:
        k = 0
        while self.is_taken(f"{stem}{k}"):
            k += 1
        self.taken.add(f"{stem}{k}")
        return f"{stem}{k}"

    def name(self, v: SSAValue) -> Name:
        return self.names.get(v) or self.homes[v]

    # -- register assignment ---------------------------------------------------

    def assign(self) -> dict[Operation, list[tuple[Name, Name, str]]]:
        cfg, homes = self.cfg, self.homes
        liveness = Liveness.of(cfg)
        conflicts: dict[SSAValue, list[SSAValue]] = {}
        for bi, block in enumerate(cfg.blocks):
            live: dict[Name, set[SSAValue]] = {}
            for v in liveness.live_out(bi):
                live.setdefault(homes[v], set()).add(v)
            for op in reversed(list(block.ops)):
                for v in op.results:
                    bucket = live.get(homes[v], set())
                    conflicts[v] = [u for u in bucket if u is not v]
                    bucket.discard(v)
                for v in op_uses(op):
                    live.setdefault(homes[v], set()).add(v)
            for v in block.args:
                conflicts[v] = [u for u in live.get(homes[v], ()) if u is not v]

        idom = immediate_dominators(len(cfg), 0, cfg.succs)
        children = dominator_tree_children(idom)
        order: list[int] = []
        stack = [0]
        while stack:
            b = stack.pop()
            order.append(b)
            stack.extend(reversed(children[b]))
        seen = set(order)
        order += [b for b in range(len(cfg)) if b not in seen]

        def assign(v: SSAValue) -> None:
            h = homes[v]
            clash = any(self.names.get(u) == h for u in conflicts.get(v, ()))
            self.names[v] = self.fresh(_type_of(v)) if clash else h

        pre_copies: dict[Operation, list[tuple[Name, Name, str]]] = {}
        for bi in order:
            block = cfg.blocks[bi]
            for a in block.args:
                assign(a)
            for op in block.ops:
                for v in op.results:
                    assign(v)
                if isinstance(op, InstructionOp) and op.results:
                    for res, old in _tied_pairs(op):
                        if _type_of(res) == "." + CC_TYPE:
                            continue
                        if self.names[res] != self.name(old):
                            if self.names[res] == homes[res]:
                                self.names[res] = self.fresh(_type_of(res))
                            pre_copies.setdefault(op, []).append((self.names[res], self.name(old), _type_of(res)))
        return pre_copies

    # -- rewriting --------------------------------------------------------------

    def rewrite(self) -> None:
        pre_copies = self.assign()
        cfg, func = self.cfg, self.func
        old_ops: list[Operation] = []
        for block in cfg.blocks:
            for op in list(block.ops):
                if isinstance(op, InstructionOp):
                    for dst, src, t in pre_copies.get(op, ()):
                        block.insert_op_before(_mov(dst, src, t), op)
                    new = _register_form(op, [self.name(v) for v in op.instruction_operands()], [self.name(v) for v in op.results])
                    block.insert_op_before(new, op)
                    old_ops.append(op)
                elif isinstance(op, EntryValueOp):
                    old_ops.append(op)
        # copies for block arguments, on the edges
        for bi, block in enumerate(cfg.blocks):
            term = block.last_op
            if term is None or not term.successors:
                continue
            new_term = term.prev_op if isinstance(term, InstructionOp) else term
            assert new_term is not None
            for k, (s, vals) in enumerate(zip(list(term.successors), edge_uses(term))):
                copies = [(self.name(a), self.name(v), _type_of(a)) for a, v in zip(s.args, vals) if self.name(a) != self.name(v)]
                if copies:
                    self._place_copies(bi, new_term, k, s, _sequentialize(copies, self))
        for op in old_ops:
            op.operands = []
        for block in cfg.blocks:
            term = block.last_op
            if isinstance(term, FallthroughOp):
                term.operands = []
        for op in old_ops:
            op.detach()
            op.erase(safe_erase=False)
        for block in cfg.blocks:
            for a in reversed(list(block.args)):
                block.erase_arg(a, safe_erase=False)
        if self.fresh_decls:
            entry = func.body.blocks[0]
            anchor = entry.first_op
            for t, names in self.fresh_decls.items():
                props = {
                    "ptx_type": string_attr(t),
                    "names": RegNamesAttr.fast(tuple((n, 0) for n in names)),
                    "scope": IntAttr(0),
                }
                if t in VECTOR_REG_TYPES:  # .reg .v2 .u32
                    props["ptx_type"] = string_attr(VECTOR_REG_TYPES[t][1])
                    props["qualifiers"] = WordsAttr.fast((t[:3],))
                decl = new_op(RegDeclOp, props)
                if anchor is None:
                    entry.add_op(decl)
                else:
                    entry.insert_op_before(decl, anchor)
        del func.attributes[SSA_ATTR]

    def _place_copies(self, bi: int, term: Operation, slot: int, succ: Block, copies: list[tuple[Name, Name, str]]) -> None:
        block = self.cfg.blocks[bi]
        movs = [_mov(d, s, t) for d, s, t in copies]
        single = len(term.successors) == 1 and (
            isinstance(term, FallthroughOp)
            or (isinstance(term, InstructionOp) and term.spec.name == "bra" and term.guard_pred is None)
        )
        if single:
            for m in movs:
                block.insert_op_before(m, term)
            return
        if not (isinstance(term, InstructionOp) and term.spec.name == "bra"):
            raise DiagnosticException(
                f"ptx-out-of-ssa: cannot place copies on an edge of '{term.name}' (only 'bra' edges can be split)"
            )
        region = self.func.body
        split = Block()
        succs = list(term.successors)
        if slot == len(succs) - 1 and term.guard_pred is not None:
            # the fall-through edge: the split block follows the branch
            for m in movs:
                split.add_op(m)
            split.add_op(new_op(FallthroughOp, {}, [succ]))
            region.insert_block_after(split, block)
        else:
            label = self.fresh_label("$L__hypa_edge")
            target = _ensure_label(succ, self)
            split.add_op(new_op(LabelOp, {"label": StringAttr(label)}))
            for m in movs:
                split.add_op(m)
            split.add_op(new_op(INSTRUCTION_OPS["bra"], {
                "mods": modifiers_attr(".uni"),
                "args": ArgsAttr.fast((("sym", target, 0),)),
            }, [succ]))
            region.insert_block_after(split, _block_without_fallthrough_into_next(self.func, block))
            term.properties["args"] = ArgsAttr.fast((("sym", label, 0),))
        succs[slot] = split
        term.successors = succs


def _block_without_fallthrough_into_next(func: FuncOp, near: Block) -> Block:
    """A block after which a new block can be placed without anything falling into it."""
    blocks = list(func.body.blocks)
    start = blocks.index(near)
    for b in blocks[start:] + blocks[:start]:
        t = b.last_op
        if isinstance(t, InstructionOp) and t.guard_pred is None and t.spec.terminator and t.spec.name != "brx.idx":
            return b
    raise DiagnosticException("ptx-out-of-ssa: no block ends in an unconditional branch or return to place a split edge after")


def _tied_pairs(op: InstructionOp) -> list[tuple[SSAValue, SSAValue]]:
    """(result, operand) pairs that must share a register: a guarded result and
    the old value it keeps where the guard is false (also a vector register whose
    element is written: the other elements are kept); an ``inout`` result and
    its input."""
    pairs: list[tuple[SSAValue, SSAValue]] = []
    ops = op.instruction_operands()
    if keeps_old_values(op.guard_pred, op.spec, op.modifiers, op.operands_ast):
        olds = ops[len(ops) - len(op.results):]
        pairs.extend(zip(op.results, olds))
    elif op.spec.inout and op.operands_ast:
        n = sum(1 for _ in iter_regs(op.operands_ast[0]))
        pairs.extend(zip(op.results[:n], ops[:n]))
    return pairs


def _register_form(op: InstructionOp, use_names: list[Name], def_names: list[Name]) -> InstructionOp:
    """A register-form twin of ``op`` whose args name the given registers."""
    spec, mods, args = op.spec, op.modifiers, op.operands_ast
    guard = op.guard_pred
    ui, di = 0, 0
    if guard is not None:
        g = use_names[0]
        guard = (("reg", g[0], g[1]), guard[1])
        ui = 1
    dpos = def_positions(spec, mods, args)
    new_args: list[Operand] = []
    for i, a in enumerate(args):
        if i in dpos:
            def rdef(node: Operand) -> Operand:
                nonlocal di, ui
                n = def_names[di]
                di += 1
                if spec.inout:
                    ui += 1
                return ("reg", n[0], n[1])

            new_args.append(map_regs(a, rdef))
        else:
            def ruse(node: Operand) -> Operand:
                nonlocal ui
                n = use_names[ui]
                ui += 1
                return ("reg", n[0], n[1])

            new_args.append(map_regs(a, ruse))
    props = dict(op.properties)
    props["args"] = ArgsAttr.fast(tuple(new_args))
    if guard is not None:
        props["guard"] = GuardAttr.fast(guard)
    props.pop("succ_sizes", None)
    return type(op).create(properties=props, attributes=dict(op.attributes), successors=list(op.successors))


def _decl_type(t: str) -> str:
    if t in VECTOR_REG_TYPES:
        return t
    return t if t in (".pred", ".f32", ".f64", ".f16", ".bf16", ".f16x2", ".bf16x2") else _bits_type(t)


def _bits_type(t: str) -> str:
    bits = TYPE_BITS.get(t, 32)
    return {1: ".pred", 8: ".b16", 16: ".b16", 32: ".b32", 64: ".b64", 128: ".b128"}.get(bits, ".b32")


def _mov(dst: Name, src: Name, ptx_type: str) -> Operation:
    if ptx_type in VECTOR_REG_TYPES:  # mov.v2.b32 (ptxas has no mov of 8-bit elements)
        n, et = VECTOR_REG_TYPES[ptx_type]
        t = f".v{n}" + (et if et in (".f32", ".f64") else _bits_type(et))
        return new_op(INSTRUCTION_OPS["mov"], {
            "mods": modifiers_attr(t),
            "args": ArgsAttr.fast((("reg", dst[0], dst[1]), ("reg", src[0], src[1]))),
        })
    t = ptx_type if ptx_type in (".pred", ".f32", ".f64") else _bits_type(ptx_type)
    return new_op(INSTRUCTION_OPS["mov"], {
        "mods": modifiers_attr(t),
        "args": ArgsAttr.fast((("reg", dst[0], dst[1]), ("reg", src[0], src[1]))),
    })


def _sequentialize(copies: list[tuple[Name, Name, str]], f: _Function) -> list[tuple[Name, Name, str]]:
    """Order a parallel copy so no source is overwritten before it is read."""
    pending = list(copies)
    out: list[tuple[Name, Name, str]] = []
    while pending:
        srcs = {s for _, s, _ in pending}
        for i, (d, s, t) in enumerate(pending):
            if d not in srcs:
                out.append((d, s, t))
                pending.pop(i)
                break
        else:
            d, s, t = pending[0]
            tmp = f.fresh(t)
            out.append((tmp, s, t))
            pending = [(dd, tmp if ss == s else ss, tt) for dd, ss, tt in pending]
    return out


def _ensure_label(block: Block, f: _Function) -> str:
    lbl = block_label(block)
    if lbl is not None:
        return lbl
    lbl = f.fresh_label("$L__hypa_block")
    label = new_op(LabelOp, {"label": StringAttr(lbl)})
    first = block.first_op
    if first is None:
        block.add_op(label)
    else:
        block.insert_op_before(label, first)
    return lbl


def convert_function(func: FuncOp) -> None:
    if func.is_declaration or not is_ssa(func):
        return
    _Function(func).rewrite()


class PTXOutOfSSA(ModulePass):
    """Convert every function from SSA form back to register form."""

    name = "ptx-out-of-ssa"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.walk():
            if isinstance(func, FuncOp):
                convert_function(func)
