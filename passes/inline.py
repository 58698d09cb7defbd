"""``ptx-inline``: inline ``.func`` calls into each kernel (register form).

Each call site gets its own copy of the callee's blocks: registers move to a
fresh scope id (so they cannot clash with the caller's), labels and local
variables get a per-copy suffix, and the callee's formal ``.param`` names
become the caller's argument and return-value parameters of that call.  The
``call`` statement stays in place (it is executed and counted) and falls
through into the copy; each ``ret`` of the copy gets an edge back to the rest
of the calling block (attribute ``hypa.return``), so divergence inside a
callee reconverges like any other branch.

Calls to functions without a body (``vprintf``, ``malloc`` ...) stay as they
are; the emulator skips them and says so.  ``.reg`` parameters (``.func (.reg
.v2 .u32 out) f(.reg .v2 .u32 in)``) are the caller's registers in the copy:
the copy reads the argument registers and writes the return registers of the
call directly (no copies, which would be instructions the program does not
have); a callee that writes one of its ``.reg`` arguments, or a call that
passes something other than a register or names a register both as argument
and as return value, is reported.  Indirect calls and recursion are reported
as errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect.dialect import (
    ArgsAttr,
    BranchTargetsOp,
    FallthroughOp,
    FuncOp,
    GuardAttr,
    ImplicitReturnOp,
    InstructionOp,
    LabelOp,
    RegDeclOp,
    LabelsAttr,
    VarDeclAttr,
    VarOp,
    new_op,
)
from hypa.ptxdialect.operands import Operand

from .cfg import RETURN_ATTR

SCOPE_STRIDE = 1 << 20
MAX_INLINES = 4096


class InlineError(Exception):
    pass


def callee_name(call: InstructionOp) -> tuple[str | None, bool]:
    """(callee, direct): the called symbol; direct is False for ``call %rd``."""
    args = call.operands_ast
    i = 1 if args and args[0][0] == "paren" and len(args) > 1 else 0
    if i >= len(args):
        return None, False
    target = args[i]
    if target[0] == "sym":
        return target[1], True
    return None, False


def call_params(call: InstructionOp) -> tuple[list[str], list[str]]:
    """(return symbols, argument symbols) of a call."""
    args = call.operands_ast
    rets: list[str] = []
    if args and args[0][0] == "paren" and len(args) > 1:
        rets = [a[1] for a in args[0][1] if a[0] == "sym"]
        rest = args[1:]
    else:
        rest = args
    argv: list[str] = []
    for a in rest[1:]:
        if a[0] == "paren":
            argv = [x[1] for x in a[1] if x[0] == "sym"]
            break
    return rets, argv


def _rename(node: Operand, regs: int, syms: dict[str, str], formals: dict | None = None) -> Operand:
    kind = node[0]
    if kind == "reg":
        if formals and node[2] == 0 and node[1] in formals:
            return formals[node[1]]
        return ("reg", node[1], node[2] + regs)
    if kind in ("elem", "radd"):
        inner = _rename(node[1], regs, syms, formals)
        if inner[0] != "reg":
            raise InlineError(f"'{node[1][1]}{node[2] if kind == 'elem' else '+'}' of an immediate argument cannot be inlined")
        return (kind, inner, node[2])
    if kind == "sym":
        return ("sym", syms.get(node[1], node[1]), node[2])
    if kind == "addr":
        return ("addr", _rename(node[1], regs, syms, formals), node[2], node[3])
    if kind in ("vec", "brk", "paren"):
        return (kind, tuple(_rename(x, regs, syms, formals) for x in node[1]))
    if kind == "not":
        return ("not", _rename(node[1], regs, syms, formals))
    if kind == "pair":
        return ("pair", _rename(node[1], regs, syms, formals), _rename(node[2], regs, syms, formals))
    return node


def _call_items(call: InstructionOp) -> tuple[tuple, tuple]:
    """(return values, arguments) of a call: the operand nodes in its ``( )`` lists."""
    args = call.operands_ast
    has_rets = bool(args) and args[0][0] == "paren" and len(args) > 1
    rets: tuple = args[0][1] if has_rets else ()
    rest = args[1:] if has_rets else args
    argv: tuple = next((a[1] for a in rest[1:] if a[0] == "paren"), ())
    return rets, argv


def _register_formals(call: InstructionOp, callee: FuncOp) -> dict[str, Operand]:
    """The caller's register for each ``.reg`` parameter of ``callee`` (by name)."""
    rets, argv = _call_items(call)
    out: dict[str, Operand] = {}
    plists = ((callee.ret_params.data if callee.ret_params else (), rets), (callee.params.data, argv))
    for plist, actual in plists:
        for p, a in zip(plist, actual):
            if p[2] != ".reg":
                continue
            if a[0] != "reg" and not (a[0] == "imm" and plist is callee.params.data):
                raise InlineError(f"call to '{callee.func_name}' passes '{a[1] if len(a) > 1 else a}' for the "
                                  f".reg parameter '{p[1]}'; the emulator inlines registers and immediates only")
            out[p[1]] = a
    ret_regs = {r for p, r in zip(plists[0][0], rets) if p[2] == ".reg"}
    for p, a in zip(callee.params.data, argv):
        if p[2] == ".reg" and a in ret_regs:
            raise InlineError(f"call to '{callee.func_name}' passes '{a[1]}' both as an argument and as a return value")
    inputs = {p[1] for p in callee.params.data if p[2] == ".reg"}
    if inputs:
        for op in callee.body.walk():
            if isinstance(op, InstructionOp):
                for d in op.register_roles()[1]:
                    if d[2] == 0 and d[1] in inputs:
                        raise InlineError(f"'{callee.func_name}' writes its .reg parameter '{d[1]}', which the emulator does not inline")
    return out


def inline_calls(module: ModuleOp, kernel: FuncOp) -> list[tuple[str, int, int]]:
    """Inline every direct call in ``kernel``; return each block's origin
    ``(function, block index, piece)`` (piece > 0 for the rest of a block
    split at a call)."""
    funcs = {op.func_name: op for op in module.ops if isinstance(op, FuncOp) and not op.is_declaration}
    origins: dict[Block, tuple[str, int, int]] = {
        b: (kernel.func_name, i, 0) for i, b in enumerate(kernel.body.blocks)
    }
    chains: dict[Block, tuple[str, ...]] = {b: (kernel.func_name,) for b in kernel.body.blocks}
    count = 0
    changed = True
    while changed:
        changed = False
        for block in list(kernel.body.blocks):
            for op in list(block.ops):
                if not (isinstance(op, InstructionOp) and op.spec.name == "call"):
                    continue
                if RETURN_ATTR + ".done" in op.attributes:
                    continue
                name, direct = callee_name(op)
                if not direct:
                    raise InlineError(f"indirect call '{op.opcode} ...' in {kernel.func_name} is not supported by the emulator")
                callee = funcs.get(name or "")
                if callee is None:
                    op.attributes[RETURN_ATTR + ".done"] = UnitAttr()
                    continue
                if name in chains[block]:
                    raise InlineError(f"recursive call to '{name}' ({' -> '.join(chains[block] + (name,))}) cannot be inlined")
                count += 1
                if count > MAX_INLINES:
                    raise InlineError(f"more than {MAX_INLINES} calls to inline in {kernel.func_name}")
                _inline_one(kernel, block, op, callee, count, origins, chains)
                changed = True
                break
            if changed:
                break
    return [origins[b] for b in kernel.body.blocks]


def _inline_one(kernel, block, call, callee, k, origins, chains) -> None:
    region: Region = kernel.body
    # 1. split the calling block after the call
    rest = Block()
    after = list(_ops_after(call))
    for o in after:
        o.detach()
        rest.add_op(o)
    call.attributes[RETURN_ATTR + ".done"] = UnitAttr()
    # 2. copy the callee
    ret_items, arg_items = _call_items(call)
    formals = [p[1] for p in callee.params.data]
    formal_rets = [p[1] for p in (callee.ret_params.data if callee.ret_params else ())]
    if len(arg_items) != len(formals) or len(ret_items) != len(formal_rets):
        raise InlineError(
            f"call to '{callee.func_name}' passes {len(arg_items)} arguments and {len(ret_items)} return values; "
            f"it declares {len(formals)} and {len(formal_rets)}"
        )
    formal_regs = _register_formals(call, callee)
    syms = {f: a[1] for f, a in (*zip(formals, arg_items), *zip(formal_rets, ret_items)) if a[0] == "sym"}
    suffix = f"__inl{k}"
    for op in callee.body.walk():
        if isinstance(op, LabelOp):
            syms[op.label.data] = op.label.data + suffix
        elif isinstance(op, BranchTargetsOp):
            syms[op.label.data] = op.label.data + suffix
        elif isinstance(op, VarOp):
            syms[op.var_name] = op.var_name + suffix
    regs = SCOPE_STRIDE * k
    mapping: dict[Block, Block] = {}
    copies: list[Block] = []
    for b in callee.body.blocks:
        nb = Block()
        mapping[b] = nb
        copies.append(nb)
    for b, nb in zip(callee.body.blocks, copies):
        for op in b.ops:
            nb.add_op(_copy_op(op, regs, syms, mapping, rest, formal_regs))
        nb.name_hint = (b.name_hint or "bb") + suffix
    # 3. wire: call block -> copy entry; copies in layout after the call block
    block.add_op(new_op(FallthroughOp, {}, [copies[0]]))
    anchor = block
    for i, nb in enumerate(copies):
        region.insert_block_after(nb, anchor)
        anchor = nb
        origins[nb] = (callee.func_name, i, 0)
        chains[nb] = chains[block] + (callee.func_name,)
    region.insert_block_after(rest, anchor)
    o = origins[block]
    origins[rest] = (o[0], o[1], o[2] + 1)
    chains[rest] = chains[block]


def _ops_after(op: Operation):
    nxt = op.next_op
    while nxt is not None:
        yield nxt
        nxt = nxt.next_op


def _copy_op(op: Operation, regs: int, syms: dict[str, str], mapping: dict[Block, Block], rest: Block,
             formals: dict[str, Operand] | None = None) -> Operation:
    if isinstance(op, InstructionOp):
        props = dict(op.properties)
        props["args"] = ArgsAttr.fast(tuple(_rename(a, regs, syms, formals) for a in op.operands_ast))
        g = op.guard_pred
        if g is not None:
            props["guard"] = GuardAttr.fast((_rename(g[0], regs, syms, formals), g[1]))
        succs = [mapping[s] for s in op.successors]
        new = type(op).create(properties=props, attributes=dict(op.attributes), successors=succs)
        if op.spec.name == "ret":
            new.successors = [rest, *succs]
            new.attributes[RETURN_ATTR] = UnitAttr()
        return new
    if isinstance(op, ImplicitReturnOp):
        return new_op(FallthroughOp, {}, [rest])
    if isinstance(op, FallthroughOp):
        return new_op(FallthroughOp, {}, [mapping[op.successors[0]]])
    if isinstance(op, LabelOp):
        return new_op(LabelOp, {"label": StringAttr(syms.get(op.label.data, op.label.data))})
    if isinstance(op, RegDeclOp):
        props = dict(op.properties)
        props["scope"] = IntAttr(op.scope.data + regs)
        return new_op(RegDeclOp, props)
    if isinstance(op, BranchTargetsOp):
        return new_op(BranchTargetsOp, {
            "label": StringAttr(syms[op.label.data]),
            "target_labels": LabelsAttr.fast(tuple(syms.get(t, t) for t in op.target_labels.data)),
        })
    if isinstance(op, VarOp):
        d = op.decl.data
        return new_op(VarOp, {"decl": VarDeclAttr.fast((d[0], d[1], d[2], d[3], syms.get(d[4], d[4]), d[5], d[6]))})
    return op.clone()


#: on an inlined kernel: where each of its blocks came from, ``[[function, block, piece], ...]``
#: (the emulator reports the blocks of an inlined ``.func`` under that function)
ORIGINS_ATTR = "hypa.block_origins"


def record_origins(kernel: FuncOp, origins: list[tuple[str, int, int]]) -> None:
    kernel.attributes[ORIGINS_ATTR] = ArrayAttr(
        [ArrayAttr([StringAttr(f), IntAttr(b), IntAttr(p)]) for f, b, p in origins])


def block_origins(kernel: FuncOp) -> list[tuple[str, int, int]]:
    """Each block's origin as ``ptx-inline`` recorded it; the kernel's own blocks where
    nothing was inlined (or a later pass changed the blocks, so the record is stale)."""
    blocks = list(kernel.body.blocks)
    rec = kernel.attributes.get(ORIGINS_ATTR)
    if isinstance(rec, ArrayAttr) and len(rec.data) == len(blocks):
        return [(e.data[0].data, e.data[1].data, e.data[2].data) for e in rec.data]  # type: ignore[union-attr]
    return [(kernel.func_name, i, 0) for i in range(len(blocks))]


def has_calls_to_inline(module: ModuleOp, kernel: FuncOp) -> bool:
    """Whether ``kernel`` still calls a function the module defines."""
    defined = None
    for block in kernel.body.blocks:
        for op in block.ops:
            if op.name == "ptx.call" and RETURN_ATTR + ".done" not in op.attributes:
                if defined is None:
                    defined = {f.func_name for f in module.ops if isinstance(f, FuncOp) and not f.is_declaration}
                name, direct = callee_name(op)  # type: ignore[arg-type]
                if not direct or name in defined:
                    return True
    return False


@dataclass(frozen=True)
class PTXInline(ModulePass):
    """Inline every direct call of every kernel (register form): each call site gets its own
    copy of the callee, so divergence inside a callee reconverges like any other branch,
    and the emulator counts the kernel as one CFG.  The ``.func`` definitions stay."""

    name = "ptx-inline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from .ssa import is_ssa

        for f in list(op.ops):
            if isinstance(f, FuncOp) and f.is_kernel and not f.is_declaration:
                if is_ssa(f):
                    raise DiagnosticException(
                        f"ptx-inline: kernel '{f.func_name}' is in SSA form; inline before ptx-to-ssa "
                        f"(or run ptx-out-of-ssa first)")
                if not has_calls_to_inline(op, f):
                    continue
                try:
                    origins = inline_calls(op, f)
                except InlineError as e:
                    raise DiagnosticException(f"ptx-inline: {e}") from None
                record_origins(f, origins)
