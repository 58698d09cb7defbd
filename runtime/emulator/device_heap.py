"""CUDA's device heap: ``malloc`` and ``free`` called from device code (also what ``new``
and ``delete`` compile to: ``.extern .func malloc`` / ``free``).

The heap is one reservation of ``size`` bytes (``cudaLimitMallocHeapSize``, CUDA's default
8 MiB) made on first use and kept for the life of the emulator (``hypa run``: of the
program), so memory one launch allocates stays valid in later launches until freed, as on a
GPU.  Each block ``malloc`` returns (16-byte aligned, first fit) is registered as its own
allocation of the flat memory table (``FlatMemory``, kind ``malloc``), so accesses are
bounds-checked per block in full and slice mode like those to ``cudaMalloc`` memory; bytes
of the heap no live block covers are out of bounds.  ``malloc`` of more than the heap has
free returns NULL (as CUDA's does); ``free`` of an address no live block starts at stops the
launch with a message (a GPU's behaviour there is undefined).  Lanes call in lane order.

Generated code calls ``DeviceHeap.address`` (``abi.CTX_HEAP``) once per warp-instruction
with the executing lanes and their arguments; the flat-table words of the context are
rewritten after each change (generated code of a kernel that calls the heap reads them
afresh at every access, see ``WarpFunction.load_stable_words``).
"""

from __future__ import annotations

import bisect
import ctypes

import numpy as np

from .. import abi
from .flat_memory import FlatMemory

#: CUDA's default ``cudaLimitMallocHeapSize``
DEFAULT_HEAP_SIZE = 8 << 20
#: alignment of what ``malloc`` returns (CUDA: 16 bytes)
ALIGN = 16
#: the callback's operation word
MALLOC, FREE = 0, 1


class DeviceHeap:
    """The device heap of one program (or one ``Emulator``) and its callback."""

    CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_int64)

    def __init__(self, memory: FlatMemory | None = None, size: int = DEFAULT_HEAP_SIZE) -> None:
        # a launch spec's heap: exact bounds (hypa run's follows --exact-bounds, as cudaMalloc memory)
        self.memory = memory if memory is not None else FlatMemory(exact_bounds=True)
        self.size = int(size)
        self.base = 0  # 0 until the first malloc reserves the heap
        self._owner: object = None
        self._starts: list[int] = []  # live blocks, ascending
        self._sizes: dict[int, int] = {}
        #: the message of the fault the callback last reported (read by the emulator's error message)
        self.error = ""
        self.mallocs = self.frees = self.failed = 0
        self.peak = 0  # most bytes live at once
        self._keep: list = []  # flat tables generated code may still hold
        self._cb = self.CALLBACK(self._callback)

    @property
    def address(self) -> int:
        return ctypes.cast(self._cb, ctypes.c_void_p).value or 0

    @property
    def blocks(self) -> dict[int, int]:
        """The live blocks: address -> the bytes asked for, by address."""
        return {s: self._sizes[s] for s in self._starts}

    @property
    def live_bytes(self) -> int:
        return sum(self._sizes.values())

    def set_size(self, size: int) -> bool:
        """``cudaDeviceSetLimit(cudaLimitMallocHeapSize)``: only before the heap is used (CUDA
        returns an error once a kernel that uses it has launched)."""
        if self.base:
            return False
        self.size = int(size)
        return True

    def setup_context(self, ctx: np.ndarray) -> None:
        """Point a launch's context at the flat tables (with this heap's blocks) and the callback."""
        self._tables(ctx.ctypes.data)
        ctx[abi.CTX_HEAP] = self.address

    # -- allocation ----------------------------------------------------------------------

    def malloc(self, size: int) -> int:
        """A new block's address, or 0 when the heap has no room (or ``size`` is 0)."""
        if size <= 0 or size > self.size:
            self.failed += size > 0
            return 0
        if not self.base:
            a = self.memory.allocate(self.size, "heap", align=4096, label="device heap")
            self.memory.release(a.start)  # the reservation itself is not addressable, its blocks are
            self.base, self._owner = a.start, a.owner
        n = -(-size // ALIGN) * ALIGN
        at = self.base
        for s in self._starts:
            if s - at >= n:
                break
            at = s + -(-self._sizes[s] // ALIGN) * ALIGN
        if at + n > self.base + self.size:
            self.failed += 1
            return 0
        np.frombuffer((ctypes.c_uint8 * n).from_address(at), np.uint8)[:] = 0
        bisect.insort(self._starts, at)
        self._sizes[at] = size
        # no slack past a block (owner None): blocks are adjacent, an overrun is the next one's bytes
        self.memory.register(at, size, "malloc", label="device malloc")
        self.mallocs += 1
        self.peak = max(self.peak, self.live_bytes)
        return at

    def free(self, addr: int) -> bool:
        """Release the block at ``addr`` (0: nothing); False if no live block starts there."""
        if addr == 0:
            return True
        if addr not in self._sizes:
            return False
        del self._sizes[addr]
        self._starts.remove(addr)
        self.memory.release(addr)
        self.frees += 1
        return True

    # -- the callback ------------------------------------------------------------------

    def _tables(self, ctx: int) -> None:
        words = (ctypes.c_int64 * abi.CTX_WORDS).from_address(ctx)
        starts, ends, exact_starts, exact = self.memory.tables()
        self._keep.append((starts, ends, exact_starts, exact))
        words[abi.CTX_FLAT_START] = starts.ctypes.data
        words[abi.CTX_FLAT_END] = ends.ctypes.data
        words[abi.CTX_FLAT_EXACT_START] = exact_starts.ctypes.data
        words[abi.CTX_FLAT_EXACT_END] = exact.ctypes.data
        words[abi.CTX_FLAT_N] = len(starts)
        words[abi.CTX_FLAT_HINT] = 0

    def _callback(self, ctx: int, op: int, lanes: int, inp: int, out: int) -> int:
        """``op`` (MALLOC/FREE) for each lane of ``lanes`` in lane order, arguments at ``inp``,
        results to ``out`` (32 words each): 0, or 1 + the first lane whose ``free`` faults."""
        try:
            args = np.ctypeslib.as_array((ctypes.c_int64 * abi.LANES).from_address(inp)).view(np.uint64)
            res = np.ctypeslib.as_array((ctypes.c_int64 * abi.LANES).from_address(out)).view(np.uint64)
            changed = False
            for k in range(abi.LANES):
                if not lanes >> k & 1:
                    continue
                a = int(args[k])
                if op == MALLOC:
                    res[k] = self.malloc(a)
                    changed |= bool(res[k])
                elif self.free(a):
                    changed |= a != 0
                else:
                    if changed:
                        self._tables(ctx)
                    self.error = (f"free({a:#x}): no block the device heap's malloc returned starts there "
                                  f"(freed twice, or not from malloc)")
                    return k + 1
            if changed:
                self._tables(ctx)
            return 0
        except Exception as ex:  # noqa: BLE001  (never a traceback through ctypes: the launch stops with the reason)
            self.error = f"internal error in the device heap: {type(ex).__name__}: {ex}"
            return 1 + next((k for k in range(abi.LANES) if lanes >> k & 1), 0)
