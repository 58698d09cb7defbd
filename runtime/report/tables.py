"""Writers for launch results: a readable table, JSON (the docs/guide.md, "Launch specification"
contract) and CSV (our columns, or HyPA's column set for old scripts)."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence

from ..emulator.demangle import demangle, short_names
from ..emulator.emulator import LaunchResult
from ..metrics import registry

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
    cols = registry.columns()
    w.writerow(["kernel", "grid", "block", "mode", *cols, "duration_ms"])
    for r in results:
        m = r.metrics.values
        row = [r.kernel, "x".join(map(str, r.grid)), "x".join(map(str, r.block)), r.mode]
        for k in cols:
            v = m[k]
            row.append(f"{v:.4f}" if isinstance(v, float) and not float(v).is_integer() else int(v))
        row.append(f"{r.duration_ms:.3f}")
        w.writerow(row)
    return s.getvalue()


#: ``--csv-columns`` values that give other row sets than one row per launch
CSV_TABLES = ("blocks", "mix", "memory")


def _launch_cells(r: LaunchResult, launch: int | None) -> list:
    return ([] if launch is None else [launch]) + [r.kernel, "x".join(map(str, r.grid)), "x".join(map(str, r.block))]


def blocks_csv(results: Sequence[LaunchResult], launches: Sequence[int] | None = None) -> str:
    """One row per basic block of every launch."""
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    w.writerow((["launch"] if launches else []) + ["kernel", "grid", "block", "function", "basic_block", "instructions",
                "warp_executions", "thread_executions", "divergent_branches", "inst_executed", "thread_inst_executed"])
    for i, r in enumerate(results):
        for b in r.metrics.blocks:
            w.writerow(_launch_cells(r, launches[i] if launches else None)
                       + [b.function, b.name, b.instructions, b.warps, b.threads, b.divergent, b.inst_executed,
                          b.thread_inst_executed])
    return s.getvalue()


def mix_csv(results: Sequence[LaunchResult], launches: Sequence[int] | None = None) -> str:
    """The dynamic instruction mix in long form: per launch, one row per opcode for
    the kernel (``basic_block`` = ``*``), then one per opcode and basic block."""
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    w.writerow((["launch"] if launches else []) + ["kernel", "grid", "block", "basic_block", "opcode", "category",
                                                   "warp_count", "thread_count"])
    for i, r in enumerate(results):
        m = r.metrics
        head = _launch_cells(r, launches[i] if launches else None)
        cat = m.opcode_categories
        for op, v in sorted(m.opcodes.items(), key=lambda kv: (-kv[1], kv[0])):
            w.writerow(head + ["*", op, cat.get(op, ""), v, m.thread_opcodes[op]])
        for b in m.blocks:
            name = b.name if b.function == r.kernel else f"{b.function}:{b.name}"
            for op, v in sorted(b.opcodes.items(), key=lambda kv: (-kv[1], kv[0])):
                w.writerow(head + [name, op, cat.get(op, ""), v, b.thread_opcodes[op]])
    return s.getvalue()


def memory_csv(results: Sequence[LaunchResult], launches: Sequence[int] | None = None) -> str:
    """With --memory-metrics: one row per memory instruction of every launch."""
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    cols = [m for m in registry.MEMORY if m.reported]
    w.writerow((["launch"] if launches else []) + ["kernel", "grid", "block", "basic_block", "instruction", "space",
                                                   *(m.name for m in cols)])
    for i, r in enumerate(results):
        head = _launch_cells(r, launches[i] if launches else None)
        for mi in r.metrics.memory_instructions:
            w.writerow(head + [mi.block, mi.instruction, mi.space, *(_memory_cell(mi, m) for m in cols)])
    return s.getvalue()


def _memory_cell(mi, m: registry.Metric):
    """A memory instruction's metric in the CSV: empty where it does not apply (a shared
    instruction's sectors) or a ratio has no denominator."""
    if not registry.in_space(m, mi.space):
        return ""
    if m.kind == registry.RATIO:
        return f"{mi.value(m.name):.4f}" if mi.value(m.denominator) else ""
    return mi.value(m.name)


def _csv_table(kind: str, results: Sequence[LaunchResult], launches: Sequence[int] | None = None) -> str:
    return {"blocks": blocks_csv, "mix": mix_csv, "memory": memory_csv}[kind](results, launches)


#: opcodes the table's instruction-mix view lists (the JSON has them all)
TABLE_TOP_OPCODES = 10


def _mix_lines(r: LaunchResult, top: int = TABLE_TOP_OPCODES) -> list[str]:
    m = r.metrics
    total_w = sum(m.opcodes.values()) or 1
    total_t = sum(m.thread_opcodes.values()) or 1
    ops = sorted(m.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))
    out = [f"  {'instruction mix (top ' + str(min(top, len(ops))) + ' of ' + str(len(ops)) + ' opcodes)':<42} "
           f"{'warp':>12} {'%':>6} {'thread':>14} {'%':>6}"]
    for op, v in ops[:top]:
        t = m.thread_opcodes[op]
        out.append(f"    {op:<40} {v:>12} {100 * v / total_w:>6.1f} {t:>14} {100 * t / total_t:>6.1f}")
    out.append("    by category: " + ", ".join(
        f"{c} {100 * m.categories[c] / total_w:.1f}%" for c in sorted(m.categories, key=lambda c: -m.categories[c])
        if m.categories[c]))
    return out


def _memory_lines(r: LaunchResult) -> list[str]:
    tot = r.metrics.memory or {}
    out = ["  memory (--memory-metrics)"]
    for space, op in (("global", "ld"), ("global", "st"), ("global", "atom"), ("shared", "ld"), ("shared", "st"),
                      ("shared", "atom")):
        req = tot.get(f"{space}_{op}_requests", 0)
        if not req:
            continue
        if space == "global":
            sec = tot.get(f"global_{op}_sectors", 0)
            spr = tot[f"global_{op}_sectors_per_request"]
            out.append(f"    global {op:<5} requests {req:>10}  sectors {sec:>10}  sectors/request {spr:>6.2f}"
                       f"  lines {tot.get(f'global_{op}_lines', 0):>10}")
        else:
            out.append(f"    shared {op:<5} requests {req:>10}  wavefronts {tot.get(f'shared_{op}_wavefronts', 0):>10}"
                       f"  bank conflicts {tot.get(f'shared_{op}_bank_conflicts', 0):>10}")
    insts = r.metrics.memory_instructions
    if insts:
        out.append(f"    {'instruction':<44} {'block':<14} {'requests':>9} {'sect/req':>9} {'conflicts':>9}")
        for mi in insts:
            spr = f"{mi.value('sectors_per_request'):.2f}" if mi.space != "shared" and mi.requests else ""
            conf = str(mi.value("bank_conflicts")) if mi.space == "shared" else ""
            text = mi.instruction if len(mi.instruction) <= 44 else mi.instruction[:43] + "~"
            out.append(f"    {text:<44} {mi.block[:14]:<14} {mi.requests:>9} {spr:>9} {conf:>9}".rstrip())
    return out


def to_table(results: Sequence[LaunchResult], blocks: bool = True) -> str:
    lines: list[str] = []
    for r in results:
        m = r.metrics.values
        g = "x".join(map(str, r.grid))
        bl = "x".join(map(str, r.block))
        lines.append(f"kernel {demangle(r.kernel)}  grid {g}  block {bl}  ({r.mode} mode, {r.duration_ms:.1f} ms)")
        for k, v in m.items():
            lines.append(f"  {k:<42} {registry.metric(k).display(v):>16}")
        if r.metrics.predicates_estimated:
            lines.append("  (guarded instructions' lanes estimated: run with --exact-predicates for exact figures)")
        if blocks:
            lines.append(f"  {'block':<28} {'instr':>6} {'warps':>10} {'threads':>12} {'divergent':>10}")
            for b in r.metrics.blocks:
                name = b.name if b.function == r.kernel else f"{b.function}:{b.name}"
                lines.append(f"  {name:<28} {b.instructions:>6} {b.warps:>10} {b.threads:>12} {b.divergent:>10}")
        if r.metrics.opcodes:
            lines.extend(_mix_lines(r))
        if r.metrics.memory is not None:
            lines.extend(_memory_lines(r))
        for n in r.notes:
            lines.append(f"  note: {n}")
        lines.append("")
    return "\n".join(lines)


def render(results: Sequence[LaunchResult], fmt: str, csv_columns: str = "hypa-py") -> str:
    if fmt == "json":
        return to_json(results)
    if fmt == "csv":
        if csv_columns in CSV_TABLES:
            return _csv_table(csv_columns, results)
        return to_csv(results, csv_columns)
    return to_table(results)


# -- batch profiles (``hypa profile``): one dict per launch, then writers --------------------

def cta_coords(linear: int, grid: Sequence[int]) -> list[int]:
    gx, gy = grid[0], grid[1]
    return [linear % gx, (linear // gx) % gy, linear // (gx * gy)]


def record_dict(rec, per_cta: bool = False) -> dict:
    """The JSON object of one launch record: ``LaunchResult.as_dict()`` (kernel,
    grid, block, every metric, blocks, instruction mix) plus where it came from,
    which launch it reuses, and per-CTA values."""
    r = rec.result
    d: dict = {"record": "launch", "launch": rec.index}
    d.update(r.as_dict())
    d["kernel_name"] = demangle(d["kernel"])  # CUDA's name beside the mangled one
    d["file"] = rec.source.path
    d["member"] = rec.source.member
    d["reused_from"] = rec.reused_from
    est = getattr(r, "time_estimate", None)
    if est is not None:
        d["time_estimate"] = est.as_dict()
    if r.program is not None and ".loc" in (rec.source.ptx or ""):  # a -lineinfo build: counts per source line
        from .source_view import result_lines

        d["source_lines"] = result_lines(r, ptx=rec.source.ptx)
    if per_cta and r.per_cta is not None:
        first = r.ctas[0] if r.ctas else 0
        cols = registry.columns()
        d["ctas"] = [{"cta": cta_coords(first + i, r.grid), **{k: v[k] for k in cols}}
                     for i, v in enumerate(r.per_cta)]
    return d


def static_dict(s) -> dict:
    return {"file": s.source.path, "member": s.source.member, "kernel": s.kernel,
            "static_instructions": s.static_instructions, "blocks": s.blocks,
            "note": "no launch given: static counts only"}


def profile_dicts(profile, per_cta: bool = False) -> list[dict]:
    return [record_dict(r, per_cta) for r in profile.records if r.result is not None]


def flops(d: dict) -> float:
    return registry.metric("flops").of(d)


def by_kernel(dicts: Sequence[dict]) -> list[dict]:
    """Launches of the same kernel (same file) combined as the registry says: counts add up,
    ratios are recomputed from the sums."""
    metrics = [registry.metric(k) for k in registry.columns()]
    groups: dict[tuple, dict] = {}
    members: dict[tuple, list[dict]] = {}
    for d in dicts:
        key = (d.get("file"), d.get("member"), d["kernel"])
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"record": "kernel", "kernel": d["kernel"], "kernel_name": demangle(d["kernel"]),
                               "file": d.get("file"), "member": d.get("member"),
                               "launches": 0, "reused": 0,
                               **{m.name: 0 for m in metrics if m.kind != registry.RATIO}, "duration_ms": 0.0}
        members.setdefault(key, []).append(d)
        g["launches"] += 1
        if d.get("reused_from") is not None:
            g["reused"] += 1
        else:
            g["duration_ms"] += d.get("duration_ms", 0.0)
        if d.get("time_estimate"):  # absent, or null in a JSON profile
            g["est_time_us"] = g.get("est_time_us", 0.0) + d["time_estimate"]["time_us"]
    for key, g in groups.items():
        for m in metrics:  # counts in their places, then the ratios
            g[m.name] = m.combine(members[key])
    return list(groups.values())


def _num(v) -> str:
    if isinstance(v, float) and not float(v).is_integer():
        return f"{v:.4f}"
    return str(int(v))


def profile_json(profile, per_cta: bool = False, by: str = "launch") -> str:
    dicts = profile_dicts(profile, per_cta)
    if by == "kernel":
        dicts = by_kernel(dicts)
    return json.dumps(dicts, indent=2, default=_json_default) + "\n"


def write_profile_json(profile, out, per_cta: bool = False, by: str = "launch") -> None:
    """``profile_json`` written to ``out`` as it is made: with ``per_cta`` each CTA's entry is
    formatted and written on its own, so a launch of millions of CTAs never holds its whole
    report in memory (the same JSON value as ``profile_json``)."""
    if by == "kernel":
        out.write(profile_json(profile, per_cta, by))
        return
    write_records_json(out, profile.records, per_cta)


def write_records_json(out, records, per_cta: bool = False, errors: bool = False) -> None:
    """Launch records as a JSON list written one record at a time (the text ``json.dumps``
    of the list with ``indent=2`` gives), so the report of thousands of launches, or of a
    launch of millions of CTAs (``per_cta``), is never held in memory whole.  ``errors``: a
    failed launch is an entry too, its error in place of metrics (``hypa run``)."""
    out.write("[")
    n = 0
    for rec in records:
        r = rec.result
        if r is None:
            if errors and rec.error is not None:
                d = {"record": "launch", "launch": rec.index, "kernel": rec.kernel,
                     "kernel_name": demangle(rec.kernel or ""), "grid": list(rec.launch.grid),
                     "block": list(rec.launch.block), "file": rec.source.path, "member": rec.source.member,
                     "error": rec.error}
                out.write(("," if n else "") + "\n" + "\n".join("  " + ln for ln in json.dumps(d, indent=2).splitlines()))
                n += 1
            continue
        head = json.dumps(record_dict(rec, per_cta=False), indent=2, default=_json_default)
        if per_cta and r.per_cta is not None:
            head = head.rstrip()[:-1].rstrip() + ',\n  "ctas": ['
        out.write(("," if n else "") + "\n" + "\n".join("  " + ln for ln in head.splitlines()))
        n += 1
        if not per_cta or r.per_cta is None:
            continue
        first = r.ctas[0] if r.ctas else 0
        cols = registry.columns()
        for i, v in enumerate(r.per_cta):
            entry = {"cta": cta_coords(first + i, r.grid), **{k: v[k] for k in cols}}
            out.write(("," if i else "") + "\n      " + json.dumps(entry, default=_json_default))
        out.write("\n    ]\n  }")
    out.write("\n]\n" if n else "]\n")


def _json_default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    raise TypeError(f"not JSON: {type(o).__name__}")


def profile_csv(profile, columns: str = "hypa-py", per_cta: bool = False, by: str = "launch") -> str:
    if columns in CSV_TABLES:
        recs = [r for r in profile.records if r.result is not None]
        return _csv_table(columns, [r.result for r in recs], [r.index for r in recs])
    dicts = profile_dicts(profile, per_cta)
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    if by == "kernel":
        dicts = by_kernel(dicts)
    if columns == "hypa":
        w.writerow(HYPA_COLUMNS)
        for d in dicts:
            w.writerow([demangle(d["kernel"]), int(d["static_estimate"]), int(d["thread_inst_executed"]),
                        f"{100 * d['executed_fraction']:.2f}"])
        return s.getvalue()
    est = any("time_estimate" in d or "est_time_us" in d for d in dicts)
    cols = registry.columns()
    if by == "kernel":
        w.writerow(["kernel", "file", "launches", "reused", *cols, "duration_ms", *(["est_time_us"] if est else [])])
        for d in dicts:
            w.writerow([d["kernel"], _file(d), d["launches"], d["reused"], *(_num(d[k]) for k in cols),
                        f"{d['duration_ms']:.3f}", *([f"{d['est_time_us']:.3f}" if "est_time_us" in d else ""] if est else [])])
        return s.getvalue()
    if per_cta:
        w.writerow(["launch", "kernel", "grid", "block", "cta_x", "cta_y", "cta_z", *cols])
        for d in dicts:
            for c in d.get("ctas", []):
                w.writerow([d["launch"], d["kernel"], _dims(d["grid"]), _dims(d["block"]), *c["cta"],
                            *(_num(c[k]) for k in cols)])
        return s.getvalue()
    est_cols = ["est_time_us", "est_cycles", "est_bound", "est_arch"] if est else []
    mem = any(d.get("memory") for d in dicts)
    mem_cols = ["global_sectors", "global_requests", "sectors_per_request", "bank_conflicts"] if mem else []
    w.writerow(["launch", "kernel", "file", "grid", "block", "mode", *cols, "duration_ms", "reused_from", *est_cols,
                *mem_cols])
    for d in dicts:
        e = d.get("time_estimate")
        w.writerow([d["launch"], d["kernel"], _file(d), _dims(d["grid"]), _dims(d["block"]), d["mode"],
                    *(_num(d[k]) for k in cols), f"{d['duration_ms']:.3f}",
                    "" if d.get("reused_from") is None else d["reused_from"],
                    *(([f"{e['time_us']:.3f}", f"{e['cycles']:.0f}", e["bound"], e["arch"]] if e else ["", "", "", ""])
                      if est else []), *(_memory_cells(d) if mem else [])])
    return s.getvalue()


def _memory_cells(d: dict) -> list:
    sec, req, bank = memory_summary(d)
    return [sec, req, f"{sectors_per_request(sec, req):.4f}" if req else "", bank]


def sectors_per_request(sectors: int, requests: int) -> float:
    return registry.metric("sectors_per_request").value({"sectors": sectors, "requests": requests})


def memory_lines(d: dict) -> int:
    """Global 128-byte cache lines a launch touched per request, summed (--memory-metrics)."""
    return int(sum(v for k, v in (d.get("memory") or {}).items() if k.startswith("global_") and k.endswith("_lines")))


def memory_summary(d: dict) -> tuple[int, int, int]:
    """(global sectors, global requests, shared bank conflicts) of a launch dict (--memory-metrics)."""
    m = d.get("memory") or {}
    sec = sum(v for k, v in m.items() if k.startswith("global_") and k.endswith("_sectors"))
    req = sum(v for k, v in m.items() if k.startswith("global_") and k.endswith("_requests"))
    bank = sum(v for k, v in m.items() if k.endswith("_bank_conflicts"))
    return int(sec), int(req), int(bank)


def _dims(v: Sequence[int]) -> str:
    return "x".join(map(str, v))


def _file(d: dict) -> str:
    import os

    f = os.path.basename(d.get("file") or "")
    return f if not d.get("member") else f"{f}[{d['member']}]"


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "~"


def _ranges(ids: Sequence[int]) -> str:
    out = []
    start = prev = None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


def summary_line(profile) -> str:
    n = len(profile.records)
    kernels = len({(r.source.label, r.kernel) for r in profile.records})
    if n:
        parts = [f"{n} launch{'es' if n != 1 else ''} of {kernels} kernel{'s' if kernels != 1 else ''}",
                 f"{profile.analysed} analysed, {profile.reused} reused from identical launches"]
    else:
        parts = ["no launches"]
    if profile.errors:
        parts.append(f"{len(profile.errors)} failed")
    if profile.static:
        parts.append(f"{len(profile.static)} kernel{'s' if len(profile.static) != 1 else ''} counted statically")
    return f"hypa profile: {'; '.join(parts)}; {profile.wall_s:.2f} s on {profile.where}"


def profile_table(profile, by: str = "launch", per_cta: bool = False, blocks: bool = False, wide: bool = False) -> str:
    """The terminal summary: one row per launch (or per kernel), per-CTA groups,
    statically counted kernels, and a closing line with what was reused.  Kernel names are
    shortened in the middle to fit (``wide``: in full)."""
    lines: list[str] = []
    dicts = profile_dicts(profile, per_cta)
    if blocks:
        for r in profile.records:
            if r.result is not None:
                lines.append(f"launch {r.index} ({r.source.display})" + (f", same as launch {r.reused_from}" if r.reused_from is not None else ""))
                lines.append(to_table([r.result]))
    est = any("time_estimate" in d for d in dicts)
    mem = any(d.get("memory") for d in dicts)
    full = [demangle(d["kernel"]) for d in dicts]
    w1 = max([36, *map(len, full)]) if wide else 36
    w2 = max([42, *map(len, full)]) if wide else 42
    names36 = short_names(full, w1)
    names42 = short_names(full, w2)
    if dicts and by == "launch":
        head = f"{'#':>4}  {'kernel':<{w1}} {'grid':>11} {'block':>11} {'inst_executed':>14} {'thread_inst':>14} {'flops':>12} {'br.eff':>8} {'exec.':>8} {'emu.ms':>9}"
        lines.append(head + (f" {'sect/req':>8} {'bank.c':>8}" if mem else "") + (f" {'est.us':>10} {'bound'}" if est else ""))
        for d in dicts:
            reused = d.get("reused_from")
            ms = f"= #{reused}" if reused is not None else f"{d['duration_ms']:.1f}"
            e = d.get("time_estimate")
            tail = (f" {e['time_us']:>10.2f} {e['bound']:<10}" if e else f" {'-':>10}") if est else ""
            if mem:
                sec, req, bank = memory_summary(d)
                tail = (f" {sectors_per_request(sec, req):>8.2f}" if req else f" {'-':>8}") + f" {bank:>8}" + tail
            lines.append(
                f"{d['launch']:>4}  {names36[demangle(d['kernel'])]:<{w1}} {_dims(d['grid']):>11} {_dims(d['block']):>11} "
                f"{int(d['inst_executed']):>14} {int(d['thread_inst_executed']):>14} {int(flops(d)):>12} "
                f"{d['branch_efficiency']:>7.2f}% {100 * d['executed_fraction']:>7.2f}% {ms:>9}{tail}".rstrip()
            )
    groups = by_kernel(dicts)
    if groups and (by == "kernel" or any(g["launches"] > 1 for g in groups)):
        if by == "launch":
            lines.append("")
            lines.append("per kernel:")
        lines.append(f"{'kernel':<{w2}} {'launches':>8} {'reused':>6} {'inst_executed':>14} {'thread_inst':>14} {'flops':>12} {'br.eff':>8} {'exec.':>8}")
        for g in groups:
            lines.append(
                f"{names42[demangle(g['kernel'])]:<{w2}} {g['launches']:>8} {g['reused']:>6} {int(g['inst_executed']):>14} "
                f"{int(g['thread_inst_executed']):>14} {int(flops(g)):>12} {g['branch_efficiency']:>7.2f}% "
                f"{100 * g['executed_fraction']:>7.2f}%"
            )
    if per_cta:
        for d in dicts:
            ctas = d.get("ctas")
            if not ctas:
                continue
            lines.append("")
            lines.append(f"per CTA, launch {d['launch']} ({demangle(d['kernel'])}, grid {_dims(d['grid'])}): "
                         f"CTAs with equal counts grouped, by linear id x + y*gx + z*gx*gy")
            lines.append(f"  {'CTAs':<24} {'count':>6} {'inst_executed':>14} {'thread_inst':>12} {'flops':>10} {'branch':>8} {'divergent':>9} {'br.eff':>8}")
            groups_c: dict[tuple, list[int]] = {}
            cols = registry.columns()
            for i, c in enumerate(ctas):
                groups_c.setdefault(tuple(c[k] for k in cols), []).append(i)
            for vals, ids in sorted(groups_c.items(), key=lambda kv: kv[1][0]):
                c = dict(zip(cols, vals))
                lines.append(f"  {_short(_ranges(ids), 24):<24} {len(ids):>6} {int(c['inst_executed']):>14} "
                             f"{int(c['thread_inst_executed']):>12} {int(flops(c)):>10} {int(c['branch']):>8} "
                             f"{int(c['divergent_branch']):>9} {c['branch_efficiency']:>7.2f}%")
    for s in profile.static:
        lines.append(f"kernel {s.kernel} ({s.source.display}): no launch given, counted statically: "
                     f"{s.static_instructions} instructions")
    for r in profile.records:
        if r.error is not None and r.reused_from is None:
            lines.append(f"launch {r.index} ({r.kernel or '?'} in {r.source.display}): error: {r.error}")
    notes = sorted({n for r in profile.ok for n in r.result.notes if "from the cache" not in n})
    for n in notes:
        lines.append(f"note: {n}")
    lines.append(summary_line(profile))
    return "\n".join(lines) + "\n"


# -- per source line (--by line) ---------------------------------------------------------------

LINE_COLUMNS = ("instructions", "inst_executed", "thread_inst_executed", "predicated_off", "flop_count_sp",
                "flop_count_dp", "flop_count_hp", "divergent_branch", "requests", "sectors", "sectors_per_request",
                "bank_conflicts")


def profile_line_dicts(profile) -> list[dict]:
    """Every launch's counts per CUDA source line (per PTX instruction without line info)."""
    from .source_view import result_lines

    out = []
    for rec in profile.records:
        if rec.result is None or rec.result.program is None:
            continue
        for d in result_lines(rec.result, ptx=rec.source.ptx):
            out.append({"record": "line", "launch": rec.index, "kernel": rec.kernel or rec.result.kernel, **d})
    return out


def hot_instructions(rec, top: int = 40) -> list[dict]:
    """The ``top`` PTX instructions of a launch by thread executions (the source view of a
    kernel without line information)."""
    from .source_view import instruction_rows, row_dict, source_files_of_text

    r = rec.result
    rows = instruction_rows(r.program, r.counters, source_files_of_text(rec.source.ptx or ""),
                            estimate=getattr(r, "time_estimate", None))
    return [row_dict(x) for x in sorted(rows, key=lambda x: (-x.est_cycles, -x.thread_inst_executed))[:top]]


def profile_lines(profile, fmt: str) -> str:
    """``--by line`` in the chosen format."""
    dicts = profile_line_dicts(profile)
    if fmt == "json":
        return json.dumps(dicts, indent=2, default=_json_default) + "\n"
    if fmt == "csv":
        s = io.StringIO()
        w = csv.writer(s, lineterminator="\n")
        w.writerow(["launch", "kernel", "file", "line", "ptx", *LINE_COLUMNS, "stall", "source"])
        for d in dicts:
            w.writerow([d["launch"], d["kernel"], d.get("file") or "", d.get("line") or "", d.get("ptx", ""),
                        *(_num(d.get(k, 0)) for k in LINE_COLUMNS), d.get("stall", ""), d.get("source") or ""])
        return s.getvalue()
    lines: list[str] = []
    launch = None
    for d in dicts:
        if d["launch"] != launch:
            launch = d["launch"]
            lines.append(f"launch {launch}: {demangle(d['kernel'])}")
            total_est = sum(x.get("est_cycles", 0) for x in dicts if x["launch"] == launch) or 1.0
            lines.append(f"  {'where':<28} {'inst_exec':>10} {'thread_inst':>12} {'pred.off':>9} {'flops':>10} "
                         f"{'diverg.':>7} {'sect/req':>8} {'bank.c':>6} {'est.%':>6} {'est. stall':<18} source")
        per_line = "index" not in d  # grouped by source line, else one PTX instruction
        where = f"{_short(os.path.basename(d['file']), 22)}:{d['line']}" if per_line else f"ptx {d['index']}"
        fl = d.get("flop_count_sp", 0) + d.get("flop_count_dp", 0) + d.get("flop_count_hp", 0)
        spr = f"{d['sectors_per_request']:.2f}" if d.get("sectors_per_request") else "-"
        text = d.get("source") if per_line else d.get("ptx")
        share = f"{100 * d['est_cycles'] / total_est:.1f}" if "est_cycles" in d else "-"  # of the estimated time
        lines.append(f"  {where:<28} {int(d['inst_executed']):>10} {int(d['thread_inst_executed']):>12} "
                     f"{int(d['predicated_off']):>9} {int(fl):>10} {int(d['divergent_branch']):>7} {spr:>8} "
                     f"{int(d.get('bank_conflicts', 0)):>6} {share:>6} {d.get('stall', ''):<18} {(text or '').strip()[:80]}")
    return "\n".join(lines) + "\n"
