// Dynamic per-thread stack allocation (PTX alloca, stacksave/stackrestore through CUDA's
// alloca): each thread allocates (tid % 5 + 1) ints, fills them, sums them, and the
// allocation of a loop iteration is freed at its end.  Expected: out[t] = sum over 3
// iterations of sum_{k < n} (k + t + it), n = t % 5 + 1.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void stack_sums(int* out) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    int n = t % 5 + 1;
    int total = 0;
    for (int it = 0; it < 3; it++) {
        int* buf = (int*)alloca(n * sizeof(int));
        for (int k = 0; k < n; k++) buf[k] = k + t + it;
        for (int k = 0; k < n; k++) total += buf[k];
    }
    out[t] = total;
}

int main() {
    const int N = 64;
    int* d;
    int h[N] = {0};
    cudaMalloc(&d, sizeof h);
    stack_sums<<<2, 32>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int bad = 0;
    long sum = 0;
    for (int t = 0; t < N; t++) {
        int n = t % 5 + 1, want = 0;
        for (int it = 0; it < 3; it++)
            for (int k = 0; k < n; k++) want += k + t + it;
        bad += h[t] != want;
        sum += h[t];
    }
    printf("%s\nout[0] = %d, out[7] = %d, out[63] = %d, sum = %ld\n%s\n", cudaGetErrorString(e), h[0], h[7], h[63], sum,
           bad ? "FAIL" : "PASS");
    return bad != 0;
}
