"""A small Itanium C++ demangler for kernel names (``_Z5saxpyifPKfPf``).

Enough for what nvcc and Numba-CUDA emit for kernels: nested names, builtin types,
pointers, references, cv-qualifiers, substitutions, simple templates and ABI tags (Numba's
``B2v1``, written ``[abi:v1]`` as ``c++filt`` writes them).  Anything it cannot read is
returned unchanged.
"""

from __future__ import annotations

_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
    "m": "unsigned long", "x": "long long", "y": "unsigned long long", "n": "__int128",
    "o": "unsigned __int128", "f": "float", "d": "double", "e": "long double", "z": "...",
    "Dh": "__half", "Dn": "decltype(nullptr)",
}


class _Fail(Exception):
    pass


class _Demangler:
    def __init__(self, s: str):
        self.s = s
        self.i = 0
        self.subs: list[str] = []
        #: the arguments of the last template argument list (``T_``, ``T0_`` ... refer to them)
        self.template_params: list[str] = []

    def peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def take(self, n: int = 1) -> str:
        t = self.s[self.i : self.i + n]
        if len(t) < n:
            raise _Fail
        self.i += n
        return t

    def number(self) -> int:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        if j == self.i:
            raise _Fail
        n = int(self.s[self.i : j])
        self.i = j
        return n

    def source_name(self) -> str:
        n = self.number()
        return self.take(n)

    def tagged_name(self) -> str:
        """A source name and the ABI tags after it (``<source-name> B <source-name>...``)."""
        n = self.source_name()
        while self.peek() == "B":
            self.take()
            n += f"[abi:{self.source_name()}]"
        return n

    def name(self) -> str:
        if self.peek() == "N":
            self.take()
            quals = ""
            while self.peek() in ("K", "V", "r"):
                quals += {"K": " const", "V": " volatile", "r": ""}[self.take()]
            parts: list[str] = []
            while self.peek() != "E":
                if self.peek() == "S":
                    parts.append(self.substitution())
                elif self.peek() == "I":
                    parts[-1] += self.template_args()
                    self.subs.append("::".join(parts))
                    continue
                else:
                    parts.append(self.tagged_name())
                self.subs.append("::".join(parts))
            self.take()
            return "::".join(parts) + quals
        if self.peek() == "S" and self.peek(2) != "St":
            return self.substitution()
        if self.peek(2) == "St":
            self.take(2)
        n = self.tagged_name()
        if self.peek() == "I":
            self.subs.append(n)
            n += self.template_args()
        return n

    def substitution(self) -> str:
        self.take()  # S
        if self.peek() == "_":
            self.take()
            return self.subs[0]
        j = self.s.index("_", self.i)
        seq = self.s[self.i : j]
        self.i = j + 1
        idx = 0
        for ch in seq:
            idx = idx * 36 + int(ch, 36)
        return self.subs[idx + 1]

    def template_args(self) -> str:
        self.take()  # I
        args = []
        while self.peek() != "E":
            if self.peek() == "L":
                self.take()
                t = self.type()
                neg = ""
                if self.peek() == "n":
                    self.take()
                    neg = "-"
                v = self.number()
                self.take()  # E
                args.append(f"{neg}{v}" if t not in ("bool",) else ("true" if v else "false"))
            else:
                args.append(self.type())
        self.take()
        self.template_params = args
        return "<" + ", ".join(args) + ">"

    def type(self) -> str:
        c = self.peek()
        if c == "P":
            self.take()
            t = self.type() + "*"
            self.subs.append(t)
            return t
        if c == "R":
            self.take()
            t = self.type() + "&"
            self.subs.append(t)
            return t
        if c == "K":
            self.take()
            t = self.type() + " const"
            self.subs.append(t)
            return t
        if c == "V":
            self.take()
            t = self.type() + " volatile"
            self.subs.append(t)
            return t
        if c == "D" and self.peek(2) in _BUILTIN:
            return _BUILTIN[self.take(2)]
        if c in _BUILTIN and c != "D":
            return _BUILTIN[self.take()]
        if c == "S":
            return self.substitution()
        if c == "T":  # a template parameter: T_ the first, T0_ the second ...
            self.take()
            k = 0 if self.peek() == "_" else self.number() + 1
            self.take()  # _
            t = self.template_params[k]
            self.subs.append(t)
            return t
        if c.isdigit() or c == "N":
            t = self.name()
            if c.isdigit():
                self.subs.append(t)
            return t
        raise _Fail

    def function(self) -> str:
        if self.take(2) != "_Z":
            raise _Fail
        name = self.name()
        ret = ""
        if name.endswith(">"):  # template functions encode their return type
            ret = self.type() + " "
        params = []
        while self.i < len(self.s):
            params.append(self.type())
        if params == ["void"]:
            params = []
        return f"{ret}{name}({', '.join(params)})"


def demangle(symbol: str) -> str:
    """``_Z5saxpyifPKfPf`` -> ``saxpy(int, float, float const*, float*)``."""
    if not symbol.startswith("_Z"):
        return symbol
    try:
        return _Demangler(symbol).function()
    except (_Fail, IndexError, ValueError):
        return symbol


def shorten(name: str, width: int, tail: int | None = None) -> str:
    """``name`` in at most ``width`` characters, cut in the middle (``~``): generated kernel
    names differ at the end (``..._batch_norm_relu_12``), C++ names at the start."""
    if len(name) <= width:
        return name
    if tail is None:
        cut = _cut_parameters(name, width)
        if cut is not None:
            return cut
        tail = (width - 1) // 2
    tail = max(1, min(tail, width - 2))
    return name[: width - 1 - tail] + "~" + name[len(name) - tail:]


def _cut_parameters(name: str, width: int, last: int = 0) -> str | None:
    """A C++ signature in ``width`` characters cut at a parameter boundary,
    ``f(float const*, ~)`` (whole parameters kept, ``~`` for the rest; with ``last``, that many
    of the last parameters kept too: ``f(~, long)``), not inside a parameter
    (``f(float~st*)``); None where even that does not fit."""
    start = name.find("(")
    if start <= 0 or not name.endswith(")"):
        return None
    params, depth, cur = [], 0, ""
    for ch in name[start + 1:-1]:
        if ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
            continue
        depth += ch in "<(["
        depth -= ch in ">)]"
        cur += ch
    params.append(cur.strip())
    head = name[: start + 1]
    if last >= len(params):
        return None
    tail = params[len(params) - last:] if last else []
    kept: list[str] = []
    for p in params[: len(params) - last]:
        if len(head + ", ".join([*kept, p, "~", *tail]) + ")") > width:
            break
        kept.append(p)
    text = head + ", ".join([*kept, "~", *tail]) + ")"
    return text if len(text) <= width else None


def short_names(names, width: int) -> dict[str, str]:
    """Each name shortened (``shorten``) so that no two distinct names read the same: where
    two collide, more of their ends is kept."""
    names = list(dict.fromkeys(names))
    out = {n: shorten(n, width) for n in names}
    for last in (1, 2, 3):  # signatures that read the same: keep their last parameters
        seen: dict[str, list[str]] = {}
        for n, s in out.items():
            seen.setdefault(s, []).append(n)
        for ns in (ns for ns in seen.values() if len(ns) > 1):
            for n in ns:
                out[n] = _cut_parameters(n, width, last) or out[n]
    for tail in range((width - 1) // 2 + 1, width - 1):
        seen: dict[str, list[str]] = {}
        for n, s in out.items():
            seen.setdefault(s, []).append(n)
        clashes = [ns for ns in seen.values() if len(ns) > 1]
        if not clashes:
            break
        for ns in clashes:
            for n in ns:
                out[n] = shorten(n, width, tail)
    return out
