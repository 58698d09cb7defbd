// Dynamic shared memory (extern __shared__, size given at launch): each
// block reverses its chunk of the input through shared memory. The launch
// must pass blockDim.x * sizeof(float) bytes of dynamic shared memory.
__global__ void reverse_block(const float *in, float *out, int n)
{
    extern __shared__ float tile[];
    int base = blockIdx.x * blockDim.x;
    int t = threadIdx.x;
    int len = min((int)blockDim.x, n - base);
    if (t < len)
        tile[t] = in[base + t];
    __syncthreads();
    if (t < len)
        out[base + t] = tile[len - 1 - t];
}
