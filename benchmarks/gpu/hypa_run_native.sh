#!/bin/bash
# On a GPU machine (device tool; carry .whl as benchmarks/gpu/README.md says):
#   1. builds tests/cuda_programs/*.cu (as t_<name>) and benchmarks/programs/*.cu (as b_<name>)
#      with nvcc -cudart shared -arch=sm_90 and runs each natively (hypa_run_native.py:
#      stdout, exit status, wall seconds -> $OUT/native.json; tests/ground_truth/hypa_run/ keeps it);
#   2. with capture folders made here by `hypa run --capture gpu_capture/<name> -- ./<name>`
#      (launches.toml renamed <name>.toml so launch ids differ), runs the captured launches
#      instrumented (instrument-block-counters) with harness.py -> $OUT/h/counts.json.
set -u
B=/tmp/b; mkdir -p $B
for f in tests/cuda_programs/*.cu; do nvcc -cudart shared -arch=sm_90 -o $B/t_$(basename $f .cu) $f & done
for f in benchmarks/programs/*.cu; do nvcc -cudart shared -arch=sm_90 -o $B/b_$(basename $f .cu) $f & done
wait
python3 benchmarks/gpu/hypa_run_native.py
if ls gpu_capture/*/*.toml >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/gpu/harness.py counts --out $OUT/h --deadline 280 --no-ncu gpu_capture/*/*.toml > $OUT/harness.txt 2>&1
  tail -40 $OUT/harness.txt
fi
