"""Our PTX-level counts for the captured ResNet-18 Triton kernels beside Nsight
Compute's SASS-level counts from the same H100 run, and the analysis times.

    python benchmarks/gpu/resnet_compare.py benchmarks/gpu/results/hypa_resnet18.json \
        benchmarks/gpu/results/ncu_resnet18.csv > benchmarks/gpu/results/resnet18_h100.md
    python benchmarks/gpu/resnet_compare.py benchmarks/gpu/results/hypa_resnet18.json \
        benchmarks/gpu/results/ncu_resnet18.csv --check benchmarks/gpu/results/resnet18_h100.md   # CI, no GPU

Both files come from ``bash benchmarks/gpu/resnet18.sh $OUT`` on the H100
(launches in the same order: the capture records the steady-state inference,
ncu profiles the same inference inside the NVTX range ``hypa_run``).  ``--check MD`` (no GPU)
regenerates the table from the recorded files and exits 1 unless it equals MD.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict


def table(ours_path: str, ncu_path: str) -> list[str]:
    """The Markdown table and its summary line, one string a line."""
    ours = json.load(open(ours_path))
    rows = list(csv.DictReader(l for l in open(ncu_path) if l.startswith('"')))
    per: dict[str, dict] = defaultdict(dict)
    order: list[str] = []
    for r in rows:
        k = r["ID"]
        if k not in per:
            order.append(k)
            per[k]["name"] = r["Kernel Name"]
        per[k][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    out = ["| # | kernel | thread inst (PTX, ours) | SASS thread inst (ncu) | SASS/PTX | branch eff. ours % | ncu uniform branch targets % | executed fraction |",
           "|---|---|---|---|---|---|---|---|"]
    ratios = []
    for i, (o, k) in enumerate(zip(ours, order)):
        n = per[k]
        sass = n.get("smsp__sass_thread_inst_executed.sum", 0)
        ti = o["thread_inst_executed"]
        ratio = sass / ti if ti else 0
        ratios.append(ratio)
        out.append(f"| {i} | {o['kernel'][:48]} | {ti} | {int(sass)} | {ratio:.2f} | {o['branch_efficiency']:.1f} | "
                   f"{n.get('smsp__sass_average_branch_targets_threads_uniform.pct', 0):.1f} | {100 * o['executed_fraction']:.2f} |")
    if ratios:
        out += ["", f"{len(ratios)} launches; SASS/PTX thread-instruction ratio: median {statistics.median(ratios):.2f}, "
                    f"min {min(ratios):.2f}, max {max(ratios):.2f}"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ours", help="hypa profile --format json of the captured launches")
    ap.add_argument("ncu", help="ncu --csv of the same launches")
    ap.add_argument("--check", metavar="MD", help="exit 1 unless the table equals this file (the recorded one)")
    a = ap.parse_args()
    lines = table(a.ours, a.ncu)
    if not a.check:
        print("\n".join(lines))
        return 0
    recorded = open(a.check).read().splitlines()
    if recorded == lines:
        print(f"{a.check}: the table regenerated from the recordings matches ({lines[-1]})")
        return 0
    i = next((i for i, (x, y) in enumerate(zip(recorded, lines)) if x != y), min(len(recorded), len(lines)))
    print(f"FAIL {a.check}: line {i + 1} differs: {recorded[i] if i < len(recorded) else '<end>'!r} "
          f"-> {lines[i] if i < len(lines) else '<end>'!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
