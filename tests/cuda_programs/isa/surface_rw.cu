// Surface loads and stores (suld.b, sust.b, suq) on a 2D uint surface and a 1D uchar4 surface,
// in range and out of range with cudaBoundaryModeZero (reads zero, drops writes) and
// cudaBoundaryModeClamp (the nearest texel); then a .trap store out of range, which stops the
// kernel.  Expected by tests/unit/test_textures.py.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void write_read(cudaSurfaceObject_t s, cudaSurfaceObject_t s1, int *out) {
    int t = threadIdx.x;           // 0 .. 11
    int x = t % 6 - 1, y = t / 6;  // x in -1 .. 4 (the surface is 4 wide), y 0 .. 1
    surf2Dwrite<unsigned>(1000 + t, s, x * 4, y, cudaBoundaryModeZero);
    if (x < 0 || x > 3)  // clamped into row 2, each to its own texel: (0, 2) (3, 2) (1, 2) (2, 2)
        surf2Dwrite<unsigned>(2000 + t, s, y == 0 ? x * 4 : x * 4 + (x < 0 ? 8 : -8), y == 0 ? 2 : 9,
                              cudaBoundaryModeClamp);
    __syncthreads();
    out[4 * t + 0] = surf2Dread<unsigned>(s, x * 4, y, cudaBoundaryModeZero);
    out[4 * t + 1] = surf2Dread<unsigned>(s, x * 4 + 8, y + 2, cudaBoundaryModeClamp);
    uchar4 v = make_uchar4(t, t + 1, 2 * t, 255 - t);
    surf1Dwrite(v, s1, (t - 2) * 4, cudaBoundaryModeZero);
    __syncthreads();
    uchar4 r = surf1Dread<uchar4>(s1, (t - 1) * 4, cudaBoundaryModeClamp);
    out[4 * t + 2] = r.x | r.y << 8 | r.z << 16 | r.w << 24;
    unsigned w, h;
    asm("suq.width.b32 %0, [%1];" : "=r"(w) : "l"(s));
    asm("suq.height.b32 %0, [%1];" : "=r"(h) : "l"(s));
    out[4 * t + 3] = w * 100 + h;
}

__global__ void trap_store(cudaSurfaceObject_t s) {
    surf2Dwrite<unsigned>(7, s, threadIdx.x * 4, 0, cudaBoundaryModeTrap);  // x up to 7 * 4: past 4 texels
}

static cudaSurfaceObject_t make(cudaArray_t a) {
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = a;
    cudaSurfaceObject_t s = 0;
    cudaCreateSurfaceObject(&s, &res);
    return s;
}

int main() {
    cudaChannelFormatDesc ud = cudaCreateChannelDesc<unsigned>();
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<uchar4>();
    cudaArray_t a, b;
    cudaMallocArray(&a, &ud, 4, 3, cudaArraySurfaceLoadStore);
    cudaMallocArray(&b, &cd, 8, 0, cudaArraySurfaceLoadStore);
    unsigned init[12];
    for (int i = 0; i < 12; i++) init[i] = i;
    cudaMemcpy2DToArray(a, 0, 0, init, 16, 16, 3, cudaMemcpyHostToDevice);
    cudaSurfaceObject_t s = make(a), s1 = make(b);
    int *out;
    cudaMalloc(&out, 48 * sizeof(int));
    write_read<<<1, 12>>>(s, s1, out);
    int h[48];
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    for (int t = 0; t < 12; t++) printf("thread %d: %d %d %08x %d\n", t, h[4 * t], h[4 * t + 1], h[4 * t + 2], h[4 * t + 3]);
    unsigned back[12];
    cudaMemcpy2DFromArray(back, 16, a, 0, 0, 16, 3, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 12; i++) printf("texel %d: %u\n", i, back[i]);
    unsigned char cb[32];
    cudaMemcpy2DFromArray(cb, 32, b, 0, 0, 32, 1, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 8; i++) printf("uchar4 texel %d: %d %d %d %d\n", i, cb[4 * i], cb[4 * i + 1], cb[4 * i + 2], cb[4 * i + 3]);
    trap_store<<<1, 8>>>(s);
    cudaError_t e = cudaDeviceSynchronize();
    printf("trap store: %s\n", e == cudaSuccess ? "no error" : "an error");
    return 0;
}
