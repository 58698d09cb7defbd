"""docs/api.md's snippets run as written (a documented API that stops working fails here)."""

from __future__ import annotations

import os
import re

import pytest

from helpers import ROOT
DOC = open(os.path.join(ROOT, "docs", "api.md")).read()
SNIPPETS = re.findall(r"```python\n(.*?)```", DOC, re.S)


@pytest.mark.parametrize("i", range(len(SNIPPETS)))
def test_snippet_runs(i, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(SNIPPETS[i], f"docs/api.md snippet {i + 1}", "exec"), {})


def test_the_pipeline_example_runs(capsys, monkeypatch):
    import runpy
    import sys

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["own_pipeline.py", "examples/spmv_csr.ptx"])
    runpy.run_path(os.path.join(ROOT, "examples", "own_pipeline.py"), run_name="__main__")
    out, err = capsys.readouterr()
    assert "count-loads: _Z8spmv_csriPKiS0_PKfS2_Pf: 4 load(s) decide control flow" in err
    assert ".entry _Z8spmv_csriPKiS0_PKfS2_Pf" in out


def test_the_pipeline_example_runs_from_anywhere(capsys, monkeypatch, tmp_path):
    """Without an argument it reads the kernel beside it, whatever the working directory."""
    import runpy
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["own_pipeline.py"])
    runpy.run_path(os.path.join(ROOT, "examples", "own_pipeline.py"), run_name="__main__")
    assert "count-loads: _Z8spmv_csriPKiS0_PKfS2_Pf: 4 load(s)" in capsys.readouterr().err
