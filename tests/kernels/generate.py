#!/usr/bin/env python3
"""Regenerate the PTX of the project's CUDA test kernels (``tests/kernels/*.cu``).

Every file ``tests/kernels/<name>.cu`` becomes ``tests/kernels/ptx/<name>.<arch>[.<variant>].ptx``
for the architectures and variants listed in ``KERNELS`` below.  Running the script again
rewrites the same bytes (the outputs are committed; ``--check`` verifies that).

Tools
-----
* sm_75 and newer (sm_80, sm_90, sm_90a, sm_100a): this machine's ``nvcc`` (CUDA 13.0,
  V13.0.88), ``nvcc -ptx -O3 -arch=<arch> [-lineinfo | -G]``.
* sm_52 and sm_70: CUDA 13 cannot target them any more, so they come from NVRTC of CUDA 12.4,
  driven through ``ctypes`` (``nvrtcCreateProgram`` / ``nvrtcCompileProgram`` /
  ``nvrtcGetPTX``) with ``--gpu-architecture=compute_52`` / ``compute_70``.  NVRTC, the CUDA
  headers it needs (``cuda_fp16.h``, ``mma.h``) and the CUDA 12 ``ptxas`` that checks the
  result come from NVIDIA's PyPI wheels::

      pip install nvidia-cuda-nvrtc-cu12==12.4.127 nvidia-cuda-runtime-cu12==12.4.127 \\
                  nvidia-cuda-nvcc-cu12==12.4.131

  installed into the interpreter that runs this script (or point ``--cu12`` at the
  ``site-packages/nvidia`` folder that holds ``cuda_nvrtc``, ``cuda_runtime`` and
  ``cuda_nvcc``).  The versions are pinned so that NVRTC writes ``.version 8.4`` PTX, which
  the CUDA 12.4 ``ptxas`` accepts.

Every output is assembled with ``ptxas -arch=<arch>`` (CUDA 13's for sm_75+, CUDA 12.4's
for sm_52/sm_70) before it is written, so a committed file is always valid PTX.

Determinism: ``-lineinfo`` and ``-G`` embed the absolute source path (in ``.file`` and in the
DWARF bytes), so the sources are compiled from a fixed staging folder, ``STAGE`` below,
whatever the checkout's location.  NVRTC output carries no path.

Usage::

    python tests/kernels/generate.py             # regenerate everything
    python tests/kernels/generate.py saxpy scan  # only these kernels
    python tests/kernels/generate.py --check     # fail if a committed file would change
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from committed import Committed

HERE = Path(__file__).resolve().parent
OUT = HERE / "ptx"
EXAMPLES_DIR = HERE.parent.parent / "examples"
STAGE = Path("/tmp/hypa-kernels")

NVCC_ARCHS = ("sm_80", "sm_90")
NVRTC_ARCHS = ("sm_52", "sm_70")

# name -> what to build.  Keys: nvcc (archs), nvrtc (archs), lineinfo (archs), G (archs).
# Missing keys take the defaults: nvcc=NVCC_ARCHS, nvrtc=NVRTC_ARCHS, no lineinfo, no -G.
KERNELS: dict[str, dict[str, tuple[str, ...]]] = {
    "saxpy": {"nvcc": NVCC_ARCHS + ("sm_90a", "sm_100a"), "lineinfo": ("sm_80",), "G": ("sm_80", "sm_90")},
    "reduce_shared": {"lineinfo": ("sm_90",)},
    "reduce_warp": {},
    "spmv_csr": {"lineinfo": ("sm_80",), "G": ("sm_80",)},
    "histogram": {},
    "stencil": {},
    "device_call": {"lineinfo": ("sm_90",), "G": ("sm_80",)},
    "half_math": {"nvrtc": ("sm_70",)},  # f16 arithmetic needs sm_53
    "conv2d": {},
    "pooling": {},
    "softmax": {"nvcc": NVCC_ARCHS + ("sm_90a", "sm_100a")},
    "layernorm": {},
    "gemm_tiled": {"nvcc": NVCC_ARCHS + ("sm_100a",)},
    "scan": {},
    "bfs": {},
    "divergence": {"lineinfo": ("sm_80",), "G": ("sm_80",)},
    "loop_exit": {"G": ("sm_90",)},
    "switch_dense": {},
    "warp_vote": {},
    "atomic_cas": {},
    "double_math": {},
    "int_bits": {},
    "dyn_shared": {},
    "cp_async": {"nvrtc": ()},  # cp.async needs sm_80
    "printf": {},
    "wmma_gemm": {"nvcc": NVCC_ARCHS + ("sm_90a",), "nvrtc": ("sm_70",)},  # wmma needs sm_70
}


# Copied to examples/ (README's first commands): <name>.ptx, the EXAMPLE_ARCH build of
# tests/kernels/<name>.cu (the one copy of the source).  examples/saxpy.ptx predates this
# script and is kept as it is; tests/kernels/saxpy.cu is its source.
EXAMPLES = ("saxpy", "reduce_shared", "divergence", "spmv_csr")
EXAMPLE_ARCH = "sm_80"
KEEP_EXAMPLE_PTX = ("saxpy",)


def run(cmd: list[str], cwd: Path | None = None) -> None:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")


def tool_version(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1] if out.strip() else "?"


class Cuda12:
    """NVRTC 12.4, its headers and ptxas 12.4, from NVIDIA's PyPI wheels."""

    def __init__(self, root: Path):
        self.root = root
        self.lib = ctypes.CDLL(str(root / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"))
        self.includes = [root / "cuda_runtime" / "include", root / "cuda_nvcc" / "include"]
        self.ptxas = str(root / "cuda_nvcc" / "bin" / "ptxas")
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"{major.value}.{minor.value}"
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    @staticmethod
    def find(explicit: str | None) -> Cuda12 | None:
        candidates: list[Path] = []
        if explicit:
            candidates.append(Path(explicit))
        if os.environ.get("HYPA_CU12"):
            candidates.append(Path(os.environ["HYPA_CU12"]))
        try:
            import nvidia.cuda_nvrtc  # type: ignore[import-not-found]

            candidates.append(Path(list(nvidia.cuda_nvrtc.__path__)[0]).parent)
        except ImportError:
            pass
        for c in candidates:
            if (c / "cuda_nvrtc" / "lib" / "libnvrtc.so.12").exists():
                return Cuda12(c)
        return None

    def compile(self, source: str, name: str, arch: str) -> str:
        lib = self.lib
        prog = ctypes.c_void_p()
        check = self._check
        check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None), prog)
        opts = [f"--gpu-architecture={arch.replace('sm_', 'compute_')}", "-default-device"]
        opts += [f"-I{d}" for d in self.includes]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if rc != 0:
            sys.exit(f"NVRTC {self.version} failed on {name} for {arch}:\n{log.value.decode()}")
        check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), prog)
        buf = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(prog, buf), prog)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return buf.value.decode()

    def _check(self, rc: int, prog: ctypes.c_void_p) -> None:
        if rc != 0:
            sys.exit(f"NVRTC error: {self.lib.nvrtcGetErrorString(rc).decode()}")


def outputs(name: str, spec: dict[str, tuple[str, ...]]) -> list[tuple[str, str, str]]:
    """(tool, arch, variant) triples; variant is '' , 'lineinfo' or 'G'."""
    jobs = [("nvcc", a, "") for a in spec.get("nvcc", NVCC_ARCHS)]
    jobs += [("nvrtc", a, "") for a in spec.get("nvrtc", NVRTC_ARCHS)]
    jobs += [("nvcc", a, "lineinfo") for a in spec.get("lineinfo", ())]
    jobs += [("nvcc", a, "G") for a in spec.get("G", ())]
    return jobs


def file_name(name: str, arch: str, variant: str) -> str:
    return f"{name}.{arch}{'.' + variant if variant else ''}.ptx"


def build(name: str, tool: str, arch: str, variant: str, cu12: Cuda12 | None) -> str:
    src = STAGE / f"{name}.cu"
    if tool == "nvrtc":
        assert cu12 is not None
        return cu12.compile(src.read_text(), f"{name}.cu", arch)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.ptx"
        flags = {"": [], "lineinfo": ["-lineinfo"], "G": ["-G"]}[variant]
        run(["nvcc", "-ptx", "-O3", f"-arch={arch}", *flags, f"{name}.cu", "-o", str(out)], cwd=STAGE)
        return out.read_text()


def assemble(text: str, arch: str, cu12: Cuda12 | None) -> None:
    ptxas = cu12.ptxas if arch in NVRTC_ARCHS and cu12 else "ptxas"
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "k.ptx"
        f.write_text(text)
        run([ptxas, f"-arch={arch}", str(f), "-o", os.devnull])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="kernels to build (default: all)")
    ap.add_argument("--cu12", help="site-packages/nvidia folder holding the CUDA 12.4 wheels")
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = ap.parse_args()

    names = args.names or list(KERNELS)
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        sys.exit(f"unknown kernel(s): {', '.join(unknown)}")
    if not shutil.which("nvcc"):
        sys.exit("nvcc not found on PATH (CUDA 13 is expected)")
    cu12 = Cuda12.find(args.cu12)
    if cu12 is None:
        sys.exit("NVRTC 12 not found: pip install nvidia-cuda-nvrtc-cu12==12.4.127 "
                 "nvidia-cuda-runtime-cu12==12.4.127 nvidia-cuda-nvcc-cu12==12.4.131, or pass --cu12")
    print(f"nvcc: {tool_version('nvcc')}\nptxas: {tool_version('ptxas')}")
    print(f"NVRTC {cu12.version} ({cu12.root}); ptxas 12: {tool_version(cu12.ptxas)}")

    if STAGE.exists():
        shutil.rmtree(STAGE)
    STAGE.mkdir(parents=True)
    for cu in HERE.glob("*.cu"):
        shutil.copy(cu, STAGE / cu.name)
    OUT.mkdir(exist_ok=True)

    committed, expected = Committed(args.check), set()
    build_cache: dict[str, str] = {}
    for name in names:
        for tool, arch, variant in outputs(name, KERNELS[name]):
            fname = file_name(name, arch, variant)
            expected.add(fname)
            text = build(name, tool, arch, variant, cu12)
            assemble(text, arch, cu12)
            build_cache[fname] = text
            changed = committed.write(OUT / fname, text)
            print(f"  {fname:45s} {len(text):8d} bytes  {tool}{' (changed)' if changed else ''}")
    for name in EXAMPLES:
        if name in names and name not in KEEP_EXAMPLE_PTX:
            dest = EXAMPLES_DIR / f"{name}.ptx"
            committed.write(dest, build_cache[file_name(name, EXAMPLE_ARCH, "")], f"examples/{dest.name}")
    if not args.names:
        committed.remove_stale(OUT, expected)
    shutil.rmtree(STAGE)
    total = sum(p.stat().st_size for p in OUT.rglob("*.ptx"))
    print(f"{len(expected)} files, {total / 1e6:.2f} MB of PTX under {OUT.relative_to(HERE.parent.parent)}")
    committed.exit_if_out_of_date()


if __name__ == "__main__":
    main()
