#!/bin/bash
# Issue 16's GPU checks in one device call (device tool, carry [".whl"], timeout 600):
#   1. tests/cuda_programs/isa/*.cu natively (isa_programs_native.sh; wgmma_gemm.cu for sm_90a)
#      -> $OUT/isa_native.json
#      (keep as tests/ground_truth/hypa_run/isa_native.json);
#   2. the video-instruction probes -> $OUT/video/probes.{json,npz}
#      (keep under tests/ground_truth/h100/video/);
#   3. the exit-reconvergence probes, counted and under ncu -> $OUT/reconverge/{counts.json,outputs.npz}
#      (keep under tests/ground_truth/h100/reconverge/).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit 1
nvidia-smi -L
timeout 180 bash benchmarks/gpu/isa_programs_native.sh
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/gpu/harness.py probes --out $OUT/video --deadline 180 \
  --probe-budget 170 --probe-only '^v[a-z]+[24]?\.' 2>&1 | tail -5
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/gpu/harness.py all --out $OUT/reconverge --deadline 180 --no-probes \
  --only 'reconverge' --ncu-only 'reconverge' benchmarks/gpu/launches/reconverge.toml 2>&1 | tail -5
rm -f $OUT/video/ncu_raw.txt
ls -R $OUT
