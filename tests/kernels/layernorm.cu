// Layer normalisation over the last dimension, one block per row:
// y = (x - mean) / sqrt(var + eps) * gamma + beta.
// Mean and variance are block reductions: warp shuffles, then one value per
// warp in shared memory, then the first warp reduces those. Uses rsqrtf.
// Launch with blockDim.x a multiple of 32, <= 1024.
__device__ __forceinline__ float warp_reduce(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__device__ float block_reduce(float v, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce(v);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = (threadIdx.x < nwarps) ? scratch[lane] : 0.0f;
    if (warp == 0)
        v = warp_reduce(v);
    if (threadIdx.x == 0)
        scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

__global__ void layernorm(const float *x, const float *gamma, const float *beta,
                          float *y, int cols, float eps)
{
    __shared__ float scratch[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += xr[c];
    float mean = block_reduce(s, scratch) / cols;
    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_reduce(sq, scratch) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
