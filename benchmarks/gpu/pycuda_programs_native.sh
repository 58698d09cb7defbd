#!/bin/bash
# On a GPU machine (device tool): tests/cuda_programs/python/pycuda_kernels.py natively (issue 30),
# with PyCUDA built there from its sdist, and the counts of its kernels' PTX instrumented.
# Writes $OUT/pycuda_stdout.txt, $OUT/pycuda.ptx and $OUT/pycuda_counts.json, from which
# tests/ground_truth/hypa_run/pycuda_native.json was made. Needs in .corpus/pycuda (git-ignored,
# carried): pycuda-2026.1.tar.gz and wheels of pytools, platformdirs, mako, markupsafe and
# siphash24 for the machine's Python; in .whl hypa's pure-Python dependencies (README.md here).
set -u
REPO=$PWD; W=/tmp/pyprog; mkdir -p $W
python3 --version; nvcc --version | tail -1; nvidia-smi -L
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $REPO/.corpus/pycuda/*.whl $REPO/.whl/*.whl
export PYTHONPATH=/tmp/site
( cd /tmp && tar xzf $REPO/.corpus/pycuda/pycuda-2026.1.tar.gz && cd pycuda-2026.1 \
  && python3 configure.py --cuda-root=/usr/local/cuda > /tmp/cfg.log 2>&1 \
  && python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site . > /tmp/build.log 2>&1 ) \
  || { tail -20 /tmp/build.log; exit 1; }
python3 tests/cuda_programs/python/pycuda_kernels.py > $OUT/pycuda_stdout.txt || exit 1
python3 tests/cuda_programs/python/pycuda_kernels.py | cmp - $OUT/pycuda_stdout.txt && echo "second run identical"
# the PTX hypa run's nvcc makes of SourceModule's source (extern "C" around it)
python3 - > $W/kernel.cu <<'PY'
import ast
tree = ast.parse(open("tests/cuda_programs/python/pycuda_kernels.py").read())
src = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "SOURCE")
print('extern "C" {\n' + src + '\n}')
PY
nvcc --ptx -arch sm_90 -o $W/pycuda.ptx $W/kernel.cu && cp $W/pycuda.ptx $OUT/ && sha256sum $W/pycuda.ptx
# driver_api.py's launches (python_programs_native.sh), on this PTX
sed -n '/^cat > \$W\/driver_api.toml/,/^TOML$/p' benchmarks/gpu/python_programs_native.sh | sed '1d;$d' \
  | sed 's/file = "kernels.ptx"/file = "pycuda.ptx"/' > $W/pycuda.toml
PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/gpu/harness.py counts --out $W/h --no-ncu --no-probes --deadline 180 $W/pycuda.toml
cp $W/h/counts.json $OUT/pycuda_counts.json
