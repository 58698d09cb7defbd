// Divergent control flow with deterministic outcomes (depends on threadIdx only),
// for hand-computed metrics. With 64 threads (two warps), `tid < 16` splits warp
// 0 and leaves warp 1 uniform.
//
// divergent_if:    if/else split at tid 16.
// divergent_not:   the same split written with the condition negated, so the
//                  else-side is the fall-through.
// nested_divergence: an outer split at tid 16, an inner split on odd/even lanes
//                  inside the taken side, and a uniform test per warp.
__global__ void divergent_if(const int *in, int *out)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int v = in[tid];
    if (threadIdx.x < 16) {
        out[tid] = v * v;
        out[tid + blockDim.x * gridDim.x] = v;
    } else {
        out[tid] = v + 7;
        out[tid + blockDim.x * gridDim.x] = -v;
    }
}

__global__ void divergent_not(const int *in, int *out)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int v = in[tid];
    if (!(threadIdx.x < 16)) {
        out[tid] = v + 7;
        out[tid + blockDim.x * gridDim.x] = -v;
    } else {
        out[tid] = v * v;
        out[tid + blockDim.x * gridDim.x] = v;
    }
}

__global__ void nested_divergence(const int *in, int *out)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int v = in[tid];
    int r;
    if (threadIdx.x < 16) {
        if (threadIdx.x & 1) {
            r = v * 3;
            out[tid + blockDim.x * gridDim.x] = r;
        } else {
            r = v - 3;
            out[tid + 2 * blockDim.x * gridDim.x] = r;
        }
    } else {
        r = v << 1;
    }
    if ((threadIdx.x >> 5) == 0)   // uniform per warp
        r += 100;
    out[tid] = r;
}
