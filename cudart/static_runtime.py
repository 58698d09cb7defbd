"""CUDA's static runtime inside a Python package's extension modules, sent to hypa's
``libcudart``.

CuPy (13 and 14) links ``libcudart_static`` into its extension modules
(``cupy_backends/cuda/api/runtime``, ``cub``, ``thrust``, ``jitify``, ``cupy.random``) instead of
loading ``libcudart.so``: that copy talks to the driver through its private export tables
(``cuGetExportTable``), which hypa's ``libcuda.so.1`` does not have, so it fails at its first
call.  Such a module keeps the runtime's functions as local symbols (``.symtab``), so right
after Python loads it and before any of its code runs, each ``cuda*`` function of the static
runtime is overwritten with a jump to the function of that name in hypa's ``libcudart`` (the
one ``hypa run`` preloads): the module then calls hypa's runtime, as a program linked with
``-cudart shared`` does.  ``hypa run`` installs the import hook (``install``) through
``python_startup/sitecustomize.py``.  Only the ``cuda*`` API is sent: the static runtime's
``__cuda*`` registration of the module's own (SASS) kernels, made when it was loaded, stays in
the static copy, and launching those kernels (CuPy's CUB and Thrust routines) fails in hypa as
a kernel it does not know.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct

#: bytes every copy of libcudart_static holds (the name of its shared-memory segment)
STATIC_RUNTIME_MARK = b"/cudart.shm."
SHT_SYMTAB = 2
STT_FUNC = 2
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
#: movabs rax, imm64; jmp rax
JUMP = b"\x48\xb8%s\xff\xe0"
JUMP_BYTES = 12


def holds_static_runtime(path: str) -> bool:
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(STATIC_RUNTIME_MARK) >= 0
    except (OSError, ValueError):
        return False


#: the modules whose static runtime was sent to hypa's (their paths), and the callbacks kept alive
REDIRECTED: list[str] = []
_STOPPERS: list = []
#: run when the module is loaded and unloaded: left to the static copy (it holds the module's
#: own kernels, which nothing can launch once the launch calls stop the program)
_LEFT = ("__cudaRegister", "__cudaUnregister", "__cudaInitModule")


def _library(name: str) -> str:
    return {"cub": "CUB", "thrust": "Thrust", "_generator_api": "cuRAND", "jitify": "Jitify"}.get(name, name)


def stop_message(what: str, path: str) -> str:
    module = os.path.basename(path).split(".")[0]
    return (f"{what} of {_library(module)} ({os.path.basename(path)}), whose kernels ship as machine code (SASS) "
            f"alone and were registered with the CUDA static runtime linked into it: hypa runs PTX, and cannot run "
            f"them (CuPy: set CUPY_ACCELERATORS='' so reductions use CuPy's own kernels; sorting, scans, cuRAND, "
            f"cuBLAS and cuFFT have no PTX form)")


#: hypa's runtime sets it once it runs (``cudart.host.install``): says the text, writes the
#: records and ends the program
stop_hook = None


def library_of(func: int) -> str | None:
    """The redirected module whose code holds host address ``func`` (a kernel's stub there), or None."""
    if not REDIRECTED:
        return None
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= func < hi:
                path = parts[5].strip() if len(parts) == 6 else ""
                return path if path in REDIRECTED else None
    return None


def _stop(name: str, path: str) -> None:
    text = stop_message(f"a call of {name}", path)
    if stop_hook is not None:
        stop_hook(text)
    import sys

    print(f"hypa run: {text}; stopping the program", file=sys.stderr, flush=True)
    os._exit(1)


def runtime_functions(path: str) -> dict[str, tuple[int, int]]:
    """The static runtime's functions in the ELF file ``path`` (``cuda*`` and ``__cuda*``): name
    -> (address relative to the load base, size), from its ``.symtab`` (empty where stripped)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for _name, stype, _flags, _addr, off, size, link, _info, _align, entsize in sections:
        if stype != SHT_SYMTAB or not entsize:
            continue
        stroff = sections[link][4]
        for k in range(size // entsize):
            st_name, st_info, _other, shndx, value, st_size = struct.unpack_from("<IBBHQQ", data, off + k * entsize)
            if st_info & 0xF != STT_FUNC or shndx == 0 or st_size < JUMP_BYTES:
                continue
            head = data[stroff + st_name : stroff + st_name + 6]
            if not (head.startswith(b"cuda") or head == b"__cuda"):
                continue
            name = data[stroff + st_name : data.index(b"\0", stroff + st_name)].decode()
            if "." not in name:  # not a compiler's part or copy of one (cudaMalloc.cold, .constprop.0)
                out[name] = (value, st_size)
    return out


def _load_base(path: str) -> int | None:
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == real and int(parts[2], 16) == 0:
                return int(parts[0].split("-")[0], 16)
    return None


def redirect(path: str, cudart: ctypes.CDLL) -> int:
    """Send the static runtime's ``cuda*`` functions in the loaded module ``path`` to
    ``cudart``; the rest (``cuda*`` ones ``cudart`` lacks, and ``__cuda*``: launches of the
    module's own kernels) stop the program naming the library.  How many went to ``cudart``."""
    base = _load_base(path)
    if base is None:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    sent = 0
    for name, (value, _size) in runtime_functions(path).items():
        if name.startswith(_LEFT):
            continue
        target = None
        if not name.startswith("__"):
            try:
                target = ctypes.cast(getattr(cudart, name), ctypes.c_void_p).value
            except AttributeError:
                pass
        if target is None:
            stopper = ctypes.CFUNCTYPE(ctypes.c_int)(lambda name=name: _stop(name, path))
            _STOPPERS.append(stopper)
            target = ctypes.cast(stopper, ctypes.c_void_p).value
        else:
            sent += 1
        at = base + value
        start = at & ~(page - 1)
        length = (at + JUMP_BYTES - start + page - 1) & ~(page - 1)
        if libc.mprotect(start, length, PROT_READ | PROT_WRITE | PROT_EXEC):
            raise OSError(ctypes.get_errno(), f"mprotect of {path}'s code failed")
        ctypes.memmove(at, JUMP % struct.pack("<Q", target), JUMP_BYTES)
        libc.mprotect(start, length, PROT_READ | PROT_EXEC)
    REDIRECTED.append(os.path.realpath(path))
    return sent


def install(cudart_soname: str) -> None:
    """Redirect every extension module Python loads from now on that holds the static runtime."""
    from importlib.machinery import ExtensionFileLoader

    cudart = ctypes.CDLL(cudart_soname)  # hypa's, preloaded: found by its soname
    create = ExtensionFileLoader.create_module

    def create_module(self, spec):
        module = create(self, spec)  # dlopen'ed; with multi-phase init (Cython) its code runs later
        if holds_static_runtime(self.path):
            redirect(self.path, cudart)
        return module

    ExtensionFileLoader.create_module = create_module
