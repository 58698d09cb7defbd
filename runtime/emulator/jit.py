"""Compile generated LLVM IR to native code (llvmlite MCJIT), with a disk cache.

Compiled emulators are cached as object files keyed by the program key (a
hash of the kernel's input, mode and options), the optimisation tier, the LLVM
version, the host CPU and the sources that transform and lower the kernel, so
repeated launches of the same kernel pay no compile cost, in this process or
the next.  Two tiers, as in a tiered JIT: ``baseline`` (no LLVM passes, fast
instruction selection) for launches that run briefly, which is most launches of
a whole workload, and ``optimized`` (LLVM's O3) for those that run long enough
to repay it; ``Emulator.run`` decides from the time of the first CTA.  The helper
functions kernels call are compiled once, into entries of their own.
``HYPA_CACHE_DIR`` moves the cache; ``HYPA_NO_CACHE=1`` disables it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

from . import cache_files

_init_lock = threading.Lock()
_engine_lock = threading.RLock()
_initialized = False
_engines: dict[str, "Compiled"] = {}


def _init() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


_machines: dict[int, llvm.TargetMachine] = {}


def new_target_machine(opt: int = 3) -> llvm.TargetMachine:
    """A new target machine for the host (an execution engine takes ownership of its own)."""
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=opt, jit=True
    )


def target_machine(opt: int = 3) -> llvm.TargetMachine:
    """The host's target machine at code generator level ``opt``, shared for emitting objects."""
    tm = _machines.get(opt)
    if tm is None:
        tm = _machines[opt] = new_target_machine(opt)
    return tm


def cache_dir() -> str | None:
    if os.environ.get("HYPA_NO_CACHE"):
        return None
    d = os.environ.get("HYPA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "hypa")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:  # one warning; kernels are compiled in memory
        _warn_once(f"hypa: warning: cannot write the compile cache ({d}: {e.strerror or e}); "
                   f"kernels will be compiled again next time")
        return None
    return d


RUN_CTAS = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

#: optimisation tiers: (LLVM pass pipeline speed level, code generator opt level).
#: "baseline" compiles about 16 times faster than "optimized" and runs within 1.25x of it
#: (benchmarks/compile.py): most kernels of a whole workload run for milliseconds, so
#: compile time is what they cost.
#: The optimized tier's code generator runs at level 0: after LLVM's -O3 passes, x86 code
#: generation at level 1 or more miscompiles atanf's range reduction (a copysign and a select
#: on <32 x float>, tests/unit/data/atan_select.ptx: 9,998 of 9,999 results wrong, LLVM 20 of
#: llvmlite 0.50); level 0 gives the baseline's results, compiles 25% faster and runs as fast
#: (the bundled launches: 0.060 s vs 0.059-0.069 s).
#: "scalar" is for the cache model's replay loop (runtime/models/cache_replay.py: integer code,
#: tested against its Python reference), which level 2 runs 1.5x faster than level 0.
TIERS = {"baseline": (0, 0), "optimized": (3, 0), "scalar": (3, 2)}
#: the tiers kernels are compiled at
KERNEL_TIERS = ("baseline", "optimized")
#: how much longer an optimized compile takes than the LLVM part of a baseline one of the same
#: kernel (the baseline calls its memory accesses' helpers, the optimized tier builds them
#: inline: measured 4 to 55 times, median 16, over 13 kernels: PolyBench's bicg, XLA
#: fusions, the test kernels, benchmarks/compile.py's)
OPTIMIZED_COMPILE_FACTOR = 16.0
#: how much faster optimized code runs than baseline code, as the tier policy assumes
#: (measured 1.0 to 1.2 in full and slice mode: bicg, an FMA loop, a load loop)
OPTIMIZED_SPEEDUP = 1.25


def jit_policy() -> str:
    """``auto`` (baseline first, optimized when the launch runs long enough to repay it),
    ``baseline`` or ``optimized``: from ``HYPA_JIT`` (default ``auto``)."""
    v = os.environ.get("HYPA_JIT", "auto")
    if v not in ("auto", *KERNEL_TIERS):
        raise ValueError(f"HYPA_JIT must be auto, baseline or optimized, not {v!r}")
    return v


@dataclass
class Compiled:
    engine: object
    run_ctas: object
    compile_seconds: float
    from_cache: bool
    tier: str = "optimized"
    #: seconds LLVM spent (parse, passes, object emission), without building the IR text
    llvm_seconds: float = 0.0


_HOST: str | None = None


def _host() -> str:
    """LLVM's version and the host CPU with its features (asked once per process)."""
    global _HOST
    if _HOST is None:
        _HOST = "|".join((repr(llvm.llvm_version_info), llvm.get_host_cpu_name(),
                          llvm.get_host_cpu_features().flatten()))
    return _HOST


def _full_key(key: str, tier: str) -> str:
    h = hashlib.sha256()
    h.update(key.encode())
    h.update(repr(TIERS[tier]).encode())
    h.update(_host().encode())
    h.update(sources_digest().encode())
    h.update(_MAGIC)
    return h.hexdigest()[:40]


_SOURCES: str | None = None


def source_files() -> list[str]:
    """The sources whose code transforms a kernel on its way to native code: the dialect
    (its ISA table), the passes, the preparation and every module of
    ``runtime/emulator/lowering/`` (its rules included)."""
    import glob

    here = os.path.dirname(__file__)
    runtime = os.path.dirname(here)
    root = os.path.dirname(runtime)
    return sorted([os.path.join(here, "program.py"), os.path.join(here, "mufu.py"), os.path.join(runtime, "abi.py")]
                  + glob.glob(os.path.join(here, "lowering", "**", "*.py"), recursive=True)
                  + glob.glob(os.path.join(root, "passes", "*.py"))
                  + glob.glob(os.path.join(root, "ptxdialect", "*.py")))


def sources_digest() -> str:
    """A hash of ``source_files()``: program keys hash the kernel's input, so editing any
    code that transforms it invalidates the cache."""
    global _SOURCES
    if _SOURCES is None:
        h = hashlib.sha256()
        for path in source_files():
            with open(path, "rb") as f:
                h.update(f.read())
        _SOURCES = h.hexdigest()
    return _SOURCES


def cached(key: str, tier: str, what: str = "kernels") -> Compiled | None:
    """The program compiled at ``tier``, from this process or the disk cache, else None
    (``what``: the work counter it counts under, runtime/emulator/phases.py)."""
    _init()
    fkey = _full_key(key, tier)
    hit = _engines.get(fkey)
    if hit is not None:  # compiled earlier in this process: no time spent now
        return Compiled(hit.engine, hit.run_ctas, 0.0, True, tier, hit.llvm_seconds)
    d = cache_dir()
    if not d:
        return None
    import time

    t0 = time.perf_counter()
    entry = _read_entry(os.path.join(d, fkey + ".o"), fkey, _entry_name(fkey))
    if entry is None or not _load_helpers(entry[1]):
        return None
    from .phases import count

    count(f"compiled {what} loaded from the cache ({tier})")
    c = _load(fkey, entry[0], tier, time.perf_counter() - t0, True)
    c.llvm_seconds = entry[2]
    return c


def in_cache(key: str, tier: str) -> bool:
    """Whether the program is compiled at ``tier`` in this process or on disk (not loaded)."""
    fkey = _full_key(key, tier)
    if fkey in _engines:
        return True
    d = cache_dir()
    return bool(d) and os.path.exists(os.path.join(d, fkey + ".o"))


def compile_workers() -> int:
    """Processes that compile a batch's kernels side by side (``precompile``): the cores this
    process may use, or ``HYPA_COMPILE_JOBS``."""
    v = os.environ.get("HYPA_COMPILE_JOBS")
    if v:
        try:
            return max(1, int(v))
        except ValueError:
            raise ValueError(f"HYPA_COMPILE_JOBS must be a number of processes, not {v!r}") from None
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        import sys

        _warned.add(message)
        print(message, file=sys.stderr)


#: a cache entry: this magic, the SHA-256 of its key and the rest (an entry copied over
#: another's is damaged), the length of the header (4 bytes, little-endian), the header
#: (``name key`` lines: the helper functions the object calls, in the order they load;
#: ``#seconds S``: what LLVM spent compiling it, for the tier policy), the object file
_MAGIC = b"HYPAOBJ3"


def _digest(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def _seal(key: str, obj: bytes, manifest: list[tuple[str, str]] = (), seconds: float = 0.0) -> bytes:
    m = (f"#seconds {seconds:.6f}\n" + "".join(f"{name} {key}\n" for name, key in manifest)).encode()
    payload = len(m).to_bytes(4, "little") + m + obj
    return _MAGIC + _digest(key, payload) + payload


def _unseal(key: str, data: bytes) -> tuple[bytes, list[tuple[str, str]], float] | None:
    """The object file of the cache entry of ``key``, its helper manifest and compile
    seconds, or None where the entry is damaged, another key's or from another version."""
    head = len(_MAGIC) + 32
    if len(data) <= head + 4 or not data.startswith(_MAGIC):
        return None
    payload = data[head:]
    if _digest(key, payload) != data[len(_MAGIC):head]:
        return None
    n = int.from_bytes(payload[:4], "little")
    try:
        lines = payload[4:4 + n].decode().splitlines()
        seconds = float(lines[0].split()[1]) if lines and lines[0].startswith("#seconds ") else 0.0
    except (UnicodeDecodeError, ValueError, IndexError):
        return None
    manifest = [tuple(line.split(" ", 1)) for line in lines if not line.startswith("#")]
    if any(len(m) != 2 for m in manifest):
        return None
    return payload[4 + n:], manifest, seconds  # type: ignore[return-value]


# -- helper functions ---------------------------------------------------------------------
# Kernels call helper functions (runtime/emulator/lowering/irbuild.py: the bounds-checked accesses,
# the scheduler ...) that are the same for every kernel: each is compiled once (per machine:
# the disk cache) at HELPER_TIER, loaded into the engine once per process, and kernels
# compiled at the baseline tier link against it.  The optimized tier links the helpers its
# lowering still calls into the kernel's module instead (LLVM inlines the small ones).

#: the tier helper functions are compiled at
HELPER_TIER = "baseline"
#: the helpers loaded into the engine (key -> name), and their objects (key -> bytes)
_helpers: dict[str, str] = {}
_helper_objects: dict[str, bytes] = {}


def _helper_key(text: str, deps: list[str]) -> str:
    """A helper's key: its text and the keys of the helpers it calls (their symbols)."""
    h = hashlib.sha256()
    h.update(text.encode())
    h.update(repr(TIERS[HELPER_TIER]).encode())
    h.update(_host().encode())
    h.update(_MAGIC)
    for d in deps:
        h.update(d.encode())
    return "h" + h.hexdigest()[:40]


def _symbol(name: str, key: str) -> str:
    """The symbol a helper is exported as: its name and key.  MCJIT resolves a name to any
    object's symbol of that name, internal ones included, and the optimized tier's objects
    hold internal copies of the helpers under their own names."""
    return f"{name}.{key}"


def _export_names(mod, keys: dict[str, str]) -> None:
    """Refer to (or define) the helpers of ``keys`` (name -> key) by their symbols."""
    for f in list(mod.functions):
        key = keys.get(f.name)
        if key is not None:
            f.name = _symbol(f.name, key)


#: ELF's e_machine of the hosts LLVM emits objects for here
_ELF_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21, "riscv64": 243}


def _object_problem(obj: bytes, symbol: str) -> str | None:
    """Why ``obj`` is not an object file LLVM can safely link here defining ``symbol``
    (None: it is).  A sealed entry of garbage would crash the linker, not fail."""
    import platform
    import struct
    import sys

    if sys.platform.startswith("linux"):
        if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != (1 if sys.byteorder == "little" else 2):
            return "not an object file of this machine"
        e_type, e_machine = struct.unpack_from("=HH", obj, 16)
        shoff, = struct.unpack_from("=Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("=HH", obj, 0x3A)
        machine = _ELF_MACHINES.get(platform.machine().lower())
        if e_type != 1 or (machine is not None and e_machine != machine):
            return "not an object file of this machine"
        if shentsize != 64 or shoff + shnum * shentsize > len(obj):
            return "a damaged object file"
    if symbol.encode() not in obj:
        return f"its object file does not define {symbol}"
    return None


_unremovable: set[str] = set()


def _damaged(path: str, why: str, then: str = "compiling again") -> None:
    """Say so and remove it: a damaged entry costs one warning, then it is rebuilt (one that
    cannot be removed, in a read-only cache, is said once per process)."""
    if path in _unremovable:
        return
    import sys

    print(f"hypa: warning: damaged entry in the compile cache ({path}: {why}): {then}", file=sys.stderr)
    if not cache_files.remove(path):
        _unremovable.add(path)


def _read_entry(path: str, key: str, symbol: str):
    """(object, manifest, seconds) of the cache entry of ``key`` at ``path``, whose object
    must define ``symbol``; None if it is missing or damaged (a damaged one is removed)."""
    data, why = cache_files.read_regular(path)
    if data is None:
        if why is not None:
            _damaged(path, why)
        return None
    entry = _unseal(key, data)
    if entry is None:  # truncated, corrupted, another entry's or not ours
        _damaged(path, "its seal does not match its contents and key")
        return None
    why = _object_problem(entry[0], symbol)
    if why is not None:  # loading it could crash LLVM: compile again
        _damaged(path, why)
        return None
    return entry


_unwritable: set[str] = set()


def _write_entry(key: str, data: bytes, suffix: str = ".o") -> None:
    d = cache_dir()
    if not d or d in _unwritable:
        return
    try:
        cache_files.write_atomic(os.path.join(d, key + suffix), data)
    except OSError as e:  # full, read-only: one warning, and the cache is left alone from now on
        _unwritable.add(d)
        _warn_once(f"hypa: warning: cannot write the compile cache ({d}: {e.strerror or e}); "
                   f"kernels will be compiled again next time")


def read_record(name: str, magic: bytes) -> bytes | None:
    """The payload of the cache's record ``name`` (``write_record``), or None where it is
    missing, damaged or of another format (a damaged one is removed, never trusted)."""
    d = cache_dir()
    if not d:
        return None
    path = os.path.join(d, name + ".rec")
    data, why = cache_files.read_regular(path)
    if data is None:
        if why is not None:
            _damaged(path, why, "preparing again")
        return None
    head = len(magic) + 32
    payload = data[head:]
    if data.startswith(magic) and _digest(name, payload) == data[len(magic):head]:
        return payload
    _damaged(path, "its seal does not match its contents and name", "preparing again")
    return None


def write_record(name: str, magic: bytes, payload: bytes) -> None:
    """Store ``payload`` in the cache as record ``name``: ``magic``, the SHA-256 of the
    name and the payload, the payload (``read_record`` checks all three)."""
    _write_entry(name, magic + _digest(name, payload) + payload, ".rec")


def _load_helpers(manifest: list[tuple[str, str]]) -> bool:
    """Load the helpers a cached object calls (in order) from the disk cache; False if one
    is missing (then the object is compiled again)."""
    d = cache_dir()
    for name, key in manifest:
        if _helpers.get(key) is not None:
            continue
        if not d:
            return False
        entry = _read_entry(os.path.join(d, key + ".o"), key, _symbol(name, key))
        if entry is None:
            return False
        _load_object(entry[0])
        _helpers[key] = name
        _helper_objects[key] = entry[0]
    return True


def _ensure_helpers(helpers) -> list[tuple[str, str]]:
    """Load (or compile) each helper (name, IR text, the helpers it calls), those it calls
    first; the manifest: (name, key) of each."""
    from .phases import count

    keys: dict[str, str] = {}
    manifest = []
    for name, text, deps in helpers:
        key = keys[name] = _helper_key(text, [keys[d] for d in deps])
        manifest.append((name, key))
        if _helpers.get(key) is not None:
            d = cache_dir()
            if d and not os.path.exists(os.path.join(d, key + ".o")):  # loaded from another cache
                _write_entry(key, _seal(key, _helper_objects[key]))
            continue
        if not _load_helpers([(name, key)]):
            speed, cg = TIERS[HELPER_TIER]
            mod = llvm.parse_assembly(text)
            _export_names(mod, keys)
            mod.verify()
            obj = target_machine(cg).emit_object(mod)
            _write_entry(key, _seal(key, obj))
            _load_object(obj)
            _helpers[key] = name
            _helper_objects[key] = obj
            count(f"helper functions compiled ({HELPER_TIER})")
    return manifest


def compile_ir(key: str, build_ir, tier: str = "optimized", what: str = "kernels") -> Compiled:
    """Native ``run_ctas`` for the program ``key`` at ``tier``; ``build_ir()`` gives its IR
    text (called only when neither the in-process nor the disk cache has it).  ``what`` names
    the work counted (kernels, or the cache model's replay loop)."""
    import time

    hit = cached(key, tier, what)
    if hit is not None:
        return hit
    t0 = time.perf_counter()
    lowered = build_ir() if callable(build_ir) else build_ir
    text, helpers = (lowered, []) if isinstance(lowered, str) else (lowered.text, lowered.helpers)
    t1 = time.perf_counter()
    speed, cg = TIERS[tier]
    tm = target_machine(cg)
    fkey = _full_key(key, tier)
    mod = llvm.parse_assembly(text)
    manifest: list[tuple[str, str]] = []
    if speed:  # the helpers' IR linked in: LLVM inlines them
        for _name, htext, _deps in helpers:
            mod.link_in(llvm.parse_assembly(htext))
    else:
        th = time.perf_counter()
        manifest = _ensure_helpers(helpers)
        t1 += time.perf_counter() - th  # the helpers' compile is not this kernel's
        _export_names(mod, dict(manifest))
    mod.verify()
    # every compiled program lives in one execution engine (``_engine``): its entry gets a
    # name of its own, and everything else it defines stays private to its object
    for f in mod.functions:
        if not f.is_declaration:
            if f.name == "run_ctas":
                f.name = _entry_name(fkey)
            else:
                f.linkage = "internal"
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = "internal"
    if speed:
        pto = llvm.create_pipeline_tuning_options(speed_level=speed)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    obj = tm.emit_object(mod)
    llvm_seconds = time.perf_counter() - t1
    _write_entry(fkey, _seal(fkey, obj, manifest, llvm_seconds))
    c = _load(fkey, obj, tier, time.perf_counter() - t0, False)
    c.llvm_seconds = llvm_seconds
    from .phases import count

    count(f"{what} compiled ({tier})")
    return c


def _entry_name(fkey: str) -> str:
    return f"run_ctas_{fkey}"


_engine = None  # the process's execution engine, holding every loaded program


def _load_object(obj: bytes) -> None:
    """Link an object file into the process's engine (made on first use)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine(0))
        _engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        _engine.finalize_object()


def load_private(text: str, name: str) -> int:
    """Compile a small module made for this process alone (never cached: it may hold this
    process's addresses, as the signal handler of ``interrupt.py`` does) into the engine;
    the address of its function ``name``."""
    mod = llvm.parse_assembly(text)
    mod.verify()
    obj = target_machine(0).emit_object(mod)
    with _engine_lock:
        _load_object(obj)
        return _engine.get_function_address(name)


def _load(fkey: str, obj: bytes, tier: str, seconds: float, from_cache: bool) -> Compiled:
    """Link a compiled object into the process's engine.  One engine for all programs:
    making an engine (and the target machine it owns) costs more than linking the object,
    and a workload loads hundreds of kernels."""
    import time

    t0 = time.perf_counter()
    with _engine_lock:
        _load_object(obj)
        addr = _engine.get_function_address(_entry_name(fkey))
    if not addr:
        raise RuntimeError("compiled emulator has no entry function")
    c = Compiled(_engine, RUN_CTAS(addr), seconds + time.perf_counter() - t0, from_cache, tier)
    _engines[fkey] = c
    return c
