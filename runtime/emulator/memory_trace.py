"""The address trace of a launch: the sampled global accesses the generated code records
(``CTX_TRACE``, runtime/emulator/lowering/memory_metrics.py), decoded.  The cache model
(runtime/models/cache_model.py) replays it; the emulator only collects and merges it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import abi


def line_kept(sectors: np.ndarray, shift: int) -> np.ndarray:
    """Whether sampling level ``shift`` keeps the line of each sector (as the JIT decides)."""
    if shift <= 0:
        return np.ones(len(sectors), bool)
    with np.errstate(over="ignore"):
        h = ((sectors.astype(np.uint64) >> np.uint64(2)) * np.uint64(abi.TRACE_LINE_HASH)) >> np.uint64(32)
    return (h & np.uint64((1 << shift) - 1)) == 0


@dataclass
class MemoryTrace:
    """The sampled global accesses of one launch (see the module docstring)."""

    sectors: np.ndarray  # uint64: address >> 5
    info: np.ndarray  # uint64: warp uid | slot << 32 | kind << 48
    shift: int = 0
    #: records lost because the buffer stayed full at the deepest sampling level
    dropped: bool = False
    #: atomic sector requests and their operations beyond the first on one word, all of them
    #: (counted outside the buffer; None: only what the records say)
    atomic_totals: tuple[int, int] | None = None
    #: the L1 window (``CTX_L1_WINDOW``): every sector the first-wave CTAs of SM 0 accessed, in
    #: their order, unsampled (a trace of its own, shift 0), or None
    l1_window: MemoryTrace | None = None

    @property
    def sample_factor(self) -> int:
        return 1 << self.shift

    @property
    def warps(self) -> np.ndarray:
        return (self.info & np.uint64(0xFFFFFFFF)).astype(np.int64)

    @property
    def slots(self) -> np.ndarray:
        return ((self.info >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)

    @property
    def kinds(self) -> np.ndarray:
        return ((self.info >> np.uint64(48)) & np.uint64(0xFF)).astype(np.int64)

    @property
    def lanes(self) -> np.ndarray:
        """Lanes of each record's access on the 4-byte word of the first lane in its sector
        (for an atomic: operations on one address)."""
        return ((self.info >> np.uint64(abi.TRACE_LANES_SHIFT)) & np.uint64(0x3F)).astype(np.int64)

    @property
    def request_starts(self) -> np.ndarray:
        """Whether each record starts a warp-level request (the access's first kept record)."""
        return (self.info & np.uint64(abi.TRACE_FIRST)) != 0

    @property
    def sampled(self) -> np.ndarray:
        """Records of lines the sampling keeps (the others: atomics, kept for their counts)."""
        return (self.info & np.uint64(abi.TRACE_UNSAMPLED)) == 0

    def __len__(self) -> int:
        return len(self.sectors)

    @staticmethod
    def from_buffer(buf: np.ndarray, n: int, shift: int, dropped: bool = False,
                    atomic_totals: tuple[int, int] | None = None, window: tuple[np.ndarray, int] | None = None) -> MemoryTrace:
        """The trace in ``buf`` (``n`` records); ``window``: the L1 window's buffer and length."""
        rec = buf[: 2 * n].view(np.uint64).reshape(-1, 2)
        l1 = None
        if window is not None:
            w = window[0][: 2 * window[1]].view(np.uint64).reshape(-1, 2)
            l1 = MemoryTrace(w[:, 0].copy(), w[:, 1].copy())
        return MemoryTrace(rec[:, 0].copy(), rec[:, 1].copy(), shift, dropped, atomic_totals, l1)

    @staticmethod
    def merge(parts: list[MemoryTrace]) -> MemoryTrace:
        """One trace from traces of CTA ranges (in order), at the deepest sampling level."""
        parts = [p for p in parts if p is not None]
        if not parts:
            return MemoryTrace(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
        shift = max(p.shift for p in parts)
        secs, infos = [], []
        for p in parts:
            keep = slice(None)
            if p.shift < shift:
                kept_line = line_kept(p.sectors, shift)
                atomic = p.kinds == abi.TRACE_ATOMIC
                p = MemoryTrace(p.sectors, np.where(kept_line, p.info, p.info | np.uint64(abi.TRACE_UNSAMPLED)),
                                p.shift, p.dropped)
                keep = kept_line | atomic
            secs.append(p.sectors[keep])
            infos.append(p.info[keep])
        totals = None
        if all(p.atomic_totals is not None for p in parts):
            totals = (sum(p.atomic_totals[0] for p in parts), sum(p.atomic_totals[1] for p in parts))  # type: ignore[index]
        windows = [p.l1_window for p in parts if p.l1_window is not None and len(p.l1_window)]
        l1 = (MemoryTrace(np.concatenate([w.sectors for w in windows]), np.concatenate([w.info for w in windows]))
              if windows else None)
        return MemoryTrace(np.concatenate(secs), np.concatenate(infos), shift, any(p.dropped for p in parts), totals, l1)
