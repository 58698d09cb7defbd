// A dense switch on a data value with many cases: at -O3 NVVM lowers it to a
// jump table, i.e. a `.branchtargets` table and `brx.idx` in PTX.
// The case bodies store different expressions so they cannot be merged into
// a lookup table.
__global__ void switch_dense(const int *sel, const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = in[i];
    int r;
    switch (sel[i]) {
    case 0: r = x + 1; break;
    case 1: r = x * 3; break;
    case 2: r = x ^ 0x55; break;
    case 3: r = x >> 2; break;
    case 4: r = x - 17; break;
    case 5: r = x * x; break;
    case 6: r = ~x; break;
    case 7: r = x & 0xf0f; break;
    case 8: r = x | 0x100; break;
    case 9: r = x / 7; break;
    case 10: r = x % 11; break;
    case 11: r = x << 3; break;
    default: r = -1; break;
    }
    out[i] = r;
}
