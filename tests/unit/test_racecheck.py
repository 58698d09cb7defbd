"""racecheck (``--racecheck``): hazards between threads of a CTA on the same shared-memory
bytes with no barrier between them, a warning (an error under ``--strict``); and its sample,
on by default (the first CTA of each kernel's first launch, a warning only).

The hazards of each kernel below are counted by hand.  Warps run one after the other up to
a barrier, so which access of a pair comes first (RAW or WAR) follows that order; the number
of hazardous thread accesses is what the kernel's synchronisation leaves unordered."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from helpers import ROOT, emulate, kernel, nvcc, run_hypa, run_hypa_opt

from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import EmulationError, Emulator
from hypa.runtime.emulator.launch import Launch

SHARED = ".shared .align 16 .b8 s[1024];\n"


def _kernel(body: str) -> str:
    """%r4: &s[tid] (words), %r7: &s[(tid + 1) % ntid]; %r3: s; the body leaves %r5 in out[tid]."""
    return kernel("k(.param .u64 out)", f"""
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r9, %ntid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    add.u32 %r6, %r1, 1;
    rem.u32 %r6, %r6, %r9;
    shl.b32 %r6, %r6, 2;
    add.u32 %r7, %r3, %r6;
    mov.u32 %r5, 0;
    {body}
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
""", before=SHARED)


NEIGHBOUR = _kernel("st.shared.u32 [%r4], %r1;\n    ld.shared.u32 %r5, [%r7];")


def _notes(ptx: str, block: int = 64, grid: int = 1, mode: str = "full", **kw) -> list[str]:
    r = emulate(ptx, ["out"], {"out": np.zeros(block * grid, np.uint32)}, block=block, grid=grid, mode=mode,
                racecheck=True, **kw)
    return [n for n in r.notes if n.startswith("racecheck:")]


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_missing_barrier_between_write_and_read(mode):
    """Thread t writes s[t], then reads s[t + 1] (64 threads, two warps, no barrier).  Warp 0
    runs first: threads 0..30 read words threads 1..31 wrote (31 RAW), thread 31 reads s[32]
    before warp 1 writes it; then thread 32's write follows thread 31's read (1 WAR) and
    threads 32..63 read words of other threads (32 RAW)."""
    assert _notes(NEIGHBOUR, mode=mode) == [
        "racecheck: 64 shared-memory hazards between threads of a CTA with no barrier between the accesses "
        "(1 WAR, 63 RAW); the first: kernel k, CTA (0, 0, 0): RAW hazard at shared offset 0x4: thread (0, 0, 0) "
        "reads it with ld.shared.u32 %r5, [%r7]; after thread (1, 0, 0) wrote it with st.shared.u32 [%r4], %r1; "
        "(--strict makes it an error)"]


@pytest.mark.parametrize("barrier", ["bar.sync 0;", "barrier.sync 0;", "bar.red.popc.u32 %r8, 0, 1;",
                                     "barrier.cluster.arrive; barrier.cluster.wait;"])
def test_a_barrier_between_them_is_silent(barrier):
    ptx = _kernel(f"st.shared.u32 [%r4], %r1;\n    {barrier}\n    ld.shared.u32 %r5, [%r7];")
    assert _notes(ptx) == []


def test_write_after_read():
    """Read the neighbour's word, then write one's own (one warp): each write follows another
    thread's read of the word in the same epoch (thread t's word was read by thread t - 1; thread
    0's by thread 31): 32 WAR."""
    note = _notes(_kernel("ld.shared.u32 %r5, [%r7];\n    st.shared.u32 [%r4], %r1;"), block=32)
    assert len(note) == 1 and note[0].startswith("racecheck: 32 shared-memory hazards ") and "(32 WAR)" in note[0]
    assert ("WAR hazard at shared offset 0x0: thread (0, 0, 0) writes it with st.shared.u32 [%r4], %r1; after "
            "thread (31, 0, 0) read it with ld.shared.u32 %r5, [%r7];") in note[0]


def test_one_store_of_many_lanes_to_one_word():
    """Every lane of a warp stores to s[0] in one instruction: which value lands is undefined, a
    WAW hazard between the lanes (31: each lane after the first meets one other's write); the
    second warp's 32 stores then follow the first warp's (32 more)."""
    note = _notes(_kernel("st.shared.u32 [%r3], %r1;"))
    assert note == [
        "racecheck: 63 shared-memory hazards between threads of a CTA with no barrier between the accesses (63 WAW); "
        "the first: kernel k, CTA (0, 0, 0): WAW hazard at shared offset 0x0: thread (1, 0, 0) writes it with "
        "st.shared.u32 [%r3], %r1; after thread (0, 0, 0) wrote it with st.shared.u32 [%r3], %r1; "
        "(--strict makes it an error)"]


def test_lanes_of_one_load_do_not_race():
    """Every thread loads s[0] after thread 0 stored it behind a barrier: reads never race with reads."""
    ptx = _kernel("setp.eq.u32 %p1, %r1, 0;\n    @%p1 st.shared.u32 [%r3], %r1;\n    bar.sync 0;\n"
                  "    ld.shared.u32 %r5, [%r3];\n    ld.shared.u32 %r5, [%r3];")
    assert _notes(ptx) == []


def test_atomics_do_not_race_with_atomics():
    """64 atomicAdds on one word are no hazard; a plain load of it in the same epoch is: each of
    the 64 loads follows another thread's atomic (a lane's own atomic does not count, the
    shadow keeps two threads' atomics besides the last)."""
    assert _notes(_kernel("atom.shared.add.u32 %r5, [%r3], 1;\n    red.shared.add.u32 [%r3], 1;")) == []
    note = _notes(_kernel("atom.shared.add.u32 %r5, [%r3], 1;\n    ld.shared.u32 %r5, [%r3];"))
    assert note[0].startswith("racecheck: 64 shared-memory hazards ") and "(64 RAW)" in note[0]
    assert "after thread (31, 0, 0) updated it with atom.shared.add.u32 %r5, [%r3], 1;" in note[0]
    note = _notes(_kernel("st.shared.u32 [%r4], %r1;\n    atom.shared.add.u32 %r5, [%r7], 1;"), block=32)
    assert "(32 WAW)" in note[0] and "thread (0, 0, 0) updates it with atom.shared.add.u32" in note[0]


def test_bytes_are_tracked_one_by_one():
    """Threads store neighbouring bytes of one word, each reads back its own: no hazard; each
    reading the whole word (4 threads' bytes) is a hazard (one per thread access): 32."""
    own = _kernel("add.u32 %r8, %r3, %r1;\n    st.shared.u8 [%r8], %r1;\n    ld.shared.u8 %r5, [%r8];")
    assert _notes(own, block=32) == []
    word = _kernel("add.u32 %r8, %r3, %r1;\n    st.shared.u8 [%r8], %r1;\n    and.b32 %r8, %r8, -4;\n"
                   "    ld.shared.u32 %r5, [%r8];")
    assert "racecheck: 32 shared-memory hazards " in _notes(word, block=32)[0]


def test_syncwarp_orders_the_lanes_of_a_warp():
    """One warp, neighbour's word: without ``__syncwarp`` 32 RAW hazards (lanes of one warp do
    not run in lock-step since Volta), with ``bar.warp.sync`` none."""
    assert "(32 RAW)" in _notes(NEIGHBOUR, block=32)[0]
    synced = _kernel("st.shared.u32 [%r4], %r1;\n    bar.warp.sync -1;\n    ld.shared.u32 %r5, [%r7];")
    assert _notes(synced, block=32) == []


def test_generic_addresses_into_shared_and_global_memory():
    """The neighbour kernel through generic addresses (``cvta.shared``) races as before; generic
    accesses of global memory are not shared memory."""
    ptx = NEIGHBOUR.replace("st.shared.u32 [%r4], %r1;\n    ld.shared.u32 %r5, [%r7];",
                            "cvt.u64.u32 %rd5, %r4; cvta.shared.u64 %rd5, %rd5; st.u32 [%rd5], %r1;\n"
                            "    cvt.u64.u32 %rd6, %r7; cvta.shared.u64 %rd6, %rd6; ld.u32 %r5, [%rd6];\n"
                            "    cvta.to.global.u64 %rd7, %rd1; st.u32 [%rd7], %r1; ld.u32 %r8, [%rd7];")
    note = _notes(ptx)
    assert note[0].startswith("racecheck: 64 shared-memory hazards ") and "(1 WAR, 63 RAW)" in note[0]
    assert "thread (0, 0, 0) reads it with ld.u32 %r5, [%rd6];" in note[0]


def test_an_mbarrier_phase_orders_producer_and_consumer():
    """tests/filecheck/Execution/emulate-mbarrier-pipeline.ptx: warp 1 writes buf and arrives
    on an mbarrier, warp 0 waits for the phase, then reads: no hazard.  Without the wait, warp 0
    (scheduled first) reads buf before warp 1 writes it: 32 WAR."""
    ptx = (ROOT / "tests" / "filecheck" / "Execution" / "emulate-mbarrier-pipeline.ptx").read_text()
    assert _notes(ptx) == []
    unsynced = ptx.replace("    mbarrier.try_wait.parity.shared.b64 %p3, [bar], %r10;\n    @!%p3 bra $L_wait;\n", "")
    assert unsynced != ptx
    note = _notes(unsynced)
    assert note[0].startswith("racecheck: 32 shared-memory hazards ") and "(32 WAR)" in note[0]
    assert "thread (32, 0, 0) writes it with st.shared.u32 [%r6], %r7; after thread (0, 0, 0) read it" in note[0]


HISTOGRAM = kernel("hist(.param .u64 out)", """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    shl.b32 %r3, %r1, 2;
    add.u32 %r3, %r2, %r3;
    and.b32 %r4, %r1, 7;
    shl.b32 %r4, %r4, 2;
    add.u32 %r4, %r2, %r4;
    setp.lt.u32 %p1, %r1, 8;
    setp.eq.u32 %p2, %r1, 0;
    mov.u32 %r5, 0;
    mov.u32 %r6, 0;
$L_round:
    @%p1 st.shared.u32 [%r3], %r5;
    bar.sync 0;
    red.shared.add.u32 [%r4], 1;
    bar.sync 0;
    @%p2 ld.shared.v4.u32 {%r7, %r8, %r9, %r10}, [s];
    @%p2 ld.shared.v4.u32 {%r11, %r12, %r13, %r14}, [s+16];
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p3, %r6, 3;
    @%p3 bra $L_round;
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r7;
    ret;
""", before=SHARED)


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_histogram_refilled_without_a_barrier_between_rounds(mode):
    """3 rounds: threads 0..7 clear the 8 bins, all 64 add, thread 0 reads the bins; no barrier at
    the end of a round.  The next round's clearing by threads 1..7 follows thread 0's reads of
    their bins (thread 0's own bin is no hazard), after rounds 0 and 1: 14 WAR.  Both are warp
    0's, in program order: the same whatever order warps are scheduled in."""
    assert _notes(HISTOGRAM, mode=mode) == [
        "racecheck: 14 shared-memory hazards between threads of a CTA with no barrier between the accesses (14 WAR); "
        "the first: kernel hist, CTA (0, 0, 0): WAR hazard at shared offset 0x4: thread (1, 0, 0) writes it with "
        "@%p1 st.shared.u32 [%r3], %r5; after thread (0, 0, 0) read it with "
        "@%p2 ld.shared.v4.u32 {%r7, %r8, %r9, %r10}, [s]; (--strict makes it an error)"]
    fixed = HISTOGRAM.replace("    add.u32 %r6, %r6, 1;", "    bar.sync 0;\n    add.u32 %r6, %r6, 1;")
    assert _notes(fixed, mode=mode) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_counts_add_over_ctas(jobs):
    """4 CTAs of the neighbour kernel, in one process or two: 4 x 64, the first in CTA 0; CTAs
    do not race with each other (each starts a new epoch)."""
    note = _notes(NEIGHBOUR, grid=4, jobs=jobs)[0]
    assert note.startswith("racecheck: 256 shared-memory hazards ") and "(4 WAR, 252 RAW)" in note
    assert "kernel k, CTA (0, 0, 0): RAW" in note


def test_strict_makes_it_an_error():
    """(one warp: 32 RAW, and no byte read before written, which initcheck would report first)"""
    with pytest.raises(EmulationError, match=r"^racecheck: 32 shared-memory hazards .* \(an error under --strict\)$"):
        _notes(NEIGHBOUR, block=32, strict=True)


# -- racecheck's sample (on by default): the first CTA of each kernel's first launch -----------

SAMPLED = "(racecheck's sample: the first CTA of the kernel's first launch; --racecheck checks every CTA of every launch)"


def _launch(grid: int = 4, block: int = 64) -> Launch:
    return Launch(grid=grid, block=block, args=["out"], buffers={"out": np.zeros(grid * block, np.uint32)})


def _races(r) -> list[str]:
    return [n for n in r.notes if n.startswith("racecheck")]


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_the_sample_checks_the_first_cta_of_each_kernels_first_launch(mode):
    """The neighbour kernel on 4 CTAs: the full check counts 4 x 64 hazards; the sample, on by
    default, checks CTA 0 of the first launch alone (its 64, as counted above) and says so; the
    emulator's next launch of the kernel is not checked; a new emulator (a new process) checks
    its first launch again."""
    module = parse_ptx(NEIGHBOUR)
    emu = Emulator(module, mode=mode)
    assert _races(emu.run(_launch())) == [
        "racecheck: 64 shared-memory hazards between threads of a CTA with no barrier between the accesses "
        "(1 WAR, 63 RAW); the first: kernel k, CTA (0, 0, 0): RAW hazard at shared offset 0x4: thread (0, 0, 0) "
        "reads it with ld.shared.u32 %r5, [%r7]; after thread (1, 0, 0) wrote it with st.shared.u32 [%r4], %r1; "
        + SAMPLED]
    assert _races(emu.run(_launch())) == []
    assert len(_races(Emulator(module, mode=mode).run(_launch(grid=1)))) == 1
    full = _races(Emulator(module, mode=mode, racecheck=True).run(_launch()))
    assert len(full) == 1 and full[0].startswith("racecheck: 256 shared-memory hazards ") and SAMPLED not in full[0]


def test_the_sample_misses_a_race_outside_the_first_cta():
    """A race in CTA 1 only (CTA 0 skips the shared accesses): the sample sees none,
    ``--racecheck`` finds it (32 RAW in CTA (1, 0, 0))."""
    ptx = _kernel("mov.u32 %r8, %ctaid.x;\n    setp.eq.u32 %p1, %r8, 0;\n    @%p1 bra $L_skip;\n"
                  "    st.shared.u32 [%r4], %r1;\n    ld.shared.u32 %r5, [%r7];\n$L_skip:")
    assert _races(Emulator(parse_ptx(ptx), mode="full").run(_launch(grid=2, block=32))) == []
    (full,) = _races(Emulator(parse_ptx(ptx), mode="full", racecheck=True).run(_launch(grid=2, block=32)))
    assert full.startswith("racecheck: 32 shared-memory hazards ") and "(32 RAW)" in full and "CTA (1, 0, 0)" in full


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_sample_leaves_counts_and_results_as_they_are(jobs):
    """The sample runs the first CTA apart: the counts, each CTA's counts and the memory after
    the launch are those without it (and with ``--racecheck``), in one process or two."""
    for ptx in (NEIGHBOUR, HISTOGRAM):
        runs = [emulate(ptx, ["out"], {"out": np.zeros(192, np.uint32)}, grid=3, block=64, mode="full", jobs=jobs,
                        per_cta=True, **kw) for kw in ({}, {"racecheck_sample": False}, {"racecheck": True})]
        assert len(_races(runs[0])) == 1 and _races(runs[1]) == []
        for r in runs[1:]:
            assert r.metrics.values == runs[0].metrics.values
            assert list(r.per_cta) == list(runs[0].per_cta)
            assert np.array_equal(r.buffers["out"], runs[0].buffers["out"])


def test_a_cooperative_launch_is_not_sampled():
    """A cooperative launch runs its CTAs at once (they take turns in one call): the sample
    leaves it, and the kernel's next launch is its first sampled one."""
    emu = Emulator(parse_ptx(NEIGHBOUR), mode="full")
    coop = Launch(grid=2, block=64, args=["out"], buffers={"out": np.zeros(128, np.uint32)}, cooperative=True)
    assert _races(emu.run(coop)) == []
    (note,) = _races(emu.run(_launch(grid=2)))
    assert note.startswith("racecheck: 64 shared-memory hazards ") and note.endswith(SAMPLED)


def test_the_sample_is_a_warning_under_strict():
    """``--strict`` makes ``--racecheck``'s hazards errors; the sample's stay a warning."""
    r = emulate(NEIGHBOUR, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode="full", strict=True)
    (note,) = _races(r)
    assert note.startswith("racecheck: 32 shared-memory hazards ") and note.endswith(SAMPLED)


def test_the_sample_costs_nothing_in_kernels_that_write_no_shared_memory(tmp_path):
    """The code of a kernel with no shared-memory write (saxpy; the neighbour kernel reading
    shared memory only) is the same with the sample on or off; the neighbour kernel's has the
    sample's checks."""
    reader = tmp_path / "reader.ptx"
    reader.write_text(NEIGHBOUR.replace("st.shared.u32 [%r4], %r1;", ""))
    neighbour = tmp_path / "neighbour.ptx"
    neighbour.write_text(NEIGHBOUR)
    for src in (ROOT / "examples" / "saxpy.ptx", reader):
        on, off = (run_hypa_opt(src, "-t", "llvm", *flags) for flags in ((), ("--no-racecheck-sample",)))
        assert on.returncode == off.returncode == 0 and on.stdout == off.stdout and "racecheck" not in on.stdout
    on, off = (run_hypa_opt(neighbour, "-t", "llvm", *flags) for flags in ((), ("--no-racecheck-sample",)))
    assert "hypa_racecheck.write.sample" in on.stdout and "racecheck" not in off.stdout


def test_the_sample_on_the_command_line(tmp_path):
    """hypa-opt warns by default; ``--no-racecheck-sample`` turns the sample off; with
    ``--racecheck`` (which checks everything) it would have no effect: an error."""
    src = tmp_path / "k.ptx"
    src.write_text(NEIGHBOUR)
    spec = "--emulate=grid=2 block=32 args=out buffer.out=uint32:64:zeros"
    warn = run_hypa_opt(src, spec)
    assert warn.returncode == 0
    assert [ln.strip() for ln in (warn.stdout + warn.stderr).splitlines() if "racecheck" in ln] == [
        "note: racecheck: 32 shared-memory hazards between threads of a CTA with no barrier between the accesses "
        "(32 RAW); the first: kernel k, CTA (0, 0, 0): RAW hazard at shared offset 0x4: thread (0, 0, 0) reads it "
        "with ld.shared.u32 %r5, [%r7]; after thread (1, 0, 0) wrote it with st.shared.u32 [%r4], %r1; " + SAMPLED]
    off = run_hypa_opt(src, spec, "--no-racecheck-sample")
    assert off.returncode == 0 and "racecheck" not in off.stdout + off.stderr
    bad = run_hypa_opt(src, spec, "--racecheck", "--no-racecheck-sample")
    assert (bad.returncode, bad.stderr) == (1, "hypa-opt: error: --no-racecheck-sample has no effect with --racecheck\n")


def test_hypa_opt_flag(tmp_path):
    """``--racecheck`` on the command line; with ``--no-bounds-check`` (slice mode sees no access
    outside the slice) it would have no effect: an error."""
    src = tmp_path / "k.ptx"
    src.write_text(NEIGHBOUR)
    spec = "--emulate=grid=1 block=32 args=out buffer.out=uint32:32:zeros"
    warn = run_hypa_opt(src, spec, "--racecheck")
    assert warn.returncode == 0 and "note: racecheck: 32 shared-memory hazards" in warn.stdout + warn.stderr
    err = run_hypa_opt(src, spec, "--racecheck", "--strict")
    assert err.returncode == 1 and "hypa-opt: error: racecheck: 32 shared-memory hazards" in err.stderr
    assert "Traceback" not in err.stderr
    bad = run_hypa_opt(src, spec, "--racecheck", "--no-bounds-check")
    assert bad.returncode != 0 and "--racecheck" in bad.stderr and "Traceback" not in bad.stderr


def test_hypa_run_reports_the_missing_barriers(tmp_path):
    """tests/cuda_programs/racecheck/missing_barrier.cu, built with line information: the same
    hazards as the PTX kernels above, with the CUDA source lines of both accesses."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    exe = tmp_path / "missing_barrier"
    p = nvcc(ROOT / "tests" / "cuda_programs" / "racecheck" / "missing_barrier.cu", exe, "-lineinfo")
    assert p.returncode == 0, p.stderr
    r = run_hypa("run", "--racecheck", "--", str(exe), timeout=300)
    assert r.returncode == 0 and r.stdout.endswith("no error\n"), r.stderr
    notes = sorted(line for line in r.stderr.splitlines() if "racecheck" in line)
    assert notes == [
        "note: racecheck: 14 shared-memory hazards between threads of a CTA with no barrier between the accesses "
        "(14 WAR); the first: kernel histogram(unsigned int const*, unsigned int*, int), CTA (0, 0, 0): WAR hazard "
        "at shared offset 0x4: thread (1, 0, 0) writes it with st.shared.u32 [%r2], %r35; (missing_barrier.cu:21) "
        "after thread (0, 0, 0) read it with ld.shared.u32 %r28, [_ZZ9histogramPKjPjiE4bins+4]; "
        "(missing_barrier.cu:26) (--strict makes it an error)",
        "note: racecheck: 64 shared-memory hazards between threads of a CTA with no barrier between the accesses "
        "(1 WAR, 63 RAW); the first: kernel neighbour(int const*, int*), CTA (0, 0, 0): RAW hazard at shared "
        "offset 0x4: thread (0, 0, 0) reads it with ld.shared.u32 %r11, [%r10]; (missing_barrier.cu:12) after "
        "thread (1, 0, 0) wrote it with st.shared.u32 [%r5], %r2; (missing_barrier.cu:10) "
        "(--strict makes it an error)"]
    # by default, racecheck's sample: both launches are their kernel's first, of one CTA each,
    # so it finds the same hazards, and says what it checked; the counts are the same with it
    # on, off (--no-racecheck-sample) and under --racecheck
    sample = run_hypa("run", "--", str(exe), timeout=300)
    assert sample.returncode == 0 and sample.stdout == r.stdout, sample.stderr
    assert sorted(ln for ln in sample.stderr.splitlines() if "racecheck" in ln) == [
        n.replace("(--strict makes it an error)", SAMPLED) for n in notes]
    off = run_hypa("run", "--no-racecheck-sample", "--", str(exe), timeout=300)
    assert off.returncode == 0 and off.stdout == r.stdout and "racecheck" not in off.stderr

    def counts(*flags: str) -> list[dict]:
        """the JSON report's records but for their time and notes"""
        report = tmp_path / "report.json"
        p = run_hypa("run", *flags, "--format", "json", "-o", str(report), "--", str(exe), timeout=300)
        assert p.returncode == 0, p.stderr
        return [{k: v for k, v in d.items() if k not in ("duration_ms", "notes")} for d in json.loads(report.read_text())]

    assert counts() == counts("--no-racecheck-sample") == counts("--racecheck")
    assert [d["inst_executed"] for d in counts()] == [42, 199]
