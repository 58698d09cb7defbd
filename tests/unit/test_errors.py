"""One base for the errors hypa reports to a user (``ptxdialect/diagnostics.py``'s HypaError):
every error class of the package derives from it, its rendering is the line the tools print."""

from __future__ import annotations

import ast
import glob
import importlib
import os

from hypa.ptxdialect.diagnostics import HypaError, InputError, PTXError, PTXSyntaxError, SourceFile

from helpers import ROOT

#: exceptions caught where they are raised, which never reach a user (HypaError's docstring)
SIGNALS = {"UnknownOpcode", "UnknownModifier", "TextureFault", "_Fail", "WorkerTraceback", "_Terminated", "_Unwritable"}
PACKAGES = ("ptxdialect", "passes", "runtime", "cudart", "tools")


def _exception_classes() -> list[tuple[str, str]]:
    """(module, class) of every class of the package whose base is named like an exception."""
    out = []
    for pkg in PACKAGES:
        for path in glob.glob(os.path.join(ROOT, pkg, "**", "*.py"), recursive=True):
            tree = ast.parse(open(path).read())
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and any(
                        ast.unparse(b).split(".")[-1].endswith(("Error", "Exception", "Fault"))
                        for b in node.bases):
                    module = "hypa." + os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    out.append((module, node.name))
    return out


def test_every_error_class_derives_from_the_base():
    classes = _exception_classes()
    names = {c for _, c in classes}
    assert {"PTXError", "InputError", "LaunchError", "EmulationError", "ProgramError", "LoweringError",
            "TimingError", "DiffError", "NotAProgram", "BuildError", "InlineError", "InstrumentError"} <= names
    assert SIGNALS <= names
    outside = [(m, c) for m, c in classes
               if c not in SIGNALS and not issubclass(getattr(importlib.import_module(m), c), HypaError)]
    assert outside == []


def test_one_input_error():
    from hypa.runtime.report import inputs
    from hypa.tools import hypa_opt

    assert inputs.InputError is InputError and hypa_opt.InputError is InputError


def test_render_unlocated_and_located():
    assert HypaError("no kernel 'k'").render("hypa-opt") == "hypa-opt: error: no kernel 'k'"
    e = HypaError("bad spec", file="launch.toml", line=3, column=7)
    assert (e.file, e.line, e.column, str(e)) == ("launch.toml", 3, 7, "bad spec")
    assert e.render("hypa") == "launch.toml:3:7: error: bad spec"
    assert HypaError("x", file="a.toml", line=2).render("hypa") == "a.toml:2: error: x"


def test_ptx_error_keeps_its_caret_and_is_located():
    src = SourceFile(".version 8.0\n  foo;\n", "k.ptx")
    e = PTXSyntaxError(src, src.text.index("foo"), "unknown opcode 'foo'")
    assert isinstance(e, HypaError)
    assert (e.file, e.line, e.column, e.message) == ("k.ptx", 2, 3, "unknown opcode 'foo'")
    assert str(e) == e.render("hypa-opt") == "k.ptx:2:3: error: unknown opcode 'foo'\n  foo;\n  ^"
    assert str(PTXError(None, 0, "empty input")) == "error: empty input"
