"""`hypa diff`: launches paired per kernel in order, sums per kernel, changes as percentages."""

from __future__ import annotations

import json

from hypa.runtime.report import diff

from helpers import run_hypa


def _launch(kernel, n, thr, div=0, br=10, est=None, i=0):
    """A launch entry as `hypa profile --format json` writes one: every column (zero where the
    test does not care), then the figures the test sets."""
    from hypa.runtime.metrics import registry

    d = {k: 0 for k in registry.columns()}
    d.update({"launch": i, "kernel": kernel, "grid": [1, 1, 1], "block": [32, 1, 1], "inst_executed": n, "thread_inst_executed": thr, "divergent_branch": div,
              "branch": br, "branch_efficiency": 100.0 * (br - div) / br, "flop_count_sp": 2 * thr, "flop_count_dp": 0,
              "flop_count_hp": 0, "blocks": []})
    if est is not None:
        d["time_estimate"] = {"time_us": est, "bound": "latency", "arch": "sm_90", "waves": 1.0, "occupancy": {"occupancy": 1.0}}
    return d


def test_pairs_sums_and_changes(tmp_path):
    a = [_launch("k", 10, 320, i=0, est=2.0), _launch("k", 10, 320, i=1, est=2.0), _launch("old", 5, 160, i=2)]
    b = [_launch("k", 10, 320, i=0, est=2.0), _launch("k", 20, 640, div=5, i=1, est=3.0), _launch("new", 1, 32, i=2)]
    pairs = diff.pair(a, b)
    assert [(p.kernel, p.index, p.a is not None, p.b is not None) for p in pairs] == [
        ("k", 0, True, True), ("k", 1, True, True), ("old", 0, True, False), ("new", 0, False, True)]
    rows = {r["kernel"]: r for r in diff.kernel_rows(pairs)}
    assert rows["k"]["a"]["thread_inst_executed"] == 640 and rows["k"]["b"]["thread_inst_executed"] == 960
    assert rows["k"]["b"]["branch_efficiency"] == 75.0  # (20 - 5) / 20 branches
    text = diff.table(pairs, ("A", "B"))
    assert "thread instr.                   640 ->                960  +50.0%" in text
    assert "est. time us                      4 ->                  5  +25.0%" in text
    assert "launches: 2 paired, 1 changed, 1 only in A, 1 only in B" in text
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    p = run_hypa("diff", tmp_path / "a.json", tmp_path / "b.json", "-o", tmp_path / "d.html")
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "d.html").read_text()
    assert "<h1>hypa diff</h1>" in page and "+50.0%" in page
    # a table per kernel, a row per figure: as narrow however many figures there are
    assert "<tr><td class=k>thread instr.</td><td>640</td><td>960</td><td class=bad>+50.0%</td></tr>" in page


def test_diff_compares_the_kernel_time_without_launch_overhead():
    """Issue 27: removing a conflict showed -5% because the 2.83 us of launch overhead was in
    both times; the kernel's own estimated time is compared too."""
    def est(kernel_us):
        return {"time_us": kernel_us + 2.83, "kernel_us": kernel_us, "launch_overhead_us": 2.83, "bound": "latency",
                "arch": "sm_90", "waves": 1.0, "occupancy": {"occupancy": 1.0}}

    a, b = _launch("k", 10, 320), _launch("k", 10, 320)
    a["time_estimate"], b["time_estimate"] = est(4.0), est(1.0)
    text = diff.table(diff.pair([a], [b]), ("A", "B"))
    assert "est. kernel us                    4 ->                  1  -75.0%" in text
    assert "est. time us                   6.83 ->               3.83  -43.9%" in text


def test_diff_validates_as_report_does(tmp_path):
    """A `--by line` or `--by kernel` file, NaN or a negative count: the error `hypa report`
    gives, not a comparison (issue 27: a `--by line` file compared as "13 vs 1 launches")."""
    good = _launch("k", 10, 320)
    for entry, says in (({**good, "record": "line"}, "entry 0 is a per-line row (`--by line`)"),
                        ({**good, "record": "kernel"}, "entry 0 is a per-kernel row (`--by kernel`)"),
                        ({**good, "inst_executed": float("nan")}, "entry 0 has no valid 'inst_executed'"),
                        ({**good, "thread_inst_executed": -5}, "entry 0 has no valid 'thread_inst_executed'")):
        (tmp_path / "x.json").write_text(json.dumps([entry]))
        (tmp_path / "ok.json").write_text(json.dumps([good]))
        p = run_hypa("diff", tmp_path / "ok.json", tmp_path / "x.json")
        assert p.returncode == 1 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_not_a_profile_is_a_one_line_error(tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1}')
    p = run_hypa("diff", tmp_path / "x.json", tmp_path / "x.json")
    assert p.returncode != 0 and "not a profile" in p.stderr and "Traceback" not in p.stderr
