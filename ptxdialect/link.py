"""Linking the PTX of separately compiled objects (``nvcc -rdc=true``) into one module.

A program built with separate compilation keeps each object's PTX in its own relocatable
fatbin (the ELF section ``__nv_relfatbin``); ``nvlink`` links their machine code, so the
program's registered fatbin holds SASS only.  Emulating the program needs the PTX linked as
``nvlink`` links the SASS:

* a ``.visible`` definition is seen by every object; two of one name are an error (nvlink's
  "multiple definition"); a ``.weak`` one yields to a ``.visible`` one or to the first
  ``.weak`` one (the losers are renamed, unreferenced);
* a definition without linkage (``static``: internal to its object) that shares its name
  with a symbol of another object is renamed in its object (``name`` -> ``name$rdcN``);
* an ``.extern`` declaration of a function some object defines becomes a prototype with
  the definition's linkage; the definition of a variable some object declares ``.extern``
  moves to the top of the module (PTX declares before use) and the declarations go; an
  ``.extern`` that no object defines stays (a call into it stops when it runs, naming it);
* ``.version`` is the highest of the objects', ``.target`` and ``.address_size`` the first
  object's; ``.file`` numbers of later objects are shifted past the earlier ones'.

The result is one PTX text that ``parse_ptx`` reads like any module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .diagnostics import PTXError, SourceFile

_IDENT = r"[A-Za-z_$%][\w$]*"
_HEADER = re.compile(r"^[ \t]*\.(version|target|address_size)\b[^\n]*\n?", re.MULTILINE)
_EXTERN = re.compile(r"^[ \t]*\.extern\b[^;{]*;[ \t]*\n?", re.MULTILINE | re.DOTALL)
_FILE = re.compile(r"(^[ \t]*\.file[ \t]+)(\d+)", re.MULTILINE)
_LOC = re.compile(r"(\.loc[ \t]+)(\d+)")
_VERSION = re.compile(r"^[ \t]*\.version[ \t]+(\d+)\.(\d+)", re.MULTILINE)


class PTXLinkError(PTXError):
    """Objects that cannot be linked (a symbol defined twice)."""


@dataclass
class _Unit:
    name: str
    text: str
    strong: set[str] = field(default_factory=set)  # .visible definitions
    weak: set[str] = field(default_factory=set)  # .weak / .common definitions
    internal: set[str] = field(default_factory=set)  # definitions without linkage
    names: set[str] = field(default_factory=set)  # every module-level symbol


def _symbols(name: str, text: str) -> _Unit:
    from .dialect import FuncOp, VarOp
    from .parser import parse_ptx

    u = _Unit(name, text)
    for op in parse_ptx(text, filename=name).ops:
        if isinstance(op, FuncOp):
            sym, linkage, defined = op.func_name, tuple(op.linkage.data), not op.is_declaration
        elif isinstance(op, VarOp):
            sym, linkage, defined = op.var_name, tuple(op.linkage), ".extern" not in op.linkage
        else:
            continue
        u.names.add(sym)
        if not defined or ".extern" in linkage:
            continue
        if ".weak" in linkage or ".common" in linkage:
            u.weak.add(sym)
        elif ".visible" in linkage:
            u.strong.add(sym)
        else:
            u.internal.add(sym)
    return u


def _rename(text: str, old: str, new: str) -> str:
    return re.sub(rf"(?<![\w$.%]){re.escape(old)}(?![\w$])", new, text)


def link_ptx(objects: Sequence[tuple[str, str]]) -> str:
    """One PTX text from ``(name, PTX text)`` of several relocatable objects (see the module
    docstring); a single object is returned as it is."""
    if len(objects) == 1:
        return objects[0][1]
    units = [_symbols(n, t) for n, t in objects]
    owner: dict[str, int] = {}
    for i, u in enumerate(units):
        for s in sorted(u.strong):
            if s in owner:
                at = re.search(rf"^[ \t]*\.visible\b[^;{{]*?(?<![\w$.%]){re.escape(s)}(?![\w$])", u.text, re.MULTILINE)
                raise PTXLinkError(SourceFile(u.text, u.name), at.end() - len(s) if at else 0,
                                   f"multiple definition of {s} (also defined in {units[owner[s]].name})")
            owner[s] = i
    for i, u in enumerate(units):
        for s in sorted(u.weak):
            if s in owner and owner[s] != i:
                u.text = _rename(u.text, s, f"{s}$rdc{i}")  # the .visible (or first .weak) one wins
            else:
                owner[s] = i
    for i, u in enumerate(units):
        others = set().union(*(v.names for j, v in enumerate(units) if j != i))
        for s in sorted(u.internal & others):
            u.text = _rename(u.text, s, f"{s}$rdc{i}")
    defined = set(owner)
    linkage = {s: (".visible" if s in units[i].strong else ".weak") for s, i in owner.items()}

    # a variable some object defines: its definition moves to the top (PTX declares before use,
    # and a variable has no prototype); a function keeps its declaration, as a prototype
    hoisted: list[str] = []
    for s in sorted(defined):
        u = units[owner[s]]
        m = re.search(rf"^[ \t]*\.(visible|weak|common)\b[^;{{(]*?\.(global|const)\b[^;{{(]*?"
                      rf"(?<![\w$.%]){re.escape(s)}(?![\w$])[^;]*;[ \t]*\n?", u.text, re.MULTILINE)
        if m and any(re.search(rf"^[ \t]*\.extern\b[^;{{]*?(?<![\w$.%]){re.escape(s)}(?![\w$])", v.text, re.MULTILINE)
                     for v in units):
            hoisted.append(m.group(0).rstrip() + "\n")
            u.text = u.text[: m.start()] + u.text[m.end():]

    def resolve(m: re.Match) -> str:
        decl = m.group(0)
        hit = set(re.findall(_IDENT, decl)) & defined
        if not hit:
            return decl
        if re.search(r"\.func\b", decl):
            return decl.replace(".extern", linkage[min(hit)], 1)
        return ""

    version = max(((int(a), int(b)) for u in units for a, b in _VERSION.findall(u.text)), default=None)
    out: list[str] = []
    seen_externs: set[str] = set()
    files = 0
    for i, u in enumerate(units):
        text = _EXTERN.sub(resolve, u.text)

        def once(m: re.Match) -> str:  # the same unresolved declaration in several objects
            key = " ".join(m.group(0).split())
            if key in seen_externs:
                return ""
            seen_externs.add(key)
            return m.group(0)

        text = _EXTERN.sub(once, text)
        if i:
            text = _HEADER.sub("", text)
            if files:
                shift = files
                text = _FILE.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + shift}", text)
                text = _LOC.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + shift}", text)
        else:
            if version is not None:
                text = _VERSION.sub(f".version {version[0]}.{version[1]}", text, count=1)
            last = list(_HEADER.finditer(text))
            at = last[-1].end() if last else 0
            text = text[:at] + "".join(hoisted) + text[at:]
        files = max([files] + [int(n) for n in re.findall(r"^[ \t]*\.file[ \t]+(\d+)", text, re.MULTILINE)])
        out.append(f"// ---- {u.name}\n{text.rstrip()}\n")
    return "\n".join(out)
