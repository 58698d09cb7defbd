// Clock waits as cuda-samples' clock_block (simpleHyperQ, concurrentKernels) does them: spin on
// clock() until a number of cycles passed, sized from cudaDevAttrClockRate (kHz), on several
// streams; and a clock64() wait that reports the cycles it saw.  Under hypa run they end
// because the clock advances with the instructions a warp executes (docs/design.md, "Execution model": clocks).
#include <cstdio>

__global__ void clock_block(clock_t *d_o, clock_t clock_count) {
    unsigned int start_clock = (unsigned int)clock();
    clock_t clock_offset = 0;
    while (clock_offset < clock_count) {
        unsigned int end_clock = (unsigned int)clock();
        clock_offset = (clock_t)(end_clock - start_clock);
    }
    d_o[0] = clock_offset;
}

__global__ void wait64(long long *d_o, long long cycles) {
    long long start = clock64();
    long long now = start;
    while (now - start < cycles) now = clock64();
    if (threadIdx.x == 0) d_o[blockIdx.x] = now - start;
}

int main() {
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    clock_t quarter_ms = (clock_t)(khz / 4);  // cycles in 0.25 ms
    clock_t *d_o;
    long long *d_64;
    cudaMalloc(&d_o, 4 * sizeof(clock_t));
    cudaMalloc(&d_64, 2 * sizeof(long long));
    cudaStream_t s[4];
    for (int i = 0; i < 4; i++) cudaStreamCreate(&s[i]);
    for (int i = 0; i < 4; i++) clock_block<<<1, 1, 0, s[i]>>>(d_o + i, quarter_ms);
    wait64<<<2, 32>>>(d_64, 100000);
    cudaError_t e = cudaDeviceSynchronize();
    clock_t h[4];
    long long h64[2];
    cudaMemcpy(h, d_o, sizeof h, cudaMemcpyDeviceToHost);
    cudaMemcpy(h64, d_64, sizeof h64, cudaMemcpyDeviceToHost);
    int ok = e == cudaSuccess && khz > 0;
    for (int i = 0; i < 4; i++) ok = ok && h[i] >= quarter_ms;
    for (int i = 0; i < 2; i++) ok = ok && h64[i] >= 100000;
    printf("clock rate: %d kHz, waits of %ld cycles: %s\n", khz, (long)quarter_ms, ok ? "done" : "short");
    printf("%s\n", ok ? "PASS" : "FAIL");
    for (int i = 0; i < 4; i++) cudaStreamDestroy(s[i]);
    return ok ? 0 : 1;
}
