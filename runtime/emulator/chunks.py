"""Buffers stored as content-addressed chunks (``hypa run --capture``; docs/design.md, "Capture format").

A captured buffer is a *manifest* (JSON, ``buffers/<digest>.manifest``) naming the chunks its
bytes are made of: the memory it lies in, cut every ``chunk_bytes`` (64 KiB) from the start of
its allocation, each chunk a file named by the hash of its bytes in the folder ``dir`` (relative
to the manifest), written once however many buffers and launches hold it.  ``null`` stands for a
chunk of zero bytes, which has no file.  The buffer is ``bytes`` bytes starting ``offset`` bytes
into the first chunk (a pointer into the middle of an allocation)::

    {"format": "hypa-chunks-1", "chunk_bytes": 65536, "dir": "../chunks",
     "offset": 0, "bytes": 131072, "chunks": ["5d41402abc4b2a76b9719d911017c592", null]}

A launch that changes one element of a 64 MiB buffer so adds one chunk and one manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np

from hypa.ptxdialect.diagnostics import HypaError

FORMAT = "hypa-chunks-1"
CHUNK_BYTES = 64 * 1024
_HEX = re.compile(r"[0-9a-f]{32}")


class ChunkError(HypaError):
    """A manifest or chunk that cannot be read, with the file and what was expected."""


def digest(data) -> str:
    """A chunk's name: 128 bits of its SHA-256 (hashlib releases the GIL on large inputs)."""
    return hashlib.sha256(data).hexdigest()[:32]


_ZERO: dict[int, str] = {}


def zero_digest(nbytes: int) -> str:
    """The digest of ``nbytes`` zero bytes: a chunk with it is stored as ``null``."""
    d = _ZERO.get(nbytes)
    if d is None:
        d = _ZERO[nbytes] = digest(bytes(nbytes))
    return d


def manifest_text(chunks: list[str | None], offset: int, nbytes: int, chunk_bytes: int = CHUNK_BYTES,
                  folder: str = "../chunks") -> str:
    return json.dumps({"format": FORMAT, "chunk_bytes": chunk_bytes, "dir": folder, "offset": offset,
                       "bytes": nbytes, "chunks": chunks}, separators=(",", ":")) + "\n"


def _count(m: dict, key: str, path: str, low: int = 0) -> int:
    v = m.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ChunkError(f"chunk manifest {path}: '{key}' must be a whole number of at least {low}, not {v!r}")
    return v


def read_manifest(path: str) -> np.ndarray:
    """The bytes (uint8) manifest ``path`` describes; ChunkError names the file and the fault."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ChunkError(f"cannot read chunk manifest {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ChunkError(f"{path} is not a chunk manifest (not text)") from None
    try:
        m = json.loads(text)
    except ValueError as e:
        raise ChunkError(f"{path} is not a chunk manifest (not JSON: {e})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        got = m.get("format") if isinstance(m, dict) else type(m).__name__
        raise ChunkError(f"{path} is not a chunk manifest (expected \"format\": \"{FORMAT}\", found {got!r})")
    size = _count(m, "chunk_bytes", path, 1)
    offset = _count(m, "offset", path)
    nbytes = _count(m, "bytes", path)
    folder = m.get("dir", ".")
    chunks = m.get("chunks")
    if not isinstance(folder, str):
        raise ChunkError(f"chunk manifest {path}: 'dir' must be a folder name, not {folder!r}")
    if not isinstance(chunks, list):
        raise ChunkError(f"chunk manifest {path}: 'chunks' must be a list of chunk names, not {chunks!r}")
    if offset >= size:
        raise ChunkError(f"chunk manifest {path}: offset {offset} is not inside the first chunk ({size} bytes)")
    need = -(-(offset + nbytes) // size) if nbytes else 0
    if len(chunks) != need:
        raise ChunkError(f"chunk manifest {path}: {len(chunks)} chunks listed; {nbytes} bytes from offset {offset} "
                         f"in chunks of {size} need {need}")
    base = os.path.join(os.path.dirname(path), folder)
    out = np.zeros(nbytes, np.uint8)  # null chunks stay zero (pages never touched cost nothing)
    view = memoryview(out)
    for k, name in enumerate(chunks):
        if name is None:
            continue
        if not isinstance(name, str) or not _HEX.fullmatch(name):
            raise ChunkError(f"chunk manifest {path}: chunk {k} is {name!r}, not a chunk name (32 hex digits) or null")
        lo = k * size - offset
        a, b = max(lo, 0), min(lo + size, nbytes)
        file = os.path.join(base, name)
        try:
            with open(file, "rb") as f:
                have = os.fstat(f.fileno()).st_size
                last = k == len(chunks) - 1
                if have > size or have < b - lo or (not last and have != size):
                    want = f"{size}" if not last else f"{b - lo} to {size}"
                    raise ChunkError(f"chunk {file} (chunk {k} of {path}) is {have} bytes, expected {want}: "
                                     f"the file is truncated or not this capture's")
                f.seek(a - lo)
                got = f.readinto(view[a:b])
        except OSError as e:
            raise ChunkError(f"cannot read chunk {file} (chunk {k} of {path}): {e.strerror or e}") from None
        if got != b - a:
            raise ChunkError(f"chunk {file} (chunk {k} of {path}) ended after {got} of {b - a} bytes")
    return out
