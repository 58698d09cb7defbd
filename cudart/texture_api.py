"""The CUDA runtime's arrays, texture objects and surface objects (``hypa run``).

A ``cudaArray_t`` is hypa memory laid out row after row (``width`` texels a row, ``height``
rows a slice, then slices or layers), its handle the address of that memory; a texture or
surface object is a handle of ``HostRuntime.textures`` (``runtime.textures.TextureTable``),
which the emulator's texture instructions read.  The structures are read with the layouts of
CUDA 12/13's ``driver_types.h`` and ``texture_types.h``.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from hypa.runtime.emulator import memory_limits
from hypa.runtime.emulator.textures import ADDRESS_MODES, FORMATS, TextureDesc, TextureError

from . import errors as E

_KIND_NAMES = {0: "s", 1: "u", 2: "f"}
_BASE = {("s", 8): "char", ("u", 8): "uchar", ("s", 16): "short", ("u", 16): "ushort", ("s", 32): "int",
         ("u", 32): "uint", ("f", 16): "half", ("f", 32): "float"}
_ARRAY_LAYERED, _ARRAY_CUBEMAP = 0x01, 0x04
_RES_ARRAY, _RES_MIPMAP, _RES_LINEAR, _RES_PITCH2D = 0, 1, 2, 3


class ChannelFormatDesc(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("z", ctypes.c_int), ("w", ctypes.c_int),
                ("f", ctypes.c_int)]


class _Linear(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_void_p), ("desc", ChannelFormatDesc), ("sizeInBytes", ctypes.c_size_t)]


class _Pitch2D(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_void_p), ("desc", ChannelFormatDesc), ("width", ctypes.c_size_t),
                ("height", ctypes.c_size_t), ("pitchInBytes", ctypes.c_size_t)]


class _Res(ctypes.Union):
    _fields_ = [("array", ctypes.c_void_p), ("linear", _Linear), ("pitch2D", _Pitch2D),
                ("reserved", ctypes.c_int * 32)]


class ResourceDesc(ctypes.Structure):
    _fields_ = [("resType", ctypes.c_int), ("res", _Res), ("flags", ctypes.c_uint)]


class TextureDescC(ctypes.Structure):
    _fields_ = [("addressMode", ctypes.c_int * 3), ("filterMode", ctypes.c_int), ("readMode", ctypes.c_int),
                ("sRGB", ctypes.c_int), ("borderColor", ctypes.c_float * 4), ("normalizedCoords", ctypes.c_int),
                ("maxAnisotropy", ctypes.c_uint), ("mipmapFilterMode", ctypes.c_int),
                ("mipmapLevelBias", ctypes.c_float), ("minMipmapLevelClamp", ctypes.c_float),
                ("maxMipmapLevelClamp", ctypes.c_float), ("disableTrilinearOptimization", ctypes.c_int),
                ("seamlessCubemap", ctypes.c_int)]


class Extent(ctypes.Structure):
    _fields_ = [("width", ctypes.c_size_t), ("height", ctypes.c_size_t), ("depth", ctypes.c_size_t)]


class Pos(ctypes.Structure):
    _fields_ = [("x", ctypes.c_size_t), ("y", ctypes.c_size_t), ("z", ctypes.c_size_t)]


class PitchedPtr(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("pitch", ctypes.c_size_t), ("xsize", ctypes.c_size_t),
                ("ysize", ctypes.c_size_t)]


class Memcpy3DParms(ctypes.Structure):
    _fields_ = [("srcArray", ctypes.c_void_p), ("srcPos", Pos), ("srcPtr", PitchedPtr),
                ("dstArray", ctypes.c_void_p), ("dstPos", Pos), ("dstPtr", PitchedPtr),
                ("extent", Extent), ("kind", ctypes.c_int)]


def format_of(desc: ChannelFormatDesc) -> str | None:
    """CUDA's channel description as hypa's format name (``uchar4``), None where unsupported."""
    bits = [desc.x, desc.y, desc.z, desc.w]
    n = sum(1 for b in bits if b)
    kind = _KIND_NAMES.get(desc.f)
    if kind is None or n not in (1, 2, 4) or any(b != bits[0] for b in bits[:n]) or any(bits[n:]):
        return None
    base = _BASE.get((kind, bits[0]))
    return None if base is None else base + ("" if n == 1 else str(n))


def channel_desc(fmt: str) -> ChannelFormatDesc:
    kind, bits, n = FORMATS[fmt]
    b = [bits if i < n else 0 for i in range(4)]
    return ChannelFormatDesc(b[0], b[1], b[2], b[3], {"s": 0, "u": 1, "f": 2}[kind])


@dataclass
class CudaArray:
    start: int
    format: str
    width: int
    height: int
    depth: int
    layers: int
    flags: int

    @property
    def cubemap(self) -> bool:
        return bool(self.flags & _ARRAY_CUBEMAP)

    @property
    def texel_bytes(self) -> int:
        _k, bits, n = FORMATS[self.format]
        return bits // 8 * n

    @property
    def pitch(self) -> int:
        return self.width * self.texel_bytes

    @property
    def rows(self) -> int:
        return max(self.height, 1) * max(self.depth, 1) * max(self.layers, 1)

    @property
    def nbytes(self) -> int:
        return self.pitch * self.rows


class TextureRuntime:
    """``HostRuntime``'s array, texture and surface functions (mixed into it)."""

    arrays: dict[int, CudaArray]

    def _array(self, handle: int) -> CudaArray | None:
        return self.arrays.get(handle)

    def _new_array(self, out: int, desc: int, width: int, height: int, depth: int, flags: int, fn: str) -> int:
        if out == 0 or desc == 0:
            return E.cudaErrorInvalidValue
        fmt = format_of(ChannelFormatDesc.from_address(desc))
        if fmt is None:
            d = ChannelFormatDesc.from_address(desc)
            self.say(f"{fn}: channel format ({d.x}, {d.y}, {d.z}, {d.w}, kind {d.f}) is not one hypa emulates "
                     f"(1, 2 or 4 channels of 8/16/32-bit integers, half or float)", once=(fn, "format"))
            return E.cudaErrorInvalidChannelDescriptor
        layers = 0
        if flags & _ARRAY_CUBEMAP:
            if width != height or (depth != 6 and not flags & _ARRAY_LAYERED) or depth % 6 or not depth:
                return E.cudaErrorInvalidValue
            layers, depth = depth, 0
        elif flags & _ARRAY_LAYERED:
            layers, depth = max(depth, 1), 0
        if width == 0 or (depth and not height):
            return E.cudaErrorInvalidValue
        arr = CudaArray(0, fmt, width, height, depth, layers, flags)
        if memory_limits.too_large("array", arr.nbytes) is not None:
            return E.cudaErrorMemoryAllocation
        try:
            a = self.memory.allocate(arr.nbytes, "array", label=f"cudaArray {fmt}")
        except (MemoryError, OSError, OverflowError):
            return E.cudaErrorMemoryAllocation
        arr.start = a.start
        self.arrays[a.start] = arr
        ctypes.c_void_p.from_address(out).value = a.start
        return 0

    def cudaMallocArray(self, array, desc, width, height, flags):
        return self._new_array(array, desc, width, height, 0, flags, "cudaMallocArray")

    def cudaMalloc3DArray(self, array, desc, extent, flags):
        w, h, d = extent
        return self._new_array(array, desc, w, h, d, flags, "cudaMalloc3DArray")

    def cudaFreeArray(self, array):
        if array == 0:
            return 0
        arr = self.arrays.pop(array, None)
        if arr is None:
            return E.cudaErrorInvalidValue
        self.memory.release(array)
        self._texels_freed(arr.start, arr.nbytes)
        return 0

    def _texels_freed(self, start: int, size: int) -> None:
        """Texture and surface objects over freed memory: a kernel that still reads them stops
        with a message instead of touching memory that is gone."""
        for d in self.textures.objects.values():
            if start <= d.address < start + max(size, 1):
                d.freed = True

    def cudaGetChannelDesc(self, desc, array):
        arr = self._array(array)
        if arr is None or desc == 0:
            return E.cudaErrorInvalidValue
        cd = channel_desc(arr.format)
        ctypes.memmove(desc, ctypes.addressof(cd), ctypes.sizeof(ChannelFormatDesc))
        return 0

    def cudaArrayGetInfo(self, desc, extent, flags, array):
        arr = self._array(array)
        if arr is None:
            return E.cudaErrorInvalidValue
        if desc:
            cd = channel_desc(arr.format)
            ctypes.memmove(desc, ctypes.addressof(cd), ctypes.sizeof(ChannelFormatDesc))
        if extent:
            e = Extent(arr.width, arr.height, arr.layers or arr.depth)
            ctypes.memmove(extent, ctypes.addressof(e), ctypes.sizeof(Extent))
        if flags:
            ctypes.c_uint.from_address(flags).value = arr.flags
        return 0

    # -- copies ------------------------------------------------------------------------

    def _array_rows(self, arr: CudaArray, w_off: int, h_off: int, width: int, height: int, fn: str) -> int:
        """0 when ``height`` rows of ``width`` bytes from byte ``w_off`` of row ``h_off`` lie in ``arr``."""
        if w_off + width > arr.pitch or h_off + height > arr.rows:
            self.say(f"{fn}: {height} rows of {width} bytes at ({w_off}, {h_off}) do not fit the "
                     f"{arr.width}-texel rows ({arr.pitch} bytes) x {arr.rows} rows of the array (cudaErrorInvalidValue)",
                     once=(fn, w_off, h_off, width, height))
            return E.cudaErrorInvalidValue
        return 0

    def _host_side(self, addr: int, span: int, device: bool, fn: str) -> int:
        if addr == 0:
            return E.cudaErrorInvalidValue
        if device and self.memory.find(addr, span) is None:
            self.say(f"{fn}: {addr:#x} .. +{span} bytes is not inside one device allocation (cudaErrorInvalidValue)",
                     once=(fn, addr, span))
            return E.cudaErrorInvalidValue
        return 0

    def cudaMemcpy2DToArray(self, dst, wOffset, hOffset, src, spitch, width, height, kind):
        self._flush_printf()
        arr = self._array(dst)
        if arr is None:
            return E.cudaErrorInvalidResourceHandle
        if kind not in range(5):
            return E.cudaErrorInvalidMemcpyDirection
        if width > spitch:
            return E.cudaErrorInvalidPitchValue
        if width == 0 or height == 0:
            return 0
        r = self._array_rows(arr, wOffset, hOffset, width, height, "cudaMemcpy2DToArray") or \
            self._host_side(src, spitch * (height - 1) + width, kind == 3, "cudaMemcpy2DToArray")
        if r:
            return r
        for row in range(height):
            ctypes.memmove(arr.start + (hOffset + row) * arr.pitch + wOffset, src + row * spitch, width)
        return 0

    def cudaMemcpy2DToArrayAsync(self, dst, wOffset, hOffset, src, spitch, width, height, kind, stream):
        return self.cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind)

    def cudaMemcpyToArray(self, dst, wOffset, hOffset, src, count, kind):
        self._flush_printf()
        arr = self._array(dst)
        if arr is None:
            return E.cudaErrorInvalidResourceHandle
        start = hOffset * arr.pitch + wOffset
        if wOffset >= arr.pitch and count or start + count > arr.nbytes:
            self.say(f"cudaMemcpyToArray: {count} bytes at ({wOffset}, {hOffset}) run past the array's "
                     f"{arr.nbytes} bytes (cudaErrorInvalidValue)", once=("toarray", wOffset, hOffset, count))
            return E.cudaErrorInvalidValue
        r = self._host_side(src, count, kind == 3, "cudaMemcpyToArray") if count else 0
        if r == 0 and count:
            ctypes.memmove(arr.start + start, src, count)
        return r

    def cudaMemcpyFromArray(self, dst, src, wOffset, hOffset, count, kind):
        self._flush_printf()
        arr = self._array(src)
        if arr is None:
            return E.cudaErrorInvalidResourceHandle
        start = hOffset * arr.pitch + wOffset
        if start + count > arr.nbytes:
            return E.cudaErrorInvalidValue
        r = self._host_side(dst, count, kind == 3, "cudaMemcpyFromArray") if count else 0
        if r == 0 and count:
            ctypes.memmove(dst, arr.start + start, count)
        return r

    def cudaMemcpy2DFromArray(self, dst, dpitch, src, wOffset, hOffset, width, height, kind):
        self._flush_printf()
        arr = self._array(src)
        if arr is None:
            return E.cudaErrorInvalidResourceHandle
        if width > dpitch:
            return E.cudaErrorInvalidPitchValue
        if width == 0 or height == 0:
            return 0
        r = self._array_rows(arr, wOffset, hOffset, width, height, "cudaMemcpy2DFromArray") or \
            self._host_side(dst, dpitch * (height - 1) + width, kind == 3, "cudaMemcpy2DFromArray")
        if r:
            return r
        for row in range(height):
            ctypes.memmove(dst + row * dpitch, arr.start + (hOffset + row) * arr.pitch + wOffset, width)
        return 0

    def cudaMemcpy3D(self, p):
        self._flush_printf()
        if p == 0:
            return E.cudaErrorInvalidValue
        q = Memcpy3DParms.from_address(p)
        sa, da = self._array(q.srcArray or 0), self._array(q.dstArray or 0)
        if (q.srcArray and sa is None) or (q.dstArray and da is None):
            return E.cudaErrorInvalidResourceHandle
        if (sa is None and not q.srcPtr.ptr) or (da is None and not q.dstPtr.ptr):
            return E.cudaErrorInvalidValue
        # extent and array positions in texels when an array takes part, else in bytes
        elem = (sa or da).texel_bytes if (sa or da) else 1
        width = q.extent.width * elem
        height, depth = max(q.extent.height, 1), max(q.extent.depth, 1)
        if q.extent.width == 0:
            return 0
        sides = []
        for arr, pos, pp in ((sa, q.srcPos, q.srcPtr), (da, q.dstPos, q.dstPtr)):
            if arr is not None:
                slice_rows = max(arr.height, 1)
                x = pos.x * arr.texel_bytes
                rows_needed = (pos.z + depth - 1) * slice_rows + pos.y + height
                if x + width > arr.pitch or pos.y + height > slice_rows or rows_needed > arr.rows:
                    self.say(f"cudaMemcpy3D: the copy of {q.extent.width}x{height}x{depth} at ({pos.x}, {pos.y}, "
                             f"{pos.z}) does not fit the array (cudaErrorInvalidValue)", once=("3d", pos.x, pos.y))
                    return E.cudaErrorInvalidValue
                sides.append((arr.start + x, arr.pitch, slice_rows, pos.y, pos.z))
            else:
                ysize = pp.ysize or height
                if width + pos.x > pp.pitch:
                    return E.cudaErrorInvalidPitchValue
                sides.append((pp.ptr + pos.x, pp.pitch, ysize, pos.y, pos.z))
        kind = q.kind
        for (base, pitch, srows, y0, z0), device in zip(sides, (kind in (2, 3), kind in (1, 3))):
            first = base + (z0 * srows + y0) * pitch
            last = base + ((z0 + depth - 1) * srows + y0 + height - 1) * pitch + width
            r = self._host_side(first, last - first, device, "cudaMemcpy3D")
            if r:
                return r
        (sb, sp, ss, sy, sz), (db, dp, ds, dy, dz) = sides
        for z in range(depth):
            for y in range(height):
                ctypes.memmove(db + ((dz + z) * ds + dy + y) * dp, sb + ((sz + z) * ss + sy + y) * sp, width)
        return 0

    def cudaMemcpy3DAsync(self, p, stream):
        return self.cudaMemcpy3D(p)

    # -- texture and surface objects ---------------------------------------------------------

    def _resource(self, res: ResourceDesc, fn: str, surface: bool) -> tuple[dict, int]:
        """TextureDesc fields of a resource description, or an error."""
        if res.resType == _RES_ARRAY:
            arr = self._array(res.res.array or 0)
            if arr is None:
                return {}, E.cudaErrorInvalidResourceHandle
            return {"format": arr.format, "width": arr.width, "height": arr.height, "depth": arr.depth,
                    "layers": arr.layers, "address": arr.start, "nbytes": arr.nbytes, "cubemap": arr.cubemap}, 0
        if surface:
            self.say(f"{fn}: a surface needs a CUDA array resource (cudaErrorInvalidValue)", once=(fn, "res"))
            return {}, E.cudaErrorInvalidValue
        if res.resType in (_RES_LINEAR, _RES_PITCH2D):
            lin = res.res.linear if res.resType == _RES_LINEAR else res.res.pitch2D
            fmt = format_of(lin.desc)
            if fmt is None:
                return {}, E.cudaErrorInvalidChannelDescriptor
            if res.resType == _RES_LINEAR:
                tb = FORMATS[fmt][1] // 8 * FORMATS[fmt][2]
                fields = {"format": fmt, "width": max(1, res.res.linear.sizeInBytes // tb), "linear": True}
            else:
                p = res.res.pitch2D
                fields = {"format": fmt, "width": p.width, "height": p.height, "pitch": p.pitchInBytes}
            d = TextureDesc("probe", **fields)
            a = self.memory.find(lin.devPtr or 0, max(d.footprint, 1))
            if a is None:
                self.say(f"{fn}: the texture's {d.footprint} bytes at {lin.devPtr or 0:#x} are not inside one "
                         f"allocation (cudaErrorInvalidValue)", once=(fn, lin.devPtr))
                return {}, E.cudaErrorInvalidValue
            return dict(fields, address=lin.devPtr, nbytes=a.start + a.size - lin.devPtr), 0
        self.say(f"{fn}: resource type {res.resType} (mipmapped arrays) is not emulated (cudaErrorNotSupported)",
                 once=(fn, res.resType))
        return {}, E.cudaErrorNotSupported

    def cudaCreateTextureObject(self, pTexObject, pResDesc, pTexDesc, pResViewDesc):
        if pTexObject == 0 or pResDesc == 0 or pTexDesc == 0:
            return E.cudaErrorInvalidValue
        res = ResourceDesc.from_buffer_copy(ctypes.string_at(pResDesc, ctypes.sizeof(ResourceDesc)))
        fields, err = self._resource(res, "cudaCreateTextureObject", False)
        if err:
            return err
        td = TextureDescC.from_address(pTexDesc)
        modes = tuple(td.addressMode)
        if any(not 0 <= m < len(ADDRESS_MODES) for m in modes) or td.filterMode not in (0, 1) or \
                td.readMode not in (0, 1):
            return E.cudaErrorInvalidValue
        kind, bits, _n = FORMATS[fields["format"]]
        read = "normalized_float" if td.readMode == 1 and kind != "f" and bits < 32 else "element"
        try:
            desc = TextureDesc(f"{self.textures.next_handle:#x}", address_mode=tuple(ADDRESS_MODES[m] for m in modes),
                               filter_mode=("point", "linear")[td.filterMode], read_mode=read,
                               normalized_coords=bool(td.normalizedCoords), **fields)
        except TextureError as e:
            self.say(f"cudaCreateTextureObject: {e} (cudaErrorInvalidValue)", once=("tex", str(e)))
            return E.cudaErrorInvalidValue
        desc.owner = bytes(res)
        ctypes.c_uint64.from_address(pTexObject).value = self.textures.add(desc)
        return 0

    def cudaDestroyTextureObject(self, texObject):
        d = self.textures.objects.get(texObject)
        if d is None or d.surface:
            return E.cudaErrorInvalidValue
        self.textures.remove(texObject)
        return 0

    def cudaGetTextureObjectResourceDesc(self, pResDesc, texObject):
        d = self.textures.objects.get(texObject)
        if d is None or d.surface or pResDesc == 0:
            return E.cudaErrorInvalidValue
        ctypes.memmove(pResDesc, d.owner, ctypes.sizeof(ResourceDesc))
        return 0

    def cudaCreateSurfaceObject(self, pSurfObject, pResDesc):
        if pSurfObject == 0 or pResDesc == 0:
            return E.cudaErrorInvalidValue
        res = ResourceDesc.from_buffer_copy(ctypes.string_at(pResDesc, ctypes.sizeof(ResourceDesc)))
        fields, err = self._resource(res, "cudaCreateSurfaceObject", True)
        if err:
            return err
        desc = TextureDesc(f"{self.textures.next_handle:#x}", surface=True, **fields)
        desc.owner = bytes(res)
        ctypes.c_uint64.from_address(pSurfObject).value = self.textures.add(desc)
        return 0

    def cudaDestroySurfaceObject(self, surfObject):
        d = self.textures.objects.get(surfObject)
        if d is None or not d.surface:
            return E.cudaErrorInvalidValue
        self.textures.remove(surfObject)
        return 0

    def cudaCreateChannelDesc(self, x, y, z, w, f):
        return 0  # built by the C library itself (a struct returned by value)
