// A 2D grid (dim3 grid and block): matrix add over a 48 x 40 matrix, then atomics:
// atomicAdd into a histogram and a global sum, atomicMax, atomicCAS-based increment.
#include <cstdio>

#define W 48
#define H 40

__global__ void add2d(const int *a, const int *b, int *c) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int i = y * W + x;
    c[i] = a[i] + b[i];
}

__global__ void stats(const int *c, int *hist, int *sum, int *mx, int *cas_count) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int v = c[y * W + x];
    atomicAdd(&hist[v & 7], 1);
    atomicAdd(sum, v);
    atomicMax(mx, v);
    int old = *cas_count, seen;
    do {
        seen = old;
        old = atomicCAS(cas_count, seen, seen + 1);
    } while (old != seen);
}

int main() {
    static int a[W * H], b[W * H], c[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            a[y * W + x] = x;
            b[y * W + x] = 3 * y;
        }
    int *da, *db, *dc, *dhist, *dsum, *dmax, *dcas;
    cudaMalloc(&da, sizeof a);
    cudaMalloc(&db, sizeof b);
    cudaMalloc(&dc, sizeof c);
    cudaMalloc(&dhist, 8 * sizeof(int));
    cudaMalloc(&dsum, sizeof(int));
    cudaMalloc(&dmax, sizeof(int));
    cudaMalloc(&dcas, sizeof(int));
    cudaMemset(dhist, 0, 8 * sizeof(int));
    cudaMemset(dsum, 0, sizeof(int));
    cudaMemset(dmax, 0, sizeof(int));
    cudaMemset(dcas, 0, sizeof(int));
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
    dim3 block(16, 8), grid(W / 16, H / 8);
    add2d<<<grid, block>>>(da, db, dc);
    stats<<<grid, block>>>(dc, dhist, dsum, dmax, dcas);
    int hist[8], sum, mx, cas;
    cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
    cudaMemcpy(hist, dhist, sizeof hist, cudaMemcpyDeviceToHost);
    cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost);
    cudaMemcpy(&mx, dmax, sizeof mx, cudaMemcpyDeviceToHost);
    cudaMemcpy(&cas, dcas, sizeof cas, cudaMemcpyDeviceToHost);
    int bad = 0, ehist[8] = {0}, esum = 0, emax = 0;
    for (int i = 0; i < W * H; i++) {
        int v = a[i] + b[i];
        bad += c[i] != v;
        ehist[v & 7]++;
        esum += v;
        emax = v > emax ? v : emax;
    }
    for (int k = 0; k < 8; k++) bad += hist[k] != ehist[k];
    bad += sum != esum || mx != emax || cas != W * H;
    printf("c[%d][%d] = %d\n", H - 1, W - 1, c[W * H - 1]);
    printf("hist:");
    for (int k = 0; k < 8; k++) printf(" %d", hist[k]);
    printf("\nsum = %d, max = %d, cas count = %d\n", sum, mx, cas);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
