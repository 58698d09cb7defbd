#!/usr/bin/env bash
# On the H100 machine (device tool), in one run: capture ResNet-18's Triton
# kernels and launches, time `hypa profile` on them there, and time Nsight
# Compute collecting the equivalent metrics for the same kernels.
#   bash benchmarks/gpu/resnet18.sh $OUT      (PYTHONPATH must hold xdsl/llvmlite)
set -u
OUTDIR=${1:?output dir}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$(mktemp -d); ln -s "$ROOT" "$PKG/hypa"; export PYTHONPATH="$PKG:${PYTHONPATH:-}"
W=/tmp/resnet18
rm -rf "$W"
t0=$(date +%s.%N)
timeout 300 python3 "$ROOT/workloads/capture_triton.py" --model resnet18 --out "$W" > "$OUTDIR/capture.log" 2>&1
echo "capture rc=$? seconds=$(python3 -c "import time;print(round(time.time()-$t0,2))")" | tee -a "$OUTDIR/capture.log"
tar czf "$OUTDIR/resnet18.tgz" -C /tmp resnet18
# our analysis, on this machine's CPU
t0=$(date +%s.%N)
timeout 400 python3 -c "import sys; from hypa.tools.hypa_cli import main; main(sys.argv[1:])" profile "$W" --format json -o "$OUTDIR/hypa_resnet18.json" > "$OUTDIR/hypa.log" 2>&1
echo "hypa rc=$? seconds=$(python3 -c "import time;print(round(time.time()-$t0,2))")" | tee -a "$OUTDIR/hypa.log"
# the model alone, then under ncu with the same counts for the same (Triton) kernels
t0=$(date +%s.%N)
timeout 200 python3 "$ROOT/workloads/capture_triton.py" --model resnet18 --out /tmp/unused --run-only > "$OUTDIR/baseline.log" 2>&1
echo "baseline rc=$? seconds=$(python3 -c "import time;print(round(time.time()-$t0,2))")" | tee -a "$OUTDIR/baseline.log"
M=smsp__sass_inst_executed.sum,smsp__sass_thread_inst_executed.sum,smsp__sass_average_branch_targets_threads_uniform.pct,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_branch_targets.sum,smsp__sass_branch_targets_threads_divergent.sum
t0=$(date +%s.%N)
timeout 420 ncu --nvtx --nvtx-include "hypa_run/" --kernel-name regex:triton --metrics $M --csv \
    python3 "$ROOT/workloads/capture_triton.py" --model resnet18 --out /tmp/unused --run-only > "$OUTDIR/ncu_resnet18.csv" 2> "$OUTDIR/ncu.log"
echo "ncu rc=$? seconds=$(python3 -c "import time;print(round(time.time()-$t0,2))")" | tee -a "$OUTDIR/ncu.log"
