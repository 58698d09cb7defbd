// Dynamic shared memory (extern __shared__, the launch's third parameter) and a tree
// reduction with __syncthreads: per-block sums, then one block sums the partial sums.
#include <cstdio>

#define BLOCKS 8
#define THREADS 128

__global__ void block_sum(const int *in, int *out) {
    extern __shared__ int s[];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

__global__ void scale_via_shared(const int *in, int *out, int k) {
    extern __shared__ int s[];
    unsigned t = threadIdx.x;
    s[t] = in[t] * k;
    __syncthreads();
    out[t] = s[blockDim.x - 1 - t];  // reversed
}

int main() {
    static int h[BLOCKS * THREADS];
    long expect = 0;
    for (int i = 0; i < BLOCKS * THREADS; i++) {
        h[i] = i % 17;
        expect += h[i];
    }
    int *in, *part, *total, *rev;
    cudaMalloc(&in, sizeof h);
    cudaMalloc(&part, BLOCKS * sizeof(int));
    cudaMalloc(&total, sizeof(int));
    cudaMalloc(&rev, BLOCKS * sizeof(int));
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    block_sum<<<BLOCKS, THREADS, THREADS * sizeof(int)>>>(in, part);
    block_sum<<<1, BLOCKS, BLOCKS * sizeof(int)>>>(part, total);
    scale_via_shared<<<1, BLOCKS, BLOCKS * sizeof(int)>>>(part, rev, 2);
    int got, hp[BLOCKS], hr[BLOCKS];
    cudaMemcpy(&got, total, sizeof got, cudaMemcpyDeviceToHost);
    cudaMemcpy(hp, part, sizeof hp, cudaMemcpyDeviceToHost);
    cudaMemcpy(hr, rev, sizeof hr, cudaMemcpyDeviceToHost);
    int bad = got != expect;
    for (int b = 0; b < BLOCKS; b++) {
        long e = 0;
        for (int t = 0; t < THREADS; t++) e += h[b * THREADS + t];
        bad += hp[b] != e;
        bad += hr[b] != 2 * hp[BLOCKS - 1 - b];
    }
    printf("partial[0] = %d, partial[7] = %d\n", hp[0], hp[7]);
    printf("total = %d (expected %ld)\n", got, expect);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
