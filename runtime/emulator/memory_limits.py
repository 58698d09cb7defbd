"""Sizes checked before they are allocated.

A launch's memory (shared per CTA, local per thread times the threads, call stacks, global
variables) is plain host memory.  A size the machine cannot hold must be a one-line error
naming what asked for it, not a ``MemoryError`` from deep inside numpy or an ``mmap``
failure: each size is compared with the machine's physical memory before it is allocated,
and an allocation that still fails says the same.  (What a GPU refuses -- more shared memory
than a CTA can have -- is checked where the launch's limits are; this is the host's bound.)
"""

from __future__ import annotations

import os

import numpy as np

from .launch import LaunchError


def host_memory_bytes() -> int:
    """The machine's physical memory (a test may replace it)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):  # not on Linux: no bound of our own
        return 1 << 62


def human(n: int) -> str:
    """``n`` bytes as GiB/MiB/KiB with one decimal (``4.0 GiB``)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def too_large(what: str, nbytes: int) -> str | None:
    """The message for ``nbytes`` of ``what`` if this machine cannot hold them, else None."""
    limit = host_memory_bytes()
    if nbytes <= limit:
        return None
    return f"{what} needs {nbytes} bytes ({human(nbytes)}), more than this machine's memory ({human(limit)})"


def check(what: str, nbytes: int) -> None:
    """Raise ``LaunchError`` where ``nbytes`` of ``what`` cannot be held."""
    msg = too_large(what, nbytes)
    if msg is not None:
        raise LaunchError(msg)


def zeros(what: str, nbytes: int, align: int = 64) -> np.ndarray:
    """``nbytes`` zeroed bytes starting at a multiple of ``align``, checked first; an
    allocation the system still refuses is the same one-line error."""
    check(what, nbytes)
    try:
        raw = np.zeros(max(nbytes, 1) + align, np.uint8)
    except MemoryError:
        raise LaunchError(f"{what} needs {nbytes} bytes ({human(nbytes)}): the allocation failed (out of memory)") \
            from None
    off = (-raw.ctypes.data) % align
    return raw[off : off + max(nbytes, 1)]
