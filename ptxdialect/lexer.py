"""PTX tokenizer.

Tokens are ``(kind, text, offset)`` triples; whitespace and comments are
dropped.  Dotted names (``ld.global.v4.f32``, ``%tid.x``) are single tokens;
the parser splits opcodes into entry and modifiers.  A name that starts with a
dot is one directive, type or qualifier (``.shared::cta``), so ``.reg.b16``
(inline assembly writes it so) is the two tokens ``.reg`` and ``.b16``, as
``ptxas`` reads it.

One compiled regular expression matches a token *together with* the
whitespace and comments before it, so each token costs one match.  The
parser lexes lazily with ``match_token`` (only the statements its fast path
does not take are lexed); ``tokenize`` lexes a whole text (tests, benchmarks).
Malformed input -- a stray character, an unterminated comment or string, a
malformed number -- raises ``PTXSyntaxError`` at the offending character.
"""

from __future__ import annotations

import re

from .diagnostics import PTXSyntaxError, SourceFile

NAME = "name"
NUM = "num"
STR = "str"
PUNCT = "punct"
EOF = "eof"

Token = tuple[str, str, int]

_TOKEN_RE = re.compile(
    r"""
    [ \t\r\n\f\v]*(?:(?://[^\n]*(?![^\n])|/\*.*?\*/)[ \t\r\n\f\v]*)*
    (?:
      (?P<name>[A-Za-z_$%][\w$]*(?:(?:\.|::)[\w$]+)*|\.[A-Za-z_$][\w$]*(?:::[\w$]+)*)
     |(?P<num>(?:0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?
              |[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+[uU]?)(?![\w$.]))
     |(?P<str>"(?:[^"\\\n]|\\.)*")
     |(?P<punct>[;,:{}\[\]()<>+\-@!|=*#~?&^]|/(?!\*))
     |(?P<eof>\Z)
     |(?P<unclosed>/\*)
     |(?P<badnum>[0-9][\w$.]*)
     |(?P<badstr>")
     |(?P<bad>.)
    )
    """,
    re.X | re.S | re.A,
)

match_token = _TOKEN_RE.match
"""``match_token(text, pos)``: the match of the next token at or after ``pos``
(never ``None``; its ``lastgroup`` is the token kind or an error kind)."""

ERROR_KINDS = frozenset(["unclosed", "badnum", "badstr", "bad"])


def lex_error(source: SourceFile, kind: str, text: str, offset: int) -> PTXSyntaxError:
    """The diagnostic for a match of one of the error kinds of ``_TOKEN_RE``."""
    if kind == "unclosed":
        return PTXSyntaxError(source, offset, "unterminated '/*' comment (no '*/' before end of file)")
    if kind == "badstr":
        return PTXSyntaxError(source, offset, "unterminated string literal (missing '\"' before end of line)")
    if kind == "badnum":
        low = text.lower()
        if low.startswith("0f"):
            why = "expected '0f' followed by exactly 8 hexadecimal digits"
        elif low.startswith("0d"):
            why = "expected '0d' followed by exactly 16 hexadecimal digits"
        elif low.startswith("0x"):
            why = "expected hexadecimal digits after '0x'"
        elif low.startswith("0b"):
            why = "expected binary digits after '0b'"
        else:
            why = "expected a decimal, hexadecimal, octal, binary or float literal"
        return PTXSyntaxError(source, offset, f"invalid number {text!r}: {why}")
    ch = text
    if ch == "\ufffd":
        return PTXSyntaxError(source, offset, "unexpected character U+FFFD (the input is not valid UTF-8 text)")
    if ch.isprintable() and ch != " ":
        return PTXSyntaxError(source, offset, f"unexpected character {ch!r}")
    return PTXSyntaxError(source, offset, f"unexpected character {ch!r} (U+{ord(ch):04X})")


def tokenize(source: SourceFile) -> list[Token]:
    """Tokens of ``source`` followed by an EOF token."""
    text = source.text
    out: list[Token] = []
    append = out.append
    match = match_token
    pos = 0
    while True:
        m = match(text, pos)
        kind = m.lastgroup
        if kind == "eof":
            append((EOF, "", len(text)))
            return out
        tok = m.group(kind)  # type: ignore[arg-type]
        if kind in ERROR_KINDS:
            raise lex_error(source, kind, tok, m.start(kind))  # type: ignore[arg-type]
        pos = m.end()
        append((kind, tok, pos - len(tok)))  # type: ignore[arg-type]
