"""Files of hypa's caches (compiled kernels, prepared records, the ``hypa run`` library),
read and written so that nothing found there is trusted or can stop a command.

A cache is a directory anyone may have touched: an entry may have been truncated, emptied,
swapped for another, replaced by a FIFO (opening it would block for ever), a device or a
link to /dev/zero or to a 40 GB file (reading it would not end, or end in MemoryError).
``read_regular`` reads only a regular file of bounded size, never following a link;
``write_atomic`` writes a temporary file and renames it into place, and removes it when
the write fails (a full disk).  What a file must hold is the caller's to check (a seal:
``jit.py``, ``cudart/shim.py``).
"""

from __future__ import annotations

import os
import stat

#: the largest cache file read back (a compiled kernel of thousands of instructions is a few MB)
MAX_BYTES = 256 << 20


def read_regular(path: str, limit: int = MAX_BYTES) -> tuple[bytes | None, str | None]:
    """``(contents, None)`` of the regular file at ``path`` (not a link) of at most ``limit``
    bytes; ``(None, why)`` where something else is there; ``(None, None)`` where nothing is."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as e:
        if os.path.islink(path):
            return None, "a symbolic link, not a file hypa wrote"
        return None, e.strerror or str(e)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file"
        if st.st_size > limit:
            return None, f"{st.st_size} bytes, more than any entry hypa writes"
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        return None, e.strerror or str(e)
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, "it grew while it was read"
    return data, None


def remove(path: str) -> bool:
    """Remove what is at ``path`` (a file, a link, a FIFO; an empty directory); whether
    nothing is there now."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.remove(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def write_atomic(path: str, data: bytes) -> None:
    """``data`` into ``path`` through a temporary file of this process, renamed into place
    (readers see the old file or the whole new one); the temporary file never stays behind.
    Raises ``OSError`` (a full disk, a read-only directory)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
