"""PTX text of declarations, for the MLIR form of the ``ptx`` dialect.

Function parameters, variable declarations, register names, linkage and
performance directives are stored as small tuples (the front end builds
millions of ops; a tuple is cheap and hashes).  The MLIR form prints each as
the PTX it stands for (``#ptx.params<".param .u32 n, .param .u64 x">``) and
reads it back here, so a module printed with ``-t mlir`` reads like PTX and
parses back to equal properties.  The front end (``parser.py``) builds the same
tuples from PTX with full diagnostics; this module only reads what the
dialect printed, so its errors are plain ``ValueError``s.
"""

from __future__ import annotations

import re

from . import isa
from .operands import parse_int_immediate

LINKAGE = frozenset([".extern", ".visible", ".weak", ".common"])
VAR_SPACES = frozenset([".global", ".const", ".shared", ".local", ".param", ".tex"])
OPAQUE_TYPES = frozenset([".texref", ".samplerref", ".surfref"])
VECTORS = frozenset([".v2", ".v4", ".v8"])
#: qualifiers a parameter or variable may carry besides its type
POINTER_QUALIFIERS = frozenset([".ptr", ".global", ".shared", ".const", ".local"])

_WORD = re.compile(r"\.attribute\([^)]*\)|[^\s\[]+|\[[^\]]*\]")
_DIMS = re.compile(r"\[(\d*|0[xX][0-9a-fA-F]+)\]")


def _type_token(t: str) -> bool:
    return t in isa.ALL_TYPES or t in OPAQUE_TYPES


def _dims(text: str) -> tuple[int, ...]:
    dims = []
    pos = 0
    for m in _DIMS.finditer(text):
        if m.start() != pos:
            raise ValueError(f"expected '[N]' in {text!r}")
        dims.append(parse_int_immediate(m.group(1)) if m.group(1) else -1)
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"expected '[N]' in {text!r}")
    return tuple(dims)


def _name_and_dims(token: str) -> tuple[str, tuple[int, ...]]:
    i = token.find("[")
    return (token, ()) if i < 0 else (token[:i], _dims(token[i:]))


# -- parameters ---------------------------------------------------------------


def format_params(params: tuple) -> str:
    """``(decl_text, name, space, type, align, dims)`` entries as PTX."""
    return ", ".join(p[0] for p in params)


def parse_param(text: str) -> tuple:
    """One parameter declaration: ``.param .align 8 .b8 p[16]``."""
    words = text.split()
    if not words or words[0] not in (".param", ".reg"):
        raise ValueError(f"a parameter begins with '.param' or '.reg': {text!r}")
    ptx_type, align = "", None
    i = 1
    while i < len(words) - 1:
        w = words[i]
        if w == ".align":
            align = parse_int_immediate(words[i + 1])
            i += 2
            continue
        if _type_token(w):
            ptx_type = w
        elif w not in POINTER_QUALIFIERS and w not in VECTORS:
            raise ValueError(f"unexpected {w!r} in the parameter {text!r}")
        i += 1
    if not ptx_type or i != len(words) - 1:
        raise ValueError(f"expected '.param .type name' in {text!r}")
    name, dims = _name_and_dims(words[-1])
    return (text, name, words[0], ptx_type, align, dims)


def parse_params(text: str) -> tuple:
    return tuple(parse_param(p.strip()) for p in text.split(",")) if text.strip() else ()


# -- variables ----------------------------------------------------------------


def format_var_decl(decl: tuple) -> str:
    """``(linkage, space, qualifiers, type, name, dims, init)`` as PTX, no ``;``."""
    linkage, space, quals, ptx_type, name, dims, init = decl
    parts = [*linkage, space]
    for q in quals:
        parts.append(q[0] if len(q) == 1 else f"{q[0]} {q[1]}")
    parts.append(ptx_type)
    text = " ".join(parts) + " " + name + "".join("[]" if d < 0 else f"[{d}]" for d in dims)
    return text if init is None else text + " = " + init


def parse_var_decl(text: str) -> tuple:
    head, sep, init = text.partition(" = ")
    words = _WORD.findall(head)
    i = 0
    linkage = []
    while i < len(words) and words[i] in LINKAGE:
        linkage.append(words[i])
        i += 1
    if i >= len(words) or words[i] not in VAR_SPACES:
        raise ValueError(f"expected a state space in the declaration {text!r}")
    space = words[i]
    i += 1
    quals: list[tuple] = []
    ptx_type = None
    while i < len(words) and words[i].startswith("."):
        w = words[i]
        if w == ".align" and i + 1 < len(words):
            quals.append((".align", parse_int_immediate(words[i + 1])))
            i += 2
            continue
        if _type_token(w):
            ptx_type = w
        elif w in VECTORS or w in POINTER_QUALIFIERS or w.startswith(".attribute("):
            quals.append((w,))
        else:
            raise ValueError(f"unexpected {w!r} in the declaration {text!r}")
        i += 1
    if ptx_type is None or i >= len(words):
        raise ValueError(f"expected '.space .type name' in {text!r}")
    name = words[i]
    dims = _dims("".join(words[i + 1:]))
    return (tuple(linkage), space, tuple(quals), ptx_type, name, dims, init if sep else None)


# -- registers, labels, linkage, directives ----------------------------------


def format_reg_names(names: tuple) -> str:
    """``(name, count)`` pairs: count 0 is one register, -1 the empty range ``%r<0>``."""
    return ", ".join(f"{n}<{max(c, 0)}>" if c else n for n, c in names)


_REG_NAME = re.compile(r"\s*([^\s,<>]+)\s*(?:<\s*(\d+)\s*>)?\s*")


def parse_reg_names(text: str) -> tuple:
    out = []
    for part in text.split(","):
        m = _REG_NAME.fullmatch(part)
        if m is None:
            raise ValueError(f"expected 'name' or 'name<N>' in {text!r}")
        n = m.group(2)
        out.append((m.group(1), 0 if n is None else (int(n) or -1)))
    return tuple(out)


def format_words(words: tuple) -> str:
    return " ".join(words)


def parse_words(text: str) -> tuple:
    return tuple(text.split())


def format_names(names: tuple) -> str:
    return ", ".join(names)


def parse_names(text: str) -> tuple:
    return tuple(n.strip() for n in text.split(",")) if text.strip() else ()


def format_ints(values: tuple) -> str:
    return ", ".join(str(v) for v in values)


def parse_ints(text: str) -> tuple:
    return tuple(int(v) for v in text.split(",")) if text.strip() else ()


def format_directives(directives: tuple) -> str:
    """``(keyword, text)`` pairs: ``.maxntid 256, 1, 1; .noreturn``."""
    return "; ".join(f"{k} {t}" if t else k for k, t in directives)


def parse_directives(text: str) -> tuple:
    out = []
    for part in text.split(";"):
        part = part.strip()
        if part:
            k, _, rest = part.partition(" ")
            out.append((k, rest.strip()))
    return tuple(out)
