"""Writers for launch results: a readable table, JSON (the DESIGN.md section 6
contract) and CSV (our columns, or HyPA's column set for old scripts)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from .demangle import demangle
from .emulator import LaunchResult
from .metrics import METRIC_NAMES

#: HyPA's CSV columns (Metz et al.): static estimate, dynamic count, % to execute
HYPA_COLUMNS = ("Kernel", "Static", "Dynamic", "% to execute")


def to_json(results: Sequence[LaunchResult], blocks: bool = True) -> str:
    out = []
    for r in results:
        d = r.as_dict()
        if not blocks:
            d.pop("blocks", None)
        out.append(d)
    return json.dumps(out, indent=2) + "\n"


def to_csv(results: Sequence[LaunchResult], columns: str = "hypa-py") -> str:
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    if columns == "hypa":
        w.writerow(HYPA_COLUMNS)
        for r in results:
            m = r.metrics.values
            w.writerow([demangle(r.kernel), int(m["static_estimate"]), int(m["thread_inst_executed"]),
                        f"{100 * m['executed_fraction']:.2f}"])
        return s.getvalue()
    w.writerow(["kernel", "grid", "block", "mode", *METRIC_NAMES, "duration_ms"])
    for r in results:
        m = r.metrics.values
        row = [r.kernel, "x".join(map(str, r.grid)), "x".join(map(str, r.block)), r.mode]
        for k in METRIC_NAMES:
            v = m[k]
            row.append(f"{v:.4f}" if isinstance(v, float) and not float(v).is_integer() else int(v))
        row.append(f"{r.duration_ms:.3f}")
        w.writerow(row)
    return s.getvalue()


def blocks_csv(results: Sequence[LaunchResult]) -> str:
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    w.writerow(["kernel", "function", "block", "instructions", "warp_executions", "thread_executions", "divergent_branches"])
    for r in results:
        for b in r.metrics.blocks:
            w.writerow([r.kernel, b.function, b.name, b.instructions, b.warps, b.threads, b.divergent])
    return s.getvalue()


def to_table(results: Sequence[LaunchResult], blocks: bool = True) -> str:
    lines: list[str] = []
    for r in results:
        m = r.metrics.values
        g = "x".join(map(str, r.grid))
        bl = "x".join(map(str, r.block))
        lines.append(f"kernel {demangle(r.kernel)}  grid {g}  block {bl}  ({r.mode} mode, {r.duration_ms:.1f} ms)")
        rows = [
            ("static_instructions", m["static_instructions"]),
            ("static_estimate", m["static_estimate"]),
            ("inst_executed", m["inst_executed"]),
            ("thread_inst_executed", m["thread_inst_executed"]),
            ("not_predicated_off_thread_inst_executed", m["not_predicated_off_thread_inst_executed"]),
            ("flop_count_sp", m["flop_count_sp"]),
            ("flop_count_dp", m["flop_count_dp"]),
            ("flop_count_hp", m["flop_count_hp"]),
            ("flop_count_special", m["flop_count_special"]),
            ("branch", m["branch"]),
            ("divergent_branch", m["divergent_branch"]),
            ("branch_efficiency", f"{m['branch_efficiency']:.2f} %"),
            ("executed_fraction", f"{100 * m['executed_fraction']:.2f} %"),
        ]
        for k, v in rows:
            lines.append(f"  {k:<42} {v:>16}" if not isinstance(v, str) else f"  {k:<42} {v:>16}")
        if r.metrics.predicates_estimated:
            lines.append("  (guarded instructions' lanes estimated: run with --exact-predicates for exact figures)")
        if blocks:
            lines.append(f"  {'block':<28} {'instr':>6} {'warps':>10} {'threads':>12} {'divergent':>10}")
            for b in r.metrics.blocks:
                name = b.name if b.function == r.kernel else f"{b.function}:{b.name}"
                lines.append(f"  {name:<28} {b.instructions:>6} {b.warps:>10} {b.threads:>12} {b.divergent:>10}")
        for n in r.notes:
            lines.append(f"  note: {n}")
        lines.append("")
    return "\n".join(lines)


def render(results: Sequence[LaunchResult], fmt: str, csv_columns: str = "hypa-py") -> str:
    if fmt == "json":
        return to_json(results)
    if fmt == "csv":
        return to_csv(results, csv_columns)
    return to_table(results)
