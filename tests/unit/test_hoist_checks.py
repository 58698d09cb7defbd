"""Hoisted bounds checks (``passes/hoist_checks.py``, issue 25): slice mode checks an access
whose address is affine in a loop's trip once per loop entry, for the whole range the loop
can cover; lanes the check cannot prove check every access as before.  Whatever is hoisted,
the results and the diagnostics are those of checking every access (``hoist_checks=False``)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import emulate, kernel

from hypa.ptxdialect import parse_ptx
from hypa.ptxdialect.printer import instruction_text
from hypa.runtime.emulator.emulator import EmulationError
from hypa.runtime.emulator.options import EmulationOptions
from hypa.runtime.emulator.program import prepare

#: out[t] = sum over trips j < n/2 of a[512j + t] + a[512j + 256 + t]: two loads a trip, the
#: index a 32-bit induction variable widened by mul.wide.s32 (as nvcc writes a[j*M + i])
COLSUM = kernel("colsum(.param .u32 n, .param .u64 a, .param .u64 out)", """
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    mov.u32 %r2, %tid.x;
    mov.f32 %f1, 0f00000000;
    setp.lt.s32 %p1, %r1, 1;
    @%p1 bra $L_done;
    mov.u32 %r3, 0;
    mov.u32 %r4, %r2;
$L_loop:
    mul.wide.s32 %rd4, %r4, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f2, [%rd5];
    add.f32 %f1, %f1, %f2;
    ld.global.f32 %f2, [%rd5+1024];
    add.f32 %f1, %f1, %f2;
    add.s32 %r4, %r4, 512;
    add.s32 %r3, %r3, 2;
    setp.lt.s32 %p2, %r3, %r1;
    @%p2 bra $L_loop;
$L_done:
    cvta.to.global.u64 %rd6, %rd2;
    mul.wide.u32 %rd7, %r2, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.global.f32 [%rd8], %f1;
    ret;
""")

#: the same sum of a[256j + t] over j < n, leaving early (a break) after trip ``stop``
EARLY_EXIT = kernel("until(.param .u32 n, .param .u32 stop, .param .u64 a, .param .u64 out)", """
    ld.param.u32 %r1, [n];
    ld.param.u32 %r6, [stop];
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    mov.u32 %r2, %tid.x;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r3, 0;
    mov.u32 %r4, %r2;
$L_loop:
    mul.wide.s32 %rd4, %r4, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f2, [%rd5];
    add.f32 %f1, %f1, %f2;
    setp.eq.s32 %p1, %r3, %r6;
    @%p1 bra $L_done;
    add.s32 %r4, %r4, 256;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p2, %r3, %r1;
    @%p2 bra $L_loop;
$L_done:
    cvta.to.global.u64 %rd6, %rd2;
    mul.wide.u32 %rd7, %r2, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.global.f32 [%rd8], %f1;
    ret;
""")

#: byte loads at a + sext(i16), i16 = 32752 + 8k (a .s16 induction variable): at trip 2 it
#: wraps to -32768, 32 KiB below the buffer, although a + 32752 + 8k stays inside it
WRAP16 = kernel("wrap(.param .u32 n, .param .u64 a, .param .u64 out)", """
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    mov.u32 %r2, %tid.x;
    mov.u16 %rs1, 32752;
    mov.u32 %r3, 0;
$L_loop:
    cvt.s64.s16 %rd4, %rs1;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.u8 %r5, [%rd5];
    add.s16 %rs1, %rs1, 8;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p2, %r3, %r1;
    @%p2 bra $L_loop;
    cvta.to.global.u64 %rd6, %rd2;
    mul.wide.u32 %rd7, %r2, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.global.u32 [%rd8], %r5;
    ret;
""", regs="    .reg .pred %p<4>;\n    .reg .b16 %rs<4>;\n    .reg .b32 %r<8>;\n    .reg .b64 %rd<10>;\n")

#: thread t sums sh[t + 32j] over j < n through a generic address, and nothing wrote sh
GENERIC_SHARED = kernel("gsh(.param .u32 n, .param .u64 out)", """
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd2, [out];
    mov.u32 %r2, %tid.x;
    mov.u64 %rd1, sh;
    cvta.shared.u64 %rd3, %rd1;
    mov.u32 %r3, 0;
    mov.u32 %r4, %r2;
    mov.u32 %r5, 0;
$L_loop:
    mul.wide.u32 %rd4, %r4, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.u32 %r6, [%rd5];
    add.s32 %r5, %r5, %r6;
    add.s32 %r4, %r4, 32;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p2, %r3, %r1;
    @%p2 bra $L_loop;
    cvta.to.global.u64 %rd6, %rd2;
    mul.wide.u32 %rd7, %r2, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.global.u32 [%rd8], %r5;
    ret;
""", before=".shared .align 4 .b8 sh[1024];\n")


def _colsum(count: int, n: int = 10, **options):
    a = np.arange(count, dtype=np.float32)
    return emulate(COLSUM, [n, "a", "out"], {"a": a, "out": np.zeros(256, np.float32)}, block=256, **options)


def _outcome(fn, *args, **options):
    try:
        r = fn(*args, **options)
    except EmulationError as e:
        return "error", str(e)
    return "ok", r.metrics.values


def test_plan_of_the_affine_loop():
    """Both loads of the loop are checked in its preheader; the address arithmetic and the
    index are computed only for lanes whose range check fails."""
    prog = prepare(parse_ptx(COLSUM), "colsum", EmulationOptions(mode="slice"))
    assert prog.hoist is not None
    [lp] = prog.hoist.loops
    assert lp.label == "$L_loop"
    assert [instruction_text(c.op) for c in lp.checks] == ["ld.global.f32 %f2, [%rd5];", "ld.global.f32 %f2, [%rd5+1024];"]
    assert sorted(instruction_text(op) for op in lp.conditional) == [
        "add.s32 %r4, %r4, 512;", "add.s64 %rd5, %rd3, %rd4;", "mul.wide.s32 %rd4, %r4, 4;"]
    assert [(a.name_hint, a.block is prog.cfg.blocks[lp.header]) for a in lp.conditional_args] == [("r4", True)]
    assert prepare(parse_ptx(COLSUM), "colsum", EmulationOptions(mode="slice", hoist_checks=False)).hoist is None
    assert prepare(parse_ptx(COLSUM), "colsum", EmulationOptions(mode="full")).hoist is None
    assert prepare(parse_ptx(COLSUM), "colsum", EmulationOptions(mode="slice", bounds_check=False)).hoist is None
    # memory metrics read both loads' addresses on every trip: their checks are hoisted all
    # the same, but no arithmetic is left to the lanes without a proof
    metered = prepare(parse_ptx(COLSUM), "colsum", EmulationOptions(mode="slice", memory_metrics=True)).hoist
    assert metered is not None
    [lp] = metered.loops
    assert [instruction_text(c.op) for c in lp.checks] == ["ld.global.f32 %f2, [%rd5];", "ld.global.f32 %f2, [%rd5+1024];"]
    assert lp.conditional == set() and lp.conditional_args == set()


def _measured(count: int, n: int = 10, **options):
    """The outcome with memory metrics and the timing estimate's address trace: the counts,
    each memory instruction's requests and sectors, and the trace's records."""
    try:
        r = _colsum(count, n, memory_metrics=True, address_trace=4096, **options)
    except EmulationError as e:
        return "error", str(e)
    t = r.memory_trace
    return ("ok", r.metrics.values, [m.as_dict() for m in r.metrics.memory_instructions],
            t.sectors.tolist(), t.info.tolist(), t.l1_window.sectors.tolist() if t.l1_window is not None else None)


@pytest.mark.parametrize("count", [0, 255, 2304, 2559, 2560])
def test_memory_metrics_and_trace_the_same_with_a_hoisted_check(count):
    """An access the metrics measure, its check hoisted: the same counts, sectors and trace
    records as checked on every trip (2559: the same error at the same trip)."""
    got = _measured(count)
    assert got == _measured(count, hoist_checks=False)
    if count == 2560:
        assert got[0] == "ok" and len(got[3]) > 0
        # 2 loads a trip, 5 trips (n = 10, the index steps by 2), 8 warps: 80 requests of 4 sectors
        loads = [m for m in got[2] if m["instruction"].startswith("ld.")]
        assert (sum(m["requests"] for m in loads), sum(m["sectors"] for m in loads)) == (80, 320)


def test_in_bounds_counts_and_outputs_unchanged():
    hoisted = _colsum(2560)
    assert hoisted.metrics.values == _colsum(2560, hoist_checks=False).metrics.values
    full = _colsum(2560, mode="full")
    assert {**hoisted.metrics.values, "executed_fraction": 1.0} == full.metrics.values
    # 10 instructions before the loop, 10 a trip for 5 trips, 5 after it, in 256 threads
    assert hoisted.metrics["thread_inst_executed"] == 256 * (10 + 10 * 5 + 5)


def test_out_of_bounds_in_an_affine_loop_is_reported_as_without_hoisting():
    """One float short: the last trip's second load of thread 255 is the first access outside."""
    message = ("out-of-bounds access at kernel colsum, CTA (0, 0, 0), thread (255, 0, 0): "
               "ld.global.f32 %f2, [%rd5+1024]; (block $L_loop) touches address 0x800000027fc "
               "(buffer 'a' byte 10236, which holds 10236 bytes)")
    with pytest.raises(EmulationError) as e:
        _colsum(2559)
    assert str(e.value) == message
    assert _outcome(_colsum, 2559, hoist_checks=False) == ("error", message)
    with pytest.raises(EmulationError) as e:
        _colsum(2559, mode="full")
    assert str(e.value) == message


@pytest.mark.parametrize("count", [0, 1, 255, 256, 1000, 2303, 2304, 2305, 2559, 2560])
@pytest.mark.parametrize("n", [1, 2, 9, 10])
def test_same_outcome_with_and_without_hoisting(count, n):
    assert _outcome(_colsum, count, n) == _outcome(_colsum, count, n, hoist_checks=False)


def _until(n: int, stop: int, count: int, **options):
    a = np.ones(count, dtype=np.float32)
    return emulate(EARLY_EXIT, [n, stop, "a", "out"], {"a": a, "out": np.zeros(64, np.float32)}, block=64, **options)


def test_early_exit_is_not_reported():
    """The loop runs to trip ``stop`` (4) of n = 100: the buffer holds those 5 trips only, so
    the range of 100 trips is out of bounds, yet no access the loop makes is: no error."""
    prog = prepare(parse_ptx(EARLY_EXIT), "until", EmulationOptions(mode="slice"))
    assert [lp.label for lp in prog.hoist.loops] == ["$L_loop"]  # hoisted despite the break
    r = _until(100, 4, 5 * 256)
    assert r.metrics.values == _until(100, 4, 5 * 256, hoist_checks=False).metrics.values
    full = _until(100, 4, 5 * 256, mode="full")
    assert {**r.metrics.values, "executed_fraction": 1.0} == full.metrics.values
    assert full.buffers["out"].tolist() == [5.0] * 64


def test_early_exit_after_the_end_of_the_buffer_is_reported():
    message = ("out-of-bounds access at kernel until, CTA (0, 0, 0), thread (0, 0, 0): "
               "ld.global.f32 %f2, [%rd5]; (block $L_loop) touches address 0x80000001400 "
               "(buffer 'a' byte 5120, which holds 5120 bytes)")
    for options in ({}, {"hoist_checks": False}, {"mode": "full"}):
        with pytest.raises(EmulationError) as e:
            _until(100, 5, 5 * 256, **options)
        assert str(e.value) == message


def _wrap(n: int, **options):
    return emulate(WRAP16, [n, "a", "out"], {"a": np.zeros(40000, np.uint8), "out": np.zeros(32, np.uint32)},
                   block=32, **options)


def test_a_narrow_index_that_wraps_inside_the_range_is_not_proven():
    """a + 32752 + 8k is inside the 40,000 bytes for k <= 2, but the emulated .s16 index wraps
    at trip 2: the hoisted check must not prove the range (its no-wrap condition fails) and
    the access at a - 32768 is reported as without hoisting."""
    assert _wrap(2).metrics.values == _wrap(2, hoist_checks=False).metrics.values
    prog = prepare(parse_ptx(WRAP16), "wrap", EmulationOptions(mode="slice"))
    [lp] = prog.hoist.loops
    assert [(o.aff.bits, o.signed) for o in lp.obligations] == [(16, True)]
    outcome = _outcome(_wrap, 3)
    assert outcome[0] == "error" and "touches address 0x7ffffff8000" in outcome[1]
    assert outcome == _outcome(_wrap, 3, hoist_checks=False) == _outcome(_wrap, 3, mode="full")


def _initcheck_notes(result) -> list[str]:
    return [n for n in result.notes if n.startswith("initcheck:")]


def test_generic_accesses_to_shared_memory_keep_initcheck():
    """The loop's loads reach shared memory through generic addresses: with initcheck on,
    their range is not proven (each read checks shadow bytes), so all 32 x 3 unwritten reads
    are counted, as without hoisting."""
    def run(**options):
        return emulate(GENERIC_SHARED, [3, "out"], {"out": np.zeros(32, np.uint32)}, block=32, **options)

    notes = _initcheck_notes(run())
    assert notes == _initcheck_notes(run(hoist_checks=False))
    assert notes[0].startswith("initcheck: 96 thread reads of shared or local memory never written")
    assert run(initcheck=False).metrics.values == run(initcheck=False, hoist_checks=False).metrics.values


def test_proven_lanes_skip_the_per_access_checks(monkeypatch):
    """White box: make the code of unproven lanes trap.  In bounds, no lane runs it (the
    range check proved them all); one float short, the lanes whose range leaves the buffer
    (only thread 255's: its last trip's second load) run it."""
    from hypa.runtime import abi
    from hypa.runtime.emulator import jit
    from hypa.runtime.emulator.lowering import hoisted

    # the patched code neither comes from the caches nor stays in them
    monkeypatch.setenv("HYPA_NO_CACHE", "1")
    monkeypatch.setattr(jit, "_engines", {})
    monkeypatch.setattr(jit, "_SOURCES", "hoisted checks that trap")
    open_region = hoisted.before_instruction

    def trapping(wf, op):
        was = getattr(wf, "hoist_region", None)
        open_region(wf, op)
        if was is None and getattr(wf, "hoist_region", None) is not None:
            wf.error_if(-1, wf.active, abi.ERR_TRAP, None)

    monkeypatch.setattr(hoisted, "before_instruction", trapping)
    assert _colsum(2560).metrics.values == _colsum(2560, hoist_checks=False).metrics.values
    with pytest.raises(EmulationError, match=r"trap executed at kernel colsum, CTA \(0, 0, 0\), thread \(255, 0, 0\)"):
        _colsum(2559)


#: a[i] for i = 0, 4, 8 ... while i != n: with n = 10 the loop never meets its exit test
NE_LOOP = kernel("ne(.param .u32 n, .param .u64 a, .param .u64 out)", """
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd3, %rd1;
    mov.u32 %r3, 0;
    mov.f32 %f1, 0f00000000;
$L_loop:
    mul.wide.s32 %rd4, %r3, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f2, [%rd5];
    add.f32 %f1, %f1, %f2;
    add.s32 %r3, %r3, 4;
    setp.ne.s32 %p2, %r3, %r1;
    @%p2 bra $L_loop;
    cvta.to.global.u64 %rd6, %rd2;
    st.global.f32 [%rd6], %f1;
    ret;
""")


@pytest.mark.parametrize("n", [8, 10, 16, 18])
def test_a_trip_count_the_exit_test_does_not_confirm_is_not_used(n):
    """i != n with a step of 4: n = 10 and 18 are never met (dividing gives 2 and 4 trips,
    whose range the buffer of 16 floats holds); the loop runs until it reads past the buffer,
    at i = 16, as without hoisting.  n = 8 and 16 are met, in bounds."""
    def run(**options):
        return emulate(NE_LOOP, [n, "a", "out"], {"a": np.ones(16, np.float32), "out": np.zeros(1, np.float32)},
                       block=1, step_budget=10**5, **options)

    outcome = _outcome(run)
    assert outcome == _outcome(run, hoist_checks=False)
    assert (outcome[0] == "error") == (n in (10, 18))
    if n in (10, 18):
        assert "ld.global.f32 %f2, [%rd5]; (block $L_loop) touches address 0x80000000040" in outcome[1]
