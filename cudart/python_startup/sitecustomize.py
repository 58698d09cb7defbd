"""Run by the program's Python at start-up under ``hypa run`` (which puts this folder first
on PYTHONPATH): sends the CUDA static runtime of extension modules loaded later to hypa's
libcudart (``hypa.cudart.static_runtime``), then runs the ``sitecustomize`` this one hides."""

import os
import sys


def _hypa_startup() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for p in os.environ.get("HYPA_SYS_PATH", "").split(os.pathsep):
        if p and p not in sys.path:
            sys.path.append(p)
    try:
        from hypa.cudart import static_runtime

        static_runtime.install(os.environ["HYPA_CUDART_SONAME"])
    except (ImportError, OSError, KeyError) as e:  # the program runs on; CuPy then fails at its first call
        print(f"hypa run: cannot send CUDA's static runtime in Python extension modules to hypa's "
              f"({type(e).__name__}: {e}); CuPy will not run", file=sys.stderr)
    # the program's sys.path as it would have been, and its own sitecustomize, if any
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    spec = PathFinder.find_spec("sitecustomize", sys.path)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(module_from_spec(spec))


_hypa_startup()
