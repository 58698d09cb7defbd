#!/usr/bin/env python3
"""Regenerate the LLVM-NVPTX-style PTX samples from the LLVM IR in ``tests/kernels/llvm/``.

``tests/kernels/llvm/<name>.ll`` -> ``tests/kernels/ptx/llvm/<name>.<arch>.ptx`` for every
arch in ``ARCHS``.  The IR is hand-written for hypa's tests; the PTX comes from the NVPTX
back end of the LLVM that llvmlite bundles (llvmlite 0.50, LLVM 22): parse and verify the
module, run the ``O3`` new-pass-manager pipeline with the NVPTX target machine, and
``emit_assembly`` with ``cpu=<arch>`` and the PTX ISA version in ``FEATURES`` (kept at or
below what this machine's ``ptxas`` (CUDA 13.0, PTX ISA 9.0) accepts).  Each output is
assembled with ``ptxas -arch=<arch>`` (``-c``, since ``calls.ll`` calls an ``.extern``
function that only a link step would resolve) before it is written.  The output is
deterministic; ``--check`` verifies that the committed files are up to date.

Usage::

    python tests/kernels/generate_llvm.py [--check]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm
from committed import Committed

HERE = Path(__file__).resolve().parent
SRC = HERE / "llvm"
OUT = HERE / "ptx" / "llvm"

# arch -> target features (PTX ISA version the back end writes)
ARCHS = {"sm_80": "+ptx78", "sm_90": "+ptx85"}


def compile_ll(text: str, arch: str) -> str:
    mod = llvm.parse_assembly(text)
    mod.verify()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    tm = target.create_target_machine(cpu=arch, features=ARCHS[arch], opt=3)
    pto = llvm.PipelineTuningOptions(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    mod.verify()
    return tm.emit_assembly(mod)


def assemble(text: str, arch: str) -> None:
    if not shutil.which("ptxas"):
        print("  (ptxas not found: not checked)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "k.ptx"
        f.write_text(text)
        p = subprocess.run(["ptxas", "-c", f"-arch={arch}", str(f), "-o", os.devnull], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"ptxas rejected the PTX for {arch}:\n{p.stderr}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = ap.parse_args()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    print(f"llvmlite {llvmlite.__version__}, LLVM {'.'.join(map(str, llvm.llvm_version_info))}")
    OUT.mkdir(parents=True, exist_ok=True)
    outputs, expected = Committed(args.check), set()
    for ll in sorted(SRC.glob("*.ll")):
        for arch in ARCHS:
            name = f"{ll.stem}.{arch}.ptx"
            expected.add(name)
            text = compile_ll(ll.read_text(), arch)
            assemble(text, arch)
            changed = outputs.write(OUT / name, text)
            print(f"  {name:32s} {len(text):7d} bytes{' (changed)' if changed else ''}")
    outputs.remove_stale(OUT, expected)
    outputs.exit_if_out_of_date()


if __name__ == "__main__":
    main()
