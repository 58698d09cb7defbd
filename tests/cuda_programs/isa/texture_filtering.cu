// Texture reads (tex, tld4) printed bit-exactly: a 4x3 float texture and a 3x2 uchar4 texture
// read with point and linear filtering under each address mode, at coordinates on edges and
// with fractional weights; a 1D fetch from linear memory past its end; a layered and a 3D
// texture, and a cube map.  Expected by tests/unit/test_textures.py (hand-computed lines, and the whole
// output as the GPU printed it: benchmarks/gpu/isa_programs_native.sh).
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

const int NC = 12;
__constant__ float2 coords[NC];

__global__ void read_float(cudaTextureObject_t t, float4 *out) {
    int i = threadIdx.x;
    out[i] = tex2D<float4>(t, coords[i].x, coords[i].y);
}

__global__ void read_gather(cudaTextureObject_t t, float4 *out) {
    int i = threadIdx.x;
    out[i] = tex2Dgather<float4>(t, coords[i].x, coords[i].y, 0);
}

__global__ void read_uchar(cudaTextureObject_t t, uchar4 *out) {
    int i = threadIdx.x;
    out[i] = tex2D<uchar4>(t, coords[i].x, coords[i].y);
}

__global__ void fetch_linear(cudaTextureObject_t t, float *out) {
    int i = threadIdx.x;
    out[i] = tex1Dfetch<float>(t, i * 3 - 2);
}

__global__ void read_layered(cudaTextureObject_t t, float *out) {
    int i = threadIdx.x;
    out[i] = tex2DLayered<float>(t, coords[i].x, coords[i].y, i % 3);
}

__global__ void read_3d(cudaTextureObject_t t, float *out) {
    int i = threadIdx.x;
    out[i] = tex3D<float>(t, coords[i].x, coords[i].y, coords[i].x * 0.5f + 0.25f);
}

__constant__ float3 dirs[NC];

__global__ void read_cube(cudaTextureObject_t t, float *out) {
    int i = threadIdx.x;
    out[i] = texCubemap<float>(t, dirs[i].x, dirs[i].y, dirs[i].z);
}

static cudaTextureObject_t make(cudaArray_t a, cudaTextureAddressMode m, cudaTextureFilterMode f,
                                cudaTextureReadMode r, int normalized) {
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = m;
    td.filterMode = f;
    td.readMode = r;
    td.normalizedCoords = normalized;
    cudaTextureObject_t t = 0;
    cudaCreateTextureObject(&t, &res, &td, nullptr);
    return t;
}

static unsigned bits(float f) { unsigned u; memcpy(&u, &f, 4); return u; }

int main() {
    // normalized coordinates (the unnormalized runs scale them by the extent)
    float2 c[NC] = {{0.f, 0.f}, {0.1f, 0.2f}, {0.126f, 0.5f}, {0.5f, 0.5f}, {0.37f, 0.83f}, {0.9f, 0.99f},
                    {1.f, 1.f}, {1.2f, 0.4f}, {-0.3f, 0.6f}, {0.2083333f, 1.1f}, {-1.1f, -0.05f}, {0.7f, 0.01f}};
    CHECK(cudaMemcpyToSymbol(coords, c, sizeof c));
    float fl[12] = {1.f, 2.f, 4.f, 8.f, 16.f, 32.f, 64.f, 128.f, 0.25f, -3.f, 1000.f, 0.1f};
    cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();
    cudaArray_t fa;
    CHECK(cudaMallocArray(&fa, &fdesc, 4, 3));
    CHECK(cudaMemcpy2DToArray(fa, 0, 0, fl, 4 * sizeof(float), 4 * sizeof(float), 3, cudaMemcpyHostToDevice));
    unsigned char ub[3 * 2 * 4] = {0, 255, 51, 128, 10, 20, 30, 40, 200, 100, 50, 25,
                                   255, 0, 102, 64, 1, 2, 3, 4, 77, 88, 99, 111};
    cudaChannelFormatDesc udesc = cudaCreateChannelDesc<uchar4>();
    cudaArray_t ua;
    CHECK(cudaMallocArray(&ua, &udesc, 3, 2));
    CHECK(cudaMemcpy2DToArray(ua, 0, 0, ub, 12, 12, 2, cudaMemcpyHostToDevice));

    float4 *d4; uchar4 *du; float *d1;
    CHECK(cudaMalloc(&d4, NC * sizeof(float4)));
    CHECK(cudaMalloc(&du, NC * sizeof(uchar4)));
    CHECK(cudaMalloc(&d1, NC * sizeof(float)));
    float4 h4[NC]; uchar4 hu[NC]; float h1[NC];
    const char *mname[] = {"wrap", "clamp", "mirror", "border"};
    const char *fname[] = {"point", "linear"};
    for (int m = 0; m < 4; m++)
        for (int f = 0; f < 2; f++)
            for (int norm = 1; norm >= 0; norm--) {
                if (!norm && (m == 0 || m == 2)) continue;  // wrap and mirror need normalized coordinates
                cudaTextureObject_t t = make(fa, (cudaTextureAddressMode)m, (cudaTextureFilterMode)f,
                                             cudaReadModeElementType, norm);
                if (!norm) {
                    float2 s[NC];
                    for (int i = 0; i < NC; i++) s[i] = make_float2(c[i].x * 4, c[i].y * 3);
                    CHECK(cudaMemcpyToSymbol(coords, s, sizeof s));
                }
                read_float<<<1, NC>>>(t, d4);
                CHECK(cudaMemcpy(h4, d4, sizeof h4, cudaMemcpyDeviceToHost));
                for (int i = 0; i < NC; i++)
                    printf("float %s %s %s %d: %08x %08x %08x %08x\n", mname[m], fname[f], norm ? "norm" : "unnorm", i,
                           bits(h4[i].x), bits(h4[i].y), bits(h4[i].z), bits(h4[i].w));
                if (f == 0) {
                    read_gather<<<1, NC>>>(t, d4);
                    CHECK(cudaMemcpy(h4, d4, sizeof h4, cudaMemcpyDeviceToHost));
                    for (int i = 0; i < NC; i++)
                        printf("gather %s %s %d: %08x %08x %08x %08x\n", mname[m], norm ? "norm" : "unnorm", i,
                               bits(h4[i].x), bits(h4[i].y), bits(h4[i].z), bits(h4[i].w));
                }
                CHECK(cudaMemcpyToSymbol(coords, c, sizeof c));
                cudaDestroyTextureObject(t);
                // uchar4: normalized float reads (point and linear), element reads (point)
                t = make(ua, (cudaTextureAddressMode)m, (cudaTextureFilterMode)f, cudaReadModeNormalizedFloat, 1);
                read_float<<<1, NC>>>(t, d4);
                CHECK(cudaMemcpy(h4, d4, sizeof h4, cudaMemcpyDeviceToHost));
                if (norm)
                    for (int i = 0; i < NC; i++)
                        printf("uchar4 %s %s %d: %08x %08x %08x %08x\n", mname[m], fname[f], i,
                               bits(h4[i].x), bits(h4[i].y), bits(h4[i].z), bits(h4[i].w));
                cudaDestroyTextureObject(t);
                if (f == 0 && norm) {
                    t = make(ua, (cudaTextureAddressMode)m, cudaFilterModePoint, cudaReadModeElementType, 1);
                    read_uchar<<<1, NC>>>(t, du);
                    CHECK(cudaMemcpy(hu, du, sizeof hu, cudaMemcpyDeviceToHost));
                    for (int i = 0; i < NC; i++)
                        printf("uchar4 element %s %d: %d %d %d %d\n", mname[m], i, hu[i].x, hu[i].y, hu[i].z, hu[i].w);
                    cudaDestroyTextureObject(t);
                }
            }
    // a 1D texture over linear memory: integer coordinates, zero outside
    float *lin;
    CHECK(cudaMalloc(&lin, 12 * sizeof(float)));
    CHECK(cudaMemcpy(lin, fl, sizeof fl, cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = lin;
    res.res.linear.desc = fdesc;
    res.res.linear.sizeInBytes = 10 * sizeof(float);
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t lt;
    CHECK(cudaCreateTextureObject(&lt, &res, &td, nullptr));
    fetch_linear<<<1, NC>>>(lt, d1);
    CHECK(cudaMemcpy(h1, d1, sizeof h1, cudaMemcpyDeviceToHost));
    for (int i = 0; i < NC; i++) printf("linear fetch %d: %08x\n", i * 3 - 2, bits(h1[i]));
    // a layered texture: 3 layers of 4x1 and a 3D texture of 4x3x2, linear, clamped
    float lay[24];
    for (int i = 0; i < 24; i++) lay[i] = (float)(i * i) * 0.5f;
    cudaArray_t la, va;
    CHECK(cudaMalloc3DArray(&la, &fdesc, make_cudaExtent(4, 2, 3), cudaArrayLayered));
    CHECK(cudaMalloc3DArray(&va, &fdesc, make_cudaExtent(4, 3, 2), 0));
    for (int k = 0; k < 2; k++) {
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(lay, 4 * sizeof(float), 4, k ? 3 : 2);
        p.dstArray = k ? va : la;
        p.extent = k ? make_cudaExtent(4, 3, 2) : make_cudaExtent(4, 2, 3);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaTextureObject_t t = make(k ? va : la, cudaAddressModeClamp, cudaFilterModeLinear, cudaReadModeElementType, 1);
        if (k) read_3d<<<1, NC>>>(t, d1); else read_layered<<<1, NC>>>(t, d1);
        CHECK(cudaMemcpy(h1, d1, sizeof h1, cudaMemcpyDeviceToHost));
        for (int i = 0; i < NC; i++) printf("%s %d: %08x\n", k ? "3d" : "layered", i, bits(h1[i]));
        cudaDestroyTextureObject(t);
    }
    // a 4x4 cube map, face f texel i = f * 100 + i * i, point and linear
    float cube[96];
    for (int f = 0; f < 6; f++)
        for (int i = 0; i < 16; i++) cube[f * 16 + i] = (float)(f * 100 + i * i);
    float3 dv[NC] = {{1, 0, 0}, {-1, 0.2f, 0.3f}, {0.1f, -0.9f, 0.5f}, {0.2f, 0.1f, -0.8f}, {0.3f, 0.95f, -0.2f},
                     {0.5f, 0.5f, 0.49f}, {-0.6f, -0.6f, 0.61f}, {0.1f, 0.2f, 0.9f}, {1, 1, 1}, {-0.7f, 0.7f, 0},
                     {0.25f, -0.75f, 0.125f}, {0.9f, -0.1f, 0.35f}};
    CHECK(cudaMemcpyToSymbol(dirs, dv, sizeof dv));
    cudaArray_t ca;
    CHECK(cudaMalloc3DArray(&ca, &fdesc, make_cudaExtent(4, 4, 6), cudaArrayCubemap));
    cudaMemcpy3DParms cp = {};
    cp.srcPtr = make_cudaPitchedPtr(cube, 4 * sizeof(float), 4, 4);
    cp.dstArray = ca;
    cp.extent = make_cudaExtent(4, 4, 6);
    cp.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&cp));
    for (int f = 0; f < 2; f++) {
        cudaTextureObject_t t = make(ca, cudaAddressModeClamp, (cudaTextureFilterMode)f, cudaReadModeElementType, 1);
        read_cube<<<1, NC>>>(t, d1);
        CHECK(cudaMemcpy(h1, d1, sizeof h1, cudaMemcpyDeviceToHost));
        for (int i = 0; i < NC; i++) printf("cube %s %d: %08x\n", fname[f], i, bits(h1[i]));
        cudaDestroyTextureObject(t);
    }
    CHECK(cudaFreeArray(ca));
    CHECK(cudaFreeArray(fa));
    CHECK(cudaFreeArray(ua));
    CHECK(cudaFreeArray(la));
    CHECK(cudaFreeArray(va));
    printf("done\n");
    return 0;
}
