// Calibration micro-benchmarks: arithmetic throughput and latency.  Each thread
// runs `iters` iterations and writes one value, so memory is negligible.
extern "C" {

// FP32 FMA, 8 independent chains (high ILP: throughput-bound).
__global__ void fma_ilp8(float *out, int iters, float a, float b) {
    float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
    float x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
    for (int i = 0; i < iters; ++i) {
        x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
        x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

// FP32 FMA, one dependent chain (latency-bound at low occupancy).
__global__ void fma_chain(float *out, int iters, float a, float b) {
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) x = fmaf(x, a, b);
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

// FP64 FMA, 4 independent chains.
__global__ void dfma_ilp4(double *out, int iters, double a, double b) {
    double x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
    for (int i = 0; i < iters; ++i) {
        x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3;
}

// Integer mad, add and logic, 4 independent chains.
__global__ void int_ops(int *out, int iters, int a, int b) {
    int x0 = threadIdx.x, x1 = x0 ^ 5, x2 = x0 + 7, x3 = x0 | 9;
    for (int i = 0; i < iters; ++i) {
        x0 = x0 * a + b;
        x1 = (x1 + a) ^ b;
        x2 = (x2 & a) | (x2 >> 1);
        x3 = x3 * a + x0;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3;
}

// SFU: __sinf, __expf, rsqrtf (MUFU), 2 chains each.
__global__ void sfu_ops(float *out, int iters, float a) {
    float x = threadIdx.x * 1e-3f, y = x + 0.5f;
    for (int i = 0; i < iters; ++i) {
        x = __sinf(x) + a;
        y = __expf(-y) + a;
        x = rsqrtf(x * x + 1.0f);
        y = rsqrtf(y * y + 1.0f);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}

// Conversions int <-> float, 2 chains.
__global__ void cvt_ops(float *out, int iters, float a) {
    float x = threadIdx.x, y = x + 3.0f;
    for (int i = 0; i < iters; ++i) {
        int ix = __float2int_rn(x * a);
        int iy = __float2int_rz(y + a);
        x = __int2float_rn(ix ^ 3);
        y = __int2float_rz(iy + 1);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}

// IEEE fp32 division (a subroutine with a slow path), 2 chains.
__global__ void fdiv_ops(float *out, int iters, float a) {
    float x = threadIdx.x + 1.0f, y = x + 2.0f;
    for (int i = 0; i < iters; ++i) {
        x = a / (x + 1.0f);
        y = (y + a) / (y + 3.0f);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}

}
