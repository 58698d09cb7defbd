// Bulk asynchronous copies (issue 16), one 1 KiB tile per CTA: thread 0 expects 1024 bytes
// on an mbarrier and copies the tile from global to shared memory with
// cp.async.bulk...mbarrier::complete_tx::bytes (TMA without a tensor map), every thread waits,
// adds its index to its word, and thread 0 copies the tile back with
// cp.async.bulk.global.shared::cta.bulk_group and adds it into acc with cp.reduce.async.bulk
// .add.s32 (both CTAs add into the same acc).  out[256 b + t] = 256 b + 2 t, acc[t] = 256 + 4 t.
#include <cstdint>
#include <cstdio>

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__global__ void tiles(const int* in, int* out, int* acc) {
    __shared__ alignas(128) int tile[256];
    __shared__ uint64_t bar;
    int t = threadIdx.x;
    const int* src = in + blockIdx.x * 256;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], 1024;" ::"l"(src) : "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;" ::"r"(smem(&bar)) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];"
                     ::"r"(smem(tile)), "l"(src), "r"(smem(&bar)) : "memory");
    }
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\tselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(smem(&bar)) : "memory");
    tile[t] += t;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes, then the async proxy reads
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 1024;"
                     ::"l"(out + blockIdx.x * 256), "r"(smem(tile)) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.s32 [%0], [%1], 1024;"
                     ::"l"(acc), "r"(smem(tile)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

int main() {
    const int n = 512;
    int h_in[n], h_out[n], h_acc[256];
    for (int k = 0; k < n; k++) h_in[k] = k;
    int *in, *out, *acc;
    cudaMalloc(&in, sizeof h_in);
    cudaMalloc(&out, sizeof h_out);
    cudaMalloc(&acc, sizeof h_acc);
    cudaMemcpy(in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    cudaMemset(out, 0, sizeof h_out);
    cudaMemset(acc, 0, sizeof h_acc);
    tiles<<<2, 256>>>(in, out, acc);
    cudaError_t err = cudaDeviceSynchronize();
    cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost);
    cudaMemcpy(h_acc, acc, sizeof h_acc, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int k = 0; k < n; k++) bad += h_out[k] != (k / 256) * 256 + 2 * (k % 256);
    for (int t = 0; t < 256; t++) bad += h_acc[t] != 256 + 4 * t;
    printf("%s\nout[1] = %d, out[300] = %d, acc[0] = %d, acc[255] = %d\n", cudaGetErrorString(err), h_out[1],
           h_out[300], h_acc[0], h_acc[255]);
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad != 0;
}
