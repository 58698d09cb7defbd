// cudaGetDeviceCount, cudaGetDeviceProperties and cudaDeviceGetAttribute must agree; one
// launch sized from the SM count.
#include <cstdio>

__global__ void mark(int *a) {
    if (threadIdx.x == 0) a[blockIdx.x] = blockIdx.x + 1;
}

int main() {
    int count = 0, dev = -1;
    cudaGetDeviceCount(&count);
    cudaGetDevice(&dev);
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, 0);
    int sms = 0, major = 0, minor = 0, warp = 0, maxthr = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0);
    cudaDeviceGetAttribute(&maxthr, cudaDevAttrMaxThreadsPerBlock, 0);
    printf("devices: %d, current: %d\n", count, dev);
    printf("name: %s\n", p.name);
    printf("SMs: %d\n", p.multiProcessorCount);
    printf("compute capability: %d.%d\n", p.major, p.minor);
    printf("warp size: %d, max threads per block: %d\n", p.warpSize, p.maxThreadsPerBlock);
    int bad = e != cudaSuccess || count < 1 || dev != 0;
    bad += sms != p.multiProcessorCount || major != p.major || minor != p.minor;
    bad += warp != p.warpSize || maxthr != p.maxThreadsPerBlock || warp != 32;
    int *a;
    cudaMalloc(&a, sms * sizeof(int));
    mark<<<sms, 32>>>(a);
    int *h = new int[sms];
    cudaMemcpy(h, a, sms * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < sms; i++) bad += h[i] != i + 1;
    delete[] h;
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
