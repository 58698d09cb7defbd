// Calibration micro-benchmark: memory latency.  A chain of dependent loads (next = 0, 1, 2,
// ...: each address comes from the load before it, jumping `jump` elements, so no two loads
// overlap) over a buffer of m ints, one warp per SM: the time per step is the latency of the
// level the buffer lives in (L1, L2 or DRAM) plus a few integer instructions.
extern "C" {

__global__ void chase(const int *__restrict__ next, int *out, int m, int jump, int steps) {
    int j = (blockIdx.x * blockDim.x + threadIdx.x) % m;
    for (int k = 0; k < steps; ++k) {
        j = next[j] + jump;
        if (j >= m) j -= m;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = j;
}

}
