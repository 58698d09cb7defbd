// Asynchronous global->shared copies (sm_80 cp.async) through the pipeline
// primitives of cuda_pipeline.h: every block stages two tiles of 4-byte
// elements, commits them as separate groups, waits for the first group, uses
// it, then waits for the second.
#include <cuda_pipeline.h>

__global__ void cp_async_sum(const float *a, const float *b, float *out, int n)
{
    __shared__ float sa[256];
    __shared__ float sb[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) {
        __pipeline_memcpy_async(&sa[t], &a[i], sizeof(float));
        __pipeline_commit();
        __pipeline_memcpy_async(&sb[t], &b[i], sizeof(float));
        __pipeline_commit();
        __pipeline_wait_prior(1);
        float x = sa[t] * 2.0f;
        __pipeline_wait_prior(0);
        out[i] = x + sb[t];
    }
}
