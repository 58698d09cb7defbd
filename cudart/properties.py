"""What the device looks like to a CUDA program: ``cudaDeviceProp``, ``cudaDeviceGetAttribute``,
``cudaFuncAttributes`` and ``cudaPointerAttributes``, as ctypes layouts plus an H100's values.

hypa runs programs without a GPU, so ``cudaGetDeviceProperties`` and
``cudaDeviceGetAttribute`` must answer as the device the timing model assumes would: an
NVIDIA H100 SXM5 80GB.  The program writes into its own struct, laid out by the header it
was compiled against, so the layouts here must match NVIDIA's byte for byte:

* CUDA 13 (``DeviceProp13``, ``FuncAttributes``, ``PointerAttributes``) follows
  ``/usr/local/cuda/include/driver_types.h`` of CUDA 13.0 (CUDART_VERSION 13000); the
  offsets were checked against gcc's ``offsetof`` (tests/unit/test_cudart_properties.py).
* CUDA 12 (``DeviceProp12``, ``PointerAttributes12``) follows ``include/driver_types.h``
  of NVIDIA's PyPI wheel ``nvidia-cuda-runtime-cu12`` 12.9.79 (CUDART_VERSION 12090),
  read with ``pip download --no-deps nvidia-cuda-runtime-cu12==12.9.*``, and checked with
  gcc the same way (sizeof 1032).  That struct is what ``cudaGetDeviceProperties_v2``
  fills for every 12.x program: 12.0 spelled its tail ``reserved2[2]; reserved1[1];
  reserved[60]`` and 12.9 ``reserved[63]``, the same 63 ints, so its size never changed
  in 12.x.

The values were read on an H100 80GB HBM3 (driver 580.159.04, CUDA 13.0 runtime) with
``cudaGetDeviceProperties`` and ``cuDeviceGetAttribute`` for every attribute number; the
identity of that one board (UUID, PCI bus/device/domain) is replaced by fixed stand-ins.
"""

from __future__ import annotations

import ctypes
import uuid as _uuid
from collections.abc import Mapping

from hypa.runtime.emulator import clock

_int = ctypes.c_int
_uint = ctypes.c_uint
_size = ctypes.c_size_t


class CudaUUID(ctypes.Structure):
    """``cudaUUID_t`` (``struct CUuuid_st``): 16 bytes."""

    _fields_ = [("bytes", ctypes.c_char * 16)]


# ---------------------------------------------------------------------------------------
# struct cudaDeviceProp
# ---------------------------------------------------------------------------------------

# The head shared by CUDA 12 and 13 up to maxGridSize (CUDA 13 then drops clockRate).
_HEAD = [
    ("name", ctypes.c_char * 256),
    ("uuid", CudaUUID),
    ("luid", ctypes.c_char * 8),
    ("luidDeviceNodeMask", _uint),
    ("totalGlobalMem", _size),
    ("sharedMemPerBlock", _size),
    ("regsPerBlock", _int),
    ("warpSize", _int),
    ("memPitch", _size),
    ("maxThreadsPerBlock", _int),
    ("maxThreadsDim", _int * 3),
    ("maxGridSize", _int * 3),
]

# From maxTexture2D to unifiedAddressing both versions agree.
_TEXTURES_TO_UNIFIED = [
    ("maxTexture2D", _int * 2),
    ("maxTexture2DMipmap", _int * 2),
    ("maxTexture2DLinear", _int * 3),
    ("maxTexture2DGather", _int * 2),
    ("maxTexture3D", _int * 3),
    ("maxTexture3DAlt", _int * 3),
    ("maxTextureCubemap", _int),
    ("maxTexture1DLayered", _int * 2),
    ("maxTexture2DLayered", _int * 3),
    ("maxTextureCubemapLayered", _int * 2),
    ("maxSurface1D", _int),
    ("maxSurface2D", _int * 2),
    ("maxSurface3D", _int * 3),
    ("maxSurface1DLayered", _int * 2),
    ("maxSurface2DLayered", _int * 3),
    ("maxSurfaceCubemap", _int),
    ("maxSurfaceCubemapLayered", _int * 2),
    ("surfaceAlignment", _size),
    ("concurrentKernels", _int),
    ("ECCEnabled", _int),
    ("pciBusID", _int),
    ("pciDeviceID", _int),
    ("pciDomainID", _int),
    ("tccDriver", _int),
    ("asyncEngineCount", _int),
    ("unifiedAddressing", _int),
]

# From sharedMemPerBlockOptin's successors to unifiedFunctionPointers both versions agree.
_OPTIN_TO_UNIFIED_POINTERS = [
    ("sharedMemPerBlockOptin", _size),
    ("pageableMemoryAccessUsesHostPageTables", _int),
    ("directManagedMemAccessFromHost", _int),
    ("maxBlocksPerMultiProcessor", _int),
    ("accessPolicyMaxWindowSize", _int),
    ("reservedSharedMemPerBlock", _size),
    ("hostRegisterSupported", _int),
    ("sparseCudaArraySupported", _int),
    ("hostRegisterReadOnlySupported", _int),
    ("timelineSemaphoreInteropSupported", _int),
    ("memoryPoolsSupported", _int),
    ("gpuDirectRDMASupported", _int),
    ("gpuDirectRDMAFlushWritesOptions", _uint),
    ("gpuDirectRDMAWritesOrdering", _int),
    ("memoryPoolSupportedHandleTypes", _uint),
    ("deferredMappingCudaArraySupported", _int),
    ("ipcEventSupported", _int),
    ("clusterLaunch", _int),
    ("unifiedFunctionPointers", _int),
]


class DeviceProp13(ctypes.Structure):
    """``struct cudaDeviceProp`` of CUDA 13.0 (sizeof 1008 on x86-64 Linux).

    CUDA 13 removed clockRate, deviceOverlap, kernelExecTimeoutEnabled, computeMode,
    maxTexture1DLinear, memoryClockRate, singleToDoublePrecisionPerfRatio and
    cooperativeMultiDeviceLaunch, and added the NUMA/MPS/PCI-id fields before
    ``reserved[56]``.
    """

    _fields_ = _HEAD + [
        ("totalConstMem", _size),
        ("major", _int),
        ("minor", _int),
        ("textureAlignment", _size),
        ("texturePitchAlignment", _size),
        ("multiProcessorCount", _int),
        ("integrated", _int),
        ("canMapHostMemory", _int),
        ("maxTexture1D", _int),
        ("maxTexture1DMipmap", _int),
    ] + _TEXTURES_TO_UNIFIED + [
        ("memoryBusWidth", _int),
        ("l2CacheSize", _int),
        ("persistingL2CacheMaxSize", _int),
        ("maxThreadsPerMultiProcessor", _int),
        ("streamPrioritiesSupported", _int),
        ("globalL1CacheSupported", _int),
        ("localL1CacheSupported", _int),
        ("sharedMemPerMultiprocessor", _size),
        ("regsPerMultiprocessor", _int),
        ("managedMemory", _int),
        ("isMultiGpuBoard", _int),
        ("multiGpuBoardGroupID", _int),
        ("hostNativeAtomicSupported", _int),
        ("pageableMemoryAccess", _int),
        ("concurrentManagedAccess", _int),
        ("computePreemptionSupported", _int),
        ("canUseHostPointerForRegisteredMem", _int),
        ("cooperativeLaunch", _int),
    ] + _OPTIN_TO_UNIFIED_POINTERS + [
        ("deviceNumaConfig", _int),
        ("deviceNumaId", _int),
        ("mpsEnabled", _int),
        ("hostNumaId", _int),
        ("gpuPciDeviceID", _uint),
        ("gpuPciSubsystemID", _uint),
        ("hostNumaMultinodeIpcSupported", _int),
        ("reserved", _int * 56),
    ]


class DeviceProp12(ctypes.Structure):
    """``struct cudaDeviceProp`` of CUDA 12.x (sizeof 1032 on x86-64 Linux).

    Written from ``nvidia/cuda_runtime/include/driver_types.h`` in NVIDIA's wheel
    ``nvidia-cuda-runtime-cu12`` 12.9.79 (PyPI), CUDART_VERSION 12090.  It is the
    struct ``cudaGetDeviceProperties_v2`` fills (12.x headers ``#define
    cudaGetDeviceProperties cudaGetDeviceProperties_v2``).  12.9 has no NUMA/MPS/PCI-id
    fields: the drivers of 12.x report those only through ``cudaDeviceGetAttribute``.
    """

    _fields_ = _HEAD + [
        ("clockRate", _int),
        ("totalConstMem", _size),
        ("major", _int),
        ("minor", _int),
        ("textureAlignment", _size),
        ("texturePitchAlignment", _size),
        ("deviceOverlap", _int),
        ("multiProcessorCount", _int),
        ("kernelExecTimeoutEnabled", _int),
        ("integrated", _int),
        ("canMapHostMemory", _int),
        ("computeMode", _int),
        ("maxTexture1D", _int),
        ("maxTexture1DMipmap", _int),
        ("maxTexture1DLinear", _int),
    ] + _TEXTURES_TO_UNIFIED + [
        ("memoryClockRate", _int),
        ("memoryBusWidth", _int),
        ("l2CacheSize", _int),
        ("persistingL2CacheMaxSize", _int),
        ("maxThreadsPerMultiProcessor", _int),
        ("streamPrioritiesSupported", _int),
        ("globalL1CacheSupported", _int),
        ("localL1CacheSupported", _int),
        ("sharedMemPerMultiprocessor", _size),
        ("regsPerMultiprocessor", _int),
        ("managedMemory", _int),
        ("isMultiGpuBoard", _int),
        ("multiGpuBoardGroupID", _int),
        ("hostNativeAtomicSupported", _int),
        ("singleToDoublePrecisionPerfRatio", _int),
        ("pageableMemoryAccess", _int),
        ("concurrentManagedAccess", _int),
        ("computePreemptionSupported", _int),
        ("canUseHostPointerForRegisteredMem", _int),
        ("cooperativeLaunch", _int),
        ("cooperativeMultiDeviceLaunch", _int),
    ] + _OPTIN_TO_UNIFIED_POINTERS + [
        ("reserved", _int * 63),
    ]


DEVICE_PROP: dict[int, type[ctypes.Structure]] = {12: DeviceProp12, 13: DeviceProp13}


# ---------------------------------------------------------------------------------------
# struct cudaFuncAttributes, struct cudaPointerAttributes
# ---------------------------------------------------------------------------------------


class FuncAttributes(ctypes.Structure):
    """``struct cudaFuncAttributes`` (sizeof 144); CUDA 12.9 and 13.0 declare it alike."""

    _fields_ = [
        ("sharedSizeBytes", _size),
        ("constSizeBytes", _size),
        ("localSizeBytes", _size),
        ("maxThreadsPerBlock", _int),
        ("numRegs", _int),
        ("ptxVersion", _int),
        ("binaryVersion", _int),
        ("cacheModeCA", _int),
        ("maxDynamicSharedSizeBytes", _int),
        ("preferredShmemCarveout", _int),
        ("clusterDimMustBeSet", _int),
        ("requiredClusterWidth", _int),
        ("requiredClusterHeight", _int),
        ("requiredClusterDepth", _int),
        ("clusterSchedulingPolicyPreference", _int),
        ("nonPortableClusterSizeAllowed", _int),
        ("reserved", _int * 16),
    ]


_POINTER_HEAD = [
    ("type", _int),  # enum cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed
    ("device", _int),
    ("devicePointer", ctypes.c_void_p),
    ("hostPointer", ctypes.c_void_p),
]


class PointerAttributes(ctypes.Structure):
    """``struct cudaPointerAttributes`` of CUDA 13 (sizeof 88: ``long reserved[8]`` added).

    A CUDA 12 program's struct is only the first 24 bytes (``PointerAttributes12``), so
    an implementation should write no more than ``ctypes.sizeof(POINTER_ATTRIBUTES[v])``.
    """

    _fields_ = _POINTER_HEAD + [("reserved", ctypes.c_long * 8)]


class PointerAttributes12(ctypes.Structure):
    """``struct cudaPointerAttributes`` of CUDA 12.x (sizeof 24, no reserved tail)."""

    _fields_ = list(_POINTER_HEAD)


POINTER_ATTRIBUTES: dict[int, type[ctypes.Structure]] = {12: PointerAttributes12, 13: PointerAttributes}


# ---------------------------------------------------------------------------------------
# An H100 SXM5 80GB's values
# ---------------------------------------------------------------------------------------

# cudaGetDeviceProperties of CUDA 13.0 on an "NVIDIA H100 80GB HBM3" (driver 580.159.04),
# field by field.  The CUDA-12-only fields come from cuDeviceGetAttribute on the same board
# (ClockRate 13, GpuOverlap 15, KernelExecTimeout 17, ComputeMode 20, MemoryClockRate 36,
# MaxTexture1DLinearWidth 69, SingleToDoublePrecisionPerfRatio 87, attribute 96).
_H100: dict[str, object] = {
    "name": "NVIDIA H100 80GB HBM3",
    # A fixed stand-in for the board's UUID: programs print it, none should depend on it.
    "uuid": _uuid.uuid5(_uuid.NAMESPACE_URL, "hypa:NVIDIA H100 80GB HBM3").bytes,
    "luid": b"",  # undefined off Windows; the driver leaves it zero
    "luidDeviceNodeMask": 0,
    "totalGlobalMem": 85017493504,  # 79.18 GiB, cuDeviceTotalMem; nvidia-smi says 81559 MiB
    "sharedMemPerBlock": 49152,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "memPitch": 2147483647,
    "maxThreadsPerBlock": 1024,
    "maxThreadsDim": (1024, 1024, 64),
    "maxGridSize": (2147483647, 65535, 65535),
    "clockRate": clock.clock_rate_khz(),  # kHz (the clock model's); CUDA 12 field, attribute 13 in both
    "totalConstMem": 65536,
    "major": 9,
    "minor": 0,
    "textureAlignment": 512,
    "texturePitchAlignment": 32,
    "deviceOverlap": 1,  # CUDA 12 field
    "multiProcessorCount": 132,
    "kernelExecTimeoutEnabled": 0,  # CUDA 12 field
    "integrated": 0,
    "canMapHostMemory": 1,
    "computeMode": 0,  # cudaComputeModeDefault; CUDA 12 field
    "maxTexture1D": 131072,
    "maxTexture1DMipmap": 32768,
    "maxTexture1DLinear": 268435456,  # CUDA 12 field
    "maxTexture2D": (131072, 65536),
    "maxTexture2DMipmap": (32768, 32768),
    "maxTexture2DLinear": (131072, 65000, 2097120),
    "maxTexture2DGather": (32768, 32768),
    "maxTexture3D": (16384, 16384, 16384),
    "maxTexture3DAlt": (8192, 8192, 32768),
    "maxTextureCubemap": 32768,
    "maxTexture1DLayered": (32768, 2048),
    "maxTexture2DLayered": (32768, 32768, 2048),
    "maxTextureCubemapLayered": (32768, 2046),
    "maxSurface1D": 32768,
    "maxSurface2D": (131072, 65536),
    "maxSurface3D": (16384, 16384, 16384),
    "maxSurface1DLayered": (32768, 2048),
    "maxSurface2DLayered": (32768, 32768, 2048),
    "maxSurfaceCubemap": 32768,
    "maxSurfaceCubemapLayered": (32768, 2046),
    "surfaceAlignment": 512,
    "concurrentKernels": 1,
    "ECCEnabled": 1,
    # The measured board sat at 0000:00:06.0 of a virtual machine; kept as measured.
    "pciBusID": 0,
    "pciDeviceID": 6,
    "pciDomainID": 0,
    "tccDriver": 0,
    "asyncEngineCount": 3,
    "unifiedAddressing": 1,
    "memoryClockRate": 2619000,  # kHz; CUDA 12 field, attribute 36 in both
    "memoryBusWidth": 5120,
    "l2CacheSize": 52428800,
    "persistingL2CacheMaxSize": 32768000,
    "maxThreadsPerMultiProcessor": 2048,
    "streamPrioritiesSupported": 1,
    "globalL1CacheSupported": 1,
    "localL1CacheSupported": 1,
    "sharedMemPerMultiprocessor": 233472,
    "regsPerMultiprocessor": 65536,
    "managedMemory": 1,
    "isMultiGpuBoard": 0,
    "multiGpuBoardGroupID": 0,
    "hostNativeAtomicSupported": 0,
    "singleToDoublePrecisionPerfRatio": 2,  # CUDA 12 field
    "pageableMemoryAccess": 0,
    "concurrentManagedAccess": 1,
    "computePreemptionSupported": 1,
    "canUseHostPointerForRegisteredMem": 1,
    "cooperativeLaunch": 1,
    "cooperativeMultiDeviceLaunch": 1,  # CUDA 12 field
    "sharedMemPerBlockOptin": 232448,
    "pageableMemoryAccessUsesHostPageTables": 0,
    "directManagedMemAccessFromHost": 0,
    "maxBlocksPerMultiProcessor": 32,
    "accessPolicyMaxWindowSize": 134217728,
    "reservedSharedMemPerBlock": 1024,
    "hostRegisterSupported": 1,
    "sparseCudaArraySupported": 1,
    "hostRegisterReadOnlySupported": 1,
    "timelineSemaphoreInteropSupported": 1,
    "memoryPoolsSupported": 1,
    "gpuDirectRDMASupported": 1,
    "gpuDirectRDMAFlushWritesOptions": 1,
    "gpuDirectRDMAWritesOrdering": 100,  # cudaGPUDirectRDMAWritesOrderingAllDevices
    "memoryPoolSupportedHandleTypes": 9,  # POSIX file descriptor | fabric
    "deferredMappingCudaArraySupported": 1,
    "ipcEventSupported": 1,
    "clusterLaunch": 1,
    "unifiedFunctionPointers": 1,
    "deviceNumaConfig": 0,  # cudaDeviceNumaConfigNone
    "deviceNumaId": -1,
    "mpsEnabled": 0,
    "hostNumaId": 0,
    "gpuPciDeviceID": 0x233010DE,  # device 0x2330 (H100 SXM5 80GB), vendor 0x10DE
    "gpuPciSubsystemID": 0x16C110DE,
    "hostNumaMultinodeIpcSupported": 0,
}

# Attributes with no cudaDeviceProp field in either version, as the same board answered.
_ATTRIBUTE_ONLY: dict[str, int] = {
    "canFlushRemoteWrites": 0,
    "memSyncDomainCount": 4,
    "d3d12CigSupported": 0,
    "vulkanCigSupported": 0,
    "hostNumaMemoryPoolsSupported": 1,
    "hostMemoryPoolsSupported": 1,
    "onlyPartialHostNativeAtomicSupported": 0,
}


def h100_properties(sm: int = 90) -> dict[str, object]:
    """The fields of ``cudaDeviceProp`` (the union of CUDA 12's and 13's) for an H100.

    ``sm`` sets only ``major``/``minor`` (``sm // 10``, ``sm % 10``): emulating another
    architecture's instructions does not make hypa model that chip, so every other number,
    the name included, stays the H100's.  Fields not listed (``reserved``) stay zero.
    """
    if not isinstance(sm, int) or sm < 10:
        raise ValueError(f"sm must be an integer such as 90, not {sm!r}")
    values = dict(_H100)
    values["major"], values["minor"] = divmod(sm, 10)
    return values


def _field(struct_type: type[ctypes.Structure], name: str):
    for fname, ftype in struct_type._fields_:
        if fname == name:
            return ftype
    return None


def fill(struct: ctypes.Structure, values: Mapping[str, object]) -> ctypes.Structure:
    """Set ``struct``'s fields by name from ``values``; names it lacks are skipped.

    One value dictionary serves both ``DeviceProp12`` and ``DeviceProp13``, hence the
    skipping.  Arrays take a sequence (missing elements become 0); ``char[N]`` fields take
    ``str`` or ``bytes`` (zero-padded; ``name`` keeps a terminating NUL); ``uuid`` takes 16
    bytes, a ``uuid.UUID`` or its hex string.
    """
    base = ctypes.addressof(struct)
    for name, value in values.items():
        ftype = _field(type(struct), name)
        if ftype is None:
            continue
        offset = getattr(type(struct), name).offset
        size = ctypes.sizeof(ftype)
        if ftype is CudaUUID:
            if isinstance(value, _uuid.UUID):
                raw = value.bytes
            elif isinstance(value, str):
                raw = _uuid.UUID(value).bytes
            else:
                raw = bytes(value)
            if len(raw) != 16:
                raise ValueError(f"uuid needs 16 bytes, got {len(raw)}")
            ctypes.memmove(base + offset, raw, 16)
        elif issubclass(ftype, ctypes.Array) and ftype._type_ is ctypes.c_char:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            raw = raw[: size - 1] if name == "name" else raw[:size]
            ctypes.memset(base + offset, 0, size)
            ctypes.memmove(base + offset, raw, len(raw))
        elif issubclass(ftype, ctypes.Array):
            items = tuple(value)  # type: ignore[arg-type]
            if len(items) > ftype._length_:
                raise ValueError(f"{name} holds {ftype._length_} values, got {len(items)}")
            array = getattr(struct, name)
            for i in range(ftype._length_):
                array[i] = int(items[i]) if i < len(items) else 0
        else:
            setattr(struct, name, int(value))  # type: ignore[arg-type]
    return struct


def device_properties(cuda_major: int = 13, sm: int = 90) -> ctypes.Structure:
    """A filled ``cudaDeviceProp`` laid out for a program built with CUDA ``cuda_major``."""
    return fill(DEVICE_PROP[cuda_major](), h100_properties(sm))


# ---------------------------------------------------------------------------------------
# enum cudaDeviceAttr
# ---------------------------------------------------------------------------------------

# enum cudaDeviceAttr of CUDA 13.0, without its "cudaDevAttr" prefix.  CUDA 12.9's enum
# differs only in: 96 is CooperativeMultiDeviceLaunch (Reserved96 in 13); 114 also has the
# alias MaxTimelineSemaphoreInteropSupported; 144, 145 and 147 do not exist.
DEVICE_ATTRIBUTE_NAMES: dict[int, str] = {
    1: "MaxThreadsPerBlock", 2: "MaxBlockDimX", 3: "MaxBlockDimY", 4: "MaxBlockDimZ",
    5: "MaxGridDimX", 6: "MaxGridDimY", 7: "MaxGridDimZ", 8: "MaxSharedMemoryPerBlock",
    9: "TotalConstantMemory", 10: "WarpSize", 11: "MaxPitch", 12: "MaxRegistersPerBlock",
    13: "ClockRate", 14: "TextureAlignment", 15: "GpuOverlap", 16: "MultiProcessorCount",
    17: "KernelExecTimeout", 18: "Integrated", 19: "CanMapHostMemory", 20: "ComputeMode",
    21: "MaxTexture1DWidth", 22: "MaxTexture2DWidth", 23: "MaxTexture2DHeight",
    24: "MaxTexture3DWidth", 25: "MaxTexture3DHeight", 26: "MaxTexture3DDepth",
    27: "MaxTexture2DLayeredWidth", 28: "MaxTexture2DLayeredHeight",
    29: "MaxTexture2DLayeredLayers", 30: "SurfaceAlignment", 31: "ConcurrentKernels",
    32: "EccEnabled", 33: "PciBusId", 34: "PciDeviceId", 35: "TccDriver",
    36: "MemoryClockRate", 37: "GlobalMemoryBusWidth", 38: "L2CacheSize",
    39: "MaxThreadsPerMultiProcessor", 40: "AsyncEngineCount", 41: "UnifiedAddressing",
    42: "MaxTexture1DLayeredWidth", 43: "MaxTexture1DLayeredLayers",
    45: "MaxTexture2DGatherWidth", 46: "MaxTexture2DGatherHeight",
    47: "MaxTexture3DWidthAlt", 48: "MaxTexture3DHeightAlt", 49: "MaxTexture3DDepthAlt",
    50: "PciDomainId", 51: "TexturePitchAlignment", 52: "MaxTextureCubemapWidth",
    53: "MaxTextureCubemapLayeredWidth", 54: "MaxTextureCubemapLayeredLayers",
    55: "MaxSurface1DWidth", 56: "MaxSurface2DWidth", 57: "MaxSurface2DHeight",
    58: "MaxSurface3DWidth", 59: "MaxSurface3DHeight", 60: "MaxSurface3DDepth",
    61: "MaxSurface1DLayeredWidth", 62: "MaxSurface1DLayeredLayers",
    63: "MaxSurface2DLayeredWidth", 64: "MaxSurface2DLayeredHeight",
    65: "MaxSurface2DLayeredLayers", 66: "MaxSurfaceCubemapWidth",
    67: "MaxSurfaceCubemapLayeredWidth", 68: "MaxSurfaceCubemapLayeredLayers",
    69: "MaxTexture1DLinearWidth", 70: "MaxTexture2DLinearWidth",
    71: "MaxTexture2DLinearHeight", 72: "MaxTexture2DLinearPitch",
    73: "MaxTexture2DMipmappedWidth", 74: "MaxTexture2DMipmappedHeight",
    75: "ComputeCapabilityMajor", 76: "ComputeCapabilityMinor",
    77: "MaxTexture1DMipmappedWidth", 78: "StreamPrioritiesSupported",
    79: "GlobalL1CacheSupported", 80: "LocalL1CacheSupported",
    81: "MaxSharedMemoryPerMultiprocessor", 82: "MaxRegistersPerMultiprocessor",
    83: "ManagedMemory", 84: "IsMultiGpuBoard", 85: "MultiGpuBoardGroupID",
    86: "HostNativeAtomicSupported", 87: "SingleToDoublePrecisionPerfRatio",
    88: "PageableMemoryAccess", 89: "ConcurrentManagedAccess",
    90: "ComputePreemptionSupported", 91: "CanUseHostPointerForRegisteredMem",
    92: "Reserved92", 93: "Reserved93", 94: "Reserved94", 95: "CooperativeLaunch",
    96: "Reserved96", 97: "MaxSharedMemoryPerBlockOptin", 98: "CanFlushRemoteWrites",
    99: "HostRegisterSupported", 100: "PageableMemoryAccessUsesHostPageTables",
    101: "DirectManagedMemAccessFromHost", 106: "MaxBlocksPerMultiprocessor",
    108: "MaxPersistingL2CacheSize", 109: "MaxAccessPolicyWindowSize",
    111: "ReservedSharedMemoryPerBlock", 112: "SparseCudaArraySupported",
    113: "HostRegisterReadOnlySupported", 114: "TimelineSemaphoreInteropSupported",
    115: "MemoryPoolsSupported", 116: "GPUDirectRDMASupported",
    117: "GPUDirectRDMAFlushWritesOptions", 118: "GPUDirectRDMAWritesOrdering",
    119: "MemoryPoolSupportedHandleTypes", 120: "ClusterLaunch",
    121: "DeferredMappingCudaArraySupported", 122: "Reserved122", 123: "Reserved123",
    124: "Reserved124", 125: "IpcEventSupport", 126: "MemSyncDomainCount",
    127: "Reserved127", 128: "Reserved128", 129: "Reserved129", 130: "NumaConfig",
    131: "NumaId", 132: "Reserved132", 133: "MpsEnabled", 134: "HostNumaId",
    135: "D3D12CigSupported", 138: "VulkanCigSupported", 139: "GpuPciDeviceId",
    140: "GpuPciSubsystemId", 141: "Reserved141", 142: "HostNumaMemoryPoolsSupported",
    143: "HostNumaMultinodeIpcSupported", 144: "HostMemoryPoolsSupported",
    145: "Reserved145", 147: "OnlyPartialHostNativeAtomicSupported",
}

# Attribute number -> the cudaDeviceProp field giving its value ("field.i" for element i
# of an array field).  Names of CUDA-12-only fields (clockRate, memoryClockRate, ...) and
# of _ATTRIBUTE_ONLY entries have no field in CUDA 13's struct; attribute_value still
# answers them.  Reserved numbers are left out (attribute_value answers None).
DEVICE_ATTRIBUTES: dict[int, str] = {
    1: "maxThreadsPerBlock",
    2: "maxThreadsDim.0", 3: "maxThreadsDim.1", 4: "maxThreadsDim.2",
    5: "maxGridSize.0", 6: "maxGridSize.1", 7: "maxGridSize.2",
    8: "sharedMemPerBlock",
    9: "totalConstMem",
    10: "warpSize",
    11: "memPitch",
    12: "regsPerBlock",
    13: "clockRate",
    14: "textureAlignment",
    15: "deviceOverlap",
    16: "multiProcessorCount",
    17: "kernelExecTimeoutEnabled",
    18: "integrated",
    19: "canMapHostMemory",
    20: "computeMode",
    21: "maxTexture1D",
    22: "maxTexture2D.0", 23: "maxTexture2D.1",
    24: "maxTexture3D.0", 25: "maxTexture3D.1", 26: "maxTexture3D.2",
    27: "maxTexture2DLayered.0", 28: "maxTexture2DLayered.1", 29: "maxTexture2DLayered.2",
    30: "surfaceAlignment",
    31: "concurrentKernels",
    32: "ECCEnabled",
    33: "pciBusID",
    34: "pciDeviceID",
    35: "tccDriver",
    36: "memoryClockRate",
    37: "memoryBusWidth",
    38: "l2CacheSize",
    39: "maxThreadsPerMultiProcessor",
    40: "asyncEngineCount",
    41: "unifiedAddressing",
    42: "maxTexture1DLayered.0", 43: "maxTexture1DLayered.1",
    45: "maxTexture2DGather.0", 46: "maxTexture2DGather.1",
    47: "maxTexture3DAlt.0", 48: "maxTexture3DAlt.1", 49: "maxTexture3DAlt.2",
    50: "pciDomainID",
    51: "texturePitchAlignment",
    52: "maxTextureCubemap",
    53: "maxTextureCubemapLayered.0", 54: "maxTextureCubemapLayered.1",
    55: "maxSurface1D",
    56: "maxSurface2D.0", 57: "maxSurface2D.1",
    58: "maxSurface3D.0", 59: "maxSurface3D.1", 60: "maxSurface3D.2",
    61: "maxSurface1DLayered.0", 62: "maxSurface1DLayered.1",
    63: "maxSurface2DLayered.0", 64: "maxSurface2DLayered.1", 65: "maxSurface2DLayered.2",
    66: "maxSurfaceCubemap",
    67: "maxSurfaceCubemapLayered.0", 68: "maxSurfaceCubemapLayered.1",
    69: "maxTexture1DLinear",
    70: "maxTexture2DLinear.0", 71: "maxTexture2DLinear.1", 72: "maxTexture2DLinear.2",
    73: "maxTexture2DMipmap.0", 74: "maxTexture2DMipmap.1",
    75: "major",
    76: "minor",
    77: "maxTexture1DMipmap",
    78: "streamPrioritiesSupported",
    79: "globalL1CacheSupported",
    80: "localL1CacheSupported",
    81: "sharedMemPerMultiprocessor",
    82: "regsPerMultiprocessor",
    83: "managedMemory",
    84: "isMultiGpuBoard",
    85: "multiGpuBoardGroupID",
    86: "hostNativeAtomicSupported",
    87: "singleToDoublePrecisionPerfRatio",
    88: "pageableMemoryAccess",
    89: "concurrentManagedAccess",
    90: "computePreemptionSupported",
    91: "canUseHostPointerForRegisteredMem",
    95: "cooperativeLaunch",
    96: "cooperativeMultiDeviceLaunch",  # CUDA 12 only: Reserved96 in CUDA 13
    97: "sharedMemPerBlockOptin",
    98: "canFlushRemoteWrites",
    99: "hostRegisterSupported",
    100: "pageableMemoryAccessUsesHostPageTables",
    101: "directManagedMemAccessFromHost",
    106: "maxBlocksPerMultiProcessor",
    108: "persistingL2CacheMaxSize",
    109: "accessPolicyMaxWindowSize",
    111: "reservedSharedMemPerBlock",
    112: "sparseCudaArraySupported",
    113: "hostRegisterReadOnlySupported",
    114: "timelineSemaphoreInteropSupported",
    115: "memoryPoolsSupported",
    116: "gpuDirectRDMASupported",
    117: "gpuDirectRDMAFlushWritesOptions",
    118: "gpuDirectRDMAWritesOrdering",
    119: "memoryPoolSupportedHandleTypes",
    120: "clusterLaunch",
    121: "deferredMappingCudaArraySupported",
    125: "ipcEventSupported",
    126: "memSyncDomainCount",
    130: "deviceNumaConfig",
    131: "deviceNumaId",
    133: "mpsEnabled",
    134: "hostNumaId",
    135: "d3d12CigSupported",
    138: "vulkanCigSupported",
    139: "gpuPciDeviceID",
    140: "gpuPciSubsystemID",
    142: "hostNumaMemoryPoolsSupported",
    143: "hostNumaMultinodeIpcSupported",
    144: "hostMemoryPoolsSupported",  # CUDA 13 only (absent from 12.9's enum)
    147: "onlyPartialHostNativeAtomicSupported",  # CUDA 13 only
}

# Numbers the given CUDA major version's enum reserves although the other defines them.
_RESERVED_IN: dict[int, frozenset[int]] = {13: frozenset({96})}


def attribute_value(attr: int, sm: int = 90, major_cuda: int = 13) -> int | None:
    """``cudaDeviceGetAttribute``'s answer for an H100, or None for a number not mapped.

    None means the caller should return ``cudaErrorInvalidValue``: reserved or unknown
    numbers, and 96 for a CUDA 13 program (its enum reserves it).  144 and 147, which
    CUDA 12.9's enum does not define, are answered for 12 too, as a CUDA 13 driver would.
    """
    name = DEVICE_ATTRIBUTES.get(attr)
    if name is None or attr in _RESERVED_IN.get(major_cuda, ()):
        return None
    field, _, index = name.partition(".")
    if field in _ATTRIBUTE_ONLY:
        return _ATTRIBUTE_ONLY[field]
    value = h100_properties(sm)[field]
    if index:
        return int(value[int(index)])  # type: ignore[index]
    return int(value)  # type: ignore[arg-type]
