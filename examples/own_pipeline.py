#!/usr/bin/env python3
"""hypa's passes inside an xDSL pass pipeline of one's own, with a pass of one's own.

    python examples/own_pipeline.py examples/spmv_csr.ptx

Builds the pipeline ``ptx-to-ssa`` -> ``slice-branches`` -> ``count-loads`` (below: a
ModulePass with a rewrite pattern, counting the loads each kernel's branch slice needs) ->
``ptx-out-of-ssa``, and prints what the pass found (stderr) and the PTX that comes out
(stdout; ptxas accepts it).  docs/api.md shows the rest of the Python API.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from hypa.passes import get_all_passes
from hypa.passes.slice import SLICE_ATTR
from hypa.ptxdialect import InstructionOp, module_to_ptx, parse_ptx_file
from hypa.ptxdialect.dialect import FuncOp


@dataclass
class CountSliceLoads(RewritePattern):
    """Per function: loads from memory that the branch slice keeps (what slice mode must emulate)."""

    found: dict[str, int] = field(default_factory=dict)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: InstructionOp, rewriter: PatternRewriter) -> None:
        if op.opcode.startswith("ld.") and SLICE_ATTR in op.attributes:
            func = op.parent_op()
            while func is not None and not isinstance(func, FuncOp):
                func = func.parent_op()
            name = func.func_name if func is not None else "?"
            self.found[name] = self.found.get(name, 0) + 1


@dataclass(frozen=True)
class CountLoads(ModulePass):
    name = "count-loads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = CountSliceLoads({f.func_name: 0 for f in op.ops if isinstance(f, FuncOp) and not f.is_declaration})
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        for func, n in sorted(pattern.found.items()):
            print(f"count-loads: {func}: {n} load(s) decide control flow", file=sys.stderr)


def main(path: str) -> None:
    passes = {name: load() for name, load in get_all_passes().items()}  # name -> ModulePass class
    pipeline = PassPipeline((passes["ptx-to-ssa"](), passes["slice-branches"](), CountLoads(),
                             passes["ptx-out-of-ssa"]()))
    module = parse_ptx_file(path)
    ctx = Context()
    pipeline.apply(ctx, module)
    sys.stdout.write(module_to_ptx(module))


if __name__ == "__main__":
    # the bundled kernel beside this script, from whatever directory it is run
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "spmv_csr.ptx"))
