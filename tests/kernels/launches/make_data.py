#!/usr/bin/env python3
"""Write the ``.npy`` inputs of the launch specs in this folder.

Most buffers of ``*.toml`` here use the inline init forms of docs/guide.md, "Launch specification"
(``arange``, ``{random = ...}``, ``{value = ...}``); the few that need structure those
forms cannot express (CSR arrays with irregular row lengths, a BFS frontier, per-word
initial values) are ``{file = "data/<name>.npy"}``, made here.  Deterministic: the same
bytes on every run.  ``--check`` fails if a committed file would change.

    python tests/kernels/launches/make_data.py [--check]
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def spmv() -> dict[str, np.ndarray]:
    """300 rows x 256 columns: lengths 0..11 (some empty rows) and one row of 64."""
    rng = np.random.default_rng(401)
    rows, ncols = 300, 256
    lengths = rng.integers(0, 12, rows)
    lengths[rng.choice(rows, 20, replace=False)] = 0
    lengths[7] = 64
    row_ptr = np.zeros(rows + 1, np.int32)
    row_ptr[1:] = np.cumsum(lengths)
    col = np.concatenate([np.sort(rng.choice(ncols, n, replace=False)) for n in lengths]).astype(np.int32)
    return {"spmv_row_ptr": row_ptr, "spmv_col": col}


def bfs() -> dict[str, np.ndarray]:
    """One BFS level on 300 vertices, frontier = level 1.  Every unvisited vertex is
    the target of at most one frontier edge, so which thread sets it (and how the
    threads branch) does not depend on the order the threads run in."""
    rng = np.random.default_rng(502)
    nv, depth = 300, 1
    level = rng.choice(np.array([-1, 0, 1], np.int32), nv, p=[0.55, 0.15, 0.30])
    unvisited = list(rng.permutation(np.flatnonzero(level < 0)))
    visited = np.flatnonzero(level >= 0)
    adj: list[int] = []
    row_ptr = [0]
    for v in range(nv):
        deg = int(rng.integers(0, 9))
        for _ in range(deg):
            if level[v] == depth and unvisited and rng.random() < 0.6:
                adj.append(int(unvisited.pop()))
            elif level[v] == depth:
                adj.append(int(rng.choice(visited)))
            else:
                adj.append(int(rng.integers(0, nv)))
        row_ptr.append(len(adj))
    return {"bfs_row_ptr": np.array(row_ptr, np.int32), "bfs_adj": np.array(adj, np.int32),
            "bfs_level": level.astype(np.int32)}


def atomic_ops() -> dict[str, np.ndarray]:
    """w[0..9] of atomic_ops: min, max, or, and, xor, exch, inc, dec, u64 add (2 words)."""
    w = np.array([0xFFFFFFFF, 50, 0x80000000, 0xFFFFFFFF, 0x12345678, 7, 3, 4, 0xFFFFFFF0, 1], np.uint32)
    return {"atomic_ops_w": w}


def all_arrays() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for f in (spmv, bfs, atomic_ops):
        out.update(f())
    return out


def npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if a file would change")
    args = ap.parse_args()
    stale = []
    DATA.mkdir(exist_ok=True)
    for name, arr in all_arrays().items():
        path = DATA / f"{name}.npy"
        data = npy_bytes(arr)
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(str(path))
        else:
            path.write_bytes(data)
            print(f"{path.relative_to(HERE)}: {arr.dtype} x {arr.size}")
    if stale:
        print("out of date:", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
