"""A stand-in for the few CuPy calls ``benchmarks/gpu/harness.py`` makes, backed by
hypa's emulator: it lets CI run the harness's CuPy code path (PTX module
loading, ``cuLaunchKernel`` parameter arrays, module globals, copies) without
a GPU.  Put its parent folder first on ``PYTHONPATH``; never use it for results.

Device memory is a table of numpy arrays keyed by fake addresses; a launch
decodes the ``void**`` parameter array the harness builds, maps addresses back
to arrays and runs the kernel in the emulator (full mode).
"""

from __future__ import annotations

import ctypes
import itertools
import sys
import types

import numpy as np

__version__ = "0.0-fake"

_MEM: dict[int, np.ndarray] = {}  # base address -> array (the allocation)
_NEXT = itertools.count(1)
_MODULES: dict[int, dict] = {}
_FUNCS: dict[int, tuple[int, str]] = {}


def _alloc(arr: np.ndarray) -> int:
    addr = next(_NEXT) << 32
    _MEM[addr] = arr
    return addr


def _bytes_at(addr: int) -> np.ndarray:
    base = addr & ~0xFFFFFFFF
    arr = _MEM[base]
    return arr.reshape(-1).view(np.uint8)[addr - base:]


class _Ptr:
    def __init__(self, ptr: int):
        self.ptr = ptr


class ndarray:  # noqa: N801  (CuPy's name)
    def __init__(self, host: np.ndarray):
        self._host = np.ascontiguousarray(host).copy()
        self.data = _Ptr(_alloc(self._host))
        self.dtype, self.shape = self._host.dtype, self._host.shape


def asarray(a) -> ndarray:
    return ndarray(np.asarray(a))


def asnumpy(a: ndarray) -> np.ndarray:
    return a._host.copy()


def arange(n: int) -> ndarray:
    return ndarray(np.arange(n))


class _Device:
    def __init__(self, i: int = 0):
        pass

    def use(self) -> None:
        pass


class _Event:
    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass


def _get_elapsed_time(a, b) -> float:
    return 0.0


# -- driver ---------------------------------------------------------------------------


def _module_load_data(image: bytes) -> int:
    from hypa.ptxdialect import parse_ptx

    text = image.rstrip(b"\0").decode()
    h = next(_NEXT)
    _MODULES[h] = {"text": text, "module": parse_ptx(text), "globals": {}}
    return h


def _module_get_function(mod: int, name: str) -> int:
    h = next(_NEXT)
    _FUNCS[h] = (mod, name)
    return h


def _module_get_global(mod: int, name: str) -> int:
    from hypa.ptxdialect.dialect import VarOp

    m = _MODULES[mod]
    if name not in m["globals"]:
        for op in m["module"].ops:
            if isinstance(op, VarOp) and op.var_name == name:
                m["globals"][name] = _alloc(np.zeros(op.size_bytes() or 1, np.uint8))
                break
        else:
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: no global {name}")
    return m["globals"][name]


def _module_unload(mod: int) -> None:
    _MODULES.pop(mod, None)


def _func_set_attribute(f: int, attr: int, value: int) -> None:
    pass


def _launch_kernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) -> None:
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import Launch
    from hypa.runtime.emulator.program import find_kernel

    mod, entry = _FUNCS[f]
    m = _MODULES[mod]
    func = find_kernel(m["module"], entry)
    n = len(func.params.data)
    ptrs = (ctypes.c_void_p * max(n, 1)).from_address(params) if n else []
    args, buffers = [], {}
    from hypa.ptxdialect import isa

    for k, (_t, _name, _space, ptx_type, _align, dims) in enumerate(func.params.data):
        size = max(1, isa.TYPE_BITS.get(ptx_type, 64) // 8)
        for d in dims:
            size *= max(d, 0)
        raw = ctypes.string_at(ptrs[k], size)
        val = int.from_bytes(raw, "little")
        if size == 8 and (val & ~0xFFFFFFFF) in _MEM and val & 0xFFFFFFFF == 0:
            name = f"b{val:x}"
            buffers[name] = _MEM[val]
            args.append(name)
        else:
            args.append(raw)
    r = Emulator(m["module"], mode="full").run(
        Launch(kernel=entry, grid=(gx, gy, gz), block=(bx, by, bz), args=args, buffers=buffers, shared_bytes=shared),
        in_place=True)  # the arrays stand for device memory: the kernel writes them
    for name, addr in m["globals"].items():
        got = r.globals.get(name)
        if got is not None:
            dst = _MEM[addr]
            dst[: got.nbytes] = got.view(np.uint8)[: dst.nbytes]


# -- runtime --------------------------------------------------------------------------


def _memset(ptr: int, value: int, size: int) -> None:
    _bytes_at(ptr)[:size] = value


def _memcpy(dst: int, src: int, size: int, kind: int) -> None:
    if kind != 2:
        raise NotImplementedError("the fake copies device to host only")
    ctypes.memmove(dst, _bytes_at(src)[:size].ctypes.data, size)


runtime = types.SimpleNamespace(
    malloc=lambda n: _alloc(np.zeros(n, np.uint8)), free=lambda p: _MEM.pop(p, None),
    getDeviceProperties=lambda i: {"name": b"fake GPU (hypa emulator)", "major": 9, "minor": 0, "multiProcessorCount": 132},
    driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000, deviceSynchronize=lambda: None,
    memset=_memset, memcpy=_memcpy, memcpyDeviceToHost=2,
)
driver = types.SimpleNamespace(
    moduleLoadData=_module_load_data, moduleGetFunction=_module_get_function, moduleGetGlobal=_module_get_global,
    moduleUnload=_module_unload, launchKernel=_launch_kernel, funcSetAttribute=_func_set_attribute,
)
cuda = types.ModuleType("cupy.cuda")
cuda.Device, cuda.Event, cuda.get_elapsed_time = _Device, _Event, _get_elapsed_time
cuda.runtime, cuda.driver = runtime, driver
sys.modules["cupy.cuda"] = cuda
