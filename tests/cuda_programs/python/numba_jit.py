"""A Numba-CUDA program, written as Numba's documentation writes them: ``@cuda.jit`` kernels
that NVVM compiles to PTX and Numba loads and launches through CUDA's driver API.  Three
kernels: a block reduction in shared memory (``cuda.shared.array``, ``cuda.syncthreads``)
whose block sums ``cuda.atomic.add`` totals, a histogram kept in shared memory by
``cuda.atomic.add`` and merged into global memory, and a scaled add on float32 values that
are exact.  Every control-flow decision depends on the thread's index and ``n`` alone, never
on the data, so the per-launch counts are the data's neither.  It checks its own results and
prints PASS; `hypa run -- python numba_jit.py` must print what an H100 prints
(tests/unit/test_python_programs.py).

``python numba_jit.py --ptx DIR`` also writes the PTX Numba loaded for each kernel to
DIR/NAME.ptx and, in DIR/launches.toml, its launches as `hypa profile` and the GPU harness
(benchmarks/gpu/harness.py) take them: the H100 recording's counts are of that PTX.
"""

import os
import re
import sys
import warnings

import numpy as np
from numba import cuda, int32

warnings.filterwarnings("ignore", "Grid size")  # a 4-block grid: low occupancy is no concern here

THREADS = 256
BINS = 16
N = 1000


@cuda.jit
def block_sum(x, partial, total, n):
    s = cuda.shared.array(THREADS, int32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < n else 0
    cuda.syncthreads()
    k = cuda.blockDim.x // 2
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]
        cuda.atomic.add(total, 0, s[0])


@cuda.jit
def histogram(v, bins, n):
    local = cuda.shared.array(BINS, int32)
    t = cuda.threadIdx.x
    if t < BINS:
        local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < n:
        cuda.atomic.add(local, v[i] % BINS, 1)
    cuda.syncthreads()
    if t < BINS:
        cuda.atomic.add(bins, t, local[t])


@cuda.jit
def scaled_add(a, b, out, alpha, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = alpha * a[i] + b[i]


def data():
    """Inputs known without a random generator: integers in -50..50 and 0..999, and float32
    values whose products and sums are exact."""
    i = np.arange(N, dtype=np.int64)
    x = ((i * 37) % 101 - 50).astype(np.int32)
    v = ((i * 7919) % 1000).astype(np.int32)
    a = (i % 64).astype(np.float32) * np.float32(0.5)
    b = (i // 8).astype(np.float32)
    return x, v, a, b


#: each launch: kernel, and its arguments as buffers (name, dtype, count) or scalars; Numba
#: passes a 1-D array as 7 parameters (meminfo, parent, nitems, itemsize, data, shape, stride)
LAUNCHES = [
    ("block_sum", [("x", "int32", N), ("partial", "int32", 4), ("total", "int32", 1), N]),
    ("histogram", [("v", "int32", N), ("bins", "int32", BINS), N]),
    ("scaled_add", [("a", "float32", N), ("b", "float32", N), ("out", "float32", N), 2.0, N]),
]


def write_ptx(where: str) -> None:
    """Each kernel's PTX as compiled for its one launch, and launches.toml."""
    os.makedirs(where, exist_ok=True)
    toml, buffers = [], {}
    for name, args in LAUNCHES:
        (ptx,) = globals()[name].inspect_asm().values()
        with open(os.path.join(where, f"{name}.ptx"), "w") as f:
            f.write(ptx)
        entry = re.search(r"\.entry\s+([\w$]+)\s*\(", ptx).group(1)
        flat = []
        for a in args:
            if isinstance(a, tuple):
                buf, dtype, count = a
                size = np.dtype(dtype).itemsize
                flat += [0, 0, count, size, f'"{buf}"', count, size]
                buffers[buf] = (dtype, count)
            else:
                flat.append(repr(a))
        toml.append(f'[[launch]]\nfile = "{name}.ptx"\nkernel = "{entry}"\ngrid = {(N + THREADS - 1) // THREADS}\n'
                    f'block = {THREADS}\nargs = [{", ".join(map(str, flat))}]\n')
    for buf, (dtype, count) in buffers.items():
        toml.append(f'[buffers.{buf}]\ndtype = "{dtype}"\ncount = {count}\ninit = "arange"\n')
    with open(os.path.join(where, "launches.toml"), "w") as f:
        f.write("# numba_jit.py's launches (tests/cuda_programs/python): counts independent of the data\n\n"
                + "\n".join(toml))


def main() -> int:
    dev = cuda.get_current_device()
    print(f"device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}")
    print(f"compute capability: {'.'.join(map(str, dev.compute_capability))}")
    x, v, a, b = data()
    blocks = (N + THREADS - 1) // THREADS

    d_x = cuda.to_device(x)
    d_partial = cuda.device_array(blocks, dtype=np.int32)
    d_total = cuda.to_device(np.zeros(1, dtype=np.int32))
    block_sum[blocks, THREADS](d_x, d_partial, d_total, np.int32(N))
    partial, total = d_partial.copy_to_host(), d_total.copy_to_host()
    want = [int(x[k * THREADS:(k + 1) * THREADS].sum()) for k in range(blocks)]
    ok = list(partial) == want and int(total[0]) == int(x.sum())
    print(f"block_sum: partial = {[int(p) for p in partial]}, total = {int(total[0])}, {'ok' if ok else 'WRONG'}")

    d_v = cuda.to_device(v)
    d_bins = cuda.to_device(np.zeros(BINS, dtype=np.int32))
    histogram[blocks, THREADS](d_v, d_bins, np.int32(N))
    bins = d_bins.copy_to_host()
    ok2 = list(bins) == list(np.bincount(v % BINS, minlength=BINS))
    print(f"histogram: bins = {[int(c) for c in bins]}, {'ok' if ok2 else 'WRONG'}")

    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_out = cuda.device_array_like(a)
    scaled_add[blocks, THREADS](d_a, d_b, d_out, np.float32(2.0), np.int32(N))
    out = d_out.copy_to_host()
    ok3 = np.array_equal(out, np.float32(2.0) * a + b)
    print(f"scaled_add: out[1] = {out[1]}, out[999] = {out[999]}, sum = {float(out.sum(dtype=np.float64))}, "
          f"{'ok' if ok3 else 'WRONG'}")
    print("PASS" if ok and ok2 and ok3 else "FAIL")
    return 0 if ok and ok2 and ok3 else 1


if __name__ == "__main__":
    rc = main()
    if len(sys.argv) == 3 and sys.argv[1] == "--ptx":
        write_ptx(sys.argv[2])
    sys.exit(rc)
