"""Texture and surface objects, and what ``tex``, ``tld4``, ``txq``, ``suld``, ``sust``,
``sured``, ``suq`` and ``istypep`` do with them.

A texture or surface object is a 64-bit handle (CUDA's ``cudaTextureObject_t``,
``cudaSurfaceObject_t``; unified texture mode) that names a ``TextureDesc``: where the texels
are (a launch-spec buffer or a ``hypa run`` allocation), their channel format, extents, and for
textures the sampler state.  A ``.texref``/``.surfref`` module variable holds such a handle.

Generated code hands each texture instruction of a warp to ``TextureTable.callback``
(``abi.CTX_TEXTURE``) with the instruction's text and the operand values of its lanes; the
rules here follow the CUDA programming guide's texture fetching appendix: address modes clamp,
wrap, mirror and border (wrap and mirror need normalized coordinates, else they clamp), point
filtering ``T[floor(x)]`` and linear filtering with weights ``frac(x - 0.5)`` in 9-bit fixed
point (8 fractional bits; the corners' weights as the H100 forms them: ``_corner_weights``;
normalized 8-bit data filtered in fixed point), integer formats read as integers or as
normalized floats, cube faces chosen as the H100 breaks ties.  Reads
clamp to the texels, so they never leave their memory; surface accesses out of range follow
the instruction's ``.trap`` (an error), ``.clamp`` or ``.zero``.  Emulating in Python keeps
the sampler in one place for every program; texture instructions are a small part of the
kernels that use them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

import numpy as np

from hypa.ptxdialect.diagnostics import HypaError

from .. import abi

#: channel formats by CUDA's vector type names: (kind, bits per channel, channels)
FORMATS: dict[str, tuple[str, int, int]] = {}
for _kind, _bits, _base in (("s", 8, "char"), ("u", 8, "uchar"), ("s", 16, "short"), ("u", 16, "ushort"),
                            ("s", 32, "int"), ("u", 32, "uint"), ("f", 16, "half"), ("f", 32, "float")):
    for _n in (1, 2, 4):
        FORMATS[_base + ("" if _n == 1 else str(_n))] = (_kind, _bits, _n)
#: CUDA's enum values (cudaTextureAddressMode, cudaTextureFilterMode, cudaTextureReadMode)
ADDRESS_MODES = ("wrap", "clamp", "mirror", "border")
FILTER_MODES = ("point", "linear")
READ_MODES = ("element", "normalized_float")
#: ``txq``/``suq`` ``.channel_data_type`` and ``.channel_order`` values (OpenCL's, as the PTX ISA says)
_CHANNEL_TYPE = {("s", 8, False): 0x10D7, ("s", 16, False): 0x10D8, ("s", 32, False): 0x10D9,
                 ("u", 8, False): 0x10DA, ("u", 16, False): 0x10DB, ("u", 32, False): 0x10DC,
                 ("s", 8, True): 0x10D0, ("s", 16, True): 0x10D1, ("u", 8, True): 0x10D2, ("u", 16, True): 0x10D3,
                 ("f", 16, False): 0x10DD, ("f", 32, False): 0x10DE}
_CHANNEL_ORDER = {1: 0x10B0, 2: 0x10B2, 4: 0x10B5}
_NP_CHANNEL = {("s", 8): np.int8, ("u", 8): np.uint8, ("s", 16): np.int16, ("u", 16): np.uint16,
               ("s", 32): np.int32, ("u", 32): np.uint32, ("f", 16): np.float16, ("f", 32): np.float32}


class TextureError(HypaError, ValueError):
    """A texture or surface description that cannot be used, with a message that says why."""


@dataclass
class TextureDesc:
    """A texture or surface: texels of ``format`` in rows of ``pitch`` bytes (0: packed),
    ``height`` rows per slice (0: a 1D texture), ``depth`` slices (0: 2D), ``layers`` layers
    (0: not layered); the texels start at byte ``offset`` of buffer window ``window`` (launch
    specs: the buffer may move, e.g. into shared memory for ``-j``) or at host ``address``."""

    name: str
    format: str
    width: int
    height: int = 0
    depth: int = 0
    layers: int = 0
    pitch: int = 0
    surface: bool = False
    address_mode: tuple[str, str, str] = ("clamp", "clamp", "clamp")
    filter_mode: str = "point"
    read_mode: str = "element"
    normalized_coords: bool = False
    window: int = 0
    offset: int = 0
    address: int = 0
    nbytes: int = 0
    #: a linear-memory texture (``cudaResourceTypeLinear``): 1D, integer coordinates, zero outside
    linear: bool = False
    #: a cube map: ``layers`` is 6 faces (x 6 for a layered cube map) of ``width`` x ``height`` texels
    cubemap: bool = False
    #: what holds the texels alive (hypa run)
    owner: object = field(default=None, repr=False, compare=False)
    #: hypa run: the memory under the object was freed (cudaFree, cudaFreeArray)
    freed: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        what = f"{'surface' if self.surface else 'texture'} '{self.name}'"
        if self.format not in FORMATS:
            raise TextureError(f"{what}: unknown format {self.format!r} (one of {', '.join(FORMATS)})")
        for k, v in (("width", self.width), ("height", self.height), ("depth", self.depth), ("layers", self.layers),
                     ("pitch", self.pitch)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise TextureError(f"{what}: {k} must be a whole number, not {v!r}")
        if self.width < 1:
            raise TextureError(f"{what}: width must be at least 1")
        if self.depth and not self.height:
            raise TextureError(f"{what}: a 3D texture needs a height")
        if self.depth and self.layers:
            raise TextureError(f"{what}: layered textures are 1D or 2D (depth and layers both given)")
        if self.cubemap and (self.height != self.width or not self.layers or self.layers % 6):
            raise TextureError(f"{what}: a cube map has square faces (height = width) and 6 layers per cube, "
                               f"not {self.width}x{self.height} x {self.layers}")
        if isinstance(self.address_mode, str):
            self.address_mode = (self.address_mode,) * 3
        modes = tuple(self.address_mode)
        if not 1 <= len(modes) <= 3 or any(m not in ADDRESS_MODES for m in modes):
            raise TextureError(f"{what}: address_mode must be one to three of {', '.join(ADDRESS_MODES)}, "
                               f"not {self.address_mode!r}")
        self.address_mode = (modes + (modes[-1],) * 3)[:3]  # type: ignore[assignment]
        if self.filter_mode not in FILTER_MODES:
            raise TextureError(f"{what}: filter_mode must be point or linear, not {self.filter_mode!r}")
        if self.read_mode not in READ_MODES:
            raise TextureError(f"{what}: read_mode must be element or normalized_float, not {self.read_mode!r}")
        for k in ("normalized_coords", "cubemap", "linear"):
            if not isinstance(getattr(self, k), bool):
                raise TextureError(f"{what}: {k} must be true or false, not {getattr(self, k)!r}")
        kind, bits, _n = FORMATS[self.format]
        if self.read_mode == "normalized_float" and (kind == "f" or bits == 32):
            raise TextureError(f"{what}: read_mode normalized_float needs an 8- or 16-bit integer format, "
                               f"not {self.format}")
        if self.filter_mode == "linear" and kind != "f" and self.read_mode != "normalized_float":
            raise TextureError(f"{what}: linear filtering returns floats: use a float format or "
                               f"read_mode normalized_float with {self.format}")
        if self.pitch == 0:
            self.pitch = self.width * self.texel_bytes
        if self.pitch < self.width * self.texel_bytes or self.pitch % (bits // 8):
            raise TextureError(f"{what}: pitch {self.pitch} is less than a row of {self.width} {self.format} "
                               f"texels ({self.width * self.texel_bytes} bytes) or not a multiple of a channel")
        if self.nbytes and self.footprint > self.nbytes:
            raise TextureError(f"{what}: {self.extent_text} {self.format} texels need {self.footprint} bytes, "
                               f"the memory holds {self.nbytes}")

    @property
    def channel(self) -> tuple[str, int]:
        kind, bits, _n = FORMATS[self.format]
        return kind, bits

    @property
    def channels(self) -> int:
        return FORMATS[self.format][2]

    @property
    def texel_bytes(self) -> int:
        _k, bits, n = FORMATS[self.format]
        return bits // 8 * n

    @property
    def dims(self) -> int:
        return 1 if not self.height else 2 if not self.depth else 3

    @property
    def rows(self) -> int:
        """Rows of ``pitch`` bytes in all: rows per slice x slices x layers."""
        return max(self.height, 1) * max(self.depth, 1) * max(self.layers, 1)

    @property
    def footprint(self) -> int:
        return (self.rows - 1) * self.pitch + self.width * self.texel_bytes

    @property
    def extent_text(self) -> str:
        ext = "x".join(str(d) for d in (self.width, self.height, self.depth) if d)
        if self.cubemap:
            return ext + f" cube map{f' x {self.layers // 6}' if self.layers > 6 else ''}"
        return ext + (f" x {self.layers} layers" if self.layers else "")


_VIEWS: dict[tuple[int, int], np.ndarray] = {}


def _view(ctx: int, d: TextureDesc, dtype=np.uint8) -> np.ndarray:
    """The texels' memory as ``dtype`` elements (the buffer's current place for launch-spec
    textures: a buffer moves, e.g. into shared memory for ``-j``)."""
    if d.window:
        ctxw = ctypes.c_int64.from_address(ctx + 8 * abi.CTX_WIN_BASE).value
        base = ctypes.c_int64.from_address(ctxw + 8 * d.window).value + d.offset
    else:
        base = d.address
    size = max(d.footprint, 1)
    key = (base, size)
    v = _VIEWS.get(key)
    if v is None:
        if len(_VIEWS) > 256:
            _VIEWS.clear()
        v = _VIEWS[key] = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(base))
    if dtype is np.uint8:
        return v
    n = v.size // np.dtype(dtype).itemsize
    return v[: n * np.dtype(dtype).itemsize].view(dtype)


@dataclass
class _Instr:
    """An instruction's text as the generated code hands it over: ``NAME.MODS|ncoord|nextra|ndst|check``."""

    name: str
    mods: tuple[str, ...]
    ncoord: int
    nextra: int
    ndst: int
    check: bool

    def has(self, m: str) -> bool:
        return m in self.mods


_GEOMS = (".1d", ".2d", ".3d", ".a1d", ".a2d", ".cube", ".acube", ".2dms", ".a2dms")


def _parse(text: str) -> _Instr:
    opcode, nc, ne, nd, chk = text.split("|")
    parts = opcode.split(".")
    name = parts[0]
    return _Instr(name, tuple("." + p for p in parts[1:]), int(nc), int(ne), int(nd), chk == "1")


class TextureFault(Exception):
    """A lane's texture instruction that stops the launch (a bad handle, ``.trap`` out of range)."""

    def __init__(self, lane: int, message: str):
        super().__init__(message)
        self.lane = lane


class TextureTable:
    """The texture and surface objects a launch can name, by handle, and the callback
    generated code calls (``abi.CTX_TEXTURE``)."""

    CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_int64)

    def __init__(self) -> None:
        self.objects: dict[int, TextureDesc] = {}
        self.next_handle = 1
        #: the message of the fault the callback last reported (read by the emulator's error message)
        self.error = ""
        self._parsed: dict[str, _Instr] = {}
        self._cb = self.CALLBACK(self._callback)

    def add(self, desc: TextureDesc) -> int:
        h = self.next_handle
        self.next_handle += 1
        self.objects[h] = desc
        return h

    def remove(self, handle: int) -> TextureDesc | None:
        return self.objects.pop(handle, None)

    @property
    def address(self) -> int:
        return ctypes.cast(self._cb, ctypes.c_void_p).value or 0

    # -- the callback ------------------------------------------------------------------

    def _callback(self, ctx: int, desc: int, lanes: int, inp: int, out: int) -> int:
        """0, or 1 + the first lane whose instruction faults (the message in ``self.error``)."""
        lane_list = [k for k in range(abi.LANES) if lanes >> k & 1]
        try:
            text = ctypes.string_at(desc).decode()
            ins = self._parsed.get(text)
            if ins is None:
                ins = self._parsed[text] = _parse(text)
            vals = np.ctypeslib.as_array((ctypes.c_int64 * (16 * abi.LANES)).from_address(inp)).reshape(16, abi.LANES)
            res = np.ctypeslib.as_array((ctypes.c_int64 * (4 * abi.LANES)).from_address(out)).reshape(4, abi.LANES)
            with np.errstate(all="ignore"):  # NaN coordinates are data, not a warning on the program's stderr
                self.execute(ctx, ins, vals.view(np.uint64), res.view(np.uint64), lane_list)
            return 0
        except TextureFault as f:
            self.error = str(f)
            return f.lane + 1
        except Exception as ex:  # noqa: BLE001  (never a traceback through ctypes: the launch stops with the reason)
            self.error = f"internal error in the texture emulation: {type(ex).__name__}: {ex}"
            return (lane_list[0] if lane_list else 0) + 1

    def execute(self, ctx: int, ins: _Instr, vals: np.ndarray, res: np.ndarray, lanes: list[int]) -> None:
        """Run ``ins`` for ``lanes``: ``vals[0]`` the handles, then ``ncoord`` coordinates, then
        ``nextra`` more operands; results into ``res[0..ndst)``."""
        if not lanes:
            return
        handles = vals[0, lanes]
        if ins.name == "istypep":
            for k, lane in enumerate(lanes):
                d = self.objects.get(int(handles[k]))
                want = ins.mods[0] if ins.mods else ".texref"
                res[0, lane] = int(d is not None and (d.surface if want == ".surfref" else not d.surface))
            return
        for h in np.unique(handles):
            group = [lane for lane, hh in zip(lanes, handles) if hh == h]
            d = self.objects.get(int(h))
            surface_op = ins.name in ("suld", "sust", "sured", "suq")
            if d is None or d.surface != surface_op:
                want = "surface" if surface_op else "texture"
                raise TextureFault(group[0], f"{ins.name} reads handle {int(h):#x}, which names no {want} object")
            if d.freed:
                raise TextureFault(group[0], f"{ins.name} reads {'surface' if d.surface else 'texture'} '{d.name}', "
                                             f"whose memory was freed (cudaFree/cudaFreeArray)")
            idx = np.array(group)
            if ins.name in ("txq", "suq"):
                res[0, idx] = self._query(d, ins)
            elif ins.name in ("tex", "tld4"):
                for c, v in enumerate(self._tex(ctx, d, ins, vals[:, idx])):
                    res[c, idx] = v
            else:
                self._surface(ctx, d, ins, vals[:, idx], res, idx)

    # -- queries -----------------------------------------------------------------------

    @staticmethod
    def _query(d: TextureDesc, ins: _Instr) -> int:
        kind, bits = d.channel
        q = next(m for m in ins.mods if m not in (".b32", ".level"))
        values = {
            ".width": d.width, ".height": max(d.height, 1), ".depth": max(d.depth, 1),
            ".channel_data_type": _CHANNEL_TYPE[(kind, bits, d.read_mode == "normalized_float")],
            ".channel_order": _CHANNEL_ORDER[d.channels],
            ".normalized_coords": int(d.normalized_coords), ".array_size": d.layers,
            ".num_mipmap_levels": 1, ".num_samples": 0, ".force_unnormalized_coords": 0,
            ".filter_mode": FILTER_MODES.index(d.filter_mode),
            ".addr_mode_0": ADDRESS_MODES.index(d.address_mode[0]),
            ".addr_mode_1": ADDRESS_MODES.index(d.address_mode[1]),
            ".addr_mode_2": ADDRESS_MODES.index(d.address_mode[2]),
            ".memory_layout": int(d.linear),
        }
        if q not in values:
            raise TextureFault(0, f"{ins.name}{q} is not emulated")
        return values[q]

    # -- texture reads -----------------------------------------------------------------

    def _texels(self, ctx: int, d: TextureDesc, coords: list[np.ndarray], layer: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Channel values (shape of the coordinates x channels, the channel type) of integer
        texel coordinates already through the address mode, and which are inside (border mode
        gives the others zero)."""
        kind, bits = d.channel
        cb = bits // 8
        view = _view(ctx, d, _NP_CHANNEL[(kind, bits)])
        ok = None
        extents = (d.width, d.height, d.depth)
        for i, c in enumerate(coords):
            inside = (c >= 0) & (c < extents[i])
            ok = inside if ok is None else ok & inside
        row = coords[1] if d.dims >= 2 else 0
        if d.dims == 3:
            row = row + coords[2] * d.height
        if layer is not None:
            row = row + layer * max(d.height, 1)
        base = (row * (d.pitch // cb) + coords[0] * d.channels)
        base = np.where(ok, base, 0)
        values = view[base[..., None] + np.arange(d.channels)]
        return values, ok

    def _tex(self, ctx: int, d: TextureDesc, ins: _Instr, vals: np.ndarray) -> list[np.ndarray]:
        """``tex``/``tld4``: four result words per lane."""
        geom = next((m for m in ins.mods if m in _GEOMS), ".1d")
        if geom in (".2dms", ".a2dms"):
            raise TextureFault(0, f"{ins.name}{geom} is not emulated")
        types = [m for m in ins.mods if m in (".f32", ".s32", ".u32", ".f16", ".f16x2")]
        ctype = types[-1] if types else ".f32"
        if types and types[0] in (".f16", ".f16x2"):
            raise TextureFault(0, f"{ins.name} with {types[0]} results is not emulated")
        if (geom in (".cube", ".acube")) != d.cubemap:
            raise TextureFault(0, f"{ins.name}{geom} reads texture '{d.name}', which is "
                               f"{'a cube map' if d.cubemap else 'not a cube map'}")
        if d.cubemap:
            return self._cube(ctx, d, ins, vals, geom == ".acube", ctype)
        layered = geom in (".a1d", ".a2d")
        ndim = {".1d": 1, ".2d": 2, ".3d": 3, ".a1d": 1, ".a2d": 2}[geom]
        if ndim != d.dims or layered != bool(d.layers):
            raise TextureFault(0, f"{ins.name}{geom} reads texture '{d.name}', which is "
                               f"{d.dims}D{' layered' if d.layers else ''}")
        words = [vals[1 + k] for k in range(ins.ncoord)]
        return self._sample(ctx, d, ins, words, layered, ndim, ctype)

    def _cube(self, ctx: int, d: TextureDesc, ins: _Instr, vals: np.ndarray, layered: bool, ctype: str
              ) -> list[np.ndarray]:
        """A cube-map fetch: the face of the direction's largest component (ties: z, then y, then
        x) and the (s, t) of the CUDA programming guide's cubemap table, then a 2D fetch of that face with normalized
        coordinates, clamped at the face's edges."""
        words = [vals[1 + k] for k in range(ins.ncoord)]
        cube = np.zeros(len(words[0]), np.int64)
        if layered:
            cube = words[0].astype(np.uint32).astype(np.int64)
            words = words[1:]
        x, y, z = (w.astype(np.uint32).view(np.float32) for w in words[:3])
        ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
        # ties go to z, then y (the H100: (1, 1, 1) reads face +z, (0.5, 0.5, 0.49) and
        # (-0.7, 0.7, 0) face +y; tests/ground_truth/hypa_run/isa_native.json)
        zmaj = (az >= ax) & (az >= ay)
        ymaj = ~zmaj & (ay >= ax)
        face = np.where(zmaj, np.where(z >= 0, 4, 5), np.where(ymaj, np.where(y >= 0, 2, 3), np.where(x >= 0, 0, 1)))
        ma = np.where(zmaj, az, np.where(ymaj, ay, ax))
        sc = np.select([face == 0, face == 1, face == 2, face == 3, face == 4], [-z, z, x, x, x], -x)
        tc = np.select([face == 2, face == 3], [z, -z], -y)
        half = np.float32(0.5)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = ((sc / ma).astype(np.float32) + np.float32(1)) * half
            t = ((tc / ma).astype(np.float32) + np.float32(1)) * half
        faces = getattr(d, "_face_desc", None)
        if faces is None:
            faces = replace(d, cubemap=False, address_mode=("clamp",) * 3, normalized_coords=True, owner=None)
            d._face_desc = faces  # type: ignore[attr-defined]
        layer = np.minimum(cube, d.layers // 6 - 1) * 6 + face
        layer_word = layer.astype(np.uint64)
        pseudo = [layer_word, s.astype(np.float32).view(np.uint32).astype(np.uint64),
                  t.astype(np.float32).view(np.uint32).astype(np.uint64)]
        return self._sample(ctx, faces, ins, pseudo, True, 2, ".f32")

    def _sample(self, ctx: int, d: TextureDesc, ins: _Instr, words: list[np.ndarray], layered: bool, ndim: int,
                ctype: str) -> list[np.ndarray]:
        layer = None
        if layered:
            layer = np.clip(words[0].astype(np.uint32).astype(np.int64), 0, d.layers - 1)
            words = words[1:]
        words = words[:ndim]
        if ctype == ".f32":
            coords = [w.astype(np.uint32).view(np.float32) for w in words]
        else:
            coords = [w.astype(np.uint32).view(np.int32) for w in words]
        kind, _bits = d.channel
        as_float = kind == "f" or d.read_mode == "normalized_float"
        extents = (d.width, d.height, d.depth)[:ndim]
        linear = d.filter_mode == "linear" and ctype == ".f32" and ins.name == "tex"
        if ins.name == "tld4" or linear:
            # the 2 (or 4, 8) texels around x - 0.5 and the 8-bit weights between them
            idx, frac = [], []
            shape = [len(words[0])] + [1] * ndim
            for i, c in enumerate(coords):
                xb = self._scaled(d, c, extents[i]) - np.float32(0.5)
                fl = np.floor(xb)
                frac.append(np.floor((xb - fl).astype(np.float64) * 256 + 0.5).astype(np.int64))  # of 256
                pair = fl.astype(np.int64)[:, None] + np.array([0, 1])  # lanes x 2
                sh = list(shape)
                sh[1 + i] = 2
                idx.append(self._address(d, i, pair, extents[i]).reshape(sh))
            full = np.broadcast_shapes(*(a.shape for a in idx))
            idx = [np.broadcast_to(a, full) for a in idx]
            lay = None if layer is None else layer.reshape([-1] + [1] * ndim)
            raw, inside = self._texels(ctx, d, idx, lay)
            t = self._convert(d, raw, inside)  # lanes x 2 (x 2 (x 2)) x 4
            if ins.name == "tld4":
                comp = next(((".r", ".g", ".b", ".a").index(m) for m in ins.mods if m in (".r", ".g", ".b", ".a")), 0)
                g = t[..., comp]  # lanes x 2 (x) x 2 (y)
                # gather order: (x0, y1), (x1, y1), (x1, y0), (x0, y0)
                return [self._bits(g[:, a, b], as_float) for a, b in ((0, 1), (1, 1), (1, 0), (0, 0))]
            weights = self._corner_weights(frac)
            corners = [(slice(None),) + tuple(corner >> i & 1 for i in range(ndim)) for corner in range(1 << ndim)]
            kind, bits = d.channel
            if kind == "u" and bits == 8 and d.read_mode == "normalized_float":
                # 8-bit unsigned normalized data filter in fixed point: the weighted sum of the
                # texels (weights of 256), widened to 16 bits (x 257 / 256, rounded), read as
                # a 16-bit normalized value (H100: every uchar4 linear read of texture_filtering)
                texels = np.where(inside[..., None], raw.astype(np.int64), 0)
                total = sum(w[:, None] * texels[sel] for w, sel in zip(weights, corners))
                unorm16 = (total * 257 + 128) >> 8
                acc = np.zeros((len(unorm16), 4), np.float32)
                acc[:, :d.channels] = unorm16.astype(np.float32) / np.float32(65535)
                return [self._bits(acc[:, k], True) for k in range(4)]
            acc = None
            for w, sel in zip(weights, corners):
                term = (w.astype(np.float32) / np.float32(256))[:, None] * t[sel]
                acc = term if acc is None else (acc + term).astype(np.float32)
            return [self._bits(acc[:, k], True) for k in range(4)]
        if ctype == ".f32":
            idx = [self._address(d, i, np.floor(self._scaled(d, c, extents[i])).astype(np.int64), extents[i])
                   for i, c in enumerate(coords)]
        else:  # integer coordinates: texel indices
            idx = [self._address(d, i, c.astype(np.int64), extents[i]) for i, c in enumerate(coords)]
        t = self._convert(d, *self._texels(ctx, d, idx, layer))
        return [self._bits(t[:, k], as_float) for k in range(4)]

    @staticmethod
    def _corner_weights(frac: list[np.ndarray]) -> list[np.ndarray]:
        """Each corner's weight (of 256; corner bit i set: the upper texel on axis i) from the
        axes' 8-bit weights, as the H100 forms them: the product of the upper weights of a set
        of axes is rounded to 8 bits after each multiplication, and a corner's weight follows
        from those products by inclusion and exclusion (2D: w11 = round(fx * fy), w10 = fx -
        w11, w01 = fy - w11, w00 = 256 - fx - fy + w11), so the weights add to 256
        (tests/ground_truth/hypa_run/isa_native.json, texture_filtering: bit-exact on every 2D
        float and normalized 8-bit linear read)."""
        n = len(frac)
        upper: dict[int, np.ndarray] = {}  # axis set (bits) -> rounded product of its weights
        for axes in range(1 << n):
            p = None
            for i in range(n):
                if axes >> i & 1:
                    p = frac[i] if p is None else (p * frac[i] + 128) >> 8
            upper[axes] = np.full_like(frac[0], 256) if p is None else p
        weights = []
        for corner in range(1 << n):
            w = np.zeros_like(frac[0])
            for axes in range(1 << n):
                if axes & corner == corner:
                    extra = (axes & ~corner).bit_count()
                    w = w - upper[axes] if extra & 1 else w + upper[axes]
            weights.append(w)
        return weights

    @staticmethod
    def _scaled(d: TextureDesc, c: np.ndarray, n: int) -> np.ndarray:
        c = c.astype(np.float32)
        return (c * np.float32(n)).astype(np.float32) if d.normalized_coords else c

    @staticmethod
    def _address(d: TextureDesc, axis: int, i: np.ndarray, n: int) -> np.ndarray:
        """Texel index ``i`` on ``axis`` after its address mode (border: left out of range)."""
        mode = "border" if d.linear else d.address_mode[axis]
        if mode in ("wrap", "mirror") and not d.normalized_coords:
            mode = "clamp"  # CUDA: wrap and mirror need normalized coordinates
        if mode == "clamp":
            return np.minimum(np.maximum(i, 0), n - 1)
        if mode == "wrap":
            return np.mod(i, n)
        if mode == "mirror":
            m = np.mod(i, 2 * n)
            return np.where(m >= n, 2 * n - 1 - m, m)
        return i

    @staticmethod
    def _convert(d: TextureDesc, values: np.ndarray, inside: np.ndarray) -> np.ndarray:
        """Four channels per lane as the read returns them: float32 (float formats and
        normalized reads) or int64; missing channels and border texels zero (an H100 returns
        (x, 0, 0, 0) for a one-channel float texture: tests/ground_truth/hypa_run/isa_native.json)."""
        kind, bits = d.channel
        n = d.channels
        if kind == "f":
            v = values.astype(np.float32)
        elif d.read_mode == "normalized_float":
            scale = np.float32((1 << (bits - (kind == "s"))) - 1)
            v = values.astype(np.float32) / scale
            if kind == "s":
                v = np.maximum(v, np.float32(-1))
        else:
            v = values.astype(np.int64)
        v = np.where(inside[..., None], v, 0).astype(v.dtype)
        out = np.zeros(v.shape[:-1] + (4,), v.dtype)
        out[..., :n] = v
        return out

    @staticmethod
    def _bits(v: np.ndarray, as_float: bool) -> np.ndarray:
        if as_float and v.dtype != np.int64:
            return v.astype(np.float32).view(np.uint32).astype(np.uint64)
        return v.astype(np.int64).astype(np.uint32).astype(np.uint64)

    # -- surfaces ----------------------------------------------------------------------

    def _surface(self, ctx: int, d: TextureDesc, ins: _Instr, vals: np.ndarray, res: np.ndarray,
                 idx: np.ndarray) -> None:
        """``suld.b``, ``sust.b``/``.p``, ``sured``: byte-addressed x (``.b``) or element x (``.p``)."""
        geom = next((m for m in ins.mods if m in _GEOMS), ".1d")
        layered = geom in (".a1d", ".a2d")
        ndim = {".1d": 1, ".2d": 2, ".3d": 3, ".a1d": 1, ".a2d": 2}.get(geom)
        if ndim is None:
            raise TextureFault(int(idx[0]), f"{ins.name}{geom} is not emulated")
        if ndim != d.dims or layered != bool(d.layers):
            raise TextureFault(int(idx[0]), f"{ins.name}{geom} accesses surface '{d.name}', which is "
                               f"{d.dims}D{' layered' if d.layers else ''}")
        words = [vals[1 + k].astype(np.uint32).view(np.int32).astype(np.int64) for k in range(ins.ncoord)]
        layer = words.pop(0) if layered else None
        coords = words[:ndim]
        formatted = ins.has(".p")
        btypes = [m for m in ins.mods if m in (".b8", ".b16", ".b32", ".b64", ".u32", ".s32", ".u64", ".s64")]
        ebits = int(btypes[-1][2:]) if btypes else 32
        vec = 4 if ins.has(".v4") else 2 if ins.has(".v2") else 1
        nbytes = d.texel_bytes if formatted else ebits // 8 * vec
        x = coords[0] * d.texel_bytes if formatted else coords[0]
        row_bytes = d.width * d.texel_bytes
        bad = (x < 0) | (x + nbytes > row_bytes)
        for i in range(1, ndim):
            bad |= (coords[i] < 0) | (coords[i] >= (d.height, d.depth)[i - 1])
        if layer is not None:
            bad |= (layer < 0) | (layer >= d.layers)
        mode = next((m for m in ins.mods if m in (".trap", ".clamp", ".zero")), ".trap")
        if bad.any() and mode == ".trap":
            k = int(np.argmax(bad))
            at = ", ".join(str(int(c[k])) for c in ([layer] if layer is not None else []) + coords)
            raise TextureFault(int(idx[k]), f"{ins.name}{geom}.trap out of range: coordinates ({at}) "
                               f"{'(x in bytes) ' if not formatted else ''}outside surface '{d.name}' "
                               f"({d.extent_text} {d.format})")
        if ins.check:
            return
        if mode == ".clamp":
            x = np.clip(x, 0, row_bytes - nbytes)
            coords = [x] + [np.clip(c, 0, (d.height, d.depth)[i] - 1) for i, c in enumerate(coords[1:])]
            if layer is not None:
                layer = np.clip(layer, 0, d.layers - 1)
            bad = np.zeros_like(bad)
        else:
            coords = [np.where(bad, 0, x)] + [np.where(bad, 0, c) for c in coords[1:]]
            if layer is not None:
                layer = np.where(bad, 0, layer)
        row = np.zeros_like(x)
        if ndim >= 2:
            row = coords[1]
        if ndim == 3:
            row = row + coords[2] * d.height
        if layer is not None:
            row = row + layer * max(d.height, 1)
        start = row * d.pitch + coords[0]
        view = _view(ctx, d)
        good = ~bad
        if ins.name == "suld":
            eb = ebits // 8
            for k in range(vec):
                pos = (start + k * eb)[:, None] + np.arange(eb)
                raw = np.ascontiguousarray(view[np.where(good[:, None], pos, 0)])
                v = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[eb])[:, 0].astype(np.uint64)
                res[k, idx] = np.where(good, v, 0)
            return
        if ins.name == "sust":
            src = [vals[1 + ins.ncoord + k] for k in range(vec)]
            for j in np.nonzero(good)[0]:
                if formatted:
                    data = self._pack(d, [int(s[j]) for s in src])
                else:
                    eb = ebits // 8
                    data = b"".join((int(s[j]) & ((1 << ebits) - 1)).to_bytes(eb, "little") for s in src)
                view[int(start[j]): int(start[j]) + len(data)] = np.frombuffer(data, np.uint8)
            return
        # sured: read-modify-write of one element
        op = next(m for m in ins.mods if m in (".add", ".min", ".max", ".and", ".or"))
        eb = ebits // 8
        mask = (1 << ebits) - 1
        signed = any(m.startswith(".s") for m in btypes)
        src = vals[1 + ins.ncoord]

        def as_signed(v: int) -> int:
            return v - (1 << ebits) if signed and v >> (ebits - 1) else v

        for j in np.nonzero(good)[0]:
            s = int(start[j])
            cur = as_signed(int.from_bytes(view[s: s + eb].tobytes(), "little"))
            v = as_signed(int(src[j]) & mask)
            new = {".add": cur + v, ".min": min(cur, v), ".max": max(cur, v), ".and": cur & v, ".or": cur | v}[op]
            view[s: s + eb] = np.frombuffer((new & mask).to_bytes(eb, "little"), np.uint8)

    @staticmethod
    def _pack(d: TextureDesc, words: list[int]) -> bytes:
        """``sust.p``: 32-bit values (R, G, B, A) in the surface's format; channels the source
        lacks are written as zero."""
        kind, bits = d.channel
        out = []
        for c in range(d.channels):
            w = words[c] if c < len(words) else 0
            if kind == "f":
                f = np.array(w & 0xFFFFFFFF, np.uint32).view(np.float32)
                out.append(f.astype(np.float16 if bits == 16 else np.float32).tobytes())
            else:
                out.append((w & ((1 << bits) - 1)).to_bytes(bits // 8, "little"))
        return b"".join(out)
