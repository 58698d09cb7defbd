// Block-level tree reduction in shared memory (sum of floats).
// Exercises: __syncthreads inside a loop whose trip count depends on blockDim,
// a divergent `if (tid < s)` per level, one partial sum per block.
// Launch with a power-of-two block size <= 1024.
__global__ void reduce_shared(const float *in, float *block_sums, int n)
{
    __shared__ float buf[1024];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    buf[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        block_sums[blockIdx.x] = buf[0];
}
