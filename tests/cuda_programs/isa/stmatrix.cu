// stmatrix and movmatrix (issue 16): one warp holds four 8x8 .b16 matrices in the ldmatrix
// fragment layout (lane l holds row l/4, columns 2(l%4) and 2(l%4)+1; matrix i's element
// (r, c) is 256 i + 8 r + c), stores them with stmatrix .x4 and .x4.trans (lanes 8i..8i+7
// give matrix i's row addresses) and transposes matrix 0 in registers with movmatrix.
// Prints every stored element's offset from the expected value (0 everywhere) and lane 5's
// movmatrix result.
#include <cstdint>
#include <cstdio>

__global__ void mats(unsigned short* plain, unsigned short* trans, unsigned* moved) {
    __shared__ alignas(16) unsigned short m[4 * 64], mt[4 * 64];
    int l = threadIdx.x;
    unsigned r[4];
    for (int i = 0; i < 4; i++) r[i] = ((i << 8) | (2 * l)) | (((i << 8) | (2 * l + 1)) << 16);
    unsigned row = (unsigned)__cvta_generic_to_shared(m) + 16 * l;
    unsigned rowt = (unsigned)__cvta_generic_to_shared(mt) + 16 * l;
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(row), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(rowt), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    unsigned d;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(r[0]));
    __syncwarp();
    for (int k = l; k < 256; k += 32) {
        plain[k] = m[k];
        trans[k] = mt[k];
    }
    moved[l] = d;
}

int main() {
    unsigned short *plain, *trans, hp[256], ht[256];
    unsigned *moved, hm[32];
    cudaMalloc(&plain, sizeof hp);
    cudaMalloc(&trans, sizeof ht);
    cudaMalloc(&moved, sizeof hm);
    mats<<<1, 32>>>(plain, trans, moved);
    cudaError_t err = cudaDeviceSynchronize();
    cudaMemcpy(hp, plain, sizeof hp, cudaMemcpyDeviceToHost);
    cudaMemcpy(ht, trans, sizeof ht, cudaMemcpyDeviceToHost);
    cudaMemcpy(hm, moved, sizeof hm, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int k = 0; k < 256; k++) {
        int i = k / 64, r = (k % 64) / 8, c = k % 8;
        bad += hp[k] != 256 * i + 8 * r + c;
        bad += ht[k] != 256 * i + 8 * c + r;
    }
    for (int l = 0; l < 32; l++) {
        unsigned want = (8 * (2 * (l % 4)) + l / 4) | ((8 * (2 * (l % 4) + 1) + l / 4) << 16);
        bad += hm[l] != want;
    }
    printf("%s\nplain[9] = %d, trans[9] = %d, plain[200] = %d, trans[200] = %d, moved[5] = 0x%08x\n",
           cudaGetErrorString(err), hp[9], ht[9], hp[200], ht[200], hm[5]);
    printf("%d mismatches\n%s\n", bad, bad ? "FAIL" : "PASS");
    return bad != 0;
}
