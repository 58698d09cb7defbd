"""docs/opcode-coverage.md is generated; its ISA and emulator columns must still describe the code.

The hardware column needs the recorded probes re-run (``coverage.py --verify``, minutes), so it
is not re-derived here; test_ground_truth.py checks those probes themselves.
"""

import re
import sys

from helpers import ROOT


def _doc_rows() -> dict[str, tuple[str, str, str, str]]:
    rows = {}
    for line in (ROOT / "docs" / "opcode-coverage.md").read_text().splitlines():
        m = re.match(r"\| `([^`]+)` \| (\w+) \| (full|parse) \| (yes|-)(?: \((?:why|except): ([^|]*)\))? \|", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4), m.group(5) or "")
    return rows


def test_coverage_doc_matches_the_isa_table_and_the_emulator():
    sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
    import coverage

    from hypa.ptxdialect import isa

    emu = coverage.emulated_entries()
    # the reason: why an entry has no semantics, or which forms of an emulated one are left out
    now = {name: (kind, status, "yes" if name in emu else "-",
                  isa.unemulated_forms(name) if name in emu else isa.unsupported_reason(name))
           for name, kind, status in isa.coverage_rows()}
    doc = _doc_rows()
    assert set(doc) == set(now), set(doc) ^ set(now)
    stale = {k: (doc[k], now[k]) for k in now if doc[k] != now[k]}
    assert not stale, f"regenerate docs/opcode-coverage.md (benchmarks/gpu/coverage.py --verify): {stale}"
