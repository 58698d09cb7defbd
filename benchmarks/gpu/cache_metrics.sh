#!/bin/sh
# What the H100's caches did on each launch of the given launch files (one warm-up and one
# profiled launch each, caches and clocks left alone): the figures runtime/models/cache_model.py is
# checked against (benchmarks/timing_validate.py --cache-metrics FILE).
#   sh benchmarks/gpu/cache_metrics.sh OUT.csv benchmarks/gpu/launches/calibration.toml ...
set -e
out="$1"; shift
ncu --csv --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum \
    python "$(dirname "$0")/time_kernels.py" "$@" --reps 1 --warmup 1 --batch 0 --spacer-us 0 -o /dev/null > "$out"
