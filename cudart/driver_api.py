"""The CUDA driver API hypa provides (``libcuda.so.1``), described once as data.

The same notation as ``cudart.api`` (``err`` is a ``CUresult`` here; ``u64`` a
``CUdeviceptr``).  ``cudart.driver_shim`` generates the C library's exports from it and
``cudart.driver.DriverRuntime`` implements each name as a method.  The names are the symbols
NVIDIA's driver exports, version suffix and all (``cuMemAlloc_v2``): a program linked with
``-lcuda`` binds them through ``cuda.h``'s macros, and ``cuGetProcAddress`` -- how
cuda-python, CuPy and the runtime itself find driver functions -- is asked for the name
without its suffix plus a CUDA version, and answers with the newest variant that version
has (``SINCE``).
"""

from __future__ import annotations

import os
import re

from .api import Prototype, parse

PROTOTYPES = """
err cuInit(uint flags)
err cuDriverGetVersion(ptr driverVersion)
err cuDeviceGet(ptr device, int ordinal)
err cuDeviceGetCount(ptr count)
err cuDeviceGetName(ptr name, int len, int dev)
err cuDeviceGetAttribute(ptr pi, int attrib, int dev)
err cuDeviceTotalMem_v2(ptr bytes, int dev)
err cuDeviceComputeCapability(ptr major, ptr minor, int dev)
err cuDeviceGetUuid(ptr uuid, int dev)
err cuDeviceGetUuid_v2(ptr uuid, int dev)
err cuDevicePrimaryCtxRetain(ptr pctx, int dev)
err cuDevicePrimaryCtxRelease_v2(int dev)
err cuDevicePrimaryCtxReset_v2(int dev)
err cuDevicePrimaryCtxGetState(int dev, ptr flags, ptr active)
err cuDevicePrimaryCtxSetFlags_v2(int dev, uint flags)
err cuCtxCreate_v2(ptr pctx, uint flags, int dev)
err cuCtxCreate_v3(ptr pctx, ptr paramsArray, int numParams, uint flags, int dev)
err cuCtxCreate_v4(ptr pctx, ptr ctxCreateParams, uint flags, int dev)
err cuCtxDestroy_v2(ptr ctx)
err cuCtxDetach(ptr ctx)
err cuCtxPushCurrent_v2(ptr ctx)
err cuCtxPopCurrent_v2(ptr pctx)
err cuCtxSetCurrent(ptr ctx)
err cuCtxGetCurrent(ptr pctx)
err cuCtxGetDevice(ptr device)
err cuCtxSynchronize()
err cuModuleLoadData(ptr module, ptr image)
err cuModuleLoadDataEx(ptr module, ptr image, uint numOptions, ptr options, ptr optionValues)
err cuModuleLoadFatBinary(ptr module, ptr fatCubin)
err cuModuleUnload(ptr hmod)
err cuLinkCreate_v2(uint numOptions, ptr options, ptr optionValues, ptr stateOut)
err cuLinkAddData_v2(ptr state, int type, ptr data, size size, ptr name, uint numOptions, ptr options, ptr optionValues)
err cuLinkAddFile_v2(ptr state, int type, ptr path, uint numOptions, ptr options, ptr optionValues)
err cuLinkComplete(ptr state, ptr cubinOut, ptr sizeOut)
err cuLinkDestroy(ptr state)
err cuModuleGetFunction(ptr hfunc, ptr hmod, ptr name)
err cuModuleGetGlobal_v2(ptr dptr, ptr bytes, ptr hmod, ptr name)
err cuLibraryLoadData(ptr library, ptr code, ptr jitOptions, ptr jitOptionsValues, uint numJitOptions, ptr libraryOptions, ptr libraryOptionValues, uint numLibraryOptions)
err cuLibraryUnload(ptr library)
err cuLibraryGetKernel(ptr pKernel, ptr library, ptr name)
err cuLibraryGetModule(ptr pMod, ptr library)
err cuLibraryGetGlobal(ptr dptr, ptr bytes, ptr library, ptr name)
err cuKernelGetFunction(ptr pFunc, ptr kernel)
err cuKernelGetAttribute(ptr pi, int attrib, ptr kernel, int dev)
err cuKernelSetAttribute(int attrib, int val, ptr kernel, int dev)
err cuKernelSetCacheConfig(ptr kernel, int config, int dev)
err cuFuncGetAttribute(ptr pi, int attrib, ptr hfunc)
err cuFuncSetAttribute(ptr hfunc, int attrib, int value)
err cuFuncSetCacheConfig(ptr hfunc, int config)
err cuOccupancyMaxActiveBlocksPerMultiprocessor(ptr numBlocks, ptr func, int blockSize, size dynamicSMemSize)
err cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(ptr numBlocks, ptr func, int blockSize, size dynamicSMemSize, uint flags)
err cuLaunchKernel(ptr f, uint gridDimX, uint gridDimY, uint gridDimZ, uint blockDimX, uint blockDimY, uint blockDimZ, uint sharedMemBytes, ptr hStream, ptr kernelParams, ptr extra)
err cuLaunchKernelEx(ptr config, ptr f, ptr kernelParams, ptr extra)
err cuLaunchCooperativeKernel(ptr f, uint gridDimX, uint gridDimY, uint gridDimZ, uint blockDimX, uint blockDimY, uint blockDimZ, uint sharedMemBytes, ptr hStream, ptr kernelParams)
err cuFuncSetBlockShape(ptr hfunc, int x, int y, int z)
err cuFuncSetSharedSize(ptr hfunc, uint bytes)
err cuParamSetSize(ptr hfunc, uint numbytes)
err cuParamSeti(ptr hfunc, int offset, uint value)
err cuParamSetf(ptr hfunc, int offset, float value)
err cuParamSetv(ptr hfunc, int offset, ptr ptr, uint numbytes)
err cuLaunch(ptr f)
err cuLaunchGrid(ptr f, int grid_width, int grid_height)
err cuLaunchGridAsync(ptr f, int grid_width, int grid_height, ptr hStream)
err cuMemGetInfo_v2(ptr free, ptr total)
err cuMemAlloc_v2(ptr dptr, size bytesize)
err cuMemAllocManaged(ptr dptr, size bytesize, uint flags)
err cuMemFree_v2(u64 dptr)
err cuMemAllocHost_v2(ptr pp, size bytesize)
err cuMemHostAlloc(ptr pp, size bytesize, uint flags)
err cuMemFreeHost(ptr p)
err cuMemHostRegister_v2(ptr p, size bytesize, uint flags)
err cuMemHostUnregister(ptr p)
err cuMemHostGetDevicePointer_v2(ptr pdptr, ptr p, uint flags)
err cuMemGetAddressRange_v2(ptr pbase, ptr psize, u64 dptr)
err cuPointerGetAttribute(ptr data, int attribute, u64 ptr)
err cuMemcpy(u64 dst, u64 src, size byteCount)
err cuMemcpyAsync(u64 dst, u64 src, size byteCount, ptr hStream)
err cuMemcpyHtoD_v2(u64 dstDevice, ptr srcHost, size byteCount)
err cuMemcpyDtoH_v2(ptr dstHost, u64 srcDevice, size byteCount)
err cuMemcpyDtoD_v2(u64 dstDevice, u64 srcDevice, size byteCount)
err cuMemcpyHtoDAsync_v2(u64 dstDevice, ptr srcHost, size byteCount, ptr hStream)
err cuMemcpyDtoHAsync_v2(ptr dstHost, u64 srcDevice, size byteCount, ptr hStream)
err cuMemcpyDtoDAsync_v2(u64 dstDevice, u64 srcDevice, size byteCount, ptr hStream)
err cuMemsetD8_v2(u64 dstDevice, uint uc, size n)
err cuMemsetD16_v2(u64 dstDevice, uint us, size n)
err cuMemsetD32_v2(u64 dstDevice, uint ui, size n)
err cuMemsetD8Async(u64 dstDevice, uint uc, size n, ptr hStream)
err cuMemsetD16Async(u64 dstDevice, uint us, size n, ptr hStream)
err cuMemsetD32Async(u64 dstDevice, uint ui, size n, ptr hStream)
err cuStreamCreate(ptr phStream, uint flags)
err cuStreamCreateWithPriority(ptr phStream, uint flags, int priority)
err cuStreamDestroy_v2(ptr hStream)
err cuStreamSynchronize(ptr hStream)
err cuStreamQuery(ptr hStream)
err cuStreamWaitEvent(ptr hStream, ptr hEvent, uint flags)
err cuStreamAddCallback(ptr hStream, ptr callback, ptr userData, uint flags)
err cuEventCreate(ptr phEvent, uint flags)
err cuEventRecord(ptr hEvent, ptr hStream)
err cuEventSynchronize(ptr hEvent)
err cuEventQuery(ptr hEvent)
err cuEventElapsedTime(ptr pMilliseconds, ptr hStart, ptr hEnd)
err cuEventElapsedTime_v2(ptr pMilliseconds, ptr hStart, ptr hEnd)
err cuEventDestroy_v2(ptr hEvent)
err cuProfilerStart()
err cuProfilerStop()
"""

DRIVER_API: tuple[Prototype, ...] = parse(PROTOTYPES)

#: the CUDA version (1000 * major + 10 * minor) each variant appeared in, where not 2.0;
#: ``cuGetProcAddress(name, version)`` returns the newest variant of ``name`` at ``version``
SINCE = {
    "cuDriverGetVersion": 2020, "cuDeviceTotalMem_v2": 3020, "cuDeviceGetUuid": 9020, "cuDeviceGetUuid_v2": 11040,
    "cuDevicePrimaryCtxRetain": 7000, "cuDevicePrimaryCtxRelease_v2": 11000, "cuDevicePrimaryCtxReset_v2": 11000,
    "cuDevicePrimaryCtxGetState": 7000, "cuDevicePrimaryCtxSetFlags_v2": 11000,
    "cuCtxCreate_v2": 3020, "cuCtxCreate_v3": 11040, "cuCtxCreate_v4": 12050, "cuCtxDestroy_v2": 4000,
    "cuCtxPushCurrent_v2": 4000, "cuCtxPopCurrent_v2": 4000, "cuCtxSetCurrent": 4000, "cuCtxGetCurrent": 4000,
"cuModuleLoadDataEx": 2010, "cuLinkCreate_v2": 6050, "cuLinkAddData_v2": 6050, "cuLinkAddFile_v2": 6050,
    "cuLinkComplete": 5050, "cuLinkDestroy": 5050,
    "cuFuncGetAttribute": 2020, "cuFuncSetAttribute": 9000, "cuFuncSetCacheConfig": 3000,
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": 6050, "cuLaunchKernel": 4000, "cuLaunchKernelEx": 11060, "cuLaunchCooperativeKernel": 9000,
    "cuMemGetInfo_v2": 3020, "cuMemAlloc_v2": 3020, "cuMemAllocManaged": 6000, "cuMemFree_v2": 3020,
    "cuMemAllocHost_v2": 3020, "cuMemHostAlloc": 2020, "cuMemcpy": 4000, "cuMemcpyAsync": 4000,
    "cuMemcpyHtoD_v2": 3020, "cuMemcpyDtoH_v2": 3020, "cuMemcpyDtoD_v2": 3020, "cuMemcpyHtoDAsync_v2": 3020,
    "cuMemcpyDtoHAsync_v2": 3020, "cuModuleGetGlobal_v2": 3020,
    "cuLibraryLoadData": 12000, "cuLibraryUnload": 12000, "cuLibraryGetKernel": 12000, "cuLibraryGetModule": 12000,
    "cuLibraryGetGlobal": 12000, "cuKernelGetFunction": 12000, "cuKernelGetAttribute": 12000, "cuKernelSetAttribute": 12000,
    "cuKernelSetCacheConfig": 12000, "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": 7000,
    "cuMemHostRegister_v2": 6050, "cuMemHostUnregister": 4000, "cuMemHostGetDevicePointer_v2": 3020,
    "cuMemGetAddressRange_v2": 3020, "cuPointerGetAttribute": 4000, "cuStreamAddCallback": 5000, "cuMemcpyDtoDAsync_v2": 3020, "cuMemsetD8_v2": 3020, "cuMemsetD16_v2": 3020,
    "cuMemsetD32_v2": 3020, "cuMemsetD8Async": 3020, "cuMemsetD16Async": 3020, "cuMemsetD32Async": 3020,
    "cuStreamCreateWithPriority": 5050, "cuStreamDestroy_v2": 4000, "cuStreamWaitEvent": 3020,
    "cuEventElapsedTime_v2": 12080, "cuEventDestroy_v2": 4000, "cuProfilerStart": 4000, "cuProfilerStop": 4000,
    "cuGetErrorString": 6000, "cuGetErrorName": 6000, "cuGetProcAddress": 11030, "cuGetProcAddress_v2": 12000, "cuGetExportTable": 2000,
}

#: answered by the C library itself (no call into Python): error texts and the symbol lookup
IN_C = ("cuGetErrorString", "cuGetErrorName", "cuGetProcAddress", "cuGetProcAddress_v2", "cuGetExportTable")

#: the calls that wait for the device's earlier work (where a kernel's fault becomes visible)
SYNCHRONIZING = frozenset({
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuStreamQuery", "cuEventQuery", "cuMemcpy",
    "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemFree_v2", "cuMemFreeHost",
})


def base_name(symbol: str) -> str:
    """The name ``cuGetProcAddress`` is asked for: the symbol less its ``_vN``/``_ptds``/``_ptsz``."""
    return re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", symbol)


def since(symbol: str) -> int:
    return SINCE.get(symbol, 2000)


def exported_names() -> list[str]:
    """Every function name NVIDIA's ``libcuda.so.1`` exports (driver 580, CUDA 13.0; names only)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver_exports.txt")) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def errors() -> dict[int, tuple[str, str]]:
    """CUresult values: name and ``cuGetErrorString``'s text, as NVIDIA's driver gives them."""
    from .errors import read_table

    return read_table("driver_errors.tsv")
