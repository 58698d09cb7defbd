"""A CuPy program: a ``RawKernel`` (CUDA C++ compiled by NVRTC), an ``ElementwiseKernel`` and a
``ReductionKernel`` (CuPy writes their CUDA C++), on integers, so every result is exact.
Its arrays come from the host (``cupy.asarray``) or ``cupy.empty``, so CuPy launches no kernel of
its own: the program's three launches are its three kernels.  It checks its results against
NumPy and prints PASS; `hypa run -- python cupy_kernels.py` must print what an H100 prints
(tests/unit/test_python_programs.py)."""

import sys

import numpy as np

import cupy as cp

N = 1000

RAW = cp.RawKernel(r"""
extern "C" __global__ void axpy_mod(const int *x, const int *y, int *out, int a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (a * x[i] + y[i]) % 97;
}
""", "axpy_mod")

SQUARED_DIFF = cp.ElementwiseKernel("int32 x, int32 y", "int32 z", "z = (x - y) * (x - y)", "squared_diff")

L1_NORM = cp.ReductionKernel("int32 x", "int64 y", "x < 0 ? -x : x", "a + b", "y = a", "0", "l1_norm")


def main() -> int:
    hx = np.arange(N, dtype=np.int32)
    hy = (np.arange(N, dtype=np.int32) * 7) % 13 - 6
    x, y = cp.asarray(hx), cp.asarray(hy)
    out = cp.empty(N, dtype=cp.int32)
    RAW(((N + 127) // 128,), (128,), (x, y, out, np.int32(3), np.int32(N)))
    got = out.get()
    want = np.fmod(3 * hx + hy, 97)  # C's %: the sign of the dividend
    print("axpy_mod: first", got[:6].tolist(), "sum", int(got.sum()))

    z = cp.empty(N, dtype=cp.int32)
    SQUARED_DIFF(x, y, z)
    gz = z.get()
    print("squared_diff: last", gz[-4:].tolist(), "sum", int(gz.sum(dtype=np.int64)))

    d = cp.asarray(hy * 5 - hx % 11)
    l1 = int(L1_NORM(d).get())
    print("l1_norm:", l1)

    ok = (np.array_equal(got, want) and np.array_equal(gz, (hx - hy) ** 2)
          and l1 == int(np.abs(hy * 5 - hx % 11).sum()))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
