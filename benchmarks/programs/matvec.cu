// y = A^T x over an n x n matrix, each thread one column: every iteration reads A and then x,
// two allocations alternately (PolyBench atax/bicg's pattern).  A memory-bound whole program
// for benchmarks/run_programs.py --flat-ratio (n from argv[1], default 1024; launches from
// argv[2], default 1), checked against the CPU.
#include <cstdio>
#include <cstdlib>
#include <cmath>
__global__ void matvec(const float *a, const float *x, float *y, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= n) return;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += a[(size_t)j * n + col] * x[j];
    y[col] = acc;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024, reps = argc > 2 ? atoi(argv[2]) : 1;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a = (float *)malloc(bytes), *x = (float *)malloc(n * sizeof(float)), *y = (float *)malloc(n * sizeof(float));
    for (size_t i = 0; i < (size_t)n * n; ++i) a[i] = (i % 7) * 0.25f;
    for (int i = 0; i < n; ++i) x[i] = (i % 5) * 0.5f;
    float *da, *dx, *dy;
    cudaMalloc(&da, bytes); cudaMalloc(&dx, n * sizeof(float)); cudaMalloc(&dy, n * sizeof(float));
    cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice);
    for (int r = 0; r < reps; ++r) matvec<<<(n + 127) / 128, 128>>>(da, dx, dy, n);
    cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int c = 0; c < n; ++c) {
        double ref = 0;
        for (int j = 0; j < n; ++j) ref += (double)a[(size_t)j * n + c] * x[j];
        if (fabs(ref - y[c]) > 1e-3 * fabs(ref) + 1e-3) ++bad;
    }
    printf("matvec %d: %s\n", n, bad ? "FAIL" : "PASS");
    return bad != 0;
}
