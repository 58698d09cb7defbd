"""``ptx`` dialect -> PTX text that ``ptxas`` accepts.

The printer walks blocks in layout order; fall-through edges and implicit
returns are structural and print as nothing.  In SSA form register names come
from ``args`` unless a ``namer`` (out-of-SSA register assignment, see
``hypa.passes.out_of_ssa``) renames them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from .dialect import (
    AddressSizeOp,
    BranchTargetsOp,
    EntryValueOp,
    FallthroughOp,
    FuncOp,
    ImplicitReturnOp,
    InstructionOp,
    LabelOp,
    RawDirectiveOp,
    RegDeclOp,
    ScopeBeginOp,
    ScopeEndOp,
    TargetOp,
    VarOp,
    VersionOp,
)
from .operands import Operand, format_operand

#: renames registers of one instruction: (op, register node) -> text
Namer = Callable[[InstructionOp, Operand], str]


def var_decl_text(op: VarOp) -> str:
    linkage, space, quals, ptx_type, name, dims, init = op.decl.data
    parts = [*linkage, space]
    for q in quals:
        parts.append(q[0] if len(q) == 1 else f"{q[0]} {q[1]}")
    parts.append(ptx_type)
    dim_text = "".join("[]" if d < 0 else f"[{d}]" for d in dims)
    text = " ".join(parts) + " " + name + dim_text
    if init is not None:
        text += " = " + init
    return text + ";"


def reg_decl_text(op: RegDeclOp) -> str:
    quals = op.qualifiers.data if op.qualifiers is not None else ()
    names = ", ".join(f"{n}<{c}>" if c else n for n, c in op.names.data)
    return " ".join([".reg", *quals, op.ptx_type.data, names]) + ";"


def instruction_text(op: InstructionOp, namer: Namer | None = None) -> str:
    rn: Callable[[Operand], str] | None = None
    if namer is not None:
        rn = lambda r: namer(op, r)  # noqa: E731
    text = op.opcode
    args = op.operands_ast
    if args:
        text += " " + ", ".join(format_operand(a, rn) for a in args)
    g = op.guard_pred
    if g is not None:
        reg, negated = g
        text = "@" + ("!" if negated else "") + (rn(reg) if rn else reg[1]) + " " + text
    return text + ";"


def raw_directive_text(op: RawDirectiveOp) -> str:
    d = op.directive.data
    text = op.text.data
    if d in (".file", ".loc"):
        return f"{d} {text}".rstrip()
    if d == ".section":
        return f"{d} {text}"
    if d in (".callprototype", ".calltargets"):
        # text holds "label: rest"
        label, _, rest = text.partition(":")
        return f"{label.strip()}: {d} {rest.strip()};"
    return f"{d} {text};" if text else f"{d};"


class PTXPrinter:
    def __init__(self, stream: IO[str], namer: Namer | None = None):
        self.out = stream
        self.namer = namer

    def w(self, s: str) -> None:
        self.out.write(s)

    def print_module(self, module: ModuleOp) -> None:
        prev: Operation | None = None
        for op in module.ops:
            if isinstance(op, FuncOp) or (prev is not None and isinstance(prev, FuncOp)):
                self.w("\n")
            self.print_top(op)
            prev = op

    def print_top(self, op: Operation) -> None:
        if isinstance(op, VersionOp):
            self.w(f".version {op.version.data}\n")
        elif isinstance(op, TargetOp):
            self.w(f".target {', '.join(op.target_names)}\n")
        elif isinstance(op, AddressSizeOp):
            self.w(f".address_size {op.size.data}\n")
        elif isinstance(op, RawDirectiveOp):
            self.w(raw_directive_text(op) + "\n")
        elif isinstance(op, VarOp):
            self.w(var_decl_text(op) + "\n")
        elif isinstance(op, FuncOp):
            self.print_func(op)
        else:
            raise ValueError(f"cannot print {op.name} as PTX at module level")

    def print_func(self, f: FuncOp) -> None:
        head = " ".join([*f.linkage.data, f.kind.data])
        if f.ret_params is not None:
            head += " (" + ", ".join(p[0] for p in f.ret_params.data) + ")"
        head += " " + f.func_name
        params = f.params.data
        if params:
            head += "(\n" + ",\n".join("\t" + p[0] for p in params) + "\n)"
        elif f.kind.data == ".entry" or f.ret_params is not None:
            head += "()"
        self.w(head + "\n")
        for keyword, text in f.directives.data:
            if keyword == ".pragma":
                self.w(f".pragma {text};\n")
            else:
                self.w(f"{keyword} {text}\n".replace(" \n", "\n"))
        if f.is_declaration:
            self.w(";\n")
            return
        self.w("{\n")
        depth = 1
        for block in f.body.blocks:
            for op in block.ops:
                if isinstance(op, LabelOp):
                    self.w(f"{op.label.data}:\n")
                    continue
                if isinstance(op, (FallthroughOp, ImplicitReturnOp, EntryValueOp)):
                    continue
                if isinstance(op, ScopeEndOp):
                    depth -= 1
                ind = "\t" * depth
                if isinstance(op, InstructionOp):
                    self.w(ind + instruction_text(op, self.namer) + "\n")
                elif isinstance(op, RegDeclOp):
                    self.w(ind + reg_decl_text(op) + "\n")
                elif isinstance(op, ScopeBeginOp):
                    self.w(ind + "{\n")
                    depth += 1
                elif isinstance(op, ScopeEndOp):
                    self.w(ind + "}\n")
                elif isinstance(op, VarOp):
                    self.w(ind + var_decl_text(op) + "\n")
                elif isinstance(op, RawDirectiveOp):
                    self.w(ind + raw_directive_text(op) + "\n")
                elif isinstance(op, BranchTargetsOp):
                    self.w(f"{op.label.data}: .branchtargets {', '.join(op.target_labels.data)};\n")
                else:
                    raise ValueError(f"cannot print {op.name} as PTX inside a function body")
        self.w("}\n")


def print_ptx(module: ModuleOp, stream: IO[str], namer: Namer | None = None) -> None:
    PTXPrinter(stream, namer).print_module(module)


def module_to_ptx(module: ModuleOp, namer: Namer | None = None) -> str:
    from io import StringIO

    s = StringIO()
    print_ptx(module, s, namer)
    return s.getvalue()
