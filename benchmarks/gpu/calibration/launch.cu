// Calibration micro-benchmarks: launch overhead and load imbalance.
extern "C" {

// Empty kernel: the launch and CTA-dispatch cost alone.
__global__ void empty() {}

// CTA b runs base + b * step FMA iterations (triangular work over the grid).
__global__ void triangular(float *out, int base, int step, float a) {
    int iters = base + blockIdx.x * step;
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) x = fmaf(x, a, 1.0f);
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

// CTA 0 runs `long_iters` FMA iterations, every other CTA `iters`.
__global__ void one_long(float *out, int iters, int long_iters, float a) {
    int n = blockIdx.x == 0 ? long_iters : iters;
    float x = threadIdx.x;
    for (int i = 0; i < n; ++i) x = fmaf(x, a, 1.0f);
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

}
