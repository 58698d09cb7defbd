"""Work bounded by what a kernel holds, not by what it declares (issue 17, "bounded work").

Each case failed before its fix: verification counted the blocks of a region once per
block (4,000 blocks: a minute), and a declared register range ``%r<2147483647>`` (which
ptxas accepts) was expanded one register at a time by ``ptx-to-ssa`` and ``ptx-out-of-ssa``
(MemoryError, or gigabytes and minutes).  No timing is asserted: the block test counts
the walks, the register test runs in a child process with a memory limit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from xdsl.ir.core import RegionBlocks

from hypa.ptxdialect.parser import parse_ptx


def _branchy_kernel(blocks: int) -> str:
    body = []
    for i in range(blocks):
        body += [f"setp.eq.u32 %p1, %r1, {i};", f"@%p1 bra L{i};", "add.u32 %r1, %r1, 1;", f"L{i}:"]
    return "\n".join([
        ".version 8.0", ".target sm_80", ".address_size 64", ".visible .entry k(.param .u32 p)", "{",
        ".reg .pred %p<2>;", ".reg .b32 %r<4>;", "ld.param.u32 %r1, [p];", *body, "ret;", "}", ""])


def test_verification_does_not_walk_the_region_per_block(monkeypatch):
    calls = []
    original = RegionBlocks.__len__
    monkeypatch.setattr(RegionBlocks, "__len__", lambda self: calls.append(1) or original(self))
    counts = []
    for blocks in (200, 2000):
        module = parse_ptx(_branchy_kernel(blocks))
        calls.clear()
        module.verify()
        counts.append(len(calls))
    # xDSL's generic check walked the region once per block (2,000 blocks: 4,001 walks);
    # now the number of walks does not depend on the kernel's size
    assert counts[0] == counts[1] < 10


_HUGE_RANGE = textwrap.dedent("""
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry k(.param .u32 p)
    {
    \t.reg .b32 %r<2147483647>;
    \tld.param.u32 %r1, [p];
    \tadd.u32 %r2, %r1, 1;
    \tret;
    }
""")

_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from hypa.ptxdialect.parser import parse_ptx
from hypa.ptxdialect.printer import module_to_ptx
from hypa.passes.ssa import PTXToSSA
from hypa.passes.out_of_ssa import PTXOutOfSSA
from hypa.runtime.emulator.emulator import emulate
from hypa.runtime.emulator.launch import Launch
from xdsl.context import Context
text = sys.stdin.read()
m = parse_ptx(text)
PTXToSSA().apply(Context(), m)
PTXOutOfSSA().apply(Context(), m)
out = module_to_ptx(m)
assert ".reg .b32 %r<2147483647>;" in out, out
r = emulate(text, Launch(grid=1, block=32, args=[3]), mode="full")
print(r.metrics["thread_inst_executed"], r.metrics["inst_executed"])
"""


def test_a_huge_declared_register_range_costs_what_is_used():
    r = subprocess.run([sys.executable, "-c", _CHILD], input=_HUGE_RANGE, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["96", "3"]  # ld, add, ret for 32 threads: 96 thread- and 3 warp-instructions


def test_deeply_nested_scopes_print_in_proportion_to_the_input():
    from hypa.ptxdialect.printer import module_to_ptx

    n = 10000
    text = (".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n" + "{\n" * n
            + ".reg .b32 %r1;\nmov.u32 %r1, 1;\n" + "}\n" * n + "ret;\n}\n")
    out = module_to_ptx(parse_ptx(text))
    assert len(out) < 20 * len(text)  # one tab per level printed 100 MB for this 40 KB input
    assert module_to_ptx(parse_ptx(out)) == out


def test_call_parameters_reusing_a_name_with_another_size_get_the_largest_slot():
    """-G builds declare ``param0`` again in each call scope, with other sizes; laid out by the
    last declaration, the 32-byte argument of the first call was out of bounds."""
    import os

    import numpy as np

    from hypa.runtime.emulator.emulator import emulate
    from hypa.runtime.emulator.launch import Launch

    path = os.path.join(os.path.dirname(__file__), "data", "call_param_scopes.ptx")
    out = np.zeros(2, dtype=np.uint64)
    r = emulate(open(path).read(), Launch(grid=1, block=1, args=[out]), mode="full")
    (result,) = r.buffers.values()
    assert int(result[0]) == 42 and int(result[1]) & 0xFFFFFFFF == 7
    assert r.metrics["thread_inst_executed"] == 21


def test_per_cta_rows_are_kept_once_per_distinct_row():
    """--per-cta on 100,000 CTAs: each distinct counter row is kept once, with a 4-byte index
    per CTA (not CTAs x counters), and the JSON is written CTA by CTA with the same value as
    the in-memory report."""
    import io
    import json

    import numpy as np

    from helpers import emulate, kernel
    from hypa.runtime.report import tables as report
    from hypa.runtime.report.batch import ProfileOptions, run_profile

    ptx = kernel("k(.param .u64 k_out)", """
    ld.param.u64 %rd1, [k_out];
    mov.u32 %r1, %ctaid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $L_even;
    add.u32 %r1, %r1, 1;
$L_even:
    ret;
""")
    r = emulate(ptx, ["out"], {"out": np.zeros(1, np.uint32)}, grid=100_000, block=32, per_cta=True, mode="full")
    assert len(r.per_cta) == 100_000 and len(r.per_cta.values) == 2  # even and odd CTAs
    assert r.per_cta.index.itemsize == 4
    assert r.per_cta[0]["inst_executed"] + 1 == r.per_cta[1]["inst_executed"] == r.per_cta[99_999]["inst_executed"]
    assert sum(c["inst_executed"] for c in r.per_cta) == r.metrics.values["inst_executed"]
    prof = run_profile([], [str(__import__("helpers").LAUNCHES / "divergence.toml")], ProfileOptions(per_cta=True),
                       progress=False)
    out = io.StringIO()
    report.write_profile_json(prof, out, per_cta=True)
    assert json.loads(out.getvalue()) == json.loads(report.profile_json(prof, per_cta=True))
