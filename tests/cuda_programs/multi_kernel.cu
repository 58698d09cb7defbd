// Several kernels in one program: fill (launched twice with identical work), saxpy,
// square, odd_even (an if/else the compiler turns into selp, so no branch) and diverge
// (a branch taken by one thread in four: one divergent branch per warp).  Every launch
// covers exactly N threads.
#include <cstdio>

#define N 1024
#define THREADS 256

__global__ void fill(float *x, float v) { x[blockIdx.x * blockDim.x + threadIdx.x] = v; }

__global__ void saxpy(float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];
}

__global__ void square(float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = y[i] * y[i];
}

__global__ void odd_even(int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i & 1) out[i] = 3 * i;
    else out[i] = -i;
}

__global__ void diverge(const int *in, int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int acc = i;
    if (threadIdx.x % 4 == 0) {
        for (int k = 0; k < 3; k++) acc = acc * 7 + in[i + k];
    }
    out[i] = acc;
}

int main() {
    float *x, *y;
    int *z, *w;
    cudaMalloc(&x, N * sizeof(float));
    cudaMalloc(&y, N * sizeof(float));
    cudaMalloc(&z, N * sizeof(int));
    cudaMalloc(&w, N * sizeof(int));
    fill<<<N / THREADS, THREADS>>>(x, 1.0f);
    fill<<<N / THREADS, THREADS>>>(y, 2.0f);
    saxpy<<<N / THREADS, THREADS>>>(3.0f, x, y);
    square<<<N / THREADS, THREADS>>>(y);
    odd_even<<<N / THREADS, THREADS>>>(z);
    diverge<<<N / THREADS, THREADS>>>(z, w);
    static float hy[N];
    static int hz[N], hw[N];
    cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
    cudaMemcpy(hz, z, sizeof hz, cudaMemcpyDeviceToHost);
    cudaMemcpy(hw, w, sizeof hw, cudaMemcpyDeviceToHost);
    double sum = 0;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        sum += hy[i];
        if (hy[i] != 25.0f) bad++;
        if (hz[i] != ((i & 1) ? 3 * i : -i)) bad++;
        int acc = i;
        if (i % 4 == 0)
            for (int k = 0; k < 3; k++) acc = acc * 7 + hz[i + k];
        if (hw[i] != acc) bad++;
    }
    printf("sum of y = %.1f\n", sum);
    printf("z[7] = %d, z[8] = %d, w[4] = %d, w[5] = %d\n", hz[7], hz[8], hw[4], hw[5]);
    cudaFree(x);
    cudaFree(y);
    cudaFree(z);
    cudaFree(w);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
