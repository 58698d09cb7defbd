// Integer division/remainder and bit intrinsics, one result word per op:
// div/rem (signed and unsigned, by a runtime divisor), __popc, __clz, __brev,
// __ffs, __byte_perm, __funnelshift_l/r, 64-bit __popcll/__clzll, mulhi,
// and bfe/bfi (through inline PTX: NVVM lowers shift-and-mask to shr/and).
__global__ void int_bits(const int *a, const int *b, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = a[i], y = b[i] | 1;
    unsigned ux = (unsigned)x, uy = (unsigned)y;
    unsigned *o = out + 16 * i;
    o[0] = x / y;
    o[1] = x % y;
    o[2] = ux / uy;
    o[3] = ux % (uy + 2);
    o[4] = __popc(ux);
    o[5] = __clz(x);
    o[6] = __brev(ux);
    o[7] = __ffs(x);
    o[8] = __byte_perm(ux, uy, 0x3715);
    o[9] = __funnelshift_l(ux, uy, y & 63);
    o[10] = __funnelshift_r(ux, uy, x & 63);
    unsigned long long w = ((unsigned long long)ux << 32) | uy;
    o[11] = __popcll(w) + __clzll(w);
    o[12] = __umulhi(ux, uy);
    o[13] = __mulhi(x, y);
    // NVVM turns shift-and-mask into shr/and, so bfe/bfi come from inline PTX
    unsigned fu, fi;
    int fs;
    asm("bfe.u32 %0, %1, 5, 10;" : "=r"(fu) : "r"(ux));
    asm("bfe.s32 %0, %1, %2, 12;" : "=r"(fs) : "r"(x), "r"(uy & 15));
    asm("bfi.b32 %0, %1, %2, 8, 8;" : "=r"(fi) : "r"(ux), "r"(uy));
    o[14] = fu + fs + fi;
    o[15] = __sad(x, y, 3u);
}
