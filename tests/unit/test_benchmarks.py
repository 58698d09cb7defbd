"""Every benchmark runs in CI (issue 25: nothing re-ran them, so ``benchmarks/workload.py``
broke unnoticed): each script's ``--small`` mode -- and the offline checks of the GPU scripts --
as a user runs it, a fresh process from the repository root with an empty compile cache.  A
small mode exits 1 when its work fails, so a benchmark that fails fails here.  Scripts that
need a tool this machine lacks (nvcc, ptxas) are skipped; without it the script says so itself
(``test_a_missing_tool_is_said_and_skipped``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT


def run_script(script: str, *args: str, tmp_path, path: str | None = None) -> subprocess.CompletedProcess:
    """``python benchmarks/SCRIPT ARGS`` from the repository root, its own compile cache."""
    env = dict(os.environ, HYPA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("HYPA_TRACEBACK", None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, os.path.join("benchmarks", script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


RESULTS = "benchmarks/gpu/results"

#: (script, arguments, tools it needs, a line its output must hold: what it measured)
SMALL = [
    ("cache_replay.py", ["--small"], (), r"^native replay equals the Python reference in 2 cases$"),
    # slice mode's bounds checks (hoisted out of loops, and not) and initcheck: the same counts
    ("emulate.py", ["--bounds", "--small"], (), r"^6 cases, the same counts with bounds_check on and unhoisted and off$"),
    ("emulate.py", ["--initcheck", "--small"], (), r"^6 cases, the same counts with initcheck on and off$"),
    ("emulate.py", ["--schedule", "--small"], (), r"^6 cases, the same counts with schedule on and off$"),
    # racecheck's sample: the same counts, then the cold compile of both variants in new processes
    ("emulate.py", ["--racecheck-sample", "--small"], (),
     r"^cold compile, optimized tier, CPU time, a new process per variant \(median of 1\): [\d.]+ s on / [\d.]+ s off"),
    # hypa run --capture: the tracked and hashed captures store the same files, the replay counts the same
    ("capture.py", ["--small"], ("nvcc",), r"^replay: 20 launches, the same counts as the run$"),
    ("fuzz.py", ["--small"], (), r"^fuzz: seed 20261126, 160 cases in \d+ s$"),
    # the whole-process families: a damaged compile cache, SIGINT/SIGTERM (no crash, no hang)
    ("fuzz.py", ["--target", "cache-entry", "--target", "signal", "--cases", "4", "--seed", "3"], (),
     r"^fuzz: seed 3, 4 cases in \d+ s$"),
    ("module_graph.py", ["--small"], (), r"^\d+ modules, \d+ import edges, 0 cycles, 0 upward imports, 0 private names imported"),
    ("parse.py", ["--small"], (), r"^round trip: (\d+) of \1 files print to a fixpoint$"),
    ("ptxas_agreement.py", ["--small"], ("ptxas",), r"^13 cases: 13 agree with ptxas, 0 accepted but invalid, "
                                                    r"0 rejected but valid$"),
    ("run_programs.py", ["--small"], ("nvcc",), r"^all programs: \d+ thread-instructions in [\d.]+ s warm"),
    # hypa run's flat memory against the captured launch's windows: equal counts (the ratio is
    # what it prints, not asserted)
    ("run_programs.py", ["--flat-ratio", "--small"], ("nvcc",), r"^matvec [\d ]+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+  same$"),
    ("slice_stats.py", ["--small"], (), r"^16 files, 34 kernels, 0 failures, [\d.]+ s$"),
    ("timing_calibrate.py", ["--small"], (), r"^8 of 8 timed launches emulated; the fit kept or lowered the error$"),
    ("timing_validate.py", ["--small"], (), r"^8 of 8 timed launches emulated and estimated$"),
    # cold compilation by phase; auto's tier within 1.0x-2x of the better tier (printed, not timed)
    ("compile.py", ["--small"], (), r"^auto over the better tier, worst: [\d.]+$"),
    # every measurement the README's Speed section quotes, small, under a dated header
    ("speed.py", ["--small"], (), r"^speed: \d+ measurements$"),
    # whole processes over 64 MiB buffers; the 2x module does exactly twice the work
    ("workload.py", ["--small"], (), r"^\| 2x \| 6 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 57 \| 6 \|$"),
    ("gpu/time_kernels.py", ["--dry-run", "tests/kernels/launches", "benchmarks/gpu/launches"], (),
     r"^dry run: (\d+) launches, \d+ ok, 1 call printf, 0 broken$"),
    ("gpu/resnet_compare.py", [f"{RESULTS}/hypa_resnet18.json", f"{RESULTS}/ncu_resnet18.csv",
                               "--check", f"{RESULTS}/resnet18_h100.md"], (),
     r"resnet18_h100\.md: the table regenerated from the recordings matches \(36 launches;"),
]


def _toml_files(args: list[str]) -> list[str]:
    """Folders among ``args`` expanded to their launch files (the shell's ``DIR/*.toml``)."""
    out = []
    for a in args:
        d = ROOT / a
        out += sorted(os.path.relpath(p, ROOT) for p in d.glob("*.toml")) if d.is_dir() else [a]
    return out


@pytest.mark.parametrize("script, args, tools, line", SMALL, ids=[s[0] for s in SMALL])
def test_small_mode_runs_and_passes(script, args, tools, line, tmp_path):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} is not installed")
    p = run_script(script, *_toml_files(args), tmp_path=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "Traceback" not in out, out
    assert re.search(line, p.stdout, re.M), out


def test_every_benchmark_has_a_small_mode():
    """A new script in benchmarks/ gets a small mode and a row above."""
    scripts = {f for f in os.listdir(ROOT / "benchmarks") if f.endswith(".py")}
    covered = {s[0] for s in SMALL}
    assert scripts - covered == set()
    for s in scripts:
        assert "--small" in (ROOT / "benchmarks" / s).read_text(), s


@pytest.mark.parametrize("script, args, line", [
    ("module_graph.py", ["--small", "--root", "{tmp}"], r"^FAIL: 0 modules under .*: not a checkout of hypa$"),
    ("fuzz.py", ["--small", "--target", "emulate-string", "--cases", "2"],
     r"^FAIL emulate-string: no accepted case: the mutations no longer reach both sides$"),
    ("timing_validate.py", ["--small", "{tmp}/times.json"], r"^FAIL: 0 of 1 timed launches estimated$"),
    ("timing_calibrate.py", ["--small", "{tmp}/times.json"], r"^FAIL: 0 of 1 timed launches emulated$"),
    ("gpu/time_kernels.py", ["--dry-run", "{tmp}/bad.toml"], r"^dry run: 1 launches, 0 ok, 0 call printf, 1 broken$"),
    ("gpu/resnet_compare.py", [f"{RESULTS}/hypa_resnet18.json", f"{RESULTS}/ncu_resnet18.csv",
                               "--check", f"{RESULTS}/memory_h100.md"], r"^FAIL .*memory_h100\.md: line 1 differs"),
], ids=["module_graph", "fuzz", "timing_validate", "timing_calibrate", "time_kernels", "resnet_compare"])
def test_a_failing_small_mode_exits_1(script, args, line, tmp_path):
    """The small modes fail when their work does: a count, a launch, a table that is wrong."""
    # a recorded time of a launch whose PTX does not parse; a launch with an argument too many
    (tmp_path / "bad.ptx").write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n")
    (tmp_path / "bad_ptx.toml").write_text(f'[[launch]]\nfile = "{tmp_path}/bad.ptx"\nkernel = "k"\ngrid = 1\nblock = 1\n')
    (tmp_path / "times.json").write_text(
        f'{{"kernels": [{{"toml": "{tmp_path}/bad_ptx.toml", "launch_index": 0, "median_us": 3.0}}]}}')
    (tmp_path / "bad.toml").write_text(
        f'[[launch]]\nfile = "{ROOT}/examples/saxpy.ptx"\nkernel = "saxpy"\ngrid = 1\nblock = 32\nargs = [4, 2.0, "x", "y", 1]\n'
        '[buffers.x]\ndtype = "float32"\ncount = 4\n[buffers.y]\ndtype = "float32"\ncount = 4\n')
    p = run_script(script, *(a.replace("{tmp}", str(tmp_path)) for a in args), tmp_path=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(line, p.stdout, re.M), p.stdout + p.stderr


@pytest.mark.parametrize("script, line", [
    ("ptxas_agreement.py", "skipped: ptxas is not on the PATH"),
    ("run_programs.py", "skipped: nvcc is not on the PATH (the programs are built with nvcc -cudart shared)"),
])
def test_a_missing_tool_is_said_and_skipped(script, line, tmp_path):
    p = run_script(script, "--small", tmp_path=tmp_path, path=str(tmp_path))
    assert (p.returncode, p.stdout.strip()) == (0, line), p.stderr
