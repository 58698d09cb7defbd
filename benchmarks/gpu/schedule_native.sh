#!/bin/bash
# On a GPU machine (device tool): builds tests/cuda_programs/schedule/*.cu (races between warps
# that the GPU never loses; cooperative launches and grid barriers) with
# nvcc -O3 -cudart shared -arch=sm_90, runs each 5 times and writes
# {"gpu", "command", "programs": {name: [stdout of each run]}} to $OUT/schedule_native.json;
# tests/ground_truth/hypa_run/schedule_native.json keeps it (tests/unit/test_schedule.py).
set -u
B=/tmp/schedule; mkdir -p $B
for f in tests/cuda_programs/schedule/*.cu; do nvcc -O3 -cudart shared -arch=sm_90 -o $B/$(basename $f .cu) $f & done
wait
python3 - <<'PY'
import glob, json, os, subprocess
out = {"gpu": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip(),
       "command": "bash benchmarks/gpu/schedule_native.sh (nvcc -O3 -cudart shared -arch=sm_90, each program run 5 times)",
       "programs": {}}
for exe in sorted(glob.glob("/tmp/schedule/*")):
    out["programs"][os.path.basename(exe)] = [subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
                                              for _ in range(5)]
json.dump(out, open(os.environ["OUT"] + "/schedule_native.json", "w"), indent=1)
print(json.dumps(out["programs"], indent=1))
PY
