"""The documentation runs as written: every command and snippet of README.md, docs/guide.md,
docs/design.md and docs/validation.md, every section the code cites by name, every relative link.

A fenced block is checked by its language: ``sh`` blocks run in bash (``set -e``) in a fresh
folder that links every top-level entry of the repository, so paths read as from its root and
what the commands write lands there; a leading ``pip install
... &&`` is dropped (the suite runs installed). ``python`` blocks run in a fresh interpreter
there. A ``text`` block that starts with ``$ COMMAND`` runs the command and its other lines
must appear in its output in order (lines holding ``...`` stand for what is left out). ``toml``
and ``json`` blocks must parse. An HTML comment on the line before a block says how it is
treated otherwise:

- ``<!-- not run: WHY -->``: not run (a GPU, a corpus outside the repository, the suite itself);
- ``<!-- needs: TOOL ... -->``: run where every tool is on PATH, skipped elsewhere;
- ``<!-- output varies: WHY -->``: a ``$`` block whose command runs but whose output (times,
  addresses) is not compared.

So a new block that does not run fails here unless it says why."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import ROOT

DOCS = ["README.md", "docs/guide.md", "docs/design.md", "docs/validation.md"]
#: what a fence may be labelled; blocks in any other (or none) fail test_every_block_is_labelled
LANGUAGES = {"sh", "python", "text", "toml", "json", "mlir", "ptx", "llvm", "cuda"}
PIP_PREFIX = re.compile(r"^pip install [^&]*&& ", re.M)
MARKER = re.compile(r"^<!-- (not run|needs|output varies): (.+?) -->$")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int           # of the opening fence, 1-based
    lang: str
    text: str
    marker: tuple[str, str] | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    """The fenced blocks of ``doc``, with the marker comment on the line before each."""
    lines = (ROOT / doc).read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = len(m.group(1)), m.group(2), i
        j = i + 1
        while not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = "\n".join(ln[indent:] for ln in lines[i + 1:j]) + "\n"
        prev = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        mk = MARKER.match(prev)
        out.append(Block(doc, start + 1, lang, body, (mk.group(1), mk.group(2)) if mk else None))
        i = j + 1
    return out


ALL = [b for d in DOCS for b in blocks(d)]
RUN = [b for b in ALL if b.lang in ("sh", "python") or (b.lang == "text" and b.text.startswith("$ "))]


def _missing_tools(b: Block) -> list[str]:
    if b.marker and b.marker[0] == "needs":
        return [t for t in b.marker[1].split() if shutil.which(t) is None]
    return []


@pytest.fixture
def workdir(tmp_path):
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and not entry.name.endswith(".egg-info"):
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("HYPA_TRACEBACK", None)
    return env


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=_env(), text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=600)


@pytest.mark.parametrize("b", RUN, ids=[b.id for b in RUN])
def test_block_runs(b: Block, workdir):
    if b.marker and b.marker[0] == "not run":
        pytest.skip(f"{b.id}: not run: {b.marker[1]}")
    missing = _missing_tools(b)
    if missing:
        pytest.skip(f"{' and '.join(missing)} is not installed")
    if b.lang == "python":
        r = subprocess.run([sys.executable, "-c", b.text], cwd=workdir, env=_env(), text=True,
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
        assert r.returncode == 0, f"{b.id}:\n{r.stderr[-3000:]}"
        return
    if b.lang == "sh":
        r = _bash(PIP_PREFIX.sub("", b.text), workdir)
        assert r.returncode == 0, f"{b.id}: exit {r.returncode}\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}"
        return
    # a `$ COMMAND` block: the command (with its continuation lines), then what it prints
    lines = b.text.rstrip("\n").split("\n")
    cmd, k = [lines[0][2:]], 1
    while cmd[-1].endswith("\\"):
        cmd.append(lines[k])
        k += 1
    r = _bash("\n".join(cmd), workdir)
    assert r.returncode == 0, f"{b.id}: exit {r.returncode}\n{r.stderr[-3000:]}"
    if b.marker and b.marker[0] == "output varies":
        return
    got = [ln.rstrip() for ln in (r.stdout + r.stderr).split("\n")]
    at = 0
    for want in (ln.rstrip() for ln in lines[k:]):
        if "..." in want or not want:
            continue
        assert want in got[at:], f"{b.id}: {want!r} is not in the output (in order):\n" + "\n".join(got)
        at = got.index(want, at) + 1


def test_every_block_is_labelled_and_data_blocks_parse():
    for b in ALL:
        assert b.lang in LANGUAGES, f"{b.id}: a fence labelled {b.lang!r} (one of {sorted(LANGUAGES)})"
        if b.lang == "toml":
            tomllib.loads(b.text)
        elif b.lang == "json":
            json.loads(b.text)
        if b.marker:
            assert b.lang in ("sh", "python", "text"), f"{b.id}: a marker on a {b.lang} block"
            assert b.marker[1].strip(), f"{b.id}: a marker without its reason"


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    sh = [b for b in blocks("README.md") if b.lang == "sh"]
    assert sh[0].text.startswith("pip install -e . && hypa-opt ") and "examples/saxpy.ptx" in sh[0].text
    assert sh[1].text == "pip install -e '.[test]' && python -m pytest -q -n auto && lit -sv tests/filecheck\n"
    ci = (ROOT / ".ci" / "run").read_text().split("\n")
    at = ci.index("# --- the README's test command, verbatim ---")
    assert ci[at + 1] == PIP_PREFIX.sub("", sh[1].text).strip()


# -- sections cited by name, links ----------------------------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def headings(path: Path) -> list[str]:
    out, fenced = [], False
    for ln in path.read_text().split("\n"):
        if re.match(r"^\s*```", ln):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} (.+?)\s*$", ln)):
            out.append(m.group(1))
    return out


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in headings(path):
        s = _slug(h)
        out.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return out


SOURCES = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md", ".toml", ".sh", ".cu", ".txt")
           and not any(part.startswith(".") or part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)
           and p.is_file()]
#: a citation by name: docs/design.md, "Execution model" (quotes escaped inside a Python string too)
CITATION = re.compile(r"docs/(\w+)\.md,\s+\\?\"([^\"\\]+)\\?\"")
#: a section of these docs cited by number ("docs/design.md section 6", "design.md §3", "section 8
#: of design.md"); inside the docs themselves any "section N"
BY_NUMBER = re.compile(r"(design|guide|validation|README)(\.md)?[`'\"]*,?\s+(section|§)\s*\d"
                       r"|(section|§)\s*\d+\s+of\s+(docs/)?(design|guide|validation|README)")
IN_DOC_BY_NUMBER = re.compile(r"\b[Ss]ection \d|§\s*\d")


def test_code_cites_sections_by_name_and_each_exists():
    cited = 0
    for p in SOURCES:
        if p == Path(__file__):
            continue
        text = p.read_text(errors="replace")
        rel = p.relative_to(ROOT)
        m = BY_NUMBER.search(text) or (IN_DOC_BY_NUMBER.search(text) if str(rel) in DOCS else None)
        assert m is None, f"{rel}: cites a section by number ({text[max(0, m.start() - 40):m.end() + 20]!r})"
        for doc, name in CITATION.findall(text):
            name = " ".join(name.split())  # a citation may wrap across lines
            target = ROOT / "docs" / f"{doc}.md"
            assert target.exists(), f"{rel}: cites docs/{doc}.md, which does not exist"
            assert name in headings(target), f"{rel}: cites docs/{doc}.md, \"{name}\": no such heading"
            cited += 1
    assert cited >= 20  # the code does cite sections (a pattern that stopped matching would pass)


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_relative_links_resolve():
    checked = 0
    for p in (q for q in SOURCES if q.suffix == ".md"):
        text, fenced = [], False
        for ln in p.read_text().split("\n"):
            if re.match(r"^\s*```", ln):
                fenced = not fenced
            elif not fenced:
                text.append(re.sub(r"`[^`]*`", "", ln))
        for target in LINK.findall("\n".join(text)):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = (p.parent / path).resolve() if path else p
            assert dest.exists(), f"{p.relative_to(ROOT)}: link {target!r}: no such file"
            if frag and dest.suffix == ".md":
                assert frag in anchors(dest), f"{p.relative_to(ROOT)}: link {target!r}: no such heading"
            checked += 1
    assert checked >= 20
