"""CTAs spread over forked worker processes.

CTAs are independent, so the grid is cut into contiguous ranges, one per
worker.  Buffers the kernel may write are moved into shared memory first, so
every worker's stores (and host atomics) land in the same place; each worker
sends back its counters, which are summed.  Workers are forked after
compilation, so they share the compiled code and pay no compile cost.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct

import numpy as np

from . import abi

_ERR_WORDS = range(abi.CTX_ERR_CODE, abi.CTX_ERR_AUX + 1)


def _shared_copy(arr: np.ndarray) -> tuple[mmap.mmap, np.ndarray]:
    m = mmap.mmap(-1, max(arr.nbytes, 1), flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    view = np.frombuffer(m, dtype=np.uint8, count=arr.nbytes)
    view[:] = arr.reshape(-1).view(np.uint8)
    return m, view


def run_each(run_ctas, ctx: np.ndarray, keep: dict, first: int, last: int) -> int:
    """Run CTAs [first, last) one at a time; each CTA's counters become a row of
    ``keep["cta_rows"]`` (the per-CTA breakdown).  Returns the first error's rc."""
    counters = keep["counters"]
    rows = np.zeros((last - first, counters.size), counters.dtype)
    prev = counters.copy()
    rc = abi.RC_EXIT
    for c in range(first, last):
        rc = run_ctas(ctx.ctypes.data, c, c + 1)
        np.subtract(counters, prev, out=rows[c - first])
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
    start = first
    bounds = [start + (num_ctas - start) * j // jobs for j in range(jobs + 1)]
    rows_all = np.zeros((num_ctas - start, counters.size), counters.dtype) if per_cta else None
    children = []
    for j in range(jobs):
        first, last = bounds[j], bounds[j + 1]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # worker
            try:
                os.close(r)
                counters[:] = 0
                rc = run_each(run_ctas, ctx, keep, first, last) if per_cta else run_ctas(ctx.ctypes.data, first, last)
                rows = keep["cta_rows"].tobytes() if per_cta else b""
                payload = pickle.dumps((rc, counters.tobytes(), [int(ctx[i]) for i in _ERR_WORDS], int(ctx[abi.CTX_CTA_LINEAR]), rows))
                with os.fdopen(w, "wb") as f:
                    f.write(struct.pack("<Q", len(payload)) + payload)
            finally:
                os._exit(0)
        os.close(w)
        children.append((pid, r, first))
    rc_out = abi.RC_EXIT
    first_err = None
    total = counters.copy()  # what ran here before (a first CTA run alone) counts too
    for pid, r, first in children:
        with os.fdopen(r, "rb") as f:
            head = f.read(8)
            data = f.read(struct.unpack("<Q", head)[0]) if len(head) == 8 else b""
        os.waitpid(pid, 0)
        if not data:
            rc_out = abi.RC_ERROR
            continue
        rc, cbytes, err, cta, rows = pickle.loads(data)
        total += np.frombuffer(cbytes, dtype=counters.dtype)
        if rows_all is not None and rows:
            part = np.frombuffer(rows, dtype=counters.dtype).reshape(-1, counters.size)
            rows_all[first - start : first - start + len(part)] = part
        if rc != abi.RC_EXIT and (first_err is None or first < first_err[0]):
            first_err = (first, err, cta)
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
