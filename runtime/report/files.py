"""Reading the files a report is given or a profile names, boundedly: regular files only (a
FIFO would block, ``/dev/zero`` never ends), of a bounded size, and JSON whatever its Unicode
encoding, with one-line errors for what is not a profile (binary data, nesting no profile has)."""

from __future__ import annotations

import json
import os
import stat

from hypa.ptxdialect.diagnostics import HypaError

#: a profile of a million launches is a few GB; a source file a few MB
MAX_PROFILE_BYTES = 8 << 30
MAX_SOURCE_BYTES = 64 << 20


class ReportFileError(HypaError):
    """A file a report reads that is not what it should be."""


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ReportFileError(f"{path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ReportFileError(f"{path}: not a regular file (a device, FIFO or directory)")
    if st.st_size > limit:
        raise ReportFileError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} a report reads")
    try:
        with open(path, "rb") as f:
            data = f.read(st.st_size + 1)  # (a file that grew since: read what stat saw, and a byte)
    except OSError as e:
        raise ReportFileError(f"{path}: {e.strerror}") from None
    if len(data) > limit:
        raise ReportFileError(f"{path}: more than the {limit:,} bytes a report reads")
    return data


def load_json(path: str):
    """A JSON file (UTF-8, -16 or -32, as ``json.loads`` detects them)."""
    data = read_regular(path, MAX_PROFILE_BYTES)
    try:
        return json.loads(data)
    except json.JSONDecodeError as e:
        raise ReportFileError(f"{path}: not JSON: {e}") from None
    except UnicodeDecodeError:
        raise ReportFileError(f"{path}: not JSON text (UTF-8, -16 or -32): a binary file?") from None
    except RecursionError:
        raise ReportFileError(f"{path}: JSON nested deeper than any profile") from None


def source_lines(path: str) -> list[str] | None:
    """The lines of a source file a profile names, or None where it cannot be read as one."""
    try:
        return read_regular(path, MAX_SOURCE_BYTES).decode("utf-8", errors="replace").splitlines()
    except ReportFileError:
        return None
