"""The fuzzer's architecture-file and binary targets in CI (a deterministic slice), and
each defect they found as a regression test with the message it now gives."""

from __future__ import annotations

import copy
import importlib.util
import os
import struct
import tomllib

import pytest

from hypa.cudart.program import NotAProgram, inspect
from hypa.runtime.report.inputs import InputError, InputOptions, load_sources
from hypa.runtime.models.timing import TimingError, _arch_from_dict, _check_arch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARIES = os.path.join(ROOT, "tests", "unit", "data", "binaries")


def _fuzz():
    spec = importlib.util.spec_from_file_location("hypa_fuzz", os.path.join(ROOT, "benchmarks", "fuzz.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_deterministic_campaign_over_arch_files_and_binaries_has_no_crash_or_hang():
    counts = _fuzz().campaign(["arch-file", "binary"], cases=600, seconds=None, seed=20261126, quiet=True)
    assert all(c["crash"] == 0 and c["hang"] == 0 for c in counts.values()), counts
    assert all(c["accepted"] > 0 and c["rejected"] > 0 for c in counts.values()), counts


def _sm90() -> dict:
    with open(os.path.join(ROOT, "runtime", "models", "arch", "sm_90.toml"), "rb") as f:
        return tomllib.load(f)


def _edit(path: tuple, value) -> dict:
    d = copy.deepcopy(_sm90())
    t = d
    for k in path[:-1]:
        t = t[k]
    if value is _DELETE:
        del t[path[-1]]
    else:
        t[path[-1]] = value
    return d


_DELETE = object()


@pytest.mark.parametrize("path, value, message", [
    (("memory", "const_latency"), _DELETE, r"\[memory\] lacks const_latency"),  # was a KeyError in the estimate
    (("occupancy", "register_alloc_unit"), 0, "occupancy.register_alloc_unit must be positive, not 0"),
    (("memory", "dram_gbs"), 0, "memory.dram_gbs must be positive"),
    (("classes", "misc"), _DELETE, r"\[classes\] lacks misc"),
    (("classes", "fp32", "unit"), 1.5, "classes.fp32.unit must be the name of a unit, not 1.5"),  # was a TypeError
    (("classes", "fp32", "latency"), [4], r"classes.fp32.latency must be cycles or a memory level, not \[4\]"),
    (("core", "sub_partitions"), float("inf"), "cannot convert float infinity to integer"),  # was an OverflowError
])
def test_bad_architecture_files_are_messages(path, value, message):
    with pytest.raises(TimingError, match=message):
        _check_arch(_arch_from_dict(_edit(path, value), "arch.toml"))


def test_a_truncated_elf_program_is_a_message(tmp_path):
    data = open(os.path.join(BINARIES, "libkernels.so"), "rb").read()
    p = tmp_path / "prog"
    p.write_bytes(data[:40])  # the program headers are cut off (was struct.error)
    with pytest.raises(NotAProgram, match="a damaged ELF file"):
        inspect(str(p))
    p.write_bytes(data[:0x20] + struct.pack("<Q", 1 << 62) + data[0x28:])  # e_phoff far outside the file
    with pytest.raises(NotAProgram, match="a damaged ELF file"):
        inspect(str(p))


def test_a_damaged_zstd_fatbin_is_a_message(tmp_path):
    pytest.importorskip("zstandard")
    data = bytearray(open(os.path.join(BINARIES, "saxpy.zstd.fatbin"), "rb").read())
    for i in range(len(data) - 64, len(data) - 8):  # the compressed payload's tail
        data[i] ^= 0x5A
    p = tmp_path / "k.fatbin"
    p.write_bytes(bytes(data))
    with pytest.raises(InputError, match="Zstandard-compressed PTX is damaged"):
        load_sources(str(p), InputOptions(cuobjdump=False))


def test_an_elf_section_table_outside_the_file_is_no_crash(tmp_path):
    data = bytearray(open(os.path.join(BINARIES, "libkernels.so"), "rb").read())
    data[0x28:0x30] = struct.pack("<Q", (1 << 64) - 16)  # e_shoff: was an OverflowError
    p = tmp_path / "lib.so"
    p.write_bytes(bytes(data))
    # the section table is ignored; the fatbin is still found by its magic number
    sources = load_sources(str(p), InputOptions(cuobjdump=False))
    assert sources and all(".entry" in s.ptx for s in sources)


def _seed_profile():
    return copy.deepcopy(_fuzz().Targets().seed_profile())


def test_a_profile_with_a_null_time_estimate_renders():
    from hypa.runtime.report import html as html_report

    data = _seed_profile()
    data[0]["time_estimate"] = None  # was a TypeError in the per-kernel summary
    assert html_report.profile_problem(data) is None
    assert "<html" in html_report.build(data, cfg="none").html


def test_a_profile_from_an_unknown_architecture_renders_without_a_roofline():
    from hypa.runtime.report import html as html_report

    data = _seed_profile()
    for d in data:
        d["time_estimate"]["arch"] = "<img src=x onerror=alert(1)>"  # was a TimingError
    page = html_report.build(data, cfg="none").html
    assert "No roofline: the architecture" in page and "<img src=x" not in page


def test_a_zstd_payload_too_large_for_memory_is_a_message(monkeypatch):
    zstandard = pytest.importorskip("zstandard")
    from hypa.runtime.report import inputs

    class Exhausted:
        def decompress(self, *a, **k):
            raise MemoryError

    monkeypatch.setattr(zstandard, "ZstdDecompressor", Exhausted)
    monkeypatch.setitem(__import__("sys").modules, "compression", None)  # Python 3.14's own zstd: not used
    with pytest.raises(InputError, match="does not fit in memory"):
        inputs.zstd_decompress(b"\x28\xb5\x2f\xfd", 1 << 20, "k.fatbin")
