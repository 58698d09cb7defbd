// Recursion on the device (issue 16): factorial and Fibonacci per thread, with a depth that
// differs by lane so a warp diverges inside the recursion, and mutual recursion (is_even /
// is_odd).  The host computes the same values and prints PASS or FAIL.
#include <cstdio>

__device__ __noinline__ unsigned long long factorial(unsigned n) {
  return n <= 1 ? 1ull : n * factorial(n - 1);
}

__device__ __noinline__ int fib(int n) {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ bool is_odd(int n);
__device__ __noinline__ bool is_even(int n) { return n == 0 ? true : is_odd(n - 1); }
__device__ __noinline__ bool is_odd(int n) { return n == 0 ? false : is_even(n - 1); }

__global__ void recurse(unsigned long long *fact, int *fibs, int *even) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  fact[t] = factorial(t % 21);
  fibs[t] = fib(t % 13);
  even[t] = is_even(t % 7 + t / 16);
}

static unsigned long long h_fact(unsigned n) { return n <= 1 ? 1ull : n * h_fact(n - 1); }
static int h_fib(int n) { return n < 2 ? n : h_fib(n - 1) + h_fib(n - 2); }

int main() {
  const int n = 64;
  unsigned long long *fact;
  int *fibs, *even;
  cudaMalloc(&fact, n * sizeof(*fact));
  cudaMalloc(&fibs, n * sizeof(int));
  cudaMalloc(&even, n * sizeof(int));
  recurse<<<2, 32>>>(fact, fibs, even);
  unsigned long long hf[n];
  int hb[n], he[n];
  cudaMemcpy(hf, fact, sizeof hf, cudaMemcpyDeviceToHost);
  cudaMemcpy(hb, fibs, sizeof hb, cudaMemcpyDeviceToHost);
  cudaMemcpy(he, even, sizeof he, cudaMemcpyDeviceToHost);
  unsigned long long sf = 0;
  long sb = 0, se = 0;
  bool ok = true;
  for (int t = 0; t < n; t++) {
    sf += hf[t];
    sb += hb[t];
    se += he[t];
    ok = ok && hf[t] == h_fact(t % 21) && hb[t] == h_fib(t % 13) && he[t] == ((t % 7 + t / 16) % 2 == 0);
  }
  printf("fact[20]=%llu fib[12]=%d sum_fact=%llu sum_fib=%ld evens=%ld\n", hf[20], hb[12], sf, sb, se);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
