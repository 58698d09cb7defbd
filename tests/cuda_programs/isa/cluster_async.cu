// Cluster instructions in a kernel whose clusters are one CTA (__cluster_dims__(1, 1, 1))
// (issue 16): barrier.cluster.arrive/wait, mapa to rank 0, getctarank, %cluster_ctarank,
// %cluster_nctarank, and st.async / red.async completing through an mbarrier.  Each of 64
// threads stores 7t into a shared word with st.async and adds t to a shared counter with
// red.async (4 bytes each on the mbarrier, 512 expected); after the wait thread t reads word
// 63 - t through mapa's address: out[t] = 1000 * 2016 + 7 (63 - t) + 100000 * nctarank.
#include <cstdint>
#include <cstdio>

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cluster_body(int* out, int* ranks) {
    __shared__ uint64_t bar;
    __shared__ int words[64];
    __shared__ int counter;
    int t = threadIdx.x;
    if (t == 0) {
        counter = 0;
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
    if (t == 0) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;" ::"r"(smem(&bar)) : "memory");
    unsigned remote_bar, remote_word, remote_counter;
    asm("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote_bar) : "r"(smem(&bar)));
    asm("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote_word) : "r"(smem(&words[t])));
    asm("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote_counter) : "r"(smem(&counter)));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
                 ::"r"(remote_word), "r"(7 * t), "r"(remote_bar) : "memory");
    asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], %1, [%2];"
                 ::"r"(remote_counter), "r"(t), "r"(remote_bar) : "memory");
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\tselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(smem(&bar)) : "memory");
    unsigned other, rank, ctarank, nctarank, value;
    asm("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(other) : "r"(smem(&words[63 - t])));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(value) : "r"(other) : "memory");
    asm("getctarank.shared::cluster.u32 %0, %1;" : "=r"(rank) : "r"(other));
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(ctarank));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(nctarank));
    out[blockIdx.x * 64 + t] = 1000 * counter + value + 100000 * nctarank;
    ranks[blockIdx.x * 64 + t] = rank + 10 * ctarank;
    asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
}

// the same code in a kernel that declares a cluster (of one CTA) and in one that does not:
// st.async / red.async fault in the second (an H100 raises an illegal instruction)
__global__ void __cluster_dims__(1, 1, 1) cluster_one(int* out, int* ranks) { cluster_body(out, ranks); }
__global__ void no_cluster(int* out, int* ranks) { cluster_body(out, ranks); }

int main() {
    int *out, *ranks, h_out[128] = {0}, h_ranks[128] = {0};
    cudaMalloc(&out, sizeof h_out);
    cudaMalloc(&ranks, sizeof h_ranks);
    cluster_one<<<2, 64>>>(out, ranks);
    cudaError_t err = cudaDeviceSynchronize();
    cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost);
    cudaMemcpy(h_ranks, ranks, sizeof h_ranks, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int k = 0; k < 128; k++) {
        bad += h_out[k] != 1000 * 2016 + 7 * (63 - k % 64) + 100000;
        bad += h_ranks[k] != 0;
    }
    printf("%s\nout[0] = %d, out[63] = %d, out[64] = %d, ranks[5] = %d\n", cudaGetErrorString(err), h_out[0], h_out[63],
           h_out[64], h_ranks[5]);
    printf(bad ? "FAIL\n" : "PASS\n");
    no_cluster<<<1, 64>>>(out, ranks);
    printf("without a cluster: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return bad != 0;
}
