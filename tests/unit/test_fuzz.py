"""A short deterministic slice of benchmarks/fuzz.py in CI, and the defects it found as
regression tests: malformed inputs are messages, never exceptions of another kind."""

from __future__ import annotations

import json
import os

import pytest

from hypa.runtime.emulator.launch import LaunchError, launch_from_cli, launches_from_dict

from helpers import ROOT, kernel, load_script, run_hypa, run_hypa_opt


def test_a_deterministic_campaign_has_no_crash():
    fuzz = load_script("benchmarks/fuzz.py")
    counts = fuzz.campaign(["emulate-string", "launch-spec", "ptx", "report-json"], cases=400, seconds=None,
                           seed=20261126, quiet=True)
    assert all(c["crash"] == 0 for c in counts.values()), counts
    assert all(c["accepted"] > 0 and c["rejected"] > 0 for c in counts.values()), counts  # both sides exercised


def test_a_hang_is_cpu_time_not_a_slow_machine(monkeypatch):
    """A case is a hang past ``case_seconds`` of CPU time (a spin), or ten times that of wall
    time (blocked); a case that only waits longer than ``case_seconds`` -- what a loaded
    machine does to a slow case -- is not one."""
    import time

    fuzz = load_script("benchmarks/fuzz.py")

    def spin(self, rng):
        end = time.process_time() + 5
        while time.process_time() < end:
            pass
        return "accepted", ""

    def wait(self, rng):
        time.sleep(1.5)
        return "accepted", ""

    monkeypatch.setattr(fuzz.Targets, "spin", spin, raising=False)
    monkeypatch.setattr(fuzz.Targets, "wait", wait, raising=False)
    monkeypatch.setitem(fuzz.TARGETS, "spin", "spin")
    monkeypatch.setitem(fuzz.TARGETS, "wait", "wait")
    counts = fuzz.campaign(["spin", "wait"], cases=2, seconds=None, seed=1, quiet=True, case_seconds=1)
    assert counts["spin"]["hang"] == 1 and counts["wait"]["accepted"] == 1, counts


@pytest.mark.parametrize("spec, message", [
    ({"launch": [{"grid": [1, "x"], "block": 1}]}, "grid must be an integer or a list"),
    ({"launch": [{"grid": 1.5, "block": 1}]}, "grid must be an integer or a list"),
    ({"launch": 3}, "launch must be an array of tables"),
    ({"launch": [{"grid": 1, "block": 1}], "buffers": [1]}, "buffers must be a table of tables"),
    ({"launch": [{"grid": 1, "block": 1, "args": 5}]}, "args must be a list"),
    ({"launch": [{"grid": 1, "block": 1, "args": [None]}]}, "an argument must be a number"),
    ({"launch": [{"grid": 1, "block": 1, "kernel": 7}]}, "kernel must be a name"),
])
def test_malformed_launch_specs_are_messages(spec, message):
    with pytest.raises(LaunchError, match=message):
        launches_from_dict(spec)


@pytest.mark.parametrize("text, message", [
    ("grid=4@ block=1", "grid must be an integer"),
    ("grid=1 block=1 shared=0x", "--emulate: invalid literal"),
    ("grid=1 block=1 buffer.x=float32:-1:zeros", "count -1 is negative"),
    ("grid=1 block=1 buffer.x=float32:4:random=a..b", "unknown init"),
])
def test_malformed_emulate_strings_are_messages(text, message):
    with pytest.raises(LaunchError, match=message):
        launch_from_cli(text)


def test_bad_random_initialisers_are_messages():
    (launch,) = launches_from_dict({"launch": [{"grid": 1, "block": 1, "args": ["x"]}],
                                    "buffers": {"x": {"dtype": "int32", "count": 4, "init": {"random": {"seed": -1}}}}})
    with pytest.raises(LaunchError, match="buffer 'x'"):
        launch.materialize_buffers()
    (launch,) = launches_from_dict({"launch": [{"grid": 1, "block": 1, "args": ["x"]}],
                                    "buffers": {"x": {"dtype": "int32", "count": 4, "init": {"random": 3}}}})
    with pytest.raises(LaunchError, match="random must be a table"):
        launch.materialize_buffers()


def test_damaged_report_json_is_a_message_and_bugs_are_reported_as_such(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"kernel": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "blocks": []}]))
    p = run_hypa("report", bad, "-o", tmp_path / "r.html")
    assert p.returncode == 1 and "has no valid 'static_instructions'" in p.stderr and "Traceback" not in p.stderr


def test_a_buffer_larger_than_a_gpu_or_this_machine_is_a_message():
    (launch,) = launches_from_dict({"launch": [{"grid": 1, "block": 1, "args": ["x"]}],
                                    "buffers": {"x": {"dtype": "float32", "count": 10**12}}})
    with pytest.raises(LaunchError, match=r"4,000,000,000,000 bytes, more than"):
        launch.materialize_buffers()


@pytest.mark.parametrize("line, message", [
    ("clock_mhz = 1980 ", "core.clock_mhz must be positive, not 0.0"),
    ("launch_overhead_us = ", "core.launch_overhead_us must be zero or more"),
    # found by the 2026-11-28 campaign (an infinite, NaN or division-by-zero estimate)
    ("sm_overlap = ", "core.sm_overlap must be a share from 0 to 1, not inf"),
    ("bound_overlap = ", "core.bound_overlap must be a share from 0 to 1, not nan"),
    ("dram_efficiency = ", "memory.dram_efficiency must be positive, not 0"),
])
def test_architecture_files_are_validated(tmp_path, line, message):
    from hypa.runtime.models.timing import TimingError, load_arch

    text = open(os.path.join(ROOT, "runtime", "models", "arch", "sm_90.toml")).read()
    start = text.index(line)
    end = text.index("\n", start)
    value = {"sm_overlap = ": "inf", "bound_overlap = ": "nan", "dram_efficiency = ": "0"}.get(
        line, "0" if "clock" in line else "-100")
    bad = tmp_path / "bad.toml"
    bad.write_text(text[:start] + line.split("=")[0] + "= " + value + text[end:])
    with pytest.raises(TimingError, match=message):
        load_arch(str(bad))


def test_barrier_ids_beyond_15_are_refused_not_aliased(tmp_path):
    f = tmp_path / "bar.ptx"
    f.write_text(kernel("k()", "    bar.sync 20;\n    ret;\n", regs="", target="sm_90"))
    p = run_hypa_opt(f, "--emulate=grid=1 block=32")
    # refused where the file is read, with ptxas's range (docs/guide.md, "Diagnostics")
    assert p.returncode == 1 and "bar.ptx:7:14: error: barrier number 20 out of range, expected to be in range [0..15]" \
        in p.stderr
