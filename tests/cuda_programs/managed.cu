// Managed memory: cudaMallocManaged buffers the host writes and reads directly, and a
// __managed__ variable.
#include <cstdio>

#define N 256

__managed__ int total;

__global__ void triple(int *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] *= 3;
    atomicAdd(&total, a[i]);
}

int main() {
    int *a;
    cudaMallocManaged(&a, N * sizeof(int));
    for (int i = 0; i < N; i++) a[i] = i;
    total = 0;
    triple<<<N / 64, 64>>>(a);
    cudaError_t e = cudaDeviceSynchronize();
    int bad = e != cudaSuccess;
    long expect = 0;
    for (int i = 0; i < N; i++) {
        bad += a[i] != 3 * i;
        expect += 3 * i;
    }
    bad += total != expect;
    printf("a[1] = %d, a[255] = %d, total = %d\n", a[1], a[N - 1], total);
    cudaFree(a);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
