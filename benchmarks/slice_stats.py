"""Slice statistics over a folder of PTX files (issue 3's corpus figures).

    python benchmarks/slice_stats.py DIR [DIR ...] [--json out.json]
    python benchmarks/slice_stats.py --small      # CI: examples, hand-written, LLVM and Triton kernels (+ ptxas)

For every kernel: static slice fraction (instructions in the slice / all
instructions of the kernel), whether the slice reaches memory (contains a
load), and whether `ptx-to-ssa` output still assembles (with --ptxas).
Prints the median and maximum slice fraction (HyPA reported at most 10%) and
how many kernels' slices reach memory.  A file whose target no ptxas here knows (CUDA 13
dropped sm_52 and sm_70; ``$HYPA_PTXAS`` or the nvidia-cuda-nvcc-cu12 wheel add an older one)
is counted as not assembled, not as a failure.  ``--small`` (CI) reads ``examples``, the
hand-written and the LLVM and Triton sm_90 files of ``tests/kernels/ptx``, assembles them when
``ptxas`` is on the PATH (else says so), and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from xdsl.context import Context

from hypa.passes.slice import compute_slices, memory_effect
from hypa.passes.ssa import PTXToSSA
from hypa.ptxdialect import isa, parse_ptx
from hypa.ptxdialect.dialect import FuncOp, InstructionOp, TargetOp
from hypa.ptxdialect.diagnostics import PTXError


def ptx_files(paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _d, files in os.walk(p):
                out.extend(os.path.join(root, f) for f in files if f.endswith(".ptx"))
        else:
            out.append(p)
    return sorted(out)


def _assemblers(default: str) -> list[str]:
    """ptxas on PATH, then $HYPA_PTXAS, then CUDA 12's from the nvidia-cuda-nvcc-cu12 wheel (old targets)."""
    out = [default]
    if os.environ.get("HYPA_PTXAS"):
        out.append(os.environ["HYPA_PTXAS"])
    try:
        import nvidia.cuda_nvcc  # type: ignore[import-not-found]

        out.append(os.path.join(os.path.dirname(nvidia.cuda_nvcc.__file__), "bin", "ptxas"))
    except ImportError:
        pass
    return [p for p in out if p and os.path.exists(p)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--json")
    ap.add_argument("--ptxas", action="store_true", help="check that ptx-to-ssa output assembles")
    ap.add_argument("--small", action="store_true",
                    help="CI: examples and the hand-written, LLVM and Triton test kernels (unless paths are given), "
                         "--ptxas where ptxas is on the PATH; exit 1 on any failure")
    a = ap.parse_args()
    if a.small:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        kernels = os.path.join(root, "tests", "kernels", "ptx")
        a.paths = a.paths or [os.path.join(root, "examples"), os.path.join(kernels, "hand")] + [
            f for f in ptx_files([os.path.join(kernels, "llvm"), os.path.join(kernels, "triton")])
            if f.endswith(".sm_90.ptx")]
        a.ptxas = True
        if shutil.which("ptxas") is None:
            print("ptxas is not on the PATH: the ptx-to-ssa outputs are not assembled")
    elif not a.paths:
        ap.error("give PTX files or folders, or --small")
    rows = []
    failures = []
    no_assembler: dict[str, int] = {}
    assembled = 0
    t0 = time.perf_counter()
    ptxas = shutil.which("ptxas") if a.ptxas else None
    for path in ptx_files(a.paths):
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
            m = parse_ptx(text, path)
            slices = compute_slices(m)
        except (PTXError, Exception) as e:  # report, keep going
            failures.append((path, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"))
            continue
        for name, fs in slices.items():
            f = fs.func
            if not f.is_kernel:
                continue
            n = sum(1 for op in f.body.walk() if isinstance(op, InstructionOp))
            reads = any(memory_effect(op)[0] and isa.state_space(op.spec, op.modifiers) not in ("param", "const") for op in fs.ops)
            rows.append({"file": path, "kernel": name, "instructions": n, "slice": len(fs.ops),
                         "fraction": len(fs.ops) / n if n else 0.0, "memory": reads})
        if ptxas:
            target = next((op.arch for op in m.ops if isinstance(op, TargetOp)), None)
            if target:
                from hypa.tools.ptx_target import PTXTarget

                m2 = parse_ptx(text, path)
                PTXToSSA().apply(Context(), m2)
                import io

                buf = io.StringIO()
                PTXTarget().emit(Context(), m2, buf)
                with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as tf:
                    tf.write(buf.getvalue())
                for exe in _assemblers(ptxas):
                    r = subprocess.run([exe, f"-arch={target}", "-c", tf.name, "-o", os.devnull], capture_output=True, text=True)
                    unknown = "is not defined for option 'gpu-name'" in r.stderr or "Unsupported .version" in r.stderr
                    if not unknown:
                        break
                os.unlink(tf.name)
                if unknown:  # no assembler here takes this target: not hypa's failure
                    no_assembler[target] = no_assembler.get(target, 0) + 1
                elif r.returncode == 0:
                    assembled += 1
                else:
                    failures.append((path, "ptx-to-ssa output rejected by ptxas: " + r.stderr.strip().splitlines()[0][:200]))
    dt = time.perf_counter() - t0
    fr = [r["fraction"] for r in rows]
    print(f"{len(ptx_files(a.paths))} files, {len(rows)} kernels, {len(failures)} failures, {dt:.1f} s")
    if ptxas:
        print(f"ptx-to-ssa outputs assembled by ptxas: {assembled} files"
              + (f"; not assembled, no ptxas here takes their target: "
                 f"{', '.join(f'{n} for {t}' for t, n in sorted(no_assembler.items()))}" if no_assembler else ""))
    if fr:
        print(f"slice fraction: median {100 * statistics.median(fr):.1f}%, max {100 * max(fr):.1f}%, "
              f"mean {100 * statistics.mean(fr):.1f}%")
        print(f"kernels whose slice reaches memory (loads from global/shared/local/generic): {sum(r['memory'] for r in rows)}")
        for r in sorted(rows, key=lambda r: -r["fraction"])[:5]:
            print(f"  highest: {100 * r['fraction']:.1f}% {r['kernel']} ({os.path.basename(r['file'])}, {r['instructions']} instructions)")
        print(f"kernels with a slice fraction <= 10%: {sum(f <= 0.10 for f in fr)}")
    for p, msg in failures[:20]:
        print(f"FAIL {p}: {msg}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"kernels": rows, "failures": failures}, f, indent=1)
    if a.small and (failures or not rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
