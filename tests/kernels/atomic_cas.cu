// Atomic read-modify-write built from atomicCAS: a float atomic maximum (the
// CAS retries until no other thread changed the word in between) and a
// saturating integer increment. The retry loops are data (contention)
// dependent; with distinct addresses per thread they run exactly once.
// atomic_ops: the other integer atomics, each with an order-independent result
// (min, max, or, and, xor, exch of one value, inc/dec with wrap-around, and a
// 64-bit add into w[8..9]); launch with w holding 10 words.
__device__ float atomic_max_float(float *addr, float v)
{
    int *p = (int *)addr;
    int old = *p, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v)
            break;
        old = atomicCAS(p, assumed, __float_as_int(v));
    } while (old != assumed);
    return __int_as_float(old);
}

__global__ void atomic_max_kernel(const float *in, float *result, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomic_max_float(result, in[i]);
}

__global__ void atomic_sat_inc(unsigned *counters, const int *idx, unsigned cap, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned *c = &counters[idx[i]];
    unsigned old = *c;
    while (old < cap) {
        unsigned seen = atomicCAS(c, old, old + 1);
        if (seen == old)
            break;
        old = seen;
    }
}

__global__ void atomic_ops(unsigned *w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned u = (unsigned)i;
    atomicMin(&w[0], u ^ 0x5au);
    atomicMax(&w[1], u * 7u % 101u);
    atomicOr(&w[2], 1u << (u & 31));
    atomicAnd(&w[3], ~(1u << (u & 31)));
    atomicXor(&w[4], u);
    atomicExch(&w[5], 42u);
    atomicInc(&w[6], 15u);
    atomicDec(&w[7], 9u);
    atomicAdd((unsigned long long *)&w[8], (unsigned long long)u);
}
