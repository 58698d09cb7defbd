// Double-precision arithmetic: fma, division, sqrt, and the libdevice
// exp/log/sin (polynomial + range-reduction code with internal branches).
__global__ void double_math(const double *a, const double *b, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double x = a[i], y = b[i];
    double f = fma(x, y, 1.0);
    double q = x / (fabs(y) + 1.0);
    double s = sqrt(fabs(x) + 2.0);
    out[i] = f + q * s;
}

__global__ void double_transcendental(const double *a, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double x = a[i];
        out[i] = exp(x * 0.5) + log(fabs(x) + 1.0) + sin(x);
    }
}
