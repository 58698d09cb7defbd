"""``python3 without_nvjitlink.py SCRIPT ARGS...``: run a Numba-CUDA script as `hypa run` runs
it -- its kernels' PTX linked by the driver (``cuLink*``) -- on a machine where nvJitLink is
installed, where Numba-CUDA would otherwise compile to LTO-IR and link it with nvJitLink into
machine code.  cuda-pathfinder, which cuda-bindings asks for the library, is made to answer
that libnvJitLink is not there, so Numba-CUDA and cuda.core take the driver's linker, as they
do where nvidia-nvjitlink is not installed; stderr says which linker Numba-CUDA saw."""

import os
import runpy
import sys

import cuda.pathfinder

_load = cuda.pathfinder.load_nvidia_dynamic_lib
refused = []


def _without_nvjitlink(libname: str, *args, **kwargs):
    if libname == "nvJitLink":
        refused.append(libname)
        raise cuda.pathfinder.DynamicLibNotFoundError("libnvJitLink hidden by without_nvjitlink.py")
    return _load(libname, *args, **kwargs)


cuda.pathfinder.load_nvidia_dynamic_lib = _without_nvjitlink
try:  # where cuda-bindings may import it from
    from cuda.pathfinder._dynamic_libs import load_nvidia_dynamic_lib as _module

    _module.load_nvidia_dynamic_lib = _without_nvjitlink
except ImportError:
    pass
script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python3 SCRIPT` has it (not this folder's coverage.py)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    from numba.cuda.cudadrv import driver

    print(f"without_nvjitlink.py: nvJitLink refused {len(refused)} times; Numba-CUDA sees nvJitLink: "
          f"{driver._have_nvjitlink()}", file=sys.stderr)
