"""Compile generated LLVM IR to native code (llvmlite MCJIT), with a disk cache.

Compiled emulators are cached as object files keyed by the program key (a
hash of the prepared kernel, mode and options), the LLVM version and the host
CPU, so repeated launches of the same kernel pay no compile cost, in this
process or the next.  ``HYPA_CACHE_DIR`` moves the cache; ``HYPA_NO_CACHE=1``
disables it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

_init_lock = threading.Lock()
_initialized = False
_engines: dict[str, "Compiled"] = {}


def _init() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


def target_machine() -> llvm.TargetMachine:
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3, jit=True
    )


def cache_dir() -> str | None:
    if os.environ.get("HYPA_NO_CACHE"):
        return None
    d = os.environ.get("HYPA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "hypa")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return None
    return d


RUN_CTAS = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


@dataclass
class Compiled:
    engine: object
    run_ctas: object
    compile_seconds: float
    from_cache: bool


def _full_key(key: str) -> str:
    h = hashlib.sha256()
    h.update(key.encode())
    h.update(repr(llvm.llvm_version_info).encode())
    h.update(llvm.get_host_cpu_name().encode())
    h.update(llvm.get_host_cpu_features().flatten().encode())
    h.update(_sources_digest().encode())
    return h.hexdigest()[:40]


_SOURCES: str | None = None


def _sources_digest() -> str:
    """A hash of the code generator and semantics sources: editing them invalidates the cache."""
    global _SOURCES
    if _SOURCES is None:
        import glob

        here = os.path.dirname(__file__)
        h = hashlib.sha256()
        for path in sorted([os.path.join(here, n) for n in ("codegen.py", "program.py", "abi.py")]
                           + glob.glob(os.path.join(here, "semantics", "*.py"))):
            with open(path, "rb") as f:
                h.update(f.read())
        _SOURCES = h.hexdigest()
    return _SOURCES


def compile_ir(key: str, build_ir) -> Compiled:
    """Native ``run_ctas`` for the program ``key``; ``build_ir()`` gives its IR text
    (called only when neither the in-process nor the disk cache has it)."""
    import time

    _init()
    fkey = _full_key(key)
    hit = _engines.get(fkey)
    if hit is not None:  # compiled earlier in this process: no time spent now
        return Compiled(hit.engine, hit.run_ctas, 0.0, True)
    t0 = time.perf_counter()
    tm = target_machine()
    d = cache_dir()
    path = os.path.join(d, fkey + ".o") if d else None
    obj = None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            obj = f.read()
    from_cache = obj is not None
    if obj is None:
        text = build_ir()
        mod = llvm.parse_assembly(text)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        obj = tm.emit_object(mod)
        if path:
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(obj)
            os.replace(tmp, path)
    empty = llvm.parse_assembly("")
    engine = llvm.create_mcjit_compiler(empty, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    addr = engine.get_function_address("run_ctas")
    if not addr:
        raise RuntimeError("compiled emulator has no run_ctas")
    c = Compiled(engine, RUN_CTAS(addr), time.perf_counter() - t0, from_cache)
    _engines[fkey] = c
    return c
