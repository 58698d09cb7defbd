"""PTX instruction operands as small immutable tuples.

Operands are kept as plain tuples tagged by their first element because the
front end creates millions of them: a tuple costs a fraction of a dataclass to
build, compares structurally (so ``parse(print(parse(x))) == parse(x)`` is a
plain ``==``) and hashes, which xDSL's ``Data`` attributes require.

Kinds (first element):

``("reg", name, scope)``
    a declared register, ``%r1``; ``scope`` is 0 for function-level
    declarations and a positive id for a register declared in a nested ``{ }``
    scope that shadows an outer one.
``("sreg", name)``
    a special (read-only) register such as ``%tid.x``.
``("imm", text)``
    an immediate as written: ``-1``, ``0x10``, ``0f3F800000``, ``1.5``.
``("sym", name, offset)``
    a label, function, variable or parameter name, with an optional ``+offset``.
``("addr", base, offset, suffix)``
    a memory operand ``[base+offset]``; base is a reg, sym or imm node, suffix
    is a trailing modifier such as ``.unified`` (usually empty).
``("brk", items)``
    a bracketed list ``[a, b, {c, d}]`` (texture, tensor and surface operands).
``("vec", items)``
    a vector ``{a, b, c, d}``.
``("not", node)``
    a negated predicate ``!%p``.
``("pair", a, b)``
    a dual destination ``%p|%q``.
``("paren", items)``
    a parenthesised list ``(a, b)`` (``call`` arguments and return values).
``("sink",)``
    the bit bucket ``_``.
``("elem", reg, field)``
    one element of a vector register (``.reg .v4 .u32 v``): ``v.x``; ``field`` is the
    suffix as written (``.x .y .z .w`` or ``.r .g .b .a``, ``isa.ELEMENT_FIELDS``).
    Read, it is the element; written, it replaces that element and keeps the others
    (the statement also reads the register's old value, as a guarded write does).
``("radd", reg, offset)``
    a register plus an immediate, ``%rd1 + 8`` (a source operand; ``ptxas`` has no
    ``reg - imm``, it writes ``%rd1 + -8``): the register's value plus ``offset``,
    wrapped to the register's width.
``("vsel", reg, selector)``
    a video instruction's operand with a byte/half-word selector, ``%r1.b0``, ``%r2.h10``,
    ``%r3.b7654``; ``selector`` as written (which ones an instruction takes:
    ``isa.VIDEO_FORMS``).  On the destination (``d.h0``) it says where the result is
    merged; the whole register is written.
``("neg", node)``
    a negated source of ``vmad``, ``-%r1`` or ``-%r1.b0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Operand = tuple[Any, ...]


def _fmt_offset(offset: int) -> str:
    # nvcc writes negative offsets as "+-8"; both forms assemble.
    return "" if offset == 0 else f"+{offset}"


def format_operand(op: Operand, reg_name: Callable[[Operand], str] | None = None) -> str:
    """PTX text of one operand; ``reg_name`` may rename registers (out of SSA)."""
    kind = op[0]
    if kind == "reg":
        if reg_name is not None:
            return reg_name(op)
        return op[1]
    if kind == "sreg" or kind == "imm":
        return op[1]
    if kind == "sym":
        return op[1] + _fmt_offset(op[2])
    if kind == "addr":
        return "[" + format_operand(op[1], reg_name) + _fmt_offset(op[2]) + "]" + op[3]
    if kind == "vec":
        return "{" + ", ".join(format_operand(o, reg_name) for o in op[1]) + "}"
    if kind == "brk":
        return "[" + ", ".join(format_operand(o, reg_name) for o in op[1]) + "]"
    if kind == "paren":
        return "(" + ", ".join(format_operand(o, reg_name) for o in op[1]) + ")"
    if kind == "not":
        return "!" + format_operand(op[1], reg_name)
    if kind == "pair":
        return format_operand(op[1], reg_name) + "|" + format_operand(op[2], reg_name)
    if kind == "sink":
        return "_"
    if kind == "elem":
        # the MLIR form writes the scope after the whole name: ``v.x#1``
        base, hash_, scope = format_operand(op[1], reg_name).partition("#")
        return base + op[2] + hash_ + scope
    if kind == "radd":
        return format_operand(op[1], reg_name) + f"+{op[2]}"
    if kind == "vsel":  # like an element: ``%r1.b0#1`` in the MLIR form
        base, hash_, scope = format_operand(op[1], reg_name).partition("#")
        return base + op[2] + hash_ + scope
    if kind == "neg":
        return "-" + format_operand(op[1], reg_name)
    raise ValueError(f"unknown operand kind {kind!r}")


def format_reg_annotated(op: Operand) -> str:
    """Register text for the MLIR form: registers of a nested scope, and
    registers whose name does not start with ``%``, carry ``#scope`` so the
    text says they are registers."""
    return op[1] if op[2] == 0 and op[1].startswith("%") else f"{op[1]}#{op[2]}"


def iter_regs(op: Operand) -> Iterator[Operand]:
    """Every register node inside an operand, in textual order."""
    kind = op[0]
    if kind == "reg":
        yield op
    elif kind == "addr":
        yield from iter_regs(op[1])
    elif kind in ("vec", "brk", "paren"):
        for o in op[1]:
            yield from iter_regs(o)
    elif kind == "not" or kind == "elem" or kind == "radd" or kind == "vsel" or kind == "neg":
        yield from iter_regs(op[1])
    elif kind == "pair":
        yield from iter_regs(op[1])
        yield from iter_regs(op[2])


def map_regs(op: Operand, fn: Callable[[Operand], Operand]) -> Operand:
    """A copy of ``op`` with every register node replaced by ``fn(node)``."""
    kind = op[0]
    if kind == "reg":
        return fn(op)
    if kind == "addr":
        return ("addr", map_regs(op[1], fn), op[2], op[3])
    if kind in ("vec", "brk", "paren"):
        return (kind, tuple(map_regs(o, fn) for o in op[1]))
    if kind == "not" or kind == "neg":
        return (kind, map_regs(op[1], fn))
    if kind == "pair":
        return ("pair", map_regs(op[1], fn), map_regs(op[2], fn))
    if kind == "elem" or kind == "radd" or kind == "vsel":
        return (kind, map_regs(op[1], fn), op[2])
    return op


def is_partial_write(op: Operand) -> bool:
    """Whether writing ``op`` changes only part of a register (a vector element)."""
    kind = op[0]
    if kind == "elem":
        return True
    if kind in ("vec", "paren"):
        return any(is_partial_write(o) for o in op[1])
    if kind == "pair":
        return is_partial_write(op[1]) or is_partial_write(op[2])
    return False


def leaves(op: Operand, kinds: frozenset[str]) -> Iterator[Operand]:
    """Every node of one of ``kinds`` inside an operand, in textual order (not looking
    inside a node of those kinds)."""
    kind = op[0]
    if kind in kinds:
        yield op
    elif kind == "addr" or kind == "not" or kind == "vsel" or kind == "neg":
        yield from leaves(op[1], kinds)
    elif kind in ("vec", "brk", "paren"):
        for o in op[1]:
            yield from leaves(o, kinds)
    elif kind == "pair":
        yield from leaves(op[1], kinds)
        yield from leaves(op[2], kinds)


_SYM = frozenset(["sym"])


def iter_syms(op: Operand) -> Iterator[str]:
    """Every symbol name referenced inside an operand."""
    return (n[1] for n in leaves(op, _SYM))


def parse_int_immediate(text: str) -> int:
    """Value of a PTX integer literal (decimal, hex, octal, binary, ``U`` suffix)."""
    t = text
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t.endswith(("U", "u")):
        t = t[:-1]
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t[0] == "0" and t.isdigit():
        v = int(t[1:], 8)
    else:
        v = int(t)
    return -v if neg else v


def is_float_immediate(text: str) -> bool:
    t = text.lstrip("-")
    return t[:2] in ("0f", "0F", "0d", "0D") or (
        not t[:2].lower() == "0x" and ("." in t or "e" in t.lower())
    )


# ---------------------------------------------------------------------------
# The operand text of the MLIR form (``args``, guards, entry values)
# ---------------------------------------------------------------------------


class _OperandText:
    """Recursive descent over the tokens of one operand list.

    There are no declarations here: a ``%``-name is a register unless it is a
    special register, and a name followed by ``#N`` is a register of scope N
    (``format_reg_annotated`` writes them so).  The front end's statement
    parser builds the same tuples from PTX, where declarations decide."""

    def __init__(self, text: str):
        from .diagnostics import SourceFile
        from .lexer import tokenize

        self.src = SourceFile(text, "<args>")
        self.toks = tokenize(self.src)
        self.i = 0

    def error(self, message: str) -> Exception:
        from .diagnostics import PTXSyntaxError

        return PTXSyntaxError(self.src, self.toks[self.i][2], message)

    def peek(self, k: int = 0) -> tuple[str, str, int]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, text: str) -> bool:
        t = self.peek()
        return t[1] == text and t[0] != "str"

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def describe(self) -> str:
        t = self.peek()
        return "end of text" if t[0] == "eof" else repr(t[1])

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise self.error(f"expected {text!r}, found {self.describe()}")

    def integer(self, what: str) -> int:
        neg = self.accept("-")
        t = self.peek()
        try:
            v = parse_int_immediate(t[1]) if t[0] == "num" else None
        except ValueError:
            v = None
        if v is None:
            raise self.error(f"expected {what}, found {self.describe()}")
        self.i += 1
        return -v if neg else v

    def operand_list(self) -> tuple:
        if self.peek()[0] == "eof":
            return ()
        args = [self.operand()]
        while self.accept(","):
            args.append(self.operand())
        if self.peek()[0] != "eof":
            raise self.error(f"unexpected {self.describe()} in operand text")
        return tuple(args)

    def operand(self) -> Operand:
        node = self.primary()
        if self.accept("|"):
            return ("pair", node, self.primary())
        if node[0] == "reg" and self.at("+"):
            self.i += 1
            return ("radd", node, self.integer("an immediate after '+'"))
        return node

    def items(self, close: str) -> tuple:
        out = [self.operand()]
        while self.accept(","):
            out.append(self.operand())
        self.expect(close)
        return tuple(out)

    def primary(self) -> Operand:
        from .isa import ELEMENT_FIELDS, SPECIAL_REGISTERS, VIDEO_SELECTOR_SYNTAX

        kind, text, _ = self.peek()
        if kind == "punct":
            self.i += 1
            if text == "!":
                return ("not", self.primary())
            if text == "{":
                return ("vec", self.items("}"))
            if text == "(":
                return ("paren", () if self.accept(")") else self.items(")"))
            if text == "[":
                return self.address()
            if text == "-" and self.peek()[0] == "num":
                self.i += 1
                return ("imm", "-" + self.toks[self.i - 1][1])
            if text == "-" and self.peek()[0] == "name":
                return ("neg", self.primary())
            self.i -= 1
        elif kind == "num":
            self.i += 1
            return ("imm", text)
        elif kind == "name" and not text.startswith("."):
            self.i += 1
            if text == "_":
                return ("sink",)
            base, dot, field = text.rpartition(".")
            is_elem = dot and "." + field in ELEMENT_FIELDS and text not in SPECIAL_REGISTERS
            is_vsel = dot and VIDEO_SELECTOR_SYNTAX.fullmatch(field) is not None and text not in SPECIAL_REGISTERS
            if self.accept("#"):
                scope = self.integer("a scope id after '#'")
                if is_elem or is_vsel:
                    return ("elem" if is_elem else "vsel", ("reg", base, scope), "." + field)
                return ("reg", text, scope)
            if (is_elem or is_vsel) and base.startswith("%"):
                return ("elem" if is_elem else "vsel", ("reg", base, 0), "." + field)
            if text.startswith("%") and (text not in SPECIAL_REGISTERS or text == "%cc"):
                return ("reg", text, 0)
            if text in SPECIAL_REGISTERS:
                return ("sreg", text)
            off = 0
            if self.at("+") or (self.at("-") and self.peek(1)[0] == "num"):
                sign = -1 if self.peek()[1] == "-" else 1
                self.i += 1
                off = sign * self.integer("an offset")
            return ("sym", text, off)
        raise self.error(f"expected an operand, found {self.describe()}")

    def address(self) -> Operand:
        first = self.primary()  # not operand(): '+' after a register is the offset here
        if self.accept("|"):
            first = ("pair", first, self.primary())
        if self.at(","):
            items = [first]
            while self.accept(","):
                items.append(self.operand())
            self.expect("]")
            return ("brk", tuple(items))
        off = 0
        if first[0] == "sym":
            off, first = first[2], ("sym", first[1], 0)
        if first[0] not in ("reg", "sym", "imm"):
            raise self.error("expected a register, variable or immediate address inside '[ ]'")
        if self.at("+") or self.at("-"):
            sign = -1 if self.peek()[1] == "-" else 1
            self.i += 1
            off += sign * self.integer("an integer offset in the address")
        self.expect("]")
        suffix = ""
        if self.peek()[1] == ".unified":
            self.i += 1
            suffix = ".unified"
        return ("addr", first, off, suffix)


def parse_operand_text(text: str) -> tuple:
    """Operands from the MLIR form's operand text (``"%r1, [%rd2+4]"``)."""
    return _OperandText(text).operand_list()


def parse_guard_text(text: str) -> tuple:
    """A guard ``(register, negated)`` from ``"%p1"`` / ``"!%p1"``."""
    t = text.strip()
    negated = t.startswith("!")
    (node,) = parse_operand_text(t[1:] if negated else t)
    return (node, negated)
