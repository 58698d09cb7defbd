"""Metrics of a launch from per-block execution counters (docs/design.md, "Metrics"): the raw
counter array decoded once (``CounterView``), the counts made of it, and the metrics
runtime/metrics/registry.py declares over those counts.

Every count is derived from the per-block warp and thread execution counts
the emulator collects, times the block's static facts from the ISA table --
the CUDA Flux idea, exact because blocks execute all-or-nothing.  Guarded
instructions use their counted true lanes where the guard was computed, else
the block's thread count (and the result says it is estimated).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import InstructionOp

from .. import abi
from . import registry


@dataclass
class BlockMetrics:
    function: str
    block: int
    name: str
    instructions: int
    warps: int = 0
    threads: int = 0
    divergent: int = 0
    inst_executed: int = 0
    thread_inst_executed: int = 0
    #: threads that took the block's conditional branch (the others fell through)
    taken: int = 0
    #: dynamic counts by full opcode in this block: warp- and thread-level
    opcodes: Counter = field(default_factory=Counter)
    thread_opcodes: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        ops = sorted(self.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "function": self.function, "block": self.name, "index": self.block,
            "instructions": self.instructions, "warp_executions": self.warps,
            "thread_executions": self.threads, "divergent_branches": self.divergent, "branch_taken_threads": self.taken,
            "inst_executed": self.inst_executed, "thread_inst_executed": self.thread_inst_executed,
            "instruction_mix": {k: {"warp": v, "thread": self.thread_opcodes[k]} for k, v in ops if v},
        }


@dataclass
class MemoryInstructionMetrics:
    """One warp-level memory instruction: what it asked of the memory system."""

    instruction: str
    block: str
    space: str
    requests: int
    sectors: int
    lines: int
    wavefronts: int
    ideal_wavefronts: int

    def counts(self) -> dict[str, int]:
        return {"requests": self.requests, "sectors": self.sectors, "lines": self.lines,
                "wavefronts": self.wavefronts, "ideal_wavefronts": self.ideal_wavefronts}

    def value(self, name: str) -> float:
        """A memory metric (runtime/metrics/registry.py ``MEMORY``) of this instruction."""
        return registry.metric(name).value(self.counts())

    def as_dict(self) -> dict:
        return {"instruction": self.instruction, "block": self.block, "space": self.space,
                **registry.memory_values(self.counts(), self.space)}


@dataclass
class Metrics:
    values: dict[str, float]
    blocks: list[BlockMetrics]
    opcodes: Counter = field(default_factory=Counter)
    categories: Counter = field(default_factory=Counter)
    predicates_estimated: bool = False
    thread_opcodes: Counter = field(default_factory=Counter)
    thread_categories: Counter = field(default_factory=Counter)
    memory: dict | None = None
    memory_instructions: list[MemoryInstructionMetrics] = field(default_factory=list)
    #: the category (isa.CATEGORIES) of every opcode counted
    opcode_categories: dict[str, str] = field(default_factory=dict)
    #: warp-instructions per warp slot of a CTA (warp 0, 1 ...), summed over the CTAs
    warp_slots: list[int] = field(default_factory=list)

    def instruction_mix(self, top: int | None = None) -> dict:
        """Dynamic instruction mix: warp- and thread-level counts by full opcode and by category."""
        ops = sorted(self.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))
        if top is not None:
            ops = ops[:top]
        return {
            "opcodes": {k: {"warp": v, "thread": self.thread_opcodes[k]} for k, v in ops},
            "categories": {k: {"warp": self.categories[k], "thread": self.thread_categories[k]}
                           for k in isa.CATEGORIES if self.categories[k]},
        }

    # a read-only mapping of metric name -> value (``dict(r.metrics)``, ``sorted(r.metrics)``);
    # the ``values`` field is that dict itself
    def __getitem__(self, k: str) -> float:
        return self.values[k]

    def __iter__(self):
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, k: object) -> bool:
        return k in self.values

    def keys(self):
        return self.values.keys()

    def items(self):
        return self.values.items()

    def get(self, k: str, default=None):
        return self.values.get(k, default)


class MemoryCounts(NamedTuple):
    """One memory instruction's counters (``--memory-metrics``), summed over its executions."""

    requests: int
    sectors: int
    lines: int
    wavefronts: int
    ideal_wavefronts: int


class CounterView:
    """A launch's raw counter array (or one CTA's row) decoded once by the program's layout
    (runtime/abi.py): the only reader of the counter offsets besides the lowering that writes
    them.  Per block: ``warps``, ``threads``, ``divergent``, ``taken``; per guarded instruction
    its true lanes; per memory instruction its ``MemoryCounts``; the warp slots; the call depths."""

    def __init__(self, prog: "KernelProgram", counters) -> None:
        self.prog = prog
        self.counters = counters
        nb = prog.num_blocks
        per_block = np.asarray(counters[: abi.BLOCK_COUNTERS * nb], dtype=np.int64).reshape(nb, abi.BLOCK_COUNTERS)
        self.warps, self.threads, self.divergent, self.taken = per_block.T.tolist()
        self._guards = abi.BLOCK_COUNTERS * nb
        self._memory = self._guards + len(prog.pred_counters)

    def lanes_true(self, op: InstructionOp) -> int | None:
        """Lanes whose guard was true, summed over the executions of ``op``; None where the
        guard was not counted."""
        k = self.prog.pred_counters.get(op)
        return None if k is None else int(self.counters[self._guards + k])

    def memory(self, slot: int) -> MemoryCounts:
        base = self._memory + abi.MEM_COUNTERS * slot
        return MemoryCounts(*(int(x) for x in self.counters[base : base + abi.MEM_COUNTERS]))

    def memory_ops(self):
        """(instruction, its counts) of every memory instruction the launch counted."""
        return ((op, self.memory(slot)) for op, slot in self.prog.mem_ops.items())

    @property
    def warp_slots(self) -> list[int]:
        """Warp-instructions per warp slot of a CTA (empty where the array has none)."""
        base = self.prog.warp_counter_base
        if len(self.counters) < base + abi.WARP_SLOTS:
            return []
        return [int(x) for x in self.counters[base : base + abi.WARP_SLOTS]]

    @property
    def call_depths(self) -> list[int]:
        """Warp-level real calls that entered each depth (empty without real calls)."""
        if not self.prog.real_calls:
            return []
        base = self.prog.call_counter_base
        return [int(c) for c in self.counters[base : base + abi.CALL_DEPTH_COUNTERS]]


def compute(prog: "KernelProgram", counters, static_instructions: int, threads: int, block_names: dict) -> Metrics:
    """The metrics of a launch (or a CTA) from its raw counters."""
    view = CounterView(prog, counters)
    inst = thread_inst = npo = 0
    emulated_thread_inst = 0
    flops = Counter()
    branch = divergent = 0
    estimated = False
    opcodes: Counter = Counter()
    categories: Counter = Counter()
    thread_opcodes: Counter = Counter()
    thread_categories: Counter = Counter()
    opcode_categories: dict[str, str] = {}
    per_origin: dict[tuple[str, int], BlockMetrics] = {}
    for bi in range(prog.num_blocks):
        warps, thr, div = view.warps[bi], view.threads[bi], view.divergent[bi]
        instrs = prog.block_instrs[bi]
        n = len(instrs)
        inst += warps * n
        thread_inst += thr * n
        emulated_thread_inst += thr * sum(1 for op in instrs if op in prog.reported)
        for op in instrs:
            lanes_true = thr
            if op.guard_pred is not None and not op.spec.terminator:
                counted = view.lanes_true(op)
                if counted is not None:
                    lanes_true = counted
                else:
                    estimated = True
            npo += lanes_true
            counter, weight = isa.flop_weights(op.spec, op.modifiers)
            if counter:
                flops[counter] += weight * lanes_true
            if warps:
                cat = isa.category(op.spec, op.modifiers)
                opcodes[op.opcode] += warps
                opcode_categories[op.opcode] = cat
                categories[cat] += warps
                thread_opcodes[op.opcode] += thr
                thread_categories[cat] += thr
        term = prog.cfg.blocks[bi].last_op
        if isinstance(term, InstructionOp) and term.spec.name in ("bra", "brx.idx"):
            branch += warps
            divergent += div
        func, obi, piece = prog.origins[bi]
        key = (func, obi)
        bm = per_origin.get(key)
        if bm is None:
            bm = per_origin[key] = BlockMetrics(func, obi, block_names.get(key, f"bb{obi}"), 0)
        bm.instructions += n
        if piece == 0:
            bm.warps += warps
            bm.threads += thr
        bm.divergent += div
        bm.taken += view.taken[bi]
        bm.inst_executed += warps * n
        bm.thread_inst_executed += thr * n
        if warps:
            for op in instrs:
                bm.opcodes[op.opcode] += warps
                bm.thread_opcodes[op.opcode] += thr
    counts = {
        "static_instructions": static_instructions, "static_estimate": static_instructions * threads,
        "inst_executed": inst, "thread_inst_executed": thread_inst, "not_predicated_off_thread_inst_executed": npo,
        "flop_count_sp": flops["sp"], "flop_count_dp": flops["dp"], "flop_count_hp": flops["hp"],
        "flop_count_special": flops["special"], "branch": branch, "divergent_branch": divergent,
        "emulated_thread_inst_executed": emulated_thread_inst,
    }
    depths = view.call_depths
    if depths:
        counts["calls"] = sum(depths)
        counts["max_call_depth"] = max((d for d, c in enumerate(depths) if c), default=0)
    blocks = sorted(per_origin.values(), key=lambda m: (m.function != prog.func.func_name, m.function, m.block))
    mem_list, mem_totals = _memory(prog, view)
    slots = view.warp_slots
    while slots and slots[-1] == 0:
        slots.pop()
    return Metrics(registry.launch_values(counts), blocks, opcodes, categories, estimated, thread_opcodes,
                   thread_categories, mem_totals, mem_list, opcode_categories, slots)


def _memory(prog: "KernelProgram", view: CounterView) -> tuple[list[MemoryInstructionMetrics], dict | None]:
    if not prog.mem_ops:
        return [], None
    from hypa.ptxdialect.printer import instruction_text

    out: list[MemoryInstructionMetrics] = []
    tot = Counter()
    for op, c in view.memory_ops():
        kind = memory_space(op, c)
        bi = prog.cfg.index[op.parent]
        mi = MemoryInstructionMetrics(instruction_text(op), prog.cfg.name(bi), kind, *c)
        out.append(mi)
        reads, writes = _rw(op)
        d = "ld" if reads and not writes else ("st" if writes and not reads else "atom")
        for m in registry.MEMORY:
            if m.reported and m.kind == registry.COUNT and registry.in_space(m, kind):
                tot[f"{kind}_{d}_{m.name}"] += mi.value(m.name)
    totals: dict = dict(sorted(tot.items()))
    for kind in ("global", "shared", "local"):
        for d in ("ld", "st", "atom"):
            prefix = f"{kind}_{d}_"
            if not totals.get(prefix + "requests"):
                continue
            sums = {k[len(prefix):]: v for k, v in totals.items() if k.startswith(prefix)}
            for m in registry.MEMORY:
                if m.kind == registry.RATIO and m.reported and registry.in_space(m, kind):
                    totals[prefix + m.name] = m.value(sums)
    return out, totals


def memory_space(op: InstructionOp, c: MemoryCounts) -> str:
    """"global", "shared" or "local": where a memory instruction's requests went (a generic
    address: shared where it counted wavefronts)."""
    sp = isa.state_space(op.spec, op.modifiers) or "generic"
    if op.spec.name == "cp.async":
        sp = "global"
    if sp == "local":
        return "local"
    return "shared" if (sp.startswith("shared") or (sp == "generic" and c.wavefronts)) else "global"


def _rw(op: InstructionOp) -> tuple[bool, bool]:
    from hypa.passes.slice import memory_effect

    if op.spec.name == "cp.async":
        return True, False
    return memory_effect(op)
