"""Device ``printf``: the format and the argument buffer ``vprintf`` receives, printed
on the program's own ``stdout`` (its C stdio stream, so the order with the program's
output is kept).

CUDA packs ``printf``'s arguments into a local buffer, each aligned to its size: 4 bytes
for ``int`` and smaller (promoted), 8 for ``long``, pointers and ``double`` (a ``float``
is promoted to double).  Each conversion is formatted by the C library's ``snprintf``, so
the text is exactly what the C format gives.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable

_CONVERSION = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcspn%])")

_libc = ctypes.CDLL(None)
_snprintf = _libc.snprintf
_fputs = _libc.fputs
_fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
_fflush = _libc.fflush
_fflush.argtypes = [ctypes.c_void_p]


def _stdout() -> int:
    return ctypes.c_void_p.in_dll(_libc, "stdout").value or 0


def format_device(fmt: bytes, args: int, string_at: Callable[[int], bytes | None]) -> bytes:
    """The text ``printf(fmt, ...)`` prints, with the arguments packed at host address
    ``args``; ``string_at`` reads a device string (``%s``) or gives None for a bad pointer."""
    out = bytearray()
    pos = 0
    off = 0

    def take(size: int) -> int:
        nonlocal off
        off = (off + size - 1) // size * size
        raw = ctypes.string_at(args + off, size) if args else bytes(size)
        off += size
        return int.from_bytes(raw, "little")

    for m in _CONVERSION.finditer(fmt):
        out += fmt[pos : m.start()]
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == b"%":
            out += b"%"
            continue
        star_args = []
        if width == b"*":
            star_args.append(ctypes.c_int(_signed(take(4), 32)))
        if prec == b"*":
            star_args.append(ctypes.c_int(_signed(take(4), 32)))
        spec = m.group(0)
        if conv in b"diouxXc":
            big = length in (b"l", b"ll", b"j", b"z", b"t")
            v = take(8 if big else 4)
            spec = b"%" + flags + (width or b"") + (b"." + prec if prec is not None else b"") + b"ll" + conv \
                if conv != b"c" else b"%" + flags + (width or b"") + b"c"
            value = ctypes.c_longlong(_signed(v, 64 if big else 32) if conv in b"di" else (v if big else v & 0xFFFFFFFF)) \
                if conv != b"c" else ctypes.c_int(v & 0xFF)
        elif conv in b"eEfFgGaA":
            value = ctypes.c_double.from_buffer_copy(take(8).to_bytes(8, "little"))
            spec = b"%" + flags + (width or b"") + (b"." + prec if prec is not None else b"") + conv
        elif conv == b"s":
            p = take(8)
            s = string_at(p) if p else b"(null)"
            value = ctypes.c_char_p(s if s is not None else b"<invalid string pointer>")
        elif conv == b"p":
            value = ctypes.c_void_p(take(8))
        else:  # %n writes nothing on the device either
            take(8)
            continue
        buf = ctypes.create_string_buffer(4096)
        n = _snprintf(buf, 4096, spec, *star_args, value)
        out += buf.raw[: max(0, min(n, 4095))]
    out += fmt[pos:]
    return bytes(out)


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def write_stdout(text: bytes) -> None:
    """Write to the program's C ``stdout`` (buffered as the program's own printf)."""
    if text:
        _fputs(text, _stdout())
