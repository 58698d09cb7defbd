"""Local memory in the memory metrics, against Nsight Compute on an H200.

A thread's local memory is interleaved with its warp's other threads a 32-bit word at a time,
so an access's sectors depend on how many different words its lanes touch (``local_rmw``:
a per-thread array incremented at indices from a per-lane LCG, or at one index a warp).  The
counts below are ncu's (``tests/ground_truth/h200/local_memory.json``, with the command that
recorded them); HeCBench entropy's three launches there (blind set E, kept out of the
repository) matched the same way when the interleaving was added."""

from __future__ import annotations

import json

import pytest

from helpers import ROOT

from hypa.ptxdialect import parse_ptx_file
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import launches_from_toml

RECORDED = json.loads((ROOT / "tests/ground_truth/h200/local_memory.json").read_text())
CALIBRATION = [L for L in RECORDED["launches"] if L["toml"].startswith("benchmarks/")]


@pytest.fixture(scope="module")
def emulated():
    launches = launches_from_toml(ROOT / CALIBRATION[0]["toml"])
    emu = Emulator(parse_ptx_file(launches[CALIBRATION[0]["launch_index"]].file), memory_metrics=True)
    return {rec["launch_index"]: emu.run(launches[rec["launch_index"]]).metrics.memory for rec in CALIBRATION}


@pytest.mark.parametrize("rec", CALIBRATION, ids=lambda r: f"calibration[{r['launch_index']}]")
def test_local_requests_and_sectors_are_nsight_computes(rec, emulated):
    got = emulated[rec["launch_index"]]
    for d in ("ld", "st"):
        assert got[f"local_{d}_requests"] == rec[f"l1tex__t_requests_pipe_lsu_mem_local_op_{d}.sum"]
        assert got[f"local_{d}_sectors"] == rec[f"l1tex__t_sectors_pipe_lsu_mem_local_op_{d}.sum"]
