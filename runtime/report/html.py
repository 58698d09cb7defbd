"""``hypa report``: one self-contained HTML page (inline CSS, SVG and PNG as data
URIs; nothing is fetched) with

* the launches: grid, block, instructions, FLOPs, branch efficiency, executed
  fraction, which launches reused an identical one's result;
* per kernel: the dynamic instruction mix by category (bars drawn in CSS) and
  the top opcodes;
* plots drawn with matplotlib, when it is installed (the page says so when it
  is not): instruction mix, FLOPs, branch efficiency and executed fraction per
  kernel, top opcodes;
* the CFG of one kernel drawn by Graphviz's ``dot`` (``passes/cfg_dot.py``),
  blocks shaded by how many threads executed them and divergent branches
  outlined in red; without ``dot`` a text CFG with the same counts.

The page is built from the JSON objects ``hypa profile --format json`` writes
(one per launch), so it can be made from a live run or from such a file.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from ..emulator.demangle import demangle, short_names
from ..metrics import registry
from .tables import by_kernel, flops

#: one colour per instruction category (the order of ptxdialect.isa.CATEGORIES)
CATEGORY_COLORS = {
    "int": "#4e79a7", "fp16": "#f28e2b", "fp32": "#e15759", "fp64": "#76b7b2", "sfu": "#59a14f",
    "convert": "#edc948", "move": "#b07aa1", "mem": "#ff9da7", "atomic": "#9c755f", "control": "#bab0ac",
    "sync": "#86bcb6", "warp": "#d37295", "matrix": "#fabfd2", "texture": "#8cd17d", "misc": "#79706e",
}

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px 32px; color: #222; background: #fff; }
h1 { font-size: 26px; margin-bottom: 4px; } h2 { font-size: 20px; margin-top: 32px; border-bottom: 2px solid #4e79a7; padding-bottom: 4px; }
.sub { color: #666; margin-top: 0; }
table { display: block; max-width: 100%; overflow-x: auto; }
details summary { cursor: pointer; } span.full { display: block; white-space: normal; word-break: break-all; color: #555; font-size: 11px; max-width: 420px; }
table.src { font-size: 12px; } table.src th { white-space: normal; } table.src td { padding: 3px 6px; }
table.src td.code { font-family: ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-word; max-width: 380px; min-width: 220px; text-align: left; }
table.src td.code summary { white-space: pre-wrap; }
table.ptx { font-size: 11px; margin: 2px 0 6px 0; } table.ptx td { padding: 2px 6px; } table.ptx td.k { white-space: pre-wrap; word-break: break-all; max-width: 560px; }
tr.sub { display: none; } tr:has(details[open]) + tr.sub { display: table-row; } tr.sub > td { background: #f6f8fa; }
td.heat { background: linear-gradient(90deg, #f28e2b55 var(--w), transparent var(--w)); }
td.name { white-space: normal; word-break: break-word; max-width: 320px; }
th[title=sort] { cursor: pointer; } th[title=sort]:hover { background: #dde6ef; }
.sol { display: inline-block; vertical-align: top; width: 640px; margin: 0 16px 12px 0; }
table.solt td.k { white-space: normal; } table.solt td.heat { min-width: 200px; }
p.advice { background: #eef5ea; border-left: 4px solid #59a14f; padding: 6px 10px; margin: 6px 0; }
.roof { display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap; } .roof .legend { max-width: 520px; font-size: 12px; }
.roof .legend p { margin: 4px 0; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { padding: 4px 8px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
td.wrap { white-space: normal; max-width: 260px; font-size: 12px; }
th { background: #f0f4f8; } td.k, th.k { text-align: left; font-family: monospace; }
tr.reused td { color: #888; }
.notice { background: #fff4d6; border-left: 4px solid #edc948; padding: 8px 12px; margin: 12px 0; }
.error { background: #fde2e2; border-left: 4px solid #e15759; padding: 8px 12px; margin: 12px 0; font-family: monospace; }
.bar { display: flex; width: 220px; height: 14px; border: 1px solid #999; }
.bar span { display: block; height: 100%; }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
.plot { max-width: 100%; margin: 8px 0; border: 1px solid #eee; }
.cfg { overflow: auto; border: 1px solid #ddd; padding: 8px; background: #fafafa; }
.cfg svg { max-width: 100%; height: auto; }
pre { background: #f6f8fa; padding: 8px; font-size: 12px; overflow: auto; }
.good { color: #2a7f2a; } .warn { color: #b8730b; } .bad { color: #b22; }
"""


@dataclass
class Page:
    html: str
    notices: list[str] = field(default_factory=list)
    plot_files: list[str] = field(default_factory=list)


def _e(s) -> str:
    return html.escape(str(s))


def _dims(v) -> str:
    return "x".join(map(str, v))


def _pct(x: float) -> str:
    return f"{x:.2f}%"


def _mix(d: dict) -> dict[str, int]:
    """Thread-level instruction counts by category of one launch (or kernel)."""
    cats = (d.get("instruction_mix") or {}).get("categories") or {}
    return {k: int(v["thread"] if isinstance(v, dict) else v) for k, v in cats.items()}


def _opcodes(d: dict) -> dict[str, int]:
    ops = (d.get("instruction_mix") or {}).get("opcodes") or {}
    return {k: int(v["thread"] if isinstance(v, dict) else v) for k, v in ops.items()}


def _kernel_groups(dicts: list[dict]) -> list[dict]:
    groups = by_kernel(dicts)
    for g in groups:
        mix: dict[str, int] = {}
        ops: dict[str, int] = {}
        for d in dicts:
            if (d.get("file"), d.get("member"), d["kernel"]) == (g["file"], g["member"], g["kernel"]):
                for k, v in _mix(d).items():
                    mix[k] = mix.get(k, 0) + v
                for k, v in _opcodes(d).items():
                    ops[k] = ops.get(k, 0) + v
        g["mix"] = mix
        g["opcodes"] = ops
    return groups


def _bar(mix: dict[str, int]) -> str:
    total = sum(mix.values())
    if not total:
        return '<div class="bar"></div>'
    spans = "".join(
        f'<span style="width:{100 * v / total:.3f}%;background:{CATEGORY_COLORS.get(k, "#999")}" title="{_e(k)}: {v} ({100 * v / total:.1f}%)"></span>'
        for k, v in sorted(mix.items(), key=lambda kv: -kv[1]) if v
    )
    return f'<div class="bar">{spans}</div>'


def _legend(cats) -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{CATEGORY_COLORS.get(c, "#999")}"></i>{_e(c)}</span>' for c in cats) + "</div>"


# -- plots -------------------------------------------------------------------------------------


def _plots(groups: list[dict], plots_dir: str | None) -> tuple[list[tuple[str, str]], list[str], str | None]:
    """[(title, data URI)], files written, and a notice when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], [], "matplotlib is not installed, so the page has no plots (pip install 'hypa[report]')"
    if not groups:
        return [], [], None
    short = short_names([demangle(g["kernel"]).split("(")[0] for g in groups], 40)
    names = [short[demangle(g["kernel"]).split("(")[0]] for g in groups]
    n = len(groups)
    height = max(2.5, 0.32 * n + 1.2)
    out: list[tuple[str, str]] = []
    files: list[str] = []

    def emit(fig, title: str, fname: str) -> None:
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        data = buf.getvalue()
        out.append((title, "data:image/png;base64," + base64.b64encode(data).decode()))
        if plots_dir:
            os.makedirs(plots_dir, exist_ok=True)
            p = os.path.join(plots_dir, fname)
            with open(p, "wb") as f:
                f.write(data)
            files.append(p)

    # instruction mix, normalized
    cats = [c for c in CATEGORY_COLORS if any(g["mix"].get(c) for g in groups)]
    fig, ax = plt.subplots(figsize=(10, height))
    left = [0.0] * n
    for c in cats:
        vals = [100 * g["mix"].get(c, 0) / (sum(g["mix"].values()) or 1) for g in groups]
        ax.barh(range(n), vals, left=left, color=CATEGORY_COLORS[c], label=c)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(n), names)
    ax.invert_yaxis()
    ax.set_xlabel("% of thread instructions executed")
    ax.set_xlim(0, 100)
    if cats:  # (a profile without instruction mixes has nothing to put in a legend)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(cats), 8), fontsize=8, frameon=False)
    emit(fig, "Instruction mix per kernel", "instruction_mix.png")

    # FLOPs
    if any(flops(g) + g["flop_count_special"] for g in groups):
        fig, ax = plt.subplots(figsize=(10, height))
        _flops_plot(ax, groups, names, n)
        emit(fig, "FLOPs per kernel", "flops.png")

    # branch efficiency and executed fraction
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, height), sharey=True)
    a1.barh(range(n), [g["branch_efficiency"] for g in groups], color="#4e79a7")
    a1.set_xlim(0, 100)
    a1.set_xlabel("branch efficiency (%)")
    a2.barh(range(n), [100 * g["executed_fraction"] for g in groups], color="#59a14f")
    a2.set_xlim(0, 100)
    a2.set_xlabel("executed fraction (% of thread instructions emulated)")
    a1.set_yticks(range(n), names)
    a1.invert_yaxis()
    emit(fig, "Branch efficiency and executed fraction per kernel", "branches.png")

    # top opcodes over everything
    tot: dict[str, int] = {}
    for g in groups:
        for k, v in g["opcodes"].items():
            tot[k] = tot.get(k, 0) + v
    top = sorted(tot.items(), key=lambda kv: -kv[1])[:20]
    if top:
        fig, ax = plt.subplots(figsize=(10, max(2.5, 0.3 * len(top) + 1)))
        ax.barh(range(len(top)), [v for _, v in top], color="#b07aa1")
        ax.set_yticks(range(len(top)), [k for k, _ in top], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("thread instructions executed")
        emit(fig, "Top opcodes (all kernels)", "opcodes.png")
    return out, files, None


def _flops_plot(ax, groups, names, n) -> None:
    left = [0.0] * n
    for key, label, color in (("flop_count_sp", "fp32", "#e15759"), ("flop_count_dp", "fp64", "#76b7b2"),
                              ("flop_count_hp", "fp16", "#f28e2b"), ("flop_count_special", "special", "#59a14f")):
        vals = [float(g[key]) for g in groups]
        ax.barh(range(n), vals, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(n), names)
    ax.invert_yaxis()
    ax.set_xlabel("floating-point operations (all launches)")
    # above the axes, like the instruction mix's: inside, it covered the longest bars
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf") and v >= 0


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _counts_map(m) -> bool:
    """``{name: count}`` or ``{name: {"warp": count, "thread": count}}``."""
    return isinstance(m, dict) and all(isinstance(k, str) and (_num(v) or (isinstance(v, dict) and _num(v.get("thread"))
                                                                           and _num(v.get("warp", 0))))
                                       for k, v in m.items())


def profile_problem(data) -> str | None:
    """Why ``data`` (parsed JSON) is not a profile the page can show, or None.  Checked before
    anything is drawn, so a damaged or hand-edited file is a message, not a traceback."""
    if not isinstance(data, list):
        return f"the top level is a {type(data).__name__}, not a list"
    for i, d in enumerate(data):
        if not isinstance(d, dict):
            return f"entry {i} is a {type(d).__name__}, not an object"
        if not isinstance(d.get("kernel"), str):
            return f"entry {i} has no valid 'kernel'"
        kind = d.get("record", "launch")  # files before the field: launches
        if kind != "launch":
            return (f"entry {i} is a per-{kind} row (`--by {kind}`); this needs the per-launch JSON "
                    f"(`--format json`, `--by launch`, the default)" if kind in ("kernel", "line")
                    else f"entry {i}: 'record' is {kind!r}, not 'launch'")
        if "error" in d:
            if not isinstance(d["error"], str):
                return f"entry {i}: 'error' is not text"
            continue  # a failed launch (hypa run): listed, not drawn
        for k in registry.columns():
            if not _num(d.get(k)):
                return f"entry {i} has no valid '{k}'"
        for k in ("duration_ms",):
            if k in d and not _num(d[k]):
                return f"entry {i}: '{k}' is not a number"
        for k in ("file", "member"):
            if d.get(k) is not None and not isinstance(d[k], str):
                return f"entry {i}: '{k}' is not text"
        for k in ("launch", "reused_from"):
            if d.get(k) is not None and not _int(d[k]):
                return f"entry {i}: '{k}' is not a launch number"
        for k in ("grid", "block"):
            v = d.get(k)
            if not isinstance(v, list) or len(v) != 3 or not all(_int(x) and x > 0 for x in v):
                return f"entry {i}: '{k}' must be three positive integers"
        blocks = d.get("blocks")
        if not isinstance(blocks, list):
            return f"entry {i} has no valid 'blocks'"
        for j, b in enumerate(blocks):
            if not isinstance(b, dict) or not all(_int(b.get(k)) for k in ("index", "warp_executions", "thread_executions",
                                                                             "divergent_branches")) \
                    or not _int(b.get("branch_taken_threads", 0)) or not isinstance(b.get("function", ""), str):
                return f"entry {i}: block {j} lacks its counts"
        mix = d.get("instruction_mix")
        if mix is not None and not (isinstance(mix, dict) and _counts_map(mix.get("opcodes", {}))
                                    and _counts_map(mix.get("categories", {}))):
            return f"entry {i}: 'instruction_mix' is not counts by opcode and category"
        est = d.get("time_estimate")
        if est is not None and not (isinstance(est, dict) and _num(est.get("time_us")) and isinstance(est.get("bound"), str)
                                    and isinstance(est.get("arch"), str) and _num(est.get("waves", 0))
                                    and isinstance(est.get("occupancy", {}), dict)
                                    and _num(est.get("occupancy", {}).get("occupancy", 0))):
            return f"entry {i}: 'time_estimate' lacks time_us, bound, arch, waves or occupancy"
        if est is not None and not (_num(est.get("cycles", 0)) and _num(est.get("bank_conflict_cycles", 0))
                                    and isinstance(est.get("shares", {}), dict)
                                    and all(_num(v) for v in est.get("shares", {}).values())):
            return f"entry {i}: 'time_estimate' has damaged cycles, shares or bank_conflict_cycles"
        mem = d.get("memory")
        if mem is not None and not (isinstance(mem, dict) and all(_num(v) for v in mem.values())):
            return f"entry {i}: 'memory' is not numbers by name"
        w = d.get("warp_inst_executed")
        if w is not None and not (isinstance(w, list) and all(_int(x) for x in w)):
            return f"entry {i}: 'warp_inst_executed' is not a list of counts"
        for k, need in (("source_lines", ("file", "line")), ("hot_instructions", ("index", "ptx"))):
            rows = d.get(k)
            if rows is None:
                continue
            if not isinstance(rows, list):
                return f"entry {i}: '{k}' is not a list"
            for r in rows:
                if not isinstance(r, dict) or not all(k2 in r for k2 in need) or \
                        not all(_num(v) for k2, v in r.items() if k2 not in ("file", "ptx", "source", "stall", "timing_class",
                                                                             "call_site", "block", "space", "stall_cycles",
                                                                             "ptx_rows")
                                and not (k2 == "line" and v is None and r.get("file") is None)):
                    return f"entry {i}: a '{k}' row is damaged"
                # (file and line None: an instruction of a function without line information)
                if not ((r.get("file", "") is None or isinstance(r.get("file", ""), str)) and isinstance(r.get("ptx", ""), str)):
                    return f"entry {i}: a '{k}' row is damaged"
                sc, pr = r.get("stall_cycles", {}), r.get("ptx_rows", [])
                if not (isinstance(sc, dict) and all(_num(v) for v in sc.values()) and isinstance(pr, list)
                        and all(isinstance(x, dict) and _num(x.get("index")) for x in pr)):
                    return f"entry {i}: a '{k}' row's stall_cycles or ptx_rows are damaged"
    return None


def _balance_cell(slots) -> str:
    """Max over mean warp-instructions of a CTA's warp slots, with the per-slot counts on hover."""
    if not slots:
        return "<td></td>"
    mean = sum(slots) / len(slots)
    r = max(slots) / mean if mean else 1.0
    cls = "good" if r < 1.2 else ("warn" if r < 2.0 else "bad")
    return f"<td class={cls} title='per warp slot: {_e(', '.join(f'{v:,}' for v in slots))}'>{r:.2f}</td>"


def _eff_class(eff: float) -> str:
    """Branch efficiency colour: a few divergent branches in many are normal."""
    return "good" if eff >= 95.0 else ("warn" if eff >= 80.0 else "bad")


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "~"


# -- the CFG -------------------------------------------------------------------------------------


def _pick_cfg_kernel(dicts: list[dict], want: str | None) -> list[dict]:
    """The launches whose counts go on the CFG: of kernel ``want``, or of the kernel
    with the most divergent branches (then the most branches)."""
    if want == "none" or not dicts:
        return []
    if want is not None:
        from .batch import kernel_matches

        hits = [d for d in dicts if kernel_matches(d["kernel"], want)]
        if not hits:
            raise ValueError(f"--cfg: no launched kernel named '{want}'")
    else:
        tot: dict[tuple, list[int]] = {}
        for d in dicts:
            t = tot.setdefault((d.get("file"), d.get("member"), d["kernel"]), [0, 0, 0])
            t[0] += d["divergent_branch"]
            t[1] += d["branch"]
            t[2] += d["thread_inst_executed"]
        best = max(tot, key=lambda k: tuple(tot[k]))
        hits = [d for d in dicts if (d.get("file"), d.get("member"), d["kernel"]) == best]
    first = hits[0]
    return [d for d in hits if (d.get("file"), d.get("member"), d["kernel"]) ==
            (first.get("file"), first.get("member"), first["kernel"])]


def _module_for(d: dict, input_options):
    from hypa.ptxdialect import parse_ptx

    from .inputs import load_sources

    path = d.get("file")
    if not path or not os.path.exists(path):
        raise FileNotFoundError(path or "(no file recorded)")
    if not os.path.isfile(path):  # a device or FIFO named by a damaged profile: never read
        raise FileNotFoundError(f"{path} is not a regular file")
    for s in load_sources(path, input_options):
        if s.member == d.get("member") or d.get("member") is None:
            return parse_ptx(s.ptx, s.label)
    raise FileNotFoundError(f"{path}[{d.get('member')}]")


def _block_totals(launches: list[dict], kernel: str) -> dict[int, dict[str, int]]:
    tot: dict[int, dict[str, int]] = {}
    for d in launches:
        for b in d.get("blocks", []):
            if b.get("function") != kernel:
                continue
            t = tot.setdefault(int(b["index"]), {"warps": 0, "threads": 0, "divergent": 0, "taken": 0})
            t["warps"] += int(b["warp_executions"])
            t["threads"] += int(b["thread_executions"])
            t["divergent"] += int(b["divergent_branches"])
            t["taken"] += int(b.get("branch_taken_threads", 0))
    return tot


def attach_exec_counts(func, counts: dict[int, dict[str, int]]) -> None:
    """Put per-block execution counts on the terminators as ``hypa.exec`` (what
    ``print-cfg-dot`` shades blocks by)."""
    from xdsl.dialects.builtin import DictionaryAttr, IntAttr

    for i, block in enumerate(func.body.blocks):
        c = counts.get(i)
        term = block.last_op
        if c is None or term is None:
            continue
        term.attributes["hypa.exec"] = DictionaryAttr({k: IntAttr(v) for k, v in c.items()})


def _text_cfg(func, counts: dict[int, dict[str, int]]) -> str:
    from hypa.passes.cfg import CFG

    from hypa.ptxdialect.dialect import InstructionOp

    cfg = CFG.of(func)
    lines = [f"{'block':<24} {'instr':>6} {'warps':>10} {'threads':>12} {'divergent':>9}  successors"]
    for i, b in enumerate(cfg.blocks):
        c = counts.get(i, {})
        n = sum(1 for op in b.ops if isinstance(op, InstructionOp))
        succ = ", ".join(cfg.name(s) for s in cfg.succs[i]) or "(exit)"
        mark = "  <- divergent" if c.get("divergent") else ""
        lines.append(f"{cfg.name(i):<24} {n:>6} {c.get('warps', 0):>10} {c.get('threads', 0):>12} "
                     f"{c.get('divergent', 0):>9}  {succ}{mark}")
    return "\n".join(lines)


def dot_svg(dot_text: str) -> str | None:
    """Graphviz's SVG for ``dot_text``, or ``None`` when ``dot`` is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    p = subprocess.run([dot, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"dot failed: {p.stderr.strip()[:500]}")
    svg = p.stdout
    i = svg.find("<svg")
    return svg[i:] if i >= 0 else svg


def _cfg_section(dicts: list[dict], want: str | None, input_options, notices: list[str]) -> str:
    try:
        launches = _pick_cfg_kernel(dicts, want)
    except ValueError as e:
        notices.append(str(e))
        return f'<div class="error">{_e(e)}</div>'
    if not launches:
        return ""
    kernel = launches[0]["kernel"]
    counts = _block_totals(launches, kernel)
    head = (f"<h2>CFG of {_e(demangle(kernel))}</h2><p class=sub>Counts summed over {len(launches)} launch"
            f"{'es' if len(launches) != 1 else ''}. Blocks are shaded by the threads that executed them (darker: more); "
            f"blocks ending in a divergent branch are outlined in red and say how many times it diverged.</p>")
    try:
        module = _module_for(launches[0], input_options)
    except Exception as e:  # noqa: BLE001 - whatever stops re-reading the PTX, the page shows the counts
        rows = "\n".join(f"{i:>4} warps {c['warps']:>10} threads {c['threads']:>12} divergent {c['divergent']:>6}"
                         for i, c in sorted(counts.items()))
        notices.append(f"the CFG of {kernel} needs its PTX ({e}); showing block counts only")
        return head + f'<div class="notice">The PTX is not at hand ({_e(e)}): block counts only.</div><pre>{_e(rows)}</pre>'
    from hypa.passes.cfg_dot import function_dot
    from hypa.ptxdialect.dialect import FuncOp

    func = next((op for op in module.ops if isinstance(op, FuncOp) and op.func_name == kernel), None)
    if func is None:  # the file changed since the profile was made
        where = launches[0].get("file") or "its PTX"
        notices.append(f"the CFG of {kernel} needs its PTX, and {where} no longer defines it; showing block counts only")
        rows = "\n".join(f"{i:>4} warps {c['warps']:>10} threads {c['threads']:>12} divergent {c['divergent']:>6}"
                         for i, c in sorted(counts.items()))
        return head + (f'<div class="notice">{_e(where)} no longer defines {_e(kernel)}: block counts only.</div>'
                       f'<pre>{_e(rows)}</pre>')
    attach_exec_counts(func, counts)
    svg = None
    try:
        svg = dot_svg(function_dot(func))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        notices.append(str(e))
    if svg is None:
        msg = "Graphviz's dot is not installed (apt-get install graphviz), so the CFG is shown as text"
        if not any("Graphviz" in n for n in notices):
            notices.append(msg)
        return head + f'<div class="notice">{_e(msg)}.</div><pre>{_e(_text_cfg(func, counts))}</pre>'
    return head + f'<div class="cfg">{svg}</div>'


# -- the page --------------------------------------------------------------------------------------


def _memory_time_section(dicts: list[dict], short: dict[str, str]) -> str:
    """Memory (--memory-metrics) and the timing model (--estimate-time) per launch: the
    kernel's estimated time apart from the launch overhead, the speed-of-light breakdown of
    the estimate with advice, and a roofline with a point per memory level."""
    from . import speed_of_light as sol
    from .tables import memory_lines, memory_summary, sectors_per_request

    rows = [d for d in dicts if d.get("reused_from") is None and (d.get("memory") or d.get("time_estimate"))]
    if not rows:
        return ("<h2>Memory and time</h2><p class=sub>Run with <code>--memory-metrics</code> (sectors, bank "
                "conflicts) and <code>--estimate-time</code> (time, bound, occupancy, roofline) to see them here.</p>")
    mem = any(d.get("memory") for d in rows)
    est = any(d.get("time_estimate") for d in rows)
    out = ["<h2>Memory and time</h2>"]
    if est:
        out.append("<p class=sub><i>kernel &micro;s</i> is the estimated kernel duration; the launch overhead of the "
                   "arch file (<i>launch &micro;s</i>) is shown apart and left out of GFLOP/s and of the shares.</p>")
    head = "<table class=sortable><thead><tr><th>#</th><th class=k>kernel</th>"
    if mem:
        head += ("<th>global requests</th><th>sectors</th><th>sectors/req</th><th>128-B lines</th>"
                 "<th>bank conflicts</th>")
    if est:
        head += ("<th>kernel &micro;s</th><th>launch &micro;s</th><th class=k>bound</th><th>occupancy %</th>"
                 "<th>waves</th><th>GFLOP/s</th>")
    out.append(head + "</tr></thead><tbody>")
    points = []
    sol_parts = []
    for d in rows:
        sec, req, bank = memory_summary(d)
        e = d.get("time_estimate")
        cells = (f"<td>{_e(d.get('launch', ''))}</td><td class='k name' title='{_e(demangle(d['kernel']))}'>"
                 f"{_e(short[demangle(d['kernel'])])}</td>")
        if mem:
            cells += (f"<td>{req:,}</td><td>{sec:,}</td><td>{sectors_per_request(sec, req):.2f}</td>" if req
                      else "<td>0</td><td>0</td><td></td>")
            cells += f"<td>{memory_lines(d):,}</td>"
            cells += f"<td class={'bad' if bank else ''}>{bank:,}</td>"
        if est:
            if e:
                occ = e.get("occupancy", {}).get("occupancy", 0.0)
                kus = _kernel_us(e)
                gf = flops(d) / (kus * 1e3) if kus else 0.0
                cells += (f"<td>{kus:.3f}</td><td>{e.get('launch_overhead_us', 0.0):.2f}</td>"
                          f"<td class=k>{_e(e['bound'])}</td><td>{100 * occ:.0f}%</td>"
                          f"<td>{e.get('waves', 0):.2f}</td><td>{gf:,.1f}</td>")
                if gf > 0:
                    points.append((d, e, gf))
                sol_parts.append(_sol_block(d, e, short))
            else:
                cells += "<td></td>" * 6
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    if sol_parts:
        out.append("<h3>Speed of light: what the estimated time is made of</h3><p class=sub>The timing model's "
                   "estimate split by the bound that decided each part (they add up to the kernel time); the "
                   "bank conflicts' cost is the estimate minus the same estimate with conflict-free shared "
                   "accesses.</p>")
        out.extend(sol_parts[:_SOL_LAUNCHES])
        if len(sol_parts) > _SOL_LAUNCHES:
            out.append("<details><summary>" + f"{len(sol_parts) - _SOL_LAUNCHES} more launches</summary>"
                       + "".join(sol_parts[_SOL_LAUNCHES:]) + "</details>")
    if points:
        out.append(_roofline_svg(points[:_ROOFLINE_LAUNCHES]))
    elif est and not mem:
        out.append("<p class=sub>The roofline needs FLOPs and an estimated time.</p>")
    return "".join(out)


_SOL_LAUNCHES = 6  # launches whose breakdown is shown open
_ROOFLINE_LAUNCHES = 8  # launches on the roofline


def _kernel_us(e: dict) -> float:
    """The kernel's own estimated time (files before ``kernel_us``: time minus overhead)."""
    if _num(e.get("kernel_us")):
        return float(e["kernel_us"])
    return max(0.0, float(e["time_us"]) - float(e.get("launch_overhead_us", 0.0) or 0.0))


def _sol_block(d: dict, e: dict, short: dict[str, str]) -> str:
    from . import speed_of_light as sol

    rows = sol.breakdown(e)
    top_stall = _top_stall(d)
    conflict = sol.bank_conflict_percent(e)
    bars = "".join(
        f"<tr><td class=k>{_e(name)}</td><td class=heat style='--w:{min(100.0, pct):.1f}%'>{pct:.1f}%</td></tr>"
        for _k, name, pct in rows)
    if conflict > 0:
        bars += (f"<tr><td class=k>of which shared bank conflicts</td><td class='heat bad' "
                 f"style='--w:{min(100.0, conflict):.1f}%'>{conflict:.1f}%</td></tr>")
    advice = "".join(f"<p class=advice>{_e(t)}</p>" for t in sol.advice(e, top_stall))
    return (f"<div class=sol><b>#{_e(d.get('launch', ''))} {_e(short[demangle(d['kernel'])])}</b>: "
            f"{_kernel_us(e):.3f} &micro;s kernel (+ {e.get('launch_overhead_us', 0.0):.2f} &micro;s launch)"
            f"<table class=solt><thead><tr><th class=k>limiter</th><th>share of the time</th></tr></thead>"
            f"<tbody>{bars}</tbody></table>{advice}</div>")


def _top_stall(d: dict) -> str | None:
    """The stall reason with the most estimated cycles over a launch's source lines."""
    tot: dict[str, float] = {}
    for ln in d.get("source_lines") or d.get("hot_instructions") or []:
        for k, v in (ln.get("stall_cycles") or {}).items():
            if _num(v):
                tot[k] = tot.get(k, 0.0) + v
        if not ln.get("stall_cycles") and ln.get("stall") and _num(ln.get("est_cycles")):
            tot[ln["stall"]] = tot.get(ln["stall"], 0.0) + ln["est_cycles"]
    return max(tot, key=lambda k: tot[k]) if tot else None


#: the memory levels of the roofline: (name, colour)
_LEVELS = (("L1", "#59a14f"), ("L2", "#4e79a7"), ("DRAM", "#e15759"))


def _level_bytes(d: dict, e: dict) -> dict[str, tuple[float, str]]:
    """Bytes per memory level of a launch, and where each figure comes from."""
    out: dict[str, tuple[float, str]] = {}
    m = d.get("memory") or {}
    if m:
        g = sum(v for k, v in m.items() if k.startswith("global_") and k.endswith("_sectors"))
        s = sum(v for k, v in m.items() if k.startswith("shared_") and k.endswith("_wavefronts"))
        if g or s:
            out["L1"] = (32.0 * g + 128.0 * s, "global sectors x 32 + shared wavefronts x 128 (what the LSU moves)")
    mem = e.get("memory") or {}
    if _num(mem.get("l2_bytes")) and mem["l2_bytes"] > 0:
        out["L2"] = (float(mem["l2_bytes"]), "L1-L2 traffic of the cache model")
    if _num(mem.get("dram_bytes")) and mem["dram_bytes"] > 0:
        out["DRAM"] = (float(mem["dram_bytes"]), "DRAM traffic of the cache model")
    elif _num(mem.get("footprint_bytes")) and mem["footprint_bytes"] > 0:
        out["DRAM"] = (float(mem["footprint_bytes"]), "none in the estimate (the data stay in L2 across repeated "
                       "launches); the point is the footprint, what a cold L2 reads once")
    return out


def _roofline_svg(points: list[tuple[dict, dict, float]]) -> str:
    """Log-log roofline: a point per launch and memory level (FLOPs per byte of that level
    against GFLOP/s of the kernel time), under the FP32 peak and each level's bandwidth roof
    from the estimate's arch file."""
    import math

    from ..models.timing import TimingError, load_arch

    arch = points[0][1]["arch"]
    try:
        a = load_arch(arch)
    except TimingError:  # a profile made with an architecture file this machine lacks
        return f"<p>No roofline: the architecture {html.escape(repr(arch))} is not known here.</p>"
    peak = a.sm_count * a.units.get("fp32", 128) * 2 * a.clock_mhz * 1e6 / 1e9  # GFLOP/s
    clk = a.clock_mhz * 1e6 / 1e9  # G clocks per second
    roofs = {"L1": a.memory.get("lsu_bytes_per_clk", 0.0) * a.sm_count * clk,
             "L2": a.memory.get("l2_bytes_per_clk", 0.0) * clk, "DRAM": a.memory.get("dram_gbs", 0.0)}
    roofs = {k: v for k, v in roofs.items() if v > 0}
    pts = []  # (level, AI, GFLOP/s, launch, hollow, source)
    for d, e, gf in points:
        fl = flops(d)
        for lvl, (nbytes, src) in _level_bytes(d, e).items():
            if nbytes > 0 and fl > 0:
                pts.append((lvl, fl / nbytes, gf, str(d.get("launch", "")), src.startswith("none"), src))
    if not pts:
        return "<p class=sub>No roofline: no bytes per memory level (run with <code>--memory-metrics</code>).</p>"
    xs = [p[1] for p in pts] + [peak / bw for bw in roofs.values()]
    ys = [p[2] for p in pts] + [peak]
    x0, x1 = 10 ** math.floor(math.log10(min(xs) / 2)), 10 ** math.ceil(math.log10(max(xs) * 2))
    y0, y1 = 10 ** math.floor(math.log10(min(ys) / 2)), 10 ** math.ceil(math.log10(max(ys) * 2))
    W, H, L, B = 760, 400, 70, 44

    def X(v):
        return L + (W - L - 20) * (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def Y(v):
        return H - B - (H - B - 20) * (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))

    colour = dict(_LEVELS)
    parts = [f"<h3>Roofline ({_e(a.description)})</h3><div class=roof><svg class=roofline width={W} height={H} "
             f"xmlns='http://www.w3.org/2000/svg' font-size=11>",
             f"<rect x={L} y=20 width={W - L - 20} height={H - B - 20} fill='#fafafa' stroke='#ccc' />"]
    for dec in range(int(math.log10(x0)), int(math.log10(x1)) + 1):
        parts.append(f"<text x={X(10 ** dec):.1f} y={H - B + 14} text-anchor=middle>{10 ** dec:g}</text>")
    for dec in range(int(math.log10(y0)), int(math.log10(y1)) + 1):
        parts.append(f"<text x={L - 6} y={Y(10 ** dec) + 4:.1f} text-anchor=end>{10 ** dec:g}</text>")
    parts.append(f"<text x={(L + W) / 2:.0f} y={H - 8} text-anchor=middle>arithmetic intensity (FLOPs per byte "
                 f"moved at that memory level)</text><text x=14 y={H / 2:.0f} transform='rotate(-90 14 {H / 2:.0f})' "
                 f"text-anchor=middle>GFLOP/s (kernel time, launch overhead excluded)</text>")
    for lvl, bw in roofs.items():
        knee = peak / bw
        xa, xb = max(x0, y0 / bw), min(knee, x1)
        if xb > xa:
            parts.append(f"<line x1={X(xa):.1f} y1={Y(bw * xa):.1f} x2={X(xb):.1f} y2={Y(bw * xb):.1f} "
                         f"stroke='{colour[lvl]}' stroke-width='2' />"
                         f"<text x={X(xb) - 6:.1f} y={Y(bw * xb) + 16 + 13 * list(roofs).index(lvl):.1f} "
                         f"text-anchor=end fill='{colour[lvl]}'>{lvl} {bw:,.0f} GB/s</text>")
    knee_min = min(peak / bw for bw in roofs.values()) if roofs else x0
    parts.append(f"<line x1={X(max(knee_min, x0)):.1f} y1={Y(peak):.1f} x2={X(x1):.1f} y2={Y(peak):.1f} "
                 f"stroke='#333' stroke-width='2' /><text x={X(x1) - 4:.1f} y={Y(peak) - 5:.1f} text-anchor=end>"
                 f"FP32 peak {peak:,.0f} GFLOP/s</text>")
    for lvl, ai, gf, label, hollow, src in pts:
        c = colour[lvl]
        fill = "white" if hollow else c
        parts.append(f"<circle class='pt {lvl}' cx={X(ai):.1f} cy={Y(gf):.1f} r='5' fill='{fill}' stroke='{c}' "
                     f"stroke-width='2'><title>launch {_e(label)}, {lvl}: {ai:.3g} FLOP/byte, {gf:,.1f} GFLOP/s "
                     f"({_e(src)})</title></circle><text x={X(ai) + 7:.1f} y={Y(gf) + 4 + 12 * [n for n, _c in _LEVELS].index(lvl):.1f} "
                     f"fill='{c}'>#{_e(label)} {lvl}</text>")
    parts.append("</svg><div class=legend>")
    seen = set()
    for lvl, _ai, _gf, _label, hollow, src in pts:
        if lvl in seen:
            continue
        seen.add(lvl)
        parts.append(f"<p><i style='background:{'white' if hollow else colour[lvl]};border:2px solid {colour[lvl]}'></i>"
                     f"<b>{lvl}</b>: {_e(src)}</p>")
    parts.append("</div></div>")
    return "".join(parts)


_SOURCE_KERNELS = 8  # kernels shown in the source view (most estimated time, else thread instructions, first)


def _merge_lines(dicts: list[dict]):
    """Per kernel, its source lines (or hot PTX instructions) summed over its launches:
    numbers add up, ``stall_cycles`` add up by reason, ``ptx_rows`` add up per instruction."""
    kernels: dict[str, dict[tuple, dict]] = {}
    hot: dict[str, dict[int, dict]] = {}

    def add(g: dict, ln: dict, skip=("line", "index", "sectors_per_request")) -> None:
        for k, v in ln.items():
            if _num(v) and k not in skip:
                g[k] = g.get(k, 0) + v
        for k, v in (ln.get("stall_cycles") or {}).items():
            if _num(v):
                g.setdefault("stall_cycles", {})[k] = g.get("stall_cycles", {}).get(k, 0.0) + v
        if ln.get("stall") and (ln.get("est_cycles", 0) >= g.get("_stall_w", -1)):
            g["_stall_w"] = ln.get("est_cycles", 0)
            g["stall"] = ln["stall"]

    spr = registry.metric("sectors_per_request")
    for d in dicts:
        for ln in d.get("hot_instructions") or []:
            g = hot.setdefault(d["kernel"], {}).setdefault(ln["index"], {"ptx": ln["ptx"]})
            add(g, ln)
        for ln in d.get("source_lines") or []:
            if "index" in ln:
                g = hot.setdefault(d["kernel"], {}).setdefault(ln["index"], {"ptx": ln.get("ptx", "")})
                add(g, ln)
                continue
            rows = kernels.setdefault(d["kernel"], {})
            g = rows.setdefault((ln["file"], ln["line"]), {"file": ln["file"], "line": ln["line"],
                                                           "source": ln.get("source"), "ptx": {}})
            add(g, ln)
            for pr in ln.get("ptx_rows") or []:
                if isinstance(pr, dict) and _num(pr.get("index")):
                    add(g["ptx"].setdefault(pr["index"], {"index": pr["index"], "ptx": pr.get("ptx", "")}), pr)
            if ln.get("sectors_per_request"):  # global requests of the line, to re-divide the sums
                _sectors, requests = spr.parts({"sectors": ln["sectors"], "sectors_per_request": ln["sectors_per_request"]})
                g["global_requests"] = g.get("global_requests", 0) + requests
    for rows in list(kernels.values()) + list(hot.values()):
        for g in rows.values():
            if g.get("stall_cycles"):
                g["stall"] = max(g["stall_cycles"], key=lambda k: g["stall_cycles"][k])
    return kernels, hot


def _stall_title(g: dict) -> str:
    sc = g.get("stall_cycles") or {}
    tot = sum(sc.values()) or 1.0
    return ", ".join(f"{k} {100 * v / tot:.0f}%" for k, v in sorted(sc.items(), key=lambda kv: -kv[1]))


def _source_section(dicts: list[dict]) -> str:
    """Per kernel with line information (``-lineinfo``): each CUDA source line with its counts
    summed over the kernel's launches, hottest first by estimated time (``--estimate-time``;
    else in source order, shaded by thread instructions), its stall reason, and its PTX
    instructions with their figures unfolding under it."""
    spr = registry.metric("sectors_per_request")
    kernels, hot = _merge_lines(dicts)
    if not kernels and not hot:
        return ""

    def weight(rows) -> tuple:
        return (sum(r.get("est_cycles", 0) for r in rows), sum(r.get("thread_inst_executed", 0) for r in rows))

    order = sorted(kernels, key=lambda k: tuple(-x for x in weight(kernels[k].values())))
    timed = any(r.get("est_cycles") for rows in kernels.values() for r in rows.values())
    out = ["<h2>Source</h2><p class=sub>Counts per CUDA source line (from the PTX's <code>.loc</code>, a "
           "<code>-lineinfo</code> build), summed over each kernel's launches. "
           + ("Lines are ranked hottest first by <b>estimated time</b>: the share of the timing model's cycles "
              "charged to the line's instructions (a wait is charged to the instruction waited for: the load, "
              "the barrier, the busy pipe); <i>est. stall</i> is the reason most of those cycles wait for "
              "(hover for all). Click a column head to sort; unfold a line for its PTX."
              if timed else
              "The bar is the line's share of the kernel's thread instructions; run with "
              "<code>--estimate-time</code> to rank lines by estimated time.")
           + " Sectors/request and bank conflicts need <code>--memory-metrics</code>.</p>"]
    for k in order[:_SOURCE_KERNELS]:
        rows = list(kernels[k].values())
        total_est = sum(r.get("est_cycles", 0) for r in rows) or 1.0
        top = max((r.get("thread_inst_executed", 0) for r in rows), default=0) or 1
        if timed:
            rows.sort(key=lambda r: (-r.get("est_cycles", 0), r["file"], r["line"]))
        else:
            rows.sort(key=lambda r: (r["file"], r["line"]))
        out.append(f"<h3 title='{_e(k)}'>{_e(demangle(k))}</h3><table class='src sortable'><thead><tr>"
                   "<th class=k>line</th><th class=k>source (unfold: PTX)</th>"
                   + ("<th>est. time %</th><th class=k>est. stall</th>" if timed else "")
                   + "<th>thread instr.</th><th>warp instr.</th><th>predicated off</th><th>FLOPs</th><th>divergent</th>"
                   "<th>sectors/req</th><th>bank confl.</th>" + ("" if timed else "<th class=k>est. stall</th>")
                   + "</tr></thead><tbody>")
        for r in rows:
            t = r.get("thread_inst_executed", 0)
            share = 100 * r.get("est_cycles", 0) / total_est
            fl = r.get("flop_count_sp", 0) + r.get("flop_count_dp", 0) + r.get("flop_count_hp", 0)
            per_request = (f"{spr.value({'sectors': r['sectors'], 'requests': r['global_requests']}):.2f}"
                           if r.get("global_requests") else "")
            div = int(r.get("divergent_branch", 0))
            stall = f"<td class=k title='{_e(_stall_title(r))}'>{_e(r.get('stall', ''))}</td>"
            heat = (f"<td class=heat data-v='{share:.4f}' style='--w:{share:.1f}%'>{share:.1f}%</td>{stall}" if timed
                    else "")
            tcell = (f"<td data-v='{int(t)}'>{int(t):,}</td>" if timed
                     else f"<td class=heat data-v='{int(t)}' style='--w:{100 * t / top:.1f}%'>{int(t):,}</td>")
            summary, ptx_rows = _ptx_details(r, total_est)
            ncols = 11 if timed else 10
            out.append(
                f"<tr><td class=k data-v='{r['line']}' title='{_e(r['file'])}'>{_e(os.path.basename(r['file']))}:{r['line']}</td>"
                f"<td class='k code'>{summary}</td>{heat}{tcell}"
                f"<td>{int(r.get('inst_executed', 0)):,}</td><td>{int(r.get('predicated_off', 0)):,}</td><td>{int(fl):,}</td>"
                f"<td class={'bad' if div else ''}>{div:,}</td><td>{per_request}</td>"
                f"<td class={'bad' if r.get('bank_conflicts') else ''}>{int(r.get('bank_conflicts', 0)):,}</td>"
                + ("" if timed else stall) + "</tr>"
                + (f"<tr class=sub><td></td><td colspan={ncols - 1}>{ptx_rows}</td></tr>" if ptx_rows else ""))
        out.append("</tbody></table>")
    if len(order) > _SOURCE_KERNELS:
        out.append(f"<p class=sub>{len(order) - _SOURCE_KERNELS} more kernels with line information: "
                   f"<code>--by line</code> lists every one.</p>")
    hot_order = sorted(hot, key=lambda k: tuple(-x for x in weight(hot[k].values())))
    if hot_order:
        out.append("<p class=sub>Kernels without line information (build with <code>-lineinfo</code> for CUDA "
                   "lines): their hottest PTX instructions.</p>")
    for k in hot_order[:_SOURCE_KERNELS]:
        rows = sorted(hot[k].items(), key=lambda kv: (-kv[1].get("est_cycles", 0), -kv[1].get("thread_inst_executed", 0)))[:20]
        total_est = sum(r.get("est_cycles", 0) for r in hot[k].values()) or 1.0
        top = max((r.get("thread_inst_executed", 0) for _i, r in rows), default=0) or 1
        out.append(f"<h3 title='{_e(k)}'>{_e(demangle(k))}</h3><table class='src sortable'><thead><tr><th>#</th>"
                   "<th class=k>PTX</th><th>est. time %</th><th>thread instr.</th><th>warp instr.</th>"
                   "<th>predicated off</th><th>divergent</th><th class=k>est. stall</th></tr></thead><tbody>")
        for i, r in rows:
            t = r.get("thread_inst_executed", 0)
            share = 100 * r.get("est_cycles", 0) / total_est
            out.append(f"<tr><td>{i}</td><td class='k code'>{_e(r['ptx'])}</td>"
                       f"<td class=heat data-v='{share:.4f}' style='--w:{share:.1f}%'>{share:.1f}%</td>"
                       f"<td data-v='{int(t)}'>{int(t):,}</td><td>{int(r.get('inst_executed', 0)):,}</td>"
                       f"<td>{int(r.get('predicated_off', 0)):,}</td><td>{int(r.get('divergent_branch', 0)):,}</td>"
                       f"<td class=k>{_e(r.get('stall', ''))}</td></tr>")
        out.append("</tbody></table>")
    return "".join(out)


def _ptx_details(r: dict, total_est: float) -> tuple[str, str]:
    """A source line's text, unfolding (``<details>``) its PTX instructions and their figures
    in the full-width row under it (``tr.sub``, shown by CSS while the line is open)."""
    text = _e(r.get("source") or "")
    ptx = sorted((r.get("ptx") or {}).values(), key=lambda p: p["index"])
    if not ptx:
        return text, ""
    rows = "".join(
        f"<tr><td>{int(p['index'])}</td><td class=k>{_e(p.get('ptx', ''))}</td>"
        f"<td>{100 * p.get('est_cycles', 0) / total_est:.1f}%</td><td class=k>{_e(p.get('stall', ''))}</td>"
        f"<td>{int(p.get('inst_executed', 0)):,}</td><td>{int(p.get('thread_inst_executed', 0)):,}</td>"
        f"<td>{int(p.get('divergent_branch', 0)):,}</td><td>{int(p.get('bank_conflicts', 0)):,}</td></tr>"
        for p in ptx)
    return (f"<details><summary>{text or '(no source text)'}</summary></details>",
            f"<table class=ptx><thead><tr><th>#</th><th class=k>PTX of the line</th><th>est. time %</th>"
            f"<th class=k>stall</th><th>warp instr.</th><th>thread instr.</th><th>divergent</th><th>bank confl.</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>")


#: sortable tables: a click on a column head sorts the body by it (numbers by ``data-v`` or
#: their text without separators), a second click reverses; nothing is fetched
SORT_JS = """
document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('thead th').forEach(function (th, col) {
    th.title = 'sort'; th.addEventListener('click', function () {
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var dir = th.dataset.dir === 'desc' ? 1 : -1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
      function key(r) { var c = r.cells[col]; if (!c) return ''; var v = c.dataset.v !== undefined ? c.dataset.v :
        c.textContent.replace(/[,%\\s]/g, ''); var n = parseFloat(v); return isNaN(n) ? c.textContent : n; }
      var groups = [];  // a row and the rows under it (tr.sub: a source line's PTX) move together
      rows.forEach(function (r) { if (r.classList.contains('sub') && groups.length) groups[groups.length - 1].push(r);
                                  else groups.push([r]); });
      groups.sort(function (a, b) { var x = key(a[0]), y = key(b[0]); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
      groups.forEach(function (g) { g.forEach(function (r) { body.appendChild(r); }); });
    });
  });
});
"""


def build(dicts: list[dict], static: list[dict] | None = None, summary: str = "", cfg: str | None = None,
          plots_dir: str | None = None, title: str = "hypa report", input_options=None,
          errors: list[str] | None = None) -> Page:
    notices: list[str] = []
    groups = _kernel_groups(dicts)
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
             f"<style>{CSS}</style></head><body>"]
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts.append(f"<h1>{_e(title)}</h1><p class=sub>hypa, {when}. {_e(summary)}</p>")
    reused = sum(1 for d in dicts if d.get("reused_from") is not None)
    total_thr = sum(d["thread_inst_executed"] for d in dicts)
    total_fl = sum(flops(d) for d in dicts)
    executed = registry.metric("executed_fraction").combine(dicts)
    parts.append(
        f"<p><b>{len(dicts)}</b> launches of <b>{len(groups)}</b> kernels; <b>{reused}</b> reused the result of an "
        f"identical launch. Thread instructions: <b>{total_thr:,}</b>; FLOPs: <b>{int(total_fl):,}</b>; "
        f"executed fraction: <b>{100 * executed:.2f}%</b>.</p>")
    for e in errors or []:
        parts.append(f'<div class="error">{_e(e)}</div>')
    plots, files, missing = _plots(groups, plots_dir)
    if missing:
        notices.append(missing)
    cfg_html = _cfg_section(dicts, cfg, input_options, notices) if dicts else ""
    for n in notices:
        parts.append(f'<div class="notice">{_e(n)}</div>')

    # per kernel
    cats = [c for c in CATEGORY_COLORS if any(g["mix"].get(c) for g in groups)]
    parts.append("<h2>Kernels</h2>")
    parts.append(_legend(cats))
    parts.append("<table class=sortable><thead><tr><th class=k>kernel</th><th>launches</th><th>reused</th><th>thread instructions</th>"
                 "<th>FLOPs</th><th title='branch_efficiency, a percent in the JSON'>branch eff. %</th>"
                 "<th title='executed_fraction (a fraction in the JSON) as a percent'>executed %</th><th class=k>instruction mix</th>"
                 "<th class=k>top opcodes</th></tr></thead><tbody>")
    short48 = short_names([demangle(d["kernel"]) for d in dicts], 48)
    for g in sorted(groups, key=lambda g: -g["thread_inst_executed"]):
        top = ", ".join(f"{k} {100 * v / (sum(g['opcodes'].values()) or 1):.0f}%"
                        for k, v in sorted(g["opcodes"].items(), key=lambda kv: -kv[1])[:4])
        eff = g["branch_efficiency"]
        parts.append(
            f"<tr><td class=k title='{_e(demangle(g['kernel']))} ({_e(g['kernel'])})'><details><summary>{_e(short48[demangle(g['kernel'])])}</summary>"
            f"<span class=full>{_e(demangle(g['kernel']))}<br>{_e(g['kernel'])}</span></details></td><td>{g['launches']}</td>"
            f"<td>{g['reused']}</td><td>{int(g['thread_inst_executed']):,}</td><td>{int(flops(g)):,}</td>"
            f"<td class={_eff_class(eff)}>{_pct(eff)}</td><td>{_pct(100 * g['executed_fraction'])}</td>"
            f"<td class=k>{_bar(g['mix'])}</td><td class='k wrap'>{_e(top)}</td></tr>")
    parts.append("</tbody></table>")

    parts.append(_memory_time_section(dicts, short48))
    parts.append(_source_section(dicts))
    parts.append(cfg_html)

    if plots:
        parts.append("<h2>Plots</h2>")
        for t, uri in plots:
            parts.append(f"<h3>{_e(t)}</h3><img class=plot alt='{_e(t)}' src='{uri}'>")

    # launches
    parts.append("<h2>Launches</h2><table class=sortable><thead><tr><th>#</th><th class=k>kernel</th><th>grid</th><th>block</th>"
                 "<th>warp instr.</th><th>thread instr.</th><th>FLOPs</th><th>branches</th><th>divergent</th>"
                 "<th title='branch_efficiency, a percent in the JSON'>branch eff. %</th><th title='executed_fraction (a fraction in the JSON) as a percent'>executed %</th><th title='most warp-instructions of one warp slot over the mean (1.00: a CTA&#39;s warps share the work evenly)'>warp balance</th>"
                 "<th title='how long hypa took to emulate the launch, not the kernel&#39;s time'>emulator ms</th><th class=k>note</th></tr></thead><tbody>")
    for d in dicts:
        r = d.get("reused_from")
        note = f"same as #{r}" if r is not None else ""
        ms = "" if r is not None else f"{d.get('duration_ms', 0):.1f}"
        parts.append(
            f"<tr class='{'reused' if r is not None else ''}'><td>{_e(d.get('launch', ''))}</td>"
            f"<td class=k title='{_e(demangle(d['kernel']))}'>{_e(short48[demangle(d['kernel'])])}</td><td>{_e(_dims(d['grid']))}</td><td>{_e(_dims(d['block']))}</td>"
            f"<td>{int(d['inst_executed']):,}</td><td>{int(d['thread_inst_executed']):,}</td><td>{int(flops(d)):,}</td>"
            f"<td>{int(d['branch']):,}</td><td>{int(d['divergent_branch']):,}</td><td class={_eff_class(d['branch_efficiency'])}>{_pct(d['branch_efficiency'])}</td>"
            f"<td>{_pct(100 * d['executed_fraction'])}</td>{_balance_cell(d.get('warp_inst_executed'))}<td>{ms}</td>"
            f"<td class=k>{_e(note)}</td></tr>")
    parts.append("</tbody></table>")
    if static:
        parts.append("<h2>Kernels without a launch (static counts)</h2><table><tr><th class=k>kernel</th>"
                     "<th class=k>file</th><th>instructions</th><th>blocks</th></tr>")
        for s in static:
            parts.append(f"<tr><td class=k>{_e(demangle(s['kernel']))}</td><td class=k>{_e(os.path.basename(s['file']))}</td>"
                         f"<td>{s['static_instructions']}</td><td>{s['blocks']}</td></tr>")
        parts.append("</table>")
    parts.append(f"<script>{SORT_JS}</script></body></html>\n")
    return Page("".join(parts), notices, files)
