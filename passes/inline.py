"""``ptx-inline``: inline ``.func`` calls into each kernel (register form).

Each call site gets its own copy of the callee's blocks: registers move to a
fresh scope id (so they cannot clash with the caller's), labels and local
variables get a per-copy suffix, and the callee's formal ``.param`` names
become the caller's argument and return-value parameters of that call.  The
``call`` statement stays in place (it is executed and counted) and falls
through into the copy; each ``ret`` of the copy gets an edge back to the rest
of the calling block (attribute ``hypa.return``), so divergence inside a
callee reconverges like any other branch.

Calls to functions without a body stay as they are: ``vprintf``, ``__assertfail``
and the device heap's ``malloc``/``free`` have emulator semantics (guarded calls of
them run in the guard's lanes only); the emulator skips any other and says so.  ``.reg`` parameters (``.func (.reg
.v2 .u32 out) f(.reg .v2 .u32 in)``) are the caller's registers in the copy:
the copy reads the argument registers and writes the return registers of the
call directly (no copies, which would be instructions the program does not
have); a callee that writes one of its ``.reg`` arguments, or a call that
passes something other than a register or names a register both as argument
and as return value, is reported.

An **indirect call** (``call (r), %rd, (a), proto;``) becomes a dispatch: the
``call`` stays (counted once) and ends its block with a ``ptx.fallthrough`` to
one copy per possible target (attribute ``hypa.dispatch``, the targets in
successor order), each returning to the rest of the block; the emulator sends
each lane to the copy whose function address its register holds, so lanes that
call different functions diverge and reconverge after the call.  The possible
targets are the ``.calltargets`` list, else every function of the module whose
address is taken and whose parameters match the ``.callprototype``.

A **recursive** function (one that can reach itself through calls) cannot be
inlined: it gets one copy in the kernel, entered by *real calls*
(``ptx.fallthrough`` after the ``call`` with attribute ``hypa.call``) and left
through one return block (``ptx.implicit_ret`` with ``hypa.real_return``); the
emulator keeps a per-thread call stack for them (docs/design.md, "Execution model").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect.diagnostics import HypaError
from hypa.ptxdialect.dialect import (
    ArgsAttr,
    BranchTargetsOp,
    FallthroughOp,
    FuncOp,
    GuardAttr,
    ImplicitReturnOp,
    InstructionOp,
    LabelOp,
    RawDirectiveOp,
    RegDeclOp,
    LabelsAttr,
    VarDeclAttr,
    VarOp,
    new_op,
)
from hypa.ptxdialect.operands import Operand, iter_syms

from .cfg import RETURN_ATTR

#: on the ``ptx.fallthrough`` that ends a block after a real call: ``[callee, [[actual, formal]...]
#: (arguments), [[actual, formal]...] (return values)]``
CALL_ATTR = "hypa.call"
#: on the ``ptx.fallthrough`` after an indirect call: the possible targets, in successor order
DISPATCH_ATTR = "hypa.dispatch"
#: a guarded direct call (``@%p call f``): the ``ptx.fallthrough`` after it goes to the inlined
#: copy (successor 0) in the lanes whose guard holds and straight to the rest of the calling
#: block (successor 1) in the others, which reconverge there like a divergent branch
GUARDED_CALL_ATTR = "hypa.guarded_call"
#: on the ``ptx.implicit_ret`` that ends the kernel's copy of a recursive function: its name
REAL_RETURN_ATTR = "hypa.real_return"
#: on every instruction of a recursive function's copy (and what is inlined into it): a slice
#: root (the copy is shared by every call, so slice mode emulates all of it)
KEEP_ATTR = "hypa.keep"
SCOPE_STRIDE = 1 << 20
MAX_INLINES = 4096


class InlineError(HypaError):
    """A call ``ptx-inline`` cannot inline (reported as the pass's diagnostic)."""


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


def indirect_register(call: InstructionOp) -> Operand | None:
    """The register an indirect call goes through (``call (r), %rd, (a), proto``), else None."""
    args = call.operands_ast
    i = 1 if args and args[0][0] == "paren" and len(args) > 1 else 0
    return args[i] if i < len(args) and args[i][0] == "reg" else None


_PROTO_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.([a-z]+)(\d+)\s+[\w$]+\s*(?:\[\s*(\d+)\s*\])?")


def _param_sizes(decls: str) -> tuple[int, ...]:
    return tuple(int(bits) // 8 * int(n or 1) for _k, bits, n in _PROTO_PARAM.findall(decls))


def _signature(func: FuncOp) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(return value sizes, argument sizes) in bytes."""
    rets = " ".join(p[0] for p in (func.ret_params.data if func.ret_params else ()))
    return _param_sizes(rets), _param_sizes(" ".join(p[0] for p in func.params.data))


def _prototype(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(return value sizes, argument sizes) of ``.callprototype`` text ``name: (.param .b32 _) _ (...)``."""
    body = text.split(":", 1)[1].strip()
    groups = re.findall(r"\(([^()]*)\)", body)
    if body.startswith("(") and len(groups) > 1:
        return _param_sizes(groups[0]), _param_sizes(groups[1])
    return (), _param_sizes(groups[0] if groups else "")


def _label_directive(call: InstructionOp, label: str) -> tuple[str, str] | None:
    """(directive, text) of the ``.callprototype``/``.calltargets`` named ``label``: the
    nearest one before the call in its block, else any in the body."""
    def match(op) -> tuple[str, str] | None:
        if isinstance(op, RawDirectiveOp) and op.text.data.split(":", 1)[0].strip() == label:
            return op.directive.data, op.text.data
        return None

    block = call.parent
    op = call.prev_op
    while op is not None:
        m = match(op)
        if m:
            return m
        op = op.prev_op
    region = block.parent if block is not None else None
    for o in (region.walk() if region is not None else ()):
        m = match(o)
        if m:
            return m
    return None


#: functions without a body the emulator runs itself (each in the lanes that execute the call)
RUNTIME_FUNCTIONS = ("vprintf", "__assertfail", "malloc", "free")
#: the device heap's functions (runtime/emulator/device_heap.py)
HEAP_FUNCTIONS = ("malloc", "free")


def address_taken(module: ModuleOp) -> list[str]:
    """Functions whose address the module takes: named by an operand of an instruction
    other than as a call's target, or in a variable's initializer (a table of pointers)."""
    names = {op.func_name for op in module.ops if isinstance(op, FuncOp)}
    out: dict[str, None] = {}
    for op in module.walk():
        if isinstance(op, VarOp) and op.init:
            for n in re.findall(r"[A-Za-z_$%][\w$]*", op.init):
                if n in names:
                    out[n] = None
        elif isinstance(op, InstructionOp):
            skip = callee_name(op)[0] if op.spec.name == "call" else None
            for a in op.operands_ast:
                for n in iter_syms(a):
                    if n in names and n != skip:
                        out[n] = None
    return list(out)


def indirect_targets(module: ModuleOp, call: InstructionOp, funcs: dict[str, FuncOp],
                     taken: list[str] | None = None) -> list[str]:
    """The functions an indirect call may reach: its ``.calltargets`` list, else the defined
    functions whose address is taken and whose parameter sizes match its ``.callprototype``."""
    last = call.operands_ast[-1]
    found = _label_directive(call, last[1]) if last[0] == "sym" else None
    if found is not None and found[0] == ".calltargets":
        names = [n.strip() for n in found[1].split(":", 1)[1].split(",") if n.strip()]
        missing = [n for n in names if n not in funcs]
        if missing:
            raise InlineError(f"indirect call '{call.opcode} ...' lists {', '.join(missing)} in .calltargets; "
                              f"the module does not define {'it' if len(missing) == 1 else 'them'}")
        return names
    want = _prototype(found[1]) if found is not None else None
    taken = address_taken(module) if taken is None else taken
    out = [n for n in taken if n in funcs and (want is None or _signature(funcs[n]) == want)]
    if not out:
        raise InlineError(f"indirect call '{call.opcode} ...' has no possible target: no function defined in the "
                          f"module has its address taken and matches the prototype")
    return out


def recursive_functions(module: ModuleOp, funcs: dict[str, FuncOp]) -> set[str]:
    """The defined functions that can reach themselves through calls (direct or indirect)."""
    taken = None
    graph: dict[str, set[str]] = {}
    for name, f in funcs.items():
        out: set[str] = set()
        for op in f.body.walk():
            if isinstance(op, InstructionOp) and op.spec.name == "call":
                callee, direct = callee_name(op)
                if direct:
                    if callee in funcs:
                        out.add(callee)  # type: ignore[arg-type]
                elif indirect_register(op) is not None:
                    if taken is None:
                        taken = address_taken(module)
                    try:
                        out.update(indirect_targets(module, op, funcs, taken))
                    except InlineError:
                        pass  # reported where the call is inlined
        graph[name] = out
    rec: set[str] = set()
    for start in graph:
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            n = stack.pop()
            if n == start:
                rec.add(start)
                break
            if n not in seen:
                seen.add(n)
                stack.extend(graph.get(n, ()))
    return rec


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
    if kind in ("elem", "radd", "vsel"):
        inner = _rename(node[1], regs, syms, formals)
        if inner[0] != "reg":
            raise InlineError(f"'{node[1][1]}{node[2] if kind != 'radd' else '+'}' of an immediate argument cannot be inlined")
        return (kind, inner, node[2])
    if kind == "neg":
        return ("neg", _rename(node[1], regs, syms, formals))
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
    """Inline every direct call in ``kernel``, turn indirect calls into dispatches and
    calls of recursive functions into real calls; return each block's origin
    ``(function, block index, piece)`` (piece > 0 for the rest of a block split at a call).
    The activation each block runs in (the kernel, or a recursive function) is recorded
    on the kernel (``block_activations``)."""
    funcs = {op.func_name: op for op in module.ops if isinstance(op, FuncOp) and not op.is_declaration}
    origins: dict[Block, tuple[str, int, int]] = {
        b: (kernel.func_name, i, 0) for i, b in enumerate(kernel.body.blocks)
    }
    chains: dict[Block, tuple[str, ...]] = {b: (kernel.func_name,) for b in kernel.body.blocks}
    st = _State(module, kernel, funcs, origins, chains, {b: kernel.func_name for b in kernel.body.blocks})
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
                if op.guard_pred is not None and (not direct or (name in funcs and name in st.recursive)
                                                  or (name not in funcs and name not in RUNTIME_FUNCTIONS)):
                    # a real call or a dispatch would run in every lane, the guard's false ones too
                    raise InlineError(f"guarded call '@{op.guard_pred[0][1]} {op.opcode} ...' in {origins[block][0]}: "
                                      f"the emulator runs guarded calls of non-recursive functions only (branch "
                                      f"around the call instead; nvcc does)")
                if not direct:
                    if indirect_register(op) is None:
                        raise InlineError(f"call '{op.opcode} ...' in {kernel.func_name} names no function or register")
                    _dispatch(st, block, op)
                    changed = True
                    break
                callee = funcs.get(name or "")
                if callee is None:
                    op.attributes[RETURN_ATTR + ".done"] = UnitAttr()
                    continue
                if name in st.recursive:
                    _real_call(st, block, op, callee)
                    changed = True
                    break
                if name in chains[block]:
                    raise InlineError(f"recursive call to '{name}' ({' -> '.join(chains[block] + (name,))}) cannot be inlined")
                st.count += 1
                if st.count > MAX_INLINES:
                    raise InlineError(f"more than {MAX_INLINES} calls to inline in {kernel.func_name}")
                _inline_one(kernel, block, op, callee, st.count, origins, chains, st.owners)
                changed = True
                break
            if changed:
                break
    kernel.attributes[ACTIVATIONS_ATTR] = ArrayAttr([StringAttr(st.owners[b]) for b in kernel.body.blocks])
    for b in kernel.body.blocks:
        if st.owners[b] != kernel.func_name:
            for op in b.ops:
                if isinstance(op, InstructionOp):
                    op.attributes[KEEP_ATTR] = UnitAttr()
    return [origins[b] for b in kernel.body.blocks]


class _State:
    """What ``inline_calls`` keeps while it rewrites one kernel."""

    def __init__(self, module, kernel, funcs, origins, chains, owners):
        self.module, self.kernel, self.funcs = module, kernel, funcs
        self.origins, self.chains, self.owners = origins, chains, owners
        self.recursive = recursive_functions(module, funcs)
        self.taken: list[str] | None = None
        self.copies: dict[str, dict[str, str]] = {}  # recursive function -> its formals' names in the kernel
        self.count = 0


def _split_after(block: Block, call: InstructionOp) -> Block:
    rest = Block()
    for o in list(_ops_after(call)):
        o.detach()
        rest.add_op(o)
    call.attributes[RETURN_ATTR + ".done"] = UnitAttr()
    return rest


def _check_arity(call: InstructionOp, callee: FuncOp) -> tuple[tuple, tuple]:
    ret_items, arg_items = _call_items(call)
    nf = len(callee.params.data)
    nr = len(callee.ret_params.data) if callee.ret_params else 0
    if len(arg_items) != nf or len(ret_items) != nr:
        raise InlineError(
            f"call to '{callee.func_name}' passes {len(arg_items)} arguments and {len(ret_items)} return values; "
            f"it declares {nf} and {nr}"
        )
    return ret_items, arg_items


def _real_call_attr(st: _State, call: InstructionOp, callee: FuncOp) -> ArrayAttr:
    """The ``hypa.call`` attribute of a real call of ``callee`` (its copy made if needed)."""
    ret_items, arg_items = _check_arity(call, callee)
    formals = _real_copy(st, callee)
    pairs = []
    for items, plist in ((arg_items, callee.params.data), (ret_items, callee.ret_params.data if callee.ret_params else ())):
        out = []
        for a, p in zip(items, plist):
            if a[0] != "sym":
                raise InlineError(f"call to the recursive function '{callee.func_name}' passes '{a[1] if len(a) > 1 else a}' "
                                  f"for '{p[1]}'; the emulator's real calls take .param arguments only")
            out.append(ArrayAttr([StringAttr(a[1]), StringAttr(formals[p[1]])]))
        pairs.append(ArrayAttr(out))
    return ArrayAttr([StringAttr(callee.func_name), pairs[0], pairs[1]])


def _real_call(st: _State, block: Block, call: InstructionOp, callee: FuncOp) -> None:
    """``call`` of a recursive function: the block ends with a real call, then the rest."""
    attr = _real_call_attr(st, call, callee)
    rest = _split_after(block, call)
    ft = new_op(FallthroughOp, {}, [rest])
    ft.attributes[CALL_ATTR] = attr
    block.add_op(ft)
    st.kernel.body.insert_block_after(rest, block)
    _rest_of(st, block, rest)


def _rest_of(st: _State, block: Block, rest: Block) -> None:
    o = st.origins[block]
    st.origins[rest] = (o[0], o[1], o[2] + 1)
    st.chains[rest] = st.chains[block]
    st.owners[rest] = st.owners[block]


def _dispatch(st: _State, block: Block, call: InstructionOp) -> None:
    """An indirect call: one successor per possible target (an inlined copy, or a real call)."""
    kernel = st.kernel
    if st.taken is None:
        st.taken = address_taken(st.module)
    targets = indirect_targets(st.module, call, st.funcs, st.taken)
    rest = _split_after(block, call)
    region = kernel.body
    anchor = block
    entries: list[Block] = []
    for t in targets:
        callee = st.funcs[t]
        if t in st.recursive:
            nb = Block()
            ft = new_op(FallthroughOp, {}, [rest])
            ft.attributes[CALL_ATTR] = _real_call_attr(st, call, callee)
            nb.add_op(ft)
            region.insert_block_after(nb, anchor)
            anchor = nb
            st.origins[nb] = (st.origins[block][0], st.origins[block][1], st.origins[block][2] + 1)
            st.chains[nb] = st.chains[block]
            st.owners[nb] = st.owners[block]
            entries.append(nb)
            continue
        if t in st.chains[block]:
            raise InlineError(f"recursive call to '{t}' ({' -> '.join(st.chains[block] + (t,))}) cannot be inlined")
        st.count += 1
        if st.count > MAX_INLINES:
            raise InlineError(f"more than {MAX_INLINES} calls to inline in {kernel.func_name}")
        copies = _copy_callee(call, callee, st.count, rest)
        for i, nb in enumerate(copies):
            region.insert_block_after(nb, anchor)
            anchor = nb
            st.origins[nb] = (t, i, 0)
            st.chains[nb] = st.chains[block] + (t,)
            st.owners[nb] = st.owners[block]
        entries.append(copies[0])
    region.insert_block_after(rest, anchor)
    _rest_of(st, block, rest)
    ft = new_op(FallthroughOp, {}, entries)
    ft.attributes[DISPATCH_ATTR] = ArrayAttr([StringAttr(t) for t in targets])
    block.add_op(ft)


def _real_copy(st: _State, callee: FuncOp) -> dict[str, str]:
    """The kernel's one copy of the recursive function ``callee`` (made on first use): its
    blocks at the end of the body, every ``ret`` a branch to one return block; returns the
    kernel-level names of its formal parameters (``.param`` variables of the copy)."""
    name = callee.func_name
    done = st.copies.get(name)
    if done is not None:
        return done
    st.count += 1
    k = st.count
    suffix = f"__real{k}"
    for p in (*callee.params.data, *(callee.ret_params.data if callee.ret_params else ())):
        if p[2] != ".param":
            raise InlineError(f"the recursive function '{name}' has the {p[2]} parameter '{p[1]}'; the emulator's "
                              f"real calls take .param parameters only")
    for op in callee.body.walk():
        if isinstance(op, InstructionOp) and op.spec.name == "exit":
            raise InlineError(f"the recursive function '{name}' executes 'exit'; the emulator's real calls "
                              f"need every call to return")
    formals = {p[1]: p[1] + suffix for p in (*callee.params.data, *(callee.ret_params.data if callee.ret_params else ()))}
    st.copies[name] = formals
    syms = dict(formals)
    for op in callee.body.walk():
        if isinstance(op, (LabelOp, BranchTargetsOp)):
            syms[op.label.data] = op.label.data + suffix
        elif isinstance(op, VarOp):
            syms[op.var_name] = op.var_name + suffix
    ret_block = Block()
    r = new_op(ImplicitReturnOp, {})
    r.attributes[REAL_RETURN_ATTR] = StringAttr(name)
    ret_block.add_op(r)
    mapping: dict[Block, Block] = {b: Block() for b in callee.body.blocks}
    copies = list(mapping.values())
    regs = SCOPE_STRIDE * k
    for b, nb in zip(callee.body.blocks, copies):
        for op in b.ops:
            nb.add_op(_copy_op(op, regs, syms, mapping, ret_block))
        nb.name_hint = (b.name_hint or "bb") + suffix
    # the formals: call parameters of the kernel, one set per function (saved per frame)
    decls = [new_op(VarOp, {"decl": VarDeclAttr.fast(((), ".param", ((".align", p[4]),) if p[4] else (), p[3],
                                                          formals[p[1]], tuple(p[5]), None))})
             for p in (*callee.params.data, *(callee.ret_params.data if callee.ret_params else ()))]
    first = copies[0]
    for d in reversed(decls):
        if first.first_op is not None:
            first.insert_op_before(d, first.first_op)
        else:
            first.add_op(d)
    region = st.kernel.body
    for i, nb in enumerate(copies):
        region.add_block(nb)
        st.origins[nb] = (name, i, 0)
        st.chains[nb] = (name,)
        st.owners[nb] = name
    region.add_block(ret_block)
    st.origins[ret_block] = (name, len(copies) - 1, 1)
    st.chains[ret_block] = (name,)
    st.owners[ret_block] = name
    return formals


def _copy_callee(call: InstructionOp, callee: FuncOp, k: int, rest: Block) -> list[Block]:
    """A copy of ``callee``'s blocks for one call site, returning to ``rest``."""
    ret_items, arg_items = _check_arity(call, callee)
    formals = [p[1] for p in callee.params.data]
    formal_rets = [p[1] for p in (callee.ret_params.data if callee.ret_params else ())]
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
    return copies


def _inline_one(kernel, block, call, callee, k, origins, chains, owners) -> None:
    region: Region = kernel.body
    # 1. split the calling block after the call, 2. copy the callee
    _check_arity(call, callee)
    rest = _split_after(block, call)
    copies = _copy_callee(call, callee, k, rest)
    # 3. wire: call block -> copy entry (a guarded call: or the rest); copies in layout after the call block
    if call.guard_pred is None:
        block.add_op(new_op(FallthroughOp, {}, [copies[0]]))
    else:
        ft = new_op(FallthroughOp, {}, [copies[0], rest])
        ft.attributes[GUARDED_CALL_ATTR] = UnitAttr()
        block.add_op(ft)
    anchor = block
    for i, nb in enumerate(copies):
        region.insert_block_after(nb, anchor)
        anchor = nb
        origins[nb] = (callee.func_name, i, 0)
        chains[nb] = chains[block] + (callee.func_name,)
        owners[nb] = owners[block]
    region.insert_block_after(rest, anchor)
    o = origins[block]
    origins[rest] = (o[0], o[1], o[2] + 1)
    chains[rest] = chains[block]
    owners[rest] = owners[block]


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
#: on an inlined kernel: the activation each block runs in, ``[function, ...]`` (the kernel, or
#: the recursive function whose copy holds the block: the values a real call saves)
ACTIVATIONS_ATTR = "hypa.block_activations"


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


def block_activations(kernel: FuncOp) -> list[str]:
    """Each block's activation as ``ptx-inline`` recorded it (the kernel's own where none is)."""
    blocks = list(kernel.body.blocks)
    rec = kernel.attributes.get(ACTIVATIONS_ATTR)
    if isinstance(rec, ArrayAttr) and len(rec.data) == len(blocks):
        return [e.data for e in rec.data]  # type: ignore[union-attr]
    return [kernel.func_name] * len(blocks)


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
