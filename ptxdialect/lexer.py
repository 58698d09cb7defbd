"""PTX tokenizer: one compiled regular expression over the whole text.

Tokens are ``(kind, text, offset)`` triples; whitespace and comments are
dropped.  Dotted names (``ld.global.v4.f32``, ``%tid.x``, ``.shared::cta``)
are single tokens; the parser splits opcodes into entry and modifiers.
"""

from __future__ import annotations

import re

from .diagnostics import PTXSyntaxError, SourceFile

NAME = "name"
NUM = "num"
STR = "str"
PUNCT = "punct"
EOF = "eof"

_TOKEN_RE = re.compile(
    r"""
    (?P<skip>(?:[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/)+)
   |(?P<name>\.?[A-Za-z_$%][\w$]*(?:(?:\.|::)[\w$]+)*)
   |(?P<num>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?
           |[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+[uU]?)
   |(?P<str>"(?:[^"\\\n]|\\.)*")
   |(?P<punct>[;,:{}\[\]()<>+\-@!|=*#])
   |(?P<unclosed>/\*)
   |(?P<bad>.)
    """,
    re.X | re.S,
)


def tokenize(source: SourceFile) -> list[tuple[str, str, int]]:
    """Tokens of ``source`` followed by an EOF token."""
    out: list[tuple[str, str, int]] = []
    append = out.append
    for m in _TOKEN_RE.finditer(source.text):
        kind = m.lastgroup
        if kind == "skip":
            continue
        if kind == "bad":
            raise PTXSyntaxError(source, m.start(), f"unexpected character {m.group()!r}")
        if kind == "unclosed":
            raise PTXSyntaxError(source, m.start(), "unterminated '/*' comment")
        append((kind, m.group(), m.start()))  # type: ignore[arg-type]
    append((EOF, "", len(source.text)))
    return out
