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

// a local array per call (local memory): each frame keeps its own values across the
// recursive call below it
__device__ __noinline__ int frames(int n, int depth) {
  int buf[8];
  for (int i = 0; i < 8; i++) buf[i] = n * (i + 1) + depth;
  int s = n > 0 ? frames(n / 2, depth + 1) : 0;
  return s + buf[(n + depth) & 7];
}

__global__ void recurse(unsigned long long *fact, int *fibs, int *even, int *local) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  fact[t] = factorial(t % 21);
  fibs[t] = fib(t % 13);
  even[t] = is_even(t % 7 + t / 16);
  local[t] = frames(t * 37 % 1000, 0);
}

static unsigned long long h_fact(unsigned n) { return n <= 1 ? 1ull : n * h_fact(n - 1); }
static int h_fib(int n) { return n < 2 ? n : h_fib(n - 1) + h_fib(n - 2); }
static int h_frames(int n, int depth) {
  int s = n > 0 ? h_frames(n / 2, depth + 1) : 0;
  return s + n * (((n + depth) & 7) + 1) + depth;
}

int main() {
  const int n = 64;
  unsigned long long *fact;
  int *fibs, *even, *local;
  cudaMalloc(&fact, n * sizeof(*fact));
  cudaMalloc(&fibs, n * sizeof(int));
  cudaMalloc(&even, n * sizeof(int));
  cudaMalloc(&local, n * sizeof(int));
  recurse<<<2, 32>>>(fact, fibs, even, local);
  unsigned long long hf[n];
  int hb[n], he[n], hl[n];
  cudaMemcpy(hf, fact, sizeof hf, cudaMemcpyDeviceToHost);
  cudaMemcpy(hb, fibs, sizeof hb, cudaMemcpyDeviceToHost);
  cudaMemcpy(he, even, sizeof he, cudaMemcpyDeviceToHost);
  cudaMemcpy(hl, local, sizeof hl, cudaMemcpyDeviceToHost);
  unsigned long long sf = 0;
  long sb = 0, se = 0, sl = 0;
  bool ok = true;
  for (int t = 0; t < n; t++) {
    sf += hf[t];
    sb += hb[t];
    se += he[t];
    sl += hl[t];
    ok = ok && hf[t] == h_fact(t % 21) && hb[t] == h_fib(t % 13) && he[t] == ((t % 7 + t / 16) % 2 == 0) &&
         hl[t] == h_frames(t * 37 % 1000, 0);
  }
  printf("fact[20]=%llu fib[12]=%d sum_fact=%llu sum_fib=%ld evens=%ld local[5]=%d sum_local=%ld\n", hf[20], hb[12], sf,
         sb, se, hl[5], sl);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
