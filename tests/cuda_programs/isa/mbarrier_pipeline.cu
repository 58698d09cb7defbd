// A two-stage producer/consumer pipeline on mbarriers (issue 16): in each CTA warp 1 fills a
// ring of two shared buffers and arrives on their "full" mbarriers, warp 0 waits on them with
// try_wait.parity, consumes and arrives on the "empty" mbarriers that the producer waits on
// before it reuses a buffer.  Inline PTX, so the instructions are exactly these.
// out[32 b + l] = sum over stages i of (2 in[192 b + 32 i + l] + i) = 2304 b + 12 l + 975.
#include <cstdint>
#include <cstdio>

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(b)), "r"(count) : "memory");
}

__device__ __forceinline__ uint64_t mbar_arrive(uint64_t* b) {
    uint64_t state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem(b)) : "memory");
    return state;
}

__device__ __forceinline__ bool mbar_try_wait(uint64_t* b, unsigned parity) {
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(smem(b)), "r"(parity) : "memory");
    return ok != 0;
}

__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
    while (!mbar_try_wait(b, parity)) {
    }
}

__global__ void pipeline(const int* in, int* out, int stages) {
    __shared__ uint64_t full[2], empty[2];
    __shared__ int buf[2][32];
    int t = threadIdx.x, lane = t % 32;
    if (t == 0) {
        for (int s = 0; s < 2; s++) {
            mbar_init(&full[s], 32);
            mbar_init(&empty[s], 32);
        }
    }
    __syncthreads();
    if (t >= 32) {  // producer
        for (int i = 0; i < stages; i++) {
            int s = i % 2;
            if (i >= 2) mbar_wait(&empty[s], ((i / 2) - 1) & 1);
            buf[s][lane] = 2 * in[blockIdx.x * stages * 32 + i * 32 + lane];
            mbar_arrive(&full[s]);
        }
    } else {  // consumer
        int acc = 0;
        for (int i = 0; i < stages; i++) {
            int s = i % 2;
            mbar_wait(&full[s], (i / 2) & 1);
            acc += buf[s][lane] + i;
            mbar_arrive(&empty[s]);
        }
        out[blockIdx.x * 32 + lane] = acc;
    }
}

int main() {
    const int stages = 6, ctas = 2, n = ctas * stages * 32;
    int h_in[n], h_out[ctas * 32];
    for (int k = 0; k < n; k++) h_in[k] = k;
    int *in, *out;
    cudaMalloc(&in, sizeof h_in);
    cudaMalloc(&out, sizeof h_out);
    cudaMemcpy(in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    pipeline<<<ctas, 64>>>(in, out, stages);
    cudaError_t err = cudaDeviceSynchronize();
    cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost);
    int bad = 0;
    long long sum = 0;
    for (int b = 0; b < ctas; b++)
        for (int l = 0; l < 32; l++) {
            sum += h_out[b * 32 + l];
            bad += h_out[b * 32 + l] != 2304 * b + 12 * l + 975;
        }
    printf("%s\nout[0] = %d, out[31] = %d, out[32] = %d, sum = %lld\n", cudaGetErrorString(err), h_out[0], h_out[31],
           h_out[32], sum);
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad != 0;
}
