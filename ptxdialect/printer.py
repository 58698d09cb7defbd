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
from .declarations import format_reg_names, format_var_decl
from .operands import Operand, format_operand

#: nested ``{ }`` scopes indent up to this depth (10,000 levels at one tab each printed
#: 100 MB for a 200 KB input)
MAX_INDENT = 16

#: renames registers of one instruction: (op, register node) -> text
Namer = Callable[[InstructionOp, Operand], str]


def var_decl_text(op: VarOp) -> str:
    return format_var_decl(op.decl.data) + ";"


def reg_decl_text(op: RegDeclOp) -> str:
    quals = op.qualifiers.data if op.qualifiers is not None else ()
    return " ".join([".reg", *quals, op.ptx_type.data, format_reg_names(op.names.data)]) + ";"


_PLAIN = frozenset(["reg", "sreg", "imm"])


def instruction_text(op: InstructionOp, namer: Namer | None = None) -> str:
    props = op.properties
    text = op.ISA.name + props["mods"].text  # type: ignore[union-attr]
    args = props["args"].data  # type: ignore[union-attr]
    g = props.get("guard")
    if namer is None:
        if args:
            # registers, special registers and immediates print as their text
            text += " " + ", ".join([a[1] if a[0] in _PLAIN else format_operand(a) for a in args])
        if g is not None:
            reg, negated = g.data  # type: ignore[union-attr]
            text = ("@!" if negated else "@") + reg[1] + " " + text
        return text + ";"
    rn: Callable[[Operand], str] = lambda r: namer(op, r)  # noqa: E731
    if args:
        text += " " + ", ".join(format_operand(a, rn) for a in args)
    if g is not None:
        reg, negated = g.data  # type: ignore[union-attr]
        text = ("@!" if negated else "@") + rn(reg) + " " + text
    return text + ";"


def raw_directive_text(op: RawDirectiveOp) -> str:
    d = op.directive.data
    text = op.text.data
    if d in (".file", ".loc", ".target"):  # line directives (no semicolon)
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
        out = ["{\n"]
        put = out.append
        depth = 1
        ind = "\t"
        namer = self.namer
        kinds = _BODY_KINDS
        for block in f.body.blocks:
            op = block.first_op
            while op is not None:
                k = kinds.get(type(op))
                if k is None:
                    k = _body_kind(op)
                if k == _INSTR:
                    put(ind + instruction_text(op, namer) + "\n")  # type: ignore[arg-type]
                elif k == _LABEL:
                    put(op.label.data + ":\n")  # type: ignore[attr-defined]
                elif k == _RAW:
                    put(ind + raw_directive_text(op) + "\n")  # type: ignore[arg-type]
                elif k == _REG:
                    put(ind + reg_decl_text(op) + "\n")  # type: ignore[arg-type]
                elif k == _VAR:
                    put(ind + var_decl_text(op) + "\n")  # type: ignore[arg-type]
                elif k == _BEGIN:
                    put(ind + "{\n")
                    depth += 1
                    ind = "\t" * min(depth, MAX_INDENT)
                elif k == _END:
                    depth -= 1
                    ind = "\t" * min(depth, MAX_INDENT)
                    put(ind + "}\n")
                elif k == _TABLE:
                    put(f"{op.label.data}: .branchtargets {', '.join(op.target_labels.data)};\n")  # type: ignore[attr-defined]
                op = op.next_op
        put("}\n")
        self.w("".join(out))


# what the body printer does with an op, by class (filled on first sight)
_INSTR, _LABEL, _RAW, _REG, _VAR, _BEGIN, _END, _TABLE, _SKIP = range(9)
_BODY_KINDS: dict[type, int] = {}


def _body_kind(op: Operation) -> int:
    for cls, k in (
        (InstructionOp, _INSTR), (LabelOp, _LABEL), (RawDirectiveOp, _RAW), (RegDeclOp, _REG),
        (VarOp, _VAR), (ScopeBeginOp, _BEGIN), (ScopeEndOp, _END), (BranchTargetsOp, _TABLE),
        (FallthroughOp, _SKIP), (ImplicitReturnOp, _SKIP), (EntryValueOp, _SKIP),
    ):
        if isinstance(op, cls):
            _BODY_KINDS[type(op)] = k
            return k
    raise ValueError(f"cannot print {op.name} as PTX inside a function body")


def print_ptx(module: ModuleOp, stream: IO[str], namer: Namer | None = None) -> None:
    PTXPrinter(stream, namer).print_module(module)


def module_to_ptx(module: ModuleOp, namer: Namer | None = None) -> str:
    from io import StringIO

    s = StringIO()
    print_ptx(module, s, namer)
    return s.getvalue()
