#!/bin/sh
# Rebuild the committed PTX of the calibration micro-benchmarks (CUDA 13 nvcc).
set -e
cd "$(dirname "$0")"
for f in *.cu; do
    nvcc -arch=sm_90 -O3 -ptx "$f" -o "${f%.cu}.ptx"
    ptxas -arch=sm_90 "${f%.cu}.ptx" -o /dev/null
done
