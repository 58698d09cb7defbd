// Half-precision arithmetic with cuda_fp16.h.
// half_scalar: __hadd, __hmul, __hfma, __hsub, comparisons on __half.
// half2_axpy: packed half2 ops (__hmul2, __hadd2, __hfma2), two lanes per thread.
#include <cuda_fp16.h>

__global__ void half_scalar(const __half *a, const __half *b, __half *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half x = a[i], y = b[i];
    __half s = __hadd(x, y);
    __half p = __hmul(x, y);
    __half r = __hfma(s, p, __hsub(x, y));
    out[i] = __hgt(r, __float2half(0.0f)) ? r : __hneg(r);
}

__global__ void half2_axpy(__half2 alpha, const __half2 *x, __half2 *y, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 t = __hmul2(alpha, x[i]);
        y[i] = __hfma2(t, __float2half2_rn(0.5f), __hadd2(y[i], x[i]));
    }
}
