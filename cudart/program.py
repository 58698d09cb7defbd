"""What ``hypa run`` checks in an executable before starting it: which ``libcudart``
it loads (``DT_NEEDED``), or whether the CUDA runtime was linked in statically (nvcc's
default), which no library can stand in for.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hypa.ptxdialect.diagnostics import HypaError

DT_NEEDED = 1
PT_DYNAMIC = 2
PT_LOAD = 1


@dataclass
class ProgramInfo:
    path: str
    needed: list[str]
    cudart_major: int | None  # from DT_NEEDED libcudart.so.N
    static_cudart: bool  # the CUDA runtime linked into the executable itself
    has_device_code: bool


class NotAProgram(HypaError):
    """A file ``hypa run`` cannot run: not an ELF executable, or a damaged one."""


def inspect(path: str) -> ProgramInfo:
    with open(path, "rb") as f:
        data = f.read()
    try:
        return _inspect(path, data)
    except (struct.error, ValueError, IndexError, OverflowError) as e:
        raise NotAProgram(f"{path}: a damaged ELF file ({e})") from None


def _inspect(path: str, data: bytes) -> ProgramInfo:
    if data[:4] != b"\x7fELF":
        raise NotAProgram(f"{path} is not an ELF executable")
    if len(data) < 64:
        raise NotAProgram(f"{path}: a damaged ELF file (its header is cut off at {len(data)} bytes)")
    if data[4] != 2 or data[5] != 1:
        raise NotAProgram(f"{path} is not a 64-bit little-endian ELF executable")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads = []
    dyn = None
    for i in range(phnum):
        p = phoff + i * phentsize
        ptype, _flags, off, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", data, p)
        if ptype == PT_LOAD:
            loads.append((vaddr, off, filesz))
        elif ptype == PT_DYNAMIC:
            dyn = (off, filesz)
    needed_offsets = []
    strtab = None
    if dyn is not None:
        off, size = dyn
        for k in range(size // 16):
            tag, val = struct.unpack_from("<qQ", data, off + 16 * k)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                needed_offsets.append(val)
            elif tag == 5:  # DT_STRTAB (a virtual address)
                strtab = val
    needed = []
    if strtab is not None:
        base = next((o + strtab - v for v, o, s in loads if v <= strtab < v + s), None)
        if base is not None:
            for n in needed_offsets:
                end = data.index(b"\0", base + n)
                needed.append(data[base + n : end].decode(errors="replace"))
    major = None
    for n in needed:
        if n.startswith("libcudart.so."):
            try:
                major = int(n.split(".")[2])
            except (IndexError, ValueError):
                pass
    has_code = b".nv_fatbin" in data or b"\x50\xed\x55\xba" in data
    # the static runtime carries its own implementation of the API (and its version string)
    static = major is None and has_code and (b"cudaGetErrorString" in data or b"__cudaRegisterFatBinary" in data)
    return ProgramInfo(path, needed, major, static, has_code)
