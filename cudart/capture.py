"""``hypa run --capture DIR``: launches as launch specs (docs/guide.md, "Launch specification") with the input
they had, so ``hypa profile DIR`` replays any launch later, alone, with the same counts.

Written before the launch runs: the kernel's module (``module_<n>.ptx``, once), one
``[[launch]]`` per launch in ``launches.toml``, and for each pointer parameter the bytes of its
allocation from the pointer to the allocation's end, and the module variables the kernel uses
(``variables``), each as a buffer ``{chunks = "buffers/<digest>.manifest"}``: content-addressed
64 KiB chunks (``runtime.chunks``), each stored once in ``chunks/``, all-zero ones not at all.
A chunk of an allocation hypa made is hashed again only where a page of it was written since
(``written_pages``; every chunk where the kernel cannot say), so a launch costs what it
changed, not the size of its buffers.  ``--capture-launches`` picks the launches
(``LaunchSelection``).  A buffer holding addresses of other allocations (an array of pointers)
cannot be replayed faithfully; the launch's comment says so.
"""

from __future__ import annotations

import ctypes
import fnmatch
import mmap
import os
import re
import weakref
from dataclasses import dataclass, field

import numpy as np

from hypa.runtime.emulator.chunks import CHUNK_BYTES, digest, manifest_text, zero_digest

from .written_pages import PAGE, WrittenPages

#: HYPA_CAPTURE_TRACKING=0: hash every chunk every launch (tests compare both ways)
TRACKING_ENV = "HYPA_CAPTURE_TRACKING"


class LaunchSelection:
    """``--capture-launches SPEC``: comma-separated terms; a launch is captured when any term
    selects it.  ``7`` (launch index, from 0, as ``hypa run`` numbers launches), ``0-9``
    (inclusive), ``100-`` (from 100 on), ``%10`` (every 10th: 0, 10, 20 ...); anything else is a
    kernel name as ``hypa profile --kernel`` takes it (mangled, demangled, or demangled without
    parameters), where ``*``, ``?`` and ``[...]`` are wildcards.  ValueError says what is wrong."""

    def __init__(self, spec: str | None) -> None:
        self.spec = spec
        self.indices: set[int] = set()
        self.ranges: list[tuple[int, float]] = []
        self.every: list[int] = []
        self.names: list[str] = []
        self._hits: dict[str, bool] = {}
        if spec is None:
            return
        terms = _split_top(spec)
        for t in terms:
            t = t.strip()
            if not t:
                raise ValueError(f"{spec!r} has an empty term (terms are separated by commas)")
            if t[0].isdigit() or t[0] in "-%":
                self._number_term(t)
            else:
                self.names.append(t)

    def _number_term(self, t: str) -> None:
        if m := re.fullmatch(r"(\d+)", t):
            self.indices.add(int(m[1]))
        elif m := re.fullmatch(r"(\d+)-(\d*)", t):
            lo, hi = int(m[1]), int(m[2]) if m[2] else float("inf")
            if hi < lo:
                raise ValueError(f"range {t!r} ends before it starts")
            self.ranges.append((lo, hi))
        elif m := re.fullmatch(r"%(\d+)", t):
            if int(m[1]) == 0:
                raise ValueError(f"{t!r}: every n-th launch needs n of at least 1")
            self.every.append(int(m[1]))
        else:
            raise ValueError(f"{t!r} is not a launch index (7), a range (0-9, 100-), every n-th launch (%10) "
                             f"or a kernel name")

    def __call__(self, index: int, kernel: str) -> bool:
        if self.spec is None or index in self.indices:
            return True
        if any(lo <= index <= hi for lo, hi in self.ranges) or any(index % n == 0 for n in self.every):
            return True
        if not self.names:
            return False
        hit = self._hits.get(kernel)
        if hit is None:
            from hypa.runtime.emulator.demangle import demangle

            d = demangle(kernel)
            forms = (kernel, d, d.split("(")[0])
            hit = self._hits[kernel] = any(fnmatch.fnmatchcase(f, n) for n in self.names for f in forms)
        return hit


def _split_top(spec: str) -> list[str]:
    """``spec`` split at commas outside brackets (a demangled name's parameter list has some)."""
    out, depth, cur = [], 0, ""
    for ch in spec:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    return out + [cur]


#: threads that hash chunks (hashlib releases the GIL): measured 1.3 GB/s on one core of an
#: H100 host, 6 GB/s on 8; none on a busy 2-core machine, where this costs nothing either
HASH_THREADS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _digest(chunk: np.ndarray) -> str:
    # zeros (memory never written) are found 7x faster than hashed; the first 256 bytes decide
    # for most other chunks
    if not chunk[:256].any() and not chunk.any():
        return zero_digest(len(chunk))
    return digest(chunk)


def _digests(chunks: list) -> list[str]:
    """The digests of ``chunks``, on HASH_THREADS threads where there are many."""
    if HASH_THREADS < 2 or len(chunks) < 4 * HASH_THREADS:
        return [_digest(c) for c in chunks]
    from concurrent.futures import ThreadPoolExecutor

    step = -(-len(chunks) // (4 * HASH_THREADS))
    with ThreadPoolExecutor(HASH_THREADS) as pool:
        parts = pool.map(lambda i: [_digest(c) for c in chunks[i: i + step]], range(0, len(chunks), step))
        return [d for part in parts for d in part]


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scalar(raw: bytes, ptx_type: str):
    t = ptx_type.lstrip(".")
    kind, bits = t[0], int(t[1:]) if t[1:].isdigit() else 0
    if kind == "f" and bits in (32, 64):
        v = float(np.frombuffer(raw, np.float32 if bits == 32 else np.float64)[0])
        return repr(v) if np.isfinite(v) else {"bytes": raw.hex()}
    if kind in "subp" and bits in (8, 16, 32, 64) and len(raw) == bits // 8:
        v = int.from_bytes(raw, "little", signed=kind == "s")
        return str(v)
    return {"bytes": raw.hex()}


@dataclass
class _Region:
    """An allocation hypa mapped, watched for writes: its chunks' digests ("" for a zero
    chunk), None where not hashed yet or written since."""

    alloc: weakref.ref
    start: int
    mapped: int  # bytes of the mapping (whole pages) the tracker watches
    digests: list = field(default_factory=list)


def _mapping_length(alloc) -> int:
    """Bytes of the ``mmap`` that holds allocation ``alloc`` from its first byte (0: none does)."""
    todo = [alloc.owner]
    while todo:
        o = todo.pop()
        if isinstance(o, tuple):
            todo += o
        elif isinstance(o, mmap.mmap) and not o.closed and alloc.start % PAGE == 0:
            try:
                buf = ctypes.c_char.from_buffer(o)
            except (TypeError, ValueError):  # read-only, empty
                continue
            at = ctypes.addressof(buf)
            del buf
            skip = alloc.start - at  # the page of slack before the allocation (flat_memory.py)
            if 0 <= skip < len(o) and skip % PAGE == 0:
                return -(-(len(o) - skip) // PAGE) * PAGE
    return 0


class Capture:
    """One run's capture folder: what is stored, the watched allocations, what was written."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self.dir = rt.opts.capture
        self.select = LaunchSelection(rt.opts.capture_launches)
        self.chunk_dir = os.path.join(self.dir, "chunks")
        self.launches = self.chunks = self.manifests_written = self.bytes = self.hashed = 0
        self.error: str | None = None
        self.stored: set[str] = set()  # chunks in the folder (from earlier runs too)
        try:
            os.makedirs(os.path.join(self.dir, "buffers"), exist_ok=True)
            os.makedirs(self.chunk_dir, exist_ok=True)
            self.stored = {n for n in os.listdir(self.chunk_dir) if not n.startswith(".")}
        except OSError as e:
            self._stop(e, 0)
        self.manifests: set[str] = set()
        # forked workers (-j) write through their own mappings, which no tracker sees
        track = rt.opts.jobs == 1 and os.environ.get(TRACKING_ENV, "1") != "0"
        self.tracker = WrittenPages.open() if track else None
        self.regions: dict[int, _Region] = {}  # by start address
        self.checked: set[str] = set()  # chunks looked at for addresses of allocations
        self.pointer_chunks: set[str] = set()  # ... that hold one

    def summary(self) -> dict:
        return {"launches": self.launches, "chunks": self.chunks, "manifests": self.manifests_written,
                "bytes": self.bytes, "hashed_bytes": self.hashed, "tracked": self.tracker is not None,
                "error": self.error}

    # -- one launch ----------------------------------------------------------------------

    def launch(self, rec, prog) -> None:
        if self.error is not None or not self.select(rec.index, rec.kernel):
            return
        try:
            self._launch(rec, prog)
        except OSError as e:  # a full disk, a folder removed: the program runs on, uncaptured
            self._stop(e, rec.index)

    def _stop(self, e: OSError, index: int) -> None:
        self.error = f"cannot write {e.filename or self.dir}: {e.strerror or e}"
        self.rt.say(f"capture stopped at launch {index}: {self.error}")

    def _launch(self, rec, prog) -> None:
        rt, d = self.rt, self.dir
        self._forget_freed()
        m = rt._module_of(rec)
        ptx_name = f"module_{m.index}.ptx"
        ptx_path = os.path.join(d, ptx_name)
        if not os.path.exists(ptx_path):
            self._write(ptx_path, m.ptx.encode())
        buffers: dict[str, tuple[int, str]] = {}
        notes: list[str] = []

        def store(addr: int, nbytes: int, label: str) -> str:
            manifest, pointers = self._buffer(addr, nbytes)
            name = f"l{rec.index}_{label}"  # one buffer per parameter: distinct allocations stay distinct
            buffers[name] = (nbytes, manifest)
            if pointers:
                notes.append(f"buffer {name} holds device addresses; a replay cannot follow them")
            return name

        args = []
        textures: list[str] = []
        for (pname, ptx_type, _off, size), raw in zip(prog.params, rec.launch.args):
            a = None
            if size == 8 and ptx_type in (".u64", ".b64", ".s64"):
                addr = int.from_bytes(raw, "little")
                alloc = rt.memory.find(addr)
                tex = rt.textures.objects.get(addr) if alloc is None else None
                if tex is not None:
                    a = f"l{rec.index}_{pname}_tex"
                    textures += _texture_table(a, store(tex.address, max(tex.footprint, 1), pname), tex)
                elif alloc is not None:
                    a = store(addr, alloc.start + alloc.size - addr, pname)
            args.append(_toml_str(a) if a is not None else _toml_value(_scalar(raw, ptx_type)))
        variables = {}
        for name in list(prog.global_vars) + list(prog.const_vars):
            arr = m.storage.get(name)
            if arr is not None and name in m.initialised:
                variables[name] = store(arr.ctypes.data, arr.nbytes, "var_" + name.strip("$").replace(".", "_"))
        lines = [f"# launch {rec.index} of {rt.opts.program}"] + [f"# note: {n}" for n in dict.fromkeys(notes)]
        lines += ["[[launch]]", f"file = {_toml_str(ptx_name)}", f"kernel = {_toml_str(rec.kernel)}",
                  f"grid = {list(rec.launch.grid)}", f"block = {list(rec.launch.block)}",
                  f"shared_bytes = {rec.launch.shared_bytes}", f"args = [{', '.join(args)}]"]
        if variables:
            lines.append("variables = { " + ", ".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in variables.items()) + " }")
        for name, (nbytes, manifest) in buffers.items():
            lines += [f"[buffers.{_toml_str(name)}]", 'dtype = "uint8"', f"count = {nbytes}",
                      f'init = {{ chunks = "buffers/{manifest}.manifest" }}']
        lines += textures
        self._write(os.path.join(d, "launches.toml"), ("\n".join(lines) + "\n\n").encode(), mode="ab")
        self.launches += 1

    # -- buffers ---------------------------------------------------------------------------

    def _buffer(self, addr: int, nbytes: int) -> tuple[str, bool]:
        """Store ``[addr, addr + nbytes)``: (its manifest's digest, whether it holds addresses).
        Chunks are cut from the start of the allocation holding it (else from ``addr``)."""
        alloc = self.rt.memory.find(addr, nbytes)
        base, end = (alloc.start, alloc.start + alloc.size) if alloc is not None else (addr, addr + nbytes)
        first, last = (addr - base) // CHUNK_BYTES, -(-(addr + nbytes - base) // CHUNK_BYTES)
        region = self._region(alloc) if alloc is not None else None
        known = region.digests if region is not None else [None] * last
        mem = np.ctypeslib.as_array((ctypes.c_uint8 * (end - base)).from_address(base))
        todo = [k for k in range(first, last) if known[k] is None]
        chunks = [mem[k * CHUNK_BYTES: min((k + 1) * CHUNK_BYTES, end - base)] for k in todo]
        for k, chunk, d in zip(todo, chunks, _digests(chunks)):
            self.hashed += len(chunk)
            if d == zero_digest(len(chunk)):
                known[k] = ""  # a zero chunk: null in the manifest, no file
                continue
            known[k] = d
            if d not in self.stored:
                self._write(os.path.join(self.chunk_dir, d), chunk, atomic=True)
                self.stored.add(d)
                self.chunks += 1
            if d not in self.checked:
                self.checked.add(d)
                if self._holds_addresses(chunk):
                    self.pointer_chunks.add(d)
        names = [d or None for d in known[first:last]]
        pointers = bool(self.pointer_chunks) and not self.pointer_chunks.isdisjoint(names)
        text = manifest_text(names, addr - base - first * CHUNK_BYTES, nbytes).encode()
        md = digest(text)
        if md not in self.manifests:
            path = os.path.join(self.dir, "buffers", md + ".manifest")
            if not os.path.exists(path):
                self._write(path, text, atomic=True)
                self.manifests_written += 1
            self.manifests.add(md)
        return md, pointers

    def _region(self, alloc) -> _Region | None:
        """The watched state of ``alloc`` with the chunks written since the last look forgotten
        (None where it is not watched: every chunk is hashed)."""
        if self.tracker is None:
            return None
        r = self.regions.get(alloc.start)
        if r is not None and r.alloc() is not alloc:
            r = None
        if r is None:
            mapped = _mapping_length(alloc)
            if not mapped or not self.tracker.watch(alloc.start, mapped):
                return None
            r = _Region(weakref.ref(alloc), alloc.start, mapped, [None] * -(-alloc.size // CHUNK_BYTES))
            self.regions[alloc.start] = r
            return r
        try:
            written = self.tracker.written(r.start, r.mapped)
        except OSError:  # no longer watched: start again
            del self.regions[alloc.start]
            return self._region(alloc)
        for lo, hi in written:
            for k in range((lo - r.start) // CHUNK_BYTES, min(len(r.digests), -(-(hi - r.start) // CHUNK_BYTES))):
                r.digests[k] = None
        return r

    def _forget_freed(self) -> None:
        for start, r in list(self.regions.items()):
            a = r.alloc()
            if a is None or self.rt.memory.get(start) is not a:
                del self.regions[start]

    def _holds_addresses(self, chunk: np.ndarray) -> bool:
        """Whether an aligned 8-byte word of ``chunk`` is an address inside an allocation."""
        _reach, _ends, starts, exact = self.rt.memory.tables()
        words = chunk[: len(chunk) // 8 * 8].view(np.uint64)
        if not len(starts) or not words.size:
            return False
        idx = np.searchsorted(starts.view(np.uint64), words, side="right") - 1
        inside = (idx >= 0) & (words < exact.view(np.uint64)[np.maximum(idx, 0)])
        return bool(inside.any())

    def _write(self, path: str, data, mode: str = "wb", atomic: bool = False) -> None:
        """Write (or append) ``data``; ``atomic``: under a temporary name first, so a file that
        exists is whole (a later run into the same folder trusts it)."""
        tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".part") if atomic else path
        with open(tmp, mode) as f:
            f.write(data)
        if atomic:
            os.replace(tmp, path)
        self.bytes += memoryview(data).nbytes


def _texture_table(name: str, buffer: str, d) -> list[str]:
    """The ``[textures.NAME]`` (or ``[surfaces.NAME]``) table of ``TextureDesc`` ``d``."""
    out = [f"[{'surfaces' if d.surface else 'textures'}.{_toml_str(name)}]", f"buffer = {_toml_str(buffer)}",
           f"format = {_toml_str(d.format)}", f"width = {d.width}"]
    out += [f"{k} = {getattr(d, k)}" for k in ("height", "depth", "layers") if getattr(d, k)]
    out.append(f"pitch = {d.pitch}")
    if not d.surface:
        out += ["address_mode = [" + ", ".join(_toml_str(m) for m in d.address_mode) + "]",
                f"filter_mode = {_toml_str(d.filter_mode)}", f"read_mode = {_toml_str(d.read_mode)}",
                f"normalized_coords = {str(d.normalized_coords).lower()}"]
        out += [f"{k} = true" for k in ("cubemap", "linear") if getattr(d, k)]
    return out


def _toml_value(v) -> str:
    if isinstance(v, dict):
        return "{ bytes = " + _toml_str(v["bytes"]) + " }"
    return str(v)
