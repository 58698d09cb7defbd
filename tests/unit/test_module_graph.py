"""The project's import graph stays acyclic and private names stay private (issue 13):
``benchmarks/module_graph.py`` reads every import, lazy ones inside functions too."""

from __future__ import annotations

from helpers import ROOT, load_script


def test_the_import_graph_has_no_cycle_and_no_private_name_crosses_a_module():
    graph = load_script("benchmarks/module_graph.py")
    mods = graph.modules(str(ROOT))
    assert {"ptxdialect.dialect", "ptxdialect.parser", "runtime.emulator.lowering.warp", "runtime.emulator.executor"} <= set(mods)
    edges, private = graph.imports(mods)
    assert graph.cycles(edges) == []
    assert graph.upward(edges) == []
    assert private == []


def test_the_graph_reader_sees_a_lazy_cycle_and_a_private_import(tmp_path):
    graph = load_script("benchmarks/module_graph.py")
    pkg = tmp_path / "ptxdialect"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("def f():\n    from .a import _hidden\n    return _hidden\n")
    edges, private = graph.imports(graph.modules(str(tmp_path)))
    assert graph.cycles(edges) == [["ptxdialect.a", "ptxdialect.b"]]
    assert private == [("ptxdialect.b", "ptxdialect.a", "_hidden")]
