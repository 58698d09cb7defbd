"""The CUDA runtime API hypa provides, described once as data.

Each entry is a C prototype in a small notation: the return kind, the name, and each
parameter's kind.  ``cudart.shim`` generates the C library's exported functions from it
(they pack their arguments into 64-bit words and call the Python dispatcher) and
``cudart.host`` implements each name as a method.  Names of NVIDIA's ``libcudart`` that are
not here get a stub that stops the program with a one-line error naming the call.

Kinds: ``err`` (cudaError_t), ``void``, ``ptr`` (any pointer, passed as its address),
``cstr`` (a returned ``const char*``), ``int``, ``uint``, ``size`` (size_t), ``char``,
``dim3`` (a struct of three unsigned ints, by value: three words), ``extent`` (cudaExtent,
three size_t by value: three words), ``u64`` (an 8-byte struct by value, e.g.
cudaMemLocation), ``float``; and as a return kind only, ``chan`` (a cudaChannelFormatDesc
returned by value: the C library builds it from the arguments, the dispatcher is not called).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("err", "void", "ptr", "cstr", "int", "uint", "size", "char", "dim3", "extent", "u64", "float", "chan")

PROTOTYPES = """
ptr  __cudaRegisterFatBinary(ptr fatCubin)
void __cudaRegisterFatBinaryEnd(ptr handle)
void __cudaUnregisterFatBinary(ptr handle)
void __cudaRegisterFunction(ptr handle, ptr hostFun, ptr deviceFun, ptr deviceName, int threadLimit, ptr tid, ptr bid, ptr bDim, ptr gDim, ptr wSize)
void __cudaRegisterVar(ptr handle, ptr hostVar, ptr deviceAddress, ptr deviceName, int ext, size size, int constant, int global)
void __cudaRegisterManagedVar(ptr handle, ptr hostVarPtrAddress, ptr deviceAddress, ptr deviceName, int ext, size size, int constant, int global)
char __cudaInitModule(ptr handle)
uint __cudaPushCallConfiguration(dim3 grid, dim3 block, size sharedMem, ptr stream)
err  __cudaPopCallConfiguration(ptr grid, ptr block, ptr sharedMem, ptr stream)
err  __cudaGetKernel(ptr kernel, ptr func)
err  __cudaLaunchKernel(ptr kernel, dim3 grid, dim3 block, ptr args, size sharedMem, ptr stream)
err  __cudaLaunchKernel_ptsz(ptr kernel, dim3 grid, dim3 block, ptr args, size sharedMem, ptr stream)
err  cudaLaunchKernel(ptr func, dim3 grid, dim3 block, ptr args, size sharedMem, ptr stream)
err  cudaLaunchKernel_ptsz(ptr func, dim3 grid, dim3 block, ptr args, size sharedMem, ptr stream)
err  cudaLaunchCooperativeKernel(ptr func, dim3 grid, dim3 block, ptr args, size sharedMem, ptr stream)
err  cudaLaunchCooperativeKernel_ptsz(ptr func, dim3 grid, dim3 block, ptr args, size sharedMem, ptr stream)
err  cudaMalloc(ptr devPtr, size size)
err  cudaMallocManaged(ptr devPtr, size size, uint flags)
err  cudaMallocHost(ptr ptr, size size)
err  cudaHostAlloc(ptr pHost, size size, uint flags)
err  cudaMallocPitch(ptr devPtr, ptr pitch, size width, size height)
err  cudaMallocAsync(ptr devPtr, size size, ptr stream)
err  cudaMallocAsync_ptsa(ptr devPtr, size size, ptr stream)
err  cudaFree(ptr devPtr)
err  cudaFreeHost(ptr ptr)
err  cudaFreeAsync(ptr devPtr, ptr stream)
err  cudaFreeAsync_ptsz(ptr devPtr, ptr stream)
err  cudaHostGetDevicePointer(ptr pDevice, ptr pHost, uint flags)
err  cudaHostRegister(ptr ptr, size size, uint flags)
err  cudaHostUnregister(ptr ptr)
err  cudaMemGetInfo(ptr free, ptr total)
err  cudaMemcpy(ptr dst, ptr src, size count, int kind)
err  cudaMemcpy_ptds(ptr dst, ptr src, size count, int kind)
err  cudaMemcpyAsync(ptr dst, ptr src, size count, int kind, ptr stream)
err  cudaMemcpyAsync_ptsz(ptr dst, ptr src, size count, int kind, ptr stream)
err  cudaMemcpy2D(ptr dst, size dpitch, ptr src, size spitch, size width, size height, int kind)
err  cudaMemcpy2DAsync(ptr dst, size dpitch, ptr src, size spitch, size width, size height, int kind, ptr stream)
chan cudaCreateChannelDesc(int x, int y, int z, int w, int f)
err  cudaMallocArray(ptr array, ptr desc, size width, size height, uint flags)
err  cudaMalloc3DArray(ptr array, ptr desc, extent extent, uint flags)
err  cudaFreeArray(ptr array)
err  cudaGetChannelDesc(ptr desc, ptr array)
err  cudaArrayGetInfo(ptr desc, ptr extent, ptr flags, ptr array)
err  cudaMemcpy2DToArray(ptr dst, size wOffset, size hOffset, ptr src, size spitch, size width, size height, int kind)
err  cudaMemcpy2DToArray_ptds(ptr dst, size wOffset, size hOffset, ptr src, size spitch, size width, size height, int kind)
err  cudaMemcpy2DToArrayAsync(ptr dst, size wOffset, size hOffset, ptr src, size spitch, size width, size height, int kind, ptr stream)
err  cudaMemcpyToArray(ptr dst, size wOffset, size hOffset, ptr src, size count, int kind)
err  cudaMemcpyToArray_ptds(ptr dst, size wOffset, size hOffset, ptr src, size count, int kind)
err  cudaMemcpyFromArray(ptr dst, ptr src, size wOffset, size hOffset, size count, int kind)
err  cudaMemcpyFromArray_ptds(ptr dst, ptr src, size wOffset, size hOffset, size count, int kind)
err  cudaMemcpy2DFromArray(ptr dst, size dpitch, ptr src, size wOffset, size hOffset, size width, size height, int kind)
err  cudaMemcpy2DFromArray_ptds(ptr dst, size dpitch, ptr src, size wOffset, size hOffset, size width, size height, int kind)
err  cudaMemcpy3D(ptr p)
err  cudaMemcpy3D_ptds(ptr p)
err  cudaMemcpy3DAsync(ptr p, ptr stream)
err  cudaMemcpy3DAsync_ptsz(ptr p, ptr stream)
err  cudaCreateTextureObject(ptr pTexObject, ptr pResDesc, ptr pTexDesc, ptr pResViewDesc)
err  cudaDestroyTextureObject(u64 texObject)
err  cudaGetTextureObjectResourceDesc(ptr pResDesc, u64 texObject)
err  cudaCreateSurfaceObject(ptr pSurfObject, ptr pResDesc)
err  cudaDestroySurfaceObject(u64 surfObject)
err  cudaMemset(ptr devPtr, int value, size count)
err  cudaMemset_ptds(ptr devPtr, int value, size count)
err  cudaMemsetAsync(ptr devPtr, int value, size count, ptr stream)
err  cudaMemsetAsync_ptsz(ptr devPtr, int value, size count, ptr stream)
err  cudaMemset2D(ptr devPtr, size pitch, int value, size width, size height)
err  cudaMemcpyToSymbol(ptr symbol, ptr src, size count, size offset, int kind)
err  cudaMemcpyToSymbol_ptds(ptr symbol, ptr src, size count, size offset, int kind)
err  cudaMemcpyFromSymbol(ptr dst, ptr symbol, size count, size offset, int kind)
err  cudaMemcpyFromSymbol_ptds(ptr dst, ptr symbol, size count, size offset, int kind)
err  cudaMemcpyToSymbolAsync(ptr symbol, ptr src, size count, size offset, int kind, ptr stream)
err  cudaMemcpyFromSymbolAsync(ptr dst, ptr symbol, size count, size offset, int kind, ptr stream)
err  cudaGetSymbolAddress(ptr devPtr, ptr symbol)
err  cudaGetSymbolSize(ptr size, ptr symbol)
err  cudaMemPrefetchAsync(ptr devPtr, size count, u64 location, uint flags, ptr stream)
err  cudaMemAdvise(ptr devPtr, size count, int advice, u64 location)
err  cudaPointerGetAttributes(ptr attributes, ptr ptr)
err  cudaGetDeviceCount(ptr count)
err  cudaGetDevice(ptr device)
err  cudaSetDevice(int device)
err  cudaInitDevice(int device, uint deviceFlags, uint flags)
err  cudaSetDeviceFlags(uint flags)
err  cudaGetDeviceFlags(ptr flags)
err  cudaChooseDevice(ptr device, ptr prop)
err  cudaGetDeviceProperties(ptr prop, int device)
err  cudaGetDeviceProperties_v2(ptr prop, int device)
err  cudaDeviceGetAttribute(ptr value, int attr, int device)
err  cudaDeviceGetLimit(ptr value, int limit)
err  cudaDeviceSetLimit(int limit, size value)
err  cudaDeviceGetCacheConfig(ptr config)
err  cudaDeviceSetCacheConfig(int config)
err  cudaDeviceGetStreamPriorityRange(ptr least, ptr greatest)
err  cudaDeviceSynchronize()
err  cudaDeviceReset()
err  cudaThreadSynchronize()
err  cudaDriverGetVersion(ptr version)
err  cudaRuntimeGetVersion(ptr version)
err  cudaGetLastError()
err  cudaPeekAtLastError()
cstr cudaGetErrorString(int error)
cstr cudaGetErrorName(int error)
err  cudaFuncGetAttributes(ptr attr, ptr func)
err  cudaFuncSetAttribute(ptr func, int attr, int value)
err  cudaFuncSetCacheConfig(ptr func, int config)
err  cudaOccupancyMaxActiveBlocksPerMultiprocessor(ptr numBlocks, ptr func, int blockSize, size dynamicSMemSize)
err  cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(ptr numBlocks, ptr func, int blockSize, size dynamicSMemSize, uint flags)
err  cudaOccupancyAvailableDynamicSMemPerBlock(ptr dynamicSmemSize, ptr func, int numBlocks, int blockSize)
err  cudaStreamCreate(ptr stream)
err  cudaStreamCreateWithFlags(ptr stream, uint flags)
err  cudaStreamCreateWithPriority(ptr stream, uint flags, int priority)
err  cudaStreamDestroy(ptr stream)
err  cudaStreamSynchronize(ptr stream)
err  cudaStreamSynchronize_ptsz(ptr stream)
err  cudaStreamQuery(ptr stream)
err  cudaStreamWaitEvent(ptr stream, ptr event, uint flags)
err  cudaStreamGetPriority(ptr stream, ptr priority)
err  cudaStreamGetFlags(ptr stream, ptr flags)
err  cudaStreamAddCallback(ptr stream, ptr callback, ptr userData, uint flags)
err  cudaLaunchHostFunc(ptr stream, ptr fn, ptr userData)
err  cudaLaunchHostFunc_ptsz(ptr stream, ptr fn, ptr userData)
err  cudaEventCreate(ptr event)
err  cudaEventCreateWithFlags(ptr event, uint flags)
err  cudaEventRecord(ptr event, ptr stream)
err  cudaEventRecord_ptsz(ptr event, ptr stream)
err  cudaEventRecordWithFlags(ptr event, ptr stream, uint flags)
err  cudaEventSynchronize(ptr event)
err  cudaEventQuery(ptr event)
err  cudaEventElapsedTime(ptr ms, ptr start, ptr end)
err  cudaEventDestroy(ptr event)
err  cudaGraphCreate(ptr pGraph, uint flags)
err  cudaGraphDestroy(ptr graph)
err  cudaGraphAddKernelNode(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies, ptr pNodeParams)
err  cudaGraphKernelNodeSetParams(ptr node, ptr pNodeParams)
err  cudaGraphAddMemcpyNode(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies, ptr pCopyParams)
err  cudaGraphAddMemcpyNode1D(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies, ptr dst, ptr src, size count, int kind)
err  cudaGraphAddMemsetNode(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies, ptr pMemsetParams)
err  cudaGraphAddHostNode(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies, ptr pNodeParams)
err  cudaGraphAddEmptyNode(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies)
err  cudaGraphAddChildGraphNode(ptr pGraphNode, ptr graph, ptr pDependencies, size numDependencies, ptr childGraph)
err  cudaGraphAddDependencies(ptr graph, ptr frm, ptr to, ptr edgeData, size numDependencies)
err  cudaGraphGetNodes(ptr graph, ptr nodes, ptr numNodes)
err  cudaGraphGetRootNodes(ptr graph, ptr pRootNodes, ptr pNumRootNodes)
err  cudaGraphClone(ptr pGraphClone, ptr originalGraph)
err  cudaGraphInstantiate(ptr pGraphExec, ptr graph, size flags)
err  cudaGraphInstantiateWithFlags(ptr pGraphExec, ptr graph, size flags)
err  cudaGraphExecKernelNodeSetParams(ptr hGraphExec, ptr node, ptr pNodeParams)
err  cudaGraphUpload(ptr graphExec, ptr stream)
err  cudaGraphUpload_ptsz(ptr graphExec, ptr stream)
err  cudaGraphLaunch(ptr graphExec, ptr stream)
err  cudaGraphLaunch_ptsz(ptr graphExec, ptr stream)
err  cudaGraphExecDestroy(ptr graphExec)
err  cudaStreamBeginCapture(ptr stream, int mode)
err  cudaStreamBeginCapture_ptsz(ptr stream, int mode)
err  cudaStreamEndCapture(ptr stream, ptr pGraph)
err  cudaStreamEndCapture_ptsz(ptr stream, ptr pGraph)
err  cudaStreamIsCapturing(ptr stream, ptr pCaptureStatus)
err  cudaStreamIsCapturing_ptsz(ptr stream, ptr pCaptureStatus)
err  cudaStreamGetCaptureInfo(ptr stream, ptr captureStatus_out, ptr id_out, ptr graph_out, ptr dependencies_out, ptr edgeData_out, ptr numDependencies_out)
err  cudaStreamGetCaptureInfo_ptsz(ptr stream, ptr captureStatus_out, ptr id_out, ptr graph_out, ptr dependencies_out, ptr edgeData_out, ptr numDependencies_out)
err  cudaThreadExchangeStreamCaptureMode(ptr mode)
err  cudaDeviceGetDefaultMemPool(ptr memPool, int device)
err  cudaDeviceGetMemPool(ptr memPool, int device)
err  cudaDeviceSetMemPool(int device, ptr memPool)
err  cudaMemPoolCreate(ptr memPool, ptr poolProps)
err  cudaMemPoolDestroy(ptr memPool)
err  cudaMemPoolSetAttribute(ptr memPool, int attr, ptr value)
err  cudaMemPoolGetAttribute(ptr memPool, int attr, ptr value)
err  cudaMemPoolTrimTo(ptr memPool, size minBytesToKeep)
err  cudaMallocFromPoolAsync(ptr ptr, size size, ptr memPool, ptr stream)
err  cudaMallocFromPoolAsync_ptsz(ptr ptr, size size, ptr memPool, ptr stream)
err  cudaProfilerStart()
err  cudaProfilerStop()
"""


@dataclass(frozen=True)
class Prototype:
    ret: str
    name: str
    params: tuple[tuple[str, str], ...]  # (kind, name)

    @property
    def words(self) -> int:
        """64-bit words the C side packs its arguments into."""
        return sum(3 if k in ("dim3", "extent") else 1 for k, _ in self.params)


def parse(text: str) -> tuple[Prototype, ...]:
    """Prototypes from the notation above, one a line (also ``cudart.driver_api``'s)."""
    out = []
    for line in text.strip().splitlines():
        head, _, rest = line.partition("(")
        ret, name = head.split()
        params = []
        for p in rest.rstrip(")").split(","):
            p = p.strip()
            if p:
                kind, pname = p.split()
                assert kind in KINDS, (name, kind)
                params.append((kind, pname))
        assert ret in KINDS, (name, ret)
        out.append(Prototype(ret, name, tuple(params)))
    return tuple(out)


API: tuple[Prototype, ...] = parse(PROTOTYPES)

#: the calls that wait for the device's earlier work, where a kernel's fault becomes visible
#: (CUDA reports asynchronous errors "on a later, unrelated call"; these always see them)
SYNCHRONIZING = frozenset({
    "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "cudaStreamQuery", "cudaEventQuery", "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol", "cudaMemcpyToArray", "cudaMemcpyFromArray", "cudaMemcpy2DToArray",
    "cudaMemcpy2DFromArray", "cudaFree", "cudaFreeHost", "cudaFreeArray",
})

def decode(proto: Prototype, words) -> list:
    """The Python values of a call's argument words (as the C side packed them)."""
    vals: list = []
    i = 0
    for kind, _n in proto.params:
        if kind in ("dim3", "extent"):
            mask = 0xFFFFFFFF if kind == "dim3" else 0xFFFFFFFFFFFFFFFF
            vals.append(tuple(w & mask for w in words[i : i + 3]))
            i += 3
            continue
        w = words[i]
        i += 1
        if kind in ("ptr", "size", "u64"):
            vals.append(w & 0xFFFFFFFFFFFFFFFF)
        elif kind == "uint":
            vals.append(w & 0xFFFFFFFF)
        elif kind == "int":
            vals.append(((w & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000)
        else:
            vals.append(w)
    return vals


#: dispatcher codes outside the API's indices
FINISH = -1        # the program is exiting: write the results
UNSUPPORTED = -2   # the program called a function hypa does not provide (args[0]: its name)
UNSUPPORTED_DRIVER = -3  # ... a driver API function (libcuda.so.1) hypa does not provide
#: the driver API's functions (``cudart.driver_api.DRIVER_API``) are numbered from here
DRIVER_BASE = 1 << 16
