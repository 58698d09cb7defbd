// Histograms of byte values with atomics.
// histogram_global: atomicAdd straight into global memory.
// histogram_shared: per-block private histogram in shared memory (atomicAdd on
// shared), merged into the global histogram after a barrier.
// Exercises: atom.global.add, atom.shared.add, grid-stride loops, barriers.
#define BINS 256

__global__ void histogram_global(const unsigned char *data, int n, unsigned *hist)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&hist[data[i]], 1u);
}

__global__ void histogram_shared(const unsigned char *data, int n, unsigned *hist)
{
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned c = local[b];
        if (c)
            atomicAdd(&hist[b], c);
    }
}
