// Calibration micro-benchmarks: global memory.  Each kernel isolates one access
// pattern; sizes come from benchmarks/gpu/launches/calibration.toml.
extern "C" {

// Streaming read: grid-stride sum, one value per thread written out.
__global__ void stream_read(const float *a, float *out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.0f;
    for (; i < n; i += stride) s += a[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Streaming write: grid-stride fill.
__global__ void stream_write(float *a, long long n, float v) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) a[i] = v;
}

// Streaming copy, 4-byte elements.
__global__ void stream_copy(const float *a, float *b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) b[i] = a[i];
}

// Streaming copy, 16-byte elements (n counts float4).
__global__ void stream_copy4(const float4 *a, float4 *b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) b[i] = a[i];
}

// Strided read: thread i reads a[i*stride] (sectors per request grow with stride).
__global__ void strided_read(const float *a, float *out, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[(long long)i * stride];
}

// Per-thread row walk of a row-major matrix: thread i sums a[i*N + k], k = 0..N-1
// (uncoalesced; each 32-byte sector is reused through L1 by the next 7 iterations).
__global__ void row_walk(const float *a, float *out, int rows, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const float *r = a + (long long)i * N;
    float s = 0.0f;
    for (int k = 0; k < N; ++k) s += r[k];
    out[i] = s;
}

// Column walk of the same matrix: thread i sums a[k*cols + i] (coalesced).
__global__ void col_walk(const float *a, float *out, int cols, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= cols) return;
    float s = 0.0f;
    for (int k = 0; k < N; ++k) s += a[(long long)k * cols + i];
    out[i] = s;
}

// Re-read of a buffer of n floats (4-16 MB: L2 hits), reps times.  Each pass starts
// n / reps elements further on, so an SM reads what other SMs read before: L2, not L1, hits.
__global__ void reread(const float *a, float *out, int n, int reps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int nt = gridDim.x * blockDim.x;
    float s = 0.0f;
    for (int r = 0; r < reps; ++r) {
        int off = (int)((long long)r * n / reps) & ~31;
        for (int i = t; i < n; i += nt) {
            int j = i + off;
            if (j >= n) j -= n;
            s += a[j];
        }
    }
    out[t] = s;
}

// Per-CTA re-read of the same small window (window floats, L1-resident).
__global__ void reread_l1(const float *a, float *out, int window, int reps) {
    float s = 0.0f;
    for (int r = 0; r < reps; ++r)
        for (int i = threadIdx.x; i < window; i += blockDim.x) s += a[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Random gather: out[i] = a[idx[i]].
__global__ void gather(const float *a, const int *idx, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[idx[i]];
}

}
