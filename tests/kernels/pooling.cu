// 2x2 pooling with stride 2 over a (c, h, w) tensor; one thread per output.
// maxpool2x2 keeps the maximum (fmaxf), avgpool2x2 the mean; odd edges are
// handled by skipping taps outside the input (avg divides by the taps used).
__global__ void maxpool2x2(const float *in, float *out, int c, int h, int w)
{
    int oh = (h + 1) / 2, ow = (w + 1) / 2;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= c * oh * ow)
        return;
    int ox = idx % ow, oy = (idx / ow) % oh, ch = idx / (ow * oh);
    const float *plane = in + ch * h * w;
    float m = __int_as_float(0xff800000); // -inf
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
            int y = 2 * oy + dy, x = 2 * ox + dx;
            if (y < h && x < w)
                m = fmaxf(m, plane[y * w + x]);
        }
    out[idx] = m;
}

__global__ void avgpool2x2(const float *in, float *out, int c, int h, int w)
{
    int oh = (h + 1) / 2, ow = (w + 1) / 2;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= c * oh * ow)
        return;
    int ox = idx % ow, oy = (idx / ow) % oh, ch = idx / (ow * oh);
    const float *plane = in + ch * h * w;
    float s = 0.0f;
    int taps = 0;
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
            int y = 2 * oy + dy, x = 2 * ox + dx;
            if (y < h && x < w) {
                s += plane[y * w + x];
                ++taps;
            }
        }
    out[idx] = s / taps;
}
