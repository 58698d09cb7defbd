"""Cache entries are checked before they are used (issue 31, case 5).

Each case damages the cache as the issue's adversarial pass did, then runs a fresh
process: it must give the right results with one warning naming the entry, rewrite the
entry (the run after gives no warning), never hang, never crash, never stop.  The same for
``hypa run``'s cached ``libcudart.so``.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess

import pytest

from helpers import HYPA_OPT, ROOT, build_cuda_program, run_hypa

from hypa.runtime.emulator import jit

SAXPY = str(ROOT / "examples" / "saxpy.ptx")
LAUNCH = "grid=4 block=256 args=1000,2.0,x,y buffer.x=float32:1000:arange buffer.y=float32:1000:ones"
# a second kernel whose entry can stand in for saxpy's
OTHER = str(ROOT / "tests" / "kernels" / "ptx" / "divergence.sm_80.ptx")
OTHER_LAUNCH = "kernel=divergent_if grid=1 block=64 args=in,out buffer.in=int32:64:arange buffer.out=int32:192:zeros"


def _opt(cache, ptx: str = SAXPY, launch: str = LAUNCH, preexec=None) -> subprocess.CompletedProcess:
    """``hypa-opt --emulate`` in a fresh process; its stdout reduced to the launch's counts
    (the JSON report without its time and notes)."""
    env = dict(os.environ, HYPA_CACHE_DIR=str(cache), HYPA_JIT="baseline")
    env.pop("HYPA_NO_CACHE", None)
    r = subprocess.run([*HYPA_OPT, "--mode", "full", f"--emulate={launch}", "--format", "json", ptx],
                       capture_output=True, text=True, env=env, timeout=120, preexec_fn=preexec)
    if r.returncode == 0:
        (rec,) = json.loads(r.stdout)
        r.stdout = json.dumps({k: v for k, v in rec.items() if k not in ("duration_ms", "notes")}, sort_keys=True)
    return r


def _entries(cache) -> set[str]:
    """The kernels' entries (helpers' names start with h, prepared records end in .rec)."""
    return {p.name for p in cache.iterdir() if p.suffix == ".o" and not p.name.startswith("h")}


@pytest.fixture
def cache(tmp_path):
    c = tmp_path / "cache"
    first = _opt(c)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""
    (entry,) = _entries(c)
    return c, c / entry, first.stdout


def _damage_and_run(cache, damage) -> None:
    c, entry, good = cache
    damage(entry)
    r = _opt(c)
    assert r.returncode == 0, r.stderr
    assert r.stdout == good
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hypa: warning: damaged entry in the compile cache ({entry}: "), \
        r.stderr
    assert lines[0].endswith("): compiling again")
    assert entry.is_file() and not entry.is_symlink()  # written anew
    again = _opt(c)
    assert (again.returncode, again.stdout, again.stderr) == (0, good, "")
    return lines[0]


def test_entry_of_another_kernel(cache, tmp_path):
    """Another kernel's valid entry copied over this one's: its seal binds it to its key."""
    other = tmp_path / "other"
    assert _opt(other, OTHER, OTHER_LAUNCH).returncode == 0
    (theirs,) = _entries(other)
    line = _damage_and_run(cache, lambda e: shutil.copyfile(other / theirs, e))
    assert "its seal does not match its contents and key" in line


def test_garbage_object_with_a_valid_seal(cache):
    def garbage(entry):
        key = entry.name[:-2]
        entry.write_bytes(jit._seal(key, b"\x7fELF" + bytes(range(256)) * 64))

    line = _damage_and_run(cache, garbage)
    assert "not an object file of this machine" in line


def test_object_without_its_entry_symbol(cache):
    """A sound object file of this machine (a helper's), sealed under the kernel's key."""
    def helper_object(entry):
        key = entry.name[:-2]
        helper = next(p for p in entry.parent.iterdir() if p.name.startswith("h"))
        obj = jit._unseal(helper.name[:-2], helper.read_bytes())[0]
        entry.write_bytes(jit._seal(key, obj))

    line = _damage_and_run(cache, helper_object)
    assert f"its object file does not define {jit._entry_name(cache[1].name[:-2])}" in line


@pytest.mark.parametrize("how", ["truncated", "emptied", "flipped"])
def test_truncated_or_corrupted_entry(cache, how):
    def damage(entry):
        data = entry.read_bytes()
        entry.write_bytes({"truncated": data[:len(data) // 2], "emptied": b"",
                           "flipped": data[:-1] + bytes([data[-1] ^ 1])}[how])

    _damage_and_run(cache, damage)


@pytest.mark.parametrize("what", ["fifo", "link-to-dev-zero", "40-GB-file", "directory"])
def test_what_is_not_an_entry_is_never_read(cache, what):
    """A FIFO blocked for ever, /dev/zero and a 40 GB (sparse) file were read until memory ran out."""
    def damage(entry):
        entry.unlink()
        if what == "fifo":
            os.mkfifo(entry)
        elif what == "link-to-dev-zero":
            entry.symlink_to("/dev/zero")
        elif what == "40-GB-file":
            with open(entry, "wb") as f:
                f.truncate(40 << 30)
        else:
            entry.mkdir()

    line = _damage_and_run(cache, damage)
    assert {"fifo": "not a regular file", "link-to-dev-zero": "a symbolic link, not a file hypa wrote",
            "40-GB-file": "42949672960 bytes, more than any entry hypa writes",
            "directory": "not a regular file"}[what] in line or "Is a directory" in line


def test_damaged_prepared_record(cache):
    c, _entry, good = cache
    (rec,) = [p for p in c.iterdir() if p.suffix == ".rec"]
    rec.write_bytes(rec.read_bytes()[:-3])
    r = _opt(c)
    assert (r.returncode, r.stdout) == (0, good)
    assert r.stderr == (f"hypa: warning: damaged entry in the compile cache ({rec}: its seal does not match its "
                        f"contents and name): preparing again\n")


def _full_disk() -> None:
    """Writes past 4 KB fail as on a full disk (EFBIG instead of ENOSPC: no root needed)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_full_cache_is_one_warning_and_leaves_no_temporary_files(tmp_path):
    c = tmp_path / "cache"
    good = _opt(tmp_path / "other")
    r = _opt(c, preexec=_full_disk)
    assert (r.returncode, r.stdout) == (0, good.stdout)
    assert r.stderr == (f"hypa: warning: cannot write the compile cache ({c}: File too large); kernels will be "
                        f"compiled again next time\n")
    assert not [p.name for p in c.iterdir() if p.name.endswith(".tmp")]


def test_unusable_cache_directory_is_one_warning(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    good = _opt(tmp_path / "other")
    r = _opt(blocker / "cache")
    assert (r.returncode, r.stdout) == (0, good.stdout)
    assert r.stderr == (f"hypa: warning: cannot write the compile cache ({blocker / 'cache'}: Not a directory); "
                        f"kernels will be compiled again next time\n")


# -- hypa run's libcudart.so -------------------------------------------------------------------

PROGRAM = r"""
#include <cstdio>
__global__ void add1(int *x) { x[threadIdx.x] += 1; }
int main() {
    int h[32], *d;
    for (int i = 0; i < 32; i++) h[i] = i;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    add1<<<1, 32>>>(d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d %d\n", h[0], h[31]);
    return 0;
}
"""


@pytest.fixture
def shim_cache(tmp_path, monkeypatch):
    from hypa.cudart import shim

    monkeypatch.setenv("HYPA_CACHE_DIR", str(tmp_path / "cache"))
    try:
        lib = shim.build(13)
    except shim.BuildError as e:
        pytest.skip(f"hypa cannot build its CUDA runtime library here: {e}")
    return shim, lib


@pytest.mark.parametrize("how", ["truncated", "emptied", "swapped", "fifo"])
def test_cached_libcudart_is_checked(shim_cache, capsys, how):
    shim, lib = shim_cache
    good = open(lib, "rb").read()
    if how == "truncated":
        open(lib, "wb").write(good[: len(good) // 2])
    elif how == "emptied":
        open(lib, "wb").close()
    elif how == "swapped":  # another valid shared library of the same name
        shutil.copyfile(shim.build(12), lib)
    else:
        os.remove(lib)
        os.mkfifo(lib)
    capsys.readouterr()
    assert shim.build(13) == lib
    err = capsys.readouterr().err
    assert err.startswith(f"hypa run: warning: the cached libcudart.so.13 ({lib}) is damaged (")
    assert err.endswith("): building it again\n") and err.count("\n") == 1
    assert hashlib.sha256(open(lib, "rb").read()).hexdigest() == hashlib.sha256(good).hexdigest()
    shim.build(13)
    assert capsys.readouterr().err == ""


def test_hypa_run_with_a_truncated_library_and_with_an_unwritable_cache(tmp_path):
    exe = build_cuda_program(tmp_path, "add1", PROGRAM)
    cache = tmp_path / "cache"
    env = {"HYPA_CACHE_DIR": str(cache)}
    r = run_hypa("run", "-q", "--", str(exe), env=dict(os.environ, **env), timeout=300)
    if r.returncode != 0 and "cannot build" in r.stderr:
        pytest.skip(r.stderr)
    assert (r.returncode, r.stdout) == (0, "1 32\n"), r.stderr
    (lib,) = cache.glob("cudart/*/libcudart.so.13")
    lib.write_bytes(lib.read_bytes()[:4096])  # was SIGBUS (exit 135) on every run
    r = run_hypa("run", "-q", "--", str(exe), env=dict(os.environ, **env), timeout=300)
    assert (r.returncode, r.stdout) == (0, "1 32\n"), r.stderr
    assert f"hypa run: warning: the cached libcudart.so.13 ({lib}) is damaged (" in r.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run_hypa("run", "-q", "--", str(exe), env=dict(os.environ, HYPA_CACHE_DIR=str(blocker / "c")), timeout=300)
    assert (r.returncode, r.stdout) == (0, "1 32\n"), r.stderr
    assert r.stderr.startswith(f"hypa run: warning: cannot write the cache ({blocker / 'c' / 'cudart'}")
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
