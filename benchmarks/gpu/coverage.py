#!/usr/bin/env python3
"""The opcode coverage table (Markdown), from the ISA table, the emulator's rules
and the recorded GPU probes.

    python benchmarks/gpu/coverage.py                       # recorded probes counted, not re-checked
    python benchmarks/gpu/coverage.py --verify              # re-run every recorded probe in the emulator
    HYPA_GT_REPORT=gt.jsonl pytest tests/unit/test_ground_truth.py
    python benchmarks/gpu/coverage.py --from-report gt.jsonl   # reuse the test run's verdicts

Columns, per ISA entry (``ptxdialect/isa.py``):

* **ISA table** -- ``full`` (operand roles, modifiers and category described:
  counted exactly) or ``parse`` (read and printed only);
* **emulator** -- the entry has lowering semantics (``runtime.lowering.rules.RULES``,
  or it is control flow the emulator handles itself); where it has none on purpose, the
  reason (``isa.UNSUPPORTED_REASONS``: later architectures only, several GPUs ...);
* **on hardware** -- recorded probe variants (opcode/type/modifier
  combinations) under ``tests/ground_truth``, and how many of them the
  emulator matched bit for bit (or within the ISA's error for ``.approx``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import compare  # noqa: E402  (imports hypa)

from hypa.ptxdialect import isa  # noqa: E402

CONTROL = {"bra", "brx.idx", "ret", "exit", "trap", "call"}


def emulated_entries() -> set[str]:
    from hypa.runtime.emulator.lowering import supported_entries

    return supported_entries() | CONTROL


def probe_verdicts(folder: Path, verify: bool, report: str | None) -> dict[str, dict]:
    """entry -> {"recorded": n, "verified": m, "failed": [ids], "unchecked": k, "variants": [instructions]}"""
    import numpy as np

    out: dict[str, dict] = defaultdict(
        lambda: {"recorded": 0, "verified": 0, "approx": 0, "failed": [], "unchecked": 0, "variants": []})
    verdicts: dict[str, bool] = {}
    if report:
        for line in Path(report).read_text().splitlines():
            d = json.loads(line)
            if "probe" in d:
                verdicts[d["probe"]] = bool(d["ok"])
    _, probe_files = compare.find_recordings(folder)
    for p in probe_files:
        doc = compare.load(p)
        npz = dict(np.load(p.with_name(doc.get("npz", "probes.npz")))) if verify else {}
        for rec in doc.get("probes", []):
            if rec.get("status") != "ok":
                continue
            e = out[compare.probe_entry(rec)]
            e["recorded"] += 1
            e["variants"].append(rec["instruction"])
            ok = verdicts.get(rec["id"])
            if ok is None and verify:
                try:
                    ok = compare.compare_probe(rec, [npz[k] for k in rec["outputs"]], doc["n"], doc["seed"]).ok
                except Exception:  # noqa: BLE001  (no semantics, stale inputs)
                    ok = False
            if ok is None:
                e["unchecked"] += 1
            elif ok:
                e["verified"] += 1
                if compare.spec_of(rec).tolerance is not None:
                    e["approx"] += 1  # matched within the ISA's stated error, not bit for bit
            else:
                e["failed"].append(rec["id"])
    return out


def table(verdicts: dict[str, dict]) -> str:
    emu = emulated_entries()
    rows = []
    totals = defaultdict(int)
    for name, kind, status in isa.coverage_rows():
        v = verdicts.get(name)
        totals["entries"] += 1
        totals[status] += 1
        if name in emu:
            totals["emulated"] += 1
        hw = "-"
        if v and v["recorded"]:
            totals["recorded"] += 1
            if v["verified"] == v["recorded"]:
                totals["verified"] += 1
                exact = v["verified"] - v["approx"]
                hw = f"{exact}/{v['recorded']} bit-exact"
                if v["approx"]:
                    hw += f", {v['approx']} `.approx` within the ISA's error"
            elif v["unchecked"]:
                hw = f"{v['recorded']} recorded"
            else:
                hw = f"{v['verified']}/{v['recorded']} (differs: {', '.join(v['failed'][:3])})"
        why = isa.unsupported_reason(name)
        left = isa.unemulated_forms(name)
        emulated = ("yes" + (f" (except: {left})" if left else "")) if name in emu else f"- (why: {why})" if why else "-"
        if why and name not in emu:
            totals["reasoned"] += 1
        rows.append(f"| `{name}` | {kind} | {status} | {emulated} | {hw} |")
    head = [
        f"{totals['entries']} ISA entries: {totals['full']} fully described, {totals['parse']} parse-only; "
        f"{totals['emulated']} with emulator semantics, {totals['reasoned']} without them for the reason given; "
        f"{totals['recorded']} probed on hardware, "
        f"{totals['verified']} of them matching the emulator on every recorded variant.",
        "",
        "| entry | kind | ISA table | emulator | on hardware (probe variants) |",
        "|---|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recordings", default=str(ROOT / "tests" / "ground_truth"))
    ap.add_argument("--verify", action="store_true", help="re-run every recorded probe in the emulator (slow)")
    ap.add_argument("--from-report", help="JSON lines written by test_ground_truth.py with HYPA_GT_REPORT set")
    a = ap.parse_args(argv)
    print(table(probe_verdicts(Path(a.recordings), a.verify, a.from_report)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
