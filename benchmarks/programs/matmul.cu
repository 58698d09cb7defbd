// Tiled single-precision matrix multiply, checked against the CPU: a compute-bound
// whole program for benchmarks/run_programs.py (N from argv[1], default 512).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#define T 16
__global__ void matmul(const float *a, const float *b, float *c, int n) {
    __shared__ float as[T][T], bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += T) {
        as[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
    for (int i = 0; i < n * n; ++i) { a[i] = (i % 7) * 0.25f; b[i] = (i % 5) * 0.5f; }
    float *da, *db, *dc;
    cudaMalloc(&da, bytes); cudaMalloc(&db, bytes); cudaMalloc(&dc, bytes);
    cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice);
    matmul<<<dim3(n / T, n / T), dim3(T, T)>>>(da, db, dc, n);
    cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int s = 0; s < 64; ++s) {
        int i = (s * 7919) % n, j = (s * 104729) % n;
        double ref = 0;
        for (int k = 0; k < n; ++k) ref += (double)a[i * n + k] * b[k * n + j];
        if (fabs(ref - c[i * n + j]) > 1e-3 * fabs(ref) + 1e-3) ++bad;
    }
    printf("matmul %d: %s\n", n, bad ? "FAIL" : "PASS");
    return bad != 0;
}
