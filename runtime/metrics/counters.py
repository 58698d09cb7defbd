"""Metrics of a launch from per-block execution counters (docs/design.md, "Metrics").

Every count is derived from the per-block warp and thread execution counts
the emulator collects, times the block's static facts from the ISA table --
the CUDA Flux idea, exact because blocks execute all-or-nothing.  Guarded
instructions use their counted true lanes where the guard was computed, else
the block's thread count (and the result says it is estimated).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import InstructionOp

from .. import abi

METRIC_NAMES = (
    "static_instructions", "static_estimate", "inst_executed", "thread_inst_executed",
    "not_predicated_off_thread_inst_executed", "flop_count_sp", "flop_count_dp", "flop_count_hp",
    "flop_count_special", "branch", "divergent_branch", "branch_efficiency", "executed_fraction",
)


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

    def as_dict(self) -> dict:
        d = {"instruction": self.instruction, "block": self.block, "space": self.space, "requests": self.requests}
        if self.space == "shared":
            d["wavefronts"] = self.wavefronts
            d["bank_conflicts"] = self.wavefronts - self.ideal_wavefronts
        else:
            d["sectors"] = self.sectors
            d["lines"] = self.lines
            d["sectors_per_request"] = self.sectors / self.requests if self.requests else 0.0
        return d


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


def compute(prog: "KernelProgram", counters, static_instructions: int, threads: int, block_names: dict) -> Metrics:
    nb = prog.num_blocks
    vals: dict[str, float] = {}
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
    for bi in range(nb):
        warps = int(counters[abi.BLOCK_COUNTERS * bi])
        thr = int(counters[abi.BLOCK_COUNTERS * bi + 1])
        div = int(counters[abi.BLOCK_COUNTERS * bi + 2])
        instrs = prog.block_instrs[bi]
        n = len(instrs)
        inst += warps * n
        thread_inst += thr * n
        emulated_thread_inst += thr * sum(1 for op in instrs if op in prog.reported)
        for op in instrs:
            lanes_true = thr
            if op.guard_pred is not None and not op.spec.terminator:
                k = prog.pred_counters.get(op)
                if k is not None:
                    lanes_true = int(counters[abi.BLOCK_COUNTERS * nb + k])
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
        bm.taken += int(counters[abi.BLOCK_COUNTERS * bi + 3])
        bm.inst_executed += warps * n
        bm.thread_inst_executed += thr * n
        if warps:
            for op in instrs:
                bm.opcodes[op.opcode] += warps
                bm.thread_opcodes[op.opcode] += thr
    vals["static_instructions"] = static_instructions
    vals["static_estimate"] = static_instructions * threads
    vals["inst_executed"] = inst
    vals["thread_inst_executed"] = thread_inst
    vals["not_predicated_off_thread_inst_executed"] = npo
    vals["flop_count_sp"] = flops["sp"]
    vals["flop_count_dp"] = flops["dp"]
    vals["flop_count_hp"] = flops["hp"]
    vals["flop_count_special"] = flops["special"]
    vals["branch"] = branch
    vals["divergent_branch"] = divergent
    vals["branch_efficiency"] = 100.0 * (branch - divergent) / branch if branch else 100.0
    vals["executed_fraction"] = emulated_thread_inst / thread_inst if thread_inst else 0.0
    if prog.real_calls:
        # real calls (recursion): warp-level calls that entered each depth
        base = prog.call_counter_base
        depths = [int(c) for c in counters[base : base + abi.CALL_DEPTH_COUNTERS]]
        vals["calls"] = sum(depths)
        vals["max_call_depth"] = max((d for d, c in enumerate(depths) if c), default=0)
    blocks = sorted(per_origin.values(), key=lambda m: (m.function != prog.func.func_name, m.function, m.block))
    mem_list, mem_totals = _memory(prog, counters)
    base = prog.warp_counter_base
    slots = [int(x) for x in counters[base : base + abi.WARP_SLOTS]] if len(counters) >= base + abi.WARP_SLOTS else []
    while slots and slots[-1] == 0:
        slots.pop()
    return Metrics(vals, blocks, opcodes, categories, estimated, thread_opcodes, thread_categories,
                   mem_totals, mem_list, opcode_categories, slots)


def _memory(prog: "KernelProgram", counters) -> tuple[list[MemoryInstructionMetrics], dict | None]:
    if not prog.mem_ops:
        return [], None
    from hypa.ptxdialect.printer import instruction_text

    base = abi.BLOCK_COUNTERS * prog.num_blocks + len(prog.pred_counters)
    out: list[MemoryInstructionMetrics] = []
    tot = Counter()
    for op, slot in prog.mem_ops.items():
        c = [int(counters[base + abi.MEM_COUNTERS * slot + k]) for k in range(abi.MEM_COUNTERS)]
        sp = isa.state_space(op.spec, op.modifiers) or "generic"
        if op.spec.name == "cp.async":
            sp = "global"
        kind = "shared" if (sp.startswith("shared") or (sp == "generic" and c[3])) else "global"
        bi = prog.cfg.index[op.parent]
        out.append(MemoryInstructionMetrics(instruction_text(op), prog.cfg.name(bi), kind, *c))
        reads, writes = _rw(op)
        d = "ld" if reads and not writes else ("st" if writes and not reads else "atom")
        tot[f"{kind}_{d}_requests"] += c[0]
        if kind == "global":
            tot[f"global_{d}_sectors"] += c[1]
            tot[f"global_{d}_lines"] += c[2]
        else:
            tot[f"shared_{d}_wavefronts"] += c[3]
            tot[f"shared_{d}_bank_conflicts"] += c[3] - c[4]
    totals: dict = dict(sorted(tot.items()))
    for d in ("ld", "st", "atom"):
        r = totals.get(f"global_{d}_requests", 0)
        if r:
            totals[f"global_{d}_sectors_per_request"] = totals.get(f"global_{d}_sectors", 0) / r
    return out, totals


def _rw(op: InstructionOp) -> tuple[bool, bool]:
    from hypa.passes.slice import memory_effect

    if op.spec.name == "cp.async":
        return True, False
    return memory_effect(op)
