// Tensor-core matrix multiply-accumulate with the WMMA API: one warp computes a
// 16x16 tile of C = A * B (A, B half precision row/column major, C float),
// walking K in steps of 16. m, n, k must be multiples of 16; launch one warp
// (32 threads) per output tile, grid = (n / 16, m / 16).
#include <mma.h>
using namespace nvcuda;

__global__ void wmma_gemm(const half *A, const half *B, float *C, int m, int n, int k)
{
    int tile_row = blockIdx.y, tile_col = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < k; kk += 16) {
        wmma::load_matrix_sync(fa, A + tile_row * 16 * k + kk, k);
        wmma::load_matrix_sync(fb, B + tile_col * 16 * k + kk, k);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(C + tile_row * 16 * n + tile_col * 16, acc, n, wmma::mem_row_major);
}
