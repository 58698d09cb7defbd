// txq on texture objects of several formats and sampler states, read with inline PTX, and
// istypep.  Expected by tests/unit/test_textures.py.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void query(cudaTextureObject_t t, int *out) {
    int v[10];
    asm("txq.width.b32 %0, [%1];" : "=r"(v[0]) : "l"(t));
    asm("txq.height.b32 %0, [%1];" : "=r"(v[1]) : "l"(t));
    asm("txq.depth.b32 %0, [%1];" : "=r"(v[2]) : "l"(t));
    asm("txq.channel_data_type.b32 %0, [%1];" : "=r"(v[3]) : "l"(t));
    asm("txq.channel_order.b32 %0, [%1];" : "=r"(v[4]) : "l"(t));
    asm("txq.normalized_coords.b32 %0, [%1];" : "=r"(v[5]) : "l"(t));
    asm("txq.filter_mode.b32 %0, [%1];" : "=r"(v[6]) : "l"(t));
    asm("txq.addr_mode_0.b32 %0, [%1];" : "=r"(v[7]) : "l"(t));
    asm("txq.addr_mode_1.b32 %0, [%1];" : "=r"(v[8]) : "l"(t));
    asm("txq.array_size.b32 %0, [%1];" : "=r"(v[9]) : "l"(t));
    for (int i = 0; i < 10; i++) out[i] = v[i];
}

int main() {
    struct { cudaChannelFormatDesc d; int w, h, dep, layered; cudaTextureAddressMode m0, m1; cudaTextureFilterMode f;
             cudaTextureReadMode r; int norm; } cases[] = {
        {cudaCreateChannelDesc<float>(), 7, 5, 0, 0, cudaAddressModeClamp, cudaAddressModeWrap, cudaFilterModeLinear, cudaReadModeElementType, 1},
        {cudaCreateChannelDesc<uchar4>(), 3, 0, 0, 0, cudaAddressModeBorder, cudaAddressModeClamp, cudaFilterModePoint, cudaReadModeNormalizedFloat, 0},
        {cudaCreateChannelDesc<short2>(), 4, 2, 3, 0, cudaAddressModeMirror, cudaAddressModeMirror, cudaFilterModePoint, cudaReadModeElementType, 1},
        {cudaCreateChannelDesc<int>(), 6, 2, 4, 1, cudaAddressModeClamp, cudaAddressModeClamp, cudaFilterModePoint, cudaReadModeElementType, 0},
    };
    int *out;
    cudaMalloc(&out, 10 * sizeof(int));
    for (int k = 0; k < 4; k++) {
        cudaArray_t a;
        cudaError_t e = cudaMalloc3DArray(&a, &cases[k].d, make_cudaExtent(cases[k].w, cases[k].h, cases[k].dep),
                                          cases[k].layered ? cudaArrayLayered : 0);
        cudaResourceDesc res = {};
        res.resType = cudaResourceTypeArray;
        res.res.array.array = a;
        cudaTextureDesc td = {};
        td.addressMode[0] = cases[k].m0;
        td.addressMode[1] = cases[k].m1;
        td.filterMode = cases[k].f;
        td.readMode = cases[k].r;
        td.normalizedCoords = cases[k].norm;
        cudaTextureObject_t t = 0;
        cudaError_t e2 = cudaCreateTextureObject(&t, &res, &td, nullptr);
        query<<<1, 1>>>(t, out);
        cudaError_t e3 = cudaDeviceSynchronize();
        int v[10] = {0};
        cudaMemcpy(v, out, sizeof v, cudaMemcpyDeviceToHost);
        cudaChannelFormatDesc got;
        cudaGetChannelDesc(&got, a);
        printf("case %d (%d %d %s): width %d height %d depth %d type %#x order %#x normalized %d filter %d modes %d %d layers %d; "
               "channel desc %d %d %d %d kind %d\n", k, (int)e, (int)e2, cudaGetErrorName(e3), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9],
               got.x, got.y, got.z, got.w, (int)got.f);
        cudaDestroyTextureObject(t);
        cudaFreeArray(a);
    }
    return 0;
}
