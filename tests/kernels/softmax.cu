// Row-wise softmax, one warp per row (blockDim.x == 32, one row per block.y
// index): max and sum are warp reductions with __shfl_xor_sync, exponentials
// with expf. Rows longer than 32 are strided over the lanes.
__device__ __forceinline__ float warp_max(float v)
{
    for (int m = 16; m > 0; m >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
    return v;
}

__device__ __forceinline__ float warp_add(float v)
{
    for (int m = 16; m > 0; m >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}

__global__ void softmax_rows(const float *in, float *out, int rows, int cols)
{
    int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows)
        return;
    const float *r = in + (size_t)row * cols;
    float *o = out + (size_t)row * cols;
    int lane = threadIdx.x;
    float m = __int_as_float(0xff800000); // -inf
    for (int c = lane; c < cols; c += 32)
        m = fmaxf(m, r[c]);
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += expf(r[c] - m);
    s = warp_add(s);
    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32)
        o[c] = expf(r[c] - m) * inv;
}
