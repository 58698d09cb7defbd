// Warp-shuffle reduction: each warp sums 32 values with __shfl_down_sync, lane 0
// accumulates the warp's sum into *out with atomicAdd.
// Exercises: shfl.sync.down, a fully unrolled shuffle tree, lane-id branches.
__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__global__ void reduce_warp(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, v);
}

// Same reduction with an integer type and __shfl_xor_sync (butterfly): every
// lane ends with the warp total and writes it.
__global__ void allreduce_warp_xor(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    for (int m = 16; m > 0; m >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    if (i < n)
        out[i] = v;
}
