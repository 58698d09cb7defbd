// Device malloc/free and new/delete (issue 16): blocks one launch allocates are used and freed
// by later launches, as CUDA's device heap keeps them; the heap size set with
// cudaDeviceSetLimit(cudaLimitMallocHeapSize) bounds what malloc can return (NULL past it).
// The host computes the same values and prints PASS or FAIL.
#include <cstdio>

__device__ int *blocks[64];

__global__ void make(void) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int n = t % 5 + 1;
  int *p = (int *)malloc(n * sizeof(int));
  for (int k = 0; k < n; k++) p[k] = t * k + 1;
  blocks[t] = p;
}

__global__ void use(int *out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int *p = blocks[t];
  int s = 0;
  for (int k = 0; k < t % 5 + 1; k++) s += p[k];
  int *q = new int[3];  // new/delete inside one launch
  q[0] = s; q[1] = t; q[2] = s - t;
  out[t] = q[0] + q[1] * q[2];
  delete[] q;
  if (t % 2 == 0) free(p);
}

__global__ void release(int *out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t % 2 == 1) free(blocks[t]);
  if (t == 0) {
    void *big = malloc(16 << 20);  // more than the 8 MiB heap: NULL
    void *small = malloc(64);
    out[64] = (big == NULL) + 2 * (small != NULL);
    free(small);
  }
}

int main() {
  size_t heap = 0;
  cudaDeviceSetLimit(cudaLimitMallocHeapSize, 8 << 20);  // an H100 rounds 1 MiB up to 4 MiB
  cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize);
  int *out;
  cudaMalloc(&out, 65 * sizeof(int));
  make<<<2, 32>>>();
  use<<<2, 32>>>(out);
  release<<<2, 32>>>(out);
  int ho[65];
  cudaError_t e = cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost);
  bool ok = e == cudaSuccess;
  long sum = 0;
  for (int t = 0; t < 64; t++) {
    int s = 0;
    for (int k = 0; k < t % 5 + 1; k++) s += t * k + 1;
    ok = ok && ho[t] == s + t * (s - t);
    sum += ho[t];
  }
  ok = ok && ho[64] == 3;
  printf("heap=%zu out[0..4]=%d %d %d %d %d sum=%ld flags=%d\n", heap, ho[0], ho[1], ho[2], ho[3], ho[4], sum, ho[64]);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
