"""The emulator: lay out memory for a launch, run the compiled kernel, collect metrics.

    emu = Emulator(module)                        # a parsed PTX module
    result = emu.run(Launch(kernel="saxpy", grid=4, block=256, args=[...]))
    result.metrics["divergent_branch"]

Every access is bounds-checked against the buffers the launch provided; an
out-of-bounds access, the step budget or a trap stops the launch with an
``EmulationError`` naming kernel, CTA, thread, instruction and address.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

from hypa.passes.cfg import block_name
from hypa.ptxdialect import isa
from hypa.ptxdialect.diagnostics import HypaError
from hypa.ptxdialect.dialect import FuncOp, InstructionOp

from .. import abi
from . import clock, memory_limits, mufu
from .device_heap import DeviceHeap
from .launch import Launch, LaunchError, check_numeric
from .launch_limits import launch_error
from .options import EmulationOptions
from ..metrics.counters import Metrics, compute
from .phases import phase
from . import racecheck
from .program import KernelProgram, ProgramError, find_kernel, module_kernels, prepare, syncs_grid
from .textures import TextureTable

#: recompile optimized when the time optimized code would save on the rest of a launch is
#: this many times the optimized compile (estimated: ``jit.OPTIMIZED_SPEEDUP``,
#: ``jit.OPTIMIZED_COMPILE_FACTOR``); 1: when it repays itself
REPAY_FACTOR = 1.0
#: LLVM seconds per PTX instruction of a baseline compile, when its time is unknown (a cache
#: entry of an older version; measured: 0.36 s for 1,200 instructions)
_BASELINE_SECONDS_PER_INSTRUCTION = 3e-4


class EmulationError(HypaError):
    """The launch stopped: out-of-bounds access, step budget, trap, deadlock.
    ``code`` is the ``abi.ERR_*`` code the generated code reported."""

    code: int = 0


@dataclass
class LaunchResult:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    mode: str
    metrics: Metrics
    buffers: dict[str, np.ndarray]
    duration_ms: float
    compile_ms: float
    notes: list[str] = field(default_factory=list)
    #: module-level ``.global`` variables after the launch, by name (raw bytes)
    globals: dict[str, np.ndarray] = field(default_factory=dict)
    #: the raw counters the metrics come from (results of CTA ranges add up: ``Emulator.merge``)
    counters: np.ndarray | None = None
    #: the CTA range run, ``None`` for the whole grid
    ctas: tuple[int, int] | None = None
    #: with ``run(per_cta=True)``: each CTA's metric values (docs/guide.md, "Metrics"), in
    #: linear CTA order from the first CTA run
    per_cta: "PerCta | None" = None
    #: the prepared kernel the counts refer to (block numbering, slice, layout)
    program: KernelProgram | None = field(default=None, repr=False)
    #: the JIT tier(s) the CTAs ran at: "baseline", "optimized" or "baseline+optimized"
    #: (the first CTA at baseline, the rest optimized: ``runtime/emulator/jit.py``)
    jit_tier: str = ""
    #: with ``Emulator(address_trace=N)``: the sampled global accesses (runtime/models/cache_model.py)
    memory_trace: Any = field(default=None, repr=False)
    #: bytes of the launch's buffers (kept when the buffers themselves are dropped)
    buffer_bytes: int = 0
    #: with ``Emulator(address_trace=N)``: (address, bytes) of the global memory written before
    #: the launch, oldest first (the cache model's starting L2)
    memory_ranges: list | None = field(default=None, repr=False)
    #: with ``Emulator(address_trace=N)``: warp-instructions each CTA ran (linear CTA order)
    cta_steps: np.ndarray | None = field(default=None, repr=False)
    #: with ``Emulator(address_trace=N)``: each CTA's critical steps -- per scheduling round
    #: (between barrier releases) the most warp-instructions one of its warps ran, summed
    cta_critical_steps: np.ndarray | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        # the prepared program holds xDSL operations, which neither pickle nor mean
        # anything in another process: results sent from pool or Dask workers drop it
        state = dict(self.__dict__)
        state["program"] = None
        return state

    def without_memory(self) -> "LaunchResult":
        """This result without the launch's memory (what travels back from workers)."""
        self.buffers = {}
        self.globals = {}
        return self

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block), "mode": self.mode}
        for k, v in self.metrics.values.items():
            d[k] = v
        d["duration_ms"] = self.duration_ms
        d["predicates_estimated"] = self.metrics.predicates_estimated
        d["blocks"] = [b.as_dict() for b in self.metrics.blocks]
        d["instruction_mix"] = self.metrics.instruction_mix()
        d["warp_inst_executed"] = list(self.metrics.warp_slots)
        if self.metrics.memory is not None:
            d["memory"] = self.metrics.memory
            d["memory_instructions"] = [m.as_dict() for m in self.metrics.memory_instructions]
        if self.notes:
            d["notes"] = list(self.notes)
        return d


def _align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _aligned_zeros(nbytes: int, align: int = 64) -> np.ndarray:
    raw = np.zeros(max(nbytes, 1) + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off : off + max(nbytes, 1)]


_SCALAR_DTYPES = {
    ".u8": np.uint8, ".s8": np.int8, ".b8": np.uint8, ".u16": np.uint16, ".s16": np.int16, ".b16": np.uint16,
    ".u32": np.uint32, ".s32": np.int32, ".b32": np.uint32, ".u64": np.uint64, ".s64": np.int64,
    ".b64": np.uint64, ".f32": np.float32, ".f64": np.float64, ".f16": np.float16,
}


class PerCta(Sequence):
    """Each CTA's metric values (a dict per CTA, in linear CTA order), stored once per distinct
    set of values with a 4-byte index per CTA: millions of CTAs cost megabytes, not gigabytes."""

    def __init__(self, values: list[dict], index) -> None:
        self.values = values
        self.index = index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.values[k] for k in self.index[i]]
        return self.values[self.index[i]]

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def groups(self) -> list[tuple[dict, list[int]]]:
        """(values, the CTAs that have them) per distinct set of values, by first CTA."""
        members: list[list[int]] = [[] for _ in self.values]
        for cta, k in enumerate(self.index):
            members[k].append(cta)
        return [(v, m) for v, m in zip(self.values, members) if m]

    @staticmethod
    def concat(parts: list) -> "PerCta":
        from array import array

        values: list[dict] = []
        index = array("i")
        for p in parts:
            base = {}
            for k, v in enumerate(p.values if isinstance(p, PerCta) else list(p)):
                base[k] = len(values)
                values.append(v)
            for k in (p.index if isinstance(p, PerCta) else range(len(p))):
                index.append(base[k])
        return PerCta(values, index)


class Emulator:
    """Emulates the kernels of one PTX module; compiled programs are reused."""

    def __init__(self, module: ModuleOp, *, options: EmulationOptions | None = None, **changes: Any):
        """``options`` (default: the defaults), with ``changes`` by field name:
        ``Emulator(module, mode="full", memory_metrics=True)``."""
        self.options = EmulationOptions.of(options, **changes)
        problem = self.options.problem()
        if problem is not None:
            raise LaunchError(problem)
        #: device malloc/free of launches without a host program (``hypa run`` shares the
        #: program's, ``HostBinding.heap``); made on first use, kept across launches as on a GPU
        self.heap: DeviceHeap | None = None
        self.module = module
        self._programs: dict[tuple, KernelProgram] = {}
        self._func_index: dict[str, FuncOp] | None = None
        self._func_addresses: dict[str, int] | None = None
        self._static_counts: dict[str | None, int] = {}
        self._kernels: list[FuncOp] | None = None
        self._kernel_index: dict[str, FuncOp] = {}
        self._symbols = None  # passes.reachable.SymbolIndex of the module, made on first use
        #: a real program's memory, variables and printf (``hypa run``); None for launch specs
        self.host = None
        #: racecheck's sample: the kernels whose first launch had its first CTA checked
        self._race_sampled: set[str] = set()

    def sample_races_again(self) -> None:
        """racecheck's sample checks the next launch of each kernel again, as in a new
        process (``benchmarks/emulate.py`` measures what a program's first launches cost)."""
        self._race_sampled.clear()

    def program(self, kernel: str | None, options: EmulationOptions | None = None) -> KernelProgram:
        """The prepared ``kernel`` (with ``options``, default this emulator's): prepared once
        per kernel and ``options.key()``."""
        options = options or self.options
        key = (kernel, options.key())
        p = self._programs.get(key)
        if p is None:
            with phase("prepare"):
                if self._symbols is None:
                    from hypa.passes.reachable import SymbolIndex

                    self._symbols = SymbolIndex.of(self.module)
                p = prepare(self.module, self.kernel(kernel), options, index=self._symbols, reuse=True)
            self._programs[key] = p
        return p

    def program_for(self, launch: Launch, notes: list[str] | None = None) -> KernelProgram:
        """The program a launch runs: re-sliced conservatively when it binds one buffer twice."""
        options = self.options
        prog = self.program(launch.kernel, options)
        if options.schedule != "interleave" and (launch.cooperative or syncs_grid(prog)):
            # a grid-wide barrier is a spin on a global word: the spinning warps must give way
            options = dataclasses.replace(options, schedule="interleave")
            prog = self.program(launch.kernel, options)
            if notes is not None:
                notes.append("the kernel syncs the grid: its warps and CTAs ran interleaved (--schedule interleave)")
        names_bound = [a for a in launch.args if isinstance(a, str)]
        if prog.mode == "slice" and options.alias == "param" and len(set(names_bound)) < len(names_bound):
            prog = self.program(launch.kernel, dataclasses.replace(options, alias="space"))
            if notes is not None:
                notes.append("two pointer parameters share a buffer: sliced without the distinct-buffer assumption")
        return prog

    def run(self, launch: Launch, jobs: int = 1, per_cta: bool = False,
            ctas: tuple[int, int] | None = None, in_place: bool = False,
            keep_buffers: bool = True) -> LaunchResult:
        """Emulate ``launch`` (only CTAs ``[first, last)`` with ``ctas``, linear ids).
        ``per_cta`` runs CTAs one at a time and keeps each one's metrics.  The caller's arrays
        are copied; the buffers after the launch are ``result.buffers`` (arrays passed
        directly as arguments under ``"<array k>"``).  ``in_place=True`` writes into the
        caller's arrays instead.  ``keep_buffers=False`` drops the launch's memory when it
        ends (``result.buffers`` and ``result.globals`` empty; ``result.buffer_bytes`` says
        how large it was): what batches of launches do, so memory does not grow with them."""
        with phase("emulate"):
            r = self._run(launch, jobs, per_cta, ctas, in_place, keep_buffers)
        return r if keep_buffers else r.without_memory()

    def device_heap(self) -> DeviceHeap:
        """The heap device ``malloc``/``free`` use: the program's under ``hypa run``, else this
        emulator's own (flat memory of its own)."""
        if self.host is not None and getattr(self.host, "heap", None) is not None:
            return self.host.heap
        if self.heap is None:
            self.heap = DeviceHeap(self.host.memory if self.host is not None else None)
        return self.heap

    def _run(self, launch: Launch, jobs: int, per_cta: bool, ctas: tuple[int, int] | None,
             in_place: bool = False, keep_buffers: bool = True) -> LaunchResult:
        t_all = time.perf_counter()
        notes: list[str] = []
        prog = self.program_for(launch, notes)
        refused = launch_error(prog.func, prog.shared_static_bytes, launch.block, launch.shared_bytes)
        if refused is not None:  # a GPU would not launch it (hypa run returns the error code first)
            raise LaunchError(refused.message, file=refused.file, line=refused.line, column=refused.column)
        notes.extend(prog.notes)
        buffers = launch.materialize_buffers(copy=not in_place, unread=self._unread_buffers(prog, launch, keep_buffers))
        if not in_place and any(isinstance(a, np.ndarray) for a in launch.args):
            launch = dataclasses.replace(launch, args=[np.array(a, copy=True, order="C") if isinstance(a, np.ndarray) else a
                                                       for a in launch.args])
        if (launch.cooperative or syncs_grid(prog)) and (per_cta or ctas is not None):
            raise LaunchError("a cooperative launch runs its whole grid at once (its CTAs wait for each other): "
                              "it has no per-CTA results and cannot be cut into CTA ranges")
        first, last = (0, launch.num_ctas) if ctas is None else (int(ctas[0]), int(ctas[1]))
        if not 0 <= first <= last <= launch.num_ctas:
            raise LaunchError(f"CTA range [{first}, {last}) is outside the grid of {launch.num_ctas} CTAs")
        if jobs > 1 and prog.heap_calls:
            jobs = 1
            notes.append("ran in one process: the kernel calls malloc/free, whose heap lives in this process")
        if jobs > 1 and self.host is not None and not self.host.memory.forkable:
            jobs = 1
            notes.append("ran in one process: the program registered host memory (cudaHostRegister) "
                         "that worker processes could not write")
        compiled, lower = self._compile(prog)
        if compiled.from_cache:
            notes.append("compiled code from the cache")
        # racecheck's sample: the first CTA of the kernel's first launch (not a launch whose CTAs
        # run at once, cooperative or grid-syncing: their CTAs take turns in one call)
        sample = (prog.race_sample and first < last and prog.func.func_name not in self._race_sampled
                  and not (launch.cooperative or syncs_grid(prog)))
        if sample:
            self._race_sampled.add(prog.func.func_name)
        ctx, keep = self._setup(prog, launch, buffers, race_shadow=prog.racecheck or sample)
        t0 = time.perf_counter()
        tier0 = compiled.tier
        rc, compiled = self._execute(prog, compiled, lower, ctx, keep, first, last, jobs, per_cta, sample)
        jit_tier = tier0 if compiled.tier == tier0 else f"{tier0}+{compiled.tier}"
        run_s = time.perf_counter() - t0
        slack = int(ctx[abi.CTX_FLAT_SLACK]) & 0xFFFFFFFFFFFFFFFF if self.host is not None else 0
        if slack:
            a = self.host.memory.nearest(slack)
            if a is None:
                where = "outside an allocation"
            elif slack < a.start:
                where = f"{a.start - slack} bytes before the {a.size}-byte {a.kind} allocation at {a.start:#x}"
            else:
                where = f"{slack - (a.start + a.size)} bytes past the end of the {a.size}-byte {a.kind} allocation at {a.start:#x}"
            notes.append(f"an access touched {slack:#x}, {where}: a GPU does not fault on such small overruns, "
                         f"compute-sanitizer reports them (--exact-bounds makes it an error)")
        steps = int(ctx[abi.CTX_STEPS])  # this process's warp-instructions (forked workers' are in the counters)
        if rc != abi.RC_EXIT:
            clock.advance(steps)
            err = EmulationError(self._error_message(prog, launch, ctx, keep))
            err.code = int(ctx[abi.CTX_ERR_CODE])
            i = int(ctx[abi.CTX_ERR_INSTR])
            loc = prog.instructions[i].location if 0 <= i < len(prog.instructions) else None
            if isinstance(loc, FileLineColLoc):  # the parser kept where the instruction is (a barrier)
                err.file, err.line, err.column = loc.filename.data, loc.line.data, loc.column.data
            raise err
        trace = self._trace(ctx, keep)
        uninit = self._uninitialized_reads(prog, launch, ctx)
        if uninit:
            if self.options.strict:
                raise EmulationError(uninit + " (an error under --strict)")
            notes.append(uninit + " (--strict makes it an error)")
        races = racecheck.hazards(prog, launch, ctx, _cta_and_thread) if prog.racecheck or sample else None
        if races and sample:  # a warning only: a sample is no verdict on the launch
            notes.append(races + f" ({racecheck.SAMPLED})")
        elif races:
            if self.options.strict:
                raise EmulationError(races + " (an error under --strict)")
            notes.append(races + " (--strict makes it an error)")
        counters = keep["counters"]
        for name, arr in keep["arrays"]:  # arrays given as arguments, after the launch
            if name.startswith("<array "):
                buffers[name] = arr
        static = self._static_instructions(launch.kernel)
        names = self._block_names(prog)
        m = compute(prog, counters, static, launch.threads, names)
        clock.advance(max(steps, int(m["inst_executed"])))
        if m.predicates_estimated:
            notes.append("not_predicated_off_thread_inst_executed and FLOPs of guarded instructions are estimated (use --exact-predicates)")
        del run_s
        total = time.perf_counter() - t_all
        return LaunchResult(
            kernel=prog.func.func_name,
            grid=launch.grid,
            block=launch.block,
            mode=prog.mode,
            metrics=m,
            buffers=buffers,
            duration_ms=1000 * total,
            compile_ms=1000 * compiled.compile_seconds,
            notes=sorted(set(notes), key=notes.index),
            globals=dict(keep["globals"]),
            counters=counters.copy(),
            ctas=None if ctas is None else (first, last),
            per_cta=self._cta_values(prog, keep["cta_rows"], static, launch, names) if per_cta else None,
            program=prog,
            jit_tier=jit_tier,
            memory_trace=trace,
            memory_ranges=keep.get("memory_ranges"),
            buffer_bytes=sum(int(a.nbytes) for a in buffers.values()),
            cta_steps=keep["cta_steps"][first:last, 0].copy() if "cta_steps" in keep else None,
            cta_critical_steps=keep["cta_steps"][first:last, 1].copy() if "cta_steps" in keep else None,
        )

    @staticmethod
    def _unread_buffers(prog: KernelProgram, launch: Launch, keep_buffers: bool) -> frozenset[str]:
        """The spec buffers whose contents a launch need not make: in slice mode, those no
        emulated instruction reads (``read_parameters``), when nobody reads the memory after
        the launch (``keep_buffers=False``: batches, the command line).  Making the random
        contents of a 64 MiB buffer costs a fifth of a second; the slice only checks the
        addresses against its size."""
        if prog.mode != "slice" or keep_buffers:
            return frozenset()
        read = prog.read_parameters()
        if read is None:
            return frozenset()
        names = prog.func.param_names
        bound = [(names[i] if i < len(names) else None, a) for i, a in enumerate(launch.args)]
        needed = {a for p, a in bound if isinstance(a, str) and (p is None or p in read)}
        return frozenset(a for p, a in bound if isinstance(a, str) and a not in needed and a in launch.buffers)

    def _memory_ranges(self, launch: Launch, buffers: dict, buf_ids: dict) -> list[tuple[int, int]]:
        """(address, bytes) of the global memory the launch can see, in the order it was last
        written before the launch (the launch's buffers in their order, as a harness copies
        them in; a program's device allocations in allocation order): the cache model's L2
        starts from it."""
        if self.host is not None:
            return [(a.start, a.size) for a in self.host.memory if a.kind in ("device", "managed", "array")]
        return [(buf_ids[n] << abi.WINDOW_SHIFT, int(a.nbytes)) for n, a in buffers.items() if n in buf_ids]

    def _trace(self, ctx: np.ndarray, keep: dict):
        """The launch's address trace (``None`` when none was asked for)."""
        if "trace" not in keep:
            return None
        from .memory_trace import MemoryTrace

        parts = [MemoryTrace.from_buffer(keep["trace"], int(ctx[abi.CTX_TRACE_LEN]), int(ctx[abi.CTX_TRACE_SHIFT]),
                                         int(ctx[abi.CTX_TRACE_SHIFT]) >= 48,
                                         (int(ctx[abi.CTX_TRACE_ATOMICS]), int(ctx[abi.CTX_TRACE_ATOMIC_EXTRA])),
                                         (keep["l1_window"], int(ctx[abi.CTX_L1_WINDOW_LEN])))]
        parts.extend(keep.get("worker_traces", []))
        return MemoryTrace.merge(parts)

    def _compile(self, prog: KernelProgram):
        """The compiled program: the best tier cached (in this process or on disk), else a
        new compile at the tier ``HYPA_JIT`` asks for (``auto``: baseline first).  Returns
        it and a function giving the LLVM IR text (built at most once)."""
        from .jit import cached, compile_ir, jit_policy

        texts: dict = {}

        def lower(tier: str = "baseline"):
            if tier not in texts:
                from .lowering import lower as lower_program  # not imported where the code is cached

                with phase("prepare"):
                    prog.materialize()
                with phase("lower"):
                    texts[tier] = lower_program(prog, tier)
            return texts[tier]

        try:
            policy = jit_policy()
        except ValueError as e:  # a bad HYPA_JIT: the user's input, said in one line
            raise LaunchError(str(e)) from None
        order = ["optimized", "baseline"] if policy == "auto" else [policy]
        with phase("compile"):
            for tier in order:
                hit = cached(prog.key, tier)
                if hit is not None:
                    return hit, lower
            tier = "baseline" if policy == "auto" else policy
            return compile_ir(prog.key, lambda: lower(tier), tier), lower

    def _execute(self, prog: KernelProgram, compiled, lower, ctx: np.ndarray, keep: dict,
                 first: int, last: int, jobs: int, per_cta: bool, sample: bool = False):
        """Run CTAs [first, last).  ``sample``: the first CTA alone with racecheck's shadow,
        then the shadow is taken away (racecheck's sample).  A baseline-compiled program runs
        the first CTA alone; if optimized code would save more time on the other CTAs than its
        compile costs (both estimated: ``jit.OPTIMIZED_SPEEDUP``, and the baseline compile's
        LLVM seconds times ``jit.OPTIMIZED_COMPILE_FACTOR``), the rest run optimized code."""
        from .cta_ranges import CtaRows, run_each, run_forked
        from .interrupt import stoppable
        from .jit import OPTIMIZED_COMPILE_FACTOR, OPTIMIZED_SPEEDUP, compile_ir, jit_policy

        rows0 = None
        if ctx[abi.CTX_COOP]:  # every CTA resident: one call runs the grid
            return compiled.run_ctas(ctx.ctypes.data, first, last), compiled

        def alone(c: int) -> int:
            """CTA ``c`` by itself, in this process (its row after those before, ``per_cta``)."""
            nonlocal rows0
            with stoppable(ctx):
                if not per_cta:
                    return compiled.run_ctas(ctx.ctypes.data, c, c + 1)
                rc = run_each(compiled.run_ctas, ctx, keep, c, c + 1)
            if rows0 is None:
                rows0 = CtaRows()
            rows0.extend(keep["cta_rows"])
            keep["cta_rows"] = rows0
            return rc

        if sample:  # checked apart, and not timed for the choice of tier below
            rc = alone(first)
            ctx[abi.CTX_RACE_SHADOW] = 0
            first += 1
            if rc != abi.RC_EXIT:
                return rc, compiled
        if compiled.tier == "baseline" and jit_policy() == "auto" and last - first > 1:
            t = time.perf_counter()
            rc = alone(first)
            one = time.perf_counter() - t
            first += 1
            if rc != abi.RC_EXIT:
                return rc, compiled
            llvm_s = compiled.llvm_seconds or _BASELINE_SECONDS_PER_INSTRUCTION * len(prog.instructions)
            saved = one * (last - first) / max(1, jobs) * (1 - 1 / OPTIMIZED_SPEEDUP)
            if saved > REPAY_FACTOR * OPTIMIZED_COMPILE_FACTOR * llvm_s:
                seconds = compiled.compile_seconds
                with phase("compile"):
                    compiled = compile_ir(prog.key, lambda: lower("optimized"), "optimized")
                compiled.compile_seconds += seconds
        jobs = max(1, min(jobs, last - first))
        if first >= last:
            rc = abi.RC_EXIT
        elif jobs > 1:
            rc = run_forked(compiled.run_ctas, ctx, keep, last, jobs, first=first, per_cta=per_cta)
        else:  # forked workers stop on their own (run_forked); here, this process's native code
            with stoppable(ctx):
                if per_cta:
                    rc = run_each(compiled.run_ctas, ctx, keep, first, last)
                else:
                    rc = compiled.run_ctas(ctx.ctypes.data, first, last)
        if rows0 is not None:
            rest = keep.get("cta_rows")
            if rest is not None and first < last:
                rows0.extend(rest)
            keep["cta_rows"] = rows0
        return rc, compiled

    def _cta_values(self, prog: KernelProgram, rows, static: int, launch: Launch, names) -> "PerCta":
        """Metric values of each CTA from its counter row (each distinct row computed once)."""
        vals = [compute(prog, u, static, launch.threads_per_cta, names).values for u in rows.rows]
        return PerCta(vals, rows.index)

    def merge(self, launch: Launch, parts: list[LaunchResult]) -> LaunchResult:
        """One launch's result from the results of CTA ranges that cover its grid
        (``run(launch, ctas=...)``, e.g. on other machines): counters add up and the
        metrics are computed from the sum, so they equal a run over the whole grid."""
        parts = sorted(parts, key=lambda r: (r.ctas or (0, launch.num_ctas))[0])
        covered = 0
        for r in parts:
            lo, hi = r.ctas or (0, launch.num_ctas)
            if lo != covered or r.counters is None:
                raise LaunchError(f"results to merge do not cover CTAs [0, {launch.num_ctas}) once each")
            covered = hi
        if covered != launch.num_ctas:
            raise LaunchError(f"results to merge do not cover CTAs [0, {launch.num_ctas}) once each")
        notes: list[str] = []
        prog = self.program_for(launch, notes)
        counters = np.sum([r.counters for r in parts], axis=0)
        m = compute(prog, counters, self._static_instructions(launch.kernel), launch.threads, self._block_names(prog))
        for r in parts:
            notes.extend(r.notes)
        per_cta = None
        if all(r.per_cta is not None for r in parts):
            per_cta = PerCta.concat([r.per_cta for r in parts])  # type: ignore[misc]
        return LaunchResult(
            kernel=prog.func.func_name, grid=launch.grid, block=launch.block, mode=prog.mode, metrics=m,
            buffers={}, duration_ms=sum(r.duration_ms for r in parts), compile_ms=max(r.compile_ms for r in parts),
            notes=sorted(set(notes), key=notes.index), counters=counters, per_cta=per_cta,
            program=parts[0].program if parts else None,
            **self._merged_timing_inputs(parts),
        )

    @staticmethod
    def _merged_timing_inputs(parts: list[LaunchResult]) -> dict[str, Any]:
        """What the timing estimate reads besides the counters, merged over CTA ranges (in
        order): the address traces, each CTA's warp-instructions, the memory before the launch."""
        if not parts or any(r.memory_trace is None or r.cta_steps is None for r in parts):
            return {}
        from .memory_trace import MemoryTrace

        return {"memory_trace": MemoryTrace.merge([r.memory_trace for r in parts]),
                "cta_steps": np.concatenate([r.cta_steps for r in parts]),
                "cta_critical_steps": (np.concatenate([r.cta_critical_steps for r in parts])
                                       if all(r.cta_critical_steps is not None for r in parts) else None),
                "memory_ranges": parts[0].memory_ranges, "buffer_bytes": parts[0].buffer_bytes}

    # -- helpers ----------------------------------------------------------------------

    def kernel(self, name: str | None) -> FuncOp:
        """The kernel a launch names (mangled or demangled; the module scanned once)."""
        if self._kernels is None:
            self._kernels = module_kernels(self.module)
            self._kernel_index = {}
            for k in self._kernels:
                self._kernel_index.setdefault(k.func_name, k)
        hit = self._kernel_index.get(name) if name is not None else None
        return hit if hit is not None else find_kernel(self.module, name, self._kernels)

    def _function_addresses(self) -> dict[str, int]:
        """The address of every function of the module (made once: a launch of a module of
        313 kernels named each of them again)."""
        if self._func_addresses is None:
            self._func_addresses = {op.func_name: abi.function_address(op.func_name)
                                    for op in self.module.ops if isinstance(op, FuncOp)}
        return self._func_addresses

    def _functions(self) -> dict[str, FuncOp]:
        """The module's defined functions by name (made once: lookups stay O(1) per kernel)."""
        if self._func_index is None:
            self._func_index = {op.func_name: op for op in self.module.ops
                                if isinstance(op, FuncOp) and not op.is_declaration}
        return self._func_index

    def _static_instructions(self, kernel: str | None) -> int:
        n = self._static_counts.get(kernel)
        if n is None:
            f = self.kernel(kernel)
            n = self._static_counts[kernel] = sum(1 for op in f.body.walk() if isinstance(op, InstructionOp))
        return n

    def _block_names(self, prog: KernelProgram) -> dict[tuple[str, int], str]:
        """Names of the blocks of the kernel and the functions inlined into it."""
        names: dict[tuple[str, int], str] = {}
        funcs = self._functions()
        for fname in prog.functions or [prog.func.func_name]:
            op = funcs.get(fname)
            if op is not None:
                for i, b in enumerate(op.body.blocks):
                    names[(fname, i)] = block_name(b, i)
        return names

    def _setup(self, prog: KernelProgram, launch: Launch, buffers: dict[str, np.ndarray], race_shadow: bool = False):
        keep: dict[str, Any] = {}
        func = prog.func
        if len(launch.args) != len(prog.params):
            pnames = ", ".join(n for n, *_ in prog.params)
            raise LaunchError(
                f"kernel {func.func_name} takes {len(prog.params)} parameters ({pnames}); the launch gives {len(launch.args)} arguments"
            )
        # windows: fixed special windows, then global variables, then buffers
        glob_arrays: list[tuple[str, np.ndarray]] = []
        symbols = _symbol_addresses(prog, self._function_addresses()) \
            if any(v.init for v in prog.global_vars.values()) else None
        host = self.host
        textures = host.textures if host is not None and host.textures is not None else TextureTable()
        handles: dict[str, int] = {}
        for name, var in prog.global_vars.items():
            tname = launch.variables.get(name)
            if isinstance(tname, str) and tname in launch.textures:
                if var.ptx_type not in (".texref", ".surfref"):
                    raise LaunchError(f"variable {name} ({var.ptx_type}) cannot hold texture or surface '{tname}': "
                                      f"only a .texref or .surfref variable can")
                init = np.zeros(8, np.uint8)  # the handle, once the texture exists (below)
            elif name in launch.variables:
                init = _variable_bytes(launch, buffers, name, var)
            else:
                memory_limits.check(f"kernel {func.func_name}: global variable {name}", var.size)
                init = initial_bytes(var.size, var.init, var.ptx_type, symbols)
            glob_arrays.append((name, init if host is None else host.variable(name, var.size, init)))
        buf_ids: dict[str, int] = {}
        anon = 0
        arrays: list[tuple[str, np.ndarray]] = list(glob_arrays)
        tex_buffers = []
        for t in launch.textures.values():
            if t.buffer not in buffers:
                raise LaunchError(f"{'surface' if t.surface else 'texture'} '{t.name}': buffer '{t.buffer}' "
                                  f"is not one of the launch's buffers")
            tex_buffers.append(t.buffer)
        for a in [*launch.args, *tex_buffers]:
            if isinstance(a, str) and a in launch.textures:
                continue
            if isinstance(a, str):
                if a not in buffers:
                    raise LaunchError(f"argument '{a}' names no buffer")
                if a not in buf_ids:
                    buf_ids[a] = abi.WIN_FIRST_GLOBAL + len(arrays)
                    arrays.append((a, buffers[a]))
            elif isinstance(a, np.ndarray):
                name = f"<array {anon}>"
                check_numeric(name, a)
                anon += 1
                buf_ids[name] = abi.WIN_FIRST_GLOBAL + len(arrays)
                arrays.append((name, a))
        workspace_window = 0
        grid_sync = launch.cooperative or syncs_grid(prog)
        if grid_sync:  # cooperative groups' grid workspace: the barrier's arrival count
            workspace_window = abi.WIN_FIRST_GLOBAL + len(arrays)
            arrays.append(("<grid workspace>", np.zeros(16, np.uint8)))
        for t in launch.textures.values():
            handles[t.name] = textures.add(t.desc(buffers[t.buffer].nbytes, window=buf_ids[t.buffer]))
        for k, (name, _arr) in enumerate(glob_arrays):
            tname = launch.variables.get(name)
            if isinstance(tname, str) and tname in handles:
                glob_arrays[k][1][:8] = np.frombuffer(np.array(handles[tname], np.uint64).tobytes(), np.uint8)
        keep["windows"] = [n for n, _ in arrays]
        nwin = abi.WIN_FIRST_GLOBAL + len(arrays)
        win_base = np.zeros(nwin, np.int64)
        win_size = np.zeros(nwin, np.int64)
        win_stride = np.zeros(nwin, np.int64)
        for k, (_n, arr) in enumerate(arrays):
            if not arr.flags.c_contiguous:
                raise LaunchError(f"buffer '{_n}' must be contiguous")
            win_base[abi.WIN_FIRST_GLOBAL + k] = arr.ctypes.data
            win_size[abi.WIN_FIRST_GLOBAL + k] = arr.nbytes
        # parameters
        param = _aligned_zeros(_align_up(prog.param_bytes, 8) + 8, 16)
        anon = 0
        for (name, ptx_type, off, size), a in zip(prog.params, launch.args):
            if isinstance(a, str) and a in handles:
                if size != 8 or ptx_type.startswith(".f"):
                    raise LaunchError(f"parameter {name} ({ptx_type}) cannot hold the handle of '{a}': "
                                      f"texture and surface objects are 64-bit (.u64)")
                param[off : off + 8] = np.frombuffer(np.array(handles[a], np.uint64).tobytes(), np.uint8)
            elif isinstance(a, str) or isinstance(a, np.ndarray):
                key = a if isinstance(a, str) else f"<array {anon}>"
                if not isinstance(a, str):
                    anon += 1
                addr = buf_ids[key] << abi.WINDOW_SHIFT
                if size < 8 and (size != 4 or addr >= 1 << 32) or ptx_type.startswith(".f"):
                    raise LaunchError(f"parameter {name} ({ptx_type}) cannot hold the address of buffer '{key}': "
                                      f"pass a number, or bind the buffer to a 64-bit pointer parameter")
                param[off : off + size] = np.frombuffer(np.array(addr, np.uint64).tobytes()[:size], np.uint8)
            elif isinstance(a, (bytes, bytearray)):
                param[off : off + min(size, len(a))] = np.frombuffer(bytes(a[:size]), np.uint8)
            elif isinstance(a, (int, np.integer)) and ptx_type in (".b8", ".u8", ".s8") and size > 1:
                # a by-value aggregate (``.param .b8 p[4]``, e.g. a __half2): the integer's
                # little-endian bytes
                param[off : off + size] = np.frombuffer((int(a) % (1 << (8 * size))).to_bytes(size, "little"), np.uint8)
            else:
                dt = _SCALAR_DTYPES.get(ptx_type)
                if dt is None:
                    raise LaunchError(f"parameter {name} ({ptx_type}) needs bytes or a buffer, not {a!r}")
                try:
                    v = np.array(a).astype(dt) if not isinstance(a, float) or np.dtype(dt).kind == "f" else np.array(int(a)).astype(dt)
                except (ValueError, OverflowError) as e:
                    raise LaunchError(f"parameter {name}: {e}") from None
                raw = v.tobytes()
                param[off : off + len(raw)] = np.frombuffer(raw, np.uint8)
        keep["param"] = param
        self._check_needed_buffers(prog, launch)
        threads = launch.threads_per_cta
        nwarps = (threads + abi.LANES - 1) // abi.LANES
        shared_size = _align_up(prog.shared_static_bytes + launch.shared_bytes, 16)
        shadows = 2 if prog.initcheck else 1  # initcheck: a shadow byte per byte, after the bytes
        twice = " (twice that with initcheck's shadow)" if prog.initcheck else ""
        kname = f"kernel {func.func_name}"
        shared = memory_limits.zeros(f"{kname}: shared memory of {shared_size} bytes per CTA{twice}",
                                     shadows * shared_size + 16)
        local_size = prog.stack_base + prog.stack_bytes(self.options.stack_size) if prog.uses_stack else _align_up(prog.local_bytes, 16)
        stack = f" (with a --stack-size of {self.options.stack_size} bytes)" if prog.uses_stack else ""
        local = memory_limits.zeros(f"{kname}: local memory of {threads} threads x {local_size} bytes{stack}{twice}",
                                    shadows * threads * local_size + 16)
        cparam_size = _align_up(prog.call_param_bytes, 16)
        cparam = memory_limits.zeros(f"{kname}: call parameters of {threads} threads x {cparam_size} bytes",
                                     threads * cparam_size + 16)
        const = memory_limits.zeros(f"{kname}: constant memory", prog.const_bytes + 16)
        for cname, var in prog.const_vars.items():
            data = _variable_bytes(launch, buffers, cname, var) if cname in launch.variables else \
                initial_bytes(var.size, var.init, var.ptx_type)
            if host is not None:  # __constant__ data the program wrote (cudaMemcpyToSymbol)
                data = host.variable(cname, var.size, data)
            const[var.offset : var.offset + var.size] = data[: var.size]
        ws_stride = _align_up(abi.WS_FRAME_BYTES_OFFSET + prog.frame_bytes, 64)
        ws = _aligned_zeros(nwarps * ws_stride)
        counters = np.zeros(prog.num_counters, np.int64)
        for name, arr, word in (("shared", shared, abi.WIN_SHARED), ("local", local, abi.WIN_LOCAL), ("const", const, abi.WIN_CONST), ("param", param, abi.WIN_PARAM), ("cparam", cparam, abi.WIN_CPARAM)):
            win_base[word] = arr.ctypes.data
        win_size[abi.WIN_SHARED] = shared_size
        win_size[abi.WIN_LOCAL] = local_size
        win_stride[abi.WIN_LOCAL] = local_size
        win_size[abi.WIN_CONST] = prog.const_bytes
        win_size[abi.WIN_PARAM] = prog.param_bytes
        win_size[abi.WIN_CPARAM] = cparam_size
        win_stride[abi.WIN_CPARAM] = cparam_size
        ctx = np.zeros(abi.CTX_WORDS, np.int64)
        ctx[abi.CTX_PARAM] = param.ctypes.data
        ctx[abi.CTX_WIN_BASE] = win_base.ctypes.data
        ctx[abi.CTX_WIN_SIZE] = win_size.ctypes.data
        ctx[abi.CTX_WIN_STRIDE] = win_stride.ctypes.data
        ctx[abi.CTX_NWIN] = nwin
        ctx[abi.CTX_SHARED] = shared.ctypes.data
        ctx[abi.CTX_SHARED_SIZE] = shared_size
        ctx[abi.CTX_LOCAL] = local.ctypes.data
        ctx[abi.CTX_LOCAL_SIZE] = local_size
        ctx[abi.CTX_SHADOW_LOCAL] = threads * local_size if prog.initcheck else 0
        ctx[abi.CTX_SHADOW_SHARED] = shared_size if prog.initcheck else 0
        ctx[abi.CTX_CONST] = const.ctypes.data
        ctx[abi.CTX_CONST_SIZE] = prog.const_bytes
        ctx[abi.CTX_CPARAM] = cparam.ctypes.data
        ctx[abi.CTX_CPARAM_SIZE] = cparam_size
        for k in range(3):
            ctx[abi.CTX_NTID + k] = launch.block[k]
            ctx[abi.CTX_NCTAID + k] = launch.grid[k]
        ctx[abi.CTX_COUNTERS] = counters.ctypes.data
        ctx[abi.CTX_BUDGET] = self.options.step_budget
        ctx[abi.CTX_WS] = ws.ctypes.data
        ctx[abi.CTX_WS_STRIDE] = ws_stride
        ctx[abi.CTX_NWARPS] = nwarps
        ctx[abi.CTX_NTHREADS] = threads
        ctx[abi.CTX_DYN_SHARED] = launch.shared_bytes
        ctx[abi.CTX_SMCOUNT] = 132
        ctx[abi.CTX_STACK_SIZE] = self.options.stack_size
        ctx[abi.CTX_CLOCK] = clock.now()
        ctx[abi.CTX_CLOCK_CPI] = clock.cycles_per_warp_instruction()
        ctx[abi.CTX_CLOCK_MHZ] = clock.clock_mhz()
        ctx[abi.CTX_TEXTURE] = textures.address
        if mufu.used_by(prog):
            ctx[abi.CTX_MUFU] = mufu.address(mufu.used_by(prog))
        if grid_sync:  # every CTA resident (a plain launch too: a GPU gives it a workspace as well)
            ctx[abi.CTX_GRID_WORKSPACE] = workspace_window << abi.WINDOW_SHIFT
            stride = abi.coop_save_bytes(shadows * shared_size, shadows * threads * local_size,
                                         threads * cparam_size, nwarps * ws_stride)
            keep["coop"] = np.zeros(stride * max(1, launch.num_ctas), np.uint8)  # untouched pages cost nothing
            ctx[abi.CTX_COOP] = keep["coop"].ctypes.data
            ctx[abi.CTX_COOP_STRIDE] = stride
        if race_shadow:  # a shadow of words per shared byte (lowering/racecheck.py)
            keep["race_shadow"] = _aligned_zeros(abi.RACE_SHADOW_WORDS * 8 * shared_size + 16)
            ctx[abi.CTX_RACE_SHADOW] = keep["race_shadow"].ctypes.data
        if self.options.address_trace:
            keep["memory_ranges"] = self._memory_ranges(launch, buffers, buf_ids)
            keep["trace"] = np.zeros(2 * self.options.address_trace, np.int64)
            ctx[abi.CTX_TRACE] = keep["trace"].ctypes.data
            ctx[abi.CTX_TRACE_CAP] = self.options.address_trace
            keep["l1_window"] = np.zeros(2 * abi.L1_WINDOW_RECORDS, np.int64)  # untouched pages cost nothing
            ctx[abi.CTX_L1_WINDOW] = keep["l1_window"].ctypes.data
            ctx[abi.CTX_L1_WINDOW_CAP] = abi.L1_WINDOW_RECORDS
            ctx[abi.CTX_L1_WINDOW_CTAS] = abi.L1_WINDOW_MAX_CTAS
            ctx[abi.CTX_L1_WINDOW_STRIDE] = ctx[abi.CTX_SMCOUNT]
            keep["cta_steps"] = np.zeros((max(1, launch.num_ctas), 2), np.int64)
            ctx[abi.CTX_CTA_STEPS] = keep["cta_steps"].ctypes.data
        if host is not None:
            try:
                host.setup_context(ctx, nwin)
            except ValueError as e:
                raise LaunchError(str(e)) from None
        if prog.heap_calls or (host is None and self.heap is not None and self.heap.base):
            # also a later launch that only reads blocks an earlier one allocated
            heap = self.device_heap()
            heap.setup_context(ctx)
            keep.update(heap=heap)
        keep.update(win_base=win_base, win_size=win_size, win_stride=win_stride, shared=shared, local=local,
                    cparam=cparam, const=const, ws=ws, counters=counters, arrays=arrays, globals=glob_arrays,
                    textures=textures)
        return ctx, keep

    def _check_needed_buffers(self, prog: KernelProgram, launch: Launch) -> None:
        """A pointer parameter that a sliced load reads through must be bound to a buffer."""
        by_name = {n: a for (n, *_), a in zip(prog.params, launch.args)}

        def unbound():
            for op, params in prog.buffer_reads():
                if not any(isinstance(by_name.get(p), (str, np.ndarray)) for p in params):
                    return op, params
            return None

        if unbound() is None:
            return
        prog.materialize()  # the message follows the load's value to a branch
        op, params = unbound()
        ptr_sized = [p for (n, t, *_r) in prog.params for p in params if n == p and t in (".u64", ".b64", ".s64")]
        p = (ptr_sized or params)[0]
        branch = self._branch_needing(prog, op)
        raise LaunchError(
            f"kernel {prog.func.func_name}: parameter '{p}' must be a buffer: {_text(op)} reads through it"
            f" and {branch} depends on the value"
        )

    def _branch_needing(self, prog: KernelProgram, load: InstructionOp) -> str:
        for v in load.results:
            seen = set()
            work = [v]
            while work:
                x = work.pop()
                if x in seen:
                    continue
                seen.add(x)
                for use in x.uses:
                    op = use.operation
                    if isinstance(op, InstructionOp) and op.spec.terminator:
                        bi = prog.cfg.index[op.parent]
                        return f"the branch '{_text(op)}' in block {prog.cfg.name(bi)}"
                    work.extend(op.results)
        return "a branch"

    def _error_message(self, prog: KernelProgram, launch: Launch, ctx: np.ndarray, keep) -> str:
        # the message follows values through what the passes made (an assertion's strings, a
        # load's address): a program reused from its record prepares again here, once
        prog.materialize()
        code = int(ctx[abi.CTX_ERR_CODE])
        warp = int(ctx[abi.CTX_ERR_WARP])
        lane = int(ctx[abi.CTX_ERR_LANE])
        cta_lin = int(ctx[abi.CTX_CTA_LINEAR])
        cta, tid = _cta_and_thread(launch, cta_lin, warp, lane)
        block = int(ctx[abi.CTX_ERR_BLOCK])
        where = f"kernel {prog.func.func_name}, CTA {cta}, thread {tid}"
        bname = prog.cfg.name(block) if 0 <= block < prog.num_blocks else "?"
        instr_i = int(ctx[abi.CTX_ERR_INSTR])
        instr = prog.instruction_text(instr_i) if 0 <= instr_i < len(prog.instructions) else None
        if code == abi.ERR_OUT_OF_BOUNDS:
            addr = int(ctx[abi.CTX_ERR_ADDR]) & 0xFFFFFFFFFFFFFFFF
            what = self._describe_address(addr, keep)
            words = (instr or "").split()
            if words and words[0].startswith("@"):
                words = words[1:]  # the guard
            opcode = (words[0] if words else "").split(".")
            shared_op = any(m.startswith("shared") for m in opcode) and opcode[0] in (
                "ld", "st", "atom", "red", "ldmatrix", "stmatrix", "mbarrier", "cp") or opcode[0] == "wgmma"
            if shared_op and addr < (1 << 32):
                # a .shared access carries the offset itself, not a generic address
                size = int(ctx[abi.CTX_SHARED_SIZE])
                what = (f"shared memory offset {addr:#x}, beyond the {size} bytes this CTA has"
                        f" ({prog.shared_static_bytes} static + {launch.shared_bytes} dynamic, 16-byte aligned)")
            space = next((s for s in ("local", "param", "const") if s in opcode), None)
            if space and opcode[0] in ("ld", "ldu", "st", "atom", "red"):
                # a state-space address is the offset itself, all 64 bits of it
                what = _describe_offset(prog, space, addr)
            return f"out-of-bounds access at {where}: {instr} (block {bname}) touches {what}"
        if code == abi.ERR_MISALIGNED:
            addr = int(ctx[abi.CTX_ERR_ADDR]) & 0xFFFFFFFFFFFFFFFF
            n = int(ctx[abi.CTX_ERR_AUX])
            return (f"misaligned address at {where}: {instr} (block {bname}) accesses {n} bytes at {addr:#x}, "
                    f"which is not a multiple of {n}")
        if code == abi.ERR_STEP_BUDGET:
            if block < 0:  # checked as a CTA starts
                return (f"step budget of {self.options.step_budget} warp-instructions exhausted before CTA {cta} of kernel "
                        f"{prog.func.func_name} started ({cta_lin} CTAs ran; raise it with --step-budget)")
            return (f"step budget of {self.options.step_budget} warp-instructions exhausted at {where} in block {bname} "
                    f"(a runaway loop? raise it with --step-budget)")
        if code == abi.ERR_TRAP:
            return f"trap executed at {where} in block {bname}"
        if code == abi.ERR_ASSERT:
            op = prog.instructions[instr_i] if 0 <= instr_i < len(prog.instructions) else None
            text = _assertion_text(prog, op) if op is not None else None
            return f"assertion failed at {where} in block {bname}" + (f": {text}" if text else " (call __assertfail)")
        if code == abi.ERR_CALL_STACK:
            aux = int(ctx[abi.CTX_ERR_AUX])
            depth = int(ctx[abi.CTX_ERR_ADDR])
            if instr is not None and instr.startswith("alloca"):
                return (f"call stack overflow at {where}: {instr} (block {bname}) asks for more than the "
                        f"{self.options.stack_size} bytes of stack per thread (raise it with --stack-size)")
            call = prog.real_calls[aux] if 0 <= aux < len(prog.real_calls) else None
            from .demangle import demangle

            caller = demangle(call.caller) if call else "?"
            callee = demangle(call.callee) if call else "?"
            return (f"call stack overflow at {where}: {instr} in {caller} (block {bname}) would enter {callee} at call "
                    f"depth {depth}, past the {self.options.stack_size} bytes of stack per thread or the deepest call "
                    f"counted ({abi.CALL_DEPTH_COUNTERS - 1}); raise the stack with --stack-size")
        if code == abi.ERR_BAD_CALL_TARGET:
            addr = int(ctx[abi.CTX_ERR_ADDR]) & 0xFFFFFFFFFFFFFFFF
            return f"indirect call through {addr:#x}, the address of none of its possible targets, at {where}: {instr}"
        if code == abi.ERR_STACK_OVERFLOW:
            return f"SIMT stack overflow at {where} in block {bname}"
        if code == abi.ERR_BARRIER_COUNT:
            count = int(ctx[abi.CTX_ERR_ADDR])
            return (f"barrier thread count beyond the CTA at {where}: {instr} (block {bname}) waits for {count} threads, "
                    f"and the CTA has {launch.threads_per_cta} (block {launch.block}): a GPU would wait there forever")
        if code == abi.ERR_DEADLOCK:
            return (f"deadlock in kernel {prog.func.func_name}, CTA {cta}: warps wait at barriers that can never be released"
                    f" or on mbarrier phases that no warp can complete")
        if code == abi.ERR_CLUSTER_RANK:
            return (f"mapa to CTA rank {int(ctx[abi.CTX_ERR_ADDR])} at {where}: {instr} (launches have clusters"
                    f" of one CTA: rank 0 only)")
        if code == abi.ERR_NO_CLUSTER:
            return (f"{instr} at {where} needs a cluster launch: the kernel declares no cluster (.explicitcluster, "
                    f".reqnctapercluster; CUDA's __cluster_dims__), and a GPU faults with an illegal instruction")
        if code == abi.ERR_HEAP:
            return f"{keep['heap'].error} at {where}: {instr}"
        if code == abi.ERR_TEXTURE:
            return f"{keep['textures'].error} at {where}: {instr}"
        if code == abi.ERR_BAD_BRANCH_INDEX:
            return f"brx.idx index out of range at {where}: {instr}"
        return f"emulation failed with code {code} at {where}"

    def _uninitialized_reads(self, prog: KernelProgram, launch: Launch, ctx: np.ndarray) -> str | None:
        """initcheck's warning: how many thread reads found shared/local bytes no thread of
        their CTA had written, and the first one (kernel, CTA, thread, instruction, offset)."""
        n = int(ctx[abi.CTX_UNINIT_COUNT])
        if n <= 0:
            return None
        cta, tid = _cta_and_thread(launch, int(ctx[abi.CTX_UNINIT_CTA]), int(ctx[abi.CTX_UNINIT_WARP]),
                                   int(ctx[abi.CTX_UNINIT_LANE]))
        i = int(ctx[abi.CTX_UNINIT_INSTR])
        op = prog.instructions[i] if 0 <= i < len(prog.instructions) else None
        text = prog.instruction_text(i) if op is not None else "?"
        addr = int(ctx[abi.CTX_UNINIT_ADDR]) & 0xFFFFFFFFFFFFFFFF
        space = isa.state_space(op.spec, op.modifiers) if op is not None else None
        if space in (None, "generic"):  # a generic address: its window says the space
            space = {abi.WIN_SHARED: "shared", abi.WIN_LOCAL: "local"}.get(addr >> abi.WINDOW_SHIFT, "shared")
            addr &= abi.OFFSET_MASK
        if space.startswith("shared"):
            space, addr = "shared", addr & 0xFFFFFFFF
        unwritten = "no thread of the CTA had written" if space == "shared" else "that thread had not written"
        return (f"initcheck: {n} thread read{'s' if n != 1 else ''} of shared or local memory never written "
                f"(the emulator reads zeros, a GPU whatever was there); the first: kernel {prog.func.func_name}, "
                f"CTA {cta}, thread {tid}: {text} reads {space} offset {addr:#x}, which {unwritten}")

    def _describe_address(self, addr: int, keep) -> str:
        win = addr >> abi.WINDOW_SHIFT
        off = addr & abi.OFFSET_MASK
        names = {abi.WIN_SHARED: "shared memory", abi.WIN_LOCAL: "local memory", abi.WIN_CONST: "constant memory",
                 abi.WIN_PARAM: "parameter memory", abi.WIN_CPARAM: "call parameters"}
        if win in names:
            return f"address {addr:#x} ({names[win]} offset {off})"
        k = win - abi.WIN_FIRST_GLOBAL
        if 0 <= k < len(keep["arrays"]):
            n, arr = keep["arrays"][k]
            return f"address {addr:#x} (buffer '{n}' byte {off}, which holds {arr.nbytes} bytes)"
        if self.host is not None and (win == 0 or k >= len(keep["arrays"])):
            return f"address {addr:#x} ({_nearest_allocation(self.host.memory, addr)})"
        if self.heap is not None and self.heap.memory.tables()[0].size:
            return f"address {addr:#x} ({_nearest_allocation(self.heap.memory, addr)})"
        if addr < (1 << 32):
            return f"address {addr:#x} (no buffer; a shared-memory offset used as a global address?)"
        return f"address {addr:#x} (no buffer)"


def precompile(programs: list[tuple[Emulator, KernelProgram]], workers: int) -> int:
    """Compile the programs a batch will run that are in no cache yet, in ``workers``
    processes side by side (forked: they inherit the prepared programs and the helper
    functions compiled here), into the disk cache, where the launches find them.  The
    largest compiles first, here, so the helper functions most kernels call are compiled
    before the fork, once.  Errors are left to the launches, which report them.  Returns
    the number of processes forked."""
    import os
    import threading

    from .jit import cache_dir, in_cache, jit_policy

    try:
        policy = jit_policy()
    except ValueError:
        return 0
    tier = "baseline" if policy == "auto" else policy
    todo: dict[str, tuple[Emulator, KernelProgram]] = {}
    for emu, prog in programs:
        if prog.key not in todo and not in_cache(prog.key, tier) and not (policy == "auto" and in_cache(prog.key, "optimized")):
            todo[prog.key] = (emu, prog)
    if workers < 2 or len(todo) < 3 or cache_dir() is None or threading.active_count() > 1 or not hasattr(os, "fork"):
        return 0
    order = sorted(todo.values(), key=lambda ep: -len(ep[1].instructions))

    def build(share) -> None:
        for emu, prog in share:
            try:
                emu._compile(prog)
            except Exception:  # noqa: BLE001 -- the launch meets it again and reports it
                pass

    build(order[:1])
    shares: list[list] = [[] for _ in range(min(workers, len(order) - 1))]
    loads = [0] * len(shares)
    for ep in order[1:]:  # longest first, to the least loaded share
        k = loads.index(min(loads))
        shares[k].append(ep)
        loads[k] += len(ep[1].instructions) + 50
    import json

    from . import phases

    before = phases.work()
    children = []
    for share in shares[1:]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a worker: compile its share into the disk cache, report the work, leave
            try:
                os.close(r)
                build(share)
                done = {k: n - before.get(k, 0) for k, n in phases.work().items() if n != before.get(k, 0)}
                os.write(w, json.dumps(done).encode())
            finally:
                os._exit(0)
        os.close(w)
        children.append((pid, r))
    build(shares[0])
    with phase("compile"):
        for pid, r in children:
            with os.fdopen(r, "rb") as f:
                data = f.read()
            os.waitpid(pid, 0)
            try:
                for what, n in json.loads(data or b"{}").items():
                    phases.count(what, n)
            except ValueError:
                pass
    return len(children)


def _describe_offset(prog: KernelProgram, space: str, addr: int) -> str:
    """An out-of-bounds offset into the local, parameter or constant space."""
    name, size, whose = {"local": ("local memory", prog.local_bytes, "each thread has"),
                         "param": ("parameter memory", prog.param_bytes, "of the kernel's parameters"),
                         "const": ("constant memory", prog.const_bytes, "of constant variables")}[space]
    if space == "param" and prog.call_param_bytes:
        whose += f" ({prog.call_param_bytes} of call parameters)"
    if addr >= 1 << 63:
        return f"{name} offset -{(1 << 64) - addr:#x}, before the {size} bytes {whose}"
    return f"{name} offset {addr:#x}, beyond the {size} bytes {whose}"


def _variable_bytes(launch: Launch, buffers: dict[str, np.ndarray], name: str, var) -> np.ndarray:
    """A variable's starting bytes from the launch (``Launch.variables``)."""
    v = launch.variables[name]
    raw = bytes(v) if isinstance(v, (bytes, bytearray)) else buffers[v].tobytes()
    out = np.zeros(max(var.size, 1), np.uint8)
    n = min(var.size, len(raw))
    out[:n] = np.frombuffer(raw[:n], np.uint8)
    return out


def _nearest_allocation(memory, addr: int) -> str:
    """Where ``addr`` lies relative to the program's allocations, for an error message."""
    if addr == 0:
        return "a null pointer"
    best = None
    for a in memory:
        d = addr - (a.start + a.size) if addr >= a.start else a.start - addr
        if best is None or d < best[0]:
            best = (d, a)
    if best is None:
        return "outside every allocation: the program has none"
    d, a = best
    where = f"{d} bytes past the end of" if addr >= a.start else f"{d} bytes before"
    return f"outside every allocation; {where} the {a.size}-byte {a.kind} allocation at {a.start:#x}"


def _assertion_text(prog: KernelProgram, call: InstructionOp) -> str | None:
    """``file:line: function: Assertion `expr` failed.`` from the constant strings
    ``__assertfail`` is called with (CUDA's layout: message, file, line, function),
    found by following each argument's ``st.param`` back to the variable it points to."""
    from hypa.passes.inline import call_params
    from hypa.ptxdialect.operands import iter_syms

    _rets, argv = call_params(call)
    if len(argv) < 4 or call.parent is None:
        return None
    stored: dict[str, object] = {}
    for op in call.parent.ops:
        if op is call:
            break
        if isinstance(op, InstructionOp) and op.spec.name == "st" and ".param" in op.modifiers:
            for name in iter_syms(op.operands_ast[0]):
                stored[name] = op.operands[-1] if op.operands else op.operands_ast[-1]

    def string_of(v, depth=0) -> str | None:
        if depth > 4 or v is None or isinstance(v, tuple) or not hasattr(v, "owner"):
            return None
        d = v.owner
        if not isinstance(d, InstructionOp):
            return None
        for name in iter_syms(d.operands_ast[-1]):
            var = prog.global_vars.get(name) or prog.const_vars.get(name)
            if var is not None and var.init:
                raw = bytes(initial_bytes(var.size, var.init, var.ptx_type))
                return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        return string_of(d.operands[-1], depth + 1) if d.operands else None

    def line_of(v) -> str | None:
        if isinstance(v, tuple) and v[:1] == ("imm",):
            return str(v[1])
        return None

    msg, file, func = (string_of(stored.get(argv[i])) for i in (0, 1, 3))
    line = line_of(stored.get(argv[2]))
    if msg is None:
        return None
    where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
    return f"{where}{func + ': ' if func else ''}Assertion `{msg}` failed."


def _text(op: InstructionOp) -> str:
    from hypa.ptxdialect.printer import instruction_text

    return instruction_text(op)


def _symbol_addresses(prog: KernelProgram, functions: dict[str, int]) -> dict[str, int]:
    """The generic addresses of the module's ``.global`` and ``.const`` variables,
    as the emulated code sees them (for initializers such as ``generic(counter)``), and of
    its functions: every function of the module (``functions``:
    ``Emulator._function_addresses``), not only those the kernel reaches (under ``hypa run`` a
    variable's bytes are made once, by the first kernel that names it, and a table of pointers
    such as a C++ vtable is read by later kernels that call through it)."""
    out = {name: (abi.WIN_FIRST_GLOBAL + k) << abi.WINDOW_SHIFT for k, name in enumerate(prog.global_vars)}
    for name, var in prog.const_vars.items():
        out[name] = (abi.WIN_CONST << abi.WINDOW_SHIFT) | var.offset
    for name in prog.functions:  # a table of function pointers
        out.setdefault(name, abi.function_address(name))
    for name, address in functions.items():
        out.setdefault(name, address)
    return out


_ADDRESS_INIT = re.compile(r"(?:generic\(\s*)?([A-Za-z_$%][\w$]*)\s*\)?\s*(?:\+\s*(\d+))?")


def initial_bytes(size: int, init: str | None, ptx_type: str, symbols: dict[str, int] | None = None) -> np.ndarray:
    """Bytes of a variable with an initializer like ``{1, 2, 3}`` (integers or
    floats) or ``{generic(x), y+8}`` (addresses of variables in ``symbols``)."""
    out = np.zeros(max(size, 1), np.uint8)
    if not init:
        return out
    from hypa.runtime.emulator.lowering import float_imm_bits

    toks = [t.strip() for t in re.split(r"[,{}]", init) if t.strip()]
    esize = max(1, isa.TYPE_BITS.get(ptx_type, 8) // 8)
    pos = 0
    for t in toks:
        if pos + esize > size:
            break
        m = _ADDRESS_INIT.fullmatch(t)
        if m and symbols is not None and m.group(1) in symbols:
            v = (symbols[m.group(1)] + int(m.group(2) or 0)) & ((1 << (8 * esize)) - 1)
            out[pos : pos + esize] = np.frombuffer(int(v).to_bytes(esize, "little"), np.uint8)
            pos += esize
            continue
        try:
            if ptx_type in (".f32", ".f64") or t.lower().startswith(("0f", "0d")) or "." in t:
                v = float_imm_bits(t, esize * 8, "f64" if esize == 8 else "f32")
            else:
                from hypa.ptxdialect.operands import parse_int_immediate

                v = parse_int_immediate(t) & ((1 << (8 * esize)) - 1)
        except (ValueError, IndexError):
            v = 0
        out[pos : pos + esize] = np.frombuffer(int(v).to_bytes(esize, "little"), np.uint8)
        pos += esize
    return out


def emulate(ptx_text: str, launch: Launch, mode: str = "slice", **kw) -> LaunchResult:
    """Parse PTX text and emulate one launch (convenience for the Python API)."""
    from hypa.ptxdialect import parse_ptx

    return Emulator(parse_ptx(ptx_text), mode=mode, **kw).run(launch)


__all__ = ["Emulator", "EmulationError", "LaunchResult", "emulate", "ProgramError"]


def _cta_and_thread(launch: Launch, cta_lin: int, warp: int, lane: int) -> tuple[tuple, tuple]:
    """(CTA, thread) coordinates of a linear CTA id and a warp's lane, as CUDA numbers them."""
    gx, gy = launch.grid[0], launch.grid[1]
    t = warp * abi.LANES + lane
    bx, by = launch.block[0], launch.block[1]
    return (cta_lin % gx, (cta_lin // gx) % gy, cta_lin // (gx * gy)), (t % bx, (t // bx) % by, t // (bx * by))
