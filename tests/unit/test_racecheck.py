"""racecheck (``--racecheck``): hazards between threads of a CTA on the same shared-memory
bytes with no barrier between them, a warning (an error under ``--strict``).

The hazards of each kernel below are counted by hand.  Warps run one after the other up to
a barrier, so which access of a pair comes first (RAW or WAR) follows that order; the number
of hazardous thread accesses is what the kernel's synchronisation leaves unordered."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from helpers import ROOT, emulate, kernel, nvcc, run_hypa, run_hypa_opt

from hypa.runtime.emulator.emulator import EmulationError

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


def test_off_by_default():
    r = emulate(NEIGHBOUR, ["out"], {"out": np.zeros(64, np.uint32)}, block=64, mode="full")
    assert not any(n.startswith("racecheck") for n in r.notes)


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
