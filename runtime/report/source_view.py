"""Counts per PTX instruction and per CUDA source line (Nsight Compute's Source page).

Every instruction executes with its block, so its warp and thread executions are its block's
counters; a guarded instruction's true lanes come from its guard counter (the rest were
predicated off); a block's divergent branches belong to the branch that ends it; memory
counters (``--memory-metrics``) are per instruction already.  The CUDA source line of an
instruction is the last ``.loc`` before it in layout order (``-lineinfo`` or ``-G`` builds;
``.file`` names the files).  For code inlined from another function ``.loc`` gives the inner
line (``device_atomic_functions.hpp:107``); ``call_site`` is the line of the outermost call in
the kernel's own file.  Kernels without ``.loc`` are shown per PTX instruction.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import InstructionOp, RawDirectiveOp

from ..metrics import registry
from ..metrics.counters import CounterView, memory_space
from ..models.timing import STALL_OF_CLASS  # timing class -> the stall a warp waiting on it shows

_LOC = re.compile(r"\s*(\d+)\s+(\d+)(?:\s+(\d+))?(?:.*inlined_at\s+(\d+)\s+(\d+))?")
_FILE = re.compile(r'\s*(\d+)\s+"([^"]*)"')

LINE_METRICS = ("instructions", "inst_executed", "thread_inst_executed", "predicated_off", "flop_count_sp",
                "flop_count_dp", "flop_count_hp", "divergent_branch", "requests", "sectors", "bank_conflicts")


@dataclass
class InstructionRow:
    index: int
    text: str
    block: str
    file: str | None
    line: int | None
    call_site: tuple[str, int] | None
    inst_executed: int = 0
    thread_inst_executed: int = 0
    predicated_off: int = 0
    flops: dict[str, int] = field(default_factory=dict)
    divergent_branch: int = 0
    requests: int = 0
    sectors: int = 0
    bank_conflicts: int = 0
    space: str | None = None
    timing_class: str = ""
    latency: float = 0.0
    #: cycles of the timing model's estimate charged to the instruction, by stall reason
    #: (``Estimate.instructions``; empty without ``--estimate-time``)
    est: dict[str, float] = field(default_factory=dict)

    @property
    def est_cycles(self) -> float:
        return sum(self.est.values())


def source_files(module) -> dict[int, str]:
    """``.file`` numbers of a module."""
    out = {}
    for op in module.ops:
        if isinstance(op, RawDirectiveOp) and op.directive.data == ".file":
            m = _FILE.match(op.text.data)
            if m:
                out[int(m.group(1))] = m.group(2)
    return out


_FILE_LINE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)


@functools.lru_cache(maxsize=16)
def source_files_of_text(ptx: str) -> dict[int, str]:
    """``.file`` numbers of PTX text (what a profile record keeps); the launches of one
    module share the answer (a module of 313 kernels was scanned 313 times)."""
    return {int(m.group(1)): m.group(2) for m in _FILE_LINE.finditer(ptx)}


def instruction_rows(prog, counters, files: dict[int, str], arch: str = "sm_90", estimate=None) -> list[InstructionRow]:
    """One row per PTX instruction of the prepared kernel, in layout order, with its timing
    class and latency on ``arch`` and, given the launch's ``estimate``
    (``runtime.models.timing.Estimate``), its cycles of the estimate by stall reason."""
    from hypa.ptxdialect.printer import instruction_text

    from ..models.timing import TimingError, classify, load_arch

    try:
        a = load_arch(arch)
    except TimingError:
        a = None

    def latency(cls: str) -> float:
        c = a.classes.get(cls) if a is not None else None
        if c is None:
            return 0.0
        return float(c.latency) if not isinstance(c.latency, str) else float(a.level_latency(c.latency))

    view = CounterView(prog, counters)
    rows: list[InstructionRow] = []
    loc: tuple[str | None, int | None, tuple | None] = (None, None, None)
    for bi, block in enumerate(prog.cfg.blocks):
        warps, thr, div = view.warps[bi], view.threads[bi], view.divergent[bi]
        bname = prog.cfg.name(bi)
        for op in block.ops:
            if isinstance(op, RawDirectiveOp) and op.directive.data == ".loc":
                m = _LOC.match(op.text.data)
                if m:
                    site = (files.get(int(m.group(4)), m.group(4)), int(m.group(5))) if m.group(4) else None
                    loc = (files.get(int(m.group(1)), m.group(1)), int(m.group(2)), site)
                continue
            if not isinstance(op, InstructionOp):
                continue
            true = thr
            if op.guard_pred is not None and not op.spec.terminator:
                counted = view.lanes_true(op)
                if counted is not None:
                    true = counted
            r = InstructionRow(len(rows), instruction_text(op), bname, loc[0], loc[1], loc[2],
                               inst_executed=warps, thread_inst_executed=thr, predicated_off=thr - true)
            counter, weight = isa.flop_weights(op.spec, op.modifiers)
            if counter:
                r.flops[counter] = weight * true
            try:
                r.timing_class = classify(op)
                r.latency = latency(r.timing_class)
            except Exception:  # an instruction the timing model does not class: no stall estimate
                r.timing_class = ""
            if op is block.last_op and op.spec.name in ("bra", "brx.idx"):
                r.divergent_branch = div
            slot = prog.mem_ops.get(op)
            if slot is not None:
                c = view.memory(slot)
                r.space = memory_space(op, c)
                r.requests = c.requests
                if r.space == "shared":
                    r.bank_conflicts = registry.metric("bank_conflicts").value(c._asdict())
                else:
                    r.sectors = c.sectors
            rows.append(r)
    per_instr = getattr(estimate, "instructions", None) or []
    if len(per_instr) == len(rows):  # (the same program: one entry per instruction)
        for r, d in zip(rows, per_instr):
            r.est = {k: v for k, v in d.items() if v > 0}
    return rows


def _top_reason(est: dict[str, float]) -> str:
    return max(est, key=lambda k: est[k]) if est else ""


def _sectors_per_request(sectors: int, requests: int) -> float:
    return registry.metric("sectors_per_request").value({"sectors": sectors, "requests": requests})


def _flop_key(kind: str) -> str:
    return {"sp": "flop_count_sp", "dp": "flop_count_dp", "hp": "flop_count_hp"}.get(kind, f"flop_count_{kind}")


def row_dict(r: InstructionRow) -> dict:
    d = {"index": r.index, "ptx": r.text, "block": r.block, "file": r.file, "line": r.line,
         "inst_executed": r.inst_executed, "thread_inst_executed": r.thread_inst_executed,
         "predicated_off": r.predicated_off, "divergent_branch": r.divergent_branch}
    for k, v in r.flops.items():
        d[_flop_key(k)] = v
    if r.space:
        d.update(space=r.space, requests=r.requests)
        if r.space == "shared":
            d["bank_conflicts"] = r.bank_conflicts
        else:
            d.update(sectors=r.sectors, sectors_per_request=_sectors_per_request(r.sectors, r.requests))
    if r.call_site:
        d["call_site"] = f"{r.call_site[0]}:{r.call_site[1]}"
    if r.timing_class:
        d["stall"] = STALL_OF_CLASS.get(r.timing_class, "wait")
        d["timing_class"] = r.timing_class
    if r.est:  # the estimate's cycles: the stall is the reason most of them wait for
        d["est_cycles"] = r.est_cycles
        d["stall"] = _top_reason(r.est)
    return d


def line_dicts(rows: list[InstructionRow], read_source: bool = True) -> list[dict]:
    """Rows summed per (file, line), in file then line order; without line information,
    the instruction rows themselves."""
    if not any(r.line is not None for r in rows):
        return [row_dict(r) for r in rows]
    groups: dict[tuple, dict] = {}
    weight: dict[tuple, tuple[float, str]] = {}
    reasons: dict[tuple, dict[str, float]] = {}
    estimated = any(r.est for r in rows)
    for r in rows:
        key = (r.file or "?", r.line or 0)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"file": key[0], "line": key[1], **{k: 0 for k in LINE_METRICS}}
            if estimated:
                g["est_cycles"] = 0.0
                g["ptx_rows"] = []
        w = r.latency * r.inst_executed
        if r.timing_class and w > weight.get(key, (-1.0, ""))[0]:
            weight[key] = (w, STALL_OF_CLASS.get(r.timing_class, "wait"))
        if estimated:
            g["est_cycles"] += r.est_cycles
            rs = reasons.setdefault(key, {})
            for k, v in r.est.items():
                rs[k] = rs.get(k, 0.0) + v
            g["ptx_rows"].append({k: v for k, v in row_dict(r).items() if k in _PTX_ROW_KEYS})
        g["instructions"] += 1
        g["inst_executed"] += r.inst_executed
        g["thread_inst_executed"] += r.thread_inst_executed
        g["predicated_off"] += r.predicated_off
        g["divergent_branch"] += r.divergent_branch
        for k, v in r.flops.items():
            g[_flop_key(k)] = g.get(_flop_key(k), 0) + v
        g["requests"] += r.requests
        if r.space != "shared":  # sectors are counted for global and local accesses
            g["global_requests"] = g.get("global_requests", 0) + r.requests
        g["sectors"] += r.sectors
        g["bank_conflicts"] += r.bank_conflicts
    for key, (w, stall) in weight.items():
        if w > 0 and not estimated:
            groups[key]["stall"] = stall  # the line's costliest wait: latency x warp executions
    for key, rs in reasons.items():
        if rs:  # the reason most of the line's estimated cycles wait for
            groups[key]["stall"] = _top_reason(rs)
            groups[key]["stall_cycles"] = dict(sorted(rs.items(), key=lambda kv: -kv[1]))
    out = sorted(groups.values(), key=lambda g: (g["file"], g["line"]))
    texts = _SourceCache() if read_source else None
    for g in out:
        gr = g.pop("global_requests", 0)  # sectors per request of the line's global and local accesses
        g["sectors_per_request"] = _sectors_per_request(g["sectors"], gr)
        if texts is not None:
            g["source"] = texts.line(g["file"], g["line"])
    return out


class _SourceCache:
    """Lines of the source files named by ``.file``, where they can be read (else None)."""

    def __init__(self) -> None:
        self._files: dict[str, list[str] | None] = {}

    def line(self, path: str, n: int) -> str | None:
        lines = self._files.get(path, False)
        if lines is False:
            from .files import source_lines

            lines = self._files[path] = source_lines(path)  # regular files of a bounded size only
        if not lines or not 1 <= n <= len(lines):
            return None
        return lines[n - 1].rstrip()


#: what a line's ``ptx_rows`` keep of each of its instructions
_PTX_ROW_KEYS = ("index", "ptx", "inst_executed", "thread_inst_executed", "predicated_off", "divergent_branch",
                 "requests", "sectors", "bank_conflicts", "est_cycles", "stall")


def result_lines(result, module=None, ptx: str | None = None, estimate=None) -> list[dict]:
    """Per-line dicts of one launch result (``LaunchResult``); ``.file`` names from the
    module or from the PTX text; with the launch's timing ``estimate`` (default: the one
    ``--estimate-time`` attached, ``result.time_estimate``) each line's ``est_cycles``, its
    ``stall`` and ``stall_cycles`` by reason, and its instructions (``ptx_rows``)."""
    files = source_files(module) if module is not None else source_files_of_text(ptx or "")
    est = estimate if estimate is not None else getattr(result, "time_estimate", None)
    return line_dicts(instruction_rows(result.program, result.counters, files, estimate=est))
