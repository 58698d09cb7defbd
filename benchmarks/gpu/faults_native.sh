#!/bin/bash
# On a GPU machine (device tool): builds tests/cuda_programs/faults/*.cu with
# nvcc -cudart shared -arch=sm_90, runs each 5 times and writes
# {"gpu", "command", "programs": {name: [stdout of each run]}} to $OUT/faults_native.json;
# tests/ground_truth/hypa_run/faults_native.json keeps it (tests/unit/test_hypa_run_limits.py).
set -u
B=/tmp/faults; mkdir -p $B
for f in tests/cuda_programs/faults/*.cu; do nvcc -cudart shared -arch=sm_90 -o $B/$(basename $f .cu) $f & done
wait
python3 - <<'PY'
import glob, json, os, subprocess
out = {"gpu": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip(),
       "command": "bash benchmarks/gpu/faults_native.sh (nvcc -cudart shared -arch=sm_90, each program run 5 times)",
       "programs": {}}
for exe in sorted(glob.glob("/tmp/faults/*")):
    out["programs"][os.path.basename(exe)] = [subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
                                              for _ in range(5)]
json.dump(out, open(os.environ["OUT"] + "/faults_native.json", "w"), indent=1)
print(json.dumps(out["programs"], indent=1))
PY
