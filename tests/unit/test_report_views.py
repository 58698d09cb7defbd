"""What the report shows of what was computed: memory and time per launch, the roofline,
names that stay distinguishable, branch-efficiency colours; rendered in headless Chromium."""

from __future__ import annotations

import json
import subprocess

import pytest

from hypa.runtime.report import html as html_report
from hypa.runtime.emulator.demangle import short_names

from helpers import CHROMIUM, EXAMPLES, requires, run_hypa, saxpy_toml

SAXPY_TOML = saxpy_toml(10000, 2.0, grid=40, count=10000)


@pytest.fixture(scope="module")
def profile_json(tmp_path_factory):
    d = tmp_path_factory.mktemp("views")
    (d / "l.toml").write_text(SAXPY_TOML)
    p = run_hypa("profile", EXAMPLES / "saxpy.ptx", "--launch", d / "l.toml", "--memory-metrics", "--estimate-time",
                 "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_memory_time_and_roofline_are_on_the_page(profile_json):
    (d,) = profile_json
    page = html_report.build(profile_json, cfg="none").html
    assert "<h2>Memory and time</h2>" in page and "<h3>Roofline" in page
    # saxpy: 2 loads and 1 store of 10000 floats, fully coalesced: 4 sectors per 32-thread request
    reqs = 3 * 313  # 10000 threads: 313 warps, the last with 16 threads, for each of the 3 accesses
    assert f"<td>{reqs:,}</td><td>{3 * 1250:,}</td>" in page
    assert "FP32 peak 66,908 GFLOP/s" in page and "DRAM 3,350 GB/s" in page  # sm_90.toml's ceilings
    assert page.count("<circle") == 3  # one launch at three memory levels: L1, L2, DRAM
    assert "L1 " in page and "L2 " in page


def test_without_memory_or_time_the_page_says_how_to_get_them(profile_json):
    bare = [{k: v for k, v in d.items() if k not in ("memory", "time_estimate")} for d in profile_json]
    page = html_report.build(bare, cfg="none").html
    assert "--memory-metrics</code> (sectors, bank conflicts) and <code>--estimate-time</code>" in page


def test_generated_names_stay_distinguishable():
    names = [f"triton_poi_fused__native_batch_norm_legit_no_training_relu_{i}" for i in (10, 11, 12)]
    short = short_names(names, 36)
    assert len(set(short.values())) == 3 and all(len(s) <= 36 for s in short.values())
    assert short[names[0]].endswith("relu_10")
    from hypa.runtime.metrics.registry import columns

    dicts = [{**{k: 0 for k in columns()}, "launch": i, "kernel": n, "grid": [1, 1, 1], "block": [32, 1, 1], "inst_executed": 1, "static_instructions": 1,
              "thread_inst_executed": 32, "flop_count_sp": 0, "flop_count_dp": 0, "flop_count_hp": 0, "branch": 100,
              "divergent_branch": i, "branch_efficiency": 100.0 - 20 * i, "executed_fraction": 1.0, "blocks": [],
              "instruction_mix": {"opcodes": {}, "categories": {}}} for i, n in enumerate(names)]
    page = html_report.build(dicts, cfg="none").html
    for s in short_names(names, 48).values():  # the page's width
        assert f">{s}</td>" in page and f"<summary>{s}</summary>" in page
    for n in names:  # and in full, in the kernel's details row
        assert f"<span class=full>{n}<br>{n}</span>" in page
    # branch efficiency: 100 % good, 80 % a warning, 60 % bad
    assert "<td class=good>100.00%</td>" in page and "<td class=warn>80.00%</td>" in page and "<td class=bad>60.00%</td>" in page


@requires("chromium")
def test_the_roofline_renders(profile_json, tmp_path):
    Image = pytest.importorskip("PIL.Image")
    (tmp_path / "r.html").write_text(html_report.build(profile_json, cfg="none").html)
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,1400",
                    f"file://{tmp_path / 'r.html'}"], capture_output=True, timeout=120)
    img = Image.open(shot).convert("RGB")
    count = {rgb: c for c, rgb in img.getcolors(maxcolors=1 << 22)}
    assert count.get((0x33, 0x33, 0x33), 0) > 100  # the FP32 roof
    assert count.get((0xE1, 0x57, 0x59), 0) > 100  # the DRAM slope and point
    assert count.get((0x59, 0xA1, 0x4F), 0) > 10  # the L1 slope and point


def test_kernels_without_line_information_show_their_hottest_ptx(tmp_path):
    (tmp_path / "l.toml").write_text(SAXPY_TOML)
    html = tmp_path / "r.html"
    p = run_hypa("report", EXAMPLES / "saxpy.ptx", "--launch", tmp_path / "l.toml", "--cfg", "none", "-o", html)
    assert p.returncode == 0, p.stderr
    page = html.read_text()
    assert "<h2>Source</h2>" in page and "their hottest PTX instructions" in page
    assert "<td class='k code'>ld.global.f32" in page and "long scoreboard" in page
