"""Our PTX-level counts for the captured ResNet-18 Triton kernels beside Nsight
Compute's SASS-level counts from the same H100 run, and the analysis times.

    python benchmarks/gpu/resnet_compare.py benchmarks/gpu/results/hypa_resnet18.json \
        benchmarks/gpu/results/ncu_resnet18.csv > benchmarks/gpu/results/resnet18_h100.md

Both files come from ``bash benchmarks/gpu/resnet18.sh $OUT`` on the H100
(launches in the same order: the capture records the steady-state inference,
ncu profiles the same inference inside the NVTX range ``hypa_run``).
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from collections import defaultdict


def main() -> None:
    ours = json.load(open(sys.argv[1]))
    rows = list(csv.DictReader(l for l in open(sys.argv[2]) if l.startswith('"')))
    per: dict[str, dict] = defaultdict(dict)
    order: list[str] = []
    for r in rows:
        k = r["ID"]
        if k not in per:
            order.append(k)
            per[k]["name"] = r["Kernel Name"]
        per[k][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    print("| # | kernel | thread inst (PTX, ours) | SASS thread inst (ncu) | SASS/PTX | branch eff. ours % | ncu uniform branch targets % | executed fraction |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for i, (o, k) in enumerate(zip(ours, order)):
        n = per[k]
        sass = n.get("smsp__sass_thread_inst_executed.sum", 0)
        ti = o["thread_inst_executed"]
        ratio = sass / ti if ti else 0
        ratios.append(ratio)
        print(f"| {i} | {o['kernel'][:48]} | {ti} | {int(sass)} | {ratio:.2f} | {o['branch_efficiency']:.1f} | "
              f"{n.get('smsp__sass_average_branch_targets_threads_uniform.pct', 0):.1f} | {100 * o['executed_fraction']:.2f} |")
    if ratios:
        print(f"\n{len(ratios)} launches; SASS/PTX thread-instruction ratio: median {statistics.median(ratios):.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
