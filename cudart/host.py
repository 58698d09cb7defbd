"""The CUDA runtime, in Python, inside the program ``hypa run`` starts.

``install`` is called by hypa's ``libcudart.so`` (``cudart.shim``) once the interpreter is
up; from then on every runtime call the program makes arrives at ``HostRuntime.dispatch``
as (function index, 64-bit words).  Device memory is host memory (``runtime.flat_memory``):
``cudaMalloc`` returns a host address, copies are ``memmove``s checked against the
allocation table, and each launch runs the kernel's PTX (taken from the fatbin the program
registered) in hypa's emulator, in full mode by default, so the program sees its real
results.  Each launch's metrics are recorded as ``hypa profile`` records them and written
when the program exits (``FINISH``).
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import json
import os
import re
import struct
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hypa.runtime.emulator import memory_limits
from hypa.runtime.emulator.launch import LaunchError
from hypa.runtime.emulator.options import RUN_DEFAULTS, EmulationOptions
from hypa.ptxdialect.diagnostics import HypaError

from . import errors as E
from .api import API, DRIVER_BASE, FINISH, SYNCHRONIZING, UNSUPPORTED, UNSUPPORTED_DRIVER, decode
from .driver import DriverRuntime
from .graph_api import GraphRuntime
from .texture_api import TextureRuntime

FATBIN_WRAPPER_MAGIC = 0x466243B1
FATBIN_MAGIC = 0xBA55ED50

# cudaMemcpyKind
H2H, H2D, D2H, D2D, DEFAULT = range(5)


@dataclass
class RunOptions:
    """What ``hypa run`` passes to the program's process (environment ``HYPA_RUN``, JSON)."""

    #: how launches are emulated (runtime/emulator/options.py): ``RUN_DEFAULTS`` (full mode, so
    #: the program sees its real results; a real program's step budget; interleaved warps)
    emulation: EmulationOptions = field(default_factory=lambda: EmulationOptions(**RUN_DEFAULTS))
    arch: str = "sm_90"
    results: str | None = None  # where the records go (JSON), read back by `hypa run`
    capture: str | None = None
    capture_launches: str | None = None  # which launches --capture writes (capture.LaunchSelection)
    program: str = "program"
    exact_bounds: bool = False
    format: str = "table"
    by: str = "launch"
    jobs: int = 1
    #: ``--quiet``: no progress line (there is one only where stderr is a terminal)
    quiet: bool = False
    #: ``--estimate-time ARCH``: each launch's timing estimate in the report
    estimate_time: str | None = None
    #: ``--timing``: the phase table (``runtime/emulator/phases.py``) of the program's process
    timing: bool = False

    @classmethod
    def from_environment(cls) -> "RunOptions":
        raw = os.environ.get("HYPA_RUN")
        if not raw:
            return cls()
        d = json.loads(raw)
        if "emulation" in d:
            d["emulation"] = EmulationOptions.of(None, **d["emulation"])
        return cls(**d)

    @property
    def sm(self) -> int:
        digits = "".join(ch for ch in self.arch if ch.isdigit())
        return int(digits or 90)


@dataclass
class Module:
    """One registered fatbin: its PTX, parsed and emulated on first use."""

    handle: int
    blob: bytes
    index: int
    #: where the program keeps the fatbin (finds the file it came from: -rdc objects' PTX)
    address: int = 0
    ptx: str | None = None
    arch: int | None = None
    error: str | None = None
    emulator: Any = None
    source: Any = None
    storage: dict[str, np.ndarray] = field(default_factory=dict)
    initialised: set[str] = field(default_factory=set)


@dataclass
class Kernel:
    module: Module
    name: str
    #: cudaFuncAttributeMaxDynamicSharedMemorySize as the program set it (None: the default)
    max_dynamic_shared: int | None = None


@dataclass
class Symbol:
    module: Module
    name: str
    size: int
    constant: bool
    managed_ptr: int = 0  # __managed__: where the program keeps the variable's address


@dataclass
class Event:
    recorded: int | None = None  # launches completed when it was recorded


class HostRuntime(TextureRuntime, GraphRuntime, DriverRuntime):
    def __init__(self, major: int, opts: RunOptions) -> None:
        from hypa.runtime.emulator.device_heap import DeviceHeap
        from hypa.runtime.emulator.flat_memory import FlatMemory
        from hypa.runtime.emulator.textures import TextureTable

        self.major = major
        self.opts = opts
        self.memory = FlatMemory(exact_bounds=opts.exact_bounds)
        self.arrays = {}  # cudaArray_t -> texture_api.CudaArray
        self.textures = TextureTable()  # texture and surface objects
        self.heap = DeviceHeap(self.memory)  # device malloc/free (cudaLimitMallocHeapSize)
        self.modules: dict[int, Module] = {}
        #: cudaLimitStackSize: call stack per thread (recursion, alloca), CUDA's default
        self.stack_size = opts.emulation.stack_size
        self.functions: dict[int, Kernel] = {}
        self.symbols: dict[int, Symbol] = {}
        self.config: list[tuple] = []
        #: cudaGetLastError's error, per host thread as in CUDA (the C library numbers the
        #: program's threads: every call runs on hypa's own thread, so Python cannot tell them apart)
        self.last_errors: dict[int, int] = {}
        self.caller = 0
        self.sticky = 0
        #: a fault of a launch that already ran (hypa runs launches to the end at once): sticky
        #: from the next call that synchronizes with the device, where CUDA reports it
        self.pending = 0
        self.device = 0
        self.streams: dict[int, int] = {}
        self.events: dict[int, Event] = {}
        self.records: list = []
        self.launch_estimates: list[float | None] = []
        #: the intervals the program timed with cudaEventElapsedTime: (first launch, end) -> ms
        self.intervals: dict[tuple[int, int], float] = {}
        self.estimate_cache: dict[int, float | None] = {}
        self.t0 = time.perf_counter()
        self._handles: list[ctypes.Array] = []
        self._said: set[tuple] = set()
        self.finished = False
        self._printf = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(self._device_printf)
        self._capturer = None  # capture.Capture, made at the first launch under --capture
        self._progress_on: bool | None = None  # decided at the first launch (stderr a terminal?)
        self._progress_at = 0.0
        self._progress_shown = False
        self._graph_state()  # CUDA graphs, stream capture, memory pools (graph_api.py)
        self._driver_state()  # the driver API's contexts and loaded modules (driver.py)
        self._lock = threading.RLock()
        self._printf_out: list[bytes] = []

    # -- the dispatcher ------------------------------------------------------------------

    def dispatch(self, fn: int, args, nargs: int, caller: int = 0) -> int:
        with self._lock:  # the runtime API is thread-safe: calls from the program's threads take turns
            outer, self.caller = self.caller, caller
            try:
                return self._dispatch(fn, args, nargs)
            finally:  # a host function calling the runtime returns to its caller's call
                self.caller = outer

    @property
    def last_error(self) -> int:
        """The calling host thread's last error (``cudaGetLastError``)."""
        return self.last_errors.get(self.caller, 0)

    @last_error.setter
    def last_error(self, value: int) -> None:
        if value:
            self.last_errors[self.caller] = value
        else:
            self.last_errors.pop(self.caller, None)

    def _dispatch(self, fn: int, args, nargs: int) -> int:
        try:
            if fn == FINISH:
                self.finish()
                return 0
            if fn == UNSUPPORTED:
                name = ctypes.string_at(args[0]).decode()
                self.say(f"{self.opts.program} called {name}, which hypa's CUDA runtime does not provide "
                         f"(`hypa run --help` lists what it does); stopping the program")
                self.finish()
                return 0
            if fn >= DRIVER_BASE or fn == UNSUPPORTED_DRIVER:
                return self.driver_call(fn, args, nargs)
            proto = API[fn]
            vals = decode(proto, [args[i] for i in range(nargs)])
            self.runtime_threads.add(self.caller)  # the runtime made the primary context current here
            name = proto.name.removesuffix("_ptsz").removesuffix("_ptds").removesuffix("_ptsa")
            impl = getattr(self, name.lstrip("_") if name.startswith("__cuda") else name)
            if self.stream_captures:  # work onto a capturing stream is recorded, not run
                at = next((i for i, (_k, n) in enumerate(proto.params) if n == "stream"), None)
                captured = self.capture_call(name.lstrip("_") if name.startswith("__cuda") else name, vals, at)
                if captured is not None:
                    return captured
            if self.pending and name in SYNCHRONIZING:
                self.sticky, self.pending = self.pending, 0
            if self.sticky and name in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                                        "cudaMemcpy", "cudaDeviceReset"):
                self._flush_printf()  # output printed before the fault still reaches the program
            if self.sticky and proto.ret == "err" and not name.startswith(("__cuda", "cudaGetError")):
                if name in ("cudaGetLastError", "cudaPeekAtLastError"):
                    return self.sticky
                if name not in ("cudaFree", "cudaFreeHost", "cudaGetDeviceCount", "cudaDeviceReset"):
                    return self.sticky
            r = impl(*vals)
            if proto.ret == "err":
                r = int(r or 0)
                if r and name not in ("cudaGetLastError", "cudaPeekAtLastError", "cudaStreamQuery", "cudaEventQuery"):
                    self.last_error = r
            return int(r or 0)
        except Exception as e:  # a bug in hypa, never the program's fault: say so, keep the program alive
            self.say(f"internal error in {API[fn].name if 0 <= fn < len(API) else fn}: {type(e).__name__}: {e}")
            if os.environ.get("HYPA_DEBUG"):
                traceback.print_exc()
            return E.cudaErrorUnknown

    def say(self, text: str, once: tuple | None = None) -> None:
        if once is not None:
            if once in self._said:
                return
            self._said.add(once)
        if self._progress_shown:  # the message replaces the progress line, which comes back later
            sys.stderr.write("\r\x1b[K")
            self._progress_shown = False
        sys.stderr.write(f"hypa run: {text}\n")
        sys.stderr.flush()

    def _progress(self, index: int, kernel: str) -> None:
        """The progress line on stderr (a terminal; not with ``--quiet``): from 2 s into the run,
        at most twice a second, the launch, its kernel and the emulation's throughput."""
        now = time.perf_counter()
        if self._progress_on is None:
            self._progress_on = not self.opts.quiet and os.isatty(2)
        if not self._progress_on or now - self.t0 < PROGRESS_AFTER_S or now - self._progress_at < 0.5:
            return
        self._progress_at = now
        done = [r.result for r in self.records if r.result is not None]
        ti = sum(float(r.metrics.values["thread_inst_executed"]) for r in done)
        emu_s = sum(r.duration_ms for r in done) / 1000 or 1e-9
        from hypa.runtime.emulator.demangle import demangle

        sys.stderr.write(f"\rhypa run: launch {index} ({demangle(kernel)[:40]}), {ti / emu_s:.2e} "
                         f"thread-instructions/s emulated, {now - self.t0:.0f} s\x1b[K")
        sys.stderr.flush()
        self._progress_shown = True

    # -- registration --------------------------------------------------------------------

    def cudaRegisterFatBinary(self, wrapper: int) -> int:
        magic, _version, data = struct.unpack("<IIQ", ctypes.string_at(wrapper, 16))
        if magic != FATBIN_WRAPPER_MAGIC:
            data = wrapper  # a bare fatbin
        head = ctypes.string_at(data, 16)
        fmagic, _v, hsize, size = struct.unpack("<IHHQ", head)
        handle_mem = (ctypes.c_void_p * 2)()
        self._handles.append(handle_mem)
        handle = ctypes.addressof(handle_mem)
        if fmagic != FATBIN_MAGIC:
            blob = b""
        else:
            blob = ctypes.string_at(data, hsize + size)
        m = Module(handle, blob, len(self.modules), data)
        if not blob:
            m.error = "the program registered device code hypa cannot read (no fatbin header)"
        self.modules[handle] = m
        return handle

    def cudaRegisterFatBinaryEnd(self, handle: int) -> None:
        return None

    def cudaUnregisterFatBinary(self, handle: int) -> None:
        return None

    def cudaInitModule(self, handle: int) -> int:
        return 1

    def cudaRegisterFunction(self, handle, hostFun, deviceFun, deviceName, threadLimit, tid, bid, bDim, gDim, wSize) -> None:
        m = self.modules.get(handle)
        if m is not None:
            self.functions[hostFun] = Kernel(m, ctypes.string_at(deviceFun).decode())

    def cudaRegisterVar(self, handle, hostVar, deviceAddress, deviceName, ext, size, constant, glob) -> None:
        m = self.modules.get(handle)
        if m is not None:
            self.symbols[hostVar] = Symbol(m, ctypes.string_at(deviceAddress).decode(), size, bool(constant))

    def cudaRegisterManagedVar(self, handle, hostVarPtrAddress, deviceAddress, deviceName, ext, size, constant, glob) -> None:
        m = self.modules.get(handle)
        if m is None:
            return
        s = Symbol(m, ctypes.string_at(deviceAddress).decode(), size, bool(constant), managed_ptr=hostVarPtrAddress)
        self.symbols[hostVarPtrAddress] = s
        arr = self._storage(m, s.name, size)
        ctypes.c_void_p.from_address(hostVarPtrAddress).value = arr.ctypes.data

    # -- modules and variables -----------------------------------------------------------

    def new_module(self, handle: int, address: int) -> Module:
        """A module the driver API loads at run time (cudart/driver.py sets its PTX or fatbin)."""
        return Module(handle, b"", len(self.modules), address)

    def new_kernel(self, m: Module, name: str) -> Kernel:
        return Kernel(m, name)

    def _load(self, m: Module) -> bool:
        """Parse the module's PTX (once).  False, with m.error set, where it cannot be."""
        if m.emulator is not None or m.error is not None:
            return m.error is None
        from hypa.ptxdialect import parse_ptx
        from hypa.ptxdialect.diagnostics import PTXError
        from hypa.runtime.emulator.emulator import Emulator
        from hypa.runtime.emulator.flat_memory import HostBinding

        if m.ptx is None and not self._ptx_of_fatbin(m):
            return False
        try:
            module_op = parse_ptx(m.ptx, filename=f"{self.opts.program}[sm_{m.arch} PTX]")
        except PTXError as e:
            m.error = f"the program's PTX does not parse: {e}"
            return False
        emu = Emulator(module_op, options=self.opts.emulation, stack_size=self.stack_size,
                       address_trace=_trace_records(self.opts.emulation.memory_metrics or bool(self.opts.estimate_time)))
        emu.host = HostBinding(self.memory, lambda name, size, init: self._variable(m, name, size, init),
                               ctypes.cast(self._printf, ctypes.c_void_p).value or 0, textures=self.textures,
                               heap=self.heap)
        m.emulator = emu
        return True

    def _ptx_of_fatbin(self, m: Module) -> bool:
        """Choose the registered fatbin's PTX for the device (m.ptx, m.arch, m.source); False,
        with m.error set, where it has none hypa can run."""
        from hypa.ptxdialect.diagnostics import PTXError
        from hypa.runtime.report.inputs import ENTRY_ELF, ENTRY_PTX, InputError, Source, arch_specific, read_fatbins

        try:
            entries = read_fatbins(m.blob, f"{self.opts.program} (fatbin {m.index})")
        except InputError as e:
            m.error = str(e)
            return False
        ptx = [(e.arch, e.payload.rstrip(b"\0").decode("utf-8", errors="replace")) for e in entries if e.kind == ENTRY_PTX]
        sass = sorted({e.arch for e in entries if e.kind == ENTRY_ELF})
        linked = None
        if not ptx:  # separate compilation (-rdc): nvlink linked the SASS; the objects' PTX is apart
            try:
                linked = self._relocatable_ptx(m)
            except (InputError, PTXError) as e:
                m.error = f"the program's separately compiled (-rdc) device code cannot be linked: {e}"
                return False
            if linked is not None:
                ptx = [linked]
        if not ptx:
            a = sass[-1] if sass else 90
            m.error = (f"the program's device code holds machine code (SASS) for "
                       f"{', '.join(f'sm_{x}' for x in sass) or 'a GPU'} and no PTX; hypa runs PTX: rebuild with "
                       f"`-arch=sm_{a}` (which embeds both) or `-gencode arch=compute_{a},code=compute_{a}`")
            return False
        usable = [p for p in ptx if p[0] <= self.opts.sm] or ptx
        m.arch, m.ptx = max(usable, key=lambda p: (p[0], arch_specific(p[1])))
        m.source = Source(self.opts.program, m.ptx, "elf", f"sm_{m.arch} PTX" + (f" {m.index + 1}" if m.index else "")
                          + (" (-rdc objects linked)" if linked is not None else ""), f"sm_{m.arch}")
        return True

    def _relocatable_ptx(self, m: Module) -> tuple[int, str] | None:
        """(arch, PTX) linked from the relocatable objects (``__nv_relfatbin``) of the file
        that holds the registered fatbin -- the executable or a shared library -- for the
        newest architecture the device runs; None where it has none."""
        from hypa.runtime.report.inputs import relocatable_ptx

        path = _mapped_file(m.address)
        if path is None:
            return None
        with open(path, "rb") as f:
            linked = relocatable_ptx(path, f.read())
        usable = [p for p in linked if p[0] <= self.opts.sm] or linked
        return max(usable, key=lambda p: p[0]) if usable else None

    def _storage(self, m: Module, name: str, size: int) -> np.ndarray:
        arr = m.storage.get(name)
        if arr is None:
            memory_limits.check(f"variable {name}", size)
            try:
                a = self.memory.allocate(size, "variable", label=name)
            except (MemoryError, OSError, OverflowError):  # mmap refused it
                raise LaunchError(f"variable {name} needs {size} bytes ({memory_limits.human(size)}): "
                                  f"the allocation failed (out of memory)") from None
            arr = np.ctypeslib.as_array((ctypes.c_uint8 * max(size, 1)).from_address(a.start))
            arr.flags.writeable = True
            m.storage[name] = arr
            a.owner = (a.owner, arr)
        return arr

    def _variable(self, m: Module, name: str, size: int, init: np.ndarray) -> np.ndarray:
        """The storage of a module variable, initialised from its PTX initializer once."""
        arr = self._storage(m, name, size)
        if name not in m.initialised:
            m.initialised.add(name)
            n = min(size, init.nbytes)
            arr[:n] = init[:n]
        return arr

    def _symbol_storage(self, symbol: int) -> tuple[np.ndarray | None, int]:
        """(storage, error) of a ``__device__``/``__constant__`` variable by its host address."""
        s = self.symbols.get(symbol)
        if s is None:
            return None, E.cudaErrorInvalidSymbol
        m = s.module
        if s.name not in m.initialised and self._load(m):
            from hypa.ptxdialect.dialect import VarOp
            from hypa.runtime.emulator.emulator import initial_bytes

            for op in m.emulator.module.ops:
                if isinstance(op, VarOp) and op.var_name == s.name:
                    self._variable(m, s.name, s.size, initial_bytes(s.size, op.init, op.ptx_type))
                    break
        return self._storage(m, s.name, s.size), 0

    # -- launches ------------------------------------------------------------------------

    def cudaPushCallConfiguration(self, grid, block, sharedMem, stream) -> int:
        self.config.append((grid, block, sharedMem, stream))
        return 0

    def cudaPopCallConfiguration(self, grid, block, sharedMem, stream) -> int:
        if not self.config:
            return E.cudaErrorMissingConfiguration
        g, b, shm, st = self.config.pop()
        for addr, d in ((grid, g), (block, b)):
            ctypes.memmove(addr, struct.pack("<III", *d), 12)
        ctypes.c_size_t.from_address(sharedMem).value = shm
        ctypes.c_void_p.from_address(stream).value = st or None
        return 0

    def cudaGetKernel(self, kernel: int, func: int) -> int:
        ctypes.c_void_p.from_address(kernel).value = func
        return 0 if func in self.functions else E.cudaErrorInvalidDeviceFunction

    def cudaLaunchKernel(self, func, grid, block, args, sharedMem, stream) -> int:
        return self._launch(func, grid, block, args, sharedMem)

    def cudaLaunchCooperativeKernel(self, func, grid, block, args, sharedMem, stream) -> int:
        """Every CTA resident at once (the emulator interleaves them), so the grid may hold at
        most what the GPU's SMs hold together: CUDA refuses more."""
        prog = self._program(func)
        if prog is None:
            return E.cudaErrorInvalidDeviceFunction
        per_sm = self._max_active_blocks(prog, block[0] * block[1] * block[2], sharedMem)
        from .properties import h100_properties

        sms = int(h100_properties(self.opts.sm)["multiProcessorCount"])
        if grid[0] * grid[1] * grid[2] > per_sm * sms:
            return E.cudaErrorCooperativeLaunchTooLarge
        return self._launch(func, grid, block, args, sharedMem, cooperative=True)

    def _launch(self, func: int, grid, block, args: int, shared: int, cooperative: bool = False) -> int:
        self._flush_printf()
        from hypa.runtime.report.batch import LaunchRecord
        from hypa.runtime.emulator.emulator import EmulationError
        from hypa.runtime.emulator.launch import Launch, LaunchError
        from hypa.runtime.emulator.program import syncs_grid

        k = self.functions.get(func)
        if k is None:
            self._library_kernel(func)
            self.say(f"a launch of a function hypa has not seen registered (host address {func:#x})", once=("fn", func))
            return E.cudaErrorInvalidDeviceFunction
        if not self._load(k.module):
            # a GPU would run it: going on would hand the program garbage for its results
            self.say(f"kernel {k.name}: {k.module.error}; stopping the program (its results would be wrong)")
            self.finish()
            sys.stdout.flush()
            os._exit(1)
        emu = k.module.emulator
        try:
            prog = emu.program(k.name)
        except HypaError as e:
            self.say(f"kernel {k.name}: {e}", once=("prog", k.name))
            return E.cudaErrorInvalidKernelImage
        refused = self._launch_refused(k, prog, block, shared)
        if refused:
            return refused
        argv = []
        for i, (_n, _t, _off, size) in enumerate(prog.params):
            p = ctypes.c_void_p.from_address(args + 8 * i).value or 0
            argv.append(ctypes.string_at(p, size) if size else b"")
        try:
            launch = Launch(kernel=k.name, grid=grid, block=block, args=argv, shared_bytes=shared, cooperative=cooperative)
        except LaunchError as e:
            self.say(f"launch of {k.name}: {e}")
            return E.cudaErrorInvalidConfiguration
        index = len(self.records)
        if not cooperative and syncs_grid(prog):
            per_sm = self._max_active_blocks(prog, launch.threads_per_cta, shared)
            from .properties import h100_properties

            most = per_sm * int(h100_properties(self.opts.sm)["multiProcessorCount"])
            if launch.num_ctas > most:
                self.say(f"warning: launch {index} ({k.name}): the kernel syncs the grid, and a plain launch of "
                         f"{launch.num_ctas} CTAs is more than the GPU holds at once ({most}): on a GPU it never "
                         f"finishes (cudaLaunchCooperativeKernel refuses such a grid)")
        rec = LaunchRecord(index, k.module.source, launch, kernel=k.name)
        if self.opts.capture:
            self._capture(rec, prog)
        try:
            rec.result = emu.run(launch, jobs=self.opts.jobs, keep_buffers=False)
            for n in rec.result.notes:
                if n.startswith("an access touched"):
                    self.say(f"warning: launch {index} ({k.name}): {n}")
        except EmulationError as e:  # a fault: asynchronous, as on a GPU (the launch itself succeeds)
            rec.error = str(e)
            self.pending = self.pending or E.for_emulation_error(e.code)
            self.say(f"launch {index}: {e.located()}")
        except KeyboardInterrupt:  # a SIGINT/SIGTERM the program handles stopped it (its handler has run)
            rec.error = "stopped by a signal"
            self.pending = self.pending or E.cudaErrorLaunchTimeout
            self.say(f"launch {index} ({k.name}): stopped by a signal the program handles")
        except HypaError as e:  # the kernel did not run: later calls say so, as after a fault
            rec.error = str(e)
            self.say(f"launch {index} ({k.name}): {e}")
            self.records.append(rec)
            self.sticky = E.cudaErrorLaunchFailure
            return E.cudaErrorLaunchFailure
        self.records.append(rec)
        self._progress(index, k.name)
        if rec.result is not None and (rec.result.memory_trace is not None or self.opts.estimate_time):
            self._estimate_us(index)  # the cache model reads the address trace: estimate now, then drop
            rec.result.memory_trace = None  # it (a trace per launch would grow with the launches)
            if self.opts.estimate_time and not self.opts.emulation.memory_metrics:
                rec.result.metrics.memory = None  # the trace needed the memory slots; shown only if asked
        return 0

    def _launch_refused(self, k: Kernel, prog, block, shared: int) -> int:
        """The error a GPU returns for a launch it cannot run (launch bounds, shared memory
        beyond the kernel's attribute or the architecture's), said once per kernel; 0: none."""
        from hypa.runtime.emulator.launch_limits import default_dynamic_shared, launch_error

        limit = k.max_dynamic_shared
        if limit is None:
            limit = default_dynamic_shared(prog.shared_static_bytes, self.opts.arch)
        bad = launch_error(prog.func, prog.shared_static_bytes, tuple(block), shared, limit, self.opts.arch)
        if bad is None:
            return 0
        self.say(f"launch of {k.name}: {bad.located}: {bad.code}", once=("refused", k.name, bad.message))
        return getattr(E, bad.code)

    def _capture(self, rec, prog) -> None:
        if self._capturer is None:
            from .capture import Capture

            self._capturer = Capture(self)
        self._capturer.launch(rec, prog)

    def _estimate_us(self, index: int) -> float | None:
        """The timing model's estimate of launch ``index`` (computed when first asked)."""
        if index not in self.estimate_cache:
            rec = self.records[index]
            t = None
            if rec.result is not None:
                try:
                    from hypa.runtime.emulator.phases import phase
                    from hypa.runtime.models.timing import estimate

                    arch = self.opts.estimate_time or (self.opts.arch if self.opts.arch != "sm_90" else "h100")
                    with phase("estimate"):
                        est = estimate(rec.result, rec.launch, arch,
                                       program=self._module_of(rec).emulator.program_for(rec.launch))
                    t = est.time_us
                    if self.opts.estimate_time:
                        rec.result.time_estimate = est  # the report's estimate columns
                except Exception as e:  # no estimate for this launch: say why, count it as zero
                    self.say(f"no timing estimate for launch {index}: {e}", once=("est", index))
            self.estimate_cache[index] = t
        return self.estimate_cache[index]

    def _module_of(self, rec) -> Module:
        return next(m for m in self.modules.values() if m.source is rec.source)

    # -- memory --------------------------------------------------------------------------

    def _alloc(self, out: int, size: int, kind: str) -> int:
        if out == 0:
            return E.cudaErrorInvalidValue
        if kind in ("device", "managed"):  # as much as the GPU has, no more
            from .properties import h100_properties

            used = self.memory.bytes_held("device", "managed")
            if used + size > int(h100_properties(self.opts.sm)["totalGlobalMem"]):
                return E.cudaErrorMemoryAllocation
        if memory_limits.too_large("allocation", size) is not None:  # more than this machine holds
            return E.cudaErrorMemoryAllocation
        try:
            a = self.memory.allocate(size, kind)
        except (MemoryError, ValueError, OSError, OverflowError):  # mmap refused it (ENOMEM)
            return E.cudaErrorMemoryAllocation
        ctypes.c_void_p.from_address(out).value = a.start
        return 0

    def cudaMalloc(self, devPtr, size):
        return self._alloc(devPtr, size, "device")

    def cudaMallocAsync(self, devPtr, size, stream):
        return self._alloc(devPtr, size, "device")

    def cudaMallocManaged(self, devPtr, size, flags):
        return self._alloc(devPtr, size, "managed")

    def cudaMallocHost(self, ptr, size):
        return self._alloc(ptr, size, "host")

    def cudaHostAlloc(self, pHost, size, flags):
        return self._alloc(pHost, size, "host")

    def cudaMallocPitch(self, devPtr, pitch, width, height):
        p = (width + 511) // 512 * 512 or 512
        ctypes.c_size_t.from_address(pitch).value = p
        return self._alloc(devPtr, p * height, "device")

    def _free(self, ptr: int, kinds: tuple[str, ...]) -> int:
        if ptr == 0:
            return 0
        a = self.memory.get(ptr)
        if a is None or a.kind not in kinds:
            return E.cudaErrorInvalidValue
        self.memory.release(ptr)
        self._texels_freed(a.start, a.size)
        return 0

    def cudaFree(self, devPtr):
        return self._free(devPtr, ("device", "managed"))

    def cudaFreeAsync(self, devPtr, stream):
        return self._free(devPtr, ("device", "managed"))

    def cudaFreeHost(self, ptr):
        return self._free(ptr, ("host",))

    def cudaHostGetDevicePointer(self, pDevice, pHost, flags):
        if self.memory.find(pHost) is None:
            return E.cudaErrorInvalidValue
        ctypes.c_void_p.from_address(pDevice).value = pHost
        return 0

    def cudaHostRegister(self, ptr, size, flags):
        try:
            self.memory.register(ptr, size, "registered")
        except ValueError:
            return E.cudaErrorHostMemoryAlreadyRegistered
        return 0

    def cudaHostUnregister(self, ptr):
        a = self.memory.get(ptr)
        if a is None or a.kind != "registered":
            return E.cudaErrorHostMemoryNotRegistered
        self.memory.release(ptr)
        return 0

    def cudaMemGetInfo(self, free, total):
        from .properties import h100_properties

        tot = int(h100_properties(self.opts.sm)["totalGlobalMem"])
        used = self.memory.bytes_held("device", "managed")
        ctypes.c_size_t.from_address(free).value = max(0, tot - used)
        ctypes.c_size_t.from_address(total).value = tot
        return 0

    def _check_copy(self, dst: int, src: int, count: int, kind: int, fn: str) -> int:
        if kind not in range(5):
            return E.cudaErrorInvalidMemcpyDirection
        if count == 0:
            return 0
        for addr, is_dev, what in ((dst, kind in (H2D, D2D), "destination"), (src, kind in (D2H, D2D), "source")):
            if is_dev and self.memory.find(addr, count) is None:
                self.say(f"{fn}: the {what} {addr:#x} .. +{count} bytes is not inside one device allocation "
                         f"(cudaErrorInvalidValue)", once=(fn, what, addr, count))
                return E.cudaErrorInvalidValue
            if addr == 0:
                return E.cudaErrorInvalidValue
        return 0

    def cudaMemcpy(self, dst, src, count, kind):
        self._flush_printf()  # a blocking copy synchronises
        return self._copy(dst, src, count, kind)

    def _copy(self, dst, src, count, kind):
        r = self._check_copy(dst, src, count, kind, "cudaMemcpy")
        if r == 0 and count:
            ctypes.memmove(dst, src, count)
        return r

    def cudaMemcpyAsync(self, dst, src, count, kind, stream):
        return self._copy(dst, src, count, kind)

    def cudaMemcpy2D(self, dst, dpitch, src, spitch, width, height, kind):
        if width > dpitch or width > spitch:
            return E.cudaErrorInvalidPitchValue
        if height == 0 or width == 0:
            return 0
        span_d = dpitch * (height - 1) + width
        span_s = spitch * (height - 1) + width
        r = self._check_copy(dst, src, 1, kind, "cudaMemcpy2D")
        if r == 0:
            for addr, is_dev, span in ((dst, kind in (H2D, D2D), span_d), (src, kind in (D2H, D2D), span_s)):
                if is_dev and self.memory.find(addr, span) is None:
                    return E.cudaErrorInvalidValue
            for row in range(height):
                ctypes.memmove(dst + row * dpitch, src + row * spitch, width)
        return r

    def cudaMemcpy2DAsync(self, dst, dpitch, src, spitch, width, height, kind, stream):
        return self.cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind)

    def cudaMemset(self, devPtr, value, count):
        if count and self.memory.find(devPtr, count) is None:
            self.say(f"cudaMemset: {devPtr:#x} .. +{count} bytes is not inside one device allocation "
                     f"(cudaErrorInvalidValue)", once=("memset", devPtr, count))
            return E.cudaErrorInvalidValue
        if count:
            ctypes.memset(devPtr, value & 0xFF, count)
        return 0

    def cudaMemsetAsync(self, devPtr, value, count, stream):
        return self.cudaMemset(devPtr, value, count)

    def cudaMemset2D(self, devPtr, pitch, value, width, height):
        if height and self.memory.find(devPtr, pitch * (height - 1) + width) is None:
            return E.cudaErrorInvalidValue
        for row in range(height):
            ctypes.memset(devPtr + row * pitch, value & 0xFF, width)
        return 0

    def _symbol_copy(self, symbol, other: int, count, offset, kind, to_symbol: bool) -> int:
        """``count`` bytes between a variable (from ``offset``) and ``other``, host memory or,
        with ``cudaMemcpyDeviceToDevice``, an allocation."""
        arr, err = self._symbol_storage(symbol)
        if err:
            return err
        if offset + count > arr.nbytes:
            return E.cudaErrorInvalidValue
        if kind == D2D and self.memory.find(other, count) is None:
            return E.cudaErrorInvalidValue
        at = arr.ctypes.data + offset
        dst, src = (at, other) if to_symbol else (other, at)
        ctypes.memmove(dst, src, count)
        return 0

    def cudaMemcpyToSymbol(self, symbol, src, count, offset, kind):
        return self._symbol_copy(symbol, src, count, offset, kind, to_symbol=True)

    def cudaMemcpyToSymbolAsync(self, symbol, src, count, offset, kind, stream):
        return self.cudaMemcpyToSymbol(symbol, src, count, offset, kind)

    def cudaMemcpyFromSymbol(self, dst, symbol, count, offset, kind):
        self._flush_printf()
        return self._symbol_copy(symbol, dst, count, offset, kind, to_symbol=False)

    def cudaMemcpyFromSymbolAsync(self, dst, symbol, count, offset, kind, stream):
        return self.cudaMemcpyFromSymbol(dst, symbol, count, offset, kind)

    def cudaGetSymbolAddress(self, devPtr, symbol):
        arr, err = self._symbol_storage(symbol)
        if err:
            return err
        ctypes.c_void_p.from_address(devPtr).value = arr.ctypes.data
        return 0

    def cudaGetSymbolSize(self, size, symbol):
        s = self.symbols.get(symbol)
        if s is None:
            return E.cudaErrorInvalidSymbol
        ctypes.c_size_t.from_address(size).value = s.size
        return 0

    def cudaMemPrefetchAsync(self, devPtr, count, location, flags, stream):
        return 0 if self.memory.find(devPtr, max(count, 1)) is not None else E.cudaErrorInvalidValue

    def cudaMemAdvise(self, devPtr, count, advice, location):
        return 0 if self.memory.find(devPtr, max(count, 1)) is not None else E.cudaErrorInvalidValue

    def cudaPointerGetAttributes(self, attributes, ptr):
        from .properties import POINTER_ATTRIBUTES

        PointerAttributes = POINTER_ATTRIBUTES[self.major]
        a = self.memory.find(ptr)
        # cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed
        t = 0 if a is None else {"host": 1, "registered": 1, "managed": 3}.get(a.kind, 2)
        pa = PointerAttributes.from_address(attributes)
        pa.type = t
        pa.device = 0
        pa.devicePointer = ptr if t else None
        pa.hostPointer = ptr if t in (1, 3) or t == 0 else None
        return 0

    # -- device --------------------------------------------------------------------------

    def cudaGetDeviceCount(self, count):
        ctypes.c_int.from_address(count).value = 1
        return 0

    def cudaGetDevice(self, device):
        ctypes.c_int.from_address(device).value = self.device
        return 0

    def cudaSetDevice(self, device):
        return 0 if device == 0 else E.cudaErrorInvalidDevice

    def cudaInitDevice(self, device, deviceFlags, flags):
        return self.cudaSetDevice(device)

    def cudaSetDeviceFlags(self, flags):
        return 0

    def cudaGetDeviceFlags(self, flags):
        ctypes.c_uint.from_address(flags).value = 0
        return 0

    def cudaChooseDevice(self, device, prop):
        ctypes.c_int.from_address(device).value = 0
        return 0

    def cudaGetDeviceProperties(self, prop, device):
        from .properties import DEVICE_PROP, fill, h100_properties

        if device != 0:
            return E.cudaErrorInvalidDevice
        cls = DEVICE_PROP.get(self.major)
        if cls is None:
            self.say(f"cudaGetDeviceProperties: hypa does not know CUDA {self.major}'s cudaDeviceProp layout",
                     once=("props",))
            return E.cudaErrorNotSupported
        ctypes.memset(prop, 0, ctypes.sizeof(cls))
        fill(cls.from_address(prop), h100_properties(self.opts.sm))
        return 0

    def cudaGetDeviceProperties_v2(self, prop, device):
        return self.cudaGetDeviceProperties(prop, device)

    def cudaDeviceGetAttribute(self, value, attr, device):
        from .properties import attribute_value

        if device != 0:
            return E.cudaErrorInvalidDevice
        v = attribute_value(attr, self.opts.sm, self.major)
        if v is None:
            self.say(f"cudaDeviceGetAttribute: attribute {attr} is not one hypa reports (cudaErrorInvalidValue)",
                     once=("attr", attr))
            return E.cudaErrorInvalidValue
        ctypes.c_int.from_address(value).value = int(v)
        return 0

    def cudaDeviceGetLimit(self, value, limit):
        # cudaLimitStackSize 0, PrintfFifoSize 1, MallocHeapSize 2
        ctypes.c_size_t.from_address(value).value = {0: self.stack_size, 1: 1 << 20, 2: self.heap.size}.get(limit, 0)
        return 0

    def cudaDeviceSetLimit(self, limit, value):
        if limit == 0:  # cudaLimitStackSize: the call stack per thread of later launches
            self.stack_size = int(value)
            for m in self.modules.values():
                if getattr(m, "emulator", None) is not None:
                    m.emulator.options = dataclasses.replace(m.emulator.options, stack_size=self.stack_size)
        elif limit == 2 and not self.heap.set_size(int(value)):
            # cudaLimitMallocHeapSize: fixed once a kernel has called malloc, as in CUDA
            return E.cudaErrorInvalidValue
        return 0

    def cudaDeviceGetCacheConfig(self, config):
        ctypes.c_int.from_address(config).value = 0
        return 0

    def cudaDeviceSetCacheConfig(self, config):
        return 0

    def cudaDeviceGetStreamPriorityRange(self, least, greatest):
        if least:
            ctypes.c_int.from_address(least).value = 0
        if greatest:
            ctypes.c_int.from_address(greatest).value = -5
        return 0

    def cudaDeviceSynchronize(self):
        self._flush_printf()
        return 0

    def cudaThreadSynchronize(self):
        self._flush_printf()
        return 0

    def cudaDeviceReset(self):
        self._flush_printf()
        for a in list(self.memory):
            if a.kind in ("device", "managed"):
                self.memory.release(a.start)
        self.sticky = 0
        self.pending = 0
        self.last_error = 0
        return 0

    def cudaDriverGetVersion(self, version):
        ctypes.c_int.from_address(version).value = self.major * 1000
        return 0

    def cudaRuntimeGetVersion(self, version):
        ctypes.c_int.from_address(version).value = self.major * 1000
        return 0

    # -- errors --------------------------------------------------------------------------

    def cudaGetLastError(self):
        r = self.sticky or self.last_error
        self.last_error = 0
        return r

    def cudaPeekAtLastError(self):
        return self.sticky or self.last_error

    def cudaGetErrorString(self, error):
        return 0  # looked up by the C library itself (errors.tsv), also in a fork() child

    def cudaGetErrorName(self, error):
        return 0  # looked up by the C library itself (errors.tsv)

    # -- functions and occupancy ---------------------------------------------------------

    def _program(self, func: int):
        k = self.functions.get(func)
        if k is None:
            self._library_kernel(func)
        if k is None or not self._load(k.module):
            return None
        return k.module.emulator.program(k.name)

    def _library_kernel(self, func: int) -> None:
        """A kernel of a library whose static CUDA runtime was sent to hypa's (CuPy's CUB):
        SASS hypa cannot run; stop, naming it (cudart/static_runtime.py)."""
        from .static_runtime import library_of, stop_message

        path = library_of(func)
        if path is not None:
            self._stop(stop_message(f"a kernel (host address {func:#x})", path))

    def cudaFuncGetAttributes(self, attr, func):
        from hypa.runtime.emulator.launch_limits import default_dynamic_shared, kernel_max_threads

        from .properties import FuncAttributes

        prog = self._program(func)
        if prog is None:
            return E.cudaErrorInvalidDeviceFunction
        fa = FuncAttributes.from_address(attr)
        ctypes.memset(attr, 0, ctypes.sizeof(FuncAttributes))
        fa.sharedSizeBytes = prog.shared_static_bytes
        fa.constSizeBytes = prog.const_bytes
        fa.localSizeBytes = prog.local_bytes
        fa.maxThreadsPerBlock = kernel_max_threads(prog.func, self.opts.arch)
        fa.numRegs = 32
        fa.ptxVersion = fa.binaryVersion = self.opts.sm
        k = self.functions[func]
        fa.maxDynamicSharedSizeBytes = (k.max_dynamic_shared if k.max_dynamic_shared is not None
                                        else default_dynamic_shared(prog.shared_static_bytes, self.opts.arch))
        return 0

    def cudaFuncSetAttribute(self, func, attr, value):
        from hypa.runtime.emulator.launch_limits import arch_limits

        k = self.functions.get(func)
        if k is None:
            return E.cudaErrorInvalidDeviceFunction
        if attr == FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE:
            prog = self._program(func)
            if prog is None:
                return E.cudaErrorInvalidDeviceFunction
            if value < 0 or prog.shared_static_bytes + value > arch_limits(self.opts.arch).shared_per_cta_max:
                return E.cudaErrorInvalidValue  # static + dynamic past sharedMemPerBlockOptin
            k.max_dynamic_shared = value
        elif attr == FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT and not -1 <= value <= 100:
            return E.cudaErrorInvalidValue
        return 0

    def cudaFuncSetCacheConfig(self, func, config):
        return 0 if func in self.functions else E.cudaErrorInvalidDeviceFunction

    def cudaOccupancyMaxActiveBlocksPerMultiprocessor(self, numBlocks, func, blockSize, dynamicSMemSize):
        prog = self._program(func)
        if prog is None:
            return E.cudaErrorInvalidDeviceFunction
        if blockSize <= 0:
            ctypes.c_int.from_address(numBlocks).value = 0
            return 0
        ctypes.c_int.from_address(numBlocks).value = self._max_active_blocks(prog, blockSize, dynamicSMemSize)
        return 0

    @staticmethod
    def _max_active_blocks(prog, block_size: int, dynamic_shared: int) -> int:
        """CTAs of ``block_size`` threads one SM holds at once (sm_90: 2,048 threads, 32 CTAs,
        228 KiB of shared memory with 1 KiB reserved per CTA; registers are not modelled)."""
        if block_size <= 0:
            return 0
        warps = (block_size + 31) // 32
        by_threads = 64 // warps  # 2048 threads = 64 warps per SM
        shared = prog.shared_static_bytes + dynamic_shared
        by_shared = (233472 // (shared + 1024)) if shared else 32
        return max(0, min(32, by_threads, by_shared))

    def cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(self, numBlocks, func, blockSize, dynamicSMemSize, flags):
        return self.cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize)

    def cudaOccupancyAvailableDynamicSMemPerBlock(self, dynamicSmemSize, func, numBlocks, blockSize):
        prog = self._program(func)
        if prog is None:
            return E.cudaErrorInvalidDeviceFunction
        per = 233472 // max(1, numBlocks) - 1024 - prog.shared_static_bytes
        ctypes.c_size_t.from_address(dynamicSmemSize).value = max(0, min(per, 232448))
        return 0

    # -- streams and events (launches are synchronous: every stream is always idle) ------

    def cudaStreamCreate(self, stream):
        return self.cudaStreamCreateWithFlags(stream, 0)

    def cudaStreamCreateWithFlags(self, stream, flags):
        return self.cudaStreamCreateWithPriority(stream, flags, 0)

    def cudaStreamCreateWithPriority(self, stream, flags, priority):
        h = self.memory.allocate(8, "stream")
        self.streams[h.start] = priority
        ctypes.c_void_p.from_address(stream).value = h.start
        return 0

    def cudaStreamDestroy(self, stream):
        return self._release_handle(self.streams, stream)

    def _release_handle(self, table: dict, handle: int) -> int:
        """Forget a stream or event and free the allocation that made its handle."""
        if table.pop(handle, None) is None:
            return E.cudaErrorInvalidResourceHandle
        self.memory.release(handle)
        return 0

    def _stream_ok(self, stream) -> int:
        return 0 if stream in (0, 1, 2) or stream in self.streams else E.cudaErrorInvalidResourceHandle

    def cudaStreamSynchronize(self, stream):
        self._flush_printf()
        return self._stream_ok(stream)

    def cudaStreamQuery(self, stream):
        return self._stream_ok(stream)

    def cudaStreamWaitEvent(self, stream, event, flags):
        return self._stream_ok(stream) or (0 if event in self.events else E.cudaErrorInvalidResourceHandle)

    def cudaStreamGetPriority(self, stream, priority):
        ctypes.c_int.from_address(priority).value = self.streams.get(stream, 0)
        return self._stream_ok(stream)

    def cudaStreamGetFlags(self, stream, flags):
        ctypes.c_uint.from_address(flags).value = 0
        return self._stream_ok(stream)

    def cudaStreamAddCallback(self, stream, callback, userData, flags):
        """Work before it on the stream is done (launches are synchronous): call it now."""
        r = self._stream_ok(stream)
        if r == 0:
            ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(callback)(stream or None, 0, userData or None)
        return r

    def cudaLaunchHostFunc(self, stream, fn, userData):
        r = self._stream_ok(stream)
        if r == 0:
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(fn)(userData or None)
        return r

    def cudaEventCreate(self, event):
        return self.cudaEventCreateWithFlags(event, 0)

    def cudaEventCreateWithFlags(self, event, flags):
        h = self.memory.allocate(8, "event")
        self.events[h.start] = Event()
        ctypes.c_void_p.from_address(event).value = h.start
        return 0

    def cudaEventRecord(self, event, stream):
        ev = self.events.get(event)
        if ev is None:
            return E.cudaErrorInvalidResourceHandle
        ev.recorded = len(self.records)
        return self._stream_ok(stream)

    def cudaEventRecordWithFlags(self, event, stream, flags):
        return self.cudaEventRecord(event, stream)

    def cudaEventSynchronize(self, event):
        self._flush_printf()
        return 0 if event in self.events else E.cudaErrorInvalidResourceHandle

    def cudaEventQuery(self, event):
        return 0 if event in self.events else E.cudaErrorInvalidResourceHandle

    def cudaEventElapsedTime(self, ms, start, end):
        """The timing model's estimate of the kernels launched between the two events (in
        milliseconds); copies and host work take no time in it."""
        a, b = self.events.get(start), self.events.get(end)
        if a is None or b is None:
            return E.cudaErrorInvalidResourceHandle
        if a.recorded is None or b.recorded is None:
            return E.cudaErrorInvalidResourceHandle
        lo, hi = sorted((a.recorded, b.recorded))
        total = sum(self._estimate_us(i) or 0.0 for i in range(lo, hi))
        ctypes.c_float.from_address(ms).value = (total if b.recorded >= a.recorded else -total) / 1000.0
        if (lo, hi) not in self.intervals:  # the report lists each interval the program timed, once
            self.intervals[(lo, hi)] = total / 1000.0
        return 0

    def cudaEventDestroy(self, event):
        return self._release_handle(self.events, event)

    def cudaProfilerStart(self):
        return 0

    def cudaProfilerStop(self):
        return 0

    # -- device printf -------------------------------------------------------------------

    def _device_printf(self, ctx: int, fmt: int, args: int) -> None:
        from hypa.runtime.emulator.flat_memory import host_address

        from .printf import format_device

        def string_at(p: int) -> bytes | None:
            h = host_address(ctx, p)
            return ctypes.string_at(h) if h else None

        try:
            self._printf_out.append(format_device(ctypes.string_at(fmt), args, string_at))
        except Exception as e:  # never unwind through generated code
            self.say(f"device printf failed: {e}", once=("printf",))

    def _flush_printf(self) -> None:
        """Write device printf output to the program's stdout.  CUDA flushes its printf buffer
        only at a kernel launch, a synchronisation (device, stream, event, a blocking copy) and
        at exit, so host output printed between a launch and the next of those comes first."""
        if self._printf_out:
            from .printf import write_stdout

            text, self._printf_out = b"".join(self._printf_out), []
            write_stdout(text)

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Write the records (once) where ``hypa run`` reads them."""
        if self._progress_shown:
            sys.stderr.write("\r\x1b[K")
            self._progress_shown = False
        if self._printf_out:  # nothing synchronised after the last launch: a GPU drops this output too
            n = sum(t.count(b"\n") for t in self._printf_out)
            self.say(f"warning: {n} line(s) of device printf output were never flushed (no synchronisation after "
                     f"the last launch that printed them) and are dropped, as on a GPU")
            self._printf_out = []
        if self.finished:
            return
        self.finished = True
        if not self.opts.results:
            return
        from hypa.runtime.report import tables as report
        from hypa.runtime.report.batch import Profile

        prof = Profile(self.records, [], [m.source for m in self.modules.values() if m.source is not None],
                       time.perf_counter() - self.t0, "this machine, inside the program")
        # the report goes to a file of its own, written as it is formatted (JSON one launch at a
        # time): a run of thousands of launches never holds its whole report in memory
        text_path = self.opts.results + ".text"
        with open(text_path, "w") as out:
            if self.opts.by == "line":
                out.write(report.profile_lines(prof, self.opts.format))
            elif self.opts.format == "json":
                if self.opts.by == "kernel":
                    out.write(json.dumps(report.by_kernel(report.profile_dicts(prof)), indent=2,
                                         default=_json_default) + "\n")
                else:  # a failed launch is part of the run too: its error in place of metrics
                    report.write_records_json(out, self.records, errors=True)
            elif self.opts.format == "csv":
                out.write(report.profile_csv(prof, by=self.opts.by))
            else:
                text = report.profile_table(prof, by=self.opts.by)
                out.write("".join(ln for ln in text.splitlines(True) if not ln.startswith("hypa profile:")))
        summary = {"launches": len(self.records), "failed": len(prof.errors),
                   "kernels": len({(r.source.label, r.kernel) for r in self.records}),
                   "thread_instructions": sum(int(r.result.metrics.values["thread_inst_executed"])
                                              for r in self.records if r.result is not None),
                   "emulate_s": sum(r.result.duration_ms for r in self.records if r.result is not None) / 1000,
                   "wall_s": time.perf_counter() - self.t0}
        if self.opts.estimate_time and self.intervals:
            from hypa.runtime.emulator.demangle import demangle

            summary["event_intervals"] = [{"first_launch": lo, "launches": hi - lo, "estimate_ms": t,
                                           "kernels": sorted({demangle(self.records[i].kernel) for i in range(lo, hi)})}
                                          for (lo, hi), t in sorted(self.intervals.items())]
        if self.opts.timing:
            from hypa.runtime.emulator import phases

            summary["timing"] = phases.report(total=summary["wall_s"], title="hypa run timing report (the program's process)")
        if self.opts.capture:
            summary["capture"] = self._capturer.summary() if self._capturer is not None else {"launches": 0, "chunks": 0, "manifests": 0, "bytes": 0}
        tmp = self.opts.results + ".part"
        with open(tmp, "w") as f:
            json.dump({"text_file": text_path, "summary": summary}, f)
        os.replace(tmp, self.opts.results)


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"not JSON: {type(o).__name__}")


#: cudaFuncAttribute values (driver_types.h)
FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE = 8
FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9

_RUNTIME: HostRuntime | None = None
_DISPATCH = None


def install(set_dispatch: int, major: int) -> None:
    """Called by the C library once the interpreter runs: make the runtime, hand back the dispatcher."""
    global _RUNTIME, _DISPATCH
    _RUNTIME = HostRuntime(major, RunOptions.from_environment())
    from . import static_runtime

    static_runtime.stop_hook = _RUNTIME._stop
    proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_uint64)
    _DISPATCH = proto(_RUNTIME.dispatch)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(set_dispatch)(ctypes.cast(_DISPATCH, ctypes.c_void_p).value)
    # a program that embeds Python finalizes its interpreter before the C library's destructor
    # runs, so the records are written here then (hypa's own interpreter never finalizes)
    atexit.register(_finish, proto, set_dispatch)


#: what a CUDA call made while the interpreter finalizes returns, but for releases (``_RELEASE``,
#: which succeed: the device still exists then): cudaErrorCudartUnloading and
#: CUDA_ERROR_DEINITIALIZED (both 4)
UNLOADING = 4
_RELEASE = re.compile(r"cu(da)?(Free|.*Destroy|ModuleUnload|DevicePrimaryCtxRelease|Unregister)")


def _finish(proto, set_dispatch: int) -> None:
    """At the program's exit: write the records, then answer every later call without running
    hypa's runtime, whose modules the interpreter is tearing down -- objects it frees as it
    finalizes (CuPy's modules, streams and memory pools) still release what they hold."""
    global _DISPATCH
    from .driver_api import DRIVER_API

    releases = frozenset([i for i, p in enumerate(API) if _RELEASE.match(p.name)]
                         + [DRIVER_BASE + i for i, p in enumerate(DRIVER_API) if _RELEASE.match(p.name)])
    _RUNTIME.finish()
    unloading = proto(lambda fn, args, nargs, caller: 0 if fn in releases else UNLOADING)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(unloading))  # alive to the end: C calls it while Python finalizes
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(set_dispatch)(ctypes.cast(unloading, ctypes.c_void_p).value)
    _DISPATCH = unloading


#: seconds into a run before the progress line appears (short runs print none)
PROGRESS_AFTER_S = 2.0

def _mapped_file(address: int) -> str | None:
    """The file whose mapping holds ``address`` in this process (/proc/self/maps), or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                if lo <= address < hi and len(parts) == 6 and parts[5].startswith("/"):
                    path = parts[5].strip()
                    return path if os.path.isfile(path) else None
    except (OSError, ValueError):
        return None
    return None


def _trace_records(memory_metrics: bool) -> int:
    """With ``--memory-metrics`` the launches also keep an address trace, so the timing
    estimates behind ``cudaEventElapsedTime`` use the cache model (runtime/models/cache_model.py)."""
    if not memory_metrics:
        return 0
    from hypa.runtime.models.timing import TRACE_RECORDS

    return TRACE_RECORDS
