// FMA contraction as ptxas does it: kernels whose PTX keeps mul.f32/add.f32 pairs
// that ptxas fuses (nvcc's default -fmad=true).  Prints checksums of exact bit patterns.
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

__global__ void julia(unsigned *out, int w, int h, float cx, float cy, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= w * h) return;
  float x = 3.0f * (i % w) / w - 1.5f, y = 2.0f * (i / w) / h - 1.0f;
  int k = 0;
  for (; k < iters; ++k) {
    float xx = x * x, yy = y * y;
    if (xx + yy > 4.0f) break;
    y = 2.0f * x * y + cy;
    x = xx - yy + cx;
  }
  out[i] = k;
}

__global__ void horner(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], p = 0.3f;
  p = p * v + 1.7f; p = p * v - 0.25f; p = p * v + 3.1f;
  float q = v * v;
  y[i] = p + q * 0.5f + v * 1.25f;
}

__global__ void cross3(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float ax = a[3*i], ay = a[3*i+1], az = a[3*i+2], bx = b[3*i], by = b[3*i+1], bz = b[3*i+2];
  c[3*i] = ay * bz - az * by;
  c[3*i+1] = az * bx - ax * bz;
  c[3*i+2] = ax * by - ay * bx;
}

__global__ void dot_f64(const double *a, const double *b, double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = a[i] * b[i] + a[i] * a[i] - b[i] * 0.1;
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p; uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) { h ^= c[i]; h *= 1099511628211ull; }
  return h;
}

int main() {
  const int w = 512, h = 512, n = 1 << 14;
  unsigned *dout; cudaMalloc(&dout, w * h * 4);
  julia<<<(w * h + 255) / 256, 256>>>(dout, w, h, -0.8f, 0.156f, 100);
  unsigned *hout = new unsigned[w * h];
  cudaMemcpy(hout, dout, w * h * 4, cudaMemcpyDeviceToHost);
  unsigned long long total = 0; for (int i = 0; i < w * h; ++i) total += hout[i];
  printf("julia iterations %llu checksum %016llx\n", total, (unsigned long long)fnv(hout, w * h * 4));

  float *hx = new float[3 * n], *hy = new float[3 * n];
  for (int i = 0; i < 3 * n; ++i) hx[i] = (float)((i * 2654435761u) % 100003) / 997.0f - 50.0f;
  float *dx, *dy, *dz; cudaMalloc(&dx, 12 * n); cudaMalloc(&dy, 12 * n); cudaMalloc(&dz, 12 * n);
  cudaMemcpy(dx, hx, 12 * n, cudaMemcpyHostToDevice);
  horner<<<n / 256, 256>>>(dx, dy, n);
  cudaMemcpy(hy, dy, 4 * n, cudaMemcpyDeviceToHost);
  printf("horner checksum %016llx y[7] %08x\n", (unsigned long long)fnv(hy, 4 * n), *(unsigned *)&hy[7]);
  cross3<<<n / 256, 256>>>(dx, dx + n, dz, n / 3);
  cudaMemcpy(hy, dz, 12 * (n / 3), cudaMemcpyDeviceToHost);
  printf("cross3 checksum %016llx\n", (unsigned long long)fnv(hy, 12 * (n / 3)));
  double *ha = new double[2 * n], *da, *dout2;
  for (int i = 0; i < 2 * n; ++i) ha[i] = (double)((i * 40503u) % 65521) / 313.0 - 100.0;
  cudaMalloc(&da, 16 * n); cudaMalloc(&dout2, 8 * n);
  cudaMemcpy(da, ha, 16 * n, cudaMemcpyHostToDevice);
  dot_f64<<<n / 256, 256>>>(da, da + n, dout2, n);
  cudaMemcpy(ha, dout2, 8 * n, cudaMemcpyDeviceToHost);
  printf("dot_f64 checksum %016llx\n", (unsigned long long)fnv(ha, 8 * n));
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s\n", e == cudaSuccess ? "done" : cudaGetErrorString(e));
  return 0;
}
