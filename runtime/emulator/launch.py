"""Kernel launches: the launch-spec contract of docs/guide.md, "Launch specification".

A launch names the kernel (mangled or demangled), grid, block, dynamic shared
memory, one argument per ``.param`` (scalars by value, pointers by buffer
name) and each buffer's contents.  The same launch comes from a TOML file, a
CLI string (``grid=128 block=256 args=32768,rp,ci buffer.rp=int32:32769:arange``)
or the Python API (``Launch(...)``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hypa.ptxdialect.diagnostics import HypaError

from . import buffer_image


class LaunchError(HypaError):
    """A launch specification that cannot be used, with a message that says why."""


Dim3 = tuple[int, int, int]


def dim3(value: Any, what: str) -> Dim3:
    """``128`` -> (128, 1, 1); ``[16, 16]`` -> (16, 16, 1)."""
    bad = LaunchError(f"{what} must be an integer or a list of up to 3 integers, not {value!r}")
    if isinstance(value, bool):
        raise bad
    if isinstance(value, (int, np.integer)):
        vals = [int(value)]
    elif isinstance(value, str):
        try:
            vals = [int(v) for v in re.split(r"[x,]", value) if v.strip()]
        except ValueError:
            raise bad from None
    elif isinstance(value, (list, tuple)):
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            raise bad
        vals = [int(v) for v in value]
    else:
        raise bad
    if not 1 <= len(vals) <= 3 or any(v < 1 for v in vals):
        raise LaunchError(f"{what} must have 1 to 3 positive dimensions, got {value!r}")
    while len(vals) < 3:
        vals.append(1)
    return (vals[0], vals[1], vals[2])


#: CUDA's launch limits (programming guide, compute capabilities 5.0 and later)
GRID_LIMITS = (2**31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)
#: the most dynamic shared memory a block may opt into (sm_90: 227 KB)
MAX_DYNAMIC_SHARED_BYTES = 227 * 1024

#: numpy kinds a device buffer may hold: booleans, integers, floats, complex numbers
NUMERIC_KINDS = "biufc"


def max_buffer_bytes() -> int:
    """The largest buffer a launch spec may ask for: what a GPU could hold, and what this
    machine can (an oversized count is a message, not the machine running out of memory)."""
    gpu = 80 * 10**9
    try:
        host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        host = gpu
    return min(gpu, host)


def check_numeric(name: str, arr: np.ndarray) -> np.ndarray:
    """Emulated code reads and writes a buffer's bytes: only plain numbers may live there
    (an ``object`` array holds Python pointers a store would overwrite)."""
    if arr.dtype.kind not in NUMERIC_KINDS or arr.dtype.hasobject:
        raise LaunchError(f"buffer '{name}': dtype {arr.dtype} is not a numeric type "
                          f"(use an integer, float or bool dtype)")
    return arr


@dataclass
class BufferSpec:
    """A device buffer: element type, element count and initial contents."""

    name: str
    dtype: str
    count: int
    init: Any = "zeros"
    base_dir: str = "."

    def materialize(self, contents: bool = True) -> np.ndarray:
        """The buffer as a private array; ``contents=False``: zeros of its size where the
        contents would be generated (random, ones, arange, value: for a launch whose emulated
        code never reads the buffer, and whose memory nobody reads after it)."""
        try:
            nbytes = self.count * np.dtype(self.dtype).itemsize
        except TypeError:
            nbytes = 0  # (an unknown dtype is reported below)
        limit = max_buffer_bytes()
        if nbytes > limit:
            raise LaunchError(f"buffer '{self.name}': {self.count} x {self.dtype} is {nbytes:,} bytes, more than "
                              f"{limit:,} (the smaller of an H100's 80 GB and half this machine's memory)")
        try:
            if not contents and self._generated():
                dt = np.dtype(self.dtype)
                check_numeric(self.name, np.empty(0, dt))
                if not _plainly_valid_random(self.init, dt):
                    self._contents(dt, min(int(self.count), 1))  # its arguments checked as for the whole
                return buffer_image.zeros(dt, int(self.count))
            return self._materialize()
        except (ValueError, TypeError, OverflowError, MemoryError) as e:  # a bad count, seed, range or value
            raise LaunchError(f"buffer '{self.name}': {e}") from None

    @property
    def np_dtype(self) -> np.dtype:
        """The element type (an unknown name is the user's error, said in one line)."""
        try:
            return np.dtype(self.dtype)
        except TypeError as e:
            raise LaunchError(f"buffer '{self.name}': unknown dtype {self.dtype!r}") from e

    @property
    def nbytes(self) -> int:
        """The buffer's size in bytes, without making it."""
        return int(self.count) * self.np_dtype.itemsize

    def identity(self) -> str:
        """A text that names the buffer's initial contents (equal texts, equal bytes): what a
        launch key hashes instead of the bytes.  A file is named by its path, size and
        modification time, as build tools do."""
        init = self.init
        kind = next((k for k in ("file", "chunks") if isinstance(init, dict) and k in init), None)
        if kind == "chunks" and not isinstance(init["chunks"], str):
            raise LaunchError(f"buffer '{self.name}': chunks must name a manifest file, not {init['chunks']!r}")
        if kind is not None:  # (a chunk manifest names its chunks by their hashes)
            path = os.path.realpath(os.path.join(self.base_dir, str(init[kind])))
            try:
                st = os.stat(path)
            except OSError as e:
                what = "chunk manifest " if kind == "chunks" else ""
                raise LaunchError(f"buffer '{self.name}': cannot read {what}{path}: {e.strerror or e}") from None
            init = {kind: path, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        text = f"{self.np_dtype.str}:{self.count}:{init!r}"
        if len(text) > 256:  # long value lists: their digest
            text = text[:64] + hashlib.sha256(text.encode()).hexdigest()
        return text

    def _generated(self) -> bool:
        """Whether the contents are computed from the init's arguments (not read from a file
        or given element by element)."""
        init = self.init
        return init in ("ones", "arange") or (isinstance(init, dict) and ("random" in init or "value" in init))

    def _materialize(self) -> np.ndarray:
        """The contents as a private, writable array: copy-on-write pages of a shared image
        where the buffer is large (``runtime/emulator/buffer_image.py``)."""
        try:
            dt = np.dtype(self.dtype)
        except TypeError as e:
            raise LaunchError(f"buffer '{self.name}': unknown dtype {self.dtype!r}") from e
        check_numeric(self.name, np.empty(0, dt))
        n = int(self.count)
        if n < 0:
            raise ValueError(f"negative count {n}")
        init = self.init
        if init == "zeros" or init is None:
            return buffer_image.zeros(dt, n)
        if isinstance(init, dict) and "file" in init:
            path = os.path.join(self.base_dir, init["file"])
            try:
                mapped = buffer_image.from_npy(path, dt, n)
            except (OSError, ValueError, EOFError):
                mapped = None  # read (and reported) below
            if mapped is not None:
                return mapped
        return buffer_image.from_image(self.identity(), dt, n, lambda: self._contents(dt, n))

    def _contents(self, dt: np.dtype, n: int) -> np.ndarray:
        init = self.init
        if init == "ones":
            return np.ones(n, dt)
        if init == "arange":
            return np.arange(n).astype(dt)
        if isinstance(init, dict):
            if "value" in init:
                return np.full(n, init["value"], dt)
            if "random" in init:
                r = init["random"]
                if not isinstance(r, dict):
                    raise LaunchError(f"buffer '{self.name}': random must be a table {{seed, low, high}}, not {r!r}")
                rng = np.random.default_rng(r.get("seed", 0))
                low, high = r.get("low", 0), r.get("high", 1)
                if dt.kind == "f":
                    return rng.uniform(low, high, n).astype(dt)
                return rng.integers(low, high, n, endpoint=False).astype(dt)
            if "file" in init:
                path = os.path.join(self.base_dir, init["file"])
                try:
                    arr = np.load(path).astype(dt).ravel()
                except OSError as e:
                    raise LaunchError(f"buffer '{self.name}': cannot read {path}: {e.strerror or e}") from e
                except (EOFError, ValueError) as e:  # empty, truncated, not a .npy file, a pickle
                    why = "the file is empty" if isinstance(e, EOFError) or os.path.getsize(path) == 0 else str(e)
                    raise LaunchError(f"buffer '{self.name}': {path} is not a .npy array: {why}") from None
                if arr.size < n:
                    raise LaunchError(f"buffer '{self.name}': {path} holds {arr.size} elements, count is {n}")
                return arr[:n].copy()
            if "chunks" in init:
                return self._from_chunks(dt, n)
            if "values" in init:
                arr = np.asarray(init["values"], dt)
                if arr.size != n:
                    raise LaunchError(f"buffer '{self.name}': {arr.size} values given, count is {n}")
                return arr
        if isinstance(init, (list, tuple)):
            arr = np.asarray(init, dt)
            if arr.size != n:
                raise LaunchError(f"buffer '{self.name}': {arr.size} values given, count is {n}")
            return arr
        raise LaunchError(
            f"buffer '{self.name}': init must be zeros, ones, arange, {{value=..}}, {{random={{..}}}}, {{file=..}} "
            f"or {{chunks=..}}, not {init!r}"
        )

    def _from_chunks(self, dt: np.dtype, n: int) -> np.ndarray:
        """``{chunks = "buffers/<digest>.manifest"}``: what ``hypa run --capture`` writes
        (``runtime.chunks``); the manifest must hold at least ``count`` elements."""
        from .chunks import ChunkError, read_manifest

        path = self.init["chunks"]
        if not isinstance(path, str):
            raise LaunchError(f"buffer '{self.name}': chunks must name a manifest file, not {path!r}")
        path = os.path.join(self.base_dir, path)
        try:
            raw = read_manifest(path)
        except ChunkError as e:
            raise LaunchError(f"buffer '{self.name}': {e}") from None
        if raw.size < n * dt.itemsize:
            raise LaunchError(f"buffer '{self.name}': {path} holds {raw.size} bytes, {n} x {dt} need {n * dt.itemsize}")
        return raw[: n * dt.itemsize].view(dt)


_TEXTURE_KEYS = ("buffer", "format", "width", "height", "depth", "layers", "pitch", "offset", "address_mode",
                 "filter_mode", "read_mode", "normalized_coords", "cubemap", "linear")
_SURFACE_KEYS = ("buffer", "format", "width", "height", "depth", "layers", "pitch", "offset")


@dataclass
class TextureSpec:
    """A texture or surface object over a buffer (``[textures.NAME]``/``[surfaces.NAME]``): the
    kernel parameter or ``.texref``/``.surfref`` variable that names it gets its handle.
    ``fields`` are ``runtime.textures.TextureDesc``'s (format, width, height, depth, layers,
    pitch, address_mode, filter_mode, read_mode, normalized_coords), checked here."""

    name: str
    buffer: str
    surface: bool = False
    offset: int = 0
    fields: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.desc(0)

    def desc(self, nbytes: int, **where: Any):
        """The ``TextureDesc`` over ``nbytes`` bytes of the buffer (0: size not known yet)."""
        from .textures import TextureDesc, TextureError

        what = "surface" if self.surface else "texture"
        if not isinstance(self.buffer, str):
            raise LaunchError(f"{what} '{self.name}': buffer must name a buffer, not {self.buffer!r}")
        off = self.offset
        if isinstance(off, bool) or not isinstance(off, int) or off < 0:
            raise LaunchError(f"{what} '{self.name}': offset must be a whole number of bytes, not {off!r}")
        if nbytes and off > nbytes:
            raise LaunchError(f"{what} '{self.name}': offset {off} is past the end of buffer '{self.buffer}' "
                              f"({nbytes} bytes)")
        if "format" not in self.fields or "width" not in self.fields:
            raise LaunchError(f"{what} '{self.name}' needs format and width")
        try:
            return TextureDesc(self.name, surface=self.surface, offset=off,
                               nbytes=(nbytes - off) if nbytes else 0, **self.fields, **where)
        except TextureError as e:
            raise LaunchError(str(e)) from None
        except TypeError as e:
            raise LaunchError(f"{what} '{self.name}': {e}") from None


@dataclass
class Launch:
    """One kernel launch.  ``args`` holds one entry per kernel parameter: a
    number (by value), a buffer name (its device address), or a numpy array
    (an anonymous buffer, Python API only)."""

    kernel: str | None = None
    grid: Dim3 = (1, 1, 1)
    block: Dim3 = (1, 1, 1)
    args: list[Any] = field(default_factory=list)
    buffers: dict[str, BufferSpec | np.ndarray] = field(default_factory=dict)
    shared_bytes: int = 0
    file: str | None = None
    #: initial contents of module variables (``__device__``/``__constant__``), by PTX name:
    #: a buffer name (bytes from that buffer) or bytes; others start from their initializer
    variables: dict[str, Any] = field(default_factory=dict)
    #: texture and surface objects by name (``TextureSpec``): an argument or a
    #: ``.texref``/``.surfref`` variable naming one gets its handle
    textures: dict[str, TextureSpec] = field(default_factory=dict)
    #: ``cudaLaunchCooperativeKernel``: every CTA of the grid resident at once, so a grid-wide
    #: barrier (cooperative groups' ``grid.sync()``) can wait for all of them (its CTAs run
    #: interleaved, under the interleaved warp schedule; docs/design.md, "Execution model")
    cooperative: bool = False

    def __post_init__(self) -> None:
        self.grid = dim3(self.grid, "grid")
        self.block = dim3(self.block, "block")
        if self.block[0] * self.block[1] * self.block[2] > 1024:
            raise LaunchError(f"block {self.block} has more than 1024 threads")
        for what, dims, limits in (("grid", self.grid, GRID_LIMITS), ("block", self.block, BLOCK_LIMITS)):
            for axis, d, lim in zip("xyz", dims, limits):
                if d > lim:
                    raise LaunchError(f"{what}.{axis} = {d} is more than CUDA allows ({lim})")
        if isinstance(self.shared_bytes, bool) or not isinstance(self.shared_bytes, (int, np.integer)):
            raise LaunchError(f"shared memory size must be a whole number of bytes, not {self.shared_bytes!r}")
        if not 0 <= self.shared_bytes <= MAX_DYNAMIC_SHARED_BYTES:
            raise LaunchError(f"dynamic shared memory of {self.shared_bytes} bytes is outside 0 .. "
                              f"{MAX_DYNAMIC_SHARED_BYTES} (the most a block may ask for on sm_90)")

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def num_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.threads_per_cta * self.num_ctas

    def buffer_nbytes(self) -> dict[str, int]:
        """Each buffer's size in bytes, without making the buffers."""
        return {name: int(b.nbytes) for name, b in self.buffers.items()}

    def materialize_buffers(self, copy: bool = True, unread: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
        """The buffers' contents; a caller's array is copied unless ``copy`` is False (then
        full mode writes the kernel's stores into it).  Spec buffers named in ``unread`` are
        zeros of their size: their contents are never made."""
        out: dict[str, np.ndarray] = {}
        for name, b in self.buffers.items():
            if isinstance(b, np.ndarray):
                arr = check_numeric(name, b)
                out[name] = np.array(arr, copy=True, order="C") if copy else arr
            else:
                out[name] = b.materialize(contents=name not in unread)
        return out


def _plainly_valid_random(init: Any, dt: np.dtype) -> bool:
    """Whether ``init`` is a ``random`` table numpy's generator certainly takes for ``dt`` (a
    seed of 0 or more; finite bounds, integers with low < high for an integer type): its check
    needs no sample, so a launch that never reads the buffer does not load ``numpy.random``
    (7 ms of a 0.26 s warm ``hypa profile``).  Anything else is checked by drawing one."""
    if not (isinstance(init, dict) and isinstance(init.get("random"), dict)):
        return False
    r = init["random"]
    seed, low, high = r.get("seed", 0), r.get("low", 0), r.get("high", 1)
    if not (type(seed) is int and seed >= 0):
        return False
    if dt.kind == "f":
        return all(type(x) in (int, float) and abs(x) < 1e300 for x in (low, high))
    return type(low) is int and type(high) is int and -(1 << 63) <= low < high <= (1 << 63)


def _buffer_from_table(name: str, t: dict[str, Any], base_dir: str) -> BufferSpec:
    if not isinstance(t, dict):
        raise LaunchError(f"[buffers.{name}] must be a table")
    unknown = set(t) - {"dtype", "count", "init"}
    if unknown:
        raise LaunchError(f"[buffers.{name}]: unknown keys {', '.join(sorted(unknown))}")
    if "dtype" not in t or "count" not in t:
        raise LaunchError(f"[buffers.{name}] needs dtype and count")
    count = t["count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise LaunchError(f"[buffers.{name}]: count must be a whole number of elements, not {count!r}")
    return BufferSpec(name, str(t["dtype"]), count, t.get("init", "zeros"), base_dir)


def launches_from_toml(path: str) -> list[Launch]:
    """Every ``[[launch]]`` of a TOML file, in order (buffers are shared)."""
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise LaunchError(f"{path}: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise LaunchError(f"{path}: {e}") from e
    return launches_from_dict(data, os.path.dirname(os.path.abspath(path)), path)


def launches_from_dict(data: dict[str, Any], base_dir: str = ".", where: str = "launch spec") -> list[Launch]:
    unknown = set(data) - {"launch", "buffers", "textures", "surfaces"}
    if unknown:
        raise LaunchError(f"{where}: unknown top-level keys {', '.join(sorted(unknown))}")
    tables = data.get("launch")
    if not tables:
        raise LaunchError(f"{where}: no [[launch]] table")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise LaunchError(f"{where}: launch must be an array of tables ([[launch]])")
    btables = data.get("buffers", {})
    if not isinstance(btables, dict):
        raise LaunchError(f"{where}: buffers must be a table of tables ([buffers.NAME])")
    buffers = {n: _buffer_from_table(n, t, base_dir) for n, t in btables.items()}
    textures: dict[str, TextureSpec] = {}
    for key, surface in (("textures", False), ("surfaces", True)):
        tt = data.get(key, {})
        if not isinstance(tt, dict):
            raise LaunchError(f"{where}: {key} must be a table of tables ([{key}.NAME])")
        for n, t in tt.items():
            if n in textures or n in buffers:
                raise LaunchError(f"{where}: [{key}.{n}]: the name is already a buffer, texture or surface")
            textures[n] = _texture_from_table(n, t, surface, key, buffers)
    out: list[Launch] = []
    for i, t in enumerate(tables):
        known = {"file", "kernel", "grid", "block", "shared_bytes", "args", "variables", "cooperative"}
        bad = set(t) - known
        if bad:
            raise LaunchError(f"{where}: launch {i + 1}: unknown keys {', '.join(sorted(bad))}")
        if "grid" not in t or "block" not in t:
            raise LaunchError(f"{where}: launch {i + 1} needs grid and block")
        file = t.get("file")
        if file is not None:
            if not isinstance(file, str):
                raise LaunchError(f"{where}: launch {i + 1}: file must be a path, not {file!r}")
            file = os.path.join(base_dir, file)
        if t.get("kernel") is not None and not isinstance(t["kernel"], str):
            raise LaunchError(f"{where}: launch {i + 1}: kernel must be a name, not {t['kernel']!r}")
        raw_args = t.get("args", [])
        if not isinstance(raw_args, list):
            raise LaunchError(f"{where}: launch {i + 1}: args must be a list, not {raw_args!r}")
        args = [_arg_from_table(a, f"{where}: launch {i + 1}") for a in raw_args]
        variables = t.get("variables", {})
        if not isinstance(variables, dict) or not all(isinstance(v, str) and (v in buffers or v in textures)
                                                      for v in variables.values()):
            raise LaunchError(f"{where}: launch {i + 1}: variables must map variable names to [buffers], "
                              f"[textures] or [surfaces] names")
        named = [a for a in [*args, *variables.values()] if isinstance(a, str)]
        used_tex = {a: textures[a] for a in named if a in textures}
        used = {a: buffers[a] for a in [*named, *(x.buffer for x in used_tex.values())] if a in buffers}
        for a in args:
            if isinstance(a, str) and a not in buffers and a not in textures:
                raise LaunchError(f"{where}: launch {i + 1}: argument '{a}' names no [buffers.{a}], "
                                  f"[textures.{a}] or [surfaces.{a}] table")
        out.append(
            Launch(
                kernel=t.get("kernel"),
                grid=t["grid"],
                block=t["block"],
                args=args,
                buffers=used,  # type: ignore[arg-type]
                shared_bytes=t.get("shared_bytes", 0),
                cooperative=_flag(t.get("cooperative", False), f"{where}: launch {i + 1}: cooperative"),
                file=file,
                variables=dict(variables),
                textures=used_tex,
            )
        )
    return out


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise LaunchError(f"{what} must be true or false, not {value!r}")
    return value


def _texture_from_table(name: str, t: Any, surface: bool, key: str, buffers: dict[str, Any]) -> TextureSpec:
    if not isinstance(t, dict):
        raise LaunchError(f"[{key}.{name}] must be a table")
    allowed = _SURFACE_KEYS if surface else _TEXTURE_KEYS
    unknown = set(t) - set(allowed)
    if unknown:
        raise LaunchError(f"[{key}.{name}]: unknown keys {', '.join(sorted(unknown))} (allowed: {', '.join(allowed)})")
    if "buffer" not in t:
        raise LaunchError(f"[{key}.{name}] needs buffer (the [buffers] table holding its texels)")
    if t["buffer"] not in buffers:
        raise LaunchError(f"[{key}.{name}]: buffer {t['buffer']!r} names no [buffers] table")
    fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in t.items() if k not in ("buffer", "offset")}
    return TextureSpec(name, t["buffer"], surface, t.get("offset", 0), fields)


def _arg_from_table(a: Any, where: str) -> Any:
    """``{bytes = "0a0b..."}``: a by-value parameter of any size (a struct), as hex."""
    if a is None or isinstance(a, list):
        raise LaunchError(f"{where}: an argument must be a number, a buffer name or {{bytes = \"<hex>\"}}, not {a!r}")
    if isinstance(a, dict):
        if set(a) != {"bytes"} or not isinstance(a["bytes"], str):
            raise LaunchError(f"{where}: an argument table must be {{bytes = \"<hex>\"}}, not {a!r}")
        try:
            return bytes.fromhex(a["bytes"])
        except ValueError:
            raise LaunchError(f"{where}: {a['bytes']!r} is not hex") from None
    return a


def _cli_value(text: str) -> Any:
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def launch_from_cli(spec: str) -> Launch:
    """``grid=128 block=256 shared=0 kernel=NAME args=1,x,y buffer.x=float32:1024:arange``.

    A buffer is ``dtype:count[:init]`` with init ``zeros``, ``ones``,
    ``arange``, ``value=V`` or ``random=LOW..HIGH[@SEED]``.  ``texture.NAME=`` and
    ``surface.NAME=`` make texture and surface objects over a buffer (``_cli_texture``).
    """
    fields: dict[str, str] = {}
    buffers: dict[str, BufferSpec] = {}
    textures: dict[str, TextureSpec] = {}
    for tok in shlex.split(spec):
        if "=" not in tok:
            raise LaunchError(f"--emulate: expected key=value, got {tok!r}")
        k, v = tok.split("=", 1)
        if k.startswith(("texture.", "surface.")):
            name = k.split(".", 1)[1]
            textures[name] = _cli_texture(name, v, k.startswith("surface."))
        elif k.startswith(("buffer.", "buf.")):
            name = k.split(".", 1)[1]
            parts = v.split(":")
            if len(parts) < 2:
                raise LaunchError(f"--emulate: buffer '{name}' must be dtype:count[:init]")
            init: Any = "zeros"
            if len(parts) > 2:
                init = _cli_init(parts[2], name)
            try:
                count = int(parts[1], 0)
            except ValueError:
                raise LaunchError(f"--emulate: buffer '{name}': count {parts[1]!r} is not an integer") from None
            if count < 0:
                raise LaunchError(f"--emulate: buffer '{name}': count {count} is negative")
            buffers[name] = BufferSpec(name, parts[0], count, init)
        elif k in ("grid", "block", "args", "kernel", "shared", "shared_bytes", "cooperative"):
            fields[k] = v
        else:
            raise LaunchError(f"--emulate: unknown key {k!r} (grid, block, args, kernel, shared, cooperative, "
                              f"buffer.NAME, texture.NAME, surface.NAME)")
    if "grid" not in fields or "block" not in fields:
        raise LaunchError("--emulate needs grid=... and block=...")
    try:
        args = [_cli_value(a) for a in fields.get("args", "").split(",") if a != ""]
        shared = int(fields.get("shared", fields.get("shared_bytes", "0")), 0)
    except ValueError as e:
        raise LaunchError(f"--emulate: {e}") from None
    for a in args:
        if isinstance(a, str) and a not in buffers and a not in textures:
            raise LaunchError(f"--emulate: argument '{a}' names no buffer (add buffer.{a}=dtype:count)")
    for t in textures.values():
        if t.buffer not in buffers:
            raise LaunchError(f"--emulate: {'surface' if t.surface else 'texture'} '{t.name}': "
                              f"buffer '{t.buffer}' is not given (add buffer.{t.buffer}=dtype:count)")
        if t.name in buffers:
            raise LaunchError(f"--emulate: '{t.name}' names both a buffer and a texture or surface")
    return Launch(
        textures=textures,
        kernel=fields.get("kernel"),
        grid=fields["grid"],
        block=fields["block"],
        args=args,
        buffers=buffers,  # type: ignore[arg-type]
        shared_bytes=shared,
        cooperative=_flag({"true": True, "1": True, "false": False, "0": False}.get(
            fields.get("cooperative", "false").lower(), fields.get("cooperative")), "--emulate: cooperative"),
    )


def _cli_texture(name: str, text: str, surface: bool) -> TextureSpec:
    """``BUFFER:FORMAT:WxHxD[:layers=N][:pitch=N][:offset=N]`` and for textures
    ``[:address=clamp,wrap][:filter=linear][:read=normalized_float][:normalized][:cubemap]``."""
    what = "surface" if surface else "texture"
    parts = text.split(":")
    if len(parts) < 3:
        raise LaunchError(f"--emulate: {what} '{name}' must be BUFFER:FORMAT:WIDTHxHEIGHTxDEPTH[:options]")
    try:
        dims = [int(d) for d in parts[2].split("x")]
    except ValueError:
        raise LaunchError(f"--emulate: {what} '{name}': extent {parts[2]!r} is not WIDTH[xHEIGHT[xDEPTH]]") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"--emulate: {what} '{name}': extent {parts[2]!r} is not WIDTH[xHEIGHT[xDEPTH]]")
    fields: dict[str, Any] = {"format": parts[1], **dict(zip(("width", "height", "depth"), dims))}
    offset = 0
    for opt in parts[3:]:
        key, _, val = opt.partition("=")
        if key in ("layers", "pitch", "offset") and val:
            try:
                n = int(val, 0)
            except ValueError:
                raise LaunchError(f"--emulate: {what} '{name}': {key}={val!r} is not a number") from None
            if key == "offset":
                offset = n
            else:
                fields[key] = n
        elif surface:
            raise LaunchError(f"--emulate: surface '{name}': unknown option {opt!r} (layers=N, pitch=N, offset=N)")
        elif key == "address" and val:
            fields["address_mode"] = tuple(val.split(","))
        elif key == "filter" and val:
            fields["filter_mode"] = val
        elif key == "read" and val:
            fields["read_mode"] = val
        elif opt == "normalized":
            fields["normalized_coords"] = True
        elif opt == "cubemap":
            fields["cubemap"] = True
        else:
            raise LaunchError(f"--emulate: texture '{name}': unknown option {opt!r} (address=M[,M,M], "
                              f"filter=point|linear, read=element|normalized_float, normalized, cubemap, layers=N, "
                              f"pitch=N, offset=N)")
    return TextureSpec(name, parts[0], surface, offset, fields)


def _cli_init(text: str, name: str) -> Any:
    if text in ("zeros", "ones", "arange"):
        return text
    if text.startswith("value="):
        return {"value": _cli_value(text[6:])}
    m = re.fullmatch(r"random=([-\d.e]+)\.\.([-\d.e]+)(?:@(\d+))?", text)
    if m:
        low, high = _cli_value(m.group(1)), _cli_value(m.group(2))
        if isinstance(low, str) or isinstance(high, str):
            raise LaunchError(f"--emulate: buffer '{name}': random={m.group(1)}..{m.group(2)} needs two numbers")
        return {"random": {"low": low, "high": high, "seed": int(m.group(3) or 0)}}
    raise LaunchError(f"--emulate: buffer '{name}': unknown init {text!r}")
