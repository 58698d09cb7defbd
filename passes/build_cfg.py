"""``ptx-build-cfg``: check and annotate the control-flow graph of every function.

The front end already builds the CFG (blocks split at labels and after every
terminator, fall-through edges explicit).  This pass verifies it, reports
unreachable blocks and irreducible control flow as warnings (on stderr, and
as attributes, so nothing is silently dropped), and annotates each block's
terminator with what later stages need:

* ``hypa.block``  -- the block's stable name (label, else ``bb<index>``);
* ``hypa.idom`` / ``hypa.ipdom`` -- immediate dominator / post-dominator
  (``"exit"`` for the virtual exit; the emulator reconverges there);
* ``hypa.loop_header`` -- loop depth, on headers of natural loops;
* ``hypa.unreachable`` -- on blocks no path from the entry reaches.

The function gets ``hypa.irreducible`` (the retreating edges) when a cycle has
several entries.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect.dialect import FuncOp

from .cfg import CFG
from .dominance import VIRTUAL_EXIT, immediate_dominators, immediate_post_dominators
from .loops import LoopInfo, find_loops


@dataclass
class CFGInfo:
    cfg: CFG
    idom: list[int | None]
    ipdom: list[int]
    loops: LoopInfo
    unreachable: list[int]


def analyze(func: FuncOp) -> CFGInfo:
    cfg = CFG.of(func)
    for i, b in enumerate(cfg.blocks):
        if b.last_op is None:
            raise DiagnosticException(f"{func.func_name}: block {cfg.name(i)} has no terminator")
    n = len(cfg)
    idom = immediate_dominators(n, 0, cfg.succs)
    ipdom = immediate_post_dominators(n, cfg.succs, cfg.exits)
    loops = find_loops(n, 0, cfg.succs, cfg.preds, idom)
    return CFGInfo(cfg, idom, ipdom, loops, cfg.unreachable_blocks())


def annotate(func: FuncOp, info: CFGInfo) -> list[str]:
    """Attach the analysis to the IR; return warnings."""
    cfg = info.cfg
    warnings: list[str] = []
    headers = {lp.header: lp.depth for lp in info.loops.loops}
    unreachable = set(info.unreachable)
    for i, block in enumerate(cfg.blocks):
        term = block.last_op
        assert term is not None
        term.attributes["hypa.block"] = StringAttr(cfg.name(i))
        d = info.idom[i]
        if d is not None:
            term.attributes["hypa.idom"] = StringAttr(cfg.name(d))
        p = info.ipdom[i]
        term.attributes["hypa.ipdom"] = StringAttr("exit" if p == VIRTUAL_EXIT else cfg.name(p))
        if i in headers:
            term.attributes["hypa.loop_header"] = IntAttr(headers[i])
        if i in unreachable:
            term.attributes["hypa.unreachable"] = UnitAttr()
            warnings.append(f"{func.func_name}: warning: block {cfg.name(i)} is unreachable")
    if info.loops.irreducible_edges:
        edges = [f"{cfg.name(u)}->{cfg.name(h)}" for u, h in info.loops.irreducible_edges]
        func.attributes["hypa.irreducible"] = ArrayAttr([StringAttr(e) for e in edges])
        warnings.append(f"{func.func_name}: warning: irreducible control flow (cycle entered by {', '.join(edges)})")
    return warnings


@dataclass(frozen=True)
class BuildCFG(ModulePass):
    """Verify and annotate control flow: dominators, post-dominators, loops."""

    name = "ptx-build-cfg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, FuncOp) and not f.is_declaration:
                for w in annotate(f, analyze(f)):
                    print(w, file=sys.stderr)
