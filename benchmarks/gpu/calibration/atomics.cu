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

extern "C" {

// Plain stores to one address, as a graph search's "something changed" flag takes them: thread
// i < n stores 1 to its CTA's flag (flag[(blockIdx.x % nflags) * 32], a 128-byte line each) when
// i % every == 0 (every = 1: all lanes, one request a warp; 32: one lane a warp; 64: every
// other warp).  The L2 takes the requests to one sector one after the other.
__global__ void flag_store(int *flag, int every, int nflags, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i % every == 0) flag[(blockIdx.x % nflags) * 32] = 1;
}

}
