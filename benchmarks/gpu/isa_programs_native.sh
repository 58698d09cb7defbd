#!/bin/bash
# On a GPU machine (device tool): builds every tests/cuda_programs/isa/*.cu with
# nvcc -cudart shared -arch=sm_90 (-arch=sm_90a where its first line asks: wgmma_gemm) (the
# programs that check newly emulated instructions: textures, surfaces, video instructions,
# mbarrier, indirect calls, wgmma ...), runs each once and
# writes {"kind", "gpu", "command", "programs": {name: {rc, stdout, stderr}}} to
# $OUT/isa_native.json; tests/ground_truth/hypa_run/isa_native.json keeps it and the tests
# compare `hypa run`'s stdout with it (tests/unit/helpers.gpu_recorded_run).
set -u
B=/tmp/isa; mkdir -p $B
# a program whose first line is "// build: nvcc -arch=sm_90a" (wgmma) is built for sm_90a
for f in tests/cuda_programs/isa/*.cu; do
  arch=sm_90; head -1 $f | grep -q -- "-arch=sm_90a" && arch=sm_90a
  nvcc -cudart shared -arch=$arch -o $B/$(basename $f .cu) $f &
done
wait
python3 - <<'PY'
import glob, json, os, subprocess
out = {"kind": "isa-programs-native", "gpu": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip(),
       "command": "bash benchmarks/gpu/isa_programs_native.sh (nvcc -cudart shared -arch=sm_90 or sm_90a, each program run once)",
       "programs": {}}
for exe in sorted(glob.glob("/tmp/isa/*")):
    p = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    out["programs"][os.path.basename(exe)] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr[-2000:]}
json.dump(out, open(os.environ["OUT"] + "/isa_native.json", "w"), indent=1)
print(len(out["programs"]), "programs")
PY
