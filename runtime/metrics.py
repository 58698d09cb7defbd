"""Metrics of a launch from per-block execution counters (DESIGN.md section 5).

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

from . import abi
from .program import KernelProgram

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

    def as_dict(self) -> dict:
        return {
            "function": self.function, "block": self.name, "index": self.block,
            "instructions": self.instructions, "warp_executions": self.warps,
            "thread_executions": self.threads, "divergent_branches": self.divergent,
            "inst_executed": self.inst_executed, "thread_inst_executed": self.thread_inst_executed,
        }


@dataclass
class Metrics:
    values: dict[str, float]
    blocks: list[BlockMetrics]
    opcodes: Counter = field(default_factory=Counter)
    categories: Counter = field(default_factory=Counter)
    predicates_estimated: bool = False

    def __getitem__(self, k: str) -> float:
        return self.values[k]


def compute(prog: KernelProgram, counters, static_instructions: int, threads: int, block_names: dict) -> Metrics:
    nb = prog.num_blocks
    vals: dict[str, float] = {}
    inst = thread_inst = npo = 0
    emulated_thread_inst = 0
    flops = Counter()
    branch = divergent = 0
    estimated = False
    opcodes: Counter = Counter()
    categories: Counter = Counter()
    per_origin: dict[tuple[str, int], BlockMetrics] = {}
    for bi in range(nb):
        warps = int(counters[abi.BLOCK_COUNTERS * bi])
        thr = int(counters[abi.BLOCK_COUNTERS * bi + 1])
        div = int(counters[abi.BLOCK_COUNTERS * bi + 2])
        instrs = prog.block_instrs[bi]
        n = len(instrs)
        inst += warps * n
        thread_inst += thr * n
        emulated_thread_inst += thr * sum(1 for op in instrs if op in prog.emulated)
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
                opcodes[op.opcode] += warps
                categories[isa.category(op.spec, op.modifiers)] += warps
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
        bm.inst_executed += warps * n
        bm.thread_inst_executed += thr * n
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
    blocks = sorted(per_origin.values(), key=lambda m: (m.function != prog.func.func_name, m.function, m.block))
    return Metrics(vals, blocks, opcodes, categories, estimated)
