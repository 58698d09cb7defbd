"""Files `hypa report` and `hypa diff` are given, or that a profile names: regular files of a
bounded size only, JSON in any Unicode encoding, one-line errors (issue 31, item 8)."""

from __future__ import annotations

import json
import os

import pytest

from helpers import KERNEL_PTX as PTX, LAUNCHES, run_hypa


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    d = tmp_path_factory.mktemp("p")
    p = run_hypa("profile", "--launch", os.path.join(LAUNCHES, "divergence.toml"), "-o", str(d / "p.json"))
    assert p.returncode == 0, p.stderr
    return d, json.loads((d / "p.json").read_text())


def _write(d, name, entries):
    (d / name).write_text(json.dumps(entries))
    return str(d / name)


def test_a_profile_whose_ptx_no_longer_defines_the_kernel(profile):
    d, entries = profile
    path = _write(d, "gone.json", [{**e, "kernel": "gone", "blocks": [{**b, "function": "gone"} for b in e["blocks"]]}
                                   for e in entries])
    p = run_hypa("report", path, "-o", str(d / "gone.html"))
    assert p.returncode == 0, p.stderr
    assert "no longer defines it; showing block counts only" in p.stderr
    assert "no longer defines gone: block counts only" in (d / "gone.html").read_text()


def test_a_file_field_naming_a_device_is_never_read(profile):
    d, entries = profile
    path = _write(d, "zero.json", [{**e, "file": "/dev/zero"} for e in entries])
    p = run_hypa("report", path, "-o", str(d / "zero.html"), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "/dev/zero is not a regular file" in p.stderr


def test_utf16_profiles_are_read(profile):
    d, entries = profile
    (d / "u16.json").write_bytes(json.dumps(entries).encode("utf-16"))
    assert run_hypa("report", str(d / "u16.json"), "-o", str(d / "u16.html")).returncode == 0
    p = run_hypa("diff", str(d / "u16.json"), str(d / "p.json"))
    assert p.returncode == 0 and f"launches: {len(entries)} paired, 0 changed" in p.stdout


@pytest.mark.parametrize("case,says", [
    ("deep", "JSON nested deeper than any profile"),
    ("fifo", "not a regular file (a device, FIFO or directory)"),
    ("binary", "not JSON text (UTF-8, -16 or -32): a binary file?"),
    ("bytes", "not JSON: Expecting value: line 1 column 1 (char 0)"),
])
def test_what_is_not_a_profile_is_one_line(profile, case, says):
    d, _ = profile
    path = d / f"{case}.json"
    if case == "deep":
        path.write_text("[" * 100000 + "]" * 100000)
    elif case == "fifo":
        if not path.exists():
            os.mkfifo(path)
    elif case == "binary":  # not text in any encoding JSON allows
        path.write_bytes(b"\x80\x81\xfe\x90" * 64)
    else:  # bytes that decode, but to no JSON
        path.write_bytes(bytes(range(256)) * 4)
    for cmd in (["report", str(path), "-o", str(d / "x.html")], ["diff", str(path), str(d / "p.json")]):
        p = run_hypa(*cmd, timeout=60)
        assert p.returncode == 1 and p.stderr == f"hypa: error: {path}: {says}\n", p.stderr
