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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Operand = tuple[Any, ...]

SINK: Operand = ("sink",)


def reg(name: str, scope: int = 0) -> Operand:
    return ("reg", name, scope)


def imm(text: str) -> Operand:
    return ("imm", text)


def sym(name: str, offset: int = 0) -> Operand:
    return ("sym", name, offset)


def addr(base: Operand, offset: int = 0, suffix: str = "") -> Operand:
    return ("addr", base, offset, suffix)


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
    raise ValueError(f"unknown operand kind {kind!r}")


def format_operands(args: tuple[Operand, ...], reg_name: Callable[[Operand], str] | None = None) -> str:
    return ", ".join(format_operand(a, reg_name) for a in args)


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
    elif kind == "not":
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
    if kind == "not":
        return ("not", map_regs(op[1], fn))
    if kind == "pair":
        return ("pair", map_regs(op[1], fn), map_regs(op[2], fn))
    return op


def iter_syms(op: Operand) -> Iterator[str]:
    """Every symbol name referenced inside an operand."""
    kind = op[0]
    if kind == "sym":
        yield op[1]
    elif kind == "addr":
        yield from iter_syms(op[1])
    elif kind in ("vec", "brk", "paren"):
        for o in op[1]:
            yield from iter_syms(o)
    elif kind == "not":
        yield from iter_syms(op[1])
    elif kind == "pair":
        yield from iter_syms(op[1])
        yield from iter_syms(op[2])


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
