// __constant__ and __device__ variables: cudaMemcpyToSymbol (with and without an offset,
// from the host and from device memory, and between launches), cudaMemcpyFromSymbol,
// cudaGetSymbolAddress, and a __device__ variable with an initializer.
#include <cstdio>

#define N 64

__constant__ float coef[4];
__device__ int counter;
__device__ float table[8];
__device__ int base = 100;

__global__ void poly(const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    y[i] = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]));
    atomicAdd(&counter, 1);
}

__global__ void fill_table() { table[threadIdx.x] = base + threadIdx.x * 0.5f; }

int main() {
    const float c[4] = {1.0f, 2.0f, 0.0f, 0.0f};
    const float c23[2] = {3.0f, 1.0f};  // coef[2], coef[3], written with an offset
    const int zero = 0;
    cudaMemcpyToSymbol(coef, c, sizeof c);
    cudaMemcpyToSymbol(coef, c23, sizeof c23, 2 * sizeof(float));
    cudaMemcpyToSymbol(counter, &zero, sizeof zero);
    float hx[N], hy[N];
    for (int i = 0; i < N; i++) hx[i] = (float)(i % 4);
    float *x, *y;
    cudaMalloc(&x, sizeof hx);
    cudaMalloc(&y, sizeof hy);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    poly<<<2, 32>>>(x, y);
    poly<<<2, 32>>>(x, y);
    cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
    // new constants between launches, copied from device memory: coef[0] = 10
    const float ten = 10.0f;
    float *dten;
    cudaMalloc(&dten, sizeof ten);
    cudaMemcpy(dten, &ten, sizeof ten, cudaMemcpyHostToDevice);
    cudaMemcpyToSymbol(coef, dten, sizeof ten, 0, cudaMemcpyDeviceToDevice);
    float hy2[N];
    poly<<<2, 32>>>(x, y);
    cudaMemcpy(hy2, y, sizeof hy2, cudaMemcpyDeviceToHost);
    int count = -1;
    cudaMemcpyFromSymbol(&count, counter, sizeof count);
    float back[4];
    cudaMemcpyFromSymbol(back, coef, sizeof back);

    fill_table<<<1, 8>>>();
    float *tp = 0;
    cudaError_t e = cudaGetSymbolAddress((void **)&tp, table);
    float ht[8];
    cudaMemcpy(ht, tp, sizeof ht, cudaMemcpyDeviceToHost);

    int bad = e != cudaSuccess;
    for (int i = 0; i < N; i++) {
        float v = hx[i];
        if (hy[i] != 1.0f + v * (2.0f + v * (3.0f + v))) bad++;
        if (hy2[i] != hy[i] + 9.0f) bad++;
    }
    for (int i = 0; i < 8; i++) bad += ht[i] != 100 + i * 0.5f;
    bad += count != 3 * N;
    bad += back[2] != 3.0f || back[3] != 1.0f;
    printf("y[0..3] = %g %g %g %g\n", hy[0], hy[1], hy[2], hy[3]);
    printf("after coef[0] = 10: %g %g %g %g\n", hy2[0], hy2[1], hy2[2], hy2[3]);
    printf("counter = %d\n", count);
    printf("coef = %g %g %g %g\n", back[0], back[1], back[2], back[3]);
    printf("table[7] = %g\n", ht[7]);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
