// A call hypa's runtime does not provide (CUDA IPC: memory handles shared between
// processes): the program is stopped with a one-line error and exit status 1, after its
// earlier output.
#include <cstdio>

__global__ void noop(int *a) { a[threadIdx.x] = 0; }

int main() {
    int *a;
    cudaMalloc(&a, 32 * sizeof(int));
    noop<<<1, 32>>>(a);
    cudaDeviceSynchronize();
    printf("before cudaIpcGetMemHandle\n");
    fflush(stdout);
    cudaIpcMemHandle_t h;
    cudaError_t e = cudaIpcGetMemHandle(&h, a);
    printf("after cudaIpcGetMemHandle: %s\n", cudaGetErrorName(e));
    printf("FAIL\n");
    return 0;
}
