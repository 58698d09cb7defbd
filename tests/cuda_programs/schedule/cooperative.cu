// Cooperative launches (cudaLaunchCooperativeKernel) whose CTAs wait for each other at
// cooperative groups' grid.sync(): a Jacobi-style sweep that swaps two arrays between grid
// barriers, and a two-phase reduction (partial sums, a grid barrier, one CTA adds them up).
// A grid larger than the GPU holds at once is refused.  A plain launch of a kernel that syncs
// the grid works on an H100 too when its CTAs fit on the GPU at once (the driver gives every
// launch a grid workspace), and never finishes when they do not.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void sweep(float *a, float *b, int n, int steps) {
    cg::grid_group g = cg::this_grid();
    for (int s = 0; s < steps; s++) {
        for (int i = g.thread_rank(); i < n; i += g.size())
            b[i] = 0.5f * (a[(i + n - 1) % n] + a[(i + 1) % n]);
        g.sync();
        float *t = a; a = b; b = t;
    }
}

__global__ void reduce(const int *in, int *partial, int *total, int n) {
    cg::grid_group g = cg::this_grid();
    __shared__ int s[256];
    int sum = 0;
    for (int i = g.thread_rank(); i < n; i += g.size()) sum += in[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    g.sync();
    if (g.thread_rank() == 0) {
        int t = 0;
        for (int b = 0; b < gridDim.x; b++) t += partial[b];
        *total = t;
    }
}

int main() {
    const int n = 3000, steps = 7, blocks = 12, threads = 256;
    static float a[n], ref[n], tmp[n];
    for (int i = 0; i < n; i++) a[i] = ref[i] = (float)((i * 13) % 17);
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) tmp[i] = 0.5f * (ref[(i + n - 1) % n] + ref[(i + 1) % n]);
        for (int i = 0; i < n; i++) ref[i] = tmp[i];
    }
    float *da, *db;
    cudaMalloc(&da, sizeof a);
    cudaMalloc(&db, sizeof a);
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    int nn = n, ss = steps;
    void *sweep_args[] = {&da, &db, &nn, &ss};
    cudaError_t e = cudaLaunchCooperativeKernel((void *)sweep, blocks, threads, sweep_args, 0, 0);
    cudaDeviceSynchronize();
    cudaMemcpy(a, steps % 2 ? db : da, sizeof a, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += a[i] != ref[i];
    printf("sweep: %s, a[0] = %.6f, a[%d] = %.6f, %d wrong\n", cudaGetErrorName(e), a[0], n - 1, a[n - 1], bad);

    const int m = 100000;
    static int in[m];
    long long expect = 0;
    for (int i = 0; i < m; i++) expect += in[i] = (i * 7) % 1000;
    int *din, *dpartial, *dtotal, total = 0;
    cudaMalloc(&din, sizeof in);
    cudaMalloc(&dpartial, 64 * sizeof(int));
    cudaMalloc(&dtotal, sizeof(int));
    cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice);
    int mm = m;
    void *reduce_args[] = {&din, &dpartial, &dtotal, &mm};
    e = cudaLaunchCooperativeKernel((void *)reduce, 40, 256, reduce_args, 0, 0);
    cudaMemcpy(&total, dtotal, sizeof total, cudaMemcpyDeviceToHost);
    printf("reduce: %s, total = %d (expected %lld)\n", cudaGetErrorName(e), total, expect);

    e = cudaLaunchCooperativeKernel((void *)reduce, 100000, 256, reduce_args, 0, 0);
    printf("a grid of 100000 CTAs: %s\n", cudaGetErrorName(e));
    cudaGetLastError();

    cudaMemset(dtotal, 0, sizeof(int));
    reduce<<<4, 256>>>(din, dpartial, dtotal, m);  // not cooperative, but 4 CTAs fit at once
    e = cudaDeviceSynchronize();
    int plain = 0;
    cudaMemcpy(&plain, dtotal, sizeof plain, cudaMemcpyDeviceToHost);
    printf("plain launch of 4 CTAs: %s, total = %d\n", cudaGetErrorName(e), plain);
    printf(bad == 0 && total == expect && plain == expect ? "PASS\n" : "FAIL\n");
    return 0;
}
