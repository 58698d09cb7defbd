"""Warm runs skip the passes: a kernel prepared before (same text up to its names, same
options, same sources) is made from its record (``program.PreparedSummary``) as a
``ReusedProgram``, with exactly the counts, notes and launch facts of a whole preparation;
a damaged or mismatching record is prepared again, never trusted."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hypa.ptxdialect import parse_ptx, parse_ptx_file
from hypa.runtime.emulator import jit, phases
from hypa.runtime.emulator import program as P
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import Launch, LaunchError, launches_from_toml

from helpers import HEADER, LAUNCHES

#: launches whose kernels need no inlining (what a record serves): loops, shared memory,
#: guards, divergence, atomics, warp functions
CASES = ("divergence", "spmv_csr", "reduce_shared", "histogram", "stencil", "scan", "warp_vote")
OPTIONS = (dict(mode="slice"), dict(mode="full"), dict(mode="slice", memory_metrics=True),
           dict(mode="slice", bounds_check=False), dict(mode="slice", hoist_checks=False))


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache on disk and in this process (compiled code and records)."""
    monkeypatch.setenv("HYPA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(jit, "_engines", {})
    monkeypatch.setattr(P, "_summaries", {})
    return tmp_path


def _launch(case: str) -> Launch:
    return launches_from_toml(os.path.join(LAUNCHES, f"{case}.toml"))[0]


def _facts(r) -> dict:
    d = r.as_dict()
    d.pop("duration_ms")
    d.pop("notes", None)
    return {"result": d, "notes": [n for n in r.notes if "from the cache" not in n],
            "read": r.program.read_parameters(),
            "buffer_reads": [(r.program.instr_ids[op], ps) for op, ps in r.program.buffer_reads()],
            "counters": r.counters.tolist(), "buffers": {k: v.tobytes() for k, v in r.buffers.items()}}


@pytest.mark.parametrize("case", CASES)
def test_a_reused_program_counts_as_a_whole_preparation(fresh, case):
    launch = _launch(case)
    module = parse_ptx_file(launch.file)
    for opts in OPTIONS:
        first = Emulator(module, **opts)
        whole = first.run(launch)
        assert type(whole.program) is P.KernelProgram
        phases.reset()
        again = Emulator(module, **opts)  # compiled code from this process: nothing lowered
        r = again.run(launch)
        assert type(r.program) is P.ReusedProgram and not r.program.materialized, opts
        assert phases.work()["kernels prepared from a record (passes skipped)"] == 1
        assert _facts(r) == _facts(whole), (case, opts)
        assert r.program.num_counters == whole.program.num_counters
        assert r.program.frame_bytes == whole.program.frame_bytes


def test_a_record_outlives_the_process_and_lowering_prepares_again(fresh, monkeypatch):
    """From the disk alone (a new process), and with no compiled code left: lowering reads the
    frame slots, so the program prepares again -- the same counts either way."""
    launch = _launch("divergence")
    module = parse_ptx_file(launch.file)
    whole = Emulator(module).run(launch)
    assert [p.suffix for p in fresh.iterdir()].count(".rec") == 1
    monkeypatch.setattr(P, "_summaries", {})
    r = Emulator(module).run(launch)
    assert type(r.program) is P.ReusedProgram and not r.program.materialized
    assert _facts(r) == _facts(whole)
    for p in fresh.iterdir():
        if p.suffix == ".o":
            p.unlink()
    monkeypatch.setattr(jit, "_engines", {})
    monkeypatch.setattr(P, "_summaries", {})
    r = Emulator(module).run(launch)
    assert r.program.materialized and r.program.slots  # lowered from the whole preparation
    assert _facts(r) == _facts(whole)


FUSION = """
.visible .entry NAME(.param .u64 NAME_in, .param .u64 NAME_out, .param .u32 NAME_n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [NAME_in];
    ld.param.u64 %rd2, [NAME_out];
    ld.param.u32 %r1, [NAME_n];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra NAME_done;
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    mov.u32 %r3, 0;
NAME_loop:
    fma.rn.f32 %f1, %f1, 0f3F000000, 0f3F800000;
    add.s32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r2;
    @%p2 bra NAME_loop;
    add.s64 %rd7, %rd4, %rd5;
    st.global.f32 [%rd7], %f1;
NAME_done:
    ret;
}
"""


def test_kernels_that_differ_only_in_names_share_a_record(fresh):
    """An XLA module's copies of one fusion: the second copy reuses the first one's record,
    with its own names in every report, and the counts of its own whole preparation."""
    text = HEADER + FUSION.replace("NAME", "fusion_1") + FUSION.replace("NAME", "copy_7")
    module = parse_ptx(text)

    def run(emu, name):
        return emu.run(Launch(kernel=name, grid=1, block=64, args=["in", "out", 40],
                              buffers={"in": np.arange(64, dtype=np.float32), "out": np.zeros(64, np.float32)}))

    emu = Emulator(module)
    a, b = run(emu, "fusion_1"), run(emu, "copy_7")
    assert type(a.program) is P.KernelProgram and type(b.program) is P.ReusedProgram
    assert a.program.key == b.program.key
    assert b.kernel == "copy_7" and [p[0] for p in b.program.params] == ["copy_7_in", "copy_7_out", "copy_7_n"]
    names = [b.program.cfg.name(i) for i in range(b.program.num_blocks)]
    assert "copy_7_loop" in names and "copy_7_done" in names
    assert b.program.read_parameters() == a.program.read_parameters() == set()  # the slice reads no buffer
    assert a.metrics.values == b.metrics.values and a.metrics.values["divergent_branch"] > 0
    P._summaries.clear()
    assert type(run(Emulator(module), "copy_7").program) is P.ReusedProgram  # the record on disk
    for p in fresh.iterdir():
        p.unlink()
    P._summaries.clear()
    jit._engines.clear()
    whole = run(Emulator(module), "copy_7")
    assert type(whole.program) is P.KernelProgram
    assert _facts(whole) == _facts(b)
    assert [whole.program.cfg.name(i) for i in range(whole.program.num_blocks)] == names


def test_options_that_change_preparation_have_their_own_records(fresh):
    launch = _launch("spmv_csr")
    module = parse_ptx_file(launch.file)
    keys = {Emulator(module, **opts).program(launch.kernel).key for opts in OPTIONS}
    assert len(keys) == len(OPTIONS)
    assert sorted(p.suffix for p in fresh.iterdir()).count(".rec") == len(OPTIONS)


def _record(cache) -> str:
    (rec,) = [p for p in cache.iterdir() if p.suffix == ".rec"]
    return str(rec)


def test_a_damaged_record_is_prepared_again(fresh, monkeypatch, capsys):
    launch = _launch("stencil")
    module = parse_ptx_file(launch.file)
    whole = Emulator(module).run(launch)
    path = _record(fresh)
    data = open(path, "rb").read()
    for damage in (b"", data[:40], data[:-1] + b"x", b"HYPAPREP0" + data[9:]):
        with open(path, "wb") as f:
            f.write(damage)
        monkeypatch.setattr(P, "_summaries", {})
        r = Emulator(module).run(launch)
        assert type(r.program) is P.KernelProgram
        assert "damaged entry in the compile cache" in capsys.readouterr().err
        assert _facts(r) == _facts(whole)
        assert open(path, "rb").read() == data  # written anew


def test_a_record_that_does_not_fit_the_kernel_is_prepared_again(fresh, monkeypatch):
    """A well-sealed record whose shape or indices do not match the kernel (another format's
    bug, a hash collision) is not trusted either."""
    launch = _launch("histogram")
    module = parse_ptx_file(launch.file)
    whole = Emulator(module).run(launch)
    key = whole.program.key
    good = P._summaries[key]
    bad = (P.PreparedSummary(good.fingerprint[::-1], *list(good.__dict__.values())[1:]),
           P.PreparedSummary(*list(good.__dict__.values())[:2], (10 ** 6,), *list(good.__dict__.values())[3:]))
    for summary in bad:
        jit.write_record(P._record_name(key), P.PREPARED_MAGIC, summary.to_bytes())
        monkeypatch.setattr(P, "_summaries", {})
        phases.reset()
        r = Emulator(module).run(launch)
        assert type(r.program) is P.KernelProgram
        assert phases.work()["prepared programs whose record did not fit (prepared again)"] == 1
        assert _facts(r) == _facts(whole)
    assert P.PreparedSummary.from_bytes(b'{"fingerprint": 1}') is None
    assert P.PreparedSummary.from_bytes(b"not json") is None


def test_a_reused_program_reports_an_unbound_buffer_as_a_whole_one(fresh):
    """The message follows the load's value to the branch it decides: the program prepares
    again to say it."""
    launch = _launch("spmv_csr")
    module = parse_ptx_file(launch.file)
    emu = Emulator(module, bounds_check=False)
    emu.run(launch)
    args = [0 if a == launch.args[1] else a for a in launch.args]
    bad = Launch(kernel=launch.kernel, grid=launch.grid, block=launch.block, args=args, buffers=launch.buffers)
    with pytest.raises(LaunchError) as whole:
        emu.run(bad)
    again = Emulator(module, bounds_check=False)
    assert type(again.program(launch.kernel)) is P.ReusedProgram
    with pytest.raises(LaunchError) as reused:
        again.run(bad)
    assert str(reused.value) == str(whole.value) and "must be a buffer" in str(whole.value)


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_a_reused_program_names_a_failed_assertion_as_a_whole_one(fresh, mode):
    """A failing assert(): the message follows the call's arguments to the assertion's strings
    (file, line, function, expression), which a program made from its record prepares again to
    read (a fresh clone's CI caught the reused one saying only "(call __assertfail)")."""
    from hypa.runtime.emulator.emulator import EmulationError

    from helpers import ROOT

    module = parse_ptx_file(str(ROOT / "tests" / "filecheck" / "Execution" / "emulate-assert.ptx"))
    launch = Launch(grid=1, block=64, args=["in", "out", 64, 40],
                    buffers={"in": np.arange(64, dtype=np.int32), "out": np.zeros(64, np.int32)})
    messages = []
    for _ in range(2):
        emu = Emulator(module, mode=mode)
        with pytest.raises(EmulationError) as e:
            emu.run(launch)
        messages.append(str(e.value))
    assert type(emu.program(None)) is P.ReusedProgram
    assert messages[0] == messages[1]
    assert messages[1].endswith("clamp_assert.cu:6: void checked_scale(const int *, int *, int, int): "
                                "Assertion `in[i] < limit` failed.")
