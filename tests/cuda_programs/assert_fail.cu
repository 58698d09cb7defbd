// A device assert() that fails in one thread: cudaDeviceSynchronize returns
// cudaErrorAssert, and so do later runtime calls (the error is sticky).
#include <cassert>
#include <cstdio>

#define N 64

__global__ void check_nonneg(const int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(a[i] >= 0);
}

int main() {
    int h[N];
    for (int i = 0; i < N; i++) h[i] = i == 37 ? -5 : i;
    int *d;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    printf("launching\n");
    fflush(stdout);
    check_nonneg<<<2, 32>>>(d);
    cudaError_t sync = cudaDeviceSynchronize();
    printf("cudaDeviceSynchronize: %s\n", cudaGetErrorName(sync));
    int *other = 0;
    cudaError_t later = cudaMalloc(&other, 16);
    printf("later cudaMalloc: %s\n", cudaGetErrorName(later));
    printf("cudaGetLastError: %s\n", cudaGetErrorName(cudaGetLastError()));
    int ok = sync == cudaErrorAssert && later == cudaErrorAssert;
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
