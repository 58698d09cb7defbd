// build: nvcc -arch=sm_90a
// wgmma.mma_async (issue 16): a warpgroup (128 threads, one CTA) multiplies a 64xK A by a KxN
// B from shared memory through matrix descriptors in the PTX ISA's canonical layouts (swizzle
// none/32B/64B/128B, K- or MN-major), A also from registers, with scale-d, imm-scale-a/b and
// imm-trans-a/b; f16 and tf32 inputs, f32 and f16 accumulators.  The values are small
// integers (tf32: quarters), so every product and sum is exact and the host's reference is
// exact: the program prints, per case, the mismatches, a checksum and some elements with %a
// and their bits, then PASS.  Built with nvcc -arch=sm_90a (the first line says so to
// benchmarks/gpu/isa_programs_native.sh).
#include <cuda_fp16.h>
#pragma nv_diag_suppress 177, 550  // the compute_90 pass, without the wgmma code, leaves operands unused
#include <cstdio>
#include <cstring>

#define SMEM 32768
#define B_AT 16384

// byte offset of element (mn, k) in a canonical layout: core matrices of 8 rows of 16 bytes
// (no swizzle), or swizzle atoms of 8 rows of `width` bytes; K-major or MN-major
__device__ unsigned layout(int mn, int k, int esz, int kmajor, int width, int lbo, int sbo) {
    int t = 16 / esz;
    if (kmajor) {
        if (!width) return (mn % 8) * 16 + (mn / 8) * sbo + (k % t) * esz + (k / t) * lbo;
        return (mn % 8) * width + (mn / 8) * sbo + k * esz;
    }
    if (!width) return (mn % t) * esz + (mn / t) * sbo + (k % 8) * 16 + (k / 8) * lbo;
    int per = width / esz;
    return (mn % per) * esz + (mn / per) * lbo + (k % 8) * width + (k / 8) * sbo;
}

// address bits [4, 4+b) ^= bits [7, 7+b), width = 16 << b
__device__ unsigned swizzle(unsigned addr, int width) {
    return width ? addr ^ (((addr >> 7) & (width / 16 - 1)) << 4) : addr;
}

// LBO and SBO of a dense matrix of `rows` MN indices and one instruction's K (32 bytes)
__device__ void strides(int rows, int esz, int kmajor, int width, int* lbo, int* sbo) {
    if (kmajor) { *lbo = width ? 16 : 128; *sbo = width ? 8 * width : 256; return; }
    if (!width) { *lbo = rows / (16 / esz) * 128; *sbo = 128; return; }
    *lbo = 8 * width; *sbo = (rows * esz / width) * 8 * width;
}

__device__ unsigned long long desc(unsigned addr, int lbo, int sbo, int width) {
    unsigned long long mode = width == 128 ? 1 : width == 64 ? 2 : width == 32 ? 3 : 0;
    return ((addr >> 4) & 0x3FFF) | ((unsigned long long)(lbo >> 4) << 16) |
           ((unsigned long long)(sbo >> 4) << 32) | (mode << 62);
}

template <class T> __device__ T to_elem(float x);
template <> __device__ __half to_elem<__half>(float x) { return __float2half(x); }
template <> __device__ float to_elem<float>(float x) { return x; }

// accumulator element i of thread t: row 16 w + g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 q + (i & 1)
__device__ int dcoord_r(int t, int i) { int l = t % 32; return 16 * (t / 32) + l / 4 + 8 * ((i >> 1) & 1); }
__device__ int dcoord_c(int t, int i) { return 8 * (i >> 2) + 2 * (t % 4) + (i & 1); }
__device__ unsigned pack_half(float a, float b) {
    return __half_as_ushort(__float2half(a)) | ((unsigned)__half_as_ushort(__float2half(b)) << 16);
}
__device__ float unpack_half(unsigned r, int hi) { return __half2float(__ushort_as_half((unsigned short)(hi ? r >> 16 : r))); }

// f16_n64_sw128: m64n64k16 .f32.f16.f16, A from a descriptor (128 swizzle, K-major),
// B from a descriptor (128 swizzle, K-major), imm-scale-a 1, imm-scale-b 1, scale-d 0
__global__ void __launch_bounds__(128) k_f16_n64_sw128(const float* A, const float* B, const float* C, float* D) {
    __shared__ __align__(1024) unsigned char smem[SMEM];
    const int t = threadIdx.x;
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    int lboa, sboa, lbob, sbob;
    strides(64, 2, 1, 128, &lboa, &sboa);
    strides(64, 2, 1, 128, &lbob, &sbob);
    for (int e = t; e < 64 * 16; e += 128) {  // A (M x K)
        int m = e / 16, k = e % 16;
        unsigned a = swizzle(base + layout(m, k, 2, 1, 128, lboa, sboa), 128) - base;
        *(__half*)(smem + a) = to_elem<__half>(A[m * 16 + k]);
    }
    for (int e = t; e < 64 * 16; e += 128) {  // B (K x N), indexed (n, k)
        int n = e / 16, k = e % 16;
        unsigned a = swizzle(base + B_AT + layout(n, k, 2, 1, 128, lbob, sbob), 128) - base;
        *(__half*)(smem + a) = to_elem<__half>(B[k * 64 + n]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned long long da = desc(base, lboa, sboa, 128), db = desc(base + B_AT, lbob, sbob, 128);
    const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
    unsigned ar[4];
    for (int i = 0; i < 4; i++) {  // A's fragment: rows 16 w + ..., as mma's
        if (0) {
            int r = 16 * w + g + 8 * (i & 1), k = q + 4 * (i >> 1);
            ar[i] = __float_as_uint(A[r * 16 + k]);
        } else {
            unsigned short h[2];
            for (int p = 0; p < 2; p++) {
                int e = 2 * i + p, r = 16 * w + g + 8 * ((e >> 1) & 1), k = 2 * q + (e & 1) + 8 * (e >> 2);
                h[p] = __half_as_ushort(__float2half(A[r * 16 + k]));
            }
            ar[i] = h[0] | ((unsigned)h[1] << 16);
        }
    }
    (void)ar, (void)da;
    float d[32];
    for (int i = 0; i < 32; i++) d[i] = C[dcoord_r(t, i) * 64 + dcoord_c(t, i)];
    unsigned dr[32];
    for (int j = 0; j < 32; j++)
        dr[j] = 0;
    const unsigned scale_d = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // the sm_90a code (nvcc -arch=sm_90a also embeds compute_90 PTX)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d)
        : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
    __trap();
#endif
    for (int i = 0; i < 32; i++) {
        float v = d[i];
        D[dcoord_r(t, i) * 64 + dcoord_c(t, i)] = v;
    }
}

// f16_n128_areg_transb_sw128: m64n128k16 .f32.f16.f16, A from registers,
// B from a descriptor (128 swizzle, MN-major), imm-scale-a 1, imm-scale-b 1, scale-d 1
__global__ void __launch_bounds__(128) k_f16_n128_areg_transb_sw128(const float* A, const float* B, const float* C, float* D) {
    __shared__ __align__(1024) unsigned char smem[SMEM];
    const int t = threadIdx.x;
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    int lboa, sboa, lbob, sbob;
    strides(64, 2, 1, 0, &lboa, &sboa);
    strides(128, 2, 0, 128, &lbob, &sbob);
    for (int e = t; e < 64 * 16; e += 128) {  // A (M x K)
        int m = e / 16, k = e % 16;
        unsigned a = swizzle(base + layout(m, k, 2, 1, 0, lboa, sboa), 0) - base;
        *(__half*)(smem + a) = to_elem<__half>(A[m * 16 + k]);
    }
    for (int e = t; e < 128 * 16; e += 128) {  // B (K x N), indexed (n, k)
        int n = e / 16, k = e % 16;
        unsigned a = swizzle(base + B_AT + layout(n, k, 2, 0, 128, lbob, sbob), 128) - base;
        *(__half*)(smem + a) = to_elem<__half>(B[k * 128 + n]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned long long da = desc(base, lboa, sboa, 0), db = desc(base + B_AT, lbob, sbob, 128);
    const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
    unsigned ar[4];
    for (int i = 0; i < 4; i++) {  // A's fragment: rows 16 w + ..., as mma's
        if (0) {
            int r = 16 * w + g + 8 * (i & 1), k = q + 4 * (i >> 1);
            ar[i] = __float_as_uint(A[r * 16 + k]);
        } else {
            unsigned short h[2];
            for (int p = 0; p < 2; p++) {
                int e = 2 * i + p, r = 16 * w + g + 8 * ((e >> 1) & 1), k = 2 * q + (e & 1) + 8 * (e >> 2);
                h[p] = __half_as_ushort(__float2half(A[r * 16 + k]));
            }
            ar[i] = h[0] | ((unsigned)h[1] << 16);
        }
    }
    (void)ar, (void)da;
    float d[64];
    for (int i = 0; i < 64; i++) d[i] = C[dcoord_r(t, i) * 128 + dcoord_c(t, i)];
    unsigned dr[64];
    for (int j = 0; j < 64; j++)
        dr[j] = 0;
    const unsigned scale_d = 1;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // the sm_90a code (nvcc -arch=sm_90a also embeds compute_90 PTX)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(db), "r"(scale_d)
        : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
    __trap();
#endif
    for (int i = 0; i < 64; i++) {
        float v = d[i];
        D[dcoord_r(t, i) * 128 + dcoord_c(t, i)] = v;
    }
}

// tf32_n32_sw64_sw32: m64n32k8 .f32.tf32.tf32, A from a descriptor (64 swizzle, K-major),
// B from a descriptor (32 swizzle, K-major), imm-scale-a -1, imm-scale-b 1, scale-d 1
__global__ void __launch_bounds__(128) k_tf32_n32_sw64_sw32(const float* A, const float* B, const float* C, float* D) {
    __shared__ __align__(1024) unsigned char smem[SMEM];
    const int t = threadIdx.x;
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    int lboa, sboa, lbob, sbob;
    strides(64, 4, 1, 64, &lboa, &sboa);
    strides(32, 4, 1, 32, &lbob, &sbob);
    for (int e = t; e < 64 * 8; e += 128) {  // A (M x K)
        int m = e / 8, k = e % 8;
        unsigned a = swizzle(base + layout(m, k, 4, 1, 64, lboa, sboa), 64) - base;
        *(float*)(smem + a) = to_elem<float>(A[m * 8 + k]);
    }
    for (int e = t; e < 32 * 8; e += 128) {  // B (K x N), indexed (n, k)
        int n = e / 8, k = e % 8;
        unsigned a = swizzle(base + B_AT + layout(n, k, 4, 1, 32, lbob, sbob), 32) - base;
        *(float*)(smem + a) = to_elem<float>(B[k * 32 + n]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned long long da = desc(base, lboa, sboa, 64), db = desc(base + B_AT, lbob, sbob, 32);
    const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
    unsigned ar[4];
    for (int i = 0; i < 4; i++) {  // A's fragment: rows 16 w + ..., as mma's
        if (1) {
            int r = 16 * w + g + 8 * (i & 1), k = q + 4 * (i >> 1);
            ar[i] = __float_as_uint(A[r * 8 + k]);
        } else {
            unsigned short h[2];
            for (int p = 0; p < 2; p++) {
                int e = 2 * i + p, r = 16 * w + g + 8 * ((e >> 1) & 1), k = 2 * q + (e & 1) + 8 * (e >> 2);
                h[p] = __half_as_ushort(__float2half(A[r * 8 + k]));
            }
            ar[i] = h[0] | ((unsigned)h[1] << 16);
        }
    }
    (void)ar, (void)da;
    float d[16];
    for (int i = 0; i < 16; i++) d[i] = C[dcoord_r(t, i) * 32 + dcoord_c(t, i)];
    unsigned dr[16];
    for (int j = 0; j < 16; j++)
        dr[j] = 0;
    const unsigned scale_d = 1;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // the sm_90a code (nvcc -arch=sm_90a also embeds compute_90 PTX)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, -1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "r"(scale_d)
        : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
    __trap();
#endif
    for (int i = 0; i < 16; i++) {
        float v = d[i];
        D[dcoord_r(t, i) * 32 + dcoord_c(t, i)] = v;
    }
}

// f16acc_n16_transa_interleave: m64n16k16 .f16.f16.f16, A from a descriptor (no swizzle, MN-major),
// B from a descriptor (no swizzle, K-major), imm-scale-a 1, imm-scale-b -1, scale-d 1
__global__ void __launch_bounds__(128) k_f16acc_n16_transa_interleave(const float* A, const float* B, const float* C, float* D) {
    __shared__ __align__(1024) unsigned char smem[SMEM];
    const int t = threadIdx.x;
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    int lboa, sboa, lbob, sbob;
    strides(64, 2, 0, 0, &lboa, &sboa);
    strides(16, 2, 1, 0, &lbob, &sbob);
    for (int e = t; e < 64 * 16; e += 128) {  // A (M x K)
        int m = e / 16, k = e % 16;
        unsigned a = swizzle(base + layout(m, k, 2, 0, 0, lboa, sboa), 0) - base;
        *(__half*)(smem + a) = to_elem<__half>(A[m * 16 + k]);
    }
    for (int e = t; e < 16 * 16; e += 128) {  // B (K x N), indexed (n, k)
        int n = e / 16, k = e % 16;
        unsigned a = swizzle(base + B_AT + layout(n, k, 2, 1, 0, lbob, sbob), 0) - base;
        *(__half*)(smem + a) = to_elem<__half>(B[k * 16 + n]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned long long da = desc(base, lboa, sboa, 0), db = desc(base + B_AT, lbob, sbob, 0);
    const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
    unsigned ar[4];
    for (int i = 0; i < 4; i++) {  // A's fragment: rows 16 w + ..., as mma's
        if (0) {
            int r = 16 * w + g + 8 * (i & 1), k = q + 4 * (i >> 1);
            ar[i] = __float_as_uint(A[r * 16 + k]);
        } else {
            unsigned short h[2];
            for (int p = 0; p < 2; p++) {
                int e = 2 * i + p, r = 16 * w + g + 8 * ((e >> 1) & 1), k = 2 * q + (e & 1) + 8 * (e >> 2);
                h[p] = __half_as_ushort(__float2half(A[r * 16 + k]));
            }
            ar[i] = h[0] | ((unsigned)h[1] << 16);
        }
    }
    (void)ar, (void)da;
    float d[8];
    for (int i = 0; i < 8; i++) d[i] = C[dcoord_r(t, i) * 16 + dcoord_c(t, i)];
    unsigned dr[4];
    for (int j = 0; j < 4; j++)
        dr[j] = pack_half(d[2 * j], d[2 * j + 1]);
    const unsigned scale_d = 1;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // the sm_90a code (nvcc -arch=sm_90a also embeds compute_90 PTX)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, -1, 1, 0;\n}\n"
        : "+r"(dr[0]), "+r"(dr[1]), "+r"(dr[2]), "+r"(dr[3])
        : "l"(da), "l"(db), "r"(scale_d)
        : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
    __trap();
#endif
    for (int i = 0; i < 8; i++) {
        float v = unpack_half(dr[i / 2], i % 2);
        D[dcoord_r(t, i) * 16 + dcoord_c(t, i)] = v;
    }
}

struct Case { const char* name; int n, k, tf32, sa, sb, sd; void (*fn)(const float*, const float*, const float*, float*); };

static float a_val(int m, int k, int tf32) { float v = (float)((m * 3 + k * 5) % 7 - 3); return tf32 ? v / 4 : v; }
static float b_val(int k, int n) { return (float)((k * 2 + n * 3) % 5 - 2); }
static float c_val(int m, int n) { return (float)((m + 2 * n) % 9 - 4); }

int main() {
    Case cases[] = {
        {"f16_n64_sw128", 64, 16, 0, 1, 1, 0, k_f16_n64_sw128},
        {"f16_n128_areg_transb_sw128", 128, 16, 0, 1, 1, 1, k_f16_n128_areg_transb_sw128},
        {"tf32_n32_sw64_sw32", 32, 8, 1, -1, 1, 1, k_tf32_n32_sw64_sw32},
        {"f16acc_n16_transa_interleave", 16, 16, 0, 1, -1, 1, k_f16acc_n16_transa_interleave},
    };
    int bad_total = 0;
    float *A, *B, *C, *D;
    cudaMalloc(&A, 64 * 16 * 4); cudaMalloc(&B, 16 * 256 * 4); cudaMalloc(&C, 64 * 256 * 4); cudaMalloc(&D, 64 * 256 * 4);
    for (const Case& c : cases) {
        static float ha[64 * 16], hb[16 * 256], hc[64 * 256], hd[64 * 256];
        for (int m = 0; m < 64; m++) for (int k = 0; k < c.k; k++) ha[m * c.k + k] = a_val(m, k, c.tf32);
        for (int k = 0; k < c.k; k++) for (int n = 0; n < c.n; n++) hb[k * c.n + n] = b_val(k, n);
        for (int m = 0; m < 64; m++) for (int n = 0; n < c.n; n++) hc[m * c.n + n] = c_val(m, n);
        cudaMemcpy(A, ha, sizeof ha, cudaMemcpyHostToDevice);
        cudaMemcpy(B, hb, sizeof hb, cudaMemcpyHostToDevice);
        cudaMemcpy(C, hc, sizeof hc, cudaMemcpyHostToDevice);
        cudaMemset(D, 0, 64 * 256 * 4);
        c.fn<<<1, 128>>>(A, B, C, D);
        cudaError_t err = cudaDeviceSynchronize();
        cudaMemcpy(hd, D, sizeof hd, cudaMemcpyDeviceToHost);
        int bad = 0;
        double sum = 0;
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < c.n; n++) {
                double want = c.sd ? hc[m * c.n + n] : 0;
                for (int k = 0; k < c.k; k++) want += (double)(c.sa * ha[m * c.k + k]) * (c.sb * hb[k * c.n + n]);
                bad += hd[m * c.n + n] != (float)want;
                sum += hd[m * c.n + n];
            }
        unsigned bits;
        float e = hd[17 * c.n + 3];
        memcpy(&bits, &e, 4);
        printf("%s: %s, %d mismatches, sum = %.2f, D[0][0] = %a, D[5][7] = %a, D[63][%d] = %a, D[17][3] = 0x%08x\n",
               c.name, cudaGetErrorString(err), bad, sum, hd[0], hd[5 * c.n + 7], c.n - 1, hd[63 * c.n + c.n - 1], bits);
        bad_total += bad + (err != cudaSuccess);
    }
    printf(bad_total ? "FAIL\n" : "PASS\n");
    return bad_total != 0;
}
