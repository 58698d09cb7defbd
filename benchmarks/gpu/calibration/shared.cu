// Calibration micro-benchmarks: shared memory and barriers (block of 256 threads).
extern "C" {

// Shared-memory reads with a word stride: stride 1 is conflict-free, stride s
// (even) gives an s-way bank conflict up to 32.
__global__ void smem_stride(float *out, int iters, int stride) {
    __shared__ float buf[256 * 32];
    for (int i = threadIdx.x; i < 256 * 32; i += blockDim.x) buf[i] = i;
    __syncthreads();
    int idx = (threadIdx.x * stride) & (256 * 32 - 1);
    float s = 0.0f;
    for (int i = 0; i < iters; ++i) {
        s += buf[idx];
        idx = (idx + 32 * stride) & (256 * 32 - 1);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// A loop with __syncthreads() every iteration (neighbour exchange through shared memory).
__global__ void smem_sync(float *out, int iters) {
    __shared__ float buf[1024];
    float v = threadIdx.x;
    for (int i = 0; i < iters; ++i) {
        buf[threadIdx.x] = v;
        __syncthreads();
        v += buf[(threadIdx.x + 1) % blockDim.x];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

}
