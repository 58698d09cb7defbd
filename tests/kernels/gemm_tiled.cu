// Tiled single-precision GEMM, C = A * B (row-major, A: m x k, B: k x n),
// TILE x TILE thread blocks, each tile of A and B staged through shared
// memory with two barriers per step; edges are zero-padded.
#define TILE 16

__global__ void gemm_tiled(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        int ak = t + threadIdx.x, bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? A[row * k + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? B[bk * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n)
        C[row * n + col] = acc;
}
