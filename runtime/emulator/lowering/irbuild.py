"""IR idioms that the warp function, the helper functions and the CTA scheduler share: a
counted loop, a scalar broadcast to every lane, the ``llvm.cttz.i32`` declaration; and the
helper functions themselves, which a kernel's module only declares once they are built.

Helper functions (``helper_function``: the flat-memory lookup, error recording, the CTA
scheduler, the bounds-checked accesses of ``outline.py`` ...) are named by everything their
code depends on, so one name is one body: the first module of a process that needs one
builds it; ``split_module`` then keeps its IR text in this process's registry, and every
module declares it.  The JIT compiles each helper once (per machine: its disk cache) and
links kernels against it, so a workload of a hundred kernels compiles its helpers once, not
a hundred times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llvmlite import ir

from .types import i1, i32, vec


class Loop:
    """``for i in range(start, stop)`` (signed compare) at the builder's position; the body
    is built after the constructor, with ``self.i``, and ``close()`` ends it."""

    def __init__(self, b: ir.IRBuilder, start: ir.Value, stop: ir.Value, name: str):
        fn = b.function
        self.b = b
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


def broadcast(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The scalar ``v`` in every lane."""
    vt = vec(v.type)
    undef = ir.Constant(vt, None)
    ins = b.insert_element(undef, v, ir.Constant(i32, 0))
    return b.shuffle_vector(ins, undef, ir.Constant(vec(i32), 0))


def cttz(module: ir.Module) -> ir.Function:
    """``llvm.cttz.i32``, declared once per module (``WarpFunction.intrinsic`` finds it)."""
    return module.globals.get("llvm.cttz.i32") or ir.Function(module, ir.FunctionType(i32, [i32, i1]), "llvm.cttz.i32")


#: IR text of every helper function built in this process (a module of its own: the
#: definition and what it calls declared), and the helpers it calls, by name
_HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {}


def helper_function(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> tuple[ir.Function, bool]:
    """The helper function ``name`` in ``module``, and whether it is new: then its caller
    builds the body (in ``module``).  ``name`` must stand for one body: everything the body
    depends on is in it.  A helper built by an earlier module of this process is only
    declared (``split_module`` gives its text)."""
    f = module.globals.get(name)
    if f is not None:
        return f, False  # type: ignore[return-value]
    f = ir.Function(module, ir.FunctionType(ret, args), name)
    helpers = module.__dict__.setdefault("hypa_helpers", [])
    helpers.append(name)
    if name in _HELPERS:
        return f, False
    f.linkage = "internal"
    return f, True


@dataclass
class Lowered:
    """A kernel's LLVM IR: the module's text, which declares the helper functions it calls,
    and each helper's (name, text: a module of its own, the helpers it calls), those a
    helper calls before it."""

    text: str
    helpers: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)

    def full_text(self) -> str:
        """Everything, for reading (``hypa-opt -t llvm``): the module, then each helper."""
        parts = [self.text]
        parts += [f"; helper {name}\n{text}" for name, text, _deps in self.helpers]
        return "\n".join(parts)


def _declaration(f: ir.Function) -> str:
    args = ", ".join(str(t) for t in f.ftype.args)
    return f"declare {f.ftype.return_type} {f.get_reference()}({args})"


_METADATA_REF = re.compile(r"!(\d+)\b")


def _helper_text(module: ir.Module, f: ir.Function, helpers: set[str]) -> tuple[str, tuple[str, ...]]:
    """``f`` as a module of its own (external, so kernels link to it), and the helpers it calls."""
    decls: dict[str, str] = {}
    deps: list[str] = []
    for block in f.blocks:
        for instr in block.instructions:
            for v in (instr.operands if not isinstance(instr, ir.CallInstr) else [instr.callee, *instr.args]):
                if isinstance(v, ir.Function):
                    if v.name in helpers and v is not f:
                        if v.name not in decls:
                            deps.append(v.name)
                        decls[v.name] = _declaration(v)
                    elif v is not f:
                        decls[v.name] = str(v).strip() if not v.blocks else _declaration(v)
                elif isinstance(v, ir.GlobalValue):
                    raise ValueError(f"internal: helper {f.name} uses the module's {v.name}")
    body = str(f)
    if f.linkage:
        body = body.replace(f"define {f.linkage} ", "define ", 1)
    mds = {md.get_reference(): str(md) for md in module.metadata}
    used = [mds[f"!{k}"] for k in dict.fromkeys(_METADATA_REF.findall(body)) if f"!{k}" in mds]
    text = "\n".join([*decls.values(), "", body, *used, ""])
    return text, tuple(deps)


def split_module(module: ir.Module) -> Lowered:
    """The module's text with its helper functions declared, and the helpers' texts (those
    built here are registered for the rest of the process)."""
    helpers = set(module.__dict__.get("hypa_helpers", ()))
    for name in module.__dict__.get("hypa_helpers", ()):
        f = module.globals[name]
        if f.blocks and name not in _HELPERS:
            _HELPERS[name] = _helper_text(module, f, helpers)  # type: ignore[arg-type]
    lines = ['; ModuleID = "%s"' % module.name, 'target triple = "%s"' % module.triple,
             'target datalayout = "%s"' % module.data_layout, '']
    for v in module.globals.values():
        lines.append(_declaration(v) if v.name in helpers else str(v))  # type: ignore[arg-type]
    lines += module._get_metadata_lines()
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            for dep in _HELPERS[name][1]:
                visit(dep)
            order.append(name)

    for name in module.__dict__.get("hypa_helpers", ()):
        visit(name)
    return Lowered("\n".join(lines), [(name, *_HELPERS[name]) for name in order])


def lowest_lane(b: ir.IRBuilder, module: ir.Module, bits: ir.Value) -> ir.Value:
    """The lowest lane set in the i32 mask ``bits`` (32 when none is)."""
    return b.call(cttz(module), [bits, ir.Constant(i1, 0)])


def each_lane(b: ir.IRBuilder, module: ir.Module, lanes: ir.Value, emit) -> None:
    """A loop over the lanes set in the i32 mask ``lanes``, lowest first: ``emit(b, lane)``
    builds each trip's body; ``b`` ends positioned after the loop."""
    fn = b.function
    pre = b.block
    loop, body, done = (fn.append_basic_block(x) for x in ("lane", "lane.body", "lane.done"))
    b.branch(loop)
    b.position_at_end(loop)
    rem = b.phi(ir.IntType(32))
    rem.add_incoming(lanes, pre)
    b.cbranch(b.icmp_unsigned("!=", rem, ir.Constant(ir.IntType(32), 0)), body, done)
    b.position_at_end(body)
    emit(b, lowest_lane(b, module, rem))
    rem.add_incoming(b.and_(rem, b.sub(rem, ir.Constant(ir.IntType(32), 1))), b.block)
    b.branch(loop)
    b.position_at_end(done)
