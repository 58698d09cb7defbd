"""``hypa run --capture``: buffers as content-addressed chunks (a launch stores only the chunks
no earlier launch stored, all-zero chunks nothing), the kernel's report of written pages that
spares hashing unchanged chunks (exact: the same files as hashing everything), the
``{chunks = ...}`` init kind with its diagnostics, ``--capture-launches`` and the size line."""

from __future__ import annotations

import ctypes
import json
import os
import re

import numpy as np
import pytest

from hypa.cudart.capture import TRACKING_ENV, Capture, LaunchSelection
from hypa.cudart.host import RunOptions
from hypa.cudart.written_pages import PAGE, WrittenPages
from hypa.runtime.emulator.chunks import CHUNK_BYTES, manifest_text, read_manifest
from hypa.runtime.emulator.flat_memory import FlatMemory
from hypa.runtime.emulator.launch import BufferSpec, LaunchError

from helpers import build_cuda_program, run_hypa

TRACKER = WrittenPages.open()


# -- --capture-launches --------------------------------------------------------------------------


def test_launch_selection_terms():
    s = LaunchSelection("3,10-12,100-,%50")
    assert [i for i in range(160) if s(i, "k")] == [0, 3, 10, 11, 12, 50] + list(range(100, 160))
    names = LaunchSelection("b?mp,gemm*")
    assert names(7, "_Z4bumpPii") and names(7, "gemm_nt") and not names(7, "_Z4initPii")
    exact = LaunchSelection("bump(int*, int),init")  # the comma inside the parameters is no separator
    assert exact(0, "_Z4bumpPii") and exact(0, "_Z4initPii") and not exact(0, "_Z4bumpPiPi")
    assert LaunchSelection(None)(12345, "anything")
    assert not LaunchSelection("5")(4, "k")


@pytest.mark.parametrize("spec, message", [
    ("", "'' has an empty term (terms are separated by commas)"),
    ("1,,2", "'1,,2' has an empty term (terms are separated by commas)"),
    ("5-2", "range '5-2' ends before it starts"),
    ("%0", "'%0': every n-th launch needs n of at least 1"),
    ("%x", "'%x' is not a launch index (7), a range (0-9, 100-), every n-th launch (%10) or a kernel name"),
    ("-3", "'-3' is not a launch index (7), a range (0-9, 100-), every n-th launch (%10) or a kernel name"),
    ("7a", "'7a' is not a launch index (7), a range (0-9, 100-), every n-th launch (%10) or a kernel name"),
])
def test_launch_selection_rejects_bad_terms(spec, message):
    with pytest.raises(ValueError) as e:
        LaunchSelection(spec)
    assert str(e.value) == message


# -- chunks of one allocation, in process --------------------------------------------------------


class _Runtime:
    """What ``Capture`` uses of ``cudart.host.HostRuntime``."""

    def __init__(self, folder, jobs: int = 1) -> None:
        self.opts = RunOptions(capture=str(folder), jobs=jobs)
        self.memory = FlatMemory()
        self.said: list[str] = []

    def say(self, text: str, once=None) -> None:
        self.said.append(text)


def _array(alloc) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * alloc.size).from_address(alloc.start))


def _replay(cap: Capture, manifest: str) -> np.ndarray:
    return read_manifest(os.path.join(cap.dir, "buffers", manifest + ".manifest"))


def _chunk_files(cap: Capture) -> set[str]:
    return set(os.listdir(cap.chunk_dir))


@pytest.fixture(params=["tracked", "hashed"])
def capture(request, tmp_path, monkeypatch):
    """A capture into ``tmp_path``, with the kernel's written pages or hashing every chunk."""
    if request.param == "tracked" and TRACKER is None:
        pytest.skip("this kernel has no asynchronous userfaultfd write-protect with PAGEMAP_SCAN (Linux 6.7+)")
    monkeypatch.setenv(TRACKING_ENV, "1" if request.param == "tracked" else "0")
    cap = Capture(_Runtime(tmp_path))
    assert (cap.tracker is not None) == (request.param == "tracked")
    return cap


def test_one_changed_element_stores_one_chunk(capture):
    cap = capture
    a = cap.rt.memory.allocate(16 * CHUNK_BYTES + 100, "device")  # 17 chunks, the last of 100 bytes
    arr = _array(a)
    arr[:] = np.arange(a.size, dtype=np.uint64).astype(np.uint8)
    arr[: 4 * CHUNK_BYTES] = 0  # chunks 0-3 all zero: null in the manifest, no file
    m1, pointers = cap._buffer(a.start, a.size)
    assert not pointers and cap.chunks == len(_chunk_files(cap))
    entries = json.load(open(os.path.join(cap.dir, "buffers", m1 + ".manifest")))["chunks"]
    assert entries[:4] == [None] * 4 and all(entries[4:]) and len(entries) == 17
    # chunks 4..15 hold the same 64 KiB (the pattern repeats every 256 bytes): stored once
    assert len(_chunk_files(cap)) == 2 and cap.chunks == 2
    assert np.array_equal(_replay(cap, m1), arr)
    arr[7 * CHUNK_BYTES + 3] ^= 0xFF  # one element of chunk 7
    m2, _ = cap._buffer(a.start, a.size)
    assert len(_chunk_files(cap)) == 3 and m2 != m1
    e2 = json.load(open(os.path.join(cap.dir, "buffers", m2 + ".manifest")))["chunks"]
    assert [k for k in range(17) if e2[k] != entries[k]] == [7]
    assert np.array_equal(_replay(cap, m2), arr)
    arr[7 * CHUNK_BYTES + 3] ^= 0xFF  # back as it was: no new chunk, the first manifest again
    assert cap._buffer(a.start, a.size)[0] == m1 and len(_chunk_files(cap)) == 3
    assert cap.manifests_written == 2


def test_every_kind_of_write_is_seen(capture):
    """A store from Python, a memmove, a memset, a read() into the memory and a write to a
    page never touched before: each chunk is stored again; a pointer into the middle too."""
    cap = capture
    a = cap.rt.memory.allocate(64 * CHUNK_BYTES, "device")
    arr = _array(a)
    arr[: 32 * CHUNK_BYTES] = 1  # the upper half is never touched before the last write
    cap._buffer(a.start, a.size)
    src = np.full(10, 7, np.uint8)
    arr[1 * CHUNK_BYTES] = 2
    ctypes.memmove(a.start + 5 * CHUNK_BYTES + 17, src.ctypes.data, 10)
    ctypes.memset(a.start + 9 * CHUNK_BYTES - 1, 3, 2)  # the last byte of chunk 8, the first of 9
    r, w = os.pipe()
    os.write(w, b"xyz")
    os.readv(r, [memoryview(arr)[12 * CHUNK_BYTES: 12 * CHUNK_BYTES + 3]])
    os.close(r), os.close(w)
    arr[40 * CHUNK_BYTES + 5] = 9
    m, _ = cap._buffer(a.start, a.size)
    assert np.array_equal(_replay(cap, m), arr)
    off = 20 * CHUNK_BYTES + 12345  # a pointer into the middle of the allocation
    arr[off] = 4
    m2, _ = cap._buffer(a.start + off, a.size - off)
    assert json.load(open(os.path.join(cap.dir, "buffers", m2 + ".manifest")))["offset"] == 12345
    assert np.array_equal(_replay(cap, m2), arr[off:])


def test_scattered_writes_more_than_one_scan_returns(capture):
    """Every other page of 16 MiB written: 2048 page ranges, more than one PAGEMAP_SCAN call holds."""
    cap = capture
    a = cap.rt.memory.allocate(16 << 20, "device")
    arr = _array(a)
    cap._buffer(a.start, a.size)
    arr[:: 2 * PAGE] = 5
    m, _ = cap._buffer(a.start, a.size)
    assert np.array_equal(_replay(cap, m), arr)
    assert cap.chunks == 1  # every chunk now holds the same pattern


def test_tracked_and_hashed_captures_write_the_same_files(tmp_path, monkeypatch):
    if TRACKER is None:
        pytest.skip("no written-page tracking on this kernel")
    out = {}
    for how in ("1", "0"):
        monkeypatch.setenv(TRACKING_ENV, how)
        cap = Capture(_Runtime(tmp_path / how))
        a, b = cap.rt.memory.allocate(3 << 20, "device"), cap.rt.memory.allocate(1 << 20, "managed")
        rng = np.random.default_rng(1)
        names = []
        for step in range(6):
            _array(a)[rng.integers(0, a.size, 5)] = step
            _array(b)[step * 70000: step * 70000 + 9] = step + 1
            names += [cap._buffer(a.start, a.size)[0], cap._buffer(b.start + 100, b.size - 100)[0]]
        out[how] = (names, _chunk_files(cap), cap.hashed)
    assert out["1"][:2] == out["0"][:2]
    assert out["1"][2] < out["0"][2] / 3  # the tracked capture hashed far less


def test_a_freed_allocation_is_not_remembered(capture):
    cap = capture
    mem = cap.rt.memory
    a = mem.allocate(2 * CHUNK_BYTES, "device")
    _array(a)[:] = 1
    cap._buffer(a.start, a.size)
    mem.release(a.start)
    cap._forget_freed()
    assert a.start not in cap.regions
    b = mem.register(a.start, a.size, "device", owner=a.owner)  # the same memory, a new allocation
    _array(b)[5] = 2
    m, _ = cap._buffer(b.start, b.size)
    assert np.array_equal(_replay(cap, m), _array(b))


def test_a_buffer_of_addresses_is_noted(capture):
    cap = capture
    mem = cap.rt.memory
    target = mem.allocate(64, "device")
    table = mem.allocate(CHUNK_BYTES + 64, "device")
    assert cap._buffer(table.start, table.size)[1] is False
    _array(table)[CHUNK_BYTES + 8: CHUNK_BYTES + 16] = np.frombuffer(np.uint64(target.start + 8).tobytes(), np.uint8)
    assert cap._buffer(table.start, table.size)[1] is True
    assert cap._buffer(table.start, CHUNK_BYTES)[1] is False  # the first chunk alone holds none


def test_forked_workers_turn_tracking_off(tmp_path):
    assert Capture(_Runtime(tmp_path, jobs=2)).tracker is None


# -- the {chunks = ...} init kind ----------------------------------------------------------------


def _spec(tmp_path, count=8, dtype="uint8", manifest="buffers/m.manifest") -> BufferSpec:
    return BufferSpec("b", dtype, count, {"chunks": manifest}, base_dir=str(tmp_path))


def _write_manifest(tmp_path, text: str) -> str:
    (tmp_path / "buffers").mkdir(exist_ok=True)
    (tmp_path / "chunks").mkdir(exist_ok=True)
    p = tmp_path / "buffers" / "m.manifest"
    p.write_text(text)
    return str(p)


def test_chunks_init_reads_offset_and_zero_chunks(tmp_path):
    name = "0123456789abcdef0123456789abcdef"
    (tmp_path / "chunks").mkdir()
    (tmp_path / "chunks" / name).write_bytes(bytes(range(16)))
    _write_manifest(tmp_path, manifest_text([None, name], 10, 20, chunk_bytes=16))
    expect = bytes(6) + bytes(range(14))  # chunk 0 (null) from byte 10, then 14 bytes of chunk 1
    assert bytes(_spec(tmp_path, 20).materialize()) == expect
    assert list(_spec(tmp_path, 5, "uint32").materialize()) == list(np.frombuffer(expect, np.uint32))


def _error(spec: BufferSpec) -> str:
    with pytest.raises(LaunchError) as e:
        spec.materialize()
    return str(e.value)


def test_chunks_init_diagnostics(tmp_path):
    m = str(tmp_path / "buffers" / "m.manifest")
    assert _error(_spec(tmp_path)) == f"buffer 'b': cannot read chunk manifest {m}: No such file or directory"
    _write_manifest(tmp_path, "{oops")
    assert _error(_spec(tmp_path)).startswith(f"buffer 'b': {m} is not a chunk manifest (not JSON: ")
    _write_manifest(tmp_path, '{"format": "npy"}')
    assert _error(_spec(tmp_path)) == \
        f"buffer 'b': {m} is not a chunk manifest (expected \"format\": \"hypa-chunks-1\", found 'npy')"
    good = json.loads(manifest_text(["a" * 32], 0, 8, chunk_bytes=16))
    for key, value, says in [
        ("chunk_bytes", 0, "'chunk_bytes' must be a whole number of at least 1, not 0"),
        ("offset", -1, "'offset' must be a whole number of at least 0, not -1"),
        ("offset", 16, "offset 16 is not inside the first chunk (16 bytes)"),
        ("chunks", ["a" * 32, None], "2 chunks listed; 8 bytes from offset 0 in chunks of 16 need 1"),
        ("chunks", ["A" * 32], "chunk 0 is 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', not a chunk name (32 hex digits) or null"),
        ("chunks", "x", "'chunks' must be a list of chunk names, not 'x'"),
    ]:
        _write_manifest(tmp_path, json.dumps({**good, key: value}))
        assert _error(_spec(tmp_path)) == f"buffer 'b': chunk manifest {m}: {says}", key
    _write_manifest(tmp_path, json.dumps(good))
    chunk = str(tmp_path / "buffers" / "../chunks" / ("a" * 32))
    assert _error(_spec(tmp_path)) == \
        f"buffer 'b': cannot read chunk {chunk} (chunk 0 of {m}): No such file or directory"
    (tmp_path / "chunks" / ("a" * 32)).write_bytes(b"1234")  # truncated: 8 bytes are needed
    assert _error(_spec(tmp_path)) == (f"buffer 'b': chunk {chunk} (chunk 0 of {m}) is 4 bytes, expected 8 to 16: "
                                       f"the file is truncated or not this capture's")
    (tmp_path / "chunks" / ("a" * 32)).write_bytes(b"12345678")
    assert bytes(_spec(tmp_path).materialize()) == b"12345678"
    assert _error(_spec(tmp_path, 3, "uint32")) == f"buffer 'b': {m} holds 8 bytes, 3 x uint32 need 12"
    assert _error(BufferSpec("b", "uint8", 1, {"chunks": 5})) == "buffer 'b': chunks must name a manifest file, not 5"


# -- hypa run --capture, end to end --------------------------------------------------------------

STEPS = r"""
#include <cstdio>
__global__ void init(int *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = i; }
__global__ void bump(int *a, int at) { if (threadIdx.x == 0) a[at] += 1; }
int main() {
    const int n = 1 << 18;              // 1 MiB: 16 chunks
    int *a; cudaMalloc(&a, n * 4);
    init<<<n / 256, 256>>>(a, n);       // 0: a is zero: 16 null chunks
    bump<<<1, 32>>>(a, 5);              // 1: a[i] = i: 16 new chunks
    bump<<<1, 32>>>(a, 5);              // 2: a[5] = 6: chunk 0 new
    bump<<<1, 32>>>(a, 20000);          // 3: a[5] = 7: chunk 0 new
    int five = 5; cudaMemcpy(a + 5, &five, 4, cudaMemcpyHostToDevice);
    bump<<<1, 32>>>(a, 5);              // 4: chunk 0 as at 1; a[20000] = 20001: chunk 1 new
    int h; cudaMemcpy(&h, a + 5, 4, cudaMemcpyDeviceToHost);
    printf("%d\n", h);
    return 0;
}
"""


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    d = tmp_path_factory.mktemp("steps")
    build_cuda_program(d, "steps", STEPS)
    return d


def _files(folder) -> dict[str, int]:
    return {os.path.relpath(os.path.join(r, f), folder): os.path.getsize(os.path.join(r, f))
            for r, _, fs in os.walk(folder) for f in fs}


def _capture_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("hypa run: captured")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("tracking", ["1", "0"])
def test_run_stores_each_chunk_once_and_replays_the_same_counts(steps, tmp_path, tracking, monkeypatch):
    monkeypatch.setenv(TRACKING_ENV, tracking)
    cap = tmp_path / "cap"
    run = run_hypa("run", "--capture", cap, "--format", "json", "-o", tmp_path / "run.json", "--", steps / "steps")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "6\n"
    files = _files(cap)
    chunks = [f for f in files if f.startswith("chunks" + os.sep)]
    assert len(chunks) == 16 + 1 + 1 + 1 and all(files[c] == CHUNK_BYTES for c in chunks)
    assert len([f for f in files if f.endswith(".manifest")]) == 5
    total = sum(files.values())
    assert _capture_line(run.stderr) == (f"hypa run: captured 5 of 5 launches in {cap}: {total / 1e6:.1f} MB written "
                                         f"({total:,} bytes; 19 new chunks, 5 manifests)")
    toml = (cap / "launches.toml").read_text()
    assert toml.count('init = { chunks = "buffers/') == 5 and ".npy" not in toml
    replay = run_hypa("profile", cap, "--format", "json")
    assert replay.returncode == 0, replay.stderr
    ran, again = json.load(open(tmp_path / "run.json")), json.loads(replay.stdout)
    assert [r["kernel"] for r in again] == [r["kernel"] for r in ran] == ["_Z4initPii"] + ["_Z4bumpPii"] * 4
    for a, b in zip(ran, again):
        for k in ("inst_executed", "thread_inst_executed", "branch", "divergent_branch"):
            assert a[k] == b[k], (a["kernel"], k)
    # the same folder again: every chunk and manifest is there already
    run2 = run_hypa("run", "--capture", cap, "--", steps / "steps")
    grown = sum(_files(cap).values()) - total
    assert _capture_line(run2.stderr) == (f"hypa run: captured 5 of 5 launches in {cap}: {grown / 1e6:.1f} MB written "
                                          f"({grown:,} bytes; 0 new chunks, 0 manifests)")
    assert grown == len(toml)


def test_capture_launches_selects_by_index_range_every_and_name(steps, tmp_path):
    cap = tmp_path / "cap"
    run = run_hypa("run", "--capture", cap, "--capture-launches", "init,3-,%2", "--", steps / "steps")
    assert run.returncode == 0, run.stderr
    toml = (cap / "launches.toml").read_text()
    assert re.findall(r"# launch (\d+) of", toml) == ["0", "2", "3", "4"]
    assert _capture_line(run.stderr).startswith(f"hypa run: captured 4 of 5 launches in {cap}: ")
    run = run_hypa("run", "--capture", tmp_path / "c2", "--capture-launches", "b?mp", "--", steps / "steps")
    assert re.findall(r"# launch (\d+) of", (tmp_path / "c2" / "launches.toml").read_text()) == ["1", "2", "3", "4"]
    replay = run_hypa("profile", tmp_path / "c2", "--format", "json")
    assert replay.returncode == 0 and len(json.loads(replay.stdout)) == 4, replay.stderr


@pytest.mark.parametrize("args, message", [
    (["--capture", "CAP", "--capture-launches", "5-2"], "--capture-launches: range '5-2' ends before it starts"),
    (["--capture-launches", "1"], "--capture-launches needs --capture DIR"),
])
def test_capture_launches_bad_input_is_an_error_at_start(tmp_path, args, message):
    args = [str(tmp_path / "cap") if a == "CAP" else a for a in args]
    run = run_hypa("run", *args, "--", "/bin/true")
    assert run.returncode == 2 and run.stderr == f"hypa run: error: {message}\n"
    assert not (tmp_path / "cap").exists()
