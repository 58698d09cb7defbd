"""Counts per CUDA source line (``--by line``, the HTML source view), hand-computed on a
kernel with ``.loc`` lines, and on an ``nvcc -lineinfo`` build when nvcc is installed."""

from __future__ import annotations

import json
import subprocess

import numpy as np

from hypa.ptxdialect import parse_ptx
from hypa.runtime.report.source_view import result_lines

from helpers import ROOT, emulate, kernel, requires, run_hypa

PTX = kernel("k(.param .u64 out)", """
    .loc 1 10 0
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 8;
    .loc 1 11 0
    @%p1 bra $L_small;
    .loc 1 12 0
    mov.f32 %f1, 0f3F800000;
    add.f32 %f2, %f1, %f1;
    bra $L_done;
$L_small:
    .loc 1 14 0
    mov.f32 %f2, 0f40000000;
$L_done:
    .loc 1 16 0
    @%p1 add.f32 %f2, %f2, %f2;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f2;
    ret;
""", target="sm_90") + '.file 1 "FILE"\n'

SOURCE = ["// line %d" % i for i in range(1, 10)] + [
    "int t = threadIdx.x;  // 10", "if (t < 8) {  // 11", "  v = 1.0f + 1.0f;  // 12", "} else {", "  v = 2.0f;  // 14",
    "}", "if (t < 8) v += v; out[t] = v;  // 16"]


def test_counts_per_source_line_by_hand(tmp_path):
    src = tmp_path / "kern.cu"
    src.write_text("\n".join(SOURCE) + "\n")
    m = parse_ptx(PTX.replace("FILE", str(src)))
    r = emulate(m, ["out"], {"out": np.zeros(32, np.float32)}, kernel="k", mode="full", exact_predicates=True,
                memory_metrics=True)
    lines = {d["line"]: d for d in result_lines(r, m)}
    # one warp of 32 threads; threads 0-7 take the branch at line 11
    assert sorted(lines) == [10, 11, 12, 14, 16]
    assert [lines[n]["thread_inst_executed"] for n in (10, 11, 12, 14, 16)] == [2 * 32, 32, 3 * 24, 8, 6 * 32]
    assert [lines[n]["inst_executed"] for n in (10, 11, 12, 14, 16)] == [2, 1, 3, 1, 6]
    assert lines[11]["divergent_branch"] == 1 and lines[12]["divergent_branch"] == 0  # `bra $L_done` is uniform
    assert lines[12]["flop_count_sp"] == 24
    assert lines[16]["predicated_off"] == 24 and lines[16]["flop_count_sp"] == 8  # the guarded add: 8 true lanes
    assert lines[16]["requests"] == 1 and lines[16]["sectors"] == 4 and lines[16]["sectors_per_request"] == 4.0
    assert lines[14]["source"] == "  v = 2.0f;  // 14"
    assert sum(d["thread_inst_executed"] for d in lines.values()) == r.metrics["thread_inst_executed"]


def test_without_line_information_rows_are_ptx_instructions():
    m = parse_ptx(PTX.replace(".file 1 \"FILE\"\n", "").replace("    .loc", "//    .loc"))
    r = emulate(m, ["out"], {"out": np.zeros(32, np.float32)}, kernel="k", mode="full")
    rows = result_lines(r, m)
    assert [d["ptx"].split()[0] for d in rows[:3]] == ["mov.u32", "setp.lt.u32", "@%p1"]
    assert len(rows) == 13 and all("index" in d for d in rows)  # every instruction once


@requires("nvcc")
def test_lineinfo_build_by_line_and_in_the_html(tmp_path):
    cu = ROOT / "benchmarks" / "programs" / "matmul.cu"
    ptx = tmp_path / "matmul.ptx"
    subprocess.run(["nvcc", "-lineinfo", "-ptx", "-arch=sm_90", "-o", str(ptx), cu], check=True, capture_output=True)
    toml = tmp_path / "l.toml"
    toml.write_text('[[launch]]\nkernel = "matmul"\ngrid = [4, 4]\nblock = [16, 16]\nargs = ["a", "b", "c", 64]\n'
                    '[buffers.a]\ndtype = "float32"\ncount = 4096\n[buffers.b]\ndtype = "float32"\ncount = 4096\n'
                    '[buffers.c]\ndtype = "float32"\ncount = 4096\n')
    p = run_hypa("profile", ptx, "--launch", toml, "--mode", "full", "--memory-metrics", "--by", "line",
                 "--format", "json")
    assert p.returncode == 0, p.stderr
    by_line = {d["line"]: d for d in json.loads(p.stdout) if d["file"].endswith("matmul.cu")}
    # line 15, `for (k < T) acc += as[ty][k] * bs[k][tx]`: 4096 threads x 4 tiles x 16 unrolled FMAs x 2 FLOPs
    assert by_line[15]["flop_count_sp"] == 4096 * 4 * 16 * 2
    # line 18, `c[row * n + col] = acc`: one store per thread; a warp covers 2 rows of 16 floats: 4 sectors
    assert by_line[18]["sectors_per_request"] == 4.0 and by_line[18]["requests"] == 4096 // 32
    assert by_line[15]["bank_conflicts"] == 0
    # estimated stalls (the line's costliest wait in the timing model): global loads, barriers
    assert by_line[12]["stall"] == "long scoreboard" and by_line[14]["stall"] == "barrier"
    html = tmp_path / "r.html"
    p = run_hypa("report", ptx, "--launch", toml, "--mode", "full", "--cfg", "none", "-o", html)
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert "<h2>Source</h2>" in page and "matmul.cu:15" in page and "acc += as[threadIdx.y][k]" in page


def test_cfg_edges_carry_the_threads_that_took_them(tmp_path):
    from hypa.passes.cfg_dot import function_dot
    from hypa.runtime.report.html import attach_exec_counts

    m = parse_ptx(PTX.replace("FILE", "k.cu"))
    r = emulate(m, ["out"], {"out": np.zeros(32, np.float32)}, kernel="k", mode="full")
    blocks = [b.as_dict() for b in r.metrics.blocks]
    # the block ending in `@%p1 bra $L_small`: 8 of its 32 threads take it; `bra $L_done` is unconditional
    assert [b["branch_taken_threads"] for b in blocks] == [8, 0, 0, 0]
    f = r.program.func
    attach_exec_counts(f, {b["index"]: {"warps": b["warp_executions"], "threads": b["thread_executions"],
                                        "divergent": b["divergent_branches"], "taken": b["branch_taken_threads"]}
                           for b in blocks})
    dot = function_dot(f)
    assert 'b0 -> b2 [label="T 8"];' in dot and 'b0 -> b1 [style=dashed, label="F 24"];' in dot
    assert 'b1 -> b3 [label="24"];' in dot


def test_warp_slots_show_how_a_ctas_warps_share_the_work():
    from hypa.runtime.report.html import _balance_cell

    m = parse_ptx(PTX.replace("FILE", "k.cu"))
    r = emulate(m, ["out"], {"out": np.zeros(192, np.float32)}, kernel="k", grid=3, block=64, mode="full")
    # warp 0 (threads 0-7 take the branch) runs both sides: 2 + 1 + 3 + 1 + 6 = 13
    # warp-instructions; warp 1 only the fall-through side: 2 + 1 + 3 + 6 = 12; three CTAs
    assert r.metrics.warp_slots == [3 * 13, 3 * 12]
    assert sum(r.metrics.warp_slots) == r.metrics["inst_executed"]
    assert r.as_dict()["warp_inst_executed"] == [39, 36]
    assert ">1.04</td>" in _balance_cell([39, 36]) and "class=good" in _balance_cell([39, 36])
