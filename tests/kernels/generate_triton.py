#!/usr/bin/env python3
"""Regenerate the Triton-style PTX samples from ``tests/kernels/triton/kernels.py``.

Triton compiles ahead of time without a GPU: ``triton.compile(ASTSource(fn, signature,
constexprs), target=GPUTarget("cuda", <capability>, 32), options=...)`` runs the whole
pipeline (TTIR -> TTGIR -> LLVM IR -> PTX -> cubin with Triton's bundled ``ptxas``) on the
CPU.  The PTX (``compiled.asm["ptx"]``) goes to
``tests/kernels/ptx/triton/<kernel>.sm_<cap>.ptx`` for each capability in ``CAPS``.

Tool: Triton 3.9.0 (``pip install triton==3.9.0``; a separate venv is fine, this script needs
nothing from hypa).  ``ptx_version`` is pinned to a PTX ISA that this machine's ``ptxas``
(CUDA 13.0, PTX ISA 9.0) accepts; Triton would otherwise write the newest version its bundled
ptxas knows.  The PTX carries line info (``.loc``/``.file``) naming kernels.py, so the file is
copied to the fixed folder ``STAGE`` and imported from there: the output does not depend on
where the checkout lives.  ``--check`` verifies that the committed files are up to date.

Usage::

    python tests/kernels/generate_triton.py [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from committed import Committed

HERE = Path(__file__).resolve().parent
OUT = HERE / "ptx" / "triton"
STAGE = Path("/tmp/hypa-kernels-triton")

CAPS = {80: 84, 90: 85}  # compute capability -> PTX ISA version (x10)

# kernel -> (signature, constexprs, options)
F32 = "*fp32"
F16 = "*fp16"
JOBS = {
    "vadd": ({"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "n": "i32", "BLOCK": "constexpr"},
             {"BLOCK": 1024}, {"num_warps": 4}),
    "softmax": ({"in_ptr": F32, "out_ptr": F32, "n_cols": "i32", "in_stride": "i32", "out_stride": "i32",
                 "BLOCK": "constexpr"}, {"BLOCK": 1024}, {"num_warps": 4}),
    "matmul": ({"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32", "K": "i32",
                "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
                "stride_cm": "i32", "stride_cn": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
               {"BM": 64, "BN": 64, "BK": 32}, {"num_warps": 4, "num_stages": 3}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = ap.parse_args()
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    cache = tempfile.mkdtemp(prefix="triton-cache-")
    os.environ["TRITON_CACHE_DIR"] = cache

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if STAGE.exists():
        shutil.rmtree(STAGE)
    STAGE.mkdir(parents=True)
    shutil.copy(HERE / "triton" / "kernels.py", STAGE / "kernels.py")
    spec = importlib.util.spec_from_file_location("hypa_triton_kernels", STAGE / "kernels.py")
    kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels)

    print(f"triton {triton.__version__}")
    OUT.mkdir(parents=True, exist_ok=True)
    outputs, expected = Committed(args.check), set()
    for name, (sig, consts, opts) in JOBS.items():
        for cap, ptx_version in CAPS.items():
            src = ASTSource(fn=getattr(kernels, name), signature=sig, constexprs=consts)
            compiled = triton.compile(src, target=GPUTarget("cuda", cap, 32),
                                      options={**opts, "ptx_version": ptx_version})
            text = compiled.asm["ptx"]
            fname = f"{name}.sm_{cap}.ptx"
            expected.add(fname)
            changed = outputs.write(OUT / fname, text)
            print(f"  {fname:24s} {len(text):7d} bytes{' (changed)' if changed else ''}")
    outputs.remove_stale(OUT, expected)
    shutil.rmtree(STAGE)
    shutil.rmtree(cache, ignore_errors=True)
    outputs.exit_if_out_of_date()


if __name__ == "__main__":
    main()
