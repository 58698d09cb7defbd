"""``count-instructions``: static instruction counts per kernel and per block.

Counts come from the ISA table (category, state space, FLOP weight) and are
attached to the IR -- ``hypa.counts`` on each block's terminator and
``hypa.static_counts`` on each function -- so later stages (the emulator's
per-block execution counts) reuse them instead of counting again.  A readable
table or JSON goes to ``output`` (``-``, the default, is stderr, as MLIR's
analysis printers do; the IR still goes to stdout).

Counting walks the IR as it is: it never depends on what a rewrite removed,
because no PTX operation is ``Pure``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntAttr, ModuleOp, f64
from xdsl.ir import Attribute, Block
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import FuncOp, InstructionOp

from .cfg import block_name
from .slice import SLICE_ATTR


@dataclass
class BlockCounts:
    """Static facts about one block; every per-lane figure assumes guards true."""

    name: str
    instructions: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    memory: Counter[str] = field(default_factory=Counter)
    opcodes: Counter[str] = field(default_factory=Counter)
    flops: Counter[str] = field(default_factory=Counter)
    branches: int = 0
    sliced: int = 0

    def add(self, other: "BlockCounts") -> None:
        self.instructions += other.instructions
        self.categories.update(other.categories)
        self.memory.update(other.memory)
        self.opcodes.update(other.opcodes)
        self.flops.update(other.flops)
        self.branches += other.branches
        self.sliced += other.sliced

    def as_dict(self) -> dict:
        return {
            "instructions": self.instructions,
            "categories": {c: self.categories[c] for c in isa.CATEGORIES if self.categories[c]},
            "memory": dict(sorted(self.memory.items())),
            "flops": {k: self.flops[k] for k in ("sp", "dp", "hp", "special") if self.flops[k]},
            "branches": self.branches,
            "sliced": self.sliced,
            "opcodes": dict(sorted(self.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))),
        }


def count_block(block: Block, name: str) -> BlockCounts:
    c = BlockCounts(name)
    for op in block.ops:
        if not isinstance(op, InstructionOp):
            continue
        spec, mods = op.spec, op.modifiers
        c.instructions += 1
        c.categories[isa.category(spec, mods)] += 1
        sp = isa.state_space(spec, mods)
        if sp is not None:
            c.memory[sp] += 1
        c.opcodes[op.opcode] += 1
        counter, weight = isa.flop_weights(spec, mods)
        if counter:
            c.flops[counter] += weight
        if spec.name in ("bra", "brx.idx"):
            c.branches += 1
        if SLICE_ATTR in op.attributes:
            c.sliced += 1
    return c


@dataclass
class FunctionCounts:
    name: str
    kernel: bool
    blocks: list[BlockCounts]
    total: BlockCounts
    sliced: bool

    def as_dict(self) -> dict:
        d = {"function": self.name, "kernel": self.kernel, **self.total.as_dict()}
        d["slice_fraction"] = (self.total.sliced / self.total.instructions if self.total.instructions else 0.0) if self.sliced else None
        d["blocks"] = [{"block": b.name, **b.as_dict()} for b in self.blocks]
        return d


def count_function(func: FuncOp) -> FunctionCounts:
    blocks = [count_block(b, block_name(b, i)) for i, b in enumerate(func.body.blocks)]
    total = BlockCounts(func.func_name)
    for b in blocks:
        total.add(b)
    sliced = "hypa.slice_size" in func.attributes
    return FunctionCounts(func.func_name, func.is_kernel, blocks, total, sliced)


def _attr(c: BlockCounts) -> DictionaryAttr:
    entries: dict[str, Attribute] = {"instructions": IntAttr(c.instructions)}
    for cat in isa.CATEGORIES:
        if c.categories[cat]:
            entries[cat] = IntAttr(c.categories[cat])
    for sp, n in sorted(c.memory.items()):
        entries["mem." + sp] = IntAttr(n)
    for k in ("sp", "dp", "hp", "special"):
        if c.flops[k]:
            entries["flop_" + k] = IntAttr(c.flops[k])
    if c.sliced:
        entries["sliced"] = IntAttr(c.sliced)
    return DictionaryAttr(entries)


def attach(fc: FunctionCounts, func: FuncOp) -> None:
    for b, bc in zip(func.body.blocks, fc.blocks):
        term = b.last_op
        if term is not None:
            term.attributes["hypa.counts"] = _attr(bc)
    func.attributes["hypa.static_counts"] = _attr(fc.total)
    if fc.sliced and fc.total.instructions:
        func.attributes["hypa.slice_fraction"] = FloatAttr(fc.total.sliced / fc.total.instructions, f64)


def format_table(counts: list[FunctionCounts]) -> str:
    lines: list[str] = []
    for fc in counts:
        t = fc.total
        kind = "kernel" if fc.kernel else "function"
        lines.append(f"{kind} {fc.name}: {t.instructions} instructions in {len(fc.blocks)} blocks")
        if fc.sliced:
            frac = t.sliced / t.instructions if t.instructions else 0.0
            lines.append(f"  slice: {t.sliced} instructions ({100 * frac:.1f}%)")
        cats = ", ".join(f"{c} {t.categories[c]}" for c in isa.CATEGORIES if t.categories[c])
        lines.append(f"  categories: {cats}")
        if t.memory:
            lines.append("  memory: " + ", ".join(f"{k} {v}" for k, v in sorted(t.memory.items())))
        fl = ", ".join(f"{k} {t.flops[k]}" for k in ("sp", "dp", "hp", "special") if t.flops[k])
        if fl:
            lines.append(f"  flops per thread (all blocks once): {fl}")
        lines.append(f"  {'block':<24} {'instr':>6} {'slice':>6} {'branch':>6}  categories")
        for b in fc.blocks:
            cats = " ".join(f"{c}={b.categories[c]}" for c in isa.CATEGORIES if b.categories[c])
            lines.append(f"  {b.name:<24} {b.instructions:>6} {b.sliced:>6} {b.branches:>6}  {cats}")
        top = ", ".join(f"{k} {v}" for k, v in sorted(t.opcodes.items(), key=lambda kv: (-kv[1], kv[0]))[:8])
        lines.append(f"  top opcodes: {top}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CountInstructions(ModulePass):
    """Static instruction counts per function and block (table or JSON)."""

    name = "count-instructions"

    format: str = "table"
    output: str = "-"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.format not in ("table", "json", "none"):
            raise DiagnosticException(f"count-instructions: format must be table, json or none, not '{self.format}'")
        counts: list[FunctionCounts] = []
        for f in op.walk():
            if isinstance(f, FuncOp) and not f.is_declaration:
                fc = count_function(f)
                attach(fc, f)
                counts.append(fc)
        if self.format == "none":
            return
        text = format_table(counts) if self.format == "table" else json.dumps([c.as_dict() for c in counts], indent=2) + "\n"
        if self.output == "-":
            sys.stderr.write(text)
        else:
            with open(self.output, "w") as fh:
                fh.write(text)
