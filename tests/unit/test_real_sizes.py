"""Real sizes: a launch's memory is what it touches, and a batch's is one launch's.

A spec of 50 launches over 32 MiB buffers (zeros, a random image and an arange image) runs
as a whole ``hypa profile`` process; its peak resident memory (the child's ``ru_maxrss``,
a count of kilobytes, not a time) must not grow with the number of launches: copying or
keeping each launch's buffers would add 96 MiB per launch (4.8 GB for 50).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import EXAMPLES, HYPA, load_script
from hypa.runtime.emulator import buffer_image
from hypa.runtime.emulator.launch import BufferSpec

MIB = 1 << 20
SAXPY = EXAMPLES / "saxpy.ptx"

#: the kernel and spec the README's memory figure uses (benchmarks/speed.py): distinct launches
#: of ``add_at`` (out[off + i] = a[off + i] + b[off + i]) over zeros, random and arange buffers
SPEED = load_script("benchmarks/speed.py")
ADD_AT = SPEED.ADD_AT


def _spec(launches: int, count: int) -> str:
    return SPEED.launches_spec(launches, 4 * count)


def _profile_rss(tmp_path, launches: int, count: int) -> tuple[int, list]:
    """``hypa profile`` of ``launches`` launches as a process: its peak resident set (KiB, the
    child's ``ru_maxrss`` as a wrapper process reads it) and its JSON records."""
    (tmp_path / "k.ptx").write_text(ADD_AT)
    (tmp_path / f"l{launches}.toml").write_text(_spec(launches, count))
    wrapper = ("import json, os, resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "sys.stderr.buffer.write(p.stderr)\n"
               "sys.stdout.write(json.dumps([p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
               "p.stdout.decode()]))\n")
    r = subprocess.run([sys.executable, "-c", wrapper, *HYPA, "profile", "k.ptx",
                        "--launch", f"l{launches}.toml", "--format", "json", "--no-progress"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, HYPA_CACHE_DIR=str(tmp_path / "cache")))
    rc, rss, out = json.loads(r.stdout)
    assert rc == 0, r.stderr
    return rss, json.loads(out)


def test_peak_memory_does_not_grow_with_launches(tmp_path):
    count = 32 * MIB // 4  # 32 MiB buffers
    rss5, rec5 = _profile_rss(tmp_path, 5, count)
    rss50, rec50 = _profile_rss(tmp_path, 50, count)
    assert len(rec5) == 5 and len(rec50) == 50
    assert all(r.get("error") is None for r in rec50)
    # 50 distinct launches ran (none reused): each stored 256 floats
    assert sum(1 for r in rec50 if r.get("reused_from") is None) == 50
    assert all(r["thread_inst_executed"] == rec50[0]["thread_inst_executed"] for r in rec50)
    # the images (random, arange: 64 MiB made once) and one launch's touched pages; kept or
    # copied buffers would add 96 MiB a launch (4.3 GiB more for 45 more launches)
    assert rss50 - rss5 < 64 * 1024, (rss5, rss50)
    assert rss50 < 1024 * 1024, rss50


def test_zeros_are_paid_per_page_written():
    spec = BufferSpec("z", "float32", 64 * MIB // 4)
    a = spec.materialize()
    assert a.nbytes == 64 * MIB and a.flags.writeable and not a.any()
    a[12345] = 7.0
    b = spec.materialize()  # a fresh buffer: the other launch's write is not in it
    assert b[12345] == 0.0 and a[12345] == 7.0


def test_images_are_private_to_each_launch():
    buffer_image.clear()
    spec = BufferSpec("r", "int32", 2 * MIB, init={"random": {"seed": 3, "low": 0, "high": 1000}})
    expect = np.random.default_rng(3).integers(0, 1000, 2 * MIB, endpoint=False).astype(np.int32)
    a = spec.materialize()
    np.testing.assert_array_equal(a, expect)
    a[:10] = -1  # a launch's store: copy-on-write, the image and the next launch do not see it
    b = spec.materialize()
    np.testing.assert_array_equal(b, expect)
    assert (a[:10] == -1).all()
    ar = BufferSpec("x", "float32", 2 * MIB, init="arange").materialize()
    assert ar[2 * MIB - 1] == np.float32(2 * MIB - 1)


def test_npy_file_is_mapped_copy_on_write(tmp_path):
    data = np.arange(MIB, dtype=np.float32)
    np.save(tmp_path / "d.npy", data)
    spec = BufferSpec("f", "float32", MIB - 4, init={"file": "d.npy"}, base_dir=str(tmp_path))
    a = spec.materialize()
    np.testing.assert_array_equal(a, data[: MIB - 4])
    a[0] = -1.0
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy")[:2], [0.0, 1.0])  # the file is untouched
    # another dtype: converted (an image)
    b = BufferSpec("g", "float64", MIB, init={"file": "d.npy"}, base_dir=str(tmp_path)).materialize()
    assert b.dtype == np.float64 and b[MIB - 1] == MIB - 1


def test_spec_identity_keys_contents_not_bytes(tmp_path):
    """Launch keys hash a spec's description: equal descriptions, equal contents."""
    z1 = BufferSpec("a", "float32", 100)
    z2 = BufferSpec("b", "float32", 100, init="zeros")
    assert z1.identity() == z2.identity()
    assert BufferSpec("a", "float32", 100, init="ones").identity() != z1.identity()
    assert BufferSpec("a", "float32", 101).identity() != z1.identity()
    np.save(tmp_path / "d.npy", np.zeros(4, np.float32))
    f = BufferSpec("f", "float32", 4, init={"file": "d.npy"}, base_dir=str(tmp_path))
    before = f.identity()
    os.utime(tmp_path / "d.npy", ns=(1, 1))
    assert f.identity() != before  # a rewritten file is another input
    with pytest.raises(Exception, match="cannot read"):
        BufferSpec("m", "float32", 4, init={"file": "missing.npy"}, base_dir=str(tmp_path)).identity()


def test_dedup_with_specs_reuses_equal_launches(tmp_path, hypa_cli):
    """Identical launches over spec buffers are analysed once (keyed by the specs)."""
    (tmp_path / "k.ptx").write_text(ADD_AT)
    spec = _spec(1, 4096) + "\n" + _spec(1, 4096).split("[buffers.out]")[0]
    (tmp_path / "l.toml").write_text(spec)
    rc, out, err = hypa_cli("profile", str(tmp_path / "k.ptx"), "--launch", str(tmp_path / "l.toml"),
                            "--no-progress")
    assert rc == 0, err
    assert "2 launches of 1 kernel; 1 analysed, 1 reused" in out + err


def test_bad_buffer_specs_are_one_line_errors(tmp_path):
    """An unknown dtype or init in a spec is the user's error, named in one line (the batch
    keys launches by their specs before any buffer is made)."""
    (tmp_path / "bad.toml").write_text(
        '[[launch]]\nkernel = "saxpy"\ngrid = 1\nblock = 32\nargs = [10, 2.0, "x", "y"]\n'
        '[buffers.x]\ndtype = "bogus"\ncount = 10\n'
        '[buffers.y]\ndtype = "float32"\ncount = 10\ninit = { nope = 1 }\n')
    r = subprocess.run([sys.executable, "-m", "hypa.tools.hypa_cli", "profile", str(SAXPY), "--launch",
                        str(tmp_path / "bad.toml"), "--no-progress"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, HYPA_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 1, r.stderr
    assert "buffer 'x': unknown dtype 'bogus'" in r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(Exception, match=r"buffer 'y': init must be zeros, ones"):
        BufferSpec("y", "float32", 4 * MIB, init={"nope": 1}).materialize()


_LOOP = """
.visible .entry count_rows(.param .u64 out, .param .u64 data, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [data];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.f32 %f1, 0f00000000;
LOOP:
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    add.f32 %f1, %f1, %f2;
    add.u32 %r2, %r2, 32;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd5, %r3, 4;
    add.s64 %rd5, %rd1, %rd5;
    st.global.f32 [%rd5], %f1;
    ret;
}
"""


def test_slice_makes_no_contents_it_never_reads(monkeypatch):
    """Slice mode, memory not kept after the launch (batches, the command line): a buffer
    the slice never reads (here both: the loop's trip count is a parameter) is zeros of its
    size, its random contents never made (64 MiB of them cost a fifth of a second); its
    arguments are still checked -- without a sample where numpy certainly takes them, by
    drawing one where not.  Counts are those of the launch with every buffer made."""
    from helpers import HEADER
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import Launch, LaunchError

    made: list[tuple[str, int]] = []
    real = BufferSpec._contents

    def counted(self, dt, n):
        made.append((self.name, n))
        return real(self, dt, n)

    monkeypatch.setattr(BufferSpec, "_contents", counted)
    n = 1 << 20
    buffers = {"out": BufferSpec("out", "float32", 32, "zeros"),
               "data": BufferSpec("data", "float32", n, {"random": {"seed": 3, "low": 0, "high": 1}})}
    launch = Launch(kernel="count_rows", grid=(1, 1, 1), block=(32, 1, 1), args=["out", "data", n], buffers=buffers)
    emu = Emulator(parse_ptx(HEADER + _LOOP), mode="slice")
    buffer_image.clear()
    dropped = emu.run(launch, keep_buffers=False)
    assert made == []  # seed 3, bounds 0 and 1: nothing to draw
    made.clear()
    buffer_image.clear()
    kept = emu.run(launch)
    assert made == [("data", n)]
    assert dropped.metrics.values == kept.metrics.values
    assert int(dropped.metrics["thread_inst_executed"]) == 32 * (5 + 7 * (n // 32) + 5)  # 5 before the loop, 7 a trip, 5 after
    for init in ({"random": {"seed": -1}}, {"random": {"seed": 1, "low": 0, "high": float("inf")}},
                 {"random": {"seed": 1, "low": 0, "high": "1"}}):
        made.clear()
        bad = dict(buffers, data=BufferSpec("data", "float32", n, init))
        with pytest.raises(LaunchError, match="buffer 'data'"):
            emu.run(Launch(kernel="count_rows", grid=(1, 1, 1), block=(32, 1, 1), args=["out", "data", n],
                           buffers=bad), keep_buffers=False)
        assert made == [("data", 1)]  # checked by drawing one
    ints = dict(buffers, data=BufferSpec("data", "int32", n, {"random": {"seed": 1, "low": 5, "high": 5}}))
    with pytest.raises(LaunchError, match="buffer 'data'"):  # an empty range: numpy's message
        emu.run(Launch(kernel="count_rows", grid=(1, 1, 1), block=(32, 1, 1), args=["out", "data", n], buffers=ints),
                keep_buffers=False)
