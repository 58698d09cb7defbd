"""initcheck: a read of shared or local memory that no thread has written is a warning (the
emulator zero-fills, a GPU returns whatever was there), an error under ``--strict``.

Each kernel below has a known number of thread reads of unwritten bytes, counted by hand."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import emulate, kernel, run_hypa_opt

from hypa.runtime.emulator.emulator import EmulationError

SHARED = ".shared .align 8 .b8 buf[512];\n"


def _store_then_load(store_guard: str, load: str = "ld.shared.u32 %r5, [%r4];", store: str = "st.shared.u32 [%r4], %r1;",
                     address: str = "mov.u32 %r3, buf;") -> str:
    """Thread t stores at buf[4t] where ``store_guard`` holds, then (after a barrier) loads buf[4t]."""
    return kernel("k(.param .u64 out)", f"""
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    {address}
    add.u32 %r4, %r3, %r2;
    setp.lt.u32 %p1, %r1, {store_guard};
    @%p1 {store}
    bar.sync 0;
    {load}
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
""", before=SHARED)


def _initcheck_notes(result) -> list[str]:
    return [n for n in result.notes if n.startswith("initcheck:")]


def _run(ptx: str, block: int = 32, grid: int = 1, **kw):
    return emulate(ptx, ["out"], {"out": np.zeros(block * grid, np.uint32)}, block=block, grid=grid, **kw)


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_shared_read_never_written(mode):
    """Threads 16..31 read buf[64..127], which nobody wrote: 16 thread reads, the first thread 16's."""
    r = _run(_store_then_load("16"), mode=mode)
    assert _initcheck_notes(r) == [
        "initcheck: 16 thread reads of shared or local memory never written (the emulator reads zeros, a GPU "
        "whatever was there); the first: kernel k, CTA (0, 0, 0), thread (16, 0, 0): ld.shared.u32 %r5, [%r4]; "
        "reads shared offset 0x40, which no thread of the CTA had written (--strict makes it an error)"]


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_every_byte_written_is_silent(mode):
    assert _initcheck_notes(_run(_store_then_load("32"), mode=mode)) == []


def test_strict_makes_it_an_error():
    with pytest.raises(EmulationError, match=r"^initcheck: 16 thread reads .* \(an error under --strict\)$"):
        _run(_store_then_load("16"), mode="full", strict=True)


def test_off_switches():
    """--no-initcheck; and slice mode without bounds checks, which does not see every access."""
    assert _initcheck_notes(_run(_store_then_load("16"), mode="full", initcheck=False)) == []
    assert _initcheck_notes(_run(_store_then_load("16"), mode="slice", bounds_check=False)) == []


def test_partly_written_word():
    """A byte stored, a word loaded: the three other bytes were never written (32 reads)."""
    r = _run(_store_then_load("32", store="st.shared.u8 [%r4], %r1;"), mode="full")
    assert _initcheck_notes(r)[0].startswith("initcheck: 32 thread reads ")


def test_generic_address_into_shared():
    """``cvta.shared`` then a generic load: the shared window's offset is reported."""
    ptx = _store_then_load("8", load="cvta.shared.u64 %rd5, %rd6; ld.u32 %r5, [%rd5];",
                           address="mov.u32 %r3, buf; cvt.u64.u32 %rd6, %r4;")
    ptx = ptx.replace("add.u32 %r4, %r3, %r2;", "add.u32 %r4, %r3, %r2; cvt.u64.u32 %rd6, %r4;")
    note = _initcheck_notes(_run(ptx, mode="full"))
    assert len(note) == 1 and note[0].startswith("initcheck: 24 thread reads ")
    assert "thread (8, 0, 0): ld.u32 %r5, [%rd5]; reads shared offset 0x20," in note[0]


def test_atomic_reads_count():
    """``atom.shared.add`` on a word nobody initialised reads garbage on a GPU: 32 reads."""
    r = _run(_store_then_load("0", load="atom.shared.add.u32 %r5, [%r4], 1;"), mode="full")
    assert _initcheck_notes(r)[0].startswith("initcheck: 32 thread reads ")


def test_cp_async_writes_count_as_written():
    """Bytes ``cp.async`` copied into shared memory are written."""
    ptx = _store_then_load("32", store="cp.async.ca.shared.global [%r4], [%rd1], 4; cp.async.wait_all;")
    assert _initcheck_notes(_run(ptx, mode="full")) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_counts_add_over_ctas(jobs):
    """4 CTAs of 16 reads each, split over processes or not: 64, the first in CTA 0."""
    r = _run(_store_then_load("16"), grid=4, mode="full", jobs=jobs)
    note = _initcheck_notes(r)[0]
    assert note.startswith("initcheck: 64 thread reads ") and "CTA (0, 0, 0), thread (16, 0, 0)" in note


def test_every_cta_starts_unwritten():
    """CTA 1 does not inherit CTA 0's writes: only CTA 1's thread 5 stores nothing (grid 2, one read)."""
    ptx = _store_then_load("32").replace("setp.lt.u32 %p1, %r1, 32;",
                                         "mov.u32 %r9, %ctaid.x; setp.ne.u32 %p2, %r9, 1; setp.ne.u32 %p3, %r1, 5;"
                                         " or.pred %p1, %p2, %p3;")
    note = _initcheck_notes(_run(ptx, grid=2, mode="full"))[0]
    assert note.startswith("initcheck: 1 thread read ") and "CTA (1, 0, 0), thread (5, 0, 0)" in note


def test_local_memory():
    """A per-thread local array: element 1 is read but only element 0 written (every thread)."""
    ptx = kernel("k(.param .u64 out)", """
    .local .align 4 .b8 arr[16];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    st.local.u32 [arr], %r1;
    ld.local.u32 %r5, [arr+4];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
""")
    note = _initcheck_notes(_run(ptx, mode="full"))[0]
    assert note.startswith("initcheck: 32 thread reads ")
    assert note.endswith("thread (0, 0, 0): ld.local.u32 %r5, [arr+4]; reads local offset 0x4, which that thread had "
                         "not written (--strict makes it an error)")


def test_hypa_opt_strict_exit_status(tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(_store_then_load("16"))
    spec = "--emulate=grid=1 block=32 args=out buffer.out=uint32:32:zeros"
    warn = run_hypa_opt(src, spec)
    assert warn.returncode == 0 and "note: initcheck: 16 thread reads" in warn.stdout + warn.stderr
    err = run_hypa_opt(src, spec, "--strict")
    assert err.returncode == 1
    assert "hypa-opt: error: initcheck: 16 thread reads" in err.stderr and "Traceback" not in err.stderr


LDMATRIX_UNWRITTEN = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<8>;
  .reg .b32 %r<12>;
  .shared .align 16 .b8 sm[512];
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  shl.b32 %r3, %r2, 4;
  mov.u32 %r4, sm;
  add.s32 %r5, %r4, %r3;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r6, %r7, %r8, %r9}, [%r5];
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r6;
  ret;
}
"""


def test_slice_mode_reports_an_unwritten_ldmatrix_read_as_full_mode_does():
    """Issue 31: ``ldmatrix`` outside the slice is bounds-checked, and now initchecked too
    (32 lanes x 4 matrices of never-written shared memory: 128 thread reads in both modes)."""
    import numpy as np

    from helpers import emulate

    notes = {}
    for mode in ("full", "slice"):
        r = emulate(LDMATRIX_UNWRITTEN, ["b"], {"b": np.zeros(32, np.uint32)}, block=32, mode=mode)
        notes[mode] = [n for n in r.notes if n.startswith("initcheck")]
    assert notes["full"] == notes["slice"] and len(notes["full"]) == 1
    assert notes["full"][0].startswith("initcheck: 128 thread reads of shared or local memory never written")
