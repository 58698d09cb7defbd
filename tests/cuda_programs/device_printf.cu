// Device printf: four threads of one block print an int, a float and a string, one
// thread prints %e, %lld and %c; the host prints before and after.
#include <cstdio>

__global__ void hello(int base) {
    int t = threadIdx.x;
    printf("thread %d: value %d, half %.2f, %s\n", t, base + t * t, t * 0.5f, t % 2 ? "odd" : "even");
}

__global__ void one_line(float x, long long big) {
    printf("block %d says %e and %lld (%c%c)\n", blockIdx.x, x, big, 'o', 'k');
}

int main() {
    printf("host: before\n");  // no fflush: device output must keep its place in stdout
    hello<<<1, 4>>>(10);
    cudaError_t e1 = cudaDeviceSynchronize();
    one_line<<<1, 1>>>(1.5e-3f, 1LL << 40);
    cudaError_t e2 = cudaDeviceSynchronize();
    printf("host: after (%s)\n", cudaGetErrorName(e2));
    int bad = e1 != cudaSuccess || e2 != cudaSuccess;
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad;
}
