"""Diagnostics that point into PTX source: file:line:column, what was expected."""

from __future__ import annotations

from bisect import bisect_right


class SourceFile:
    """A PTX text with lazy offset -> (line, column) mapping.

    ``line_offset`` shifts reported lines (a chunk of a ``--split-input-file``
    input reports lines of the whole file).
    """

    def __init__(self, text: str, filename: str = "<stdin>", line_offset: int = 0):
        self.text = text
        self.filename = filename
        self.line_offset = line_offset
        self._line_starts: list[int] | None = None

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def location(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        starts = self.line_starts()
        line = bisect_right(starts, offset) - 1
        return line + 1 + self.line_offset, offset - starts[line] + 1

    def line_text(self, offset: int) -> str:
        starts = self.line_starts()
        line = bisect_right(starts, offset) - 1
        end = self.text.find("\n", starts[line])
        return self.text[starts[line] : end if end >= 0 else len(self.text)]


class PTXError(Exception):
    """A diagnostic about PTX input, rendered as ``file:line:col: error: msg``."""

    def __init__(self, source: SourceFile | None, offset: int, message: str):
        self.source = source
        self.offset = offset
        self.message = message
        super().__init__(self.render())

    @property
    def line(self) -> int:
        return self.source.location(self.offset)[0] if self.source else 0

    @property
    def column(self) -> int:
        return self.source.location(self.offset)[1] if self.source else 0

    def render(self) -> str:
        if self.source is None:
            return f"error: {self.message}"
        line, col = self.source.location(self.offset)
        text = self.source.line_text(self.offset).expandtabs(1)
        caret = " " * (col - 1) + "^"
        return f"{self.source.filename}:{line}:{col}: error: {self.message}\n{text}\n{caret}"


class PTXSyntaxError(PTXError):
    """The input is not PTX we can read."""


def decode_source(data: bytes, filename: str = "<stdin>", line_offset: int = 0) -> str:
    """PTX bytes as text; invalid UTF-8 is a ``PTXSyntaxError`` at the bad byte.

    PTX is ASCII; UTF-8 is accepted so comments and ``.file`` names may hold
    any character (the lexer still rejects non-ASCII characters elsewhere).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = data[: e.start].decode("utf-8")
        src = SourceFile(good + "\ufffd", filename, line_offset)
        raise PTXSyntaxError(
            src, len(good), f"invalid UTF-8 byte 0x{data[e.start]:02x}: the input is not a text file"
        ) from None
