"""The CUDA driver API (``libcuda.so.1``, ``cudart.driver_api``) on ``HostRuntime``'s model.

A mixin of ``cudart.host.HostRuntime``, as the graph and texture calls are: the driver's
allocations, modules, functions, streams and events are the runtime's own (a ``CUfunction``
is a key of ``HostRuntime.functions`` as a registered kernel's host address is; a
``CUstream`` is a runtime stream), so a program that mixes the two APIs sees one device.
What is the driver's alone: ``cuInit``, contexts (one primary context and those
``cuCtxCreate`` makes, a stack of current ones per host thread; they share the one device's
memory), modules loaded from PTX text or a fatbin at run time, kernel arguments through
``extra``, and ``CUresult`` codes.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np

from . import errors as E
from .api import DRIVER_BASE, UNSUPPORTED_DRIVER, decode
from .driver_api import DRIVER_API, SYNCHRONIZING

# CUresult values (cuda.h; names and texts in driver_errors.tsv)
SUCCESS = 0
INVALID_VALUE = 1
NOT_INITIALIZED = 3
INVALID_DEVICE = 101
INVALID_IMAGE = 200
INVALID_CONTEXT = 201
INVALID_PTX = 218
FILE_NOT_FOUND = 301
INVALID_HANDLE = 400
NOT_FOUND = 500
UNKNOWN = 999

#: cudaError_t values whose CUresult differs (most share their number: 1-3, 200-999)
_FROM_RUNTIME = {
    E.cudaErrorInvalidConfiguration: INVALID_VALUE,
    E.cudaErrorInvalidDeviceFunction: INVALID_HANDLE,
    E.cudaErrorInvalidMemcpyDirection: INVALID_VALUE,
    E.cudaErrorInvalidSymbol: NOT_FOUND,
    E.cudaErrorInvalidPitchValue: INVALID_VALUE,
    E.cudaErrorMissingConfiguration: INVALID_VALUE,
}

#: the calls that need no current context
_CONTEXT_FREE = frozenset({
    "cuInit", "cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2", "cuDeviceComputeCapability", "cuDeviceGetUuid", "cuDeviceGetUuid_v2", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxSetFlags_v2", "cuCtxCreate_v2",
    "cuCtxCreate_v3", "cuCtxCreate_v4", "cuCtxDestroy_v2", "cuCtxDetach", "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2",
    "cuCtxSetCurrent", "cuCtxGetCurrent", "cuProfilerStart", "cuProfilerStop",
})

# cuLaunchKernel's ``extra`` (cuda.h): CU_LAUNCH_PARAM_END, _BUFFER_POINTER, _BUFFER_SIZE
_PARAM_END, _PARAM_BUFFER_POINTER, _PARAM_BUFFER_SIZE = 0, 1, 2

# CUfunction_attribute -> cudaFuncAttributes field
_FUNC_ATTRIBUTES = {0: "maxThreadsPerBlock", 1: "sharedSizeBytes", 2: "constSizeBytes", 3: "localSizeBytes",
                    4: "numRegs", 5: "ptxVersion", 6: "binaryVersion", 7: "cacheModeCA",
                    8: "maxDynamicSharedSizeBytes", 9: "preferredShmemCarveout"}

# cudaMemcpyKind: the runtime's copy checks take it
H2D, D2H, D2D, DEFAULT = 1, 2, 3, 4

class _LaunchConfig(ctypes.Structure):
    """``CUlaunchConfig`` (cuda.h)."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


class _LaunchAttribute(ctypes.Structure):
    """``CUlaunchAttribute``: an id and a 64-byte value (read here as unsigned ints)."""

    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint * 16)]


_LAUNCH_ATTRIBUTE_COOPERATIVE, _LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 2, 4

# CUjitInputType (cuda.h)
JIT_INPUT_CUBIN, JIT_INPUT_PTX, JIT_INPUT_FATBINARY, JIT_INPUT_OBJECT, JIT_INPUT_LIBRARY, JIT_INPUT_NVVM = range(6)
_JIT_INPUTS = {JIT_INPUT_CUBIN: "a cubin (machine code, SASS)", JIT_INPUT_FATBINARY: "a fatbin without PTX for the device",
               JIT_INPUT_OBJECT: "a host object's device code (machine code)",
               JIT_INPUT_LIBRARY: "a library of machine code (such as cudadevrt)", JIT_INPUT_NVVM: "LTO-IR (NVVM)"}
#: why a Numba-CUDA program loads machine code, and how it loads PTX instead
_NVJITLINK_HINT = ("; Numba-CUDA makes machine code when nvJitLink is installed (nvidia-nvjitlink, which "
                   "numba-cuda[cu13] brings): uninstall it, and Numba-CUDA links its PTX with the driver's "
                   "cuLink*, which hypa provides")


@dataclass
class Link:
    """A ``CUlinkState``: its PTX inputs (name, text) and, once complete, the linked text."""

    inputs: list[tuple[str, str]] = field(default_factory=list)
    output: ctypes.Array | None = None


FATBIN_WRAPPER_MAGIC = b"\xb1\x43\x62\x46"
FATBIN_MAGIC = b"\x50\xed\x55\xba"


class DriverRuntime:
    """The driver API calls of ``HostRuntime`` (cudart/host.py)."""

    def _driver_state(self) -> None:
        """The driver's state (``HostRuntime.__init__`` makes it)."""
        self.cu_initialized = False
        self.primary_context = 0  # its handle, made at the first use
        self.contexts: set[int] = set()  # every live context, the primary one too
        self.context_stacks: dict[int, list[int]] = {}  # host thread -> its current contexts (top last)
        self.runtime_threads: set[int] = set()  # host threads that called the runtime API (its primary context is current there)
        self.module_functions: dict[tuple[int, str], int] = {}  # (module handle, kernel) -> CUfunction
        self.unloaded_modules: set[int] = set()  # cuModuleUnload'ed (kept as the source of their launches)
        self.links: dict[int, Link] = {}  # CUlinkState -> its inputs

    # -- the dispatcher ------------------------------------------------------------------

    def driver_call(self, fn: int, args, nargs: int) -> int:
        """A call through hypa's ``libcuda.so.1``: a ``CUresult``."""
        if fn == UNSUPPORTED_DRIVER:
            name = ctypes.string_at(args[0]).decode()
            self.say(f"{self.opts.program} called {name}, which hypa's CUDA driver (libcuda.so.1) does not provide "
                     f"(docs/guide.md, \"Python programs (the driver API)\", lists what it does); stopping the program")
            self.finish()
            return 0
        proto = DRIVER_API[fn - DRIVER_BASE]
        name = proto.name
        try:
            vals = decode(proto, [args[i] for i in range(nargs)])
            if not self.cu_initialized and name not in ("cuInit", "cuDriverGetVersion"):
                return NOT_INITIALIZED
            if name not in _CONTEXT_FREE and not self._current_context():
                return INVALID_CONTEXT
            if self.pending and name in SYNCHRONIZING:
                self.sticky, self.pending = self.pending, 0
            if self.sticky and name not in ("cuCtxDestroy_v2", "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxRelease_v2",
                                            "cuMemFree_v2", "cuMemFreeHost", "cuDeviceGetCount"):
                if name == "cuCtxSynchronize":
                    self._flush_printf()
                return self._cu(self.sticky)
            return int(getattr(self, name)(*vals) or 0)
        except Exception as e:  # a bug in hypa, never the program's fault: say so, keep the program alive
            self.say(f"internal error in {name}: {type(e).__name__}: {e}")
            if os.environ.get("HYPA_DEBUG"):
                import traceback

                traceback.print_exc()
            return UNKNOWN

    @staticmethod
    def _cu(error: int) -> int:
        """The CUresult of a runtime call's cudaError_t."""
        return _FROM_RUNTIME.get(error, error)

    def _handle(self, kind: str) -> int:
        """A new opaque handle (a context, module or function): an address nothing else has."""
        return self.memory.allocate(8, kind).start

    # -- initialisation, device ------------------------------------------------------------

    def cuInit(self, flags):
        if flags != 0:
            return INVALID_VALUE
        self.cu_initialized = True
        return SUCCESS

    def cuDriverGetVersion(self, version):
        if not version:
            return INVALID_VALUE
        ctypes.c_int.from_address(version).value = self.major * 1000
        return SUCCESS

    def cuDeviceGet(self, device, ordinal):
        if not device:
            return INVALID_VALUE
        if ordinal != 0:
            return INVALID_DEVICE
        ctypes.c_int.from_address(device).value = 0
        return SUCCESS

    def cuDeviceGetCount(self, count):
        if not count:
            return INVALID_VALUE
        ctypes.c_int.from_address(count).value = 1
        return SUCCESS

    def cuDeviceGetName(self, name, length, dev):
        from .properties import h100_properties

        if dev != 0:
            return INVALID_DEVICE
        if not name or length <= 0:
            return INVALID_VALUE
        text = str(h100_properties(self.opts.sm)["name"]).encode()[: length - 1]
        ctypes.memmove(name, text + b"\0", len(text) + 1)
        return SUCCESS

    def cuDeviceGetAttribute(self, pi, attrib, dev):
        from .properties import attribute_value

        if dev != 0:
            return INVALID_DEVICE
        v = attribute_value(attrib, self.opts.sm, self.major)  # CUdevice_attribute numbers cudaDeviceAttr's
        if v is None or not pi:
            self.say(f"cuDeviceGetAttribute: attribute {attrib} is not one hypa reports (CUDA_ERROR_INVALID_VALUE)",
                     once=("cuattr", attrib))
            return INVALID_VALUE
        ctypes.c_int.from_address(pi).value = int(v)
        return SUCCESS

    def cuDeviceTotalMem_v2(self, nbytes, dev):
        from .properties import h100_properties

        if dev != 0:
            return INVALID_DEVICE
        ctypes.c_size_t.from_address(nbytes).value = int(h100_properties(self.opts.sm)["totalGlobalMem"])
        return SUCCESS

    def cuDeviceComputeCapability(self, major, minor, dev):
        if dev != 0:
            return INVALID_DEVICE
        ctypes.c_int.from_address(major).value = self.opts.sm // 10
        ctypes.c_int.from_address(minor).value = self.opts.sm % 10
        return SUCCESS

    def cuDeviceGetUuid(self, uuid, dev):
        from .properties import h100_properties

        if dev != 0:
            return INVALID_DEVICE
        if not uuid:
            return INVALID_VALUE
        ctypes.memmove(uuid, bytes(h100_properties(self.opts.sm)["uuid"]), 16)  # cudaGetDeviceProperties' uuid
        return SUCCESS

    def cuDeviceGetUuid_v2(self, uuid, dev):
        return self.cuDeviceGetUuid(uuid, dev)

    # -- contexts ------------------------------------------------------------------------

    def _stack(self) -> list[int]:
        return self.context_stacks.setdefault(self.caller, [])

    def _current_context(self) -> int:
        """The calling thread's current context (the primary one where it used the runtime API)."""
        stack = self._stack()
        if stack:
            return stack[-1]
        if self.caller in self.runtime_threads:
            return self._primary()
        return 0

    def _primary(self) -> int:
        if not self.primary_context:
            self.primary_context = self._handle("context")
            self.contexts.add(self.primary_context)
        return self.primary_context

    def cuDevicePrimaryCtxRetain(self, pctx, dev):
        if dev != 0:
            return INVALID_DEVICE
        ctypes.c_void_p.from_address(pctx).value = self._primary()
        return SUCCESS

    def cuDevicePrimaryCtxRelease_v2(self, dev):
        return SUCCESS if dev == 0 else INVALID_DEVICE

    def cuDevicePrimaryCtxReset_v2(self, dev):
        if dev != 0:
            return INVALID_DEVICE
        return self._cu(self.cudaDeviceReset())

    def cuDevicePrimaryCtxGetState(self, dev, flags, active):
        if dev != 0:
            return INVALID_DEVICE
        ctypes.c_uint.from_address(flags).value = 0
        ctypes.c_int.from_address(active).value = int(bool(self.primary_context))
        return SUCCESS

    def cuDevicePrimaryCtxSetFlags_v2(self, dev, flags):
        return SUCCESS if dev == 0 else INVALID_DEVICE

    def cuCtxCreate_v2(self, pctx, flags, dev):
        if dev != 0:
            return INVALID_DEVICE
        if not pctx:
            return INVALID_VALUE
        ctx = self._handle("context")
        self.contexts.add(ctx)
        self._stack().append(ctx)  # current to the calling thread, the one before it kept below
        ctypes.c_void_p.from_address(pctx).value = ctx
        return SUCCESS

    def cuCtxCreate_v3(self, pctx, paramsArray, numParams, flags, dev):
        return self.cuCtxCreate_v2(pctx, flags, dev)

    def cuCtxCreate_v4(self, pctx, ctxCreateParams, flags, dev):
        return self.cuCtxCreate_v2(pctx, flags, dev)

    def cuCtxDestroy_v2(self, ctx):
        if ctx not in self.contexts or ctx == self.primary_context:
            return INVALID_CONTEXT if ctx not in self.contexts else INVALID_VALUE
        self.contexts.discard(ctx)
        for stack in self.context_stacks.values():
            while ctx in stack:
                stack.remove(ctx)
        self.memory.release(ctx)
        return SUCCESS

    def cuCtxDetach(self, ctx):
        """The legacy release of a context cuCtxCreate made (PyCUDA's at exit): hypa counts no
        attachments, so the last detach is the only one, and destroys it."""
        return self.cuCtxDestroy_v2(ctx)

    def cuCtxPushCurrent_v2(self, ctx):
        if ctx not in self.contexts:
            return INVALID_CONTEXT
        self._stack().append(ctx)
        return SUCCESS

    def cuCtxPopCurrent_v2(self, pctx):
        stack = self._stack()
        if not stack:
            return INVALID_CONTEXT
        ctx = stack.pop()
        if pctx:
            ctypes.c_void_p.from_address(pctx).value = ctx
        return SUCCESS

    def cuCtxSetCurrent(self, ctx):
        stack = self._stack()
        if ctx == 0:
            if stack:
                stack.pop()
            return SUCCESS
        if ctx not in self.contexts:
            return INVALID_CONTEXT
        if stack:
            stack[-1] = ctx
        else:
            stack.append(ctx)
        return SUCCESS

    def cuCtxGetCurrent(self, pctx):
        if not pctx:
            return INVALID_VALUE
        ctypes.c_void_p.from_address(pctx).value = self._current_context() or None
        return SUCCESS

    def cuCtxGetDevice(self, device):
        ctypes.c_int.from_address(device).value = 0
        return SUCCESS

    def cuCtxSynchronize(self):
        return self._cu(self.cudaDeviceSynchronize())

    # -- modules and functions -----------------------------------------------------------

    def cuModuleLoadData(self, module, image):
        return self._load_image(module, image, "cuModuleLoadData")

    def cuModuleLoadDataEx(self, module, image, numOptions, options, optionValues):
        """As cuModuleLoadData: the JIT options (optimisation level, log buffers ...) change
        nothing hypa does; the log buffers are left as the program set them."""
        return self._load_image(module, image, "cuModuleLoadDataEx")

    def cuModuleLoadFatBinary(self, module, fatCubin):
        return self._load_image(module, fatCubin, "cuModuleLoadFatBinary")

    def _load_image(self, out: int, image: int, call: str) -> int:
        """A module from PTX text, a fatbin or a fatbin wrapper; a cubin (SASS alone) stops the
        program, as a launch of a registered kernel without PTX does."""
        if not out or not image:
            return INVALID_VALUE
        head = ctypes.string_at(image, 4)
        handle = self._handle("module")
        m = self.new_module(handle, image)
        if head == b"\x7fELF":
            self._stop(f"{call}: the module is a cubin (machine code, SASS) and holds no PTX; hypa runs PTX: load the "
                       f"PTX text (NVRTC with --gpu-architecture=compute_90, not sm_90; nvcc -ptx) or a fatbin that "
                       f"embeds it (nvcc -fatbin -arch=sm_90){_NVJITLINK_HINT}")
        if head in (FATBIN_WRAPPER_MAGIC, FATBIN_MAGIC):
            m.address = image
            if head == FATBIN_WRAPPER_MAGIC:
                image = ctypes.c_void_p.from_address(image + 8).value or 0
            hsize, size = int.from_bytes(ctypes.string_at(image + 6, 2), "little"), int.from_bytes(
                ctypes.string_at(image + 8, 8), "little")
            m.blob = ctypes.string_at(image, hsize + size)
            if not self._ptx_of_fatbin(m):
                self._stop(f"{call}: {m.error.replace('the program', 'the module')}")
        else:
            text = ctypes.string_at(image).decode("utf-8", errors="replace")
            target = re.search(r"^\s*\.target\s+sm_(\d+)", text, re.M)
            if ".version" not in text or target is None:
                self.say(f"{call}: the image is neither PTX text nor a fatbin (CUDA_ERROR_INVALID_IMAGE)")
                self.memory.release(handle)
                return INVALID_IMAGE
            m.arch = int(target.group(1))
            if m.arch > self.opts.sm:
                self.say(f"{call}: the PTX targets sm_{m.arch}, newer than the device ({self.opts.arch}): "
                         f"CUDA_ERROR_INVALID_PTX")
                self.memory.release(handle)
                return INVALID_PTX
            from hypa.runtime.report.inputs import Source

            m.ptx = text
            m.source = Source(self.opts.program, text, "ptx", f"module {m.index + 1} (sm_{m.arch} PTX)", f"sm_{m.arch}")
        if not self._load(m):  # the driver compiles PTX when it loads it: a bad one fails here
            self.say(f"{call}: {m.error} (CUDA_ERROR_INVALID_PTX)")
            self.memory.release(handle)
            return INVALID_PTX
        self.modules[handle] = m
        ctypes.c_void_p.from_address(out).value = handle
        return SUCCESS

    def _stop(self, text: str) -> None:
        """A GPU would run what hypa cannot: going on would hand the program wrong results."""
        self.say(f"{text}; stopping the program")
        self.finish()
        sys.stdout.flush()
        os._exit(1)

    def cuModuleUnload(self, hmod):
        """Its functions go; the module stays known, as its launches' source in the report."""
        if hmod not in self.modules or hmod in self.unloaded_modules:
            return INVALID_HANDLE
        self.unloaded_modules.add(hmod)
        for key in [k for k in self.module_functions if k[0] == hmod]:
            f = self.module_functions.pop(key)
            self.functions.pop(f, None)
            self.memory.release(f)
        return SUCCESS

    # -- the linker: PTX in, linked PTX out ------------------------------------------------

    def cuLinkCreate_v2(self, numOptions, options, optionValues, stateOut):
        """A link of PTX inputs.  The JIT options (log buffers, optimisation level, target)
        change nothing hypa does; the log buffers are left as the program set them."""
        if not stateOut:
            return INVALID_VALUE
        state = self._handle("link")
        self.links[state] = Link()
        ctypes.c_void_p.from_address(stateOut).value = state
        return SUCCESS

    def cuLinkAddData_v2(self, state, type_, data, size, name, numOptions, options, optionValues):
        link = self.links.get(state)
        if link is None or not data:
            return INVALID_HANDLE if link is None else INVALID_VALUE
        label = ctypes.string_at(name).decode(errors="replace") if name else f"input {len(link.inputs) + 1}"
        return self._link_input(link, type_, ctypes.string_at(data, size) if size else ctypes.string_at(data), label,
                                "cuLinkAddData")

    def cuLinkAddFile_v2(self, state, type_, path, numOptions, options, optionValues):
        link = self.links.get(state)
        if link is None or not path:
            return INVALID_HANDLE if link is None else INVALID_VALUE
        name = ctypes.string_at(path).decode(errors="replace")
        try:
            with open(name, "rb") as f:
                blob = f.read()
        except OSError:
            return FILE_NOT_FOUND
        return self._link_input(link, type_, blob, name, "cuLinkAddFile")

    def _link_input(self, link: Link, type_: int, blob: bytes, label: str, call: str) -> int:
        """PTX text, or a fatbin's PTX; machine code (a cubin, an object, a library) and
        LTO-IR stop the program: hypa links and runs PTX."""
        from hypa.runtime.report.inputs import ENTRY_PTX, InputError, arch_specific, read_fatbins

        if type_ == JIT_INPUT_PTX:
            link.inputs.append((label, blob.rstrip(b"\0").decode("utf-8", errors="replace")))
            return SUCCESS
        if type_ == JIT_INPUT_FATBINARY:
            try:
                ptx = [(e.arch, e.payload.rstrip(b"\0").decode("utf-8", errors="replace"))
                       for e in read_fatbins(blob, label) if e.kind == ENTRY_PTX]
            except InputError as e:
                self.say(f"{call}: {e} (CUDA_ERROR_INVALID_IMAGE)")
                return INVALID_IMAGE
            usable = [p for p in ptx if p[0] <= self.opts.sm]
            if usable:
                link.inputs.append((label, max(usable, key=lambda p: (p[0], arch_specific(p[1])))[1]))
                return SUCCESS
        what = _JIT_INPUTS.get(type_)
        if what is None:
            return INVALID_VALUE
        self._stop(f"{call}: {label} is {what}, which holds no PTX hypa can run; hypa links PTX: add the PTX "
                   f"text (NVRTC with --gpu-architecture=compute_90, nvcc -ptx) or a fatbin that embeds it"
                   f"{_NVJITLINK_HINT if type_ == JIT_INPUT_NVVM else ''}")
        return UNKNOWN

    def cuLinkComplete(self, state, cubinOut, sizeOut):
        """The inputs linked as ``-rdc`` objects are (ptxdialect/link.py): the "cubin" it hands
        back is the linked PTX text, which hypa's cuModuleLoadData (and cuLibraryLoadData) load."""
        from hypa.ptxdialect.diagnostics import PTXError
        from hypa.ptxdialect.link import link_ptx

        link = self.links.get(state)
        if link is None or not cubinOut or not sizeOut:
            return INVALID_HANDLE if link is None else INVALID_VALUE
        if not link.inputs:
            return INVALID_VALUE
        try:
            text = link.inputs[0][1] if len(link.inputs) == 1 else link_ptx(link.inputs)
        except PTXError as e:
            self.say(f"cuLinkComplete: {e} (CUDA_ERROR_INVALID_PTX)")
            return INVALID_PTX
        link.output = ctypes.create_string_buffer(text.encode())  # NUL-terminated, the link's until cuLinkDestroy
        ctypes.c_void_p.from_address(cubinOut).value = ctypes.addressof(link.output)
        ctypes.c_size_t.from_address(sizeOut).value = ctypes.sizeof(link.output)
        return SUCCESS

    def cuLinkDestroy(self, state):
        if self.links.pop(state, None) is None:
            return INVALID_HANDLE
        self.memory.release(state)
        return SUCCESS

    def cuModuleGetFunction(self, hfunc, hmod, name):
        m = self.modules.get(hmod) if hmod not in self.unloaded_modules else None
        if m is None or not hfunc or not name:
            return INVALID_HANDLE if m is None else INVALID_VALUE
        kernel = ctypes.string_at(name).decode(errors="replace")
        f = self.module_functions.get((hmod, kernel))
        if f is None:
            if not re.search(rf"\.entry\s+{re.escape(kernel)}\s*\(", m.ptx or ""):
                return NOT_FOUND
            f = self._handle("function")
            self.module_functions[(hmod, kernel)] = f
            self.functions[f] = self.new_kernel(m, kernel)
        ctypes.c_void_p.from_address(hfunc).value = f
        return SUCCESS

    def cuModuleGetGlobal_v2(self, dptr, nbytes, hmod, name):
        """A module variable (``.global`` or ``.const``) by its PTX name: its address and size."""
        from hypa.ptxdialect.dialect import VarOp
        from hypa.runtime.emulator.emulator import initial_bytes

        m = self.modules.get(hmod) if hmod not in self.unloaded_modules else None
        if m is None or not name:
            return INVALID_HANDLE if m is None else INVALID_VALUE
        var = ctypes.string_at(name).decode(errors="replace")
        for op in m.emulator.module.ops:
            if isinstance(op, VarOp) and op.var_name == var and op.space in (".global", ".const"):
                size = op.size_bytes() or 0
                arr = self._variable(m, var, size, initial_bytes(size, op.init, op.ptx_type))
                if dptr:
                    ctypes.c_uint64.from_address(dptr).value = arr.ctypes.data
                if nbytes:
                    ctypes.c_size_t.from_address(nbytes).value = size
                return SUCCESS
        return NOT_FOUND

    # a CUlibrary is a module, a CUkernel a function: one device, one context's view of each

    def cuLibraryLoadData(self, library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                          libraryOptionValues, numLibraryOptions):
        return self._load_image(library, code, "cuLibraryLoadData")

    def cuLibraryUnload(self, library):
        return self.cuModuleUnload(library)

    def cuLibraryGetKernel(self, pKernel, library, name):
        return self.cuModuleGetFunction(pKernel, library, name)

    def cuLibraryGetModule(self, pMod, library):
        if library not in self.modules or library in self.unloaded_modules:
            return INVALID_HANDLE
        ctypes.c_void_p.from_address(pMod).value = library
        return SUCCESS

    def cuLibraryGetGlobal(self, dptr, nbytes, library, name):
        return self.cuModuleGetGlobal_v2(dptr, nbytes, library, name)

    def cuKernelGetFunction(self, pFunc, kernel):
        if kernel not in self.functions:
            return INVALID_HANDLE
        ctypes.c_void_p.from_address(pFunc).value = kernel
        return SUCCESS

    def cuKernelGetAttribute(self, pi, attrib, kernel, dev):
        return self.cuFuncGetAttribute(pi, attrib, kernel) if dev == 0 else INVALID_DEVICE

    def cuKernelSetAttribute(self, attrib, val, kernel, dev):
        return self.cuFuncSetAttribute(kernel, attrib, val) if dev == 0 else INVALID_DEVICE

    def cuKernelSetCacheConfig(self, kernel, config, dev):
        return self.cuFuncSetCacheConfig(kernel, config) if dev == 0 else INVALID_DEVICE

    def cuFuncGetAttribute(self, pi, attrib, hfunc):
        from .properties import FuncAttributes

        field = _FUNC_ATTRIBUTES.get(attrib)
        if field is None or not pi:
            return INVALID_VALUE
        fa = FuncAttributes()
        r = self.cudaFuncGetAttributes(ctypes.addressof(fa), hfunc)
        if r:
            return self._cu(r)
        ctypes.c_int.from_address(pi).value = int(getattr(fa, field))
        return SUCCESS

    def cuFuncSetAttribute(self, hfunc, attrib, value):
        return self._cu(self.cudaFuncSetAttribute(hfunc, attrib, value))

    def cuFuncSetCacheConfig(self, hfunc, config):
        return self._cu(self.cudaFuncSetCacheConfig(hfunc, config))

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, numBlocks, func, blockSize, dynamicSMemSize):
        return self._cu(self.cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize))

    def cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(self, numBlocks, func, blockSize, dynamicSMemSize, flags):
        """The flags (CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) concern caches hypa's count ignores."""
        return self.cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize)

    # -- launches ------------------------------------------------------------------------

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, kernelParams, extra):
        if f not in self.functions:
            return INVALID_HANDLE
        r = self._stream_ok(stream)
        if r:
            return self._cu(r)
        keep = None
        if not kernelParams:
            keep = self._params_from_extra(f, extra)
            if keep is None:
                return INVALID_VALUE
            kernelParams = ctypes.addressof(keep)
        return self._cu(self._launch(f, (gx, gy, gz), (bx, by, bz), kernelParams, shared))

    def cuLaunchKernelEx(self, config, f, kernelParams, extra):
        """cuLaunchKernel with a ``CUlaunchConfig``: its attributes may make the launch
        cooperative; a thread block cluster of more than one CTA hypa does not emulate (the
        other attributes are scheduling hints, which change no count)."""
        if not config:
            return INVALID_VALUE
        c = _LaunchConfig.from_address(config)
        cooperative = False
        for i in range(c.numAttrs):
            a = _LaunchAttribute.from_address(c.attrs + i * ctypes.sizeof(_LaunchAttribute))
            if a.id == _LAUNCH_ATTRIBUTE_COOPERATIVE:
                cooperative = bool(a.value[0])
            elif a.id == _LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION and tuple(a.value[:3]) not in ((1, 1, 1), (0, 0, 0)):
                self._stop(f"cuLaunchKernelEx: a thread block cluster of {'x'.join(map(str, a.value[:3]))} CTAs, "
                           f"which hypa does not emulate")
        grid = (c.gridDimX, c.gridDimY, c.gridDimZ)
        block = (c.blockDimX, c.blockDimY, c.blockDimZ)
        if cooperative and not extra:
            return self.cuLaunchCooperativeKernel(f, *grid, *block, c.sharedMemBytes, c.hStream or 0, kernelParams)
        return self.cuLaunchKernel(f, *grid, *block, c.sharedMemBytes, c.hStream or 0, kernelParams, extra)

    def cuLaunchCooperativeKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, kernelParams):
        if f not in self.functions:
            return INVALID_HANDLE
        return self._cu(self.cudaLaunchCooperativeKernel(f, (gx, gy, gz), (bx, by, bz), kernelParams, shared, stream))

    def _params_from_extra(self, f: int, extra: int):
        """kernelParams (an array of pointers, one per parameter) into the argument buffer
        ``extra`` passes (CU_LAUNCH_PARAM_BUFFER_POINTER), at the PTX parameters' offsets;
        None where ``extra`` holds none."""
        buf = size = None
        i = 0
        while extra:
            key = ctypes.c_void_p.from_address(extra + 8 * i).value or 0
            if key == _PARAM_END:
                break
            value = ctypes.c_void_p.from_address(extra + 8 * i + 8).value or 0
            if key == _PARAM_BUFFER_POINTER:
                buf = value
            elif key == _PARAM_BUFFER_SIZE and value:
                size = ctypes.c_size_t.from_address(value).value
            else:
                return None
            i += 2
        prog = self._program(f)
        if prog is None or (buf is None and prog.params):
            return None
        offsets = [off for _n, _t, off, _size in prog.params]
        if size is not None and prog.params and max(off + sz for _n, _t, off, sz in prog.params) > size:
            return None
        return (ctypes.c_void_p * max(1, len(offsets)))(*[buf + off for off in offsets])

    # -- the legacy launch (before cuLaunchKernel): PyCUDA sets the block shape so ----------

    def _legacy(self, f: int) -> dict:
        """A function's block shape, dynamic shared memory and argument bytes, as the legacy
        calls set them (kept per function, as the driver keeps them)."""
        if not hasattr(self, "legacy_launch"):
            self.legacy_launch: dict[int, dict] = {}
        return self.legacy_launch.setdefault(f, {"block": (1, 1, 1), "shared": 0, "params": bytearray()})

    def cuFuncSetBlockShape(self, hfunc, x, y, z):
        if hfunc not in self.functions:
            return INVALID_HANDLE
        if min(x, y, z) <= 0:
            return INVALID_VALUE
        self._legacy(hfunc)["block"] = (x, y, z)
        return SUCCESS

    def cuFuncSetSharedSize(self, hfunc, nbytes):
        if hfunc not in self.functions:
            return INVALID_HANDLE
        self._legacy(hfunc)["shared"] = nbytes
        return SUCCESS

    def cuParamSetSize(self, hfunc, numbytes):
        if hfunc not in self.functions:
            return INVALID_HANDLE
        params = self._legacy(hfunc)["params"]
        params[:] = params[:numbytes].ljust(numbytes, b"\0")
        return SUCCESS

    def _param_set(self, hfunc, offset: int, data: bytes) -> int:
        if hfunc not in self.functions:
            return INVALID_HANDLE
        if offset < 0:
            return INVALID_VALUE
        params = self._legacy(hfunc)["params"]
        if len(params) < offset + len(data):
            params.extend(b"\0" * (offset + len(data) - len(params)))
        params[offset : offset + len(data)] = data
        return SUCCESS

    def cuParamSeti(self, hfunc, offset, value):
        return self._param_set(hfunc, offset, value.to_bytes(4, "little"))

    def cuParamSetf(self, hfunc, offset, value):  # the float's bits, as the C side passes them
        return self._param_set(hfunc, offset, (value & 0xFFFFFFFF).to_bytes(4, "little"))

    def cuParamSetv(self, hfunc, offset, ptr, numbytes):
        if not ptr and numbytes:
            return INVALID_VALUE
        return self._param_set(hfunc, offset, ctypes.string_at(ptr, numbytes) if numbytes else b"")

    def cuLaunch(self, f):
        return self.cuLaunchGridAsync(f, 1, 1, 0)

    def cuLaunchGrid(self, f, grid_width, grid_height):
        return self.cuLaunchGridAsync(f, grid_width, grid_height, 0)

    def cuLaunchGridAsync(self, f, grid_width, grid_height, hStream):
        """cuLaunchKernel with the shape, shared memory and argument bytes the legacy calls set."""
        if f not in self.functions:
            return INVALID_HANDLE
        st = self._legacy(f)
        buf = (ctypes.c_char * max(1, len(st["params"]))).from_buffer_copy(bytes(st["params"]) or b"\0")
        size = ctypes.c_size_t(len(st["params"]))
        extra = (ctypes.c_void_p * 5)(_PARAM_BUFFER_POINTER, ctypes.addressof(buf), _PARAM_BUFFER_SIZE,
                                      ctypes.addressof(size), _PARAM_END)
        return self.cuLaunchKernel(f, grid_width, grid_height, 1, *st["block"], st["shared"], hStream, 0,
                                   ctypes.addressof(extra))

    # -- memory --------------------------------------------------------------------------

    def cuMemGetInfo_v2(self, free, total):
        return self._cu(self.cudaMemGetInfo(free, total))

    def cuMemAlloc_v2(self, dptr, bytesize):
        if bytesize == 0:
            return INVALID_VALUE
        return self._cu(self._alloc(dptr, bytesize, "device"))

    def cuMemAllocManaged(self, dptr, bytesize, flags):
        if bytesize == 0:
            return INVALID_VALUE
        return self._cu(self._alloc(dptr, bytesize, "managed"))

    def cuMemFree_v2(self, dptr):
        return self._cu(self._free(dptr, ("device", "managed")))

    def cuMemAllocHost_v2(self, pp, bytesize):
        return self._cu(self._alloc(pp, bytesize, "host"))

    def cuMemHostAlloc(self, pp, bytesize, flags):
        return self._cu(self._alloc(pp, bytesize, "host"))

    def cuMemFreeHost(self, p):
        return self._cu(self._free(p, ("host",)))

    def cuMemHostRegister_v2(self, p, bytesize, flags):
        return self._cu(self.cudaHostRegister(p, bytesize, flags))

    def cuMemHostUnregister(self, p):
        return self._cu(self.cudaHostUnregister(p))

    def cuMemHostGetDevicePointer_v2(self, pdptr, p, flags):
        return self._cu(self.cudaHostGetDevicePointer(pdptr, p, flags))

    def cuMemGetAddressRange_v2(self, pbase, psize, dptr):
        """The allocation that holds ``dptr``: its start and size."""
        a = self.memory.find(dptr)
        if a is None or a.kind not in ("device", "managed", "variable"):
            return NOT_FOUND
        if pbase:
            ctypes.c_uint64.from_address(pbase).value = a.start
        if psize:
            ctypes.c_size_t.from_address(psize).value = a.size
        return SUCCESS

    def cuPointerGetAttribute(self, data, attribute, ptr):
        """What the driver knows of an address (CUpointer_attribute): hypa's memory is the
        host's, so a device pointer and its host pointer are one address."""
        a = self.memory.find(ptr)
        if a is None or not data:
            return INVALID_VALUE
        device = a.kind not in ("host", "registered")
        values = {1: ("p", self._current_context() or self._primary()),  # CONTEXT
                  2: ("u", 2 if device and a.kind != "managed" else 1),  # MEMORY_TYPE: CU_MEMORYTYPE_DEVICE/HOST
                  3: ("p", ptr),  # DEVICE_POINTER
                  4: ("p", ptr),  # HOST_POINTER (mapped: the same address)
                  6: ("u", 1),  # SYNC_MEMOPS
                  7: ("q", a.start),  # BUFFER_ID: one per allocation
                  8: ("u", int(a.kind == "managed")),  # IS_MANAGED
                  9: ("u", 0),  # DEVICE_ORDINAL
                  11: ("p", a.start), 12: ("s", a.size),  # RANGE_START_ADDR, RANGE_SIZE
                  13: ("u", 1)}  # MAPPED
        v = values.get(attribute)
        if v is None:
            return INVALID_VALUE
        kind, value = v
        {"p": ctypes.c_uint64, "q": ctypes.c_uint64, "s": ctypes.c_size_t, "u": ctypes.c_uint}[kind].from_address(
            data).value = value
        return SUCCESS

    def _cu_copy(self, dst, src, count, kind, call) -> int:
        if kind == DEFAULT:  # cuMemcpy: unified addressing, either side may be the device's
            kind = {(True, True): D2D, (True, False): H2D, (False, True): D2H}.get(
                (self.memory.find(dst) is not None, self.memory.find(src) is not None), DEFAULT)
            if kind == DEFAULT:
                if count:
                    ctypes.memmove(dst, src, count)
                return SUCCESS
        self._flush_printf()
        r = self._check_copy(dst, src, count, kind, call)
        if r == 0 and count:
            ctypes.memmove(dst, src, count)
        return self._cu(r)

    def cuMemcpy(self, dst, src, byteCount):
        return self._cu_copy(dst, src, byteCount, DEFAULT, "cuMemcpy")

    def cuMemcpyAsync(self, dst, src, byteCount, hStream):
        return self._cu(self._stream_ok(hStream)) or self._cu_copy(dst, src, byteCount, DEFAULT, "cuMemcpyAsync")

    def cuMemcpyHtoD_v2(self, dstDevice, srcHost, byteCount):
        return self._cu_copy(dstDevice, srcHost, byteCount, H2D, "cuMemcpyHtoD")

    def cuMemcpyDtoH_v2(self, dstHost, srcDevice, byteCount):
        return self._cu_copy(dstHost, srcDevice, byteCount, D2H, "cuMemcpyDtoH")

    def cuMemcpyDtoD_v2(self, dstDevice, srcDevice, byteCount):
        return self._cu_copy(dstDevice, srcDevice, byteCount, D2D, "cuMemcpyDtoD")

    def cuMemcpyHtoDAsync_v2(self, dstDevice, srcHost, byteCount, hStream):
        return self._cu(self._stream_ok(hStream)) or self._cu_copy(dstDevice, srcHost, byteCount, H2D, "cuMemcpyHtoDAsync")

    def cuMemcpyDtoHAsync_v2(self, dstHost, srcDevice, byteCount, hStream):
        return self._cu(self._stream_ok(hStream)) or self._cu_copy(dstHost, srcDevice, byteCount, D2H, "cuMemcpyDtoHAsync")

    def cuMemcpyDtoDAsync_v2(self, dstDevice, srcDevice, byteCount, hStream):
        return self._cu(self._stream_ok(hStream)) or self._cu_copy(dstDevice, srcDevice, byteCount, D2D, "cuMemcpyDtoDAsync")

    def _memset(self, dst: int, value: int, n: int, width: int, call: str) -> int:
        """``n`` elements of ``width`` bytes from ``dst``, each ``value``."""
        if dst % width:
            return INVALID_VALUE  # the element size's alignment, as the driver requires
        if n == 0:
            return SUCCESS
        if self.memory.find(dst, n * width) is None:
            self.say(f"{call}: {dst:#x} .. +{n * width} bytes is not inside one device allocation "
                     f"(CUDA_ERROR_INVALID_VALUE)", once=(call, dst, n))
            return INVALID_VALUE
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
        buf = (ctypes.c_uint8 * (n * width)).from_address(dst)
        np.frombuffer(buf, dtype=dtype)[:] = value & ((1 << (8 * width)) - 1)
        return SUCCESS

    def cuMemsetD8_v2(self, dstDevice, uc, n):
        return self._memset(dstDevice, uc, n, 1, "cuMemsetD8")

    def cuMemsetD16_v2(self, dstDevice, us, n):
        return self._memset(dstDevice, us, n, 2, "cuMemsetD16")

    def cuMemsetD32_v2(self, dstDevice, ui, n):
        return self._memset(dstDevice, ui, n, 4, "cuMemsetD32")

    def cuMemsetD8Async(self, dstDevice, uc, n, hStream):
        return self._cu(self._stream_ok(hStream)) or self._memset(dstDevice, uc, n, 1, "cuMemsetD8Async")

    def cuMemsetD16Async(self, dstDevice, us, n, hStream):
        return self._cu(self._stream_ok(hStream)) or self._memset(dstDevice, us, n, 2, "cuMemsetD16Async")

    def cuMemsetD32Async(self, dstDevice, ui, n, hStream):
        return self._cu(self._stream_ok(hStream)) or self._memset(dstDevice, ui, n, 4, "cuMemsetD32Async")

    # -- streams and events: the runtime's ---------------------------------------------

    def cuStreamCreate(self, phStream, flags):
        return self._cu(self.cudaStreamCreateWithFlags(phStream, flags))

    def cuStreamCreateWithPriority(self, phStream, flags, priority):
        return self._cu(self.cudaStreamCreateWithPriority(phStream, flags, priority))

    def cuStreamDestroy_v2(self, hStream):
        return self._cu(self.cudaStreamDestroy(hStream))

    def cuStreamSynchronize(self, hStream):
        return self._cu(self.cudaStreamSynchronize(hStream))

    def cuStreamQuery(self, hStream):
        return self._cu(self.cudaStreamQuery(hStream))

    def cuStreamWaitEvent(self, hStream, hEvent, flags):
        return self._cu(self.cudaStreamWaitEvent(hStream, hEvent, flags))

    def cuStreamAddCallback(self, hStream, callback, userData, flags):
        return self._cu(self.cudaStreamAddCallback(hStream, callback, userData, flags))

    def cuEventCreate(self, phEvent, flags):
        return self._cu(self.cudaEventCreateWithFlags(phEvent, flags))

    def cuEventRecord(self, hEvent, hStream):
        return self._cu(self.cudaEventRecord(hEvent, hStream))

    def cuEventSynchronize(self, hEvent):
        return self._cu(self.cudaEventSynchronize(hEvent))

    def cuEventQuery(self, hEvent):
        return self._cu(self.cudaEventQuery(hEvent))

    def cuEventElapsedTime(self, pMilliseconds, hStart, hEnd):
        return self._cu(self.cudaEventElapsedTime(pMilliseconds, hStart, hEnd))

    def cuEventElapsedTime_v2(self, pMilliseconds, hStart, hEnd):
        return self.cuEventElapsedTime(pMilliseconds, hStart, hEnd)

    def cuEventDestroy_v2(self, hEvent):
        return self._cu(self.cudaEventDestroy(hEvent))

    def cuProfilerStart(self):
        return SUCCESS

    def cuProfilerStop(self):
        return SUCCESS
