// Two kernels with a missing __syncthreads(), for `hypa run --racecheck`
// (tests/unit/test_racecheck.py asserts the report; hazards counted by hand there).
#include <cstdio>

// Each thread writes s[t], then reads its neighbour's s[(t + 1) % n]: the barrier between
// the write and the read is missing.
__global__ void neighbour(const int *in, int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    // __syncthreads();  (missing)
    out[t] = s[(t + 1) % blockDim.x];
}

// A histogram per round: threads 0..7 clear the bins, every thread adds one sample, and
// thread 0 copies the bins out.  The barrier at the end of a round is missing: the next
// round's clearing races with thread 0's copy.
__global__ void histogram(const unsigned *samples, unsigned *out, int rounds) {
    __shared__ unsigned bins[8];
    for (int r = 0; r < rounds; ++r) {
        if (threadIdx.x < 8) bins[threadIdx.x] = 0;
        __syncthreads();
        atomicAdd(&bins[samples[r * blockDim.x + threadIdx.x] % 8], 1u);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int b = 0; b < 8; ++b) out[r * 8 + b] = bins[b];
        // __syncthreads();  (missing)
    }
}

int main() {
    const int n = 64, rounds = 3;
    int h_in[n], *d_in, *d_out;
    unsigned h_samples[rounds * n], *d_samples, *d_bins, h_bins[rounds * 8];
    for (int i = 0; i < n; ++i) h_in[i] = i;
    for (int i = 0; i < rounds * n; ++i) h_samples[i] = i;
    cudaMalloc(&d_in, sizeof h_in);
    cudaMalloc(&d_out, sizeof h_in);
    cudaMalloc(&d_samples, sizeof h_samples);
    cudaMalloc(&d_bins, sizeof h_bins);
    cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    cudaMemcpy(d_samples, h_samples, sizeof h_samples, cudaMemcpyHostToDevice);
    neighbour<<<1, n>>>(d_in, d_out);
    histogram<<<1, n>>>(d_samples, d_bins, rounds);
    cudaMemcpy(h_bins, d_bins, sizeof h_bins, cudaMemcpyDeviceToHost);
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
