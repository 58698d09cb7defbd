// Stencils with explicit boundary conditions.
// stencil1d: 3-point average; the two end points copy the input (Dirichlet).
// stencil2d: 5-point Laplacian on a w x h grid; boundary cells are clamped
// to the edge (Neumann-style), so every thread takes a different mix of branches
// at the edges.
__global__ void stencil1d(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    if (i == 0 || i == n - 1)
        out[i] = in[i];
    else
        out[i] = (in[i - 1] + in[i] + in[i + 1]) * (1.0f / 3.0f);
}

__global__ void stencil2d(const float *in, float *out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    int xl = x > 0 ? x - 1 : x;
    int xr = x < w - 1 ? x + 1 : x;
    int yu = y > 0 ? y - 1 : y;
    int yd = y < h - 1 ? y + 1 : y;
    float c = in[y * w + x];
    out[y * w + x] = in[y * w + xl] + in[y * w + xr] + in[yu * w + x] + in[yd * w + x] - 4.0f * c;
}
