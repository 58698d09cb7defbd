"""Issue 27's report: source lines ranked by estimated time with their stall reason and PTX,
the speed-of-light shares of the estimate with advice, the roofline per memory level, the
kernel time apart from the launch overhead, and one estimate path for the API and the CLI.
The program: tests/cuda_programs/report/bank_conflict.cu (a 32-way bank conflict, a
divergent branch), built with -lineinfo."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from hypa.runtime.report import speed_of_light as sol

from helpers import CHROMIUM, ROOT, requires, run_hypa

PROG = ROOT / "tests" / "cuda_programs" / "report"
CU, TOML = PROG / "bank_conflict.cu", PROG / "bank_conflict.toml"


@pytest.fixture(scope="module")
def ptx(tmp_path_factory):
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("bc") / "bank_conflict.ptx"
    subprocess.run(["nvcc", "-lineinfo", "-ptx", "-arch=sm_90", "-o", str(out), str(CU)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def profile(ptx):
    p = run_hypa("profile", ptx, "--launch", TOML, "--memory-metrics", "--estimate-time", "--format", "json")
    assert p.returncode == 0, p.stderr
    (d,) = json.loads(p.stdout)
    return d


def _launch():
    from hypa.runtime.emulator.launch import Launch

    x = np.random.default_rng(1).uniform(-1, 1, 16384).astype(np.float32)
    return Launch(grid=16, block=(32, 8), args=["in", "out"], kernel="_Z8row_sumsPKfPf",
                  buffers={"in": x, "out": np.zeros(4096, np.float32)})


def test_api_and_cli_estimates_are_the_same(ptx, profile):
    """docs/api.md's path (an Emulator made without options) and hypa profile --estimate-time
    call estimate_run with the same inputs: the address trace, so the measured wavefronts and
    the cache model (before: 3.85 us 'latency' from the API, 7.46 us 'unit:lsu' from the CLI)."""
    from hypa.ptxdialect import parse_ptx_file
    from hypa.runtime.emulator import Emulator
    from hypa.runtime.report.batch import estimate_run

    e = estimate_run(Emulator(parse_ptx_file(str(ptx))), _launch())
    cli = profile["time_estimate"]
    assert e.cycles == cli["cycles"] and e.time_us == cli["time_us"] and e.bound == cli["bound"] == "unit:lsu"
    assert e.bank_conflict_cycles == cli["bank_conflict_cycles"] > 0


def test_the_shares_add_up_to_the_estimate(profile):
    e = profile["time_estimate"]
    assert sum(e["shares"].values()) == pytest.approx(e["cycles"], rel=1e-9)
    # the kernel's own time: cycles over the clock; the launch overhead apart
    assert e["kernel_us"] == pytest.approx(e["cycles"] / e["clock_mhz"])
    assert e["time_us"] == pytest.approx(e["kernel_us"] + e["launch_overhead_us"])
    rows = sol.breakdown(e)
    assert rows[0][0] == "unit:lsu" and rows[0][2] > 80  # the conflicted loads keep the LSU busy
    # 126,976 conflicts: without them the estimate is far shorter
    assert 50 < sol.bank_conflict_percent(e) < 100
    text = sol.advice(e)
    assert re.match(r"Shared-memory bank conflicts cost \d+% of the estimated kernel time: pad the shared array", text[0])
    assert text[1].startswith("The LSU pipe (L1 and shared-memory bandwidth) decides")


def test_source_lines_carry_estimated_time_stall_and_ptx(profile):
    lines = {d["line"]: d for d in profile["source_lines"]}
    total = sum(d.get("est_cycles", 0) for d in lines.values())
    # the instructions' cycles are the estimate's, less the CTA launch/dispatch shares no instruction owns
    e = profile["time_estimate"]
    owned = e["cycles"] - e["shares"].get("cta_launch", 0) - e["shares"].get("cta_dispatch", 0)
    assert total == pytest.approx(owned, rel=1e-6)
    hottest = max(lines.values(), key=lambda d: d["est_cycles"])
    assert hottest["line"] == 16 and "tile[lane]" in hottest["source"]  # the conflicted row read
    assert hottest["stall"] == "mio throttle" and hottest["bank_conflicts"] == 126976
    assert hottest["est_cycles"] / total > 0.9
    assert lines[17]["divergent_branch"] == 128  # `if (lane < 8)`: every warp diverges once
    assert lines[13]["stall"] == "barrier"
    ptx16 = hottest["ptx_rows"]
    assert sum(p["inst_executed"] for p in ptx16) == hottest["inst_executed"]
    assert sum(p["est_cycles"] for p in ptx16 if "est_cycles" in p) == pytest.approx(hottest["est_cycles"])
    assert any(p["ptx"].startswith("ld.shared") and p["stall"] == "mio throttle" for p in ptx16)


def test_the_page_shows_hottest_first_stall_advice_and_roofline(ptx, tmp_path):
    html = tmp_path / "r.html"
    p = run_hypa("report", ptx, "--launch", TOML, "--memory-metrics", "--estimate-time", "--cfg", "none", "-o", html)
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    src = page[page.index("<h2>Source</h2>"):]
    first = re.search(r"<tbody><tr><td class=k data-v='(\d+)'.*?</td><td class='k code'>(.*?)</td>"
                      r"<td class=heat data-v='([\d.]+)'.*?<td class=k title='[^']*'>([^<]*)</td>", src)
    assert first.group(1) == "16" and float(first.group(3)) > 90 and first.group(4) == "mio throttle"
    assert first.group(2).startswith("<details><summary>")  # it unfolds the row under it: its PTX
    sub = src[first.end():].split("</tr>", 1)[1]
    assert sub.startswith("<tr class=sub>") and "PTX of the line" in sub and "ld.shared.f32" in sub.split("</table>")[0]
    assert "Shared-memory bank conflicts cost" in page and "pad the shared array" in page
    for lvl in ("L1", "L2", "DRAM"):
        assert f"class='pt {lvl}'" in page  # a point per memory level
    assert "FLOPs per byte moved at that memory level" in page and "FLOP per DRAM-sector byte" not in page
    assert "<th>kernel &micro;s</th><th>launch &micro;s</th>" in page
    assert "table.sortable" in page and "<script>" in page and "http" not in page.split("<script>")[1]
    assert "branch eff. %" in page and "executed %" in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_the_page_fits_1400_px(ptx, tmp_path):
    """At 1400 px no element is wider than the window (no sideways scrolling)."""
    html = tmp_path / "r.html"
    assert run_hypa("report", ptx, "--launch", TOML, "--memory-metrics", "--estimate-time", "--cfg", "none",
                    "-o", html).returncode == 0
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text().replace(
        "</body>", "<script>document.title = 'W' + Math.max(document.documentElement.scrollWidth, "
        "...Array.from(document.querySelectorAll('table')).map(t => t.scrollWidth + t.getBoundingClientRect().left));"
        "</script></body>"))
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1000", "--dump-dom",
                        f"file://{probe}"], capture_output=True, text=True, timeout=120)
    width = int(re.search(r"<title>W(\d+)", p.stdout).group(1))
    assert width <= 1400


def test_long_names_are_cut_at_parameter_boundaries():
    from hypa.runtime.emulator.demangle import shorten

    assert shorten("row_sums(float const*, float const*, float*)", 36) == "row_sums(float const*, ~)"
    assert shorten("void gemm<float, 128>(float const*, float const*, float*, int)", 36) == "void gemm<float, 128>(~)"
    assert shorten("f(int)", 36) == "f(int)"


def test_by_line_text_shows_the_estimated_share(ptx):
    p = run_hypa("profile", ptx, "--launch", TOML, "--memory-metrics", "--estimate-time", "--by", "line")
    assert p.returncode == 0, p.stderr
    head = next(ln for ln in p.stdout.splitlines() if "where" in ln)
    assert "est.%" in head
    row16 = next(ln for ln in p.stdout.splitlines() if "bank_conflict.cu:16 " in ln)
    share = float(row16.split()[8])
    assert 90 < share < 100 and "mio throttle" in row16


def test_format_estimate_lists_the_shares_and_the_conflicts_cost(ptx):
    from hypa.ptxdialect import parse_ptx_file
    from hypa.runtime.emulator import Emulator
    from hypa.runtime.models.timing import format_estimate
    from hypa.runtime.report.batch import estimate_run

    e = estimate_run(Emulator(parse_ptx_file(str(ptx))), _launch())
    text = format_estimate(e, blocks=False)
    lsu = 100 * e.shares["unit:lsu"] / e.cycles
    assert f"time_shares                              unit:lsu {lsu:.1f}%" in text
    assert f"bank_conflict_cost                       {100 * e.bank_conflict_cycles / e.cycles:>13.1f} %" in text


def test_lines_without_line_information_are_read_back(profile, tmp_path):
    """An instruction without line information (PTX with `.loc` elsewhere, as a CUDA 13 build
    run under `hypa run` gave) is a source_lines row with its index and no file or line:
    `hypa report` reads it back; a line missing where the file is named is still damage."""
    rows = json.loads(json.dumps(profile))
    rows["source_lines"].append(dict(rows["source_lines"][0], index=0, ptx="mov.u32 %r1, %tid.x;", file=None, line=None))
    (tmp_path / "none.json").write_text(json.dumps([rows]))
    p = run_hypa("report", tmp_path / "none.json", "-o", tmp_path / "r.html", "--cfg", "none")
    assert p.returncode == 0, p.stderr
    rows["source_lines"][-1].update(file="bank_conflict.cu", line=None)
    (tmp_path / "bad.json").write_text(json.dumps([rows]))
    p = run_hypa("report", tmp_path / "bad.json", "-o", tmp_path / "r.html")
    assert p.returncode == 1 and "a 'source_lines' row is damaged" in p.stderr and "Traceback" not in p.stderr


def test_a_damaged_stall_breakdown_is_refused(profile, tmp_path):
    bad = json.loads(json.dumps(profile))
    bad["source_lines"][0]["stall_cycles"] = {"barrier": "lots"}
    (tmp_path / "bad.json").write_text(json.dumps([bad]))
    p = run_hypa("report", tmp_path / "bad.json", "-o", tmp_path / "r.html")
    assert p.returncode == 1 and "stall_cycles or ptx_rows are damaged" in p.stderr and "Traceback" not in p.stderr
    # the undamaged file makes the same page from the JSON as from the run
    (tmp_path / "ok.json").write_text(json.dumps([profile]))
    p = run_hypa("report", tmp_path / "ok.json", "-o", tmp_path / "r.html", "--cfg", "none")
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "r.html").read_text()
    assert "Shared-memory bank conflicts cost" in page and "<td class=k title='mio throttle" in page
    from hypa.runtime.emulator.demangle import short_names

    # two signatures that read the same when cut keep their last parameters, still whole
    short = short_names(["f(float const*, float*, int)", "f(float const*, float*, long)"], 24)
    assert short == {"f(float const*, float*, int)": "f(float const*, ~, int)",
                     "f(float const*, float*, long)": "f(float const*, ~, long)"}
