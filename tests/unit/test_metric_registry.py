"""The metric registry (runtime/metrics/registry.py) and the counter view: a metric declared
once is what the launch's metrics, the table, the CSV, the per-kernel sums and ``hypa diff``
show; ratios over launches come from the summed counts, never an average."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hypa.runtime.metrics import registry
from hypa.runtime.metrics.counters import CounterView
from hypa.runtime.report import diff, tables

from helpers import emulate, kernel, store_at_tid

KERNELS = os.path.join(os.path.dirname(__file__), "..", "kernels")

# lanes 0..15 take the then block, the rest the else block (test_emulator_metrics.py works the
# counts out by hand): 64 threads -> 21 warp- and 624 thread-instructions, 4 branches, 1
# divergent; 32 threads -> 11 and 304, 2 branches, 1 divergent
IF_ELSE = kernel("div(.param .u64 div_out)", """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra $L_then;
    mul.lo.s32 %r2, %r1, 3;
    bra.uni $L_join;
$L_then:
    mul.lo.s32 %r2, %r1, 5;
$L_join:
""" + store_at_tid("div_out", "%r2"))


def run(block: int, **kw):
    return emulate(IF_ELSE, ["out"], {"out": np.zeros(64, np.uint32)}, block=block, **kw)


#: SIMD efficiency: active lanes per warp-instruction, in % of 32
SIMD = registry.Metric("simd_efficiency", registry.RATIO, (("thread_inst_executed", 1),), "inst_executed",
                       scale=100.0 / 32, empty=100.0, unit="%", label="SIMD eff. %", higher_is_better=True)


def test_a_ratio_added_to_the_registry_is_in_every_output(monkeypatch):
    monkeypatch.setattr(registry, "LAUNCH", [*registry.LAUNCH, SIMD])
    monkeypatch.setattr(registry, "DIFF", [*registry.DIFF, "simd_efficiency"])
    r64, r32 = run(64), run(32)
    assert (r64.metrics["inst_executed"], r64.metrics["thread_inst_executed"]) == (21, 624)
    assert (r32.metrics["inst_executed"], r32.metrics["thread_inst_executed"]) == (11, 304)
    assert r64.metrics["simd_efficiency"] == pytest.approx(100 * 624 / (32 * 21))  # 92.857
    assert r32.metrics["simd_efficiency"] == pytest.approx(100 * 304 / (32 * 11))  # 86.364
    assert "  simd_efficiency                                     92.86 %" in tables.to_table([r64])
    head, row = tables.to_csv([r64]).splitlines()
    assert head.split(",")[-2:] == ["simd_efficiency", "duration_ms"] and row.split(",")[-2] == "92.8571"
    # two launches of one kernel: the ratio of the summed counts, 928 / (32 x 32), not the mean
    d64, d32 = r64.as_dict(), r32.as_dict()
    (g,) = tables.by_kernel([d64, d32])
    assert g["simd_efficiency"] == 90.625 != (d64["simd_efficiency"] + d32["simd_efficiency"]) / 2
    text = diff.table(diff.pair([d64], [d32]), ("A", "B"))
    assert "    SIMD eff. %                   92.86 ->              86.36  -7.0%" in text


def test_ratios_over_launches_are_ratios_of_summed_counts():
    r64, r32 = run(64), run(32)  # slice mode: mov, setp, bra of each thread are emulated
    assert [(r.metrics["branch"], r.metrics["divergent_branch"]) for r in (r64, r32)] == [(4, 1), (2, 1)]
    assert (r64.metrics["branch_efficiency"], r32.metrics["branch_efficiency"]) == (75.0, 50.0)
    assert r64.metrics["executed_fraction"] == 3 * 64 / 624 and r32.metrics["executed_fraction"] == 3 * 32 / 304
    dicts = [r64.as_dict(), r32.as_dict()]
    (g,) = tables.by_kernel(dicts)
    assert g["branch_efficiency"] == 100.0 * (6 - 2) / 6  # 66.67, not the mean 62.5
    assert g["executed_fraction"] == pytest.approx((3 * 64 + 3 * 32) / (624 + 304), abs=1e-15)  # 0.3103
    assert g["thread_inst_executed"] == 928 and g["static_instructions"] == 11
    rows = diff.kernel_rows(diff.pair(dicts, dicts[:1]))
    assert rows[0]["a"]["branch_efficiency"] == g["branch_efficiency"] and rows[0]["b"]["branch_efficiency"] == 75.0


def test_the_gpu_harness_gets_its_ratios_from_the_registry():
    # CounterMap.metrics (passes/instrument.py) gives counts; the ratios they determine are added
    counts = {"inst_executed": 21, "thread_inst_executed": 624, "branch": 4, "divergent_branch": 1}
    assert registry.with_ratios(counts) == {**counts, "branch_efficiency": 75.0}  # no executed_fraction


def test_the_counter_view_decodes_blocks_guards_and_memory():
    r = run(64, mode="full", memory_metrics=True, exact_predicates=True)
    view = CounterView(r.program, r.counters)
    names = [r.program.cfg.name(b) for b in range(r.program.num_blocks)]
    by_name = {n: (view.warps[b], view.threads[b], view.divergent[b]) for b, n in enumerate(names)}
    assert by_name == {"bb0": (2, 64, 1), "bb1": (2, 48, 0), "$L_then": (1, 16, 0), "$L_join": (2, 64, 0)}
    assert view.taken[names.index("bb0")] == 16  # lanes 0..15 branch to $L_then
    assert view.warp_slots[:3] == [11, 10, 0]  # warp 0 runs both sides, warp 1 the else side
    ((op, c),) = list(view.memory_ops())
    assert op.opcode == "st.global.u32" and c == (2, 8, 2, 0, 0)  # 2 warps x 128 contiguous bytes
    m = r.metrics.memory
    assert (m["global_st_requests"], m["global_st_sectors"], m["global_st_sectors_per_request"]) == (2, 8, 4.0)
    assert r.metrics.memory_instructions[0].as_dict()["sectors_per_request"] == 4.0


def test_the_source_view_and_the_metrics_agree_on_cp_async():
    # cp.async reads global memory: its sectors are counted (the lowering), the launch's memory
    # metrics say global, and so does its row of the source view (it once said shared)
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import launches_from_toml
    from hypa.runtime.report.source_view import instruction_rows, row_dict

    path = os.path.join(KERNELS, "launches", "cp_async.toml")
    (launch,) = launches_from_toml(path)
    with open(launch.file) as f:
        r = Emulator(parse_ptx(f.read()), mode="full", memory_metrics=True).run(launch)
    copies = [mi for mi in r.metrics.memory_instructions if mi.instruction.startswith("cp.async")]
    texts = [mi.instruction for mi in copies]
    rows = [row_dict(x) for x in instruction_rows(r.program, r.counters, {}) if x.text in texts]
    assert len(copies) == len(rows) == 2 and {mi.space for mi in copies} == {"global"}
    assert [(d["space"], d["requests"], d["sectors"]) for d in rows] == [("global", mi.requests, mi.sectors) for mi in copies]
    assert [d["sectors_per_request"] for d in rows] == [mi.value("sectors_per_request") for mi in copies] == [63 / 16] * 2
