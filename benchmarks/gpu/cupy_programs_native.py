#!/usr/bin/env python3
"""On a GPU machine (device tool): the CuPy programs of tests/cuda_programs/python natively, and
the counts of their kernels instrumented, for tests/ground_truth/hypa_run/cupy_native.json.

``python3 benchmarks/gpu/cupy_programs_native.py OUT.json PROGRAM.py ...``: each program runs
twice with ``CUPY_COMPILE_WITH_PTX=1`` and ``CUPY_ACCELERATORS=''`` (what ``hypa run`` sets) and a
fresh kernel cache:
once as it is (its stdout, exit status), once in this process with CuPy's NVRTC output
instrumented (``instrument-block-counters``, hypa's ``passes/instrument.py``) before CuPy
loads it; after the program ends each instrumented module's counters are read and split per
kernel (each of the program's kernels runs once, so a kernel's counts are its launch's).
Needs hypa's pure-Python dependencies (xdsl ...) importable; hypa itself is this checkout.
``PTX_DIR=DIR``: also write each kernel's module PTX there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _import_hypa() -> None:
    d = tempfile.mkdtemp(prefix="hypa-src-")
    os.symlink(ROOT, os.path.join(d, "hypa"))
    sys.path.insert(0, d)


def entry_sha256(ptx: str, kernel: str) -> str | None:
    """sha256 of a kernel's ``.entry`` in PTX text, from the directive to its closing brace: the
    code its counts depend on (a module's other declarations differ between CUDA headers)."""
    m = re.search(rf"^[^\n]*\.entry\s+{re.escape(kernel)}\s*\(.*?^}}$", ptx, re.M | re.S)
    return hashlib.sha256(m.group(0).encode()).hexdigest() if m else None


def instrumented_counts(program: str) -> tuple[dict, dict]:
    """Run ``program`` in this process with every CuPy module instrumented: per kernel
    (PTX name) its metrics, and the sha256 of its module's PTX as NVRTC made it and of its
    ``.entry``."""
    from cuda.bindings import driver

    import cupy
    from cupy.cuda import compiler

    from hypa.passes.instrument import CounterMap, instrument_ptx
    from hypa.runtime.metrics.registry import with_ratios

    modules = []  # (PTX text, counter map, cupy Module)
    made = []
    compile_ptx = compiler._compile_using_nvrtc_no_warning

    def compile_instrumented(*a, **k):
        ptx, mapping = compile_ptx(*a, **k)
        text = ptx.decode() if isinstance(ptx, bytes) else ptx
        itext, cmap = instrument_ptx(text.rstrip("\0"))
        made.append((text.rstrip("\0"), cmap))
        return itext.encode(), mapping

    compile_with_cache = compiler._compile_with_cache_cuda

    def with_cache(*a, **k):
        n = len(made)
        mod = compile_with_cache(*a, **k)
        if len(made) > n:
            modules.append((*made[-1], mod))
        return mod

    compiler._compile_using_nvrtc_no_warning = compile_instrumented
    compiler._compile_with_cache_cuda = with_cache
    argv = sys.argv
    sys.argv = [program]
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    finally:
        sys.argv = argv
    cupy.cuda.runtime.deviceSynchronize()
    counts, ptx = {}, {}
    for text, cmap, mod in modules:
        import numpy as np

        try:
            ptr = int(mod.get_global_var(cmap.symbol))
        except AttributeError:  # an older CuPy
            err, ptr, _size = driver.cuModuleGetGlobal(driver.CUmodule(mod.ptr), cmap.symbol.encode())
            assert int(err) == 0, err

        host = np.zeros(cmap.slots, np.uint64)
        cupy.cuda.runtime.memcpy(host.ctypes.data, int(ptr), 8 * cmap.slots, cupy.cuda.runtime.memcpyDeviceToHost)
        counters = [int(x) for x in host]
        for fn in dict.fromkeys(b["function"] for b in cmap.blocks):
            part = CounterMap(cmap.symbol, cmap.slots, [b for b in cmap.blocks if b["function"] == fn],
                              [b for b in cmap.branches if b["function"] == fn],
                              [g for g in cmap.guards if g["function"] == fn], [])
            counts[fn] = with_ratios(part.metrics(counters))
            if os.environ.get("PTX_DIR"):  # the PTX itself, to compare with another machine's
                Path(os.environ["PTX_DIR"], f"{fn}.ptx").write_text(text)
            ptx[fn] = {"module": hashlib.sha256(text.encode()).hexdigest(), "entry": entry_sha256(text, fn)}
    return counts, ptx


def main() -> int:
    out_path, programs = sys.argv[1], sys.argv[2:]
    os.environ["CUPY_COMPILE_WITH_PTX"] = "1"
    os.environ["CUPY_ACCELERATORS"] = ""
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cupy-cache-")
    from importlib import metadata

    out = {"kind": "cupy-programs-native",
           "gpu": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip(),
           "command": "python3 benchmarks/gpu/cupy_programs_native.py OUT.json " + " ".join(programs)
                      + " (CUPY_COMPILE_WITH_PTX=1, CUPY_ACCELERATORS='', a fresh CUPY_CACHE_DIR)",
           "versions": {}, "programs": {}}
    for pkg in ("cupy-cuda13x", "cuda-bindings", "numpy"):
        try:
            out["versions"][pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out["versions"][pkg] = None
    for prog in programs:
        env = dict(os.environ, CUPY_CACHE_DIR=tempfile.mkdtemp(prefix="cupy-cache-"))
        p = subprocess.run([sys.executable, prog], capture_output=True, text=True, timeout=300, env=env)
        out["programs"][os.path.basename(prog)] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr[-2000:]}
        print(os.path.basename(prog), p.returncode, p.stdout, p.stderr[-2000:], flush=True)
    import cupy

    out["versions"]["nvrtc"] = list(cupy.cuda.nvrtc.getVersion())
    _import_hypa()
    for prog in programs:
        rec = out["programs"][os.path.basename(prog)]
        try:
            rec["counts"], rec["ptx_sha256"] = instrumented_counts(prog)
        except Exception as e:  # noqa: BLE001 (recorded, the other programs go on)
            import traceback

            rec["counts_error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}"
        print(json.dumps({k: rec.get(k) for k in ("counts", "ptx_sha256", "counts_error")}, indent=1), flush=True)
    Path(out_path).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
