// hypa report's done-when program (issue 27): a 32-way shared-memory bank conflict and a
// divergent branch, built with -lineinfo.  Each CTA (32 x 8 threads) stages a 32 x 32 tile;
// every thread then sums a *row* of the tile (lane i reads tile[i][c]: the 32 lanes of a warp
// hit one bank, 32-way), and lanes 0-7 of each warp also sum a column (conflict-free) -- a
// branch a quarter of each warp takes.
__global__ void row_sums(const float *in, float *out)
{
    __shared__ float tile[32][32];
    int lane = threadIdx.x, row0 = threadIdx.y;
    const float *blk = in + blockIdx.x * 1024;
    for (int r = row0; r < 32; r += 8)
        tile[r][lane] = blk[r * 32 + lane];
    __syncthreads();
    float s = 0.0f;
    for (int c = 0; c < 32; ++c)
        s += tile[lane][(c + row0) & 31];
    if (lane < 8) {
        for (int k = 0; k < 32; ++k)
            s += 0.5f * tile[k][lane];
    }
    out[(blockIdx.x * 8 + row0) * 32 + lane] = s;
}
