// A read 72 bytes before an allocation (a wavelet kernel does this): a GPU does not fault.
#include <cstdio>
__global__ void k(const float *a, float *out) { out[threadIdx.x] = a[(int)threadIdx.x - 18]; }
int main() {
  float *a, *out; cudaMalloc(&a, 9216); cudaMalloc(&out, 128);
  k<<<1, 1>>>(a, out);
  cudaError_t s = cudaDeviceSynchronize();
  printf("read 72 bytes before a 9216-byte allocation: %s\n", cudaGetErrorName(s));
  return 0;
}
