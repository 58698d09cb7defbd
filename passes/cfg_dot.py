"""``print-cfg-dot``: each function's CFG as Graphviz, in the spirit of LLVM's ``-dot-cfg``.

Blocks are boxes listing their instructions; slice members are bold red; a
guarded branch's taken edge is solid and its fall-through dashed.  When the
emulator has attached execution counts (``hypa.exec`` on terminators: warp
and thread executions, divergent branches) blocks are shaded by thread count
and divergent branches are marked.  Files are written as
``<output-dir>/cfg.<function>.dot`` (``output-dir=-`` writes to stderr).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, IntAttr, ModuleOp
from xdsl.passes import ModulePass

from hypa.ptxdialect.dialect import FuncOp, InstructionOp
from hypa.ptxdialect.printer import instruction_text

from .cfg import CFG
from .slice import SLICE_ATTR


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _exec_counts(term) -> dict[str, int]:
    a = term.attributes.get("hypa.exec") if term is not None else None
    if isinstance(a, DictionaryAttr):
        return {k: v.data for k, v in a.data.items() if isinstance(v, IntAttr)}
    return {}


def function_dot(func: FuncOp, max_instructions: int = 40) -> str:
    cfg = CFG.of(func)
    counts = [_exec_counts(b.last_op) for b in cfg.blocks]
    top = max((c.get("threads", 0) for c in counts), default=0)
    lines = [
        f'digraph "cfg.{func.func_name}" {{',
        f'  label="CFG for \'{func.func_name}\'";',
        "  node [shape=plaintext, fontname=monospace, fontsize=10];",
    ]
    for i, block in enumerate(cfg.blocks):
        rows = []
        instrs = [op for op in block.ops if isinstance(op, InstructionOp)]
        for op in instrs[:max_instructions]:
            text = _esc(instruction_text(op))
            if SLICE_ATTR in op.attributes:
                text = f'<font color="red"><b>{text}</b></font>'
            rows.append(f'<tr><td align="left">{text}</td></tr>')
        if len(instrs) > max_instructions:
            rows.append(f'<tr><td align="left">... {len(instrs) - max_instructions} more</td></tr>')
        c = counts[i]
        head = _esc(cfg.name(i))
        fill = "white"
        if c:
            head += f" | warps {c.get('warps', 0)} threads {c.get('threads', 0)}"
            if c.get("divergent", 0):
                head += f" | divergent {c['divergent']}"
            if top:
                shade = int(255 - 120 * c.get("threads", 0) / top)
                fill = f"#ff{shade:02x}{shade:02x}"
        border = ' color="red"' if c.get("divergent", 0) else ""
        lines.append(
            f'  b{i} [label=<<table border="1" cellborder="0" bgcolor="{fill}"{border}>'
            f'<tr><td align="left"><b>{head}</b></td></tr>{"".join(rows)}</table>>];'
        )
    for i, block in enumerate(cfg.blocks):
        term = block.last_op
        guarded = isinstance(term, InstructionOp) and term.guard_pred is not None
        c = counts[i]
        for k, s in enumerate(cfg.succs[i]):
            fall = guarded and k == len(cfg.succs[i]) - 1
            label = ("F" if fall else "T") if guarded else ""
            if c and guarded and "taken" in c:  # threads along the edge (execution counts attached)
                label += f" {c.get('threads', 0) - c['taken'] if fall else c['taken']}"
            elif c and len(cfg.succs[i]) == 1:
                label = str(c.get("threads", 0))
            attrs = (["style=dashed"] if fall else []) + ([f'label="{label.strip()}"'] if label.strip() else [])
            lines.append(f"  b{i} -> b{s}{' [' + ', '.join(attrs) + ']' if attrs else ''};")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PrintCFGDot(ModulePass):
    """Write each function's CFG as a Graphviz file."""

    name = "print-cfg-dot"

    output_dir: str = "."

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, FuncOp) and not f.is_declaration:
                text = function_dot(f)
                if self.output_dir == "-":
                    sys.stderr.write(text)
                else:
                    os.makedirs(self.output_dir, exist_ok=True)
                    with open(os.path.join(self.output_dir, f"cfg.{f.func_name}.dot"), "w") as fh:
                        fh.write(text)
