// CUDA graphs and memory pools: stream capture across two streams (fork and join through
// events; a kernel argument changed after capture does not reach the graph), an explicit graph
// (memset, kernel, host and copy nodes), an executable graph's kernel node given new arguments,
// a synchronizing call that invalidates a capture, and cudaMallocFromPoolAsync.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void add(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

static int host_calls = 0;
static void CUDART_CB count_call(void *p) { ++*(int *)p; }

int main() {
  const int n = 256;
  const size_t bytes = n * sizeof(float);
  static float h[n], out[n];
  for (int i = 0; i < n; ++i) h[i] = (float)i;
  float *x, *y;
  cudaMalloc(&x, bytes);
  cudaMalloc(&y, bytes);
  cudaStream_t s1, s2;
  cudaStreamCreate(&s1);
  cudaStreamCreate(&s2);
  cudaEvent_t fork, join;
  cudaEventCreate(&fork);
  cudaEventCreate(&join);
  int ok = 1;

  // 1. stream capture: x = h * 2 on s1 while s2 zeroes y, then y += x
  cudaGraph_t g;
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
  cudaMemcpyAsync(x, h, bytes, cudaMemcpyHostToDevice, s1);
  cudaEventRecord(fork, s1);
  cudaStreamWaitEvent(s2, fork, 0);
  cudaMemsetAsync(y, 0, bytes, s2);
  cudaEventRecord(join, s2);
  float a = 2.0f;
  scale<<<n / 128, 128, 0, s1>>>(x, a, n);
  a = 100.0f;  // the node copied its arguments: the graph still scales by 2
  cudaStreamWaitEvent(s1, join, 0);
  add<<<n / 128, 128, 0, s1>>>(x, y, n);
  cudaStreamIsCapturing(s1, &st);
  cudaStreamEndCapture(s1, &g);
  size_t nodes = 0;
  cudaGraphGetNodes(g, nullptr, &nodes);
  cudaGraphExec_t ge;
  cudaGraphInstantiate(&ge, g, 0);
  cudaGraphLaunch(ge, s1);
  cudaGraphLaunch(ge, s1);  // the copy resets x: the same result
  cudaStreamSynchronize(s1);
  cudaMemcpy(out, y, bytes, cudaMemcpyDeviceToHost);
  printf("capture: %zu nodes, status while capturing %d, y[3] = %g, y[255] = %g\n", nodes, (int)st, out[3], out[255]);
  ok &= nodes == 4 && st == cudaStreamCaptureStatusActive && out[3] == 6.0f && out[255] == 510.0f;

  // 2. an explicit graph: y = 1.0f (a 4-byte memset), y += x, then a host call and a copy out
  cudaGraph_t g2;
  cudaGraphCreate(&g2, 0);
  cudaMemsetParams mp = {};
  mp.dst = y;
  mp.value = 0x3f800000;
  mp.elementSize = 4;
  mp.width = n;
  mp.height = 1;
  cudaGraphNode_t ms, kn, hn, cp;
  cudaGraphAddMemsetNode(&ms, g2, nullptr, 0, &mp);
  int nn = n;
  void *args[] = {&x, &y, &nn};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)add;
  kp.gridDim = dim3(n / 128);
  kp.blockDim = dim3(128);
  kp.kernelParams = args;
  cudaGraphAddKernelNode(&kn, g2, &ms, 1, &kp);
  cudaHostNodeParams hp = {};
  hp.fn = count_call;
  hp.userData = &host_calls;
  cudaGraphAddHostNode(&hn, g2, &kn, 1, &hp);
  cudaGraphAddMemcpyNode1D(&cp, g2, &kn, 1, out, y, bytes, cudaMemcpyDeviceToHost);
  size_t roots = 0;
  cudaGraphGetRootNodes(g2, nullptr, &roots);
  cudaGraphExec_t ge2;
  cudaGraphInstantiate(&ge2, g2, 0);
  cudaGraphLaunch(ge2, s2);
  cudaStreamSynchronize(s2);
  printf("explicit: %zu root node, y[3] = %g, host calls %d\n", roots, out[3], host_calls);
  ok &= roots == 1 && out[3] == 7.0f && host_calls == 1;

  // 3. the executable graph's kernel node with new arguments: y += y
  void *args2[] = {&y, &y, &nn};
  kp.kernelParams = args2;
  cudaGraphExecKernelNodeSetParams(ge2, kn, &kp);
  cudaGraphLaunch(ge2, s2);
  cudaStreamSynchronize(s2);
  printf("updated: y[3] = %g, host calls %d\n", out[3], host_calls);
  ok &= out[3] == 2.0f && host_calls == 2;

  // 4. waiting for a capturing stream is not allowed, and ends the capture
  cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
  scale<<<1, 128, 0, s1>>>(x, 1.0f, n);
  cudaError_t e1 = cudaStreamSynchronize(s1);
  cudaGraph_t g3 = nullptr;
  cudaError_t e2 = cudaStreamEndCapture(s1, &g3);
  printf("sync while capturing: %s, end: %s, graph %s\n", cudaGetErrorName(e1), cudaGetErrorName(e2),
         g3 ? "made" : "none");
  ok &= e1 == cudaErrorStreamCaptureUnsupported && e2 == cudaErrorStreamCaptureInvalidated && !g3;
  cudaGetLastError();

  // 5. the default memory pool
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long keep = ~0ull, got = 0;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got);
  float *z;
  cudaMallocFromPoolAsync((void **)&z, bytes, pool, s1);
  cudaMemcpyAsync(z, h, bytes, cudaMemcpyHostToDevice, s1);
  scale<<<n / 128, 128, 0, s1>>>(z, 0.5f, n);
  cudaMemcpyAsync(out, z, bytes, cudaMemcpyDeviceToHost, s1);
  cudaFreeAsync(z, s1);
  cudaStreamSynchronize(s1);
  printf("pool: threshold %s, z[255] = %g\n", got == keep ? "kept" : "lost", out[255]);
  ok &= got == keep && out[255] == 127.5f;

  cudaGraphExecDestroy(ge);
  cudaGraphExecDestroy(ge2);
  cudaGraphDestroy(g);
  cudaGraphDestroy(g2);
  cudaError_t e = cudaDeviceSynchronize();
  ok &= e == cudaSuccess;
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
