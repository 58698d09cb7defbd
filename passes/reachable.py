"""The part of a module one kernel needs: itself, the functions it reaches, its variables.

Preparing a kernel rewrites IR (inlining, SSA, slicing), so it works on a copy.
Copying the whole module for each kernel makes a module of N kernels cost
O(N^2) (XLA modules hold hundreds of kernels); copying only what the kernel
reaches keeps the cost of each kernel independent of the module around it.

What a kernel reaches: every function named by a ``call`` or by an operand
(function addresses), transitively; every module-level variable named by an
operand of those functions or by the initializer of a reached variable
(``generic(x)``, ``x+4``).  Module-level ``.global`` and ``.const`` variables
are state every kernel of the module shares, so they are all kept (a launch
reports their values); ``.shared`` variables are per-CTA storage and only the
referenced ones are kept, as ``ptxas`` allocates only those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region

from hypa.ptxdialect.dialect import FuncOp, InstructionOp, VarOp, new_op
from hypa.ptxdialect.operands import iter_syms

_IDENT = re.compile(r"[A-Za-z_$%][\w$]*")


@dataclass
class Extracted:
    """A module holding copies of what one kernel needs, and what copying cost."""

    module: ModuleOp
    kernel: FuncOp
    functions: list[str]  # the kernel first, then the functions it reaches, in module order
    ops_cloned: int


#: stands for "an indirect call": every function a ``.global``/``.const`` initializer names
#: (tables of function pointers, virtual tables) may be its target
_INDIRECT = "%indirect-call"


def _operand_symbols(func: FuncOp) -> set[str]:
    out: set[str] = set()
    for op in func.body.walk():
        if isinstance(op, InstructionOp):
            for a in op.operands_ast:
                out.update(iter_syms(a))
            if op.spec.name == "call" and any(a[0] == "reg" for a in op.operands_ast):
                out.add(_INDIRECT)
        elif isinstance(op, VarOp) and op.init:
            out.update(_IDENT.findall(op.init))
    return out


@dataclass
class SymbolIndex:
    """A module's functions and variables by name, made once per module: looking up what
    each kernel reaches then costs O(what it reaches), not O(module)."""

    funcs: dict[str, list[FuncOp]]
    variables: dict[str, VarOp]
    position: dict[Operation, int]  # module order of the top-level operations
    directives: list[Operation]  # top-level operations that are neither functions nor variables

    @classmethod
    def of(cls, module: ModuleOp) -> "SymbolIndex":
        funcs: dict[str, list[FuncOp]] = {}
        variables: dict[str, VarOp] = {}
        position: dict[Operation, int] = {}
        directives: list[Operation] = []
        for i, op in enumerate(module.ops):
            position[op] = i
            if isinstance(op, FuncOp):
                funcs.setdefault(op.func_name, []).append(op)
            elif isinstance(op, VarOp):
                variables[op.var_name] = op
            else:
                directives.append(op)
        return cls(funcs, variables, position, directives)


def reachable(module: ModuleOp, kernel: FuncOp, index: SymbolIndex | None = None) -> tuple[list[Operation], list[str]]:
    """Module-level operations the kernel needs, in module order, and the reached function names."""
    index = index or SymbolIndex.of(module)
    funcs, variables = index.funcs, index.variables
    seen_funcs: set[str] = {kernel.func_name}
    seen_vars: set[str] = set()
    work_funcs: list[FuncOp] = [kernel]
    work_vars: list[VarOp] = []
    while work_funcs or work_vars:
        if work_funcs:
            names = _operand_symbols(work_funcs.pop())
        else:
            v = work_vars.pop()
            names = set(_IDENT.findall(v.init)) if v.init else set()
        if _INDIRECT in names and _INDIRECT not in seen_vars:
            seen_vars.add(_INDIRECT)
            names |= {n for v in variables.values() if v.space in (".global", ".const") and v.init
                      for n in _IDENT.findall(v.init) if n in funcs}
        for n in names:
            if n in funcs and n not in seen_funcs:
                seen_funcs.add(n)
                work_funcs.extend(funcs[n])
            elif n in variables and n not in seen_vars:
                seen_vars.add(n)
                work_vars.append(variables[n])
    keep: list[Operation] = list(index.directives)  # .version, .target, .address_size ...
    for n in seen_funcs:
        keep.extend(index.funcs[n])
    for v in index.variables.values():
        # .const: module state every kernel shares (one bank); .global and .shared: only what the
        # kernel names, or what reached variables' initializers name (a module of CUDA C++
        # headers, CuPy's, declares a thousand .global constants no kernel reads: each would
        # take one of the emulator's address windows)
        if v.space == ".const" or v.var_name in seen_vars:
            keep.append(v)
    keep.sort(key=index.position.__getitem__)
    reached = [kernel.func_name] + [op.func_name for op in keep if isinstance(op, FuncOp)
                                    and not op.is_declaration and op.func_name != kernel.func_name]
    return keep, list(dict.fromkeys(reached))


def clone_function(func: FuncOp) -> FuncOp:
    """A copy of a function.  Register form (the parser's output: operations without
    operands, results or regions) is copied directly, sharing the immutable properties,
    at a fraction of the cost of xDSL's generic ``clone``; anything else takes ``clone``."""
    blocks = list(func.body.blocks)
    where = func.__dict__.get("directive_locations")
    for b in blocks:
        if b.args:
            return _with_locations(func.clone(), where)
        for op in b.ops:
            if op.operands or op.results or op.regions:
                return _with_locations(func.clone(), where)
    mapping = {b: Block() for b in blocks}
    for b in blocks:
        nb = mapping[b]
        ops = []
        for op in b.ops:
            c = new_op(type(op), dict(op.properties), [mapping[s] for s in op.successors])
            if op.attributes:
                c.attributes = dict(op.attributes)
            c.location = op.location
            ops.append(c)
        nb.add_ops(ops)
    new = FuncOp.create(properties=dict(func.properties), attributes=dict(func.attributes),
                        regions=[Region([mapping[b] for b in blocks])])
    return _with_locations(new, where)  # type: ignore[arg-type]


def _with_locations(new: FuncOp, where) -> FuncOp:
    """The copy keeps the source positions of its directives (``FuncOp.directive_location``)."""
    if where:
        new.directive_locations = where
    return new


def extract_kernel(module: ModuleOp, kernel: FuncOp, index: SymbolIndex | None = None) -> Extracted:
    """A new module with copies of the operations ``kernel`` needs (the input is untouched);
    ``index``: the module's ``SymbolIndex`` where the caller keeps one."""
    keep, reached = reachable(module, kernel, index)
    clones: list[Operation] = []
    new_kernel: FuncOp | None = None
    ops_cloned = 0
    for op in keep:
        c = clone_function(op) if isinstance(op, FuncOp) else op.clone()
        ops_cloned += sum(1 for _ in c.walk())
        if op is kernel:
            new_kernel = c  # type: ignore[assignment]
        clones.append(c)
    assert new_kernel is not None
    return Extracted(ModuleOp(clones), new_kernel, reached, ops_cloned)
