// Streams and events: two streams each copy in (cudaMemcpyAsync from pinned memory),
// run the same kernel on the same amount of data and copy out; events around the work.
#include <cstdio>

#define N 512
#define HALF (N / 2)

__global__ void inc(int *a, int by) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] += by;
}

int main() {
    int *h, *d;
    cudaMallocHost(&h, N * sizeof(int));
    cudaMalloc(&d, N * sizeof(int));
    for (int i = 0; i < N; i++) h[i] = i;
    cudaStream_t s[2];
    cudaStreamCreate(&s[0]);
    cudaStreamCreate(&s[1]);
    cudaEvent_t start, stop, done1;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventCreateWithFlags(&done1, cudaEventDisableTiming);
    cudaEventRecord(start, s[0]);
    cudaStreamWaitEvent(s[1], start, 0);  // stream 1's work starts after `start`
    for (int k = 0; k < 2; k++) {
        int off = k * HALF;
        cudaMemcpyAsync(d + off, h + off, HALF * sizeof(int), cudaMemcpyHostToDevice, s[k]);
        inc<<<HALF / 128, 128, 0, s[k]>>>(d + off, 5);
        cudaMemcpyAsync(h + off, d + off, HALF * sizeof(int), cudaMemcpyDeviceToHost, s[k]);
    }
    cudaEventRecord(done1, s[1]);
    cudaStreamWaitEvent(s[0], done1, 0);  // `stop` comes after both streams' work
    cudaEventRecord(stop, s[0]);
    cudaStreamSynchronize(s[0]);
    cudaStreamSynchronize(s[1]);
    cudaEventSynchronize(stop);
    float ms = -1.0f;
    cudaError_t e = cudaEventElapsedTime(&ms, start, stop);
    int bad = e != cudaSuccess;
    for (int i = 0; i < N; i++) bad += h[i] != i + 5;
    printf("elapsed: %s, time > 0: %s\n", cudaGetErrorName(e), ms > 0.0f ? "yes" : "no");
    printf("h[0] = %d, h[%d] = %d\n", h[0], N - 1, h[N - 1]);
    bad += !(ms > 0.0f);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaEventDestroy(done1);
    cudaStreamDestroy(s[0]);
    cudaStreamDestroy(s[1]);
    cudaFreeHost(h);
    cudaFree(d);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
