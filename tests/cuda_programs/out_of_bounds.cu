// An out-of-bounds store far past a small allocation: the runtime names the error, and
// cudaDeviceSynchronize and later calls return cudaErrorIllegalAddress.
#include <cstdio>

__global__ void ok_kernel(int *a) { a[threadIdx.x] = threadIdx.x; }

__global__ void bad_kernel(int *a, long long far) {
    int i = threadIdx.x;
    if (i == 3) a[far] = 1;  // far past the end
    else a[i] = 2;
}

int main() {
    int *a;
    cudaMalloc(&a, 32 * sizeof(int));
    ok_kernel<<<1, 32>>>(a);
    cudaError_t e0 = cudaDeviceSynchronize();
    printf("first kernel: %s\n", cudaGetErrorName(e0));
    fflush(stdout);
    bad_kernel<<<1, 32>>>(a, 1LL << 32);
    cudaError_t e1 = cudaDeviceSynchronize();
    printf("cudaDeviceSynchronize: %s\n", cudaGetErrorName(e1));
    int h[32];
    cudaError_t e2 = cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
    printf("later cudaMemcpy: %s\n", cudaGetErrorName(e2));
    int ok = e0 == cudaSuccess && e1 == cudaErrorIllegalAddress && e2 == cudaErrorIllegalAddress;
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
