"""Which pages of a memory range were written since the last look (``hypa run --capture``).

The capture hashes a chunk of an allocation again only where one of its pages was written
since the chunk was last hashed.  Linux says which, exactly: a range registered with a
userfaultfd in *asynchronous write-protect* mode (Linux 6.7, ``UFFD_FEATURE_WP_ASYNC``) is
write-protected page by page; the first write to a protected page -- a store by emulated code,
a ``memcpy``, a ``read()`` into it -- is resolved by the kernel itself (no handler thread)
and leaves the page marked written.  ``PAGEMAP_SCAN`` on ``/proc/self/pagemap`` lists the
written pages of a range and write-protects them again in the same call, so a write during or
after a scan is seen by the next one.  Writes through other processes' mappings of the memory
(``-j``'s forked workers) are not seen: the capture does not use this with ``-j``.

Linux's soft-dirty bits would also do, but are process-wide (clearing them is not atomic with
reading them) and absent from kernels built without ``CONFIG_MEM_SOFT_DIRTY`` (this machine's).
Where this module is unavailable, ``WrittenPages.open`` returns None and every chunk is hashed.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import platform

PAGE = mmap.PAGESIZE

_SYS_USERFAULTFD = {"x86_64": 323, "aarch64": 282}
_UFFD_USER_MODE_ONLY = 1
_UFFD_API = 0xAA
_FEATURE_WP_HUGETLBFS_SHMEM = 1 << 12
_FEATURE_WP_UNPOPULATED = 1 << 13
_FEATURE_WP_ASYNC = 1 << 15
_REGISTER_MODE_WP = 1 << 1
_PM_SCAN_WP_MATCHING = 1 << 0
_PM_SCAN_CHECK_WPASYNC = 1 << 1
_PAGE_IS_WRITTEN = 1 << 1
_REGIONS = 1024  # page ranges one PAGEMAP_SCAN call returns


def _iowr(kind: int, nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (kind << 8) | nr


_UFFDIO_API = _iowr(0xAA, 0x3F, 24)
_UFFDIO_REGISTER = _iowr(0xAA, 0x00, 32)
_PAGEMAP_SCAN = _iowr(ord("f"), 16, 96)


class WrittenPages:
    """One userfaultfd and ``/proc/self/pagemap``: ``watch`` a range, then ``written`` says
    which of its pages were written since the previous call (or ``watch``)."""

    def __init__(self, uffd: int, pagemap: int) -> None:
        self._uffd = uffd
        self._pagemap = pagemap
        self._vec = (ctypes.c_uint64 * (3 * _REGIONS))()

    @classmethod
    def open(cls) -> WrittenPages | None:
        """The tracker, or None where the kernel cannot give it (checked on a scratch mapping)."""
        nr = _SYS_USERFAULTFD.get(platform.machine())
        if nr is None:
            return None
        libc = ctypes.CDLL(None, use_errno=True)
        uffd = libc.syscall(nr, os.O_CLOEXEC | os.O_NONBLOCK | _UFFD_USER_MODE_ONLY)
        if uffd < 0:
            return None
        pagemap = -1
        try:
            api = (ctypes.c_uint64 * 3)(_UFFD_API, _FEATURE_WP_ASYNC | _FEATURE_WP_UNPOPULATED
                                        | _FEATURE_WP_HUGETLBFS_SHMEM, 0)
            fcntl.ioctl(uffd, _UFFDIO_API, api)
            pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
            self = cls(uffd, pagemap)
            if self._works():
                return self
        except OSError:
            pass
        os.close(uffd)
        if pagemap >= 0:
            os.close(pagemap)
        return None

    def _works(self) -> bool:
        """A write to one page of a fresh shared mapping is seen, and only that one."""
        m = mmap.mmap(-1, 4 * PAGE, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        buf = ctypes.c_char.from_buffer(m)
        try:
            start = ctypes.addressof(buf)
            if not self.watch(start, 4 * PAGE):
                return False
            ctypes.memset(start + 2 * PAGE + 5, 1, 1)
            first = self.written(start, 4 * PAGE)
            return first == [(start + 2 * PAGE, start + 3 * PAGE)] and self.written(start, 4 * PAGE) == []
        finally:
            del buf
            m.close()

    def watch(self, start: int, length: int) -> bool:
        """Start tracking ``[start, start + length)`` (whole pages of one mapping); False where
        the kernel refuses (memory it cannot write-protect, a range already registered)."""
        reg = (ctypes.c_uint64 * 4)(start, length, _REGISTER_MODE_WP, 0)
        try:
            fcntl.ioctl(self._uffd, _UFFDIO_REGISTER, reg)
            self.written(start, length)  # protects every page; all count as written until then
        except OSError:
            return False
        return True

    def written(self, start: int, length: int) -> list[tuple[int, int]]:
        """The [begin, end) address ranges of pages written since the last call, protected
        again.  OSError where the range is not watched (any more)."""
        out: list[tuple[int, int]] = []
        end = start + length
        vec = self._vec
        while start < end:
            arg = (ctypes.c_uint64 * 12)(96, _PM_SCAN_WP_MATCHING | _PM_SCAN_CHECK_WPASYNC, start, end, 0,
                                         ctypes.addressof(vec), _REGIONS, 0, 0, _PAGE_IS_WRITTEN, 0, _PAGE_IS_WRITTEN)
            n = fcntl.ioctl(self._pagemap, _PAGEMAP_SCAN, arg)
            out += [(vec[3 * i], vec[3 * i + 1]) for i in range(n)]
            if arg[4] <= start:  # no progress: never expected, but never loop
                raise OSError("PAGEMAP_SCAN made no progress")
            start = arg[4]  # walk_end: where this call stopped (the vector was full)
        return out
