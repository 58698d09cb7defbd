"""``hypa diff A.json B.json``: what changed between two profiles (before/after a kernel
change, two compilers, two inputs).

Launches are paired per kernel in order (the k-th launch of a kernel in A with the k-th in
B); kernels in only one profile are listed as added or removed.  Every compared figure is
given as A, B and the relative change; the per-kernel rows sum the paired launches.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

from hypa.ptxdialect.diagnostics import HypaError

from ..emulator.demangle import demangle
from ..metrics import registry

#: what the diff compares besides the metrics of ``registry.DIFF``: memory and time (sums)
OTHER_FIGURES = (
    ("global_sectors", "global sectors"),
    ("bank_conflicts", "bank conflicts"),
    ("est_kernel_us", "est. kernel us"),  # the kernel's own time: what a change to the kernel moves
    ("est_time_us", "est. time us"),  # with the launch overhead
)


def figures() -> list[tuple[str, str]]:
    """(key, label) of every compared figure, in the order shown."""
    return [(k, registry.metric(k).label) for k in registry.DIFF] + list(OTHER_FIGURES)


def _figures(d: dict) -> dict[str, float]:
    out = {k: float(registry.metric(k).of(d)) for k in registry.DIFF}
    mem = d.get("memory") or {}
    if mem:
        out["global_sectors"] = float(sum(v for k, v in mem.items() if k.startswith("global_") and k.endswith("_sectors")))
        out["bank_conflicts"] = float(sum(v for k, v in mem.items() if k.endswith("_bank_conflicts")))
    est = d.get("time_estimate")
    if est:
        out["est_time_us"] = float(est["time_us"])
        kernel = est.get("kernel_us")
        out["est_kernel_us"] = float(kernel) if isinstance(kernel, (int, float)) else \
            max(0.0, float(est["time_us"]) - float(est.get("launch_overhead_us") or 0.0))
    return out


@dataclass
class Pair:
    kernel: str
    index: int  # k-th launch of the kernel
    a: dict | None
    b: dict | None
    fa: dict = field(default_factory=dict)
    fb: dict = field(default_factory=dict)


class DiffError(HypaError):
    """A profile ``hypa diff`` cannot read."""


def load(path: str) -> list[dict]:
    from .files import ReportFileError, load_json

    try:
        data = load_json(path)
    except ReportFileError as e:
        raise DiffError(str(e)) from None
    from .html import profile_problem

    problem = profile_problem(data)  # as `hypa report` checks it: shape, kinds, numbers
    if problem is not None:
        raise DiffError(f"{path}: not a profile (a JSON list of launches from `hypa profile/run --format json`): "
                        f"{problem}")
    return [d for d in data if "error" not in d and "thread_inst_executed" in d]


def pair(a: list[dict], b: list[dict]) -> list[Pair]:
    def by_kernel(ds):
        out: dict[str, list[dict]] = {}
        for d in ds:
            out.setdefault(d["kernel"], []).append(d)
        return out

    ka, kb = by_kernel(a), by_kernel(b)
    pairs = []
    for k in list(dict.fromkeys([*ka, *kb])):
        la, lb = ka.get(k, []), kb.get(k, [])
        for i in range(max(len(la), len(lb))):
            da = la[i] if i < len(la) else None
            db = lb[i] if i < len(lb) else None
            pairs.append(Pair(k, i, da, db, _figures(da) if da else {}, _figures(db) if db else {}))
    return pairs


def change(x: float | None, y: float | None) -> str:
    if x is None or y is None:
        return ""
    if x == y:
        return "="
    if x == 0:
        return "new"
    return f"{100 * (y - x) / x:+.1f}%"


def kernel_rows(pairs: list[Pair]) -> list[dict]:
    """Per kernel and side, the paired launches combined: the registry's metrics as it says
    (a ratio from the summed counts), the memory and time figures summed."""
    rows: dict[str, dict] = {}
    launches: dict[tuple[str, str], list[dict]] = {}
    for p in pairs:
        r = rows.setdefault(p.kernel, {"kernel": p.kernel, "launches_a": 0, "launches_b": 0, "a": {}, "b": {}})
        for side, d, f in (("a", p.a, p.fa), ("b", p.b, p.fb)):
            if d is None:
                continue
            r[f"launches_{side}"] += 1
            launches.setdefault((p.kernel, side), []).append(d)
            for k, v in f.items():
                if k not in registry.DIFF:
                    r[side][k] = r[side].get(k, 0.0) + v
    for (kernel, side), ds in launches.items():
        for k in registry.DIFF:
            rows[kernel][side][k] = float(registry.metric(k).combine(ds))
    return list(rows.values())


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.2f}" if not float(v).is_integer() else f"{int(v):,}"


def table(pairs: list[Pair], names: tuple[str, str]) -> str:
    krows = kernel_rows(pairs)
    figs = [f for f in figures() if any(f[0] in r["a"] or f[0] in r["b"] for r in krows)]
    lines = [f"A = {names[0]}", f"B = {names[1]}", "", "per kernel (paired launches summed):"]
    for r in krows:
        status = ("only in A" if not r["launches_b"] else "only in B" if not r["launches_a"] else
                  f"{r['launches_a']} vs {r['launches_b']} launches")
        lines.append(f"  {demangle(r['kernel'])}  [{status}]")
        for key, label in figs:
            a, b = r["a"].get(key), r["b"].get(key)
            if a is None and b is None:
                continue
            lines.append(f"    {label:<16} {_num(a):>18} -> {_num(b):>18}  {change(a, b)}")
    changed = [p for p in pairs if p.a and p.b and any(p.fa.get(k) != p.fb.get(k) for k, _ in figs)]
    lines.append("")
    lines.append(f"launches: {sum(1 for p in pairs if p.a and p.b)} paired, {len(changed)} changed, "
                 f"{sum(1 for p in pairs if not p.b)} only in A, {sum(1 for p in pairs if not p.a)} only in B")
    for p in changed:
        diffs = ", ".join(f"{label} {change(p.fa.get(k), p.fb.get(k))}" for k, label in figs
                          if p.fa.get(k) != p.fb.get(k) and change(p.fa.get(k), p.fb.get(k)))
        lines.append(f"  {demangle(p.kernel)} #{p.index} (A launch {p.a.get('launch')}, B launch {p.b.get('launch')}): {diffs}")
    return "\n".join(lines) + "\n"


def html_page(pairs: list[Pair], names: tuple[str, str]) -> str:
    """One small table per kernel (figure, A, B, change), side by side as the width allows:
    a page that fits 1400 px however many figures there are."""
    from .html import CSS, SORT_JS

    e = html.escape
    krows = kernel_rows(pairs)
    figs = [f for f in figures() if any(f[0] in r["a"] or f[0] in r["b"] for r in krows)]
    out = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>hypa diff</title><style>{CSS}"
           ".kd { display: inline-block; vertical-align: top; margin: 0 24px 16px 0; } .kd h3 { max-width: 560px; "
           "word-break: break-word; font-size: 15px; }</style>"
           f"</head><body><h1>hypa diff</h1><p class=sub>A = {e(names[0])}<br>B = {e(names[1])}</p>"
           "<h2>Kernels</h2><p class=sub>Paired launches summed per kernel; the change is B against A.</p>"]
    for r in krows:
        status = ("only in A" if not r["launches_b"] else "only in B" if not r["launches_a"] else
                  f"{r['launches_a']} vs {r['launches_b']} launches")
        out.append(f"<div class=kd><h3 title='{e(r['kernel'])}'>{e(demangle(r['kernel']))} "
                   f"<span class=sub>[{e(status)}]</span></h3><table class=sortable><thead><tr><th class=k>figure</th>"
                   "<th>A</th><th>B</th><th>change</th></tr></thead><tbody>")
        for k, label in figs:
            a, b = r["a"].get(k), r["b"].get(k)
            if a is None and b is None:
                continue
            c = change(a, b)
            better_higher = k in registry.DIFF and registry.metric(k).higher_is_better
            worse = c.startswith("-") if better_higher else c.startswith("+")
            cls = "" if c in ("", "=") else ("bad" if worse else "good")
            out.append(f"<tr><td class=k>{e(label)}</td><td>{_num(a)}</td><td>{_num(b)}</td>"
                       f"<td class={cls}>{e(c)}</td></tr>")
        out.append("</tbody></table></div>")
    out.append(f"<script>{SORT_JS}</script></body></html>\n")
    return "".join(out)
