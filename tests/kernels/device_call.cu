// A kernel calling non-inlined device functions, so the PTX holds .func
// definitions, `call.uni` with parameters and a return value, and a .func that
// itself branches (clamp) and loops (ipow).
__device__ __noinline__ float clampf(float v, float lo, float hi)
{
    if (v < lo)
        return lo;
    if (v > hi)
        return hi;
    return v;
}

__device__ __noinline__ int ipow(int base, int e)
{
    int r = 1;
    for (int k = 0; k < e; ++k)
        r *= base;
    return r;
}

__global__ void device_call(const float *in, float *out, int *pw, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = clampf(in[i], -1.0f, 1.0f);
        pw[i] = ipow(i & 7, threadIdx.x & 3);
    }
}
