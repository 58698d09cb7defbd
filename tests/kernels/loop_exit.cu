// Loops with early exits (deterministic: trip counts depend on threadIdx).
// loop_break:  each thread iterates up to `limit` times but breaks once its
//              running sum passes a threshold that depends on its lane, so lanes
//              leave the loop at different iterations.
// loop_return: a `return` from inside a loop; the stores after the loop are
//              executed only by threads that never returned.
// countdown:   a plain counted loop whose trip count is threadIdx.x % 8.
__global__ void loop_break(int *out, int limit)
{
    int lane = threadIdx.x & 31;
    int sum = 0, k = 0;
    for (; k < limit; ++k) {
        sum += k;
        if (sum > lane * 4)
            break;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = k * 1000 + sum;
}

__global__ void loop_return(int *out, int limit)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int x = threadIdx.x;
    for (int k = 0; k < limit; ++k) {
        x = (x * 5 + 1) & 63;
        if (x == 0) {
            out[tid] = -k;
            return;
        }
    }
    out[tid] = x;
}

__global__ void countdown(int *out)
{
    int n = threadIdx.x % 8;
    int acc = 0;
    for (int k = n; k > 0; --k)
        acc = acc * 3 + k;
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
