// Calibration micro-benchmarks: atomics.
extern "C" {

// atomicAdd at counters[(i / per) % ncounters] for i over the grid, iters times:
// per=1 distinct addresses, per=32 one address per warp, ncounters=1 one address.
__global__ void atomic_add(float *counters, int ncounters, int per, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float *p = counters + (i / per) % ncounters;
    for (int k = 0; k < iters; ++k) atomicAdd(p, 1.0f);
}

// Shared-memory atomicAdd into `bins` (<= 1024) bins, written out per CTA.
__global__ void smem_atomic(int *out, int bins, int iters) {
    __shared__ int h[1024];
    for (int i = threadIdx.x; i < bins; i += blockDim.x) h[i] = 0;
    __syncthreads();
    int b = (threadIdx.x * 7) % bins;
    for (int k = 0; k < iters; ++k) {
        atomicAdd(&h[b], 1);
        b = (b + 1) % bins;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < bins; i += blockDim.x) out[blockIdx.x * bins + i] = h[i];
}

}
