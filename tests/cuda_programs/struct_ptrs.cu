// A struct passed by value as a kernel parameter, and a device array of pointers (each
// row of a jagged matrix is a separate allocation; the kernel follows the stored pointers).
#include <cstdio>

#define ROWS 4
#define COLS 32

struct Affine {
    float scale;
    float bias;
    int n;
    char tag;
    double extra;  // forces 8-byte alignment and padding
};

__global__ void affine(Affine p, float *x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) x[i] = p.scale * x[i] + p.bias + (float)p.extra + (p.tag == 'A' ? 1.0f : 0.0f);
}

__global__ void fill_rows(float **rows) {
    rows[blockIdx.x][threadIdx.x] = blockIdx.x * 100 + threadIdx.x;
}

__global__ void gather_diag(float *const *rows, float *out) {
    int r = threadIdx.x;
    out[r] = rows[r][r * 3];
}

int main() {
    float *x;
    float hx[64];
    for (int i = 0; i < 64; i++) hx[i] = i;
    cudaMalloc(&x, sizeof hx);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    Affine p = {2.0f, 0.5f, 64, 'A', 0.25};
    affine<<<2, 32>>>(p, x);
    cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost);

    float *row[ROWS];
    for (int r = 0; r < ROWS; r++) cudaMalloc(&row[r], COLS * sizeof(float));
    float **drows;
    cudaMalloc(&drows, sizeof row);
    cudaMemcpy(drows, row, sizeof row, cudaMemcpyHostToDevice);
    float *dout;
    cudaMalloc(&dout, ROWS * sizeof(float));
    fill_rows<<<ROWS, COLS>>>(drows);
    gather_diag<<<1, ROWS>>>(drows, dout);
    float out[ROWS], last[COLS];
    cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost);
    cudaMemcpy(last, row[ROWS - 1], sizeof last, cudaMemcpyDeviceToHost);

    int bad = 0;
    for (int i = 0; i < 64; i++) bad += hx[i] != 2.0f * i + 0.5f + 0.25f + 1.0f;
    for (int r = 0; r < ROWS; r++) bad += out[r] != r * 100 + r * 3;
    for (int c = 0; c < COLS; c++) bad += last[c] != 300 + c;
    printf("x[0] = %g, x[63] = %g\n", hx[0], hx[63]);
    printf("diag = %g %g %g %g\n", out[0], out[1], out[2], out[3]);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
