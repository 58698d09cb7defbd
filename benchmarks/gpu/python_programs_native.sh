#!/bin/bash
# On a GPU machine (device tool): the Python driver-API programs of tests/cuda_programs/python
# (issue 30) natively, and what `hypa run` needs to stand in for libcuda.so.1 faithfully.
# Writes to $OUT:
#   python_native.json  {"kind", "gpu", "command", "versions", "programs": {name: {rc, stdout, stderr}},
#                       "kernels_ptx_sha256", "numba_ptx": {kernel: PTX}, "counts": {"driver_api.py" |
#                       "numba_jit.py": [per launch: kernel, grid, block, metrics]}}: the counts are the
#                       harness's (benchmarks/gpu/harness.py counts) of each program's kernels as NVRTC
#                       (driver_api.py) and Numba-CUDA's NVVM (numba_jit.py) compile them there,
#                       instrumented, on the programs' launches (tests/ground_truth/hypa_run/python_native.json
#                       keeps it)
#   libcuda_dynsyms.txt, libcuda_version.txt  readelf of the driver library (exports, version nodes)
#   cu_errors.tsv       cuGetErrorName/cuGetErrorString of every CUresult the driver names
# Needs hypa's pure-Python dependencies as wheels in .whl (benchmarks/gpu/README.md); the
# machine's own cuda-bindings, NVRTC and Numba-CUDA compile and run the programs (Numba-CUDA's
# linked by the driver, as under `hypa run`: benchmarks/gpu/without_nvjitlink.py).  DIR
# (default tests/cuda_programs/python) is where the programs are.
set -u
DIR=${1:-tests/cuda_programs/python}
nvidia-smi -L
W=/tmp/pyprog; mkdir -p $W
python3 - "$DIR" <<'PY'
import glob, json, os, subprocess, sys
out = {"kind": "python-programs-native",
       "gpu": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip(),
       "command": "bash benchmarks/gpu/python_programs_native.sh (python3 PROGRAM, each run once, the machine's cuda-bindings and NVRTC; numba_jit.py through benchmarks/gpu/without_nvjitlink.py with the Numba-CUDA of versions)",
       "versions": {}, "programs": {}}
from importlib import metadata
for pkg in ("cuda-bindings", "cuda-python", "nvidia-cuda-nvrtc", "numpy", "numba", "numba-cuda", "llvmlite",
            "cuda-core", "nvidia-nvjitlink", "nvidia-nvvm", "cuda-toolkit"):
    try:
        out["versions"][pkg] = metadata.version(pkg)
    except metadata.PackageNotFoundError:
        out["versions"][pkg] = None
from cuda.bindings import driver, nvrtc
out["versions"]["nvrtc"] = list(nvrtc.nvrtcVersion()[1:])
out["versions"]["driver"] = driver.cuDriverGetVersion()[1]
for prog in sorted(glob.glob(os.path.join(sys.argv[1], "*.py"))):
    cmd = [sys.executable, prog]
    if os.path.basename(prog) == "numba_jit.py":  # the driver's linker, and its kernels' PTX kept
        cmd = [sys.executable, "benchmarks/gpu/without_nvjitlink.py", prog, "--ptx", "/tmp/pyprog/numba"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    out["programs"][os.path.basename(prog)] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr[-2000:]}
    print(os.path.basename(prog), p.returncode, p.stdout, p.stderr[-2000:])
json.dump(out, open(os.environ["OUT"] + "/python_native.json", "w"), indent=1)
# the driver's error table
driver.cuInit(0)
with open(os.environ["OUT"] + "/cu_errors.tsv", "w") as f:
    for e in sorted(driver.CUresult, key=int):
        try:
            e1, name = driver.cuGetErrorName(e)
            e2, text = driver.cuGetErrorString(e)
        except Exception as x:
            print("error table:", int(e), x)
            continue
        if e1 == 0 and name:
            f.write(f"{int(e)}\t{name.decode()}\t{text.decode() if text else ''}\n")
# driver_api.py's PTX as NVRTC makes it here
sys.path.insert(0, sys.argv[1])
import driver_api
open("/tmp/pyprog/kernels.ptx", "wb").write(driver_api.compile_ptx(9, 0).rstrip(b"\0 "))
PY
cat > $W/driver_api.toml <<'TOML'
# driver_api.py's launches (tests/cuda_programs/python): counts independent of the data
[[launch]]
file = "kernels.ptx"
kernel = "vector_add"
grid = 8
block = 128
args = ["a", "b", "c", 1000]

[[launch]]
file = "kernels.ptx"
kernel = "block_sum"
grid = 4
block = 256
args = ["x", "partial", "total", 1000]

[[launch]]
file = "kernels.ptx"
kernel = "histogram"
grid = 4
block = 256
args = ["v", "bins", "top", 1000]

[buffers.a]
dtype = "float32"
count = 1000
init = "arange"

[buffers.b]
dtype = "float32"
count = 1000
init = "arange"

[buffers.c]
dtype = "float32"
count = 1000
init = "zeros"

[buffers.x]
dtype = "int32"
count = 1000
init = {random = {seed = 1, low = -50, high = 51}}

[buffers.partial]
dtype = "int32"
count = 4
init = "zeros"

[buffers.total]
dtype = "uint64"
count = 1
init = "zeros"

[buffers.v]
dtype = "uint32"
count = 1000
init = {random = {seed = 2, low = 0, high = 1000}}

[buffers.bins]
dtype = "uint32"
count = 16
init = "zeros"

[buffers.top]
dtype = "uint32"
count = 1
init = "zeros"
TOML
NUMBA=; [ -f $W/numba/launches.toml ] && NUMBA=$W/numba/launches.toml
PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/gpu/harness.py counts --out $W/harness --no-ncu --no-probes --deadline 200 $W/driver_api.toml $NUMBA
python3 - <<'PY'
import json, os
path = os.environ["OUT"] + "/python_native.json"
out, c = json.load(open(path)), json.load(open("/tmp/pyprog/harness/counts.json"))
out["kernels_ptx_sha256"] = c["launches"][0]["ptx_sha256"]
out["counts"] = {prog: [{"kernel": l["kernel"], "grid": l["grid"], "block": l["block"], "metrics": l.get("metrics")}
                        for l in c["launches"] if l["id"].startswith(stem + "#")]
                 for prog, stem in (("driver_api.py", "driver_api"), ("numba_jit.py", "launches"))}
if os.path.isdir("/tmp/pyprog/numba"):
    out["numba_ptx"] = {f[:-4]: open(f"/tmp/pyprog/numba/{f}").read() for f in sorted(os.listdir("/tmp/pyprog/numba"))
                        if f.endswith(".ptx")}
json.dump(out, open(path, "w"), indent=1)
PY
LIB=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
echo "libcuda: $LIB"
readelf -d -V -W "$LIB" > $OUT/libcuda_version.txt 2>&1
readelf --dyn-syms -W "$LIB" > $OUT/libcuda_dynsyms.txt 2>&1
wc -l $OUT/*.txt $OUT/*.tsv
