"""The calibration set of the timing estimate (benchmarks/gpu/calibration, launches in
benchmarks/gpu/launches/calibration.toml and timing_large.toml): every launch is well
formed, and small launches of the micro-benchmarks count exactly what they isolate."""

import numpy as np
import pytest
from helpers import ROOT, emulate, load_script
from hypa.runtime.emulator.launch import launches_from_toml

CALIB = ROOT / "benchmarks" / "gpu" / "calibration"
LAUNCHES = ROOT / "benchmarks" / "gpu" / "launches"
MEMORY = (CALIB / "memory.ptx").read_text()
SHARED = (CALIB / "shared.ptx").read_text()
TOMLS = [LAUNCHES / "calibration.toml", LAUNCHES / "timing_large.toml"]


def test_calibration_toml_is_what_the_generator_writes():
    gen = load_script("benchmarks/gpu/calibration/make_launches.py")
    assert (LAUNCHES / "calibration.toml").read_text() == gen.render()


@pytest.mark.parametrize("toml", TOMLS, ids=lambda p: p.name)
def test_every_launch_names_a_kernel_its_parameters_and_buffers(toml):
    tk = load_script("benchmarks/gpu/time_kernels.py")
    items = tk.plan([str(toml)])  # reads every launch: unknown buffers raise here
    assert len(items) == len(launches_from_toml(str(toml))) >= 25
    assert [(i["launch_index"], i["status"]) for i in items if i["status"] != "ok"] == []
    for it in items:
        L = it["launch"]
        sizes = {n: b.count * np.dtype(b.dtype).itemsize for n, b in L.buffers.items()}
        assert sum(sizes.values()) <= 1 << 30, (it["launch_index"], sizes)


def test_every_calibration_kernel_is_launched():
    tk = load_script("benchmarks/gpu/time_kernels.py")
    launched = {(it["file"], it["kernel"]) for it in tk.plan([str(TOMLS[0])])}
    for ptx in CALIB.glob("*.ptx"):
        for name in tk.entry_signatures(ptx.read_text()):
            assert (str(ptx.relative_to(ROOT)), name) in launched


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("stride, sectors", [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32)])
def test_strided_read_sectors_per_request(stride, sectors, mode):
    # 2 warps; a warp's 32 loads of 4 bytes span 32 * 4 * stride bytes: 4 * stride sectors, at most 32
    a = np.arange(64 * stride, dtype=np.float32)
    r = emulate(MEMORY, ["a", "out", 64, stride], {"a": a, "out": np.zeros(64, np.float32)},
                grid=2, block=32, kernel="strided_read", memory_metrics=True, mode=mode)
    mem = r.metrics.memory
    assert (mem["global_ld_requests"], mem["global_ld_sectors"]) == (2, 2 * sectors)
    assert (mem["global_st_requests"], mem["global_st_sectors"]) == (2, 8)
    if mode == "full":  # slice mode runs the control flow, not the stores
        assert r.buffers["out"].tolist() == (np.arange(64) * stride).tolist()


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("stride", [1, 2, 4, 8, 32])
def test_shared_memory_bank_conflicts(stride, mode):
    # one warp, 4 iterations: lanes read word tid * stride, banks (tid * stride) % 32 -> a
    # stride-way conflict; the fill loop stores 8192 words, 256 conflict-free wavefronts
    r = emulate(SHARED, ["out", 4, stride], {"out": np.zeros(32, np.float32)},
                grid=1, block=32, kernel="smem_stride", memory_metrics=True, mode=mode)
    mem = r.metrics.memory
    assert (mem["shared_st_wavefronts"], mem["shared_st_bank_conflicts"]) == (256, 0)
    assert (mem["shared_ld_wavefronts"], mem["shared_ld_bank_conflicts"]) == (4 * stride, 4 * (stride - 1))
    t = np.arange(32)  # buf[i] = i; lane t reads (t*s + 32*s*k) % 8192, k = 0..3
    want = sum(((t * stride + 32 * stride * k) % 8192) for k in range(4)).astype(np.float32)
    if mode == "full":
        assert r.buffers["out"].tolist() == want.tolist()


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_row_walk_is_uncoalesced_and_column_walk_is_not(mode):
    # 32 rows of 8: a row walk's request touches 32 rows' sectors, a column walk's 4 sectors
    a = np.arange(32 * 8, dtype=np.float32)
    out = np.zeros(32, np.float32)
    row = emulate(MEMORY, ["a", "out", 32, 8], {"a": a, "out": out}, grid=1, block=32,
                  kernel="row_walk", memory_metrics=True, mode=mode)
    col = emulate(MEMORY, ["a", "out", 32, 8], {"a": a, "out": out}, grid=1, block=32,
                  kernel="col_walk", memory_metrics=True, mode=mode)
    assert (row.metrics.memory["global_ld_requests"], row.metrics.memory["global_ld_sectors"]) == (8, 8 * 32)
    assert (col.metrics.memory["global_ld_requests"], col.metrics.memory["global_ld_sectors"]) == (8, 8 * 4)
    m = a.reshape(32, 8)
    if mode == "full":
        assert row.buffers["out"].tolist() == m.sum(axis=1).tolist()
        assert col.buffers["out"].tolist() == a.reshape(8, 32).sum(axis=0).tolist()


def test_atomics_count_every_add():
    atomics = (CALIB / "atomics.ptx").read_text()
    # 64 threads, one counter per warp, 3 adds each: 32 * 3 per counter
    r = emulate(atomics, ["c", 2, 32, 3], {"c": np.zeros(2, np.float32)}, grid=1, block=64,
                kernel="atomic_add", mode="full")
    assert r.buffers["c"].tolist() == [96.0, 96.0]
    # shared bins: thread t adds to bins (7t + k) % 4, k = 0, 1; 7t % 4 takes each value 8 times
    r = emulate(atomics, ["h", 4, 2], {"h": np.zeros(8, np.int32)}, grid=2, block=32,
                kernel="smem_atomic", mode="full")
    assert r.buffers["h"].tolist() == [16] * 8


def test_stream_read_sums_its_grid_stride():
    # 64 threads over 200 elements: thread t sums a[t], a[t + 64], ... (arange: exact in fp32)
    r = emulate(MEMORY, ["a", "out", 200], {"a": np.arange(200, dtype=np.float32), "out": np.zeros(64, np.float32)},
                grid=2, block=32, kernel="stream_read", mode="full")
    assert r.buffers["out"].tolist() == [float(sum(range(t, 200, 64))) for t in range(64)]


def test_reread_starts_each_pass_further_on():
    # 32 threads over 64 elements, 2 passes: the second starts 32 on, so both read a[t] and a[t + 32]
    a = np.arange(64, dtype=np.float32)
    r = emulate(MEMORY, ["a", "out", 64, 2], {"a": a, "out": np.zeros(32, np.float32)}, grid=1, block=32,
                kernel="reread", mode="full", memory_metrics=True)
    assert r.buffers["out"].tolist() == [2.0 * (t + t + 32) for t in range(32)]
    assert (r.metrics.memory["global_ld_requests"], r.metrics.memory["global_ld_sectors"]) == (4, 16)
