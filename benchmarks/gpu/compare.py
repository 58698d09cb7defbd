#!/usr/bin/env python3
"""Compare recorded GPU ground truth with hypa's emulator (CPU only).

    python benchmarks/gpu/compare.py tests/ground_truth/h100/counts.json       # Markdown table
    python benchmarks/gpu/compare.py tests/ground_truth/h100/counts.json --json report.json

For every recorded launch the emulator runs the same launch (full mode, exact
predicates) and the figures are set side by side: thread-level counts (per
block, ``thread_inst_executed``, FLOPs) must be equal; warp-level counts
(per-block warp executions, ``inst_executed``, ``branch``,
``divergent_branch``) may differ where the hardware's scheduling departs from
the IPDOM model, and each difference carries an explanation.  Nsight
Compute's SASS-level figures and wall time sit beside ours with their ratio
(the HyPA paper's comparison).

``tests/unit/test_ground_truth.py`` asserts on these comparisons.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _hypa():
    try:
        import hypa  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(HERE))
        from harness import import_hypa

        import_hypa()


_hypa()

from hypa.passes.instrument import CounterMap  # noqa: E402
from hypa.ptxdialect import isa  # noqa: E402
from hypa.runtime.metrics.registry import with_ratios  # noqa: E402

THREAD_METRICS = ("thread_inst_executed", "flop_count_sp", "flop_count_dp", "flop_count_hp", "flop_count_special")
BRANCH_METRICS = ("branch", "divergent_branch")
WARP_METRICS = ("inst_executed",)

MORE_FRAGMENTS = (
    "the GPU executed this block as more warp fragments than the emulator's reconvergence model (IPDOM, "
    "with spin loops releasing waiting lanes: docs/design.md, \"Execution model\"): on Volta and later (independent "
    "thread scheduling) lanes that split earlier can run this block apart"
)
FEWER_FRAGMENTS = (
    "the GPU executed this block as fewer warp fragments than the emulator's model: lanes that the model keeps "
    "apart (e.g. a divergent loop exit or a path waiting at the reconvergence point) ran it together"
)
BRANCH_EXPLANATION = (
    "branch counts are warp-level: a conditional branch is counted once per warp fragment that reaches it, "
    "so the GPU's fragmenting or merging of warps (see the per-block warp differences) changes them"
)


# ---------------------------------------------------------------------------
# Recordings
# ---------------------------------------------------------------------------


def find_recordings(folder: Path) -> tuple[list[Path], list[Path]]:
    """(counts files, probe files) under ``folder``: every ``*.json`` whose
    ``kind`` says what it is."""
    counts, probes = [], []
    if not folder.is_dir():
        return counts, probes
    for p in sorted([*folder.rglob("*.json"), *folder.rglob("*.json.gz")]):
        try:
            with open_recording(p) as f:
                head = f.read(4096)
        except OSError:
            continue
        if '"hypa-ground-truth-counts"' in head:
            counts.append(p)
        elif '"hypa-ground-truth-probes"' in head:
            probes.append(p)
    return counts, probes


def open_recording(path):
    """A recording's text, plain or gzipped (``harness.py`` gzips one too large to bring back)."""
    import gzip

    return gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)


def load(path: Path) -> dict:
    with open_recording(path) as f:
        doc = json.load(f)
    doc["_path"] = str(path)
    return doc


# ---------------------------------------------------------------------------
# Launches
# ---------------------------------------------------------------------------


class RecordingStale(Exception):
    """The recorded PTX or launch no longer matches the repository."""


def launch_of(record: dict):
    from hypa.runtime.emulator.launch import launches_from_toml

    toml = ROOT / record["toml"]
    if not toml.exists():
        raise RecordingStale(f"{record['toml']} no longer exists")
    launches = launches_from_toml(str(toml))
    if record["index"] >= len(launches):
        raise RecordingStale(f"{record['toml']} has no launch {record['index']} any more")
    ln = launches[record["index"]]
    text = Path(ln.file).read_text()
    import hashlib

    if hashlib.sha256(text.encode()).hexdigest() != record.get("ptx_sha256"):
        raise RecordingStale(f"{os.path.relpath(ln.file, ROOT)} changed since the recording")
    if list(ln.grid) != record["grid"] or list(ln.block) != record["block"]:
        raise RecordingStale(f"{record['id']}: grid/block changed since the recording")
    return ln, text


def emulate(record: dict, mode: str = "full"):
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator

    ln, text = launch_of(record)
    t = time.perf_counter()
    r = Emulator(parse_ptx(text), mode=mode, exact_predicates=True).run(ln)
    return r, 1000 * (time.perf_counter() - t)


@dataclass
class LaunchComparison:
    id: str
    failures: list[str] = field(default_factory=list)  # thread-level: must be empty
    branch_differences: list[dict] = field(default_factory=list)
    warp_differences: list[dict] = field(default_factory=list)
    buffer_differences: list[dict] = field(default_factory=list)
    gpu: dict = field(default_factory=dict)
    ours: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def compare_counts(record: dict, result, outputs: dict | None = None) -> LaunchComparison:
    """Compare one recorded launch with an emulator result of the same launch."""
    cmap = CounterMap.from_dict(record["counter_map"])
    counters = record["counters"]
    gpu = with_ratios(cmap.metrics(counters))
    dec = cmap.decode(counters)
    ours = dict(result.metrics.values)
    c = LaunchComparison(record["id"], gpu=gpu, ours={k: ours.get(k) for k in gpu if k in ours})
    gblocks = {(b["function"], b["index"]): b for b in dec["blocks"]}
    seen = set()
    for b in result.metrics.blocks:
        key = (b.function, b.block)
        seen.add(key)
        g = gblocks.get(key)
        where = f"{b.function}:{b.name}"
        if g is None:
            if b.threads:
                c.failures.append(f"block {where}: we count {b.threads} threads, the GPU recording has no counter")
            continue
        if g["threads"] != b.threads:
            c.failures.append(f"block {where}: threads GPU {g['threads']} ours {b.threads}")
        if g["warps"] != b.warps:
            c.warp_differences.append({
                "block": where, "gpu": g["warps"], "ours": b.warps,
                "explanation": MORE_FRAGMENTS if g["warps"] > b.warps else FEWER_FRAGMENTS,
            })
    for key, g in gblocks.items():
        if key not in seen and g["threads"]:
            c.failures.append(f"block {key[0]}:{g['name']}: the GPU counts {g['threads']} threads, we never run it")
    for k in THREAD_METRICS:
        if gpu[k] != ours.get(k):
            c.failures.append(f"{k}: GPU {gpu[k]} ours {ours.get(k)}")
    for k in BRANCH_METRICS:
        if gpu[k] != ours.get(k):
            c.branch_differences.append({"metric": k, "gpu": gpu[k], "ours": ours.get(k), "explanation": BRANCH_EXPLANATION})
    gdiv = {(r["function"], r["block"]): r for r in dec["branches"]}
    for b in result.metrics.blocks:
        r = gdiv.get((b.function, b.block))
        if r is not None and r["divergent"] != b.divergent:
            c.branch_differences.append({"metric": "divergent", "block": f"{b.function}:{b.name}", "text": r["text"],
                                         "gpu": r["divergent"], "ours": b.divergent, "explanation": BRANCH_EXPLANATION})
    for k in WARP_METRICS:
        if gpu[k] != ours.get(k):
            c.warp_differences.append({"metric": k, "gpu": gpu[k], "ours": ours.get(k),
                                       "explanation": "sum of per-block warp executions x instructions; see the blocks"})
    npo = ours.get("not_predicated_off_thread_inst_executed")
    if npo is not None and npo != gpu["not_predicated_off_thread_inst_executed"]:
        c.notes.append(f"not_predicated_off_thread_inst_executed: GPU {gpu['not_predicated_off_thread_inst_executed']} "
                       f"ours {npo}")
    if npo is not None and npo != gpu["not_predicated_off_thread_inst_executed_taken"]:
        c.notes.append("not_predicated_off_thread_inst_executed counts guarded branches for every active lane; "
                       f"counting only the lanes that take them gives {gpu['not_predicated_off_thread_inst_executed_taken']}")
    for name, info in record.get("buffers", {}).items():
        arr = result.buffers.get(name)
        if arr is None:
            continue
        import hashlib

        if hashlib.sha256(arr.tobytes()).hexdigest() != info.get("sha256"):
            d = {"buffer": name, "dtype": info.get("dtype")}
            if outputs is not None and info.get("npz_key") in outputs:
                d.update(describe_difference(arr, outputs[info["npz_key"]]))
            c.buffer_differences.append(d)
    if record.get("instrumentation_changed_outputs"):
        c.notes.append("the instrumented kernel's outputs differ from the plain kernel's on the GPU "
                       "(atomics or a data race whose order changed)")
    return c


def describe_difference(ours: np.ndarray, gpu: np.ndarray) -> dict:
    if ours.shape != gpu.shape or ours.dtype != gpu.dtype:
        return {"detail": f"shape/dtype differ: ours {ours.shape} {ours.dtype}, GPU {gpu.shape} {gpu.dtype}"}
    a, b = ours.ravel(), gpu.ravel()
    diff = a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1)
    bad = np.nonzero(diff.any(axis=1))[0]
    out = {"elements_differing": int(bad.size), "first": [int(i) for i in bad[:5]]}
    if a.dtype.kind == "f":
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(invalid="ignore"):
            d = np.abs(fa - fb)
        finite = np.isfinite(d)
        out["max_abs_difference"] = float(d[finite].max()) if finite.any() else None
        out["ulps_max"] = int(np.max(np.abs(_ordered_bits(a, a.itemsize) - _ordered_bits(b, b.itemsize))[bad])) if bad.size else None
    return out


# ---------------------------------------------------------------------------
# Probes
# ---------------------------------------------------------------------------


def probe_module():
    sys.path.insert(0, str(HERE))
    import probes

    return probes


def spec_of(rec: dict):
    """The probe as recorded; its tolerance is today's (a comparison choice, not part of the recording)."""
    probes = probe_module()
    srcs = tuple(tuple(s) if isinstance(s, list) else s for s in rec["sources"])
    tol = tuple(rec["tolerance"]) if rec.get("tolerance") else None
    current = {p.id: p for p in probes.probe_specs()}.get(rec.get("id"))
    if current is not None and tol is not None:
        tol = tuple(current.tolerance) if current.tolerance is not None else None
    return probes.ProbeSpec(
        rec["instruction"], srcs, tuple(rec["results"]), rec.get("result_operand", "plain"), bool(rec.get("guard")),
        tol, tuple(rec["domain"]) if rec.get("domain") else None,
        rec.get("target", "sm_90"), rec.get("version", "8.5"), rec.get("label", ""), rec.get("operands", ""),
    )


def probe_entry(rec: dict) -> str:
    try:
        return isa.resolve_opcode(rec["instruction"])[0].name
    except Exception:  # noqa: BLE001
        return rec["instruction"].split(".")[0]


_FLOAT_VIEW = {".f32": ("f32", 4), ".f64": ("f64", 8), ".f16": ("f16", 2), ".bf16": ("bf16", 2),
               ".f16x2": ("f16", 2), ".bf16x2": ("bf16", 2)}


def _as_float(bits: np.ndarray, kind: str) -> np.ndarray:
    if kind == "f32":
        return bits.view(np.float32).astype(np.float64)
    if kind == "f64":
        return bits.view(np.float64)
    if kind == "f16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _within(ours: np.ndarray, gpu: np.ndarray, t: str, tol: tuple) -> np.ndarray:
    """Per element: equal within the tolerance (NaN matches NaN, infinities exactly)."""
    kind, size = _FLOAT_VIEW.get(t, (None, 0))
    if kind is None:
        return (ours.view(np.uint8).reshape(ours.size, -1) == gpu.view(np.uint8).reshape(gpu.size, -1)).all(axis=1)
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    a, b = ours.view(u).ravel(), gpu.view(u).ravel()
    fa, fb = _as_float(a, kind), _as_float(b, kind)
    nan_a, nan_b = np.isnan(fa), np.isnan(fb)
    ok = nan_a & nan_b
    both = ~nan_a & ~nan_b
    exact = a == b
    inf = np.isinf(fa) | np.isinf(fb)
    mode, bound = tol
    with np.errstate(invalid="ignore", over="ignore"):
        if mode == "ulp":
            close = np.abs(_ordered_bits(a, size) - _ordered_bits(b, size)) <= bound
        elif mode == "rel":
            close = np.abs(fa - fb) <= bound * np.maximum(np.abs(fa), np.abs(fb)) + np.finfo(np.float32).tiny
        elif mode == "absulp":
            # an absolute error bound plus the final rounding of the result (2 ulp)
            close = (np.abs(fa - fb) <= bound) | (np.abs(_ordered_bits(a, size) - _ordered_bits(b, size)) <= 2)
        else:
            close = np.abs(fa - fb) <= bound
    return ok | exact | (both & ~inf & close)


def _ordered_bits(bits: np.ndarray, size: int) -> np.ndarray:
    s = {2: np.int16, 4: np.int32, 8: np.int64}[size]
    i = bits.view(s).astype(np.int64)
    return np.where(i < 0, np.int64(np.iinfo(s).min) - i, i)


@dataclass
class ProbeComparison:
    id: str
    ok: bool
    message: str = ""
    mismatches: int = 0


def compare_probe(rec: dict, gpu_outputs: list[np.ndarray], n: int, seed: int) -> ProbeComparison:
    """Run the probe in the emulator (full mode) on the regenerated inputs and
    compare with the GPU's outputs."""
    from hypa.runtime.emulator.probe import run_instruction

    probes = probe_module()
    spec = spec_of(rec)
    ins = probes.probe_inputs(spec, n, seed)
    if probes.inputs_digest(ins) != rec.get("inputs_sha256"):
        raise RecordingStale(f"{rec['id']}: the regenerated inputs differ from the recorded ones")
    ours = run_instruction(spec.instruction, ins, spec.sources, spec.results, spec.result_operand, spec.guard,
                           operands=spec.operands)
    msgs = []
    total_bad = 0
    for k, (o, g, t) in enumerate(zip(ours, gpu_outputs, spec.results)):
        if spec.tolerance is None:
            bad = o.view(np.uint8).reshape(o.size, -1) != g.view(np.uint8).reshape(g.size, -1)
            bad = bad.any(axis=1)
        else:
            if t.endswith("x2"):
                o2, g2 = o.view(np.uint16), g.view(np.uint16)
                good = _within(o2, g2, t, spec.tolerance).reshape(-1, 2).all(axis=1)
            else:
                good = _within(o, g, t, spec.tolerance)
            bad = ~np.asarray(good)
            if spec.domain is not None and ins and not t.endswith("x2"):
                # an approximation's error is stated on its input range only
                # (sin/cos on [-100pi, 100pi], lg2 on positive normals ...):
                # outside it both sides are implementation-defined
                x = np.asarray(ins[0])
                if x.dtype.kind == "f":
                    lo, hi = spec.domain
                    inside = (x >= lo) & (x <= hi)
                    bad = bad & inside
        idx = np.nonzero(bad)[0]
        total_bad += idx.size
        for i in idx[:4]:
            srcs = ", ".join(_hex(a[i]) for a in ins)
            msgs.append(f"result {k} at {i}: inputs ({srcs}) GPU {_hex(g[i])} ours {_hex(o[i])}")
    if total_bad:
        how = "bit-exact" if spec.tolerance is None else f"within {spec.tolerance}"
        return ProbeComparison(rec["id"], False, f"{total_bad} of {n} results not {how}: " + "; ".join(msgs), total_bad)
    return ProbeComparison(rec["id"], True)


def _hex(v) -> str:
    a = np.asarray(v)
    return "0x" + a.tobytes()[::-1].hex()


# ---------------------------------------------------------------------------
# The report (Markdown)
# ---------------------------------------------------------------------------


def _fmt(v) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.4g}"
    return str(v)


def _ratio(a, b) -> str:
    try:
        return f"{float(a) / float(b):.2f}" if a and b else "-"
    except (TypeError, ValueError):
        return "-"


def report_rows(doc: dict, run_emulator: bool = True) -> list[dict]:
    rows = []
    outputs = None
    npz = Path(doc["_path"]).with_name("outputs.npz")
    if npz.exists():
        outputs = dict(np.load(npz))
    for rec in doc.get("launches", []):
        row = {"id": rec["id"], "kernel": rec.get("entry") or rec.get("kernel"), "status": rec.get("status")}
        rows.append(row)
        if rec.get("status") != "ok":
            row["error"] = rec.get("error")
            continue
        ncu = rec.get("ncu") or {}
        row["ncu"] = ncu.get("metrics", {})
        row["ncu_wall_s"] = ncu.get("wall_s")
        row["gpu"] = with_ratios(CounterMap.from_dict(rec["counter_map"]).metrics(rec["counters"]))
        row["emulator_on_gpu_host"] = rec.get("emulator")
        if run_emulator:
            try:
                r, ms = emulate(rec)
                row["comparison"] = compare_counts(rec, r, outputs).as_dict()
                rs, ms_slice = emulate(rec, "slice")
                row["ours_slice_ms"] = ms_slice
                row["ours"] = dict(r.metrics.values)
            except Exception as e:  # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {e}"
    return rows


def markdown(rows: list[dict]) -> str:
    head = ("| launch | thread inst (GPU PTX) | ours | SASS thread inst (ncu) | SASS/PTX | inst (GPU PTX, warp) | ours "
            "| SASS inst (ncu) | FLOP sp ours | SASS fadd+fmul+2ffma | branch eff. ours | ncu uniform % | ncu wall s "
            "| ours ms (slice) | thread-level | warp-level diffs |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if r.get("status") != "ok" or "gpu" not in r:
            lines.append(f"| {r['id']} | {r.get('status')}: {str(r.get('error', ''))[:60]} |" + " |" * (head.count("|") - 3))
            continue
        g, n = r["gpu"], r.get("ncu", {})
        o = r.get("ours", {})
        cmp_ = r.get("comparison", {})
        sass_thr = n.get("smsp__sass_thread_inst_executed.sum")
        sass_inst = n.get("smsp__sass_inst_executed.sum")
        fl = None
        if "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" in n:
            fl = (n.get("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 0)
                  + n.get("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 0)
                  + 2 * n.get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 0))
        thread_ok = "ok" if cmp_ and not cmp_.get("failures") else (f"{len(cmp_.get('failures', []))} failures" if cmp_ else "-")
        wd = len(cmp_.get("warp_differences", [])) + len(cmp_.get("branch_differences", [])) if cmp_ else "-"
        lines.append(
            f"| {r['id']} | {_fmt(g['thread_inst_executed'])} | {_fmt(o.get('thread_inst_executed'))} | {_fmt(sass_thr)} "
            f"| {_ratio(sass_thr, g['thread_inst_executed'])} | {_fmt(g['inst_executed'])} | {_fmt(o.get('inst_executed'))} "
            f"| {_fmt(sass_inst)} | {_fmt(o.get('flop_count_sp'))} | {_fmt(fl)} | {_fmt(o.get('branch_efficiency'))} "
            f"| {_fmt(n.get('smsp__sass_average_branch_targets_threads_uniform.pct'))} | {_fmt(r.get('ncu_wall_s'))} "
            f"| {_fmt(r.get('ours_slice_ms'))} | {thread_ok} | {wd} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recording", nargs="+", help="counts.json files written by harness.py")
    ap.add_argument("--json", help="also write the full comparison as JSON")
    ap.add_argument("--no-emulator", action="store_true", help="only the GPU's own figures")
    a = ap.parse_args(argv)
    all_rows = []
    for p in a.recording:
        doc = load(Path(p))
        rows = report_rows(doc, not a.no_emulator)
        all_rows += rows
        print(f"## {p}\n\n{doc.get('gpu', {}).get('device', '?')}; `{doc.get('command')}`\n")
        print(markdown(rows))
        for r in rows:
            for d in (r.get("comparison") or {}).get("warp_differences", [])[:3]:
                print(f"- {r['id']}: {d.get('block', d.get('metric'))}: GPU {d['gpu']} ours {d['ours']} -- {d['explanation']}")
    if a.json:
        Path(a.json).write_text(json.dumps(all_rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
