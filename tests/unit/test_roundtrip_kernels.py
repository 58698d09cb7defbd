"""Every PTX file the project ships round-trips through the front end.

For each ``.ptx`` under ``tests/kernels/`` and ``examples/`` (nvcc output for sm_80/sm_90/
sm_90a/sm_100a with ``-lineinfo``/``-G`` variants, NVRTC 12 output for sm_52/sm_70, LLVM
NVPTX and Triton output, hand-written files; see ``tests/kernels/README.md``):

* ``parse -> print -> parse`` gives a structurally equal module, and printing that module
  gives the same text again (printing is a fixpoint);
* the parsed module has the functions the source defines, by name, and as many
  instructions as a plain text count of the source finds (so the round trip cannot hide a
  statement lost on the first parse);
* ``ptxas -arch=<the file's .target>`` assembles the printed text.  The test looks for a
  ``ptxas`` that accepts the file's ``.version``/``.target`` pair: the one on ``PATH``, then
  ``$HYPA_PTXAS`` (e.g. a CUDA 12 ``ptxas`` for sm_52/sm_70), then the one in the
  ``nvidia-cuda-nvcc-cu12`` wheel if it is installed; it skips when there is none.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from hypa.ptxdialect import InstructionOp, module_to_ptx, parse_ptx
from hypa.ptxdialect.dialect import FuncOp

from helpers import EXAMPLES, HEADER, KERNELS, ROOT as REPO, ptxas, ptxas_candidates, ptxas_for

FILES = sorted(KERNELS.rglob("*.ptx")) + sorted(EXAMPLES.rglob("*.ptx"))
IDS = [str(p.relative_to(REPO)) for p in FILES]

_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_SECTION_RE = re.compile(r"\.section\s+[\w.]+\s*\{.*?\n\s*\}", re.S)
_FUNC_RE = re.compile(r"\.(entry|func)\s*(?:\([^)]*\)\s*)?([\w$]+)")
_LINE_DIRECTIVE_RE = re.compile(r"^\s*\.(?:loc|file)\b[^\n]*$", re.M)
_BRACED_LIST_RE = re.compile(r"\{[^{};]*\}")
_LABEL_RE = re.compile(r"[\w$]+\s*:(?!:)")
_VERSION_RE = re.compile(r"^\s*\.version\s+(\d+\.\d+)", re.M)
_TARGET_RE = re.compile(r"^\s*\.target\s+(\w+)", re.M)


def _count_instructions(text: str) -> int:
    """Instruction statements in PTX text, counted without the front end: statements end at
    ';', '{' or '}' once comments, DWARF sections, ``.loc``/``.file`` lines and braced lists
    (vector operands, initializers) are gone; labels are dropped; what is left counts when it
    starts like an opcode or a guard rather than a directive."""
    code = _SECTION_RE.sub("", _COMMENT_RE.sub("", text))
    code = _BRACED_LIST_RE.sub("VEC", _LINE_DIRECTIVE_RE.sub("", code))
    n = 0
    for chunk in re.split(r"[;{}]", code):
        s = chunk.strip()
        while m := _LABEL_RE.match(s):
            s = s[m.end():].lstrip()
        if s and (s[0].isalpha() or s[0] in "@_"):
            n += 1
    return n


@functools.lru_cache(maxsize=None)
def _round_trip(path: Path) -> tuple[str, str]:
    """(source text, printed text) after checking the round trip."""
    text = path.read_text()
    module = parse_ptx(text, str(path))
    printed = module_to_ptx(module)
    again = parse_ptx(printed, f"{path.name} (printed)")
    assert module.is_structurally_equivalent(again), f"{path.name}: parse(print(parse(x))) != parse(x)"
    assert module_to_ptx(again) == printed, f"{path.name}: printing is not a fixpoint"
    return text, printed


def test_inventory():
    """The shipped set covers every source, architecture and PTX producer."""
    names = {p.name for p in FILES}
    for cu in KERNELS.glob("*.cu"):
        for arch in ("sm_80", "sm_90"):
            assert f"{cu.stem}.{arch}.ptx" in names, f"no {arch} PTX for {cu.name}: run tests/kernels/generate.py"
    for ll in (KERNELS / "llvm").glob("*.ll"):
        assert f"{ll.stem}.sm_80.ptx" in names, f"no PTX for {ll.name}: run tests/kernels/generate_llvm.py"
    suffixes = [".sm_52.ptx", ".sm_70.ptx", ".sm_90a.ptx", ".sm_100a.ptx", ".lineinfo.ptx", ".G.ptx"]
    for s in suffixes:
        assert any(n.endswith(s) for n in names), f"no *{s} file"
    for sub in ("llvm", "triton", "hand"):
        assert any((KERNELS / "ptx" / sub).glob("*.ptx")), f"no PTX under tests/kernels/ptx/{sub}"
    assert (REPO / "examples" / "saxpy.ptx").exists()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_round_trip(path: Path):
    text, printed = _round_trip(path)
    module = parse_ptx(printed, "printed.ptx")
    got = sorted(op.func_name for op in module.ops if isinstance(op, FuncOp))
    code = _SECTION_RE.sub("", _COMMENT_RE.sub("", text))
    want = sorted(m.group(2) for m in _FUNC_RE.finditer(code))
    assert got == want
    instructions = sum(1 for op in module.walk() if isinstance(op, InstructionOp))
    assert instructions == _count_instructions(text) > 0
    assert _TARGET_RE.search(printed).group(1) == _TARGET_RE.search(text).group(1)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_printed_ptx_assembles(path: Path, tmp_path: Path):
    text, printed = _round_trip(path)
    if not ptxas_candidates():
        pytest.skip("ptxas not found")
    version = _VERSION_RE.search(text).group(1)
    arch = _TARGET_RE.search(text).group(1)
    exe = ptxas_for(version, arch)
    if exe is None:
        pytest.skip(f"no ptxas here accepts .version {version} / .target {arch}")
    f = tmp_path / path.name
    f.write_text(printed)
    # -c: a module calling an .extern function other than vprintf only links later
    r = ptxas(f, arch, exe, *(["-c"] if ".extern .func" in text else []))
    assert r.returncode == 0, f"{exe} -arch={arch} rejected the printed PTX:\n{r.stderr}"


def test_aligned_trailing_comments_parse_in_linear_time():
    """LLVM and Triton align trailing comments with runs of 30-40 spaces
    (``.loc 1 6 0                           // kernels.py:6:0``).  A backtracking
    regular expression made such a line take seconds per extra pair of spaces;
    a long run must parse in well under a second."""
    import signal
    import time

    pad = " " * 400
    text = (
        HEADER
        + f".visible .entry k(){pad}// -- Begin function k\n{{\n"
        f"\t.reg .b32 \t%r<2>;{pad}// regs\n"
        f"$L__BB0_1:{pad}// %bb.0\n"
        f"\tmov.u32 \t%r1, %tid.x;{pad}// tid\n"
        f"{pad}// -- End function\n}}\n"
    )

    def timeout(*_):
        raise TimeoutError("parsing aligned comments did not finish in 10 s")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(10)
    try:
        start = time.perf_counter()
        module = parse_ptx(text, "aligned.ptx")
        elapsed = time.perf_counter() - start
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert elapsed < 1.0
    assert "mov.u32 %r1, %tid.x;" in module_to_ptx(module)
