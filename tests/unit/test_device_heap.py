"""Device ``malloc``/``free`` (CUDA's device heap; ``new``/``delete`` compile to them),
issue 16: results, exact counts worked out by hand, per-block bounds checks in full and slice
mode, a guarded ``free``, NULL when the heap is full, a bad ``free``, and the heap kept across
launches as on a GPU (``runtime/emulator/device_heap.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from helpers import ROOT
from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import EmulationError, Emulator
from hypa.runtime.emulator.launch import Launch

MODES = ["full", "slice"]

#: thread t: p = malloc(4 (t + 1)); p[0..t] = t + 1; out[t] = p[t] + (p & 15); even threads
#: free(p) (a guarded call).  Per thread 7 + 6 (t + 1) + 13 = 26 + 6t instructions (the fill
#: loop is 6 with its branch): 3,808 over 32 threads; the warp runs the loop 32 times:
#: 7 + 6 * 32 + 13 = 212 warp-instructions.
HEAP = (ROOT / "tests" / "filecheck" / "Execution" / "Inputs" / "heap" / "heap.ptx").read_text()

#: every thread asks for k_n bytes; out[t] = (p != 0)
FULL = """.version 8.0
.target sm_80
.address_size 64

.extern .func (.param .b64 func_retval0) malloc
(
	.param .b64 malloc_param_0
)
;

.visible .entry full(.param .u64 full_out, .param .u64 full_n)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;

	mov.u32 %r1, %tid.x;
	ld.param.u64 %rd1, [full_n];
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b64 retval0;
	call.uni (retval0), malloc, (param0);
	ld.param.b64 %rd2, [retval0];
	}
	setp.ne.s64 %p1, %rd2, 0;
	selp.u32 %r2, 1, 0, %p1;
	ld.param.u64 %rd3, [full_out];
	mul.wide.u32 %rd4, %r1, 4;
	add.s64 %rd5, %rd3, %rd4;
	st.global.u32 [%rd5], %r2;
	ret;
}
"""


def launch(emu: Emulator, kernel: str = "heap", args=None):
    out = np.zeros(32, np.uint32)
    return emu.run(Launch(kernel=kernel, grid=1, block=32, args=args or ["out"], buffers={"out": out}))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
@pytest.mark.parametrize("text", [HEAP, FULL], ids=["heap", "full"])
def test_ptxas_accepts_the_kernels(tmp_path, text):
    f = tmp_path / "k.ptx"
    f.write_text(text)
    p = subprocess.run(["ptxas", "-arch=sm_90", "-o", os.devnull, str(f)], check=False, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("mode", MODES)
def test_malloc_free_results_and_counts(mode):
    emu = Emulator(parse_ptx(HEAP), mode=mode)
    r = launch(emu)
    v = r.metrics.values
    assert (v["inst_executed"], v["thread_inst_executed"]) == (212, 3808)
    if mode == "full":
        # every block 16-byte aligned (p & 15 == 0), its last word read back
        assert r.buffers["out"].tolist() == list(range(1, 33))
    heap = emu.heap
    # 32 blocks; the 16 even threads freed theirs: odd t keep 4 (t + 1) bytes, 4 * (2 + 4 + ... + 32)
    assert (heap.mallocs, heap.frees, heap.live_bytes) == (32, 16, 1088)
    # the heap outlives the launch, as on a GPU: a second launch allocates beside the live blocks
    launch(emu)
    assert (heap.mallocs, heap.frees, heap.live_bytes) == (64, 32, 2176)
    assert heap.peak == 1088 + sum(4 * (t + 1) for t in range(32))


@pytest.mark.parametrize("mode", MODES)
def test_access_past_a_block_is_out_of_bounds(mode):
    # the fill loop writes p[t + 1] too: thread 0's store lands just past its 4-byte block
    over = HEAP.replace("setp.lt.u32 %p1, %r3, %r2;", "setp.le.u32 %p1, %r3, %r2;")
    with pytest.raises(EmulationError, match=r"out-of-bounds access at kernel heap, CTA \(0, 0, 0\), thread \(0, 0, 0\): "
                       r"st.u32 \[%rd4\], %r2; .* 0 bytes past the end of the 4-byte malloc allocation"):
        launch(Emulator(parse_ptx(over), mode=mode))


@pytest.mark.parametrize("mode", MODES)
def test_double_free_stops_the_launch(mode):
    twice = HEAP.replace("@%p2 call free, (param0);", "call free, (param0);\n\tcall free, (param0);")
    with pytest.raises(EmulationError, match=r"free\(0x[0-9a-f]+\): no block the device heap's malloc returned starts "
                       r"there \(freed twice, or not from malloc\) at kernel heap, CTA \(0, 0, 0\), thread \(0, 0, 0\)"):
        launch(Emulator(parse_ptx(twice), mode=mode))


def test_malloc_returns_null_when_the_heap_is_full():
    emu = Emulator(parse_ptx(FULL), mode="full")
    # 8 MiB (CUDA's default): two 3 MiB blocks fit, lanes 2..31 get NULL
    r = launch(emu, "full", ["out", 3 << 20])
    assert r.buffers["out"].tolist() == [1, 1] + [0] * 30
    assert (emu.heap.mallocs, emu.heap.failed) == (2, 30)
    # cudaLimitMallocHeapSize is fixed once the heap is in use; a fresh emulator's can be set
    assert not emu.heap.set_size(16 << 20)
    emu = Emulator(parse_ptx(FULL), mode="full")
    assert emu.device_heap().set_size(4 << 20)
    assert launch(emu, "full", ["out", 3 << 20]).buffers["out"].tolist() == [1] + [0] * 31
    # malloc(0) is NULL too (and no failure)
    emu = Emulator(parse_ptx(FULL), mode="full")
    assert launch(emu, "full", ["out", 0]).buffers["out"].tolist() == [0] * 32
    assert emu.heap.failed == 0


def _device_malloc_stdout() -> str:
    """tests/cuda_programs/isa/device_malloc.cu: s = sum_{k <= t % 5} (t k + 1), out[t] = s + t (s - t)."""
    out = []
    for t in range(64):
        s = sum(t * k + 1 for k in range(t % 5 + 1))
        out.append(s + t * (s - t))
    return f"heap={8 << 20} out[0..4]={' '.join(map(str, out[:5]))} sum={sum(out)} flags=3\nPASS\n"


def test_cuda_program_under_hypa_run(tmp_path):
    """Blocks made in one launch, read and freed in later ones; new/delete; the heap size
    the program sets (1 MiB) makes a 2 MiB malloc NULL."""
    import json

    from helpers import ISA_PROGRAMS, gpu_recorded_run, nvcc, run_hypa

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    exe = tmp_path / "device_malloc"
    p = nvcc(ISA_PROGRAMS / "device_malloc.cu", exe)
    assert p.returncode == 0, p.stderr
    report = tmp_path / "r.json"
    r = run_hypa("run", "--format", "json", "-o", str(report), "--", str(exe), timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == _device_malloc_stdout()
    assert [x["kernel"] for x in json.loads(report.read_text())] == ["_Z4makev", "_Z3usePi", "_Z7releasePi"]
    assert not any("racecheck" in n for d in json.loads(report.read_text()) for n in d.get("notes", []))  # racecheck's sample (on by default) finds no shared-memory hazard
    gpu = gpu_recorded_run("device_malloc")
    if gpu is not None:
        assert gpu["rc"] == 0 and gpu["stdout"] == r.stdout


#: reads the first word of the block whose address the buffer holds (a pointer kept from an
#: earlier launch that called malloc) into out[0]
READER = """.version 8.0
.target sm_80
.address_size 64

.visible .entry reader(.param .u64 reader_ptr, .param .u64 reader_out)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<8>;

	ld.param.u64 %rd1, [reader_ptr];
	ld.global.u64 %rd2, [%rd1];
	ld.u32 %r1, [%rd2];
	ld.param.u64 %rd3, [reader_out];
	st.global.u32 [%rd3], %r1;
	ret;
}
"""


def test_a_later_launch_reads_a_block_an_earlier_one_allocated():
    module = parse_ptx(HEAP + READER.split(".address_size 64", 1)[1])
    emu = Emulator(module, mode="full")
    launch(emu)
    odd = next(iter(emu.heap.blocks))  # thread 1's block (thread 0 freed its own): 2, 2
    ptr = np.array([odd], np.uint64)
    r = emu.run(Launch(kernel="reader", grid=1, block=1, args=["p", "out"],
                       buffers={"p": ptr, "out": np.zeros(1, np.uint32)}))
    assert r.buffers["out"].tolist() == [2]
    # a freed block is out of bounds
    freed = np.array([odd - 16], np.uint64)
    with pytest.raises(EmulationError, match="out-of-bounds access at kernel reader"):
        emu.run(Launch(kernel="reader", grid=1, block=1, args=["p", "out"],
                       buffers={"p": freed, "out": np.zeros(1, np.uint32)}))
