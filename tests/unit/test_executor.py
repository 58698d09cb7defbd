"""The executor layer (runtime/emulator/executor.py): outcomes in task order wherever tasks run,
errors reported as the callers expect, a dead worker costing only its task."""

import operator
import os
import signal
import time

import numpy as np
import pytest
from hypa.ptxdialect import parse_ptx_file
from hypa.runtime.emulator.options import EmulationOptions
from hypa.runtime.report.batch import ProfileOptions, run_profile, run_unit
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.executor import DaskCluster, Forked, InProcess, TaskFailed
from hypa.runtime.emulator.launch import launches_from_toml

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")


def _square_slowly(k: int) -> int:
    time.sleep(0.02 * (k % 3))  # uneven tasks: they finish out of order
    return k * k


def test_in_process_and_forked_give_the_outcomes_in_task_order():
    tasks = [(k,) for k in range(7)]
    for ex in (InProcess(), Forked(3)):
        seen: list[int] = []
        out = ex.map(_square_slowly, tasks, done=lambda k, _r, seen=seen: seen.append(k))
        assert out == [k * k for k in range(7)], ex.where
        assert sorted(seen) == list(range(7))
    assert Forked(3).where == "local pool of 3 processes" and InProcess().where == "this process"
    assert Forked(4).map(_square_slowly, []) == []


def test_forked_workers_see_this_process_s_objects():
    table = {"a": lambda x: x + 1}  # a lambda: nothing here could be pickled to a worker
    assert Forked(2).map(lambda name, x: table[name](x), [("a", 1), ("a", 2), ("a", 3)]) == [2, 3, 4]


def test_stop_skips_the_rest_only_where_tasks_run_one_after_another():
    tasks = [(k,) for k in range(5)]
    assert InProcess().map(lambda k: k, tasks, stop=lambda r: r == 1) == [0, 1, None, None, None]
    assert Forked(2).map(lambda k: k, tasks, stop=lambda r: r == 1) == [0, 1, 2, 3, 4]


def test_an_exception_in_a_task_is_raised_here():
    def fn(k):
        if k == 2:
            raise ValueError("boom in task 2")
        return k

    for ex in (InProcess(), Forked(2)):
        with pytest.raises(ValueError, match="boom in task 2"):
            ex.map(fn, [(k,) for k in range(4)])


def test_a_dead_worker_costs_only_its_task():
    def fn(k):
        if k == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return k

    out = Forked(2).map(fn, [(k,) for k in range(5)])
    assert [out[k] for k in (0, 2, 3, 4)] == [0, 2, 3, 4]
    assert isinstance(out[1], TaskFailed) and str(out[1]) == "a worker process died (signal SIGKILL)"


def test_launch_errors_are_the_same_message_here_and_in_workers():
    emu = Emulator(parse_ptx_file(os.path.join(KERNELS, "ptx", "saxpy.sm_80.ptx")), mode="full")
    launch = launches_from_toml(os.path.join(KERNELS, "launches", "saxpy.toml"))[0]  # 4 CTAs
    tasks = [(emu, launch, None, False), (emu, launch, (2, 9), False), (emu, launch, (0, 1), True)]
    here = InProcess().map(run_unit, tasks)
    forked = Forked(2).map(run_unit, tasks)
    assert here[1] == forked[1] == "CTA range [2, 9) is outside the grid of 4 CTAs"
    for a, b in zip(here[::2], forked[::2]):
        assert a.metrics.values == b.metrics.values and a.ctas == b.ctas and a.per_cta == b.per_cta
        assert not a.buffers and not b.buffers  # results come back without the launch's memory
    kept = run_unit(emu, launch, None, False, keep_memory=True)
    x, y = launch.materialize_buffers()["x"], launch.materialize_buffers()["y"]
    assert np.allclose(kept.buffers["y"][:1000], 2.5 * x[:1000] + y[:1000])  # y = a * x + y (fma: rounded once)


def _profile_errors(**kw) -> tuple[str, list]:
    toml = os.path.join(KERNELS, "launches", "saxpy.toml")  # two launches of several CTAs
    p = run_profile([], [toml], ProfileOptions(emulation=EmulationOptions(step_budget=20), **kw), progress=False)
    return p.where, [(r.error, r.result is None) for r in p.records]


def test_profile_errors_are_the_same_wherever_the_units_run():
    where, here = _profile_errors()
    assert where == "this process"
    message = ("step budget of 20 warp-instructions exhausted before CTA (1, 0, 0) of kernel saxpy started "
               "(1 CTAs ran; raise it with --step-budget)")
    assert here[0] == (message, True)
    assert _profile_errors(jobs=2) == ("local pool of 2 processes", here)
    assert _profile_errors(fail_fast=True)[1] == [here[0], (None, True)]  # the rest not run


def test_dask_cluster_gives_the_outcomes_in_task_order_and_reports_failed_tasks():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    try:
        with DaskCluster(cluster.scheduler_address) as ex:
            assert not ex.shares_memory and ex.where == f"Dask scheduler {cluster.scheduler_address}"
            big = ex.share(list(range(1000)))
            done: list[int] = []
            out = ex.map(operator.getitem, [(big, 3), (big, 999), (big, 5000)], done=lambda k, r: done.append(k))
            assert out[:2] == [3, 999] and sorted(done) == [0, 1, 2]
            assert isinstance(out[2], TaskFailed)
            assert str(out[2]) == "Dask task failed: IndexError: list index out of range"
        address = cluster.scheduler_address
        assert _profile_errors(scheduler=address) == (f"Dask scheduler {address}", _profile_errors()[1])
    finally:
        cluster.close()


def test_optimized_tier_matches_baseline_on_atan(monkeypatch):
    """atanf's copysign/select miscompiled by LLVM's x86 code generator above level 0 after -O3
    (runtime/emulator/jit.py TIERS): both tiers must give the same 9,999 results."""
    import numpy as np

    from helpers import ROOT, emulate

    ptx = (ROOT / "tests" / "unit" / "data" / "atan_select.ptx").read_text()
    n = 9999
    out = {}
    for tier in ("baseline", "optimized"):
        monkeypatch.setenv("HYPA_JIT", tier)
        monkeypatch.setenv("HYPA_NO_CACHE", "1")
        r = emulate(ptx, ["o", n, 0.0, 0.0, 2.0, 9999.0, 99.0, np.float32(1.0 / 9999)], {"o": np.zeros(n, np.float32)},
                    grid=(n + 255) // 256, block=256, mode="full")
        assert r.jit_tier == tier
        out[tier] = r.buffers["o"]
    assert np.array_equal(out["baseline"], out["optimized"])
    assert abs(float(out["baseline"][100]) - 0.44766179) < 1e-6  # atan((h - 2) / |(dx, dy) step|), by hand
