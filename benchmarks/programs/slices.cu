// 200 launches over two 64 MiB arrays, each launch writing one 16 KiB slice of b
// (the access pattern of PolyBench's 3DConvolution, with little work per launch)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define N (16 * 1024 * 1024)
#define SLICE 4096
__global__ void step(const float *a, float *b, int i) {
  int j = i * SLICE + blockIdx.x * blockDim.x + threadIdx.x;
  b[j] = a[j] * 0.5f + a[(j + SLICE) % N] + 1.0f;
}
int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 200;
  float *h = (float *)malloc((size_t)N * 4);
  for (int i = 0; i < N; ++i) h[i] = (float)(i % 97);
  float *a, *b;
  cudaMalloc(&a, (size_t)N * 4); cudaMalloc(&b, (size_t)N * 4);
  cudaMemcpy(a, h, (size_t)N * 4, cudaMemcpyHostToDevice);
  cudaMemset(b, 0, (size_t)N * 4);
  for (int i = 0; i < launches; ++i) step<<<SLICE / 256, 256>>>(a, b, i);
  cudaMemcpy(h, b, (size_t)N * 4, cudaMemcpyDeviceToHost);
  double s = 0; for (int i = 0; i < N; ++i) s += h[i];
  printf("checksum %.1f\n", s);
  return 0;
}
