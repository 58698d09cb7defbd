// The runtime called from several host threads: cudaGetLastError is per host thread (an
// error in one thread is not another's), four threads launch and copy at the same time, a
// SIGINT the program waits for with sigwait() on a thread of its own reaches that thread
// (never the runtime's), and the program ends by calling exit() on a thread that is not main.
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

__global__ void fill(int *p, int v) { p[threadIdx.x] = v + threadIdx.x; }

static pthread_barrier_t step;
static cudaError_t set_bad, later_own;

static void *bad_device(void *) {
  set_bad = cudaSetDevice(7);  // there is one device: cudaErrorInvalidDevice, this thread's last error
  pthread_barrier_wait(&step);  // main reads its own last error now
  pthread_barrier_wait(&step);
  later_own = cudaGetLastError();
  return 0;
}

static int sums[4];
static void *worker(void *arg) {
  int t = (int)(size_t)arg, *d, h[64];
  cudaMalloc(&d, sizeof h);
  for (int round = 0; round < 5; round++) {
    fill<<<1, 64>>>(d, 1000 * t + round);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  }
  cudaFree(d);
  int s = 0;
  for (int i = 0; i < 64; i++) s += h[i];
  sums[t] = s;
  return 0;
}

static int caught;
static void *waiter(void *) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  for (;;) {
    int sig;
    sigwait(&s, &sig);
    __atomic_add_fetch(&caught, 1, __ATOMIC_SEQ_CST);
  }
  return 0;
}

static bool ok = true;
static void *finish(void *) {
  printf("%s\n", ok ? "PASS" : "FAIL");
  exit(ok ? 0 : 1);  // the runtime writes its results from this thread's exit
}

int main() {
  // SIGINT blocked before the first CUDA call: every thread made later inherits the mask,
  // NVIDIA's runtime's own threads included (blocked only later, one of those would take
  // the signal, and its default action ends the program: what the H100 run showed)
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  pthread_sigmask(SIG_BLOCK, &s, 0);
  pthread_barrier_init(&step, 0, 2);
  pthread_t a;
  pthread_create(&a, 0, bad_device, 0);
  pthread_barrier_wait(&step);
  cudaError_t main_own = cudaGetLastError();
  pthread_barrier_wait(&step);
  pthread_join(a, 0);
  printf("other thread: %s; main's last error: %s; other's: %s\n", cudaGetErrorName(set_bad),
         cudaGetErrorName(main_own), cudaGetErrorName(later_own));
  ok &= set_bad == cudaErrorInvalidDevice && main_own == cudaSuccess && later_own == cudaErrorInvalidDevice;

  pthread_t w[4];
  for (int t = 0; t < 4; t++) pthread_create(&w[t], 0, worker, (void *)(size_t)t);
  for (int t = 0; t < 4; t++) pthread_join(w[t], 0);
  printf("sums: %d %d %d %d\n", sums[0], sums[1], sums[2], sums[3]);
  for (int t = 0; t < 4; t++) ok &= sums[t] == 64 * (1000 * t + 4) + 2016;

  pthread_t sw;
  pthread_create(&sw, 0, waiter, 0);
  int *d;
  cudaMalloc(&d, 256);
  for (int i = 0; i < 20; i++) {
    kill(getpid(), SIGINT);
    fill<<<1, 64>>>(d, i);
    cudaDeviceSynchronize();
    // a signal the runtime's thread took would be lost (SIG_IGN) or kill the program
    for (int wait = 0; wait < 20000 && __atomic_load_n(&caught, __ATOMIC_SEQ_CST) <= i; wait++) usleep(100);
  }
  printf("sigwait caught %d SIGINTs\n", caught);
  ok &= caught == 20;
  fflush(stdout);
  pthread_t f;
  pthread_create(&f, 0, finish, 0);
  pthread_join(f, 0);  // never returns: the other thread exits the program
  return 2;
}
