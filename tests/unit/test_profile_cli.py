"""``hypa profile`` and ``hypa report`` at scale: inputs (files, directories, globs,
CUDA, fatbins, ELF binaries), per-CTA counts, deduplicated launches, the local
pool and a Dask cluster, the writers, the HTML page in a headless browser."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

from hypa.ptxdialect import parse_ptx_file
from hypa.runtime.report import inputs as inp
from hypa.runtime.report.batch import ProfileOptions, Progress, run_profile
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import launches_from_toml

from helpers import (CHROMIUM, KERNEL_PTX as PTX, KERNELS, LAUNCHES, ROOT, requires, run_hypa,
                     saxpy_toml)

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "binaries")
TRITON_TOML = os.path.join(ROOT, "tests", "filecheck", "Execution", "Inputs", "triton.toml")

SAXPY_TOML = saxpy_toml(1000, 2.5, grid=4, count=1024, y_init="ones")

STRIP = ("duration_ms", "notes")


def comparable(dicts: list[dict]) -> list[dict]:
    return [{k: v for k, v in d.items() if k not in STRIP} for d in dicts]


def _toml(tmp_path, text: str, name: str = "l.toml") -> str:
    t = tmp_path / name
    t.write_text(text)
    return str(t)


def direct(ptx: str, toml: str, **kw):
    emu = Emulator(parse_ptx_file(ptx), **kw)
    return [emu.run(L) for L in launches_from_toml(toml)]


# -- inputs ----------------------------------------------------------------------------------------


def test_directories_globs_and_launches_toml(tmp_path, hypa_cli):
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(os.path.join(PTX, "divergence.sm_80.ptx"), tmp_path / "a" / "b" / "div.ptx")
    shutil.copy(os.path.join(PTX, "saxpy.sm_80.ptx"), tmp_path / "a" / "saxpy.ptx")
    (tmp_path / "a" / "notes.txt").write_text("not a kernel")
    toml = open(os.path.join(LAUNCHES, "divergence.toml")).read().replace("../ptx/divergence.sm_80.ptx", "a/b/div.ptx")
    (tmp_path / "launches.toml").write_text(toml)
    files, tomls = inp.expand_inputs([str(tmp_path)])
    assert sorted(os.path.basename(f) for f in files) == ["div.ptx", "saxpy.ptx"]
    assert tomls == [str(tmp_path / "launches.toml")]
    files, _ = inp.expand_inputs([str(tmp_path / "**" / "*.ptx")])
    assert len(files) == 2
    with pytest.raises(inp.InputError, match="no file matches"):
        inp.expand_inputs([str(tmp_path / "*.cubin")])
    with pytest.raises(inp.InputError, match="no such file"):
        inp.expand_inputs([str(tmp_path / "missing.ptx")])

    # a directory with launches.toml profiles with one command; saxpy has no launch
    rc, out, err = hypa_cli("profile", str(tmp_path), "--format", "json")
    assert rc == 0
    got = json.loads(out)
    want = direct(os.path.join(PTX, "divergence.sm_80.ptx"), os.path.join(LAUNCHES, "divergence.toml"))
    assert [d["kernel"] for d in got] == [r.kernel for r in want]
    for d, r in zip(got, want):
        for k, v in r.metrics.values.items():
            assert d[k] == v, k
        assert d["file"].endswith("div.ptx") and d["reused_from"] is None
    assert "launches from" in err
    r = Emulator(parse_ptx_file(os.path.join(PTX, "saxpy.sm_80.ptx"))).run(launches_from_toml(_toml(tmp_path, SAXPY_TOML))[0])
    n = r.metrics["static_instructions"]
    assert f"kernel saxpy (saxpy.ptx): no launch given, counted statically: {n} instructions" in err


def test_static_only_kernels_in_the_table(hypa_cli):
    rc, out, _ = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_80.ptx"), os.path.join(PTX, "divergence.sm_80.ptx"))
    assert rc == 0
    assert "kernel saxpy (saxpy.sm_80.ptx): no launch given, counted statically" in out
    assert out.count("no launch given") == 4
    assert "hypa profile: no launches; 4 kernels counted statically" in out


def test_launch_naming_a_missing_kernel_fails(tmp_path, hypa_cli):
    t = tmp_path / "l.toml"
    t.write_text(SAXPY_TOML.replace('kernel = "saxpy"', 'kernel = "nope"'))
    rc, _, err = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_80.ptx"), "--launch", str(t))
    assert rc == 1 and "no kernel 'nope' in the given files (kernels: saxpy)" in err


# -- options that would do nothing (issue 27) -------------------------------------------------------


def test_a_kernel_filter_that_matches_nothing_lists_the_kernels(hypa_cli):
    rc, out, err = hypa_cli("profile", os.path.join(PTX, "divergence.sm_80.ptx"), "--kernel", "nosuch")
    assert rc == 1 and out == ""
    assert "hypa: error: --kernel 'nosuch' matches no kernel; the kernels: " in err
    assert "_Z12divergent_ifPKiPi (divergent_if(int const*, int*))" in err


def test_the_output_extension_chooses_the_format(tmp_path, hypa_cli):
    toml = _toml(tmp_path, SAXPY_TOML)
    ptx = os.path.join(PTX, "saxpy.sm_80.ptx")
    rc, _, err = hypa_cli("profile", ptx, "--launch", toml, "-o", str(tmp_path / "p.json"))
    assert rc == 0, err
    got = json.loads((tmp_path / "p.json").read_text())
    assert [(d["record"], d["kernel"], d["kernel_name"]) for d in got] == [("launch", "saxpy", "saxpy")]
    rc, _, err = hypa_cli("profile", ptx, "--launch", toml, "-o", str(tmp_path / "p.csv"))
    assert rc == 0 and (tmp_path / "p.csv").read_text().startswith("launch,kernel,file,")
    rc, _, err = hypa_cli("profile", ptx, "--launch", toml, "--format", "csv", "-o", str(tmp_path / "q.json"))
    assert rc == 2 and "--format csv contradicts -o " in err and "(its extension says json)" in err
    rc, _, err = hypa_cli("profile", ptx, "--launch", toml, "-o", str(tmp_path / "p.html"))
    assert rc == 2 and "an HTML page is `hypa report ... -o " in err
    # the memory columns need the memory metrics: asking for them turns them on
    rc, _, err = hypa_cli("profile", ptx, "--launch", toml, "--csv-columns", "memory", "-o", str(tmp_path / "m.csv"))
    rows = list(csv.DictReader(io.StringIO((tmp_path / "m.csv").read_text())))
    assert rc == 0 and len(rows) == 3 and {r["space"] for r in rows} == {"global"}
    rc, out, _ = hypa_cli("profile", ptx, "--launch", toml, "--by", "kernel", "--format", "json")
    assert [(d["record"], d["launches"]) for d in json.loads(out)] == [("kernel", 1)]


def test_version():
    from importlib.metadata import version

    p = run_hypa("--version")
    assert p.returncode == 0 and p.stdout == f"hypa {version('hypa')}\n"


def test_hypa_opt_emulate_that_took_the_input_file(tmp_path):
    from helpers import run_hypa_opt

    p = run_hypa_opt("--emulate", os.path.join(PTX, "saxpy.sm_80.ptx"))
    assert p.returncode == 1 and p.stderr == (
        f"hypa-opt: error: --emulate took '{os.path.join(PTX, 'saxpy.sm_80.ptx')}' as its launch spec: put the input "
        f"file first (hypa-opt {os.path.join(PTX, 'saxpy.sm_80.ptx')} --emulate=SPEC) or write --emulate=SPEC\n")


# -- per CTA ---------------------------------------------------------------------------------------


def _spmv():
    emu = Emulator(parse_ptx_file(os.path.join(PTX, "spmv_csr.sm_80.ptx")))
    return emu, launches_from_toml(os.path.join(LAUNCHES, "spmv_csr.toml"))[0]


def test_per_cta_counts_add_up_and_match_forked_workers():
    emu, L = _spmv()  # data-dependent row loops: CTAs differ
    whole = emu.run(L)
    each = emu.run(L, per_cta=True)
    forked = emu.run(L, per_cta=True, jobs=2)
    assert len(each.per_cta) == L.num_ctas == 3
    assert each.metrics.values == whole.metrics.values == forked.metrics.values
    assert each.per_cta == forked.per_cta
    for k in ("inst_executed", "thread_inst_executed", "branch", "divergent_branch", "flop_count_sp"):
        assert sum(c[k] for c in each.per_cta) == whole.metrics[k], k
    assert len({c["inst_executed"] for c in each.per_cta}) > 1
    assert all(c["static_estimate"] == c["static_instructions"] * 128 for c in each.per_cta)


def test_cta_ranges_merge_to_the_whole_launch():
    emu, L = _spmv()
    whole = emu.run(L)
    parts = [emu.run(L, ctas=(2, 3)), emu.run(L, ctas=(0, 2))]
    merged = emu.merge(L, parts)
    assert merged.metrics.values == whole.metrics.values
    assert [b.as_dict() for b in merged.metrics.blocks] == [b.as_dict() for b in whole.metrics.blocks]
    assert merged.metrics.opcodes == whole.metrics.opcodes
    with pytest.raises(Exception, match="cover"):
        emu.merge(L, parts[:1])


def test_per_cta_writers(hypa_cli):
    toml = os.path.join(LAUNCHES, "spmv_csr.toml")
    rc, out, _ = hypa_cli("profile", "--launch", toml, "--per-cta", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and [(r["cta_x"], r["cta_y"], r["cta_z"]) for r in rows] == [("0", "0", "0"), ("1", "0", "0"), ("2", "0", "0")]
    emu, L = _spmv()
    each = emu.run(L, per_cta=True)
    assert [int(r["thread_inst_executed"]) for r in rows] == [c["thread_inst_executed"] for c in each.per_cta]
    rc, out, _ = hypa_cli("profile", "--launch", toml, "--per-cta", "--format", "json")
    d = json.loads(out)[0]
    assert [c["cta"] for c in d["ctas"]] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    rc, out, _ = hypa_cli("profile", "--launch", os.path.join(LAUNCHES, "divergence.toml"), "--per-cta")
    # 2 CTAs of 96 threads that count alike are one group
    assert "per CTA, launch 3" in out and "  0-1 " in out


# -- identical launches ----------------------------------------------------------------------------


DEDUP_TOML = """
[[launch]]
file = "{ptx}"
kernel = "spmv_csr"
grid = 3
block = 128
args = [300, "row_ptr", "col", "val", "x", "y"]

[[launch]]   # float contents differ: the slice never reads them -> reused
file = "{ptx}"
kernel = "spmv_csr"
grid = 3
block = 128
args = [300, "row_ptr", "col", "val2", "x2", "y"]

[[launch]]   # other row pointers: the slice reads them -> analysed
file = "{ptx}"
kernel = "spmv_csr"
grid = 3
block = 128
args = [300, "row_ptr2", "col", "val", "x", "y"]

[[launch]]   # another grid -> analysed
file = "{ptx}"
kernel = "spmv_csr"
grid = 2
block = 128
args = [300, "row_ptr", "col", "val", "x", "y"]

[[launch]]   # same as the first
file = "{ptx}"
kernel = "spmv_csr"
grid = 3
block = 128
args = [300, "row_ptr", "col", "val", "x", "y"]

[buffers]
row_ptr = {{dtype = "int32", count = 301, init = {{file = "{data}/spmv_row_ptr.npy"}}}}
row_ptr2 = {{dtype = "int32", count = 301, init = "arange"}}
col = {{dtype = "int32", count = 1460, init = {{file = "{data}/spmv_col.npy"}}}}
val = {{dtype = "float32", count = 1460, init = {{random = {{seed = 6}}}}}}
val2 = {{dtype = "float32", count = 1460, init = {{random = {{seed = 60}}}}}}
x = {{dtype = "float32", count = 256, init = {{random = {{seed = 7}}}}}}
x2 = {{dtype = "float32", count = 256, init = "ones"}}
y = {{dtype = "float32", count = 300}}
"""


def test_identical_launches_are_analysed_once(tmp_path, hypa_cli):
    t = tmp_path / "dedup.toml"
    t.write_text(DEDUP_TOML.format(ptx=os.path.join(PTX, "spmv_csr.sm_80.ptx"), data=os.path.join(LAUNCHES, "data")))
    # bounds checks (the default) load col[j] to check x[col[j]]: j comes from memory, so the
    # load's base is unknown and every buffer's contents are part of the key
    rc, out, err = hypa_cli("profile", "--launch", str(t), "--format", "json")
    assert rc == 0 and [d["reused_from"] for d in json.loads(out)] == [None, None, None, None, 0]
    rc, out, err = hypa_cli("profile", "--launch", str(t), "--format", "json", "--no-bounds-check")
    got = json.loads(out)
    assert rc == 0
    assert [d["reused_from"] for d in got] == [None, 0, None, None, 0]
    assert "3 analysed, 2 reused from identical launches" in err
    rc, out2, err2 = hypa_cli("profile", "--launch", str(t), "--format", "json", "--no-dedup", "--no-bounds-check")
    fresh = json.loads(out2)
    assert "5 analysed, 0 reused" in err2
    assert [d["reused_from"] for d in fresh] == [None] * 5
    strip = lambda ds: [{k: v for k, v in d.items() if k not in STRIP + ("reused_from",)} for d in ds]  # noqa: E731
    assert strip(got) == strip(fresh)
    assert got[2]["thread_inst_executed"] != got[0]["thread_inst_executed"]
    # the table marks reused rows and the per-kernel summary counts them
    rc, out, _ = hypa_cli("profile", "--launch", str(t), "--no-bounds-check")
    assert "= #0" in out and "2 reused from identical launches" in out


def test_python_api(tmp_path):
    t = _toml(tmp_path, SAXPY_TOML)
    prof = run_profile([os.path.join(PTX, "saxpy.sm_80.ptx")], [t], ProfileOptions(per_cta=True), progress=False,
                       log=lambda m: None)
    (rec,) = prof.records
    assert rec.kernel == "saxpy" and rec.error is None and rec.reused_from is None
    assert len(rec.result.per_cta) == 4 and prof.analysed == 1 and prof.static == []
    # 1000 of 1024 threads pass the guard: the last CTA holds the 24 that do not
    assert [c["thread_inst_executed"] for c in rec.result.per_cta][:3] == [rec.result.per_cta[0]["thread_inst_executed"]] * 3
    assert rec.result.per_cta[3]["thread_inst_executed"] < rec.result.per_cta[0]["thread_inst_executed"]


def test_read_parameters_is_the_slice_s_reads():
    prog = Emulator(parse_ptx_file(os.path.join(PTX, "spmv_csr.sm_80.ptx")), bounds_check=False).program(None)
    assert prog.read_parameters() == {prog.params[1][0]}  # row_ptr only
    # bounds checks also load col[j] for the address of x[col[j]]: j is loaded, its base unknown
    assert Emulator(parse_ptx_file(os.path.join(PTX, "spmv_csr.sm_80.ptx"))).program(None).read_parameters() is None
    full = Emulator(parse_ptx_file(os.path.join(PTX, "spmv_csr.sm_80.ptx")), mode="full").program(None)
    assert full.read_parameters() is None  # x[col[j]]: an address loaded from memory


# -- many processes ---------------------------------------------------------------------------------


def test_local_pool_and_cta_chunks_match_a_sequential_run(hypa_cli):
    toml = os.path.join(LAUNCHES, "divergence.toml")
    _, seq, _ = hypa_cli("profile", "--launch", toml, "--format", "json", "--per-cta")
    _, pool, err = hypa_cli("profile", "--launch", toml, "--format", "json", "--per-cta", "-j", "2", "--cta-chunk", "1")
    assert "local pool of 2 processes" in err
    assert comparable(json.loads(seq)) == comparable(json.loads(pool))


def test_jobs_change_no_field(tmp_path, hypa_cli):
    """`-j 2` (forked workers) gives every field of `-j 1` but the time taken, per-line counts of
    a -lineinfo build included (they were dropped: a worker's result has no prepared program)."""
    toml = open(os.path.join(LAUNCHES, "divergence.toml")).read().replace(
        "../ptx/divergence.sm_80.ptx", os.path.join(PTX, "divergence.sm_80.lineinfo.ptx"))
    t = _toml(tmp_path, toml)
    _, one, _ = hypa_cli("profile", "--launch", t, "--format", "json")
    _, two, err = hypa_cli("profile", "--launch", t, "--format", "json", "-j", "2")
    assert "local pool of 2 processes" in err
    one, two = comparable(json.loads(one)), comparable(json.loads(two))
    assert all(d["source_lines"] for d in one)
    for a, b in zip(one, two, strict=True):
        assert {k: a.get(k) for k in set(a) | set(b)} == {k: b.get(k) for k in set(a) | set(b)}
    for bad in ("0", "-1"):
        rc, _, err = hypa_cli("profile", "--launch", t, "-j", bad)
        assert rc == 2 and f"argument -j/--jobs: must be at least 1, not '{bad}'" in err


def test_estimate_time_in_every_writer_and_from_merged_cta_ranges(hypa_cli):
    toml = os.path.join(LAUNCHES, "divergence.toml")
    _, seq, _ = hypa_cli("profile", "--launch", toml, "--format", "json", "--estimate-time=sm_80")
    _, pool, err = hypa_cli("profile", "--launch", toml, "--format", "json", "--estimate-time=sm_80",
                       "-j", "2", "--cta-chunk", "1")
    seq_d, pool_d = json.loads(seq), json.loads(pool)
    assert "local pool of 2 processes" in err
    assert all(d["time_estimate"]["arch"] == "sm_80" for d in seq_d)
    # the estimate is a function of the counts: merged CTA ranges give the same one
    assert [d["time_estimate"]["cycles"] for d in seq_d] == [d["time_estimate"]["cycles"] for d in pool_d]
    assert all(d["time_estimate"]["time_us"] > d["time_estimate"]["launch_overhead_us"] for d in seq_d)
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "csv", "--estimate-time")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][-4:] == ["est_time_us", "est_cycles", "est_bound", "est_arch"]
    assert all(r[-1] == "sm_90" and float(r[-4]) > 0 for r in rows[1:])
    _, out, _ = hypa_cli("profile", "--launch", toml, "--estimate-time")
    assert "est.us" in out.splitlines()[0]
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "csv", "--by", "kernel", "--estimate-time=sm_80")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][-1] == "est_time_us"
    total = sum(d["time_estimate"]["time_us"] for d in seq_d if d["kernel"] == rows[1][0])
    assert float(rows[1][-1]) == pytest.approx(total, rel=1e-3)
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "csv")
    assert "est_time_us" not in out


def test_csv_row_sets_carry_the_launch(hypa_cli):
    toml = os.path.join(LAUNCHES, "divergence.toml")
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "json")
    launches = json.loads(out)
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "csv", "--csv-columns", "mix")
    rows = list(csv.DictReader(io.StringIO(out)))
    for d in launches:
        mine = [r for r in rows if int(r["launch"]) == d["launch"] and r["basic_block"] == "*"]
        assert sum(int(r["warp_count"]) for r in mine) == d["inst_executed"]
        assert sum(int(r["thread_count"]) for r in mine) == d["thread_inst_executed"]
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "csv", "--csv-columns", "blocks")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sum(int(r["thread_inst_executed"]) for r in rows) == sum(d["thread_inst_executed"] for d in launches)


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    yield cluster.scheduler_address
    cluster.close()


def test_dask_cluster_gives_the_local_results(dask_cluster, hypa_cli):
    toml = os.path.join(LAUNCHES, "spmv_csr.toml")
    div = os.path.join(LAUNCHES, "divergence.toml")
    for t, extra in ((toml, ["--cta-chunk", "1"]), (div, [])):
        _, local, _ = hypa_cli("profile", "--launch", t, "--format", "json", "--per-cta")
        rc, remote, err = hypa_cli("profile", "--launch", t, "--format", "json", "--per-cta",
                              "--scheduler", dask_cluster, *extra)
        assert rc == 0 and f"Dask scheduler {dask_cluster}" in err
        assert comparable(json.loads(local)) == comparable(json.loads(remote))


# -- binaries ---------------------------------------------------------------------------------------


def _saxpy_toml(tmp_path) -> str:
    t = tmp_path / "saxpy.toml"
    t.write_text(SAXPY_TOML)
    return str(t)


@pytest.mark.parametrize("name", ["saxpy.none.fatbin", "saxpy.lz4.fatbin", "saxpy.zstd.fatbin", "libkernels.so"])
def test_own_fatbin_reader(name):
    if "zstd" in name or name.endswith(".so"):
        pytest.importorskip("zstandard")
    srcs = inp.load_sources(os.path.join(BIN, name), inp.InputOptions(cuobjdump=False))
    assert all(s.notes == ["PTX extracted with the fatbin reader"] for s in srcs)
    if name.endswith(".so"):
        # two translation units; saxpy's PTX exists for compute_80 and compute_90: the newest is taken
        assert [s.member for s in srcs] == ["sm_80 PTX 1", "sm_90 PTX 2"]
        assert ".entry _Z12divergent_ifPKiPi" in srcs[0].ptx and ".entry saxpy" in srcs[1].ptx
        old = inp.load_sources(os.path.join(BIN, name), inp.InputOptions(cuobjdump=False, ptx_arch="compute_80"))
        assert [s.member for s in old] == ["sm_80 PTX 1", "sm_80 PTX 2"]
    else:
        (s,) = srcs
        assert s.member == "sm_90 PTX" and s.ptx.lstrip().startswith(".version 9.0")
        ref = inp.load_sources(os.path.join(BIN, "saxpy.none.fatbin"), inp.InputOptions(cuobjdump=False))[0]
        assert s.ptx == ref.ptx
        # the embedded PTX is what nvcc -ptx writes (both CUDA 13.0, -arch=sm_90), less
        # comments and indentation
        norm = lambda t: [" ".join(ln.split("//")[0].split()) for ln in t.splitlines() if ln.split("//")[0].strip()]  # noqa: E731
        assert norm(s.ptx) == norm(open(os.path.join(PTX, "saxpy.sm_90.ptx")).read())


@pytest.mark.parametrize("name", ["saxpy.lz4.fatbin", "saxpy.zstd.fatbin", "libkernels.so"])
def test_cuobjdump_and_own_reader_agree(name):
    if inp.find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump is not installed")
    pytest.importorskip("zstandard")
    tool = inp.load_sources(os.path.join(BIN, name))
    own = inp.load_sources(os.path.join(BIN, name), inp.InputOptions(cuobjdump=False))
    assert all("cuobjdump" in s.notes[0] for s in tool)
    assert [(s.member, s.ptx) for s in tool] == [(s.member, s.ptx) for s in own]


def test_zstd_without_the_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression", None)
    with pytest.raises(inp.InputError, match="zstandard"):
        inp.load_sources(os.path.join(BIN, "saxpy.zstd.fatbin"), inp.InputOptions(cuobjdump=False))


def test_a_cubin_has_no_ptx():
    with pytest.raises(inp.InputError, match=r"is a cubin for sm_90 and no PTX.*compute_90,code=compute_90"):
        inp.load_sources(os.path.join(BIN, "saxpy.sm_90.cubin"), inp.InputOptions(cuobjdump=False))


def test_profile_a_fatbin_like_its_ptx(tmp_path, hypa_cli):
    pytest.importorskip("zstandard")
    t = _saxpy_toml(tmp_path)
    _, from_ptx, _ = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_90.ptx"), "--launch", t, "--format", "json")
    for f in ("saxpy.zstd.fatbin", "saxpy.lz4.fatbin"):
        rc, out, _ = hypa_cli("profile", os.path.join(BIN, f), "--launch", t, "--format", "json", "--no-cuobjdump")
        assert rc == 0
        a, b = json.loads(from_ptx)[0], json.loads(out)[0]
        assert b["member"] == "sm_90 PTX"
        for k in ("thread_inst_executed", "inst_executed", "flop_count_sp", "branch", "divergent_branch"):
            assert a[k] == b[k], k


def test_lz4_block_decoder():
    assert inp.lz4_block_decompress(b"\x50hello") == b"hello"
    # "ab", then a 10-byte match 2 back (overlapping), then "!"
    assert inp.lz4_block_decompress(b"\x26ab\x02\x00\x10!") == b"ab" + b"ab" * 5 + b"!"
    # a 20-byte literal run needs one extra length byte (15 + 5)
    assert inp.lz4_block_decompress(b"\xf0\x05" + b"x" * 20) == b"x" * 20
    # match length 4 + 15 + 255 + 1 = 275, offset 1 (a run of one byte)
    assert inp.lz4_block_decompress(b"\x1fa\x01\x00\xff\x01\x00", 276) == b"a" * 276
    with pytest.raises(inp.InputError, match="offset"):
        inp.lz4_block_decompress(b"\x10a\x05\x00\x00")
    with pytest.raises(inp.InputError, match="announced"):
        inp.lz4_block_decompress(b"\x50hello", 6)


@requires("nvcc")
def test_an_executable_with_compressed_ptx(tmp_path):
    # an executable whose fatbin holds compute_80 PTX only, every image compressed
    main_cu = tmp_path / "main.cu"
    main_cu.write_text(open(os.path.join(KERNELS, "saxpy.cu")).read() + "\nint main() { return 0; }\n")
    exe = tmp_path / "saxpy_app"
    subprocess.run(["nvcc", "-gencode", "arch=compute_80,code=compute_80", "-Xfatbin=-compress-all",
                    "--compress-mode=speed", str(main_cu), "-o", str(exe)], check=True, capture_output=True)
    files, _ = inp.expand_inputs([str(tmp_path)])
    assert str(exe) in files  # an ELF executable is found in a directory
    (s,) = inp.load_sources(str(exe), inp.InputOptions(cuobjdump=False))
    assert s.member == "sm_80 PTX" and ".entry saxpy" in s.ptx and ".target sm_80" in s.ptx
    if inp.find_tool("cuobjdump"):
        (t,) = inp.load_sources(str(exe))
        assert t.ptx == s.ptx


@requires("nvcc")
def test_cuda_source_is_compiled_for_sm_90(tmp_path, hypa_cli):
    t = _saxpy_toml(tmp_path)
    rc, out, _ = hypa_cli("profile", os.path.join(KERNELS, "saxpy.cu"), "--launch", t, "--format", "json")
    _, ref, _ = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_90.ptx"), "--launch", t, "--format", "json")
    assert rc == 0
    assert comparable(json.loads(out))[0]["thread_inst_executed"] == comparable(json.loads(ref))[0]["thread_inst_executed"]
    # compiled with -lineinfo (only .loc directives: the same counts), so --by line shows CUDA lines
    rc, out, _ = hypa_cli("profile", os.path.join(KERNELS, "saxpy.cu"), "--launch", t, "--by", "line", "--format", "json")
    lines = json.loads(out)
    assert rc == 0 and {d["record"] for d in lines} == {"line"}
    assert {os.path.basename(d["file"]) for d in lines} == {"saxpy.cu"} and all(d["line"] > 0 for d in lines)
    assert sum(d["thread_inst_executed"] for d in lines) == json.loads(ref)[0]["thread_inst_executed"]


def test_cuda_source_without_nvcc(monkeypatch, tmp_path, hypa_cli):
    monkeypatch.setattr(inp, "find_tool", lambda name: None)
    rc, _, err = hypa_cli("profile", os.path.join(KERNELS, "saxpy.cu"))
    assert rc == 1
    assert "compiling CUDA needs nvcc" in err and "nvcc -ptx -arch=sm_90 saxpy.cu" in err


def test_triton_ptx_with_its_grid(hypa_cli):
    rc, out, _ = hypa_cli("profile", "--launch", TRITON_TOML, "--kernel", "vadd", "--format", "json")
    (d,) = json.loads(out)
    assert rc == 0 and d["block"] == [128, 1, 1] and d["grid"] == [3, 1, 1]
    # no branches: every one of 3 x 128 threads runs all 100 instructions; each adds
    # BLOCK / 128 = 8 elements (Triton adds masked-off lanes too)
    assert d["static_instructions"] == 100
    assert d["thread_inst_executed"] == 100 * 384
    assert d["flop_count_sp"] == 8 * 384


# -- writers ----------------------------------------------------------------------------------------


def test_by_kernel_and_hypa_columns(hypa_cli):
    toml = os.path.join(LAUNCHES, "divergence.toml")
    _, per_launch, _ = hypa_cli("profile", "--launch", toml, "--format", "json")
    _, per_kernel, _ = hypa_cli("profile", "--launch", toml, "--format", "json", "--by", "kernel")
    launches, kernels = json.loads(per_launch), json.loads(per_kernel)
    assert [k["launches"] for k in kernels] == [2, 1, 2]
    for k in kernels:
        mine = [d for d in launches if d["kernel"] == k["kernel"]]
        assert k["thread_inst_executed"] == sum(d["thread_inst_executed"] for d in mine)
        b = sum(d["branch"] for d in mine)
        dv = sum(d["divergent_branch"] for d in mine)
        assert k["branch_efficiency"] == pytest.approx(100 * (b - dv) / b)
    _, out, _ = hypa_cli("profile", "--launch", toml, "--format", "csv", "--csv-columns", "hypa", "--by", "kernel")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["Kernel", "Static", "Dynamic", "% to execute"]
    assert rows[1][0] == "divergent_if(int const*, int*)" and int(rows[1][2]) == kernels[0]["thread_inst_executed"]
    _, out, _ = hypa_cli("profile", "--launch", toml, "--blocks")
    assert "block" in out and "$L__BB0_2" in out


def test_progress_bar_with_tqdm():
    pytest.importorskip("tqdm")  # an optional dependency (hypa[progress])
    s = io.StringIO()
    p = Progress(3, "hypa", enabled=True, stream=s)
    for _ in range(3):
        p.update(1, "k")
    assert p._bar is not None and p._bar.n == 3  # tqdm's bar
    p.close()
    assert "hypa:" in s.getvalue() and "/3" in s.getvalue()


def test_progress_lines_without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    s = io.StringIO()
    p = Progress(2, "hypa", enabled=True, stream=s)
    p.update(1, "saxpy")
    p.update(1, "saxpy")
    p.close()
    assert "hypa: 1/2 saxpy" in s.getvalue() and "hypa: 2/2" in s.getvalue()
    assert not Progress(5, "x", stream=io.StringIO()).enabled  # not a terminal


# -- the HTML report ----------------------------------------------------------------------------------


def _report(hypa_cli, tmp_path, *extra) -> tuple[str, str]:
    out = tmp_path / "r.html"
    rc, _, err = hypa_cli("report", "--launch", os.path.join(LAUNCHES, "divergence.toml"), "-o", str(out), *extra)
    assert rc == 0
    return out.read_text(), err


def test_report_page_is_self_contained(tmp_path, hypa_cli):
    page, _ = _report(hypa_cli, tmp_path, "--cfg", "nested_divergence", "--plots", str(tmp_path / "plots"))
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert "<script src" not in page and "<link" not in page  # (the sorting script is inline)
    assert "CFG of nested_divergence(int const*, int*)" in page and "Counts summed over 2 launches" in page
    assert "divergent_if(int const*, int*)" in page
    if shutil.which("dot"):
        # bb0 runs in every warp: 64 threads (2 warps), then 2 CTAs of 96 (6 warps)
        assert "<svg" in page and "bb0 | warps 8 threads 256 | divergent" in page
    if _has("matplotlib"):
        assert page.count("data:image/png;base64,") == 3  # no FLOPs here: no FLOPs plot
        assert sorted(os.listdir(tmp_path / "plots")) == ["branches.png", "instruction_mix.png", "opcodes.png"]


def _has(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def test_report_without_dot_or_matplotlib(tmp_path, hypa_cli, monkeypatch):
    import hypa.runtime.report.html as hr

    real_which = shutil.which
    monkeypatch.setattr(hr.shutil, "which", lambda n: None if n == "dot" else real_which(n))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page, err = _report(hypa_cli, tmp_path, "--cfg", "divergent_if")
    assert "matplotlib is not installed" in page and "data:image/png" not in page
    assert "Graphviz&#x27;s dot is not installed" in page and "<svg" not in page
    # the text CFG has the counts: bb0 ran in 2 + 6 warps and diverged in 1 + 2 of them
    line = next(l for l in page.splitlines() if l.startswith("bb0 "))
    assert line.split()[2:5] == ["8", "256", "3"] and "divergent" in line
    assert "matplotlib is not installed" in err


def test_report_from_profile_json(tmp_path, hypa_cli):
    toml = os.path.join(LAUNCHES, "spmv_csr.toml")
    prof = tmp_path / "p.json"
    rc, _, _ = hypa_cli("profile", "--launch", toml, "--format", "json", "-o", str(prof))
    assert rc == 0
    out = tmp_path / "r.html"
    rc, _, err = hypa_cli("report", str(prof), "-o", str(out))
    page = out.read_text()
    assert rc == 0 and "CFG of spmv_csr(int, int const*, int const*, float const*, float const*, float*)" in page
    assert "from " + str(prof) in page


def test_exec_counts_shade_the_dot_cfg():
    from hypa.passes.cfg_dot import function_dot
    from hypa.ptxdialect.dialect import FuncOp
    from hypa.runtime.report.html import attach_exec_counts

    m = parse_ptx_file(os.path.join(PTX, "divergence.sm_80.ptx"))
    f = next(op for op in m.ops if isinstance(op, FuncOp) and op.func_name == "_Z12divergent_ifPKiPi")
    attach_exec_counts(f, {0: {"warps": 2, "threads": 64, "divergent": 1}, 1: {"warps": 1, "threads": 16, "divergent": 0}})
    dot = function_dot(f)
    assert "warps 2 threads 64 | divergent 1" in dot and 'color="red"' in dot and "#ff" in dot


@requires("chromium")
def test_report_renders_in_headless_chromium(tmp_path, hypa_cli):
    Image = pytest.importorskip("PIL.Image")
    page, _ = _report(hypa_cli, tmp_path, "--cfg", "nested_divergence")
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           f"--screenshot={shot}", "--window-size=1280,2000", f"file://{tmp_path / 'r.html'}"]
    subprocess.run(cmd, capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 2000)
    colors = img.getcolors(maxcolors=1 << 22)
    assert len(colors) > 100  # text, bars, plots, the CFG: not a blank page
    count = {rgb: c for c, rgb in colors}
    assert count.get((255, 255, 255), 0) < 0.97 * 1280 * 2000
    assert (0x4E, 0x79, 0xA7) in count  # the "int" colour of the instruction-mix bars


def test_corrupt_fatbins_stop_with_a_message(tmp_path):
    # a container whose header size is 0 never moved past itself: the reader looped forever
    with pytest.raises(inp.InputError, match=r"container at offset 0 has a header of 0 bytes"):
        inp.read_fatbins(inp.FATBIN_HEADER.pack(inp.FATBIN_MAGIC, 1, 0, 0))
    # an entry announcing more than hypa reads is refused before anything is decompressed
    container = inp.FATBIN_HEADER.pack(inp.FATBIN_MAGIC, 1, 16, 0x48)
    entry = bytearray(0x48)
    struct.pack_into("<HHIQ", entry, 0, 1, 0x101, 0x40, 8)
    struct.pack_into("<Q", entry, 0x28, inp.FLAG_LZ4)
    struct.pack_into("<Q", entry, 0x38, 1 << 40)
    with pytest.raises(inp.InputError, match=r"announces 1099511627776 bytes uncompressed \(more than the 256 MiB"):
        inp.read_fatbins(container + bytes(entry))
    # as a user sees it: one line, exit 1
    f = tmp_path / "bad.fatbin"
    f.write_bytes(inp.FATBIN_HEADER.pack(inp.FATBIN_MAGIC, 1, 0, 0))
    p = run_hypa("profile", f, "--no-cuobjdump", timeout=60)
    assert p.returncode == 1
    assert "header of 0 bytes" in p.stderr and "Traceback" not in p.stderr


def test_the_html_report_escapes_what_it_did_not_write(tmp_path, hypa_cli):
    """A profile JSON is input like any other: names in it must not become markup."""
    t = _saxpy_toml(tmp_path)
    rc, out, _ = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_90.ptx"), "--launch", t, "--format", "json")
    assert rc == 0
    payload = "<img src=x onerror=alert(1)>"
    data = json.loads(out)
    for d in data:
        d["kernel"] = payload  # any text is a valid name: it is shown escaped
    f = tmp_path / "hostile.json"
    f.write_text(json.dumps(data))
    page = tmp_path / "r.html"
    rc, _, _ = hypa_cli("report", str(f), "-o", str(page), "--cfg", "none")
    html = page.read_text()
    assert rc == 0
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    # markup where numbers belong is not a profile: refused with a message before anything is drawn
    for d in data:
        d["grid"] = [payload, 1, 1]
    f.write_text(json.dumps(data))
    rc, _, err = hypa_cli("report", str(f), "-o", str(tmp_path / "r2.html"), "--cfg", "none")
    assert rc == 1 and "'grid' must be three positive integers" in err


def test_timing_reports_phases_and_work(tmp_path, hypa_cli):
    """--timing: seconds per phase and the work done, on stderr, after the run's output."""
    t = _saxpy_toml(tmp_path)
    rc, out, err = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_90.ptx"), "--launch", t,
                       "--format", "json", "--timing")
    assert rc == 0 and json.loads(out)  # the output itself is untouched
    assert "===-- hypa timing report --===" in err
    for ph in ("parse", "prepare", "compile", "emulate", "report"):
        assert re.search(rf"^  {ph}\s+\d+\.\d{{4}}\s+\d+\.\d%\s+\d+$", err, re.M), ph
    assert re.search(r"^\s+1  kernels prepared$", err, re.M)
    assert re.search(r"^\s+1  functions prepared \(kernels and the functions they call\)$", err, re.M)
    rc, _, err = hypa_cli("profile", os.path.join(PTX, "saxpy.sm_90.ptx"), "--launch", t, "--format", "json")
    assert "timing report" not in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the start-up is read from /proc")
def test_timing_total_within_process_wall_time(tmp_path):
    """As a process, --timing's total (start-up from the process's start included) is no more
    than the wall time measured around the process, to the start time's resolution of one
    clock tick (it read up to a second long with /proc/stat's whole-second btime)."""
    import time

    t = _saxpy_toml(tmp_path)
    t0 = time.perf_counter()
    p = run_hypa("profile", os.path.join(PTX, "saxpy.sm_90.ptx"), "--launch", t, "--format", "json", "--timing")
    wall = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    total = float(re.search(r"^  total wall time: (\d+\.\d{4}) s$", p.stderr, re.M).group(1))
    startup = re.search(r"^  start-up\s+(\d+\.\d{4})\s+\S+%\s+2$", p.stderr, re.M)
    assert startup, p.stderr  # imports before main and in main, both counted
    assert total <= wall + 1.0 / os.sysconf("SC_CLK_TCK") + 1e-4, (total, wall)
    assert float(startup.group(1)) < total


VARIABLE_TOML = """
[[launch]]
file = "{ptx}"
kernel = "k"
grid = 1
block = 32
variables = {{limit = "three"}}

[[launch]]   # another initial value of the module variable: analysed, other counts
file = "{ptx}"
kernel = "k"
grid = 1
block = 32
variables = {{limit = "five"}}

[[launch]]   # the first again: reused
file = "{ptx}"
kernel = "k"
grid = 1
block = 32
variables = {{limit = "three"}}

[buffers]
three = {{dtype = "uint32", count = 1, init = {{value = 3}}}}
five = {{dtype = "uint32", count = 1, init = {{value = 5}}}}
"""


def test_launches_differing_in_a_module_variable_are_not_reused(tmp_path, hypa_cli):
    """A loop bounded by a .global variable: the variable's initial contents are part of the
    launch key (they were not: the second launch would have reused the first's counts)."""
    from helpers import kernel

    ptx = tmp_path / "v.ptx"
    ptx.write_text(kernel("k()", """
    ld.global.u32 %r1, [limit];
    mov.u32 %r2, 0;
$L_loop:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra $L_loop;
    ret;
""", before=".global .u32 limit;\n"))
    t = tmp_path / "v.toml"
    t.write_text(VARIABLE_TOML.format(ptx=ptx))
    rc, out, err = hypa_cli("profile", "--launch", str(t), "--format", "json")
    got = json.loads(out)
    assert rc == 0 and [d["reused_from"] for d in got] == [None, None, 0], err
    # per warp: 2 before the loop, 3 per trip, the ret
    assert [d["inst_executed"] for d in got] == [2 + 3 * 3 + 1, 2 + 3 * 5 + 1, 2 + 3 * 3 + 1]
