"""cudart/properties.py: the ctypes layouts must match NVIDIA's headers byte for byte (a
CUDA program reads the struct hypa writes), and the H100 values must be what an H100
reports."""

import ctypes
import glob
import os
import subprocess
import uuid

import pytest
from hypa.cudart import properties as P

from helpers import requires

CUDA13_INCLUDE = "/usr/local/cuda/include"

# Measured with gcc on x86-64 Linux: a C file that includes driver_types.h and prints
# sizeof(struct X) and offsetof(struct X, field) for every field, built with
#   gcc -I/usr/local/cuda/include offsets.c            (CUDA 13.0, CUDART_VERSION 13000)
#   gcc -I<wheel>/nvidia/cuda_runtime/include -I/usr/local/cuda/include offsets.c
#       (CUDA 12.9 from `pip download --no-deps nvidia-cuda-runtime-cu12==12.9.79`)
# (test_layout_matches_gcc below generates the same program for CUDA 13).
MEASURED = {  # struct: {field: offset}, None: sizeof
    P.DeviceProp13: {None: 1008, "uuid": 256, "totalGlobalMem": 288, "maxThreadsPerBlock": 320, "totalConstMem": 352,
                     "major": 360, "multiProcessorCount": 384, "l2CacheSize": 596, "sharedMemPerMultiprocessor": 624,
                     "sharedMemPerBlockOptin": 672, "maxBlocksPerMultiProcessor": 688,
                     "reservedSharedMemPerBlock": 696, "clusterLaunch": 748, "gpuPciDeviceID": 772, "reserved": 784},
    P.DeviceProp12: {None: 1032, "clockRate": 348, "totalConstMem": 352, "multiProcessorCount": 388,
                     "maxTexture1DLinear": 416, "memoryClockRate": 608, "sharedMemPerMultiprocessor": 640,
                     "cooperativeMultiDeviceLaunch": 692, "sharedMemPerBlockOptin": 696,
                     "reservedSharedMemPerBlock": 720, "unifiedFunctionPointers": 776, "reserved": 780},
    P.FuncAttributes: {None: 144, "maxThreadsPerBlock": 24, "numRegs": 28, "maxDynamicSharedSizeBytes": 44,
                       "reserved": 76},
    P.PointerAttributes: {None: 88, "device": 4, "devicePointer": 8, "hostPointer": 16, "reserved": 24},
    P.PointerAttributes12: {None: 24},
}
OFFSETS = {(cls, f): offset for cls, fields in MEASURED.items() for f, offset in fields.items()}


@pytest.mark.parametrize("key,expected", list(OFFSETS.items()),
                         ids=[f"{k[0].__name__}.{k[1] or 'sizeof'}" for k in OFFSETS])
def test_measured_offsets(key, expected):
    cls, field = key
    got = ctypes.sizeof(cls) if field is None else getattr(cls, field).offset
    assert got == expected


def _offset_printer(structs):
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <driver_types.h>",
             "int main(void) {"]
    for cname, cls in structs:
        lines.append(f'printf("{cname} - %zu %zu\\n", (size_t)0, sizeof(struct {cname}));')
        for field, _ in cls._fields_:
            lines.append(f'printf("{cname} {field} %zu %zu\\n", offsetof(struct {cname}, {field}),'
                         f' sizeof(((struct {cname} *)0)->{field}));')
    lines += ["return 0;", "}"]
    return "\n".join(lines) + "\n"


def _compare_with_gcc(tmp_path, includes, structs):
    src = tmp_path / "offsets.c"
    exe = tmp_path / "offsets"
    src.write_text(_offset_printer(structs))
    subprocess.run(["gcc", *[f"-I{i}" for i in includes], str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    classes = dict(structs)
    seen = 0
    for line in out.splitlines():
        cname, field, offset, size = line.split()
        cls = classes[cname]
        if field == "-":
            assert ctypes.sizeof(cls) == int(size), f"sizeof(struct {cname})"
        else:
            desc = getattr(cls, field)
            assert (desc.offset, desc.size) == (int(offset), int(size)), f"{cname}.{field}"
        seen += 1
    assert seen == sum(len(cls._fields_) + 1 for _, cls in structs)


@requires("gcc")
@pytest.mark.skipif(not os.path.exists(f"{CUDA13_INCLUDE}/driver_types.h"),
                    reason="CUDA 13 headers not installed")
def test_layout_matches_gcc(tmp_path):
    with open(f"{CUDA13_INCLUDE}/cuda_runtime_api.h") as header:
        version = header.read()
    if "#define CUDART_VERSION  13" not in version:
        pytest.skip("/usr/local/cuda is not CUDA 13")
    _compare_with_gcc(tmp_path, [CUDA13_INCLUDE], [
        ("cudaDeviceProp", P.DeviceProp13),
        ("cudaFuncAttributes", P.FuncAttributes),
        ("cudaPointerAttributes", P.PointerAttributes),
    ])


CUDA12_INCLUDES = sorted(glob.glob("/usr/local/cuda-12*/include"))


@requires("gcc")
@pytest.mark.skipif(not CUDA12_INCLUDES, reason="no CUDA 12 headers in /usr/local/cuda-12*")
def test_layout12_matches_gcc(tmp_path):
    _compare_with_gcc(tmp_path, [CUDA12_INCLUDES[-1]], [
        ("cudaDeviceProp", P.DeviceProp12),
        ("cudaFuncAttributes", P.FuncAttributes),
        ("cudaPointerAttributes", P.PointerAttributes12),
    ])


def test_versions_share_the_common_fields():
    assert P.DEVICE_PROP == {12: P.DeviceProp12, 13: P.DeviceProp13}
    names12 = {f for f, _ in P.DeviceProp12._fields_}
    names13 = {f for f, _ in P.DeviceProp13._fields_}
    assert {"clockRate", "memoryClockRate", "deviceOverlap", "kernelExecTimeoutEnabled",
            "computeMode", "maxTexture1DLinear", "cooperativeMultiDeviceLaunch"} <= names12 - names13
    assert {"deviceNumaId", "gpuPciDeviceID", "hostNumaMultinodeIpcSupported"} <= names13 - names12
    # every field of either struct has an H100 value, except the reserved tail
    assert (names12 | names13) - {"reserved"} == set(P.h100_properties())


@pytest.mark.parametrize("major", [12, 13])
def test_fill_h100(major):
    prop = P.device_properties(major)
    assert prop.name == b"NVIDIA H100 80GB HBM3"
    assert (prop.major, prop.minor) == (9, 0)
    assert prop.multiProcessorCount == 132
    assert tuple(prop.maxThreadsDim) == (1024, 1024, 64)
    assert tuple(prop.maxGridSize) == (2147483647, 65535, 65535)
    assert prop.sharedMemPerBlockOptin == 232448
    assert prop.reservedSharedMemPerBlock == 1024
    assert prop.l2CacheSize == 52428800
    assert prop.totalGlobalMem == 85017493504
    assert bytes(prop.uuid.bytes) != b"\0" * 16
    assert not any(prop.reserved)
    if major == 12:
        assert (prop.clockRate, prop.memoryClockRate) == (1980000, 2619000)


def test_fill_handles_names_uuids_and_arrays():
    prop = P.DeviceProp13()
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    P.fill(prop, {"name": "x" * 300, "uuid": u, "maxGridSize": (7,), "clockRate": 5,
                  "luid": b"abcdefgh"})
    raw = ctypes.string_at(ctypes.addressof(prop), 256)
    assert raw == b"x" * 255 + b"\0"  # truncated, NUL kept
    assert ctypes.string_at(ctypes.addressof(prop.uuid), 16) == u.bytes
    assert ctypes.string_at(ctypes.addressof(prop) + P.DeviceProp13.luid.offset, 8) == b"abcdefgh"
    assert tuple(prop.maxGridSize) == (7, 0, 0)
    P.fill(prop, {"uuid": u.hex, "name": b"short"})
    assert prop.name == b"short"
    assert ctypes.string_at(ctypes.addressof(prop.uuid), 16) == u.bytes


def test_sm_changes_only_the_compute_capability():
    base = P.h100_properties()
    other = P.h100_properties(86)
    assert (other["major"], other["minor"]) == (8, 6)
    assert {k for k in base if base[k] != other[k]} == {"major", "minor"}
    assert P.h100_properties(100)["major"] == 10


def test_attribute_values():
    v = P.attribute_value
    assert v(1) == 1024 and v(2) == 1024 and v(4) == 64
    assert v(5) == 2147483647 and v(7) == 65535
    assert v(16) == 132
    assert (v(75), v(76)) == (9, 0) and (v(75, sm=80), v(76, sm=80)) == (8, 0)
    assert v(97) == 232448 and v(81) == 233472 and v(111) == 1024
    assert v(13) == 1980000 and v(36) == 2619000  # no field in CUDA 13, still answered
    assert v(72) == 2097120  # maxTexture2DLinear[2]
    assert v(126) == 4  # an attribute with no field in either struct
    assert v(96) is None and v(96, major_cuda=12) == 1  # Reserved96 in CUDA 13
    assert v(92) is None and v(44) is None and v(10_000) is None
    for attr, name in P.DEVICE_ATTRIBUTES.items():
        assert attr in P.DEVICE_ATTRIBUTE_NAMES
        assert v(attr, major_cuda=12) is not None, name
