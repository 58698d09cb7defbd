"""The architecture files (``runtime/models/arch/*.toml``) as the emulator reads them: each
parsed once per process (the clock and the launch limits read the same file; a parse is
about 5 ms of a 0.25 s command)."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

#: where the architecture files are
ARCH_DIR = Path(__file__).resolve().parents[1] / "models" / "arch"


@functools.cache
def read(path: str) -> dict:
    """The parsed file at ``path`` (shared: callers must not change it)."""
    with open(path, "rb") as f:
        return tomllib.load(f)
