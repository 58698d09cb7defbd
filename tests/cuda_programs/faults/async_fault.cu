// A fault is asynchronous: the launch and the event record after it succeed; the next
// synchronizing call (cudaEventSynchronize) and later calls return cudaErrorIllegalAddress.
#include <cstdio>
__global__ void bad(int *a, long long far) { if (threadIdx.x == 3) a[far] = 1; }
int main() {
  int *a; cudaMalloc(&a, 128);
  cudaEvent_t e; cudaEventCreate(&e);
  bad<<<1, 32>>>(a, 1LL << 32);
  cudaError_t l = cudaGetLastError();
  cudaError_t r = cudaEventRecord(e);
  cudaError_t s = cudaEventSynchronize(e);
  cudaError_t g = cudaGetLastError();
  printf("launch %s record %s sync %s last %s\n", cudaGetErrorName(l), cudaGetErrorName(r), cudaGetErrorName(s), cudaGetErrorName(g));
  return 0;
}
