"""GPU ground truth, checked on the CPU: recorded hardware results against the emulator.

Recordings live under ``tests/ground_truth/`` (see its README); the GPU
harness ``benchmarks/gpu/harness.py`` writes them.  For every recorded launch
the emulator (full mode, exact predicates) must give the GPU's thread-level
figures exactly: per-block thread executions, ``thread_inst_executed`` and
the FLOP counts, and -- unless ``explanations.json`` explains why the
hardware's warp scheduling departs from the emulator's reconvergence model for
that launch (IPDOM, with the release by spin loops of docs/design.md, "Execution model")
-- ``branch``, ``divergent_branch``, per-block warp executions and
``inst_executed``.
Every recorded probe must match bit for bit (or within the stated error of
``.approx`` instructions).  Without recordings these tests skip and say why.

The rest of the file checks the harness and the comparison themselves, with
hypa's emulator standing in for the GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, SLOW_OK

sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))

import compare  # noqa: E402
import harness  # noqa: E402
import probes  # noqa: E402

GT = ROOT / "tests" / "ground_truth"
COUNTS, PROBES = compare.find_recordings(GT)
NO_RECORDINGS = (
    "no GPU recordings under tests/ground_truth: run benchmarks/gpu/harness.py on a GPU machine "
    "(see benchmarks/gpu/README.md) and copy counts.json/outputs.npz/probes.json/probes.npz there"
)


@lru_cache(maxsize=None)
def _doc(path: str) -> dict:
    return compare.load(Path(path))


@lru_cache(maxsize=None)
def _npz(path: str) -> dict:
    p = Path(path)
    return dict(np.load(p)) if p.exists() else {}


def _nondeterministic(path: str) -> dict:
    """Launches whose control flow depends on thread timing (atomic retry loops ...)."""
    p = Path(path).with_name("nondeterministic.json")
    return json.loads(p.read_text()) if p.exists() else {}


def _output_differences(path: str) -> dict:
    """Launches whose outputs may differ from the GPU's, and why (float atomics' order ...);
    any other launch's outputs must equal the GPU's bit for bit."""
    p = Path(path).with_name("output_differences.json")
    return json.loads(p.read_text()) if p.exists() else {}


def _explanations(path: str) -> dict:
    p = Path(path).with_name("explanations.json")
    return json.loads(p.read_text()) if p.exists() else {}


def _emulator_gap(e: Exception) -> bool:
    """Errors that mean the emulator cannot run the kernel at all (a known gap,
    tested elsewhere), not that it computes wrong counts."""
    return type(e).__name__ in ("LoweringError", "ProgramError", "EmulationError", "LaunchError")


def _launch_cases():
    out = []
    for p in COUNTS:
        for rec in _doc(str(p)).get("launches", []):
            if rec.get("status") == "ok":
                out.append(pytest.param(str(p), rec["id"], id=f"{p.parent.name}:{rec['id']}"))
    return out or [pytest.param(None, None, id="none", marks=pytest.mark.skip(reason=NO_RECORDINGS))]


def _probe_cases():
    out = []
    for p in PROBES:
        doc = _doc(str(p))
        seen_entries: set[str] = set()
        for i, rec in enumerate(doc.get("probes", [])):
            if rec.get("status") != "ok":
                continue
            entry = compare.probe_entry(rec)
            # without HYPA_SLOW_TESTS: the first probe of every ISA entry and every approximate one
            keep = SLOW_OK or entry not in seen_entries or rec.get("tolerance")
            seen_entries.add(entry)
            if keep:  # the others are not collected (hundreds of skips would hide the real ones)
                out.append(pytest.param(str(p), i, id=f"{p.parent.name}:{rec['id']}"))
    return out or [pytest.param(None, None, id="none", marks=pytest.mark.skip(reason=NO_RECORDINGS))]


def _report_line(d: dict) -> None:
    """With HYPA_GT_REPORT=FILE, every comparison is appended to FILE (JSON lines;
    ``benchmarks/gpu/coverage.py --from-report`` reads the probe verdicts)."""
    path = os.environ.get("HYPA_GT_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(d, default=str) + "\n")


def _report(c: compare.LaunchComparison) -> None:
    _report_line({"launch": c.id, **c.as_dict()})


@pytest.mark.parametrize("path,launch_id", _launch_cases())
def test_launch_matches_gpu(path, launch_id):
    doc = _doc(path)
    rec = next(r for r in doc["launches"] if r["id"] == launch_id)
    try:
        result, _ms = compare.emulate(rec)
    except compare.RecordingStale as e:
        pytest.skip(f"stale recording: {e}")
    except Exception as e:  # noqa: BLE001
        if _emulator_gap(e):
            pytest.skip(f"the emulator cannot run this launch: {type(e).__name__}: {str(e)[:200]}")
        raise
    c = compare.compare_counts(rec, result, _npz(str(Path(path).with_name("outputs.npz"))))
    _report(c)
    for d in c.warp_differences:
        warnings.warn(f"{launch_id}: warp-level {d.get('block', d.get('metric'))}: GPU {d['gpu']}, IPDOM model "
                      f"{d['ours']} ({d['explanation']})", stacklevel=1)
    expected = _output_differences(path).get(launch_id)
    for d in c.buffer_differences:
        warnings.warn(f"{launch_id}: buffer {d['buffer']} differs from the GPU's: {d}", stacklevel=1)
    nd = _nondeterministic(path).get(launch_id)
    if c.buffer_differences and not expected and not nd:
        pytest.fail(f"{launch_id}: outputs differ from the GPU's and output_differences.json does not say why: "
                    + "; ".join(f"{d['buffer']}: {d}" for d in c.buffer_differences))
    if c.failures and nd:
        # docs/validation.md, "Ground truth": exact equality is required where control flow is deterministic
        pytest.skip(f"{launch_id}: control flow depends on thread timing ({nd}); differences: " + "; ".join(c.failures))
    assert not c.failures, f"{launch_id}: thread-level counts differ from the GPU:\n" + "\n".join(c.failures)
    note = rec.get("warp_level_note") or _explanations(path).get(launch_id)
    if c.branch_differences:
        text = "\n".join(f"{d.get('block', '')} {d['metric']}: GPU {d['gpu']} ours {d['ours']}" for d in c.branch_differences)
        if note:
            warnings.warn(f"{launch_id}: branch counts differ ({note}):\n{text}", stacklevel=1)
        else:
            pytest.fail(f"{launch_id}: branch/divergent counts differ from the GPU and explanations.json has no "
                        f"note for this launch:\n{text}\n({compare.BRANCH_EXPLANATION})")
    if c.warp_differences and not note and not nd:
        text = "\n".join(f"{d.get('block', d.get('metric'))}: GPU {d['gpu']} ours {d['ours']}" for d in c.warp_differences)
        pytest.fail(f"{launch_id}: warp-level counts differ from the GPU and explanations.json has no note for "
                    f"this launch:\n{text}")


@pytest.mark.parametrize("path,index", _probe_cases())
def test_probe_matches_gpu(path, index):
    doc = _doc(path)
    rec = doc["probes"][index]
    npz = _npz(str(Path(path).with_name(doc.get("npz", "probes.npz"))))
    if not npz:
        pytest.skip(f"{doc.get('npz', 'probes.npz')} is missing beside {path}")
    gpu = [npz[k] for k in rec["outputs"]]
    try:
        c = compare.compare_probe(rec, gpu, doc["n"], doc["seed"])
    except compare.RecordingStale as e:
        pytest.skip(f"stale recording: {e}")
    except Exception as e:  # noqa: BLE001
        if _emulator_gap(e):
            _report_line({"probe": rec["id"], "entry": compare.probe_entry(rec), "ok": False, "message": str(e)[:300]})
            pytest.skip(f"no emulator semantics: {type(e).__name__}: {str(e)[:200]}")
        raise
    _report_line({"probe": rec["id"], "entry": compare.probe_entry(rec), "ok": c.ok, "message": c.message[:500]})
    known = _known_mismatches(path)
    if rec["id"] in known:  # a listed open difference: it must still differ (strict)
        assert not c.ok, f"{rec['id']} now matches the GPU: remove it from known_mismatches.json"
        pytest.xfail(f"known difference from the GPU (known_mismatches.json): {c.message[:200]}")
    assert c.ok, c.message


def _known_mismatches(path: str) -> set[str]:
    p = Path(path).with_name("known_mismatches.json")
    return set(json.loads(p.read_text())["probes"]) if p.exists() else set()


# ---------------------------------------------------------------------------
# Memory metrics against ncu (benchmarks/gpu/memory_compare.py)
# ---------------------------------------------------------------------------

import memory_compare  # noqa: E402

MEMORY = GT / "h100" / "memory.json"


def _memory_cases():
    if not MEMORY.exists():
        return [pytest.param(None, id="none", marks=pytest.mark.skip(reason=NO_RECORDINGS))]
    doc = _doc(str(MEMORY))
    return [pytest.param(r["id"], id=f"h100:{r['id']}") for r in doc["launches"]
            if r.get("status") == "ok" and r.get("ncu_status") == "ok"]


@pytest.mark.parametrize("launch_id", _memory_cases())
def test_memory_metrics_match_ncu(launch_id):
    """Sectors, requests, wavefronts and bank conflicts equal ncu's, except where
    memory_explanations.json says (from the SASS) why ptxas's accesses differ."""
    rec = next(r for r in _doc(str(MEMORY))["launches"] if r["id"] == launch_id)
    try:
        result, _ms = memory_compare.emulate(rec)
    except compare.RecordingStale as e:
        pytest.skip(f"stale recording: {e}")
    rows = memory_compare.rows_of(rec, result)
    assert rows, f"{launch_id}: neither side counted a memory access"
    expl = memory_compare.explanations()
    unexplained = [r for r in rows if not r["equal"] and not memory_compare.explanation(expl, launch_id, r["metric"])]
    assert not unexplained, f"{launch_id}: memory metrics differ from ncu's:\n" + "\n".join(
        f"{r['label']}: ncu {r['gpu']}, ours {r['ours']}" for r in unexplained)
    if launch_id in expl and all(r["equal"] for r in rows):
        warnings.warn(f"{launch_id}: equal to ncu now; its entry in memory_explanations.json is stale", stacklevel=1)


# ---------------------------------------------------------------------------
# The harness and the comparison, with the emulator standing in for the GPU
# ---------------------------------------------------------------------------

NCU_DETAILS = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "saxpy": 0%....50%....100% - 1 pass
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","saxpy","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed.sum","inst","1,152"
"0","4242","python3.12","127.0.0.1","saxpy","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_average_branch_targets_threads_uniform.pct","%","96.88"
'''
NCU_RAW = '''"ID","Kernel Name","smsp__sass_inst_executed.sum","gpu__time_duration.sum"
"","","inst","ns"
"0","saxpy","1152","2368"
'''


def test_ncu_csv_is_parsed_in_both_layouts():
    (k,) = harness.parse_ncu_csv(NCU_DETAILS)
    assert k["kernel"] == "saxpy"
    assert k["metrics"]["smsp__sass_inst_executed.sum"] == 1152
    assert k["metrics"]["smsp__sass_average_branch_targets_threads_uniform.pct"] == 96.88
    assert k["units"]["smsp__sass_inst_executed.sum"] == "inst"
    (r,) = harness.parse_ncu_csv(NCU_RAW)
    assert r["metrics"] == {"smsp__sass_inst_executed.sum": 1152, "gpu__time_duration.sum": 2368}
    assert harness.parse_ncu_csv("==ERROR== Failed to find metric foo") == []


def test_parameters_are_packed_like_the_emulator_packs_them():
    params = (("", "p", ".param", ".u64", None, ()), ("", "n", ".param", ".u32", None, ()),
              ("", "a", ".param", ".f32", None, ()), ("", "h", ".param", ".b8", 4, (4,)),
              ("", "k", ".param", ".s32", None, ()))
    out = harness.pack_params(params, ["x", 1000, 2.5, 0x3C004000, 7.9])
    assert out[0] == {"param": "p", "kind": "buffer", "name": "x", "size": 8}
    assert bytes.fromhex(out[1]["hex"]) == (1000).to_bytes(4, "little")
    assert bytes.fromhex(out[2]["hex"]) == np.float32(2.5).tobytes()
    assert bytes.fromhex(out[3]["hex"]) == (0x3C004000).to_bytes(4, "little")
    assert bytes.fromhex(out[4]["hex"]) == (7).to_bytes(4, "little")  # a float for an integer parameter: truncated
    with pytest.raises(ValueError, match="takes 5 parameters"):
        harness.pack_params(params, ["x"])


def _record_with_emulator(tmp_path: Path, toml: str, only: str):
    """A launch record as the harness writes it, the emulator standing in for the GPU."""
    records, jobs = harness.prepare_launches([toml], tmp_path, only)
    (job,) = jobs
    res = harness.EmulatorBackend().run_launch(job)
    res["status"] = "ok"
    return harness.assemble_launch_record(records[job["record"]], job, res, {})


def test_comparison_accepts_equal_counts_and_flags_each_kind_of_difference(tmp_path):
    rec = _record_with_emulator(tmp_path, str(ROOT / "tests/kernels/launches/divergence.toml"), r"^divergence#0$")
    result, _ = compare.emulate(rec)
    c = compare.compare_counts(rec, result)
    assert not c.failures and not c.branch_differences and not c.warp_differences and not c.buffer_differences
    blocks = rec["counter_map"]["blocks"]
    entry = next(b for b in blocks if b["index"] == 0)
    # a thread count off by one is a failure
    bad = json.loads(json.dumps(rec))
    bad["counters"][entry["thread_slot"]] += 1
    c = compare.compare_counts(bad, result)
    assert any("threads GPU" in f for f in c.failures) and any("thread_inst_executed" in f for f in c.failures)
    # an extra warp fragment is reported, with an explanation, not failed
    frag = json.loads(json.dumps(rec))
    frag["counters"][entry["warp_slot"]] += 1
    c = compare.compare_counts(frag, result)
    assert not c.failures and c.warp_differences
    assert "independent thread scheduling" in c.warp_differences[0]["explanation"]
    # a divergent branch the model does not see is a branch difference
    div = json.loads(json.dumps(rec))
    div["counters"][rec["counter_map"]["branches"][0]["divergent_slot"]] += 1
    c = compare.compare_counts(div, result)
    assert not c.failures and {d["metric"] for d in c.branch_differences} >= {"divergent_branch", "divergent"}
    # outputs that differ are described
    other = json.loads(json.dumps(rec))
    other["buffers"]["out"]["sha256"] = "0" * 64
    c = compare.compare_counts(other, result, {rec["buffers"]["out"].get("npz_key", ""): result.buffers["out"]})
    assert [d["buffer"] for d in c.buffer_differences] == ["out"]


def test_probe_tolerances():
    f = np.array([1.0, np.nan, np.inf, 2.0, 0.0], np.float32)
    g = np.array([np.nextafter(np.float32(1.0), np.float32(2.0)), np.nan, np.inf, 2.0000005, -0.0], np.float32)
    ok = compare._within(f, g, ".f32", ("ulp", 1))
    assert list(ok) == [True, True, True, False, True]
    assert list(compare._within(f, g, ".f32", ("rel", 1e-6))) == [True, True, True, True, True]
    inf_vs_max = compare._within(np.array([np.inf], np.float32), np.array([3.4e38], np.float32), ".f32", ("rel", 1.0))
    assert not inf_vs_max[0]


def test_probe_specs_are_valid_and_inputs_deterministic():
    from hypa.ptxdialect import isa, parse_ptx
    from hypa.runtime.emulator.probe import instruction_kernel

    specs = probes.probe_specs()
    assert len({s.id for s in specs}) == len(specs)
    for s in specs:  # what the recording stores gives the same spec back (ids seed the inputs)
        assert compare.spec_of(json.loads(json.dumps(s.as_dict()))) == s
    for s in specs[:: max(1, len(specs) // 60)]:
        isa.resolve_opcode(s.instruction)
        parse_ptx(instruction_kernel(s.instruction, s.sources, s.results, result_operand=s.result_operand, guard=s.guard,
                                     operands=s.operands).ptx)
    s = next(s for s in specs if s.instruction == "add.rn.f32")
    a, b = probes.probe_inputs(s, 256), probes.probe_inputs(s, 256)
    assert probes.inputs_digest(a) == probes.inputs_digest(b)
    bits = a[0].view(np.uint32)
    assert 0x80000000 in bits and 0x7F800000 in bits and 0x00000001 in bits  # -0, inf, the smallest denormal


def test_harness_end_to_end_with_stand_ins_for_cupy_and_ncu(tmp_path):
    """The harness as the lead runs it -- worker processes, the CuPy code path
    (module loading, cuLaunchKernel parameter arrays, module globals), ncu runs,
    JSON and npz -- with ``benchmarks/gpu/fake_cupy`` (CuPy and ncu backed by
    the emulator) instead of a GPU; then the CI comparison over what it wrote."""
    fake = ROOT / "benchmarks" / "gpu" / "fake_cupy"
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, str(ROOT / "benchmarks/gpu/harness.py"), "all", "--out", str(out), "--ncu", str(fake / "ncu"),
           "--only", r"^(saxpy#1|half_math#1)$", "--probe-limit", "2", "--job-timeout", "300",
           str(ROOT / "tests/kernels/launches/saxpy.toml"), str(ROOT / "tests/kernels/launches/half_math.toml")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    counts, probe_files = compare.find_recordings(out)
    assert [c.name for c in counts] == ["counts.json"] and [q.name for q in probe_files] == ["probes.json"]
    doc = compare.load(counts[0])
    assert doc["gpu"]["device"].startswith("fake GPU")
    assert [r["id"] for r in doc["launches"]] == ["saxpy#1", "half_math#1"]
    outputs = dict(np.load(out / "outputs.npz"))
    for rec in doc["launches"]:
        assert rec["status"] == "ok" and rec["metrics"]["thread_inst_executed"] > 0
        assert rec["ncu"]["status"] == "ok" and rec["ncu"]["metrics"]["smsp__sass_inst_executed.sum"] == 1000
        result, _ = compare.emulate(rec)
        c = compare.compare_counts(rec, result, outputs)
        assert not c.failures and not c.branch_differences and not c.buffer_differences
    pdoc = compare.load(probe_files[0])
    npz = dict(np.load(out / "probes.npz"))
    for rec in pdoc["probes"]:
        c = compare.compare_probe(rec, [npz[k] for k in rec["outputs"]], pdoc["n"], pdoc["seed"])
        assert c.ok, c.message


def test_a_recording_too_large_to_bring_back_is_gzipped_and_still_read(tmp_path, monkeypatch):
    # the device tool returns files of at most 16 MiB; a corpus run's counts.json was 49 MB
    doc = {"kind": harness.COUNTS_KIND, "format": 1, "launches": [{"id": f"k#{i}", "pad": "x" * 100} for i in range(50)]}
    path = tmp_path / "counts.json"
    harness.write_json(path, doc)
    monkeypatch.setattr(harness, "MAX_PLAIN_BYTES", path.stat().st_size + 1)
    harness._compress_if_large(path)
    assert path.exists()  # small enough: left alone
    monkeypatch.setattr(harness, "MAX_PLAIN_BYTES", 1000)
    harness._compress_if_large(path)
    assert not path.exists() and (tmp_path / "counts.json.gz").exists()
    found, _ = compare.find_recordings(tmp_path)
    assert found == [tmp_path / "counts.json.gz"]
    back = compare.load(found[0])
    assert [r["id"] for r in back["launches"]] == [f"k#{i}" for i in range(50)]
    mem = memory_compare.extract(found[0])
    assert [r["id"] for r in mem["launches"]] == [f"k#{i}" for i in range(50)]
    assert all(r["ncu_status"] is None and r["ncu"] == {} for r in mem["launches"])  # ncu did not run
