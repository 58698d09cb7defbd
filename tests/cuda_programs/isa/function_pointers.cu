// Indirect calls (issue 16): a __device__ table of function pointers; each lane picks an
// entry by its index, so a warp calls different functions at once.  The host computes the
// same values and prints PASS or FAIL.
#include <cstdio>

typedef int (*op_t)(int, int);
__device__ __noinline__ int op_add(int a, int b) { return a + b; }
__device__ __noinline__ int op_sub(int a, int b) { return a - b; }
__device__ __noinline__ int op_mul(int a, int b) { return a * b; }
__device__ __noinline__ int op_max(int a, int b) { return a > b ? a : b; }
__device__ op_t table[4] = {op_add, op_sub, op_mul, op_max};

__global__ void dispatch(const int *sel, int *out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  op_t f = table[sel[t] & 3];
  out[t] = f(t, 7);
}

int main() {
  const int n = 64;
  int hs[n], ho[n];
  for (int t = 0; t < n; t++) hs[t] = (t * 5 + t / 8) % 4;
  int *sel, *out;
  cudaMalloc(&sel, sizeof hs);
  cudaMalloc(&out, sizeof ho);
  cudaMemcpy(sel, hs, sizeof hs, cudaMemcpyHostToDevice);
  dispatch<<<2, 32>>>(sel, out);
  cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost);
  long sum = 0;
  bool ok = true;
  for (int t = 0; t < n; t++) {
    int a = t, b = 7, e;
    switch (hs[t]) { case 0: e = a + b; break; case 1: e = a - b; break; case 2: e = a * b; break; default: e = a > b ? a : b; }
    ok = ok && ho[t] == e;
    sum += ho[t];
  }
  printf("out[0..7]=%d %d %d %d %d %d %d %d sum=%ld\n", ho[0], ho[1], ho[2], ho[3], ho[4], ho[5], ho[6], ho[7], sum);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
