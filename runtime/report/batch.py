"""Batch profiling: many inputs, many launches, one record per launch.

``run_profile`` is what ``hypa profile`` and ``hypa report`` do:

1. expand the inputs (files, directories, globs) and turn each into PTX
   (``runtime/report/inputs.py``);
2. read the launches (TOML files; a directory's ``launches.toml``) and match
   each to the kernels it names (a launch with ``file`` runs on that file, one
   without on every given file that defines its kernel);
3. give every launch a key -- the kernel's PTX hash, the options, grid, block,
   dynamic shared memory, scalar arguments, buffer sizes and aliasing, and the
   contents of the buffers the emulated code can read -- so identical launches
   are analysed once and the rest reuse the result (NVBit's sampling by unique
   grid, made exact);
4. run the unique launches with an executor (``runtime/emulator/executor.py``): here, on a
   local pool of forked processes, or on a Dask cluster, optionally cut into CTA
   ranges whose counters are added up (``Emulator.merge``), and put the results
   back in launch order.

Kernels that no launch names are counted statically.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hypa.ptxdialect.diagnostics import HypaError

from ..emulator.emulator import Emulator, LaunchResult
from ..emulator.options import EmulationOptions
from ..emulator.executor import DaskCluster, Executor, Forked, InProcess, TaskFailed
from .inputs import InputError, InputOptions, Source, expand_inputs, load_sources
from ..emulator.launch import BufferSpec, Launch, LaunchError, launches_from_toml
from ..emulator.phases import phase


@dataclass
class ProfileOptions:
    #: how each launch is emulated (runtime/emulator/options.py)
    emulation: EmulationOptions = field(default_factory=EmulationOptions)
    jobs: int = 1
    per_cta: bool = False
    scheduler: str | None = None
    cta_chunk: int = 0  # cut launches with more CTAs into ranges of this many (pool/Dask)
    dedup: bool = True
    kernel: str | None = None  # only kernels of this name
    fail_fast: bool = False
    estimate_time: str | None = None  # arch name or .toml: attach a timing estimate to each result
    #: keep each launch's buffers after it ran (``LaunchResult.buffers``; in this process only):
    #: off, a batch's memory is one launch's, not the sum of all of them
    keep_buffers: bool = False
    inputs: InputOptions = field(default_factory=InputOptions)

    def emulation_options(self) -> EmulationOptions:
        """``emulation``, with the address trace the timing estimate's cache model reads when
        there is one."""
        if not self.estimate_time:
            return self.emulation
        return estimation_options(self.emulation)


@dataclass
class LaunchRecord:
    """One launch of one kernel: its result, or the launch it reuses, or an error."""

    index: int
    source: Source
    launch: Launch
    kernel: str | None = None
    result: LaunchResult | None = None
    reused_from: int | None = None
    error: str | None = None
    key: str | None = None


@dataclass
class StaticRecord:
    source: Source
    kernel: str
    static_instructions: int
    blocks: int


@dataclass
class Profile:
    records: list[LaunchRecord]
    static: list[StaticRecord]
    sources: list[Source]
    wall_s: float
    where: str
    launch_files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> list[LaunchRecord]:
        return [r for r in self.records if r.result is not None]

    @property
    def errors(self) -> list[LaunchRecord]:
        return [r for r in self.records if r.error is not None]

    @property
    def reused(self) -> int:
        return sum(1 for r in self.records if r.reused_from is not None and r.result is not None)

    @property
    def analysed(self) -> int:
        return sum(1 for r in self.records if r.reused_from is None and r.result is not None)


# -- the catalogue of inputs: sources, modules, emulators ----------------------------------


class Catalog:
    """Sources per input file, parsed modules and emulators per source (each made once)."""

    def __init__(self, opts: ProfileOptions):
        self.opts = opts
        self._sources: dict[str, list[Source]] = {}
        self._modules: dict[str, Any] = {}
        self._emulators: dict[str, Emulator] = {}
        self._kernels: dict[str, list[str]] = {}
        self._kernel_sets: dict[str, set[str]] = {}

    def sources(self, path: str) -> list[Source]:
        path = os.path.abspath(path)
        if path not in self._sources:
            with phase("input"):
                self._sources[path] = load_sources(path, self.opts.inputs)
        return self._sources[path]

    def module(self, src: Source):
        m = self._modules.get(src.label)
        if m is None:
            from hypa.ptxdialect import parse_ptx

            with phase("parse"):
                m = self._modules[src.label] = parse_ptx(src.ptx, src.path if src.member is None else src.label)
        return m

    def kernels(self, src: Source) -> list[str]:
        names = self._kernels.get(src.label)
        if names is None:
            from ..emulator.program import module_kernels

            names = self._kernels[src.label] = [k.func_name for k in module_kernels(self.module(src))]
        return names

    def kernel_set(self, src: Source) -> set[str]:
        s = self._kernel_sets.get(src.label)
        if s is None:
            s = self._kernel_sets[src.label] = set(self.kernels(src))
        return s

    def emulator(self, src: Source) -> Emulator:
        e = self._emulators.get(src.label)
        if e is None:
            e = self._emulators[src.label] = Emulator(self.module(src), options=self.opts.emulation_options())
        return e


def kernel_matches(mangled: str, name: str) -> bool:
    from ..emulator.demangle import demangle

    d = demangle(mangled)
    return name in (mangled, d, d.split("(")[0])


# -- launch keys ---------------------------------------------------------------------------------


_SOURCE_HASHES: dict[int, tuple[str, str]] = {}


def source_hash(src: Source) -> str:
    """The hash of a source's PTX (computed once per text: a module's launches share it)."""
    hit = _SOURCE_HASHES.get(id(src.ptx))
    if hit is not None and hit[0] is src.ptx:
        return hit[1]
    h = hashlib.sha256(src.ptx.encode("utf-8", errors="replace")).hexdigest()
    _SOURCE_HASHES[id(src.ptx)] = (src.ptx, h)
    return h


def _hash_array(h, arr: np.ndarray) -> None:
    a = np.ascontiguousarray(arr)
    h.update(f"{a.dtype.str}:{a.size}:".encode())
    h.update(memoryview(a).cast("B"))


def _describe(b: BufferSpec | np.ndarray) -> str:
    """A buffer's dtype and size, for a key."""
    return f"{(b.dtype if isinstance(b, np.ndarray) else b.np_dtype).str}:{b.nbytes}"


def _hash_contents(h, b: BufferSpec | np.ndarray) -> None:
    """A buffer's contents into a key: an array's bytes; a spec's description of them (a
    64 MiB buffer of zeros is keyed by those words, not by hashing its bytes)."""
    if isinstance(b, np.ndarray):
        _hash_array(h, b)
    else:
        h.update(("spec:" + b.identity()).encode())


def launch_key(src_hash: str, kernel: str, prog, launch: Launch, opts: ProfileOptions) -> str:
    """Equal keys mean equal results: same kernel code and options, grid, block,
    dynamic shared memory, scalar arguments, buffer sizes and aliasing, and the
    same contents in every buffer the emulated code may read."""
    buffers = launch.buffers
    h = hashlib.sha256()
    h.update(repr((src_hash, kernel, opts.emulation_options(), opts.per_cta,
                   launch.grid, launch.block, launch.shared_bytes)).encode())
    read = prog.read_parameters()
    params = [p[0] for p in prog.params]
    first_use: dict[Any, int] = {}
    for i, a in enumerate(launch.args):
        pname = params[i] if i < len(params) else None
        if isinstance(a, str) and a in launch.textures:
            _hash_texture(h, f"tex{i}", launch.textures[a], buffers)
            continue
        if isinstance(a, str) or isinstance(a, np.ndarray):
            if isinstance(a, str) and a not in buffers:
                raise LaunchError(f"argument '{a}' names no buffer")
            b = buffers[a] if isinstance(a, str) else a
            ident = a if isinstance(a, str) else id(a)
            h.update(f"|buf{i}:alias{first_use.setdefault(ident, i)}:{_describe(b)}".encode())
            if read is None or pname in read:
                _hash_contents(h, b)
        elif isinstance(a, (bytes, bytearray)):
            h.update(b"|bytes" + bytes(a))
        else:
            h.update(f"|{type(a).__name__}:{a!r}".encode())
    for var, t in sorted(launch.variables.items()):
        if isinstance(t, str) and t in launch.textures:  # a .texref/.surfref variable
            _hash_texture(h, f"var:{var}", launch.textures[t], buffers)
        elif isinstance(t, str) and t in buffers:  # a module variable's initial contents
            h.update(f"|var:{var}:{_describe(buffers[t])}".encode())
            _hash_contents(h, buffers[t])
        elif isinstance(t, np.ndarray):
            h.update(f"|var:{var}:{t.dtype.str}:{t.nbytes}".encode())
            _hash_array(h, t)
        else:
            h.update(f"|var:{var}:{type(t).__name__}:{t!r}".encode())
    return h.hexdigest()


def _hash_texture(h, where: str, t, buffers: dict) -> None:
    """A texture or surface object: its description and every byte of its buffer."""
    h.update(f"|{where}:{t.surface}:{t.offset}:{sorted(t.fields.items())!r}".encode())
    if t.buffer not in buffers:
        raise LaunchError(f"{'surface' if t.surface else 'texture'} '{t.name}': buffer '{t.buffer}' "
                          f"is not one of the launch's buffers")
    _hash_contents(h, buffers[t.buffer])


# -- progress -------------------------------------------------------------------------------------


class Progress:
    """tqdm's bar when tqdm is installed, else a one-line counter on stderr; silent
    unless enabled (by default: when stderr is a terminal)."""

    def __init__(self, total: int, desc: str, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = total > 1 and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.total = total
        self.n = 0
        self.desc = desc
        self._bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, desc=desc, unit="launch", file=self.stream, leave=False)
            except ImportError:
                self._bar = None

    def update(self, k: int = 1, what: str | None = None) -> None:
        self.n += k
        if not self.enabled:
            return
        if self._bar is not None:
            if what:
                self._bar.set_postfix_str(what[:40], refresh=False)
            self._bar.update(k)
        else:
            tail = f" {what[:40]}" if what else ""
            self.stream.write(f"\r{self.desc}: {self.n}/{self.total}{tail}\x1b[K")
            self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


# -- running ----------------------------------------------------------------------------------------


@dataclass
class Unit:
    """One piece of work: a unique launch, or a CTA range of one."""

    record: int
    ctas: tuple[int, int] | None


def run_profile(inputs: list[str], launch_files: list[str] | None, opts: ProfileOptions,
                progress: bool | None = None, log=None) -> Profile:
    t0 = time.perf_counter()
    log = log or (lambda msg: print(msg, file=sys.stderr))
    files, auto_tomls = expand_inputs(inputs)
    tomls = list(launch_files or [])
    if not tomls and auto_tomls:
        tomls = auto_tomls
        for t in auto_tomls:
            log(f"hypa: launches from {os.path.relpath(t)}")
    launches: list[Launch] = []
    for t in tomls:
        launches.extend(launches_from_toml(t))
    if not files and not any(L.file for L in launches):
        raise InputError("give PTX, CUDA or binary files (or directories), or a --launch TOML whose launches name their `file`")
    cat = Catalog(opts)
    given: list[Source] = []
    for f in files:
        given.extend(cat.sources(f))

    # match launches to kernels
    records: list[LaunchRecord] = []
    launched: set[tuple[str, str]] = set()
    for L in launches:
        targets = cat.sources(L.file) if L.file else given
        matched = False
        for src in targets:
            kernels = cat.kernels(src)
            if L.kernel is not None:
                names = ([L.kernel] if L.kernel in cat.kernel_set(src)
                         else [k for k in kernels if kernel_matches(k, L.kernel)])
            else:
                names = kernels[:1] if len(kernels) == 1 else []
                if not names and kernels:
                    raise LaunchError(f"{src.label} has {len(kernels)} kernels ({', '.join(kernels)}): "
                                      f"the launch must name one with kernel =")
            if not names:
                continue
            matched = True
            k = names[0]
            if opts.kernel is not None and not kernel_matches(k, opts.kernel):
                break
            launched.add((src.label, k))
            records.append(LaunchRecord(len(records), src, dataclasses.replace(L, kernel=k), k))
            if L.kernel is None or L.file:
                break
        if not matched:
            where = os.path.relpath(L.file) if L.file else "the given files"
            there = sorted({k for src in targets for k in cat.kernels(src)})
            listed = f" (kernels: {', '.join(there[:20])}{' ...' if len(there) > 20 else ''})" if there else ""
            raise LaunchError(f"no kernel '{L.kernel}' in {where}{listed}" if L.kernel else f"no kernel in {where}")

    static: list[StaticRecord] = []
    from hypa.ptxdialect.dialect import FuncOp

    for src in given:
        for op in cat.module(src).ops:
            if isinstance(op, FuncOp) and op.is_kernel and not op.is_declaration and (src.label, op.func_name) not in launched:
                if opts.kernel is not None and not kernel_matches(op.func_name, opts.kernel):
                    continue
                from hypa.passes.count import count_function

                c = count_function(op)
                static.append(StaticRecord(src, op.func_name, c.total.instructions, len(c.blocks)))

    if opts.kernel is not None and not records and not static:  # a filter that matches nothing is a mistake
        from hypa.runtime.emulator.demangle import demangle

        every = sorted({k for src in [*given, *(s for L in launches if L.file for s in cat.sources(L.file))]
                        for k in cat.kernels(src)})
        listed = ", ".join(f"{k} ({demangle(k)})" if demangle(k) != k else k for k in every[:20])
        raise LaunchError(f"--kernel {opts.kernel!r} matches no kernel" +
                          (f"; the kernels: {listed}" + (" ..." if len(every) > 20 else "") if every else ""))

    # prepare: materialize buffers once, key, deduplicate
    first_of: dict[str, int] = {}
    todo: list[int] = []
    for rec in records:
        try:
            emu = cat.emulator(rec.source)
            prog = emu.program_for(rec.launch)
            with phase("launches"):  # buffers are made when the launch runs, one launch at a time
                rec.key = launch_key(source_hash(rec.source), rec.kernel or "", prog, rec.launch, opts)
        except HypaError as e:
            rec.error = e.located()
            if opts.fail_fast:
                break
            continue
        if opts.dedup and rec.key in first_of:
            rec.reused_from = first_of[rec.key]
        else:
            first_of[rec.key] = rec.index
            todo.append(rec.index)

    if not opts.scheduler and (opts.jobs <= 1 or len(todo) < opts.jobs):  # else the workers compile
        from ..emulator.emulator import precompile
        from ..emulator.jit import compile_workers

        try:
            workers = compile_workers()
        except ValueError as e:
            raise LaunchError(str(e)) from None
        programs = []
        for i in todo:
            emu = cat.emulator(records[i].source)
            programs.append((emu, emu.program_for(records[i].launch)))
        precompile(programs, workers)

    units: list[Unit] = []
    split = opts.cta_chunk > 0 and (opts.scheduler or opts.jobs > 1)
    for i in todo:
        n = records[i].launch.num_ctas
        if split and n > opts.cta_chunk and not records[i].launch.cooperative:  # its CTAs wait for each other
            units.extend(Unit(i, (a, min(a + opts.cta_chunk, n))) for a in range(0, n, opts.cta_chunk))
        else:
            units.append(Unit(i, None))

    bar = Progress(len(units), "hypa", progress)
    try:
        with _executor(opts, len(units)) as ex:
            # the phases of forked workers are not seen here: their time shows as one phase
            with phase("workers") if isinstance(ex, Forked) else nullcontext():
                outcomes = run_units(ex, cat, records, units, opts, bar)
            where = ex.where + (f" ({opts.jobs} CTA workers per launch)" if ex.in_process and opts.jobs > 1 else "")
    finally:
        bar.close()

    # gather: merge CTA ranges, then fill in reused launches
    parts: dict[int, list[LaunchResult]] = {}
    for u, out in zip(units, outcomes):
        rec = records[u.record]
        if isinstance(out, (str, TaskFailed)):
            rec.error = rec.error or str(out)
        elif out is not None:
            parts.setdefault(u.record, []).append(out)
    for i, ps in parts.items():
        rec = records[i]
        if rec.error is not None:
            continue
        if len(ps) == 1 and ps[0].ctas is None:
            rec.result = ps[0]
        else:
            try:
                rec.result = cat.emulator(rec.source).merge(rec.launch, ps)
            except HypaError as e:
                rec.error = str(e)
    for rec in records:  # results from workers leave the prepared program behind: the per-line
        r = rec.result   # counts (source_lines) need it here, as a run in this process has it
        if r is not None and rec.error is None and r.program is None and rec.reused_from is None:
            try:
                r.program = cat.emulator(rec.source).program_for(rec.launch)
            except HypaError:
                pass
    if opts.estimate_time:
        with phase("estimate"):
            _attach_estimates(cat, records, opts.estimate_time, opts.emulation.memory_metrics)
    for rec in records:
        if rec.reused_from is not None:
            src = records[rec.reused_from]
            rec.result, rec.error = src.result, src.error
    return Profile(records, static, given, time.perf_counter() - t0, where, tomls)


def _attach_estimates(cat: Catalog, records: list[LaunchRecord], arch: str, memory_metrics: bool = False) -> None:
    """The timing model (runtime/models/timing.py) on each analysed launch not estimated yet (those
    merged from CTA ranges), here in the parent: it needs the prepared program, which
    results from workers leave behind."""
    for rec in records:
        if rec.result is None or rec.error is not None or rec.reused_from is not None:
            continue
        if not hasattr(rec.result, "time_estimate"):  # (None: tried, with a note saying why not)
            _estimate(cat, rec, rec.result, arch, memory_metrics)


def _estimate(cat: Catalog, rec: LaunchRecord, result: LaunchResult, arch: str, memory_metrics: bool) -> None:
    """Attach the estimate of ``result`` (``result.time_estimate``), or a note saying why there
    is none; the address trace it read is dropped."""
    try:
        emu = cat.emulator(rec.source)
        result.time_estimate = estimate_run(emu, rec.launch, result, arch)  # type: ignore[attr-defined]
        if not memory_metrics:  # the trace needed the memory slots; the report shows them only if asked
            result.metrics.memory = None
    except HypaError as e:
        result.time_estimate = None  # type: ignore[attr-defined]
        result.notes.append(f"no timing estimate: {e}")
    result.memory_trace = None


def estimation_options(options: EmulationOptions) -> EmulationOptions:
    """``options`` with what the timing estimate reads: the launch's address trace (the cache
    model's input; it also counts the memory instructions' sectors and wavefronts)."""
    from ..models.timing import TRACE_RECORDS

    if options.address_trace >= TRACE_RECORDS:
        return options
    return dataclasses.replace(options, address_trace=TRACE_RECORDS)


def estimate_run(emu: Emulator, launch: Launch, result: LaunchResult | None = None, arch=None,
                 registers: int | None = None):
    """The timing model's ``Estimate`` of ``launch`` on ``arch`` (default: the model's): the one
    estimate path, which ``hypa profile --estimate-time`` takes too.  Without ``result`` it runs
    the launch first, with the address trace the estimate reads (``estimation_options``: an
    emulator made without one gets a copy with one); the model reads a finished run, this layer
    runs it."""
    from ..models.timing import DEFAULT_ARCH, estimate

    if result is None:
        opts = estimation_options(emu.options)
        if opts is not emu.options:
            traced = Emulator(emu.module, options=opts)
            traced.host, traced.heap = emu.host, emu.heap
            emu = traced
        result = emu.run(launch)
    return estimate(result, launch, arch or DEFAULT_ARCH, registers, program=emu.program_for(launch))


def _executor(opts: ProfileOptions, n_units: int) -> Executor:
    """A Dask cluster with ``--scheduler``; a pool of ``-j`` forked processes when there are
    at least as many units as processes; else this process (where ``-j`` splits the CTAs of
    each launch instead)."""
    if opts.scheduler:
        return DaskCluster(opts.scheduler)
    if opts.jobs > 1 and n_units >= opts.jobs:
        return Forked(opts.jobs)
    return InProcess()


def run_units(ex: Executor, cat: Catalog, records: list[LaunchRecord], units: list[Unit], opts: ProfileOptions,
              bar: Progress) -> list:
    """Each unit's result (or error message) in unit order, run by ``ex``.  Here, a launch's
    CTAs may be split over ``-j`` workers and results keep their buffers; elsewhere results
    come back without them.  Forked workers inherit the programs prepared above (parsed and
    sliced once, here); on a cluster a task carries the kernel's PTX (sent once per source)
    instead of the emulator."""
    if ex.shares_memory:
        jobs, keep_memory = (opts.jobs, opts.keep_buffers) if ex.in_process else (1, False)
        tasks = [(cat.emulator(records[u.record].source), records[u.record].launch, u.ctas, opts.per_cta, jobs,
                  keep_memory) for u in units]
        fn = run_unit
    else:
        texts: dict[str, Any] = {}
        options = opts.emulation_options()
        tasks = []
        for u in units:
            src = records[u.record].source
            if src.label not in texts:
                texts[src.label] = ex.share(src.ptx)
            tasks.append((texts[src.label], src.label, options, records[u.record].launch, u.ctas, opts.per_cta))
        fn = run_unit_from_text
    stop = (lambda r: isinstance(r, str)) if opts.fail_fast else None

    def done(k: int, r) -> None:
        bar.update(1, records[units[k].record].kernel)
        if opts.estimate_time and isinstance(r, LaunchResult) and units[k].ctas is None:
            # estimated as it arrives: the estimate reads the launch's address trace, which is
            # then dropped (traces kept for every launch would grow with the launches)
            _estimate(cat, records[units[k].record], r, opts.estimate_time, opts.emulation.memory_metrics)

    return ex.map(fn, tasks, done=done, stop=stop)


def run_unit(emu: Emulator, launch: Launch, ctas, per_cta: bool, jobs: int = 1,
             keep_memory: bool = False) -> LaunchResult | str:
    """One unit of work: its result, or the message of the launch error that stopped it."""
    try:
        return emu.run(launch, jobs=jobs, per_cta=per_cta, ctas=ctas, keep_buffers=keep_memory)
    except HypaError as e:
        return e.located()


_EMULATORS: dict[tuple, Emulator] = {}


def run_unit_from_text(ptx: str, label: str, options: EmulationOptions, launch: Launch, ctas,
                       per_cta: bool) -> LaunchResult | str:
    """``run_unit`` on a cluster's worker: the emulator is made from the PTX text, once per
    worker process and kernel source."""
    key = (hashlib.sha256(ptx.encode("utf-8", errors="replace")).hexdigest(), label, options)
    emu = _EMULATORS.get(key)
    if emu is None:
        from hypa.ptxdialect import parse_ptx

        emu = _EMULATORS[key] = Emulator(parse_ptx(ptx, label), options=options)
    return run_unit(emu, launch, ctas, per_cta)
