"""Device memory that is the host program's own memory (``hypa run``).

A launch spec binds buffers to windows (address = window << 40 | offset).  A real program
instead hands kernels the pointers its ``cudaMalloc`` returned, stores pointers in device
memory and reads managed memory from the CPU, so under ``hypa run`` a device pointer is the
host address of the allocation.  Generated code looks any global/generic address outside
every window up in a sorted table of allocations (``abi.CTX_FLAT_*``); an address inside
none of them is an out-of-bounds error naming the kernel, thread and address.

``HostBinding`` gives an Emulator that table, storage for the module's ``__device__`` and
``__constant__`` variables that lives across launches (as on a GPU), and the device
``printf`` callback.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import abi


@dataclass
class Allocation:
    start: int
    size: int
    kind: str  # "device" | "managed" | "host" | "registered" | "variable" | "array" (a cudaArray)
    owner: object = None  # keeps the memory alive (a numpy array), None for registered memory
    label: str = ""


class FlatMemory:
    """Allocations by start address, and the sorted [start, end) arrays generated code reads."""

    #: bytes before the start and past the end of an allocation hypa made that emulated code
    #: may touch: a GPU does not fault on small overruns either way (allocations come from
    #: larger pages), compute-sanitizer does; hypa allows them, maps them, and reports the
    #: first one of a launch as a warning
    SLACK = 1024

    def __init__(self, exact_bounds: bool = False) -> None:
        #: True: an access must lie inside the bytes asked for (compute-sanitizer's memcheck);
        #: False: inside the allocation rounded up to GRANULARITY, as on a GPU
        self.exact_bounds = exact_bounds
        self._by_start: dict[int, Allocation] = {}
        self._starts: list[int] = []  # sorted: a bisection finds an address's allocation
        self._tables: tuple[np.ndarray, np.ndarray] | None = None
        #: bytes held per kind, kept as allocations come and go (cudaMalloc's limit and
        #: cudaMemGetInfo read it without a walk over every allocation)
        self._bytes: dict[str, int] = {}

    def allocate(self, size: int, kind: str, align: int = 256, label: str = "") -> Allocation:
        """New zeroed memory of ``size`` bytes (at least one, so every pointer is distinct).
        A shared anonymous mapping (page aligned, so ``align`` up to 4096 holds): CTAs that run
        in forked workers (``-j``) write the same memory the program reads."""
        import mmap

        n = max(size, 1)
        # a page before the allocation (the slack before it, the start page-aligned) and the
        # slack after it
        m = mmap.mmap(-1, mmap.PAGESIZE + n + self.SLACK, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        arr = np.frombuffer(m, np.uint8, n, offset=mmap.PAGESIZE)
        assert arr.ctypes.data % min(align, mmap.PAGESIZE) == 0
        return self.register(arr.ctypes.data, size, kind, owner=(m, arr), label=label)

    @property
    def forkable(self) -> bool:
        """Whether forked workers' writes reach every allocation (not so for host memory
        the program registered, which is its own private memory)."""
        return all(a.kind != "registered" for a in self._by_start.values())

    def register(self, start: int, size: int, kind: str, owner: object = None, label: str = "") -> Allocation:
        a = Allocation(start, max(size, 1), kind, owner, label)
        if start in self._by_start:
            raise ValueError(f"address {start:#x} is already registered")
        self._by_start[start] = a
        bisect.insort(self._starts, start)
        self._bytes[kind] = self._bytes.get(kind, 0) + a.size
        self._tables = None
        return a

    def release(self, start: int) -> Allocation | None:
        a = self._by_start.pop(start, None)
        if a is not None:
            del self._starts[bisect.bisect_left(self._starts, start)]
            self._bytes[a.kind] -= a.size
            self._tables = None
        return a

    def bytes_held(self, *kinds: str) -> int:
        """The bytes the allocations of ``kinds`` hold (each at least one byte)."""
        return sum(self._bytes.get(k, 0) for k in kinds)

    def get(self, start: int) -> Allocation | None:
        return self._by_start.get(start)

    def find(self, addr: int, size: int = 1) -> Allocation | None:
        """The allocation holding ``[addr, addr + size)``, if one does."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        a = self._by_start[self._starts[i]]
        return a if addr + size <= a.start + a.size else None

    def __iter__(self):
        return (self._by_start[s] for s in self._starts)

    def __len__(self) -> int:
        return len(self._starts)

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(starts and ends emulated code may reach, starts and ends of the bytes asked for).
        The reachable ranges stay sorted and apart: the slack lies in each allocation's own
        mapping."""
        if self._tables is None:
            allocs = [self._by_start[s] for s in self._starts]
            slack = 0 if self.exact_bounds else self.SLACK

            def table(values) -> np.ndarray:
                return np.ascontiguousarray(np.array(values, np.uint64).view(np.int64))

            starts = table([a.start - (slack if a.owner is not None else 0) for a in allocs])
            ends = table([a.start + a.size + (slack if a.owner is not None else 0) for a in allocs])
            exact_starts = table([a.start for a in allocs])
            exact_ends = table([a.start + a.size for a in allocs])
            self._tables = (starts, ends, exact_starts, exact_ends)
        return self._tables

    def nearest(self, addr: int) -> Allocation | None:
        """The allocation whose reachable range (its slack included) holds ``addr``."""
        slack = 0 if self.exact_bounds else self.SLACK
        i = bisect.bisect_right(self._starts, addr + slack) - 1
        if i < 0:
            return None
        a = self._by_start[self._starts[i]]
        return a if a.start - slack <= addr < a.start + a.size + slack else None


@dataclass
class HostBinding:
    """What a real program's process gives the emulator (see the module docstring)."""

    memory: FlatMemory
    #: storage of a module variable, made on first use: (name, size, initial bytes) -> array
    variable: Callable[[str, int, np.ndarray], np.ndarray]
    printf: int = 0  # address of void(int64 ctx, int64 fmt, int64 args), 0: device printf is counted only
    #: the program's texture and surface objects (``runtime.textures.TextureTable``), None: none
    textures: object = None
    #: the program's device heap (``runtime.device_heap.DeviceHeap``), None: each emulator's own
    heap: object = None
    _keep: list = field(default_factory=list)

    def setup_context(self, ctx: np.ndarray, nwin: int) -> None:
        starts, ends, exact_starts, exact = self.memory.tables()
        for a in self.memory:
            w = a.start >> abi.WINDOW_SHIFT
            if 0 < w < nwin:
                raise ValueError(f"host memory at {a.start:#x} lies where the emulator's window {w} is; "
                                 f"hypa run cannot tell its addresses apart")
        ctx[abi.CTX_FLAT_START] = starts.ctypes.data
        ctx[abi.CTX_FLAT_END] = ends.ctypes.data
        ctx[abi.CTX_FLAT_N] = len(starts)
        ctx[abi.CTX_FLAT_HINT] = 0
        ctx[abi.CTX_PRINTF] = self.printf
        ctx[abi.CTX_FLAT_EXACT_START] = exact_starts.ctypes.data
        ctx[abi.CTX_FLAT_EXACT_END] = exact.ctypes.data
        ctx[abi.CTX_FLAT_SLACK] = 0
        self._keep = [starts, ends, exact_starts, exact]


def host_address(ctx_address: int, addr: int, size: int = 1) -> int | None:
    """The host address generated code would use for generic address ``addr`` of the running
    launch (``ctx_address``: its context words), or None where it is no valid address."""
    import ctypes

    ctx = (ctypes.c_int64 * abi.CTX_WORDS).from_address(ctx_address)
    win = addr >> abi.WINDOW_SHIFT
    off = addr & abi.OFFSET_MASK
    nwin = ctx[abi.CTX_NWIN]
    if 0 < win < nwin and win not in (abi.WIN_LOCAL, abi.WIN_CPARAM):
        base = (ctypes.c_int64 * nwin).from_address(ctx[abi.CTX_WIN_BASE])
        wsize = (ctypes.c_int64 * nwin).from_address(ctx[abi.CTX_WIN_SIZE])
        return base[win] + off if off + size <= wsize[win] else None
    n = ctx[abi.CTX_FLAT_N]
    if n and win not in (abi.WIN_LOCAL, abi.WIN_CPARAM):
        starts = np.ctypeslib.as_array((ctypes.c_int64 * n).from_address(ctx[abi.CTX_FLAT_START])).view(np.uint64)
        ends = np.ctypeslib.as_array((ctypes.c_int64 * n).from_address(ctx[abi.CTX_FLAT_END])).view(np.uint64)
        i = int(np.searchsorted(starts, np.uint64(addr), side="right")) - 1
        if i >= 0 and addr + size <= int(ends[i]):
            return addr
    return None
