"""A cuda-python program on CUDA's driver API, written as NVIDIA's cuda-python examples are:
NVRTC compiles CUDA C++ to PTX, cuModuleLoadDataEx loads it, cuLaunchKernel runs it with
kernelParams.  Three kernels: a vector add, a shared-memory tree reduction whose block sums
an atomicAdd totals, and a histogram of atomicAdds.  It checks its own results and prints
PASS; `hypa run -- python driver_api.py` must print what an H100 prints
(tests/unit/test_python_programs.py)."""

import sys

import numpy as np
from cuda.bindings import driver, nvrtc

SOURCE = r"""
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void block_sum(const int *x, int *partial, unsigned long long *total, int n) {
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

extern "C" __global__ void histogram(const unsigned *v, unsigned *bins, unsigned *top, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[v[i] & 15], 1u);
        atomicMax(top, v[i]);
    }
}
"""


def check(result):
    """cuda-python returns (error, values...): stop on an error, naming it."""
    err, *values = result
    if isinstance(err, driver.CUresult) and err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        sys.exit(f"CUDA error {name.decode()}: {text.decode()}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        sys.exit(f"NVRTC error {err}")
    return values[0] if len(values) == 1 else values


def compile_ptx(major: int, minor: int) -> bytes:
    prog = check(nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"kernels.cu", 0, [], []))
    opts = [f"--gpu-architecture=compute_{major}{minor}".encode()]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        sys.exit(log.decode())
    size = check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    check(nvrtc.nvrtcDestroyProgram(prog))
    return ptx


def params(*args):
    """kernelParams: an array of pointers, one to each argument's value."""
    holders = [np.array([a], dtype=t) for a, t in args]
    return holders, np.array([h.ctypes.data for h in holders], dtype=np.uint64)


def main() -> None:
    check(driver.cuInit(0))
    print("devices:", check(driver.cuDeviceGetCount()))
    dev = check(driver.cuDeviceGet(0))
    print("name:", check(driver.cuDeviceGetName(64, dev)).split(b"\0")[0].decode())
    A = driver.CUdevice_attribute
    major = check(driver.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(driver.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    sms = check(driver.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev))
    warp = check(driver.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev))
    print(f"compute capability {major}.{minor}, {sms} SMs, warp size {warp}")
    print("driver version >= 13000:", check(driver.cuDriverGetVersion()) >= 13000)
    ctx = check(driver.cuCtxCreate(None, 0, dev))
    print("context current:", int(check(driver.cuCtxGetCurrent())) == int(ctx))

    ptx = compile_ptx(major, minor)
    module = check(driver.cuModuleLoadDataEx(ptx, 0, [], []))
    vector_add = check(driver.cuModuleGetFunction(module, b"vector_add"))
    block_sum = check(driver.cuModuleGetFunction(module, b"block_sum"))
    histogram = check(driver.cuModuleGetFunction(module, b"histogram"))
    err, = driver.cuModuleGetFunction(module, b"no_such_kernel")[:1]
    print("missing kernel:", driver.cuGetErrorName(err)[1].decode(), "-", driver.cuGetErrorString(err)[1].decode())
    print("vector_add max threads per block:", check(driver.cuFuncGetAttribute(
        driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, vector_add)))

    stream = check(driver.cuStreamCreate(0))
    start, stop = check(driver.cuEventCreate(0)), check(driver.cuEventCreate(0))

    # vector add: 1000 floats, 8 blocks of 128 threads
    n = 1000
    a = np.arange(n, dtype=np.float32) * 0.5
    b = np.arange(n, dtype=np.float32) * 2.0
    c = np.zeros(n, dtype=np.float32)
    da, db, dc = (check(driver.cuMemAlloc(x.nbytes)) for x in (a, b, c))
    check(driver.cuMemcpyHtoD(da, a.ctypes.data, a.nbytes))
    check(driver.cuMemcpyHtoDAsync(db, b.ctypes.data, b.nbytes, stream))
    check(driver.cuMemsetD32(dc, 0x7FC00000, n))  # NaN everywhere: an unwritten element shows
    _keep, args = params((int(da), np.uint64), (int(db), np.uint64), (int(dc), np.uint64), (n, np.int32))
    check(driver.cuEventRecord(start, stream))
    check(driver.cuLaunchKernel(vector_add, (n + 127) // 128, 1, 1, 128, 1, 1, 0, stream, args.ctypes.data, 0))
    check(driver.cuEventRecord(stop, stream))
    check(driver.cuStreamSynchronize(stream))
    check(driver.cuEventSynchronize(stop))
    print("kernel time > 0:", check(driver.cuEventElapsedTime(start, stop)) > 0)
    check(driver.cuMemcpyDtoH(c.ctypes.data, dc, c.nbytes))
    ok_add = bool(np.array_equal(c, a + b))
    print(f"vector_add: c[1] = {c[1]}, c[999] = {c[999]}, sum = {float(c.sum(dtype=np.float64))}, "
          f"{'ok' if ok_add else 'WRONG'}")

    # shared-memory reduction: 1000 ints, 4 blocks of 256 threads, block sums totalled by atomicAdd
    x = ((np.arange(n) * 37) % 101 - 50).astype(np.int32)
    blocks = (n + 255) // 256
    dx = check(driver.cuMemAlloc(x.nbytes))
    dpartial = check(driver.cuMemAlloc(4 * blocks))
    dtotal = check(driver.cuMemAlloc(8))
    check(driver.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
    check(driver.cuMemsetD8(dtotal, 0, 8))
    _keep2, args2 = params((int(dx), np.uint64), (int(dpartial), np.uint64), (int(dtotal), np.uint64), (n, np.int32))
    check(driver.cuLaunchKernel(block_sum, blocks, 1, 1, 256, 1, 1, 0, 0, args2.ctypes.data, 0))
    check(driver.cuCtxSynchronize())
    partial = np.zeros(blocks, dtype=np.int32)
    total = np.zeros(1, dtype=np.uint64)
    check(driver.cuMemcpyDtoH(partial.ctypes.data, dpartial, partial.nbytes))
    check(driver.cuMemcpyDtoH(total.ctypes.data, dtotal, 8))
    want = [int(x[i * 256:(i + 1) * 256].sum()) for i in range(blocks)]
    total_i = int(total[0].astype(np.int64))
    ok_sum = partial.tolist() == want and total_i == int(x.sum())
    print(f"block_sum: partial = {partial.tolist()}, total = {total_i}, {'ok' if ok_sum else 'WRONG'}")

    # histogram: 1000 values into 16 bins with atomicAdd, the largest with atomicMax
    v = ((np.arange(n, dtype=np.uint64) * 7919) % 1000).astype(np.uint32)
    dv = check(driver.cuMemAlloc(v.nbytes))
    dbins = check(driver.cuMemAlloc(16 * 4))
    dtop = check(driver.cuMemAlloc(4))
    check(driver.cuMemcpyHtoD(dv, v.ctypes.data, v.nbytes))
    check(driver.cuMemsetD32(dbins, 0, 16))
    check(driver.cuMemsetD32(dtop, 0, 1))
    _keep3, args3 = params((int(dv), np.uint64), (int(dbins), np.uint64), (int(dtop), np.uint64), (n, np.int32))
    check(driver.cuLaunchKernel(histogram, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args3.ctypes.data, 0))
    check(driver.cuStreamSynchronize(stream))
    bins = np.zeros(16, dtype=np.uint32)
    top = np.zeros(1, dtype=np.uint32)
    check(driver.cuMemcpyDtoHAsync(bins.ctypes.data, dbins, bins.nbytes, stream))
    check(driver.cuMemcpyDtoHAsync(top.ctypes.data, dtop, 4, stream))
    check(driver.cuStreamSynchronize(stream))
    ok_hist = bins.tolist() == np.bincount(v & 15, minlength=16).tolist() and int(top[0]) == int(v.max())
    print(f"histogram: bins = {bins.tolist()}, max = {int(top[0])}, {'ok' if ok_hist else 'WRONG'}")

    for p in (da, db, dc, dx, dpartial, dtotal, dv, dbins, dtop):
        check(driver.cuMemFree(p))
    check(driver.cuEventDestroy(start))
    check(driver.cuEventDestroy(stop))
    check(driver.cuStreamDestroy(stream))
    check(driver.cuModuleUnload(module))
    check(driver.cuCtxDestroy(ctx))
    print("PASS" if ok_add and ok_sum and ok_hist else "FAIL")
    sys.exit(0 if ok_add and ok_sum and ok_hist else 1)


if __name__ == "__main__":
    main()
