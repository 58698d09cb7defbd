"""How the warps and CTAs of a launch take turns (``EmulationOptions.schedule``; docs/design.md,
"Execution model"), and cooperative launches, whose CTAs wait for each other at a grid barrier.

The programs of tests/cuda_programs/schedule/ were run 5 times on an H100
(benchmarks/gpu/schedule_native.sh -> tests/ground_truth/hypa_run/schedule_native.json); under
``hypa run`` (the interleaved schedule) they print what it printed.  That the interleaved
schedule counts as the warp schedule does on race-free kernels is
tests/unit/test_kernels_full.py's ``test_interleaved_schedule_gives_the_same_results``.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from helpers import ROOT, nvcc, run_hypa

SCHEDULE_PROGRAMS = ROOT / "tests" / "cuda_programs" / "schedule"
NATIVE = json.loads((ROOT / "tests" / "ground_truth" / "hypa_run" / "schedule_native.json").read_text())
needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    out = tmp_path_factory.mktemp("schedule")
    exes = {}
    for name in ("warp_races", "cooperative"):
        b = nvcc(SCHEDULE_PROGRAMS / f"{name}.cu", out / name, "-O3")
        assert b.returncode == 0, b.stderr
        exes[name] = str(out / name)
    return exes


@pytest.mark.parametrize("name", ["warp_races", "cooperative"])
def test_program_prints_what_the_h100_prints(built, name):
    runs = set(NATIVE["programs"][name])
    assert len(runs) == 1  # the GPU printed the same 5 times
    r = run_hypa("run", "--", built[name], timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout == runs.pop()
    races = [ln for ln in r.stderr.splitlines() if "racecheck" in ln]
    if name == "cooperative":
        assert races == []
    else:  # racecheck's sample (on by default): CTA 0 of chunks' launch, half of --racecheck's 2 CTAs' 2560
        assert len(races) == 1 and races[0].startswith(
            "note: racecheck: 1280 shared-memory hazards between threads of a CTA with no barrier between the "
            "accesses (1280 WAR); the first: kernel chunks(int const*, int*, int), CTA (0, 0, 0): WAR hazard")
        assert races[0].endswith("(racecheck's sample: the first CTA of the kernel's first launch; --racecheck "
                                 "checks every CTA of every launch)")


def test_warp_schedule_loses_the_races(built):
    """``--schedule warp`` runs each warp to its barrier or its end: mvt's 8 warps each add the
    whole row (9 times the sums), and the warps after the first read the next chunk's values."""
    r = run_hypa("run", "--schedule", "warp", "--", built["warp_races"], timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("rows: x[0] = 9049, x[191] = 9209, 192 of 192 wrong\n"
                        "chunks: out[0] = 1104, out[511] = 1467, 64 of 512 wrong\nFAIL\n")


def test_racecheck_names_the_shared_memory_race(built):
    """The chunks kernel's refill after the last read of a round is a write-after-read hazard
    between warps that the interleaved schedule resolves as the GPU does: --racecheck names it
    (rows' race is on global memory, which racecheck does not watch, as compute-sanitizer's)."""
    r = run_hypa("run", "--racecheck", "--", built["warp_races"], timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout == set(NATIVE["programs"]["warp_races"]).pop()
    assert ("racecheck: 2560 shared-memory hazards between threads of a CTA with no barrier between the accesses "
            "(2560 WAR); the first: kernel chunks(int const*, int*, int), CTA (0, 0, 0): WAR hazard at shared offset "
            "0x0: thread (0, 0, 0) writes it with st.shared.u32") in r.stderr
    assert "after thread (224, 0, 0) read it with ld.shared.u32" in r.stderr


KERNEL = r"""
#include <cooperative_groups.h>
__global__ void late(int *a, int n) {
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    if (blockIdx.x == 1) return;  // never reaches the grid barrier: the others wait for ever
    a[g.thread_rank()] = 1;
    g.sync();
    a[g.thread_rank()] += 1;
}
__global__ void rounds(int *a, int *b, int n) {
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    int i = g.thread_rank();
    for (int r = 0; r < 3; r++) {
        b[i] = a[(i + 1) % n] + 1;  // reads another CTA's element for the last thread of each
        g.sync();
        a[i] = b[i];
        g.sync();
    }
}
"""


@pytest.fixture(scope="module")
def grid_ptx(tmp_path_factory):
    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    d = tmp_path_factory.mktemp("grid")
    (d / "k.cu").write_text(KERNEL)
    p = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-ptx", str(d / "k.cu"), "-o", str(d / "k.ptx")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    from hypa.ptxdialect import parse_ptx_file

    return parse_ptx_file(str(d / "k.ptx"))


def _launch(module, kernel, grid, block, n, cooperative=True, **options):
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import Launch

    a = np.arange(n, dtype=np.int32) * 7
    args = [a, np.zeros(n, np.int32), n] if kernel == "rounds" else [a, n]
    name = "_Z6roundsPiS_i" if kernel == "rounds" else "_Z4latePii"
    return Emulator(module, mode="full", **options).run(
        Launch(kernel=name, grid=grid, block=block, args=args, cooperative=cooperative))


def test_grid_barrier_rounds(grid_ptx):
    """Six grid barriers: every CTA's writes before one are seen by every CTA after it."""
    r = _launch(grid_ptx, "rounds", 6, 64, 384)
    out = r.buffers["<array 0>"]
    assert np.array_equal(out, (np.arange(384) + 3) % 384 * 7 + 3)
    # a plain launch of a grid-syncing kernel runs the same way (an H100 gives it a workspace)
    plain = _launch(grid_ptx, "rounds", 6, 64, 384, cooperative=False)
    assert np.array_equal(plain.buffers["<array 0>"], out)
    assert any("syncs the grid" in n for n in plain.notes)


def test_grid_barrier_that_a_cta_never_reaches_is_a_deadlock(grid_ptx):
    from hypa.runtime.emulator.emulator import EmulationError

    with pytest.raises(EmulationError, match="deadlock"):
        _launch(grid_ptx, "late", 4, 32, 128, step_budget=10**8)


def test_cooperative_launch_has_no_cta_ranges(grid_ptx):
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import Launch, LaunchError

    launch = Launch(kernel="_Z6roundsPiS_i", grid=4, block=32, args=[np.zeros(128, np.int32)] * 2 + [128],
                    cooperative=True)
    with pytest.raises(LaunchError, match="cooperative launch runs its whole grid at once"):
        Emulator(grid_ptx, mode="full").run(launch, ctas=(0, 2))


def test_launch_spec_cooperative_key(tmp_path):
    from hypa.runtime.emulator.launch import LaunchError, launches_from_toml

    spec = tmp_path / "l.toml"
    spec.write_text('[[launch]]\nkernel = "k"\ngrid = 2\nblock = 32\ncooperative = true\n')
    assert launches_from_toml(str(spec))[0].cooperative is True
    spec.write_text('[[launch]]\nkernel = "k"\ngrid = 2\nblock = 32\ncooperative = "yes"\n')
    with pytest.raises(LaunchError, match="cooperative must be true or false, not 'yes'"):
        launches_from_toml(str(spec))
