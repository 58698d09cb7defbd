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

// Constant-memory loads indexed by a register (LDC): a chain through a __constant__ table the
// launch leaves zero, so every step reads entry `base + i` with i the value the step before
// read (0), plus `lane_stride` * lane: 0 gives one address for the warp (the latency of an
// indexed constant load), 1 gives 32 (the constant cache serves them one at a time).
__constant__ int c_chain[1024];

extern "C" __global__ void const_chase(int *out, int base, int lane_stride, int steps) {
    int i = 0;
    int lane = threadIdx.x & 31;
    for (int k = 0; k < steps; ++k) i = c_chain[(base + i + lane * lane_stride) & 1023];
    out[blockIdx.x * blockDim.x + threadIdx.x] = i;
}

// Local memory indexed by data (HeCBench entropy's per-thread `char count[16]`, incremented at a
// value it loads): each step increments count[j] of a per-thread array in local memory, j from
// a per-thread LCG (`spread` 1: each lane its own index; 0: one index for the warp), so every
// step is a local load, an add and a local store to an address the step before may have
// written.  `wide` 0: a char array (byte accesses), 1: an int array.
extern "C" __global__ void local_rmw(int *out, int steps, int spread, int wide) {
    unsigned char cb[16];
    int ci[16];
    for (int k = 0; k < 16; ++k) { cb[k] = 0; ci[k] = 0; }
    unsigned v = (blockIdx.x * blockDim.x + threadIdx.x) * spread * 2654435761u + 12345u;
    for (int k = 0; k < steps; ++k) {
        v = v * 1664525u + 1013904223u;
        unsigned j = v >> 28;
        if (wide) ci[j]++; else cb[j]++;
    }
    int s = 0;
    for (int k = 0; k < 16; ++k) s += cb[k] + ci[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
