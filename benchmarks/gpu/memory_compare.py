"""Memory divergence metrics against Nsight Compute on an H100 (issue 7).

``harness.py counts --ncu-set memory`` records, per launch, what the L1TEX
unit was asked for: sectors and requests of global loads, stores, atomics and
reductions, shared-memory wavefronts and bank conflicts.  This script

* ``extract``: keeps the launches and their ncu figures from the harness's
  ``counts.json`` (``tests/ground_truth/h100/memory.json``);
* ``compare``: emulates every recorded launch with ``--memory-metrics`` and sets
  our figures beside ncu's, with a reason where they differ
  (``benchmarks/gpu/results/memory_h100.md``).

    python benchmarks/gpu/memory_compare.py extract counts.json -o tests/ground_truth/h100/memory.json
    python benchmarks/gpu/memory_compare.py compare tests/ground_truth/h100/memory.json \\
        --markdown benchmarks/gpu/results/memory_h100.md

Requests are warp-level instructions: ours count PTX memory instructions, ncu's
count SASS ones, so the two agree where ptxas keeps every access as it is in
the PTX (no vectorising of neighbouring loads, no splitting of wide ones, no
loads it could prove redundant).  Sectors are 32-byte pieces of memory the
warp's active lanes touch per request, which is less sensitive to that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import compare  # noqa: E402  (benchmarks/gpu/compare.py: launches of a recording)

MEMORY_KIND = "hypa-ground-truth-memory"
NCU = "l1tex__t_{what}_pipe_lsu_mem_global_op_{op}.sum"

#: (our metric, ncu metric(s) summed): what is compared
PAIRS: list[tuple[str, str, tuple[str, ...]]] = [
    ("global_ld_requests", "global ld requests", (NCU.format(what="requests", op="ld"),)),
    ("global_ld_sectors", "global ld sectors", (NCU.format(what="sectors", op="ld"),)),
    ("global_st_requests", "global st requests", (NCU.format(what="requests", op="st"),)),
    ("global_st_sectors", "global st sectors", (NCU.format(what="sectors", op="st"),)),
    ("global_atom_requests", "global atom+red requests",
     (NCU.format(what="requests", op="atom"), NCU.format(what="requests", op="red"))),
    ("global_atom_sectors", "global atom+red sectors",
     (NCU.format(what="sectors", op="atom"), NCU.format(what="sectors", op="red"))),
    ("shared_ld_wavefronts", "shared ld wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",)),
    ("shared_st_wavefronts", "shared st wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",)),
    ("shared_ld_bank_conflicts", "shared ld bank conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",)),
    ("shared_st_bank_conflicts", "shared st bank conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",)),
]

#: why a launch's figures differ from ncu's, worked out from its SASS
#: (``cuobjdump -sass``) and PTX; keyed by launch id, then by our metric name
#: (``*`` for every metric of the launch)
EXPLANATIONS_FILE = ROOT / "tests" / "ground_truth" / "h100" / "memory_explanations.json"


def extract(counts_json: Path, command: str | None = None) -> dict:
    """The launches and ncu memory figures of a ``harness.py --ncu-set memory`` run."""
    with compare.open_recording(counts_json) as f:
        d = json.load(f)
    keep = ("id", "toml", "index", "kernel", "entry", "grid", "block", "shared_bytes", "ptx_sha256", "status")
    out = {"kind": MEMORY_KIND, "format": 1, "command": command or d.get("command"), "created": d.get("created"), "host": d.get("host"),
           "ncu": {k: d.get("ncu", {}).get(k) for k in ("version", "metrics", "options")}, "launches": []}
    for r in d["launches"]:
        n = r.get("ncu") or {}
        out["launches"].append({**{k: r[k] for k in keep if k in r}, "ncu_status": n.get("status"),
                                "ncu": dict(n.get("metrics") or {})})
    return out


def emulate(record: dict):
    """Our memory metrics of one recorded launch (slice mode, memory addresses sliced)."""
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator

    ln, text = compare.launch_of(record)
    t = time.perf_counter()
    r = Emulator(parse_ptx(text), mode="slice", memory_metrics=True).run(ln)
    return r, 1000 * (time.perf_counter() - t)


def rows_of(record: dict, result) -> list[dict]:
    """One row per compared metric that either side counts."""
    ours = result.metrics.memory or {}
    gpu = record["ncu"]
    rows = []
    for key, label, names in PAIRS:
        if not all(n in gpu for n in names):
            continue
        g = sum(int(gpu[n]) for n in names)
        o = int(ours.get(key, 0))
        if g == 0 and o == 0:
            continue
        rows.append({"launch": record["id"], "metric": key, "label": label, "gpu": g, "ours": o, "equal": g == o})
    return rows


def explanations() -> dict:
    if EXPLANATIONS_FILE.exists():
        return json.loads(EXPLANATIONS_FILE.read_text())
    return {}


def explanation(expl: dict, launch: str, metric: str) -> str | None:
    e = expl.get(launch) or {}
    return e.get(metric) or e.get("*")


def compare_all(doc: dict) -> tuple[list[dict], dict]:
    """Rows for every recorded launch, and what the memory metrics cost: run and
    compile times with and without them (no compiled-code cache, so every compile
    is measured)."""
    import os

    os.environ["HYPA_NO_CACHE"] = "1"
    rows: list[dict] = []
    timing: dict = {"memory_run_ms": 0.0, "plain_run_ms": 0.0, "memory_compile_ms": 0.0, "plain_compile_ms": 0.0}
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator

    for rec in doc["launches"]:
        if rec.get("status") != "ok" or rec.get("ncu_status") != "ok":
            continue
        try:
            result, ms = emulate(rec)
        except Exception as e:  # noqa: BLE001  (a launch the emulator cannot run is reported, not fatal)
            rows.append({"launch": rec["id"], "metric": "*", "label": "emulation", "gpu": "", "ours": f"{type(e).__name__}: {e}"[:120],
                         "equal": False})
            continue
        ln, text = compare.launch_of(rec)
        plain = Emulator(parse_ptx(text), mode="slice").run(ln)
        # duration_ms is the whole run() (compile included)
        timing["memory_run_ms"] += result.duration_ms - result.compile_ms
        timing["memory_compile_ms"] += result.compile_ms
        timing["plain_run_ms"] += plain.duration_ms - plain.compile_ms
        timing["plain_compile_ms"] += plain.compile_ms
        rows.extend(rows_of(rec, result))
    return rows, timing


def markdown(doc: dict, rows: list[dict], timing: dict, recording: str = "tests/ground_truth/h100/memory.json",
             output: str = "benchmarks/gpu/results/memory_h100.md") -> str:
    expl = explanations()
    launches = sorted({r["launch"] for r in rows}, key=lambda s: (s.split("#")[0], int(s.split("#")[1])))
    eq_launch = [lid for lid in launches if all(r["equal"] for r in rows if r["launch"] == lid)]
    by_metric: dict[str, list[dict]] = {}
    for r in rows:
        by_metric.setdefault(r["label"], []).append(r)
    lines = [
        "# Memory metrics against Nsight Compute (H100)",
        "",
        f"Recorded with `{doc.get('command')}` on {doc.get('host', {}).get('nvidia_smi', '?')}, "
        f"ncu {doc.get('ncu', {}).get('version', '?')}; compared with "
        f"`python benchmarks/gpu/memory_compare.py compare {recording} "
        f"--markdown {output}` (slice mode, `--memory-metrics`).",
        "",
        f"{len(eq_launch)} of {len(launches)} launches equal ncu on every memory figure either side counts.",
        "",
        "| metric | launches | equal |",
        "|---|---:|---:|",
    ]
    for label, rs in by_metric.items():
        lines.append(f"| {label} | {len(rs)} | {sum(r['equal'] for r in rs)} |")
    if timing.get("plain_run_ms") and timing.get("plain_compile_ms"):
        lines += ["", "Cost of `--memory-metrics` over these launches, against plain slice mode (one run, "
                  "no compiled-code cache): running (slicing, emulation, metrics) "
                  f"{timing['memory_run_ms']:.0f} ms vs {timing['plain_run_ms']:.0f} ms "
                  f"({timing['memory_run_ms'] / timing['plain_run_ms']:.2f}x), compiling "
                  f"{timing['memory_compile_ms'] / 1000:.2f} s vs {timing['plain_compile_ms'] / 1000:.2f} s "
                  f"({timing['memory_compile_ms'] / timing['plain_compile_ms']:.2f}x)."]
    lines += ["", "## Differences", "", "| launch | metric | ncu | ours | why |", "|---|---|---:|---:|---|"]
    for r in rows:
        if not r["equal"]:
            lines.append(f"| {r['launch']} | {r['label']} | {r['gpu']} | {r['ours']} | "
                         f"{explanation(expl, r['launch'], r['metric']) or 'not explained yet'} |")
    lines += ["", "## Equal", "", ", ".join(eq_launch), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract", help="keep the launches and ncu memory figures of a harness counts.json")
    e.add_argument("counts")
    e.add_argument("-o", "--output", required=True)
    e.add_argument("--command", default=None, help="the command that made the recording (default: the one it names)")
    c = sub.add_parser("compare", help="emulate the recorded launches and compare")
    c.add_argument("recording", nargs="?", default=str(ROOT / "tests" / "ground_truth" / "h100" / "memory.json"))
    c.add_argument("--markdown", help="write the comparison here")
    c.add_argument("--json", help="write the rows here")
    a = ap.parse_args(argv)
    if a.cmd == "extract":
        Path(a.output).write_text(json.dumps(extract(Path(a.counts), a.command), indent=1) + "\n")
        return 0
    doc = json.loads(Path(a.recording).read_text())
    rows, timing = compare_all(doc)
    rel = os.path.relpath(a.recording, ROOT) if os.path.abspath(a.recording).startswith(str(ROOT)) else a.recording
    text = markdown(doc, rows, timing, rel, a.markdown or "-")
    if a.markdown:
        Path(a.markdown).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "timing": timing}, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
