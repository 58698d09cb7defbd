// fork() after CUDA is initialised: in the child every runtime call fails with
// cudaErrorInitializationError (the child has no context; under hypa, no runtime thread),
// the child exits normally, and the parent goes on using the device.  (NVIDIA's guidelines
// call CUDA in a child before exec() undefined; error 3 is what its runtime returns there.)
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

__global__ void iota(int *p) { p[threadIdx.x] = threadIdx.x * 3; }

int main() {
  int *d, h[32];
  cudaMalloc(&d, sizeof h);
  iota<<<1, 32>>>(d);
  cudaDeviceSynchronize();
  fflush(stdout);  // the child must not print the parent's buffered output again
  pid_t pid = fork();
  if (pid == 0) {
    int *c;
    cudaError_t e = cudaMalloc(&c, 64);
    printf("child: cudaMalloc: %d %s (%s)\n", (int)e, cudaGetErrorName(e), cudaGetErrorString(e));
    printf("child: cudaMemcpy: %s\n", cudaGetErrorName(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost)));
    printf("child: cudaGetLastError: %s\n", cudaGetErrorName(cudaGetLastError()));
    exit(7);  // normally: atexit handlers and library destructors run
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("parent: child exited with %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  iota<<<1, 32>>>(d);
  cudaError_t e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  printf("parent: %s, h[31] = %d\n", cudaGetErrorName(e), h[31]);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 7 && e == cudaSuccess && h[31] == 93;
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
