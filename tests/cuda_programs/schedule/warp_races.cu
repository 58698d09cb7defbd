// Two races between the warps of a CTA that real benchmarks have and a GPU never loses, because
// its warps advance together (hypa run's interleaved schedule; --schedule warp runs each warp to
// its barrier or its end, and both races then change the results):
// - rows: PolyBench/GPU mvt's shape: a 1-D problem launched with 32x8 blocks, so the 8 warps of a
//   CTA compute the same rows, each reading x[i] once and storing its running sum every iteration;
// - chunks: Parboil tpacf's shape: each iteration refills shared memory and reads another warp's
//   part after a barrier, with no barrier before the next refill.
#include <cstdio>

#define N 192
#define CHUNKS 6

__global__ void rows(int n, const float *a, const float *y, float *x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j < n; j++) x[i] += a[i * n + j] * y[j];
}

__global__ void chunks(const int *in, int *out, int nchunks) {
    __shared__ int s[256];
    int t = threadIdx.x, acc = 0;
    for (int c = 0; c < nchunks; c++) {
        s[t] = in[(blockIdx.x * nchunks + c) * 256 + t];
        __syncthreads();
        acc += s[(t + 32) % 256] * (c + 1);
    }
    out[blockIdx.x * 256 + t] = acc;
}

int main() {
    static float a[N * N], y[N], x[N];
    for (int i = 0; i < N; i++) {
        y[i] = i % 5;
        x[i] = 1;
        for (int j = 0; j < N; j++) a[i * N + j] = (i + j) % 7;
    }
    float *da, *dy, *dx;
    cudaMalloc(&da, sizeof a);
    cudaMalloc(&dy, sizeof y);
    cudaMalloc(&dx, sizeof x);
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, sizeof y, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice);
    rows<<<N / 32, dim3(32, 8)>>>(N, da, dy, dx);
    cudaMemcpy(x, dx, sizeof x, cudaMemcpyDeviceToHost);
    int bad_rows = 0;
    for (int i = 0; i < N; i++) {
        float e = 1;
        for (int j = 0; j < N; j++) e += a[i * N + j] * y[j];
        bad_rows += x[i] != e;
    }
    printf("rows: x[0] = %.0f, x[%d] = %.0f, %d of %d wrong\n", x[0], N - 1, x[N - 1], bad_rows, N);

    const int blocks = 2;
    static int in[blocks * CHUNKS * 256], out[blocks * 256];
    for (int k = 0; k < blocks * CHUNKS * 256; k++) in[k] = (k * 37) % 101;
    int *din, *dout;
    cudaMalloc(&din, sizeof in);
    cudaMalloc(&dout, sizeof out);
    cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice);
    chunks<<<blocks, 256>>>(din, dout, CHUNKS);
    cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost);
    int bad_chunks = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < 256; t++) {
            int e = 0;
            for (int c = 0; c < CHUNKS; c++) e += in[(b * CHUNKS + c) * 256 + (t + 32) % 256] * (c + 1);
            bad_chunks += out[b * 256 + t] != e;
        }
    printf("chunks: out[0] = %d, out[511] = %d, %d of %d wrong\n", out[0], out[511], bad_chunks, blocks * 256);
    printf(bad_rows || bad_chunks ? "FAIL\n" : "PASS\n");
    return 0;
}
