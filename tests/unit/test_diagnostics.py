"""Bad input gives a located diagnostic, exit code 1 and never a traceback.

Runs ``hypa-opt`` as a subprocess over every malformed file of
``tests/filecheck/Frontend/errors`` (the lit tests there pin each exact
message), over inputs that are not PTX files at all, and checks in process
that the parser's messages name what was expected and what was found.
"""

from __future__ import annotations

import functools
import glob
import os
import re

import pytest

from hypa.ptxdialect import PTXError, parse_ptx
from hypa.ptxdialect.diagnostics import decode_source

from helpers import HEADER, ROOT, run_hypa_opt

ERRORS = os.path.join(ROOT, "tests", "filecheck", "Frontend", "errors")
ERROR_FILES = sorted(glob.glob(os.path.join(ERRORS, "*.ptx")) + glob.glob(os.path.join(ERRORS, "Inputs", "*.ptx")))
LOCATED = re.compile(r"^(?P<file>[^\n:]+\.ptx|<stdin>):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>\S.*)$", re.M)


#: hypa-opt as a process, its output in bytes (some inputs are not text)
hypa_opt = functools.partial(run_hypa_opt, text=False, timeout=120)


def test_the_errors_folder_covers_every_failure_class():
    names = {os.path.basename(p)[:-4] for p in ERROR_FILES}
    assert len(names) >= 25
    for required in (
        "missing_version", "bad_target", "unknown_opcode", "unknown_modifier", "wrong_operand_count",
        "undeclared_register", "missing_semicolon", "unbalanced_bracket", "unbalanced_vector",
        "unterminated_comment", "unterminated_string", "duplicate_label", "undefined_label",
        "brx_without_branchtargets", "bad_float_immediate", "bad_address_expression",
        "misplaced_perf_directive", "entry_inside_body", "missing_close_brace_at_eof",
        "bad_register_declaration", "garbage_characters", "empty_file", "binary_junk",
        "param_list_missing_comma", "reg_range_negative_count", "guard_without_predicate",
        "instruction_after_closing_brace",
    ):
        assert required in names, required


def _expected_check(path: str) -> str | None:
    """The message the file's lit ``CHECK:`` line pins for the file itself
    (None where the lit test runs on a file of Inputs/)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if "hypa-opt %s " not in text:
        return None
    for line in text.splitlines():
        m = re.match(r"// CHECK: \{\{\.\*\}\}(\S+?\.ptx:\d+:\d+: error: .*)$", line)
        if m:
            return m.group(1)
    return None


@pytest.mark.parametrize("path", ERROR_FILES, ids=lambda p: os.path.relpath(p, ERRORS))
def test_malformed_file_gives_located_error(path):
    r = hypa_opt(path)
    err = r.stderr.decode("utf-8", errors="replace")
    assert r.returncode == 1, err
    assert "Traceback" not in err and "Traceback" not in r.stdout.decode("utf-8", "replace")
    m = LOCATED.search(err)
    assert m, err
    assert os.path.samefile(m.group("file"), path)
    line, col = int(m.group("line")), int(m.group("col"))
    with open(path, "rb") as f:
        nlines = f.read().count(b"\n")
    assert 1 <= line <= nlines + 1 and col >= 1
    # the offending line is quoted and a caret points at the column
    lines = err.splitlines()
    i = lines.index(m.group(0))
    assert lines[i + 2].rstrip().endswith("^") and len(lines[i + 2].rstrip()) == col
    # an error that is pinned by a lit test says exactly that
    pinned = _expected_check(path)
    if pinned is not None:
        assert err.splitlines()[0].endswith(pinned)


def test_missing_file():
    r = hypa_opt(os.path.join(ERRORS, "no-such-file.ptx"))
    err = r.stderr.decode()
    assert r.returncode == 1
    assert err.startswith("hypa-opt: error: cannot open") and "no such file" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_directory_as_input():
    r = hypa_opt(ERRORS)
    err = r.stderr.decode()
    assert r.returncode == 1
    assert "is a directory" in err and "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "data",
    [b"garbage ###\n", b"\x00\x01\x02\xff\xfe", b"}}}}", b"%r1 = ptx.add\n"],
    ids=["words", "binary", "braces", "half-mlir"],
)
def test_stdin_garbage(data):
    r = hypa_opt(stdin=data)
    err = r.stderr.decode("utf-8", errors="replace")
    assert r.returncode == 1, err
    assert "Traceback" not in err
    assert re.search(r"<stdin>:\d+:\d+: error: ", err), err


def test_stdin_ptx_is_recognised():
    src = b"// a comment first\n" + HEADER.encode() + b".visible .entry k()\n{\n\tret;\n}\n"
    r = hypa_opt("-t", "ptx", stdin=src)
    assert r.returncode == 0, r.stderr
    assert b".visible .entry k()" in r.stdout
    bad = src.replace(b"ret;", b"ret")
    r = hypa_opt(stdin=bad)
    assert r.returncode == 1
    assert r.stderr.decode().startswith("<stdin>:7:5: error: expected ';' after the 'ret' instruction, found '}'")


def test_unknown_extension_and_bad_pipeline():
    r = hypa_opt(os.path.join(ROOT, "README.md"))
    assert r.returncode == 1 and b"Unrecognized file extension" in r.stderr and b"-f ptx" in r.stderr
    r = hypa_opt("-p", "no-such-pass", os.path.join(ERRORS, "Inputs", "empty.ptx"))
    assert r.returncode == 1 and b"Traceback" not in r.stderr and b"no-such-pass" in r.stderr


def test_split_input_file_reports_lines_of_the_whole_file(tmp_path):
    good = HEADER + ".visible .entry k()\n{\n\tret;\n}\n"
    bad = good.replace("ret;", "frob;")
    p = tmp_path / "two.ptx"
    p.write_text(good + "// -----\n" + bad)
    r = hypa_opt("--split-input-file", str(p))
    assert r.returncode == 1
    assert f"{p}:14:2: error: unknown opcode 'frob'" in r.stderr.decode()
    # --parsing-diagnostics reports each chunk's error on stdout and goes on
    r = hypa_opt("--split-input-file", "--parsing-diagnostics", str(p))
    assert r.returncode == 0
    assert f"{p}:14:2: error: unknown opcode 'frob'" in r.stdout.decode()
    assert "ptx.ret" in r.stdout.decode()


# -- in process: what the messages say ---------------------------------------

HEAD = HEADER + ".visible .entry k()\n{\n\t.reg .b32 %r<4>;\n"


def err_of(body: str) -> PTXError:
    with pytest.raises(PTXError) as e:
        parse_ptx(HEAD + body + "}\n", "t.ptx")
    # the token parser alone reports the very same error
    with pytest.raises(PTXError) as e2:
        parse_ptx(HEAD + body + "}\n", "t.ptx", fast=False)
    assert e2.value.render() == e.value.render()
    return e.value


def test_unknown_opcode_and_modifier_are_named():
    e = err_of("\tfoo.bar.u32 %r1, %r2;\n")
    assert e.message == "unknown opcode 'foo'" and (e.line, e.column) == (7, 2)
    e = err_of("\tmov.u33 %r1, %r2;\n")
    assert e.message == "unknown modifier '.u33' for 'mov'" and (e.line, e.column) == (7, 5)
    e = err_of("\tld.global.nc.bogus.u32 %r1, [%r2];\n")
    assert "'.bogus'" in e.message and e.column == 14


def test_missing_semicolon_points_after_the_statement():
    e = err_of("\tmov.u32 %r1, %r2\n\tmov.u32 %r3, %r2;\n")
    assert e.message == "expected ';' after the 'mov.u32' instruction, found 'mov.u32'"
    assert (e.line, e.column) == (7, 18)


def test_rendered_error_has_source_line_and_caret():
    e = err_of("\tadd.s32 %r1, %r2, %r9;\n")
    text = e.render().splitlines()
    assert text[0] == "t.ptx:7:20: error: use of undeclared register '%r9'"
    assert text[1] == "\tadd.s32 %r1, %r2, %r9;".expandtabs(1)
    assert text[2] == " " * 19 + "^"


def test_invalid_utf8_is_located():
    with pytest.raises(PTXError) as e:
        decode_source(b".version 8.0\n.tar\xc3\x28get sm_80\n", "x.ptx")
    assert (e.value.line, e.value.column) == (2, 5)
    assert "0xc3" in e.value.message
    assert decode_source("// caf\u00e9\n".encode(), "x.ptx") == "// caf\u00e9\n"


def test_line_offset_shifts_reported_lines():
    with pytest.raises(PTXError) as e:
        parse_ptx(".version 8.0\n.target sm_xx\n", "c.ptx", line_offset=10)
    assert e.value.line == 12
