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


class HypaError(Exception):
    """The base of the errors hypa reports to a user: a message that says what is wrong with
    the input, the launch or the kernel, and -- when it points into a file -- where
    (``file``, 1-based ``line`` and ``column``; 0 where unknown), like xDSL's
    ``DiagnosticException``.  A command prints ``render(prog)`` and fails; a
    batch of launches ends the launch that raised one and goes on.  Any other exception is a
    bug in hypa.  Signals caught where they are raised never reach a user and are not
    ``HypaError``: ``isa.UnknownOpcode``/``UnknownModifier`` (the parser's lookups), a lane's
    ``TextureFault`` (the launch reports it as an ``EmulationError``), the demangler's
    ``_Fail``, the executor's ``WorkerTraceback`` (the traceback text of a worker's error)."""

    file: str | None = None
    line: int = 0
    column: int = 0

    def __init__(self, message: str = "", *, file: str | None = None, line: int = 0, column: int = 0):
        super().__init__(message)
        self.message = message
        if file is not None:
            self.file, self.line, self.column = file, line, column

    def located(self) -> str:
        """``file:line:col: message`` where the error points into a file, else the message:
        a launch's error in a list of launches (``hypa profile``), where ``prog`` is not said."""
        if self.file is None:
            return str(self)
        where = ":".join([self.file, *(str(n) for n in (self.line, self.column) if n)])
        return f"{where}: {self.message}"

    def render(self, prog: str) -> str:
        """The line a command prints: ``file:line:col: error: message`` for an error that
        points into a file, else ``prog: error: message``."""
        if self.file is None:
            return f"{prog}: error: {self}"
        where = ":".join([self.file, *(str(n) for n in (self.line, self.column) if n)])
        return f"{where}: error: {self.message}"


class InputError(HypaError):
    """An input that cannot be read or turned into PTX (missing, a directory, a binary with no
    PTX for the target ...), with a message that says why and what to do."""


class PTXError(HypaError):
    """A diagnostic about PTX input, rendered as ``file:line:col: error: msg`` with the line
    and a caret under the column."""

    def __init__(self, source: SourceFile | None, offset: int, message: str):
        super().__init__(message)
        self.source = source
        self.offset = offset

    @property  # type: ignore[override]
    def file(self) -> str | None:
        return self.source.filename if self.source else None

    @property  # type: ignore[override]
    def line(self) -> int:
        return self.source.location(self.offset)[0] if self.source else 0

    @property  # type: ignore[override]
    def column(self) -> int:
        return self.source.location(self.offset)[1] if self.source else 0

    def __str__(self) -> str:
        return self.render()

    def render(self, prog: str | None = None) -> str:
        """The located diagnostic (``prog`` is not shown: the file names the input)."""
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
