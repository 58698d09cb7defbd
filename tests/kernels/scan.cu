// Block-level inclusive scan (prefix sum), Hillis-Steele with double
// buffering in shared memory: log2(blockDim.x) steps, two barriers each.
// scan_block writes each block's scan; it does not combine blocks.
// Launch with blockDim.x <= 1024.
__global__ void scan_block(const int *in, int *out, int n)
{
    __shared__ int buf[2][1024];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int cur = 0;
    buf[cur][tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int v = buf[cur][tid];
        if (tid >= off)
            v += buf[cur][tid - off];
        buf[cur ^ 1][tid] = v;
        cur ^= 1;
        __syncthreads();
    }
    if (i < n)
        out[i] = buf[cur][tid];
}
