"""A PyCUDA program: ``SourceModule`` (nvcc) compiles the three kernels of driver_api.py -- a
vector add, a shared-memory tree reduction whose block sums an atomicAdd totals, a histogram of
atomicAdds with an atomicMax -- and it runs them on the same data with the same launches, so its
result lines are driver_api.py's, which an H100 printed (tests/unit/test_python_programs.py).
It checks its results against NumPy and prints PASS."""

import sys

import numpy as np

import pycuda.autoinit  # noqa: F401  (a context on device 0)
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

SOURCE = r"""
__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void block_sum(const int *x, int *partial, unsigned long long *total, int n) {
    __shared__ int s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        atomicAdd(total, (unsigned long long)(long long)s[0]);
    }
}

__global__ void histogram(const unsigned *v, unsigned *bins, unsigned *top, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[v[i] & 15], 1u);
        atomicMax(top, v[i]);
    }
}
"""


def main() -> int:
    mod = SourceModule(SOURCE)  # extern "C" around it, as PyCUDA does by default
    vector_add, block_sum, histogram = (mod.get_function(k) for k in ("vector_add", "block_sum", "histogram"))
    n = 1000

    a = np.arange(n, dtype=np.float32) * 0.5
    b = np.arange(n, dtype=np.float32) * 2.0
    c = np.full(n, np.nan, dtype=np.float32)
    vector_add(cuda.In(a), cuda.In(b), cuda.InOut(c), np.int32(n), grid=((n + 127) // 128, 1), block=(128, 1, 1))
    ok_add = bool(np.array_equal(c, a + b))
    print(f"vector_add: c[1] = {c[1]}, c[999] = {c[999]}, sum = {float(c.sum(dtype=np.float64))}, "
          f"{'ok' if ok_add else 'WRONG'}")

    x = ((np.arange(n) * 37) % 101 - 50).astype(np.int32)
    blocks = (n + 255) // 256
    partial = np.zeros(blocks, dtype=np.int32)
    total = np.zeros(1, dtype=np.uint64)
    block_sum(cuda.In(x), cuda.Out(partial), cuda.InOut(total), np.int32(n), grid=(blocks, 1), block=(256, 1, 1))
    want = [int(x[i * 256:(i + 1) * 256].sum()) for i in range(blocks)]
    total_i = int(total[0].astype(np.int64))
    ok_sum = partial.tolist() == want and total_i == int(x.sum())
    print(f"block_sum: partial = {partial.tolist()}, total = {total_i}, {'ok' if ok_sum else 'WRONG'}")

    v = ((np.arange(n, dtype=np.uint64) * 7919) % 1000).astype(np.uint32)
    bins = np.zeros(16, dtype=np.uint32)
    top = np.zeros(1, dtype=np.uint32)
    histogram(cuda.In(v), cuda.InOut(bins), cuda.InOut(top), np.int32(n), grid=((n + 255) // 256, 1), block=(256, 1, 1))
    ok_hist = bins.tolist() == np.bincount(v & 15, minlength=16).tolist() and int(top[0]) == int(v.max())
    print(f"histogram: bins = {bins.tolist()}, max = {int(top[0])}, {'ok' if ok_hist else 'WRONG'}")

    ok = ok_add and ok_sum and ok_hist
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
