"""Launch-spec buffers as copy-on-write memory, so a launch costs the pages it touches.

A launch spec describes each buffer (``BufferSpec``: dtype, count, init); a launch of a
one-CTA kernel over eleven 64 MiB buffers touches a few kilobytes of them.  Copying or
filling every buffer for every launch made the memory and time of ``hypa profile`` grow
with the buffers' size times the number of launches.  Here a buffer is a private mapping:

- ``zeros``: an anonymous private mapping; the kernel's first write to a page allocates it,
  reads of untouched pages see the kernel's shared zero page.
- every other init (``ones``, ``arange``, ``value``, ``random``, ``values``): the contents
  are made once per process into an *image* (a memory file, ``memfd_create``), and each
  launch maps the image privately: pages a launch writes are copied for it alone, the
  rest stay shared, and unmapping the launch's buffers returns its pages.
- ``file``: a ``.npy`` file whose dtype and layout match is mapped copy-on-write directly
  (``numpy.load(mmap_mode="c")``); others become images.

Images are kept in a least-recently-used table bounded by ``IMAGE_LIMIT_BYTES``; an evicted
image stays valid for launches that still map it.  Small buffers (under ``MIN_MAPPED_BYTES``)
are ordinary arrays: a mapping costs a system call and at least a page.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

#: buffers smaller than this are plain numpy arrays
MIN_MAPPED_BYTES = 1 << 20
#: the most bytes of images kept for reuse (least recently used dropped first)
IMAGE_LIMIT_BYTES = 4 << 30

_lock = threading.Lock()
_images: "OrderedDict[str, _Image]" = OrderedDict()
_image_bytes = 0


class _Image:
    """A buffer's initial contents in a memory file, to be mapped privately by each launch."""

    def __init__(self, data: np.ndarray) -> None:
        self.nbytes = int(data.nbytes)
        self.file = _memory_file(self.nbytes)
        raw = memoryview(np.ascontiguousarray(data)).cast("B")
        done = 0
        while done < self.nbytes:  # os.write may write less than asked
            done += os.write(self.file.fileno(), raw[done:])

    def map(self, dtype: np.dtype, count: int) -> np.ndarray:
        mm = mmap.mmap(self.file.fileno(), self.nbytes, flags=mmap.MAP_PRIVATE,
                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
        return np.frombuffer(mm, dtype, count)


def _memory_file(nbytes: int):
    """An unnamed file for an image: a memfd on Linux, else an unlinked temporary file."""
    if hasattr(os, "memfd_create"):
        try:
            f = os.fdopen(os.memfd_create("hypa-buffer", getattr(os, "MFD_CLOEXEC", 0)), "r+b", buffering=0)
            return f
        except OSError:
            pass
    return tempfile.TemporaryFile()


def zeros(dtype: np.dtype, count: int) -> np.ndarray:
    """``count`` zeros of ``dtype``; a large buffer is an anonymous mapping, paid per page written."""
    nbytes = count * dtype.itemsize
    if nbytes < MIN_MAPPED_BYTES:
        return np.zeros(count, dtype)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(mm, dtype, count)


def from_image(key: str, dtype: np.dtype, count: int, make: Callable[[], np.ndarray]) -> np.ndarray:
    """A private, writable copy of the contents ``make()`` gives (made once per ``key``)."""
    global _image_bytes
    nbytes = count * dtype.itemsize
    if nbytes < MIN_MAPPED_BYTES:
        return np.ascontiguousarray(make(), dtype)
    with _lock:
        img = _images.get(key)
        if img is not None:
            _images.move_to_end(key)
    if img is None:
        data = np.ascontiguousarray(make(), dtype)
        img = _Image(data)
        del data
        with _lock:
            _images[key] = img
            _image_bytes += img.nbytes
            while _image_bytes > IMAGE_LIMIT_BYTES and len(_images) > 1:
                _k, old = _images.popitem(last=False)
                _image_bytes -= old.nbytes
    return img.map(dtype, count)


def from_npy(path: str, dtype: np.dtype, count: int) -> np.ndarray | None:
    """The first ``count`` elements of the ``.npy`` file at ``path``, mapped copy-on-write,
    or ``None`` where the file's dtype or layout needs a conversion."""
    if count * dtype.itemsize < MIN_MAPPED_BYTES:
        return None
    arr = np.load(path, mmap_mode="c")
    if arr.dtype != dtype or not arr.flags.c_contiguous or arr.size < count:
        return None
    return arr.reshape(-1)[:count]


def clear() -> None:
    """Drop every image (launches that still map one keep it)."""
    global _image_bytes
    with _lock:
        _images.clear()
        _image_bytes = 0
