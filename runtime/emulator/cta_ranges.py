"""The CTAs of one launch: one at a time (each CTA's counters kept), or split over forked workers.

CTAs are independent, so the grid is cut into contiguous ranges, one per worker, run on
the ``Forked`` executor (``runtime/emulator/executor.py``).  What is particular to splitting one
launch: the buffers the kernel may write are moved into shared memory first, so every
worker's stores (and host atomics) land in the same place; each worker sends back its
counters, error words and per-CTA rows, which are summed here.  Workers are forked after
compilation, so they share the compiled code and pay no compile cost.
"""

from __future__ import annotations

import mmap
from array import array

import numpy as np

from .. import abi
from . import racecheck
from .executor import Forked, TaskFailed
from .interrupt import stoppable

_ERR_WORDS = range(abi.CTX_ERR_CODE, abi.CTX_ERR_AUX + 1)
_UNINIT_WORDS = range(abi.CTX_UNINIT_COUNT, abi.CTX_UNINIT_CTA + 1)  # initcheck: a count, then the first read


def _shared_copy(arr: np.ndarray) -> tuple[mmap.mmap, np.ndarray]:
    m = mmap.mmap(-1, max(arr.nbytes, 1), flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    view = np.frombuffer(m, dtype=np.uint8, count=arr.nbytes)
    view[:] = arr.reshape(-1).view(np.uint8)
    return m, view


class CtaRows:
    """Each CTA's counters, kept once per distinct row (CTAs mostly repeat a few rows): the
    distinct rows and, per CTA in order, the index of its row.  Memory grows with the distinct
    rows and 4 bytes a CTA, not with CTAs x counters (``--per-cta`` on millions of CTAs)."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self._where: dict[bytes, int] = {}
        self.index = array("i")

    def add(self, row: np.ndarray) -> None:
        key = row.tobytes()
        k = self._where.get(key)
        if k is None:
            k = self._where[key] = len(self.rows)
            self.rows.append(row.copy())
        self.index.append(k)

    def extend(self, other: "CtaRows") -> None:
        for k in other.index:
            self.add(other.rows[k])

    def __len__(self) -> int:
        return len(self.index)


def run_each(run_ctas, ctx: np.ndarray, keep: dict, first: int, last: int) -> int:
    """Run CTAs [first, last) one at a time; each CTA's counters go to ``keep["cta_rows"]``
    (a ``CtaRows``: the per-CTA breakdown).  Returns the first error's rc."""
    counters = keep["counters"]
    rows = CtaRows()
    prev = counters.copy()
    diff = np.empty_like(counters)
    rc = abi.RC_EXIT
    for c in range(first, last):
        rc = run_ctas(ctx.ctypes.data, c, c + 1)
        np.subtract(counters, prev, out=diff)
        rows.add(diff)
        prev[:] = counters
        if rc != abi.RC_EXIT:
            break
    keep["cta_rows"] = rows
    return rc


def run_forked(run_ctas, ctx: np.ndarray, keep: dict, num_ctas: int, jobs: int, first: int = 0,
               per_cta: bool = False) -> int:
    """Run CTAs [first, num_ctas) in ``jobs`` forked processes; returns the first error's rc.
    With ``per_cta`` each worker keeps per-CTA counter rows (``run_each``), gathered
    into ``keep["cta_rows"]``."""
    win_base = keep["win_base"]
    shared = []
    for k, (_name, arr) in enumerate(keep["arrays"]):
        m, view = _shared_copy(arr)
        shared.append((m, view, arr))
        win_base[abi.WIN_FIRST_GLOBAL + k] = view.ctypes.data if view.size else 0
    counters = keep["counters"]
    bounds = [first + (num_ctas - first) * j // jobs for j in range(jobs + 1)]
    ranges = [(bounds[j], bounds[j + 1]) for j in range(jobs)]

    def run_range(lo: int, hi: int):  # in a worker
        counters[:] = 0
        ctx[abi.CTX_UNINIT_COUNT] = 0
        for i in racecheck.COUNT_WORDS:
            ctx[i] = 0
        ctx[abi.CTX_TRACE_LEN] = 0  # what the parent traced before stays with the parent
        ctx[abi.CTX_L1_WINDOW_LEN] = 0
        ctx[abi.CTX_TRACE_ATOMICS] = ctx[abi.CTX_TRACE_ATOMIC_EXTRA] = 0
        with stoppable(ctx):
            rc = run_each(run_ctas, ctx, keep, lo, hi) if per_cta else run_ctas(ctx.ctypes.data, lo, hi)
        trace = steps = None
        if "trace" in keep:
            from .memory_trace import MemoryTrace

            shift = int(ctx[abi.CTX_TRACE_SHIFT])
            trace = MemoryTrace.from_buffer(keep["trace"], int(ctx[abi.CTX_TRACE_LEN]), shift, shift >= 48,
                                            (int(ctx[abi.CTX_TRACE_ATOMICS]), int(ctx[abi.CTX_TRACE_ATOMIC_EXTRA])),
                                            (keep["l1_window"], int(ctx[abi.CTX_L1_WINDOW_LEN])))
            steps = keep["cta_steps"][lo:hi].copy()
        return (rc, counters, [int(ctx[i]) for i in _ERR_WORDS], int(ctx[abi.CTX_CTA_LINEAR]),
                keep["cta_rows"] if per_cta else None, [int(ctx[i]) for i in _UNINIT_WORDS], trace, steps,
                [int(ctx[i]) for i in racecheck.WORDS])

    outcomes = Forked(jobs).map(run_range, ranges)
    rc_out = abi.RC_EXIT
    first_err = None
    total = counters.copy()  # what ran here before (a first CTA run alone) counts too
    rows_all = CtaRows() if per_cta else None
    for (lo, _hi), out in zip(ranges, outcomes):
        if isinstance(out, TaskFailed):
            rc_out = abi.RC_ERROR
            continue
        rc, part_counters, err, cta, rows, uninit, trace, steps, races = out
        total += part_counters
        if trace is not None:  # the address trace (timing estimate): parts in CTA order
            keep.setdefault("worker_traces", []).append(trace)
            keep["cta_steps"][lo:lo + len(steps)] = steps
        if uninit[0]:  # initcheck: counts add up, the first read is the lowest CTA range's
            if ctx[abi.CTX_UNINIT_COUNT] == 0:
                for i, v in zip(_UNINIT_WORDS, uninit):
                    ctx[i] = v
            else:
                ctx[abi.CTX_UNINIT_COUNT] += uninit[0]
        if any(races[:len(racecheck.COUNT_WORDS)]):  # racecheck: the same, three counts
            if not any(ctx[i] for i in racecheck.COUNT_WORDS):
                for i, v in zip(racecheck.WORDS, races):
                    ctx[i] = v
            else:
                for i, v in zip(racecheck.COUNT_WORDS, races):
                    ctx[i] += v
        if rows_all is not None and rows is not None:  # ranges come back in order
            rows_all.extend(rows)
        if rc != abi.RC_EXIT and (first_err is None or lo < first_err[0]):
            first_err = (lo, err, cta)
            rc_out = rc
    counters[:] = total
    if rows_all is not None:
        keep["cta_rows"] = rows_all
    if first_err is not None:
        for i, v in zip(_ERR_WORDS, first_err[1]):
            ctx[i] = v
        ctx[abi.CTX_CTA_LINEAR] = first_err[2]
    for _m, view, arr in shared:
        arr.reshape(-1).view(np.uint8)[:] = view
    shared.clear()  # the mappings go with their last views
    # restore the window table for any later use of ctx
    for k, (_name, arr) in enumerate(keep["arrays"]):
        win_base[abi.WIN_FIRST_GLOBAL + k] = arr.ctypes.data
    return rc_out
