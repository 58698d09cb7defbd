"""Does ``passes/spin_loops.py`` find the loops where ptxas puts a ``YIELD``?  (no GPU needed)

    python benchmarks/gpu/yield_check.py [--plain] [--arch sm_90] FILE.ptx ...

For every kernel of every file: the spin loops the rule finds (after inlining, as the
emulator sees the kernel) and the ``YIELD`` instructions in the SASS that ``ptxas -arch``
makes of the kernel as the GPU harness runs it, instrumented by
``instrument-block-counters`` (``--plain``: the kernel as written).  Prints one line per
kernel and exits 1 when a count differs.  Needs ``ptxas``, ``cuobjdump`` and ``nvdisasm`` (CUDA,
or the wheels: ``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compare import _hypa  # noqa: E402,F401  (makes ``hypa`` importable)

from hypa.passes.instrument import instrument_ptx  # noqa: E402
from hypa.passes.spin_loops import independent_thread_scheduling, spin_loops  # noqa: E402
from hypa.ptxdialect import parse_ptx  # noqa: E402
from hypa.runtime.report.inputs import find_tool  # noqa: E402
from hypa.runtime.emulator.options import EmulationOptions  # noqa: E402
from hypa.runtime.emulator.program import module_kernels, prepare  # noqa: E402


def cuobjdump() -> str | None:
    """``cuobjdump``, where the ``nvdisasm`` it runs is there too (None otherwise)."""
    tool, disasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    return tool if tool and disasm else None


def yields_per_kernel(ptx: str, arch: str, tool: str) -> dict[str, int]:
    """Kernel name -> ``YIELD`` instructions in its SASS."""
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        Path(src).write_text(ptx)
        subprocess.run(["ptxas", f"-arch={arch}", src, "-o", cubin], check=True, capture_output=True, text=True)
        env = dict(os.environ, NVDISASM_PATH=os.path.dirname(find_tool("nvdisasm") or ""))
        sass = subprocess.run([tool, "-sass", cubin], check=True, capture_output=True, text=True, env=env).stdout
    out: dict[str, int] = {}
    name = None
    for line in sass.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            out[name] = 0
        elif name and re.search(r"\bYIELD\b", line):
            out[name] += 1
    return out


def check(path: str, arch: str, plain: bool, tool: str) -> list[tuple[str, int, int]]:
    """(kernel, spin loops the rule finds, YIELDs in the SASS) for each kernel of ``path``."""
    text = Path(path).read_text()
    m = re.search(r"\.target\s+(sm_\d+)a\b", text)
    if m and m.group(1) == arch:  # sm_90a PTX assembles for sm_90a only
        arch += "a"
    sass = yields_per_kernel(text if plain else instrument_ptx(text)[0], arch, tool)
    rows = []
    module = parse_ptx(text)
    its = independent_thread_scheduling(module)
    for k in module_kernels(module):
        prog = prepare(parse_ptx(text), k.func_name, EmulationOptions(mode="full", reconvergence="ipdom"))
        rows.append((k.func_name, len(spin_loops(prog.cfg)) if its else 0, sass.get(k.func_name, 0)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--plain", action="store_true", help="the kernels as written, not instrumented")
    args = ap.parse_args(argv)
    tool = cuobjdump()
    if tool is None or shutil.which("ptxas") is None:
        print("yield_check: needs ptxas, cuobjdump and nvdisasm "
              "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)", file=sys.stderr)
        return 2
    bad = 0
    for f in args.files:
        try:
            rows = check(f, args.arch, args.plain, tool)
        except subprocess.CalledProcessError as e:
            print(f"skip {f}: ptxas: {(e.stderr or '').strip().splitlines()[:1]}")
            continue
        for name, rule, sass in rows:
            same = rule == sass
            bad += not same
            print(f"{'ok  ' if same else 'DIFF'} {f}:{name}: spin loops {rule}, SASS YIELD {sass}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
