// Which misaligned wmma.load/wmma.store an H100 faults on (tests/unit/test_alignment.py, H100_WMMA).
// One case per process (a fault is sticky): KIND BYTE_OFFSET STRIDE_IN_ELEMENTS -> the errors.
//   nvcc -arch=sm_90 -O2 wmma_alignment.cu -o wmma_alignment
//   for c in "load_a_row 2 16" "load_a_row 16 16" "load_a_row 0 19" "store_d_col_f32 2 16" ...; do ./wmma_alignment $c; done
// Every fragment register is used: a dead one's load is removed, and its row not read.
#include <cstdio>
#include <cstdlib>
#include <cstring>
__global__ void load_a_row(char *p, int off, int ld, float *out) {
  unsigned r[8];
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
               : "l"(p + off), "r"(ld));
  out[threadIdx.x] = r[0]^r[1]^r[2]^r[3]^r[4]^r[5]^r[6]^r[7];
}
__global__ void load_a_col_m8n32(char *p, int off, int ld, float *out) {
  unsigned r[8];
  asm volatile("wmma.load.a.sync.aligned.col.m8n32k16.global.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
               : "l"(p + off), "r"(ld));
  out[threadIdx.x] = r[0]^r[1]^r[2]^r[3]^r[4]^r[5]^r[6]^r[7];
}
__global__ void load_c_row_f32(char *p, int off, int ld, float *out) {
  float r[8];
  asm volatile("wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
               : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]), "=f"(r[4]), "=f"(r[5]), "=f"(r[6]), "=f"(r[7])
               : "l"(p + off), "r"(ld));
  out[threadIdx.x] = r[0]+r[1]+r[2]+r[3]+r[4]+r[5]+r[6]+r[7];
}
__global__ void store_d_col_f32(char *p, int off, int ld, float *out) {
  float v = threadIdx.x;
  asm volatile("wmma.store.d.sync.aligned.col.m16n16k16.global.f32 [%0], {%1,%1,%1,%1,%1,%1,%1,%1}, %2;"
               :: "l"(p + off), "f"(v), "r"(ld) : "memory");
}
int main(int argc, char **argv) {
  const char *k = argv[1]; int off = atoi(argv[2]), ld = atoi(argv[3]);
  char *p; float *out; cudaMalloc(&p, 1 << 16); cudaMalloc(&out, 4096); cudaMemset(p, 0, 1 << 16);
  if (!strcmp(k, "load_a_row")) load_a_row<<<1, 32>>>(p, off, ld, out);
  else if (!strcmp(k, "load_a_col_m8n32")) load_a_col_m8n32<<<1, 32>>>(p, off, ld, out);
  else if (!strcmp(k, "load_c_row_f32")) load_c_row_f32<<<1, 32>>>(p, off, ld, out);
  else store_d_col_f32<<<1, 32>>>(p, off, ld, out);
  cudaError_t l = cudaGetLastError(), s = cudaDeviceSynchronize();
  printf("%s off=%d ld=%d: launch %s, sync %s\n", k, off, ld, cudaGetErrorName(l), cudaGetErrorName(s));
  return 0;
}
