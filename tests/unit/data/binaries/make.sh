#!/bin/sh
# Binaries with embedded PTX for the input-extraction tests (tests/unit/test_profile_cli.py),
# made from the project's own kernels with CUDA 13.0 (V13.0.88):  sh make.sh
set -e
cd "$(dirname "$0")"
K=../../../kernels
T=$(mktemp -d)
cp $K/saxpy.cu $K/divergence.cu "$T"
# a fatbin for sm_90: SASS plus compute_90 PTX; CUDA 13 compresses the PTX with Zstandard by default
nvcc -fatbin -arch=sm_90 "$T/saxpy.cu" -o saxpy.zstd.fatbin
# the same with LZ4 (--compress-mode=speed) and uncompressed
nvcc -fatbin -arch=sm_90 --compress-mode=speed "$T/saxpy.cu" -o saxpy.lz4.fatbin
nvcc -fatbin -arch=sm_90 --compress-mode=none "$T/saxpy.cu" -o saxpy.none.fatbin
# a cubin: SASS only, no PTX
nvcc -cubin -arch=sm_90 "$T/saxpy.cu" -o saxpy.sm_90.cubin
# a shared library of two translation units, PTX only (compute_80; saxpy also compute_90),
# every image compressed (-Xfatbin=-compress-all)
nvcc -c -Xcompiler -fPIC -gencode arch=compute_80,code=compute_80 -Xfatbin=-compress-all "$T/divergence.cu" -o "$T/divergence.o"
nvcc -c -Xcompiler -fPIC -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=compute_90 \
    --compress-mode=speed "$T/saxpy.cu" -o "$T/saxpy.o"
nvcc -shared -cudart none "$T/divergence.o" "$T/saxpy.o" -o libkernels.so
strip libkernels.so
rm -rf "$T"
