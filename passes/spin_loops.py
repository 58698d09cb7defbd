"""Spin loops: the loops where ``ptxas`` puts a ``YIELD``, which lets waiting lanes go on.

On Volta and later a divergent branch is compiled to a convergence barrier
(SASS ``BSSY`` before the branch, ``BSYNC`` at the immediate post-dominator).
Inside a loop that may wait on other threads ``ptxas`` also puts a ``YIELD``;
a thread that executes it counts as arrived at every convergence barrier it
belongs to, so lanes already waiting at the ``BSYNC`` are released and run
the code after it without the looping lanes, which later run it on their own
(NVIDIA's patent US 10,067,768, claim 1: the barrier clears when every
participating thread is blocked *or yielded*).  The GPU then executes the
blocks after the join once per group: on an H100, ``atomic_cas#2`` runs its
``ret`` block 13 times for 12 warps (tests/ground_truth/h100/counts.json).

Which loops get one, read from ``ptxas -arch=sm_90`` (CUDA 13) on small loops
(``benchmarks/gpu/yield_check.py`` compares this rule with the SASS): a loop
gets a ``YIELD`` when one of its exits depends, through registers, on a value
another thread may change while the loop runs: the result of an ``atom``, or
of a strong load (``ld.volatile``, ``.relaxed``, ``.acquire``, ``.mmio``) from
an address that is not the same for every lane (where it is, the loaded
value and so the exit are warp-uniform; a value carried round the loop
counts).  A counted loop with an ``atom`` in it, a branch inside the loop on
an ``atom`` result, a loop whose exit goes through ``vote.sync``, a spin on a
weak ``ld`` (which ``ptxas`` may hoist) and a loop with a ``nanosleep`` (its
own way of letting others run) get none.

PTX for a ``.target`` before ``sm_70`` gets no ``YIELD`` at all
(``independent_thread_scheduling``).

Only the GPU's *instrumented* kernels (``instrument-block-counters``) count
warp-level executions; there every join block has counting code, so
``ptxas`` keeps a convergence barrier for each divergent branch (without it,
lanes whose path ends at ``ret`` may simply ``EXIT``, and no ``YIELD`` is
needed: ``ptxas`` leaves it out).

The release is modelled except where a ``.sync`` cross-lane instruction whose member
mask is not ``activemask``'s follows the loop: it exchanges values between the groups
(SASS ``WARPSYNC``), and where they meet is not modelled; those loops keep the IPDOM
model.  A CTA barrier (``bar.sync``) or ``bar.warp.sync`` after the loop does not stop
the release: the H100 runs the join block once per group there too (probes
``cas_lane0_bar``, ``cas_lane0_syncwarp``, tests/ground_truth/h100/reconverge).
"""

from __future__ import annotations

from xdsl.ir import BlockArgument, OpResult, SSAValue

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import FallthroughOp, InstructionOp, TargetOp

from .cfg import CFG
from .dominance import immediate_dominators
from .loops import Loop, find_loops


def independent_thread_scheduling(module) -> bool:
    """``ptxas`` compiles PTX whose ``.target`` is ``sm_70`` or later for independent thread
    scheduling (convergence barriers, ``YIELD``); older targets keep the pre-Volta
    convergence at the immediate post-dominator, without ``YIELD`` (checked on
    tests/kernels/ptx/atomic_cas.sm_52.ptx: the same CAS loops, no ``YIELD`` for sm_90).
    No ``.target``: as for a current one."""
    for op in module.ops:
        if isinstance(op, TargetOp) and op.arch:
            digits = "".join(c for c in op.arch.split("_", 1)[-1] if c.isdigit())
            return not digits or int(digits) >= 70
    return True


def synchronises_lanes(op: InstructionOp) -> bool:
    """A barrier, ``bar.warp.sync`` or a ``.sync`` cross-lane instruction: it gathers
    the lanes its mask names (SASS ``WARPSYNC``/``BAR``).  One whose member mask is
    ``activemask``'s result (``__ballot_sync(__activemask(), p)``, the counters of
    ``instrument-block-counters``) names only the lanes already running together."""
    spec = op.spec
    if spec.sync == "barrier":
        return True
    if spec.sync != "warp-barrier" and not (spec.lanes == "cross" and (spec.name.endswith(".sync") or ".sync" in op.modifiers)):
        return False
    return not _own_mask(op)


def _own_mask(op: InstructionOp) -> bool:
    """The member mask (last operand) is ``activemask``'s result."""
    mask = op.arg_operands(len(op.operands_ast) - 1) if op.operands_ast else []
    return len(mask) == 1 and isinstance(mask[0], OpResult) and isinstance(mask[0].op, InstructionOp) \
        and mask[0].op.spec.name == "activemask"


def exchanges_values(op: InstructionOp) -> bool:
    """A ``.sync`` cross-lane instruction (shfl, vote, match, redux ...) that gathers lanes
    beyond those running together (its mask is not ``activemask``'s)."""
    spec = op.spec
    return spec.lanes == "cross" and spec.sync != "barrier" and \
        (spec.name.endswith(".sync") or ".sync" in op.modifiers) and not _own_mask(op)


def _incoming(cfg: CFG, arg: BlockArgument) -> list[SSAValue]:
    """The values the predecessors of ``arg``'s block pass for it."""
    block = arg.block
    out: list[SSAValue] = []
    for p in cfg.preds[cfg.index[block]]:
        term = cfg.blocks[p].last_op
        for k, s in enumerate(term.successors):
            if s is not block:
                continue
            if isinstance(term, FallthroughOp):
                vals = list(term.operands)
            elif isinstance(term, InstructionOp):
                vals = list(term.successor_operands(k))
            else:
                vals = []
            if arg.index < len(vals):
                out.append(vals[arg.index])
    return out


def _lane_uniform(value: SSAValue) -> bool:
    """``value`` is the same in every lane of a warp: computed from parameters, constants and
    warp-uniform special registers alone (conservative: block arguments, atomics and
    cross-lane results are not)."""
    seen: set[SSAValue] = set()
    work = [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if not isinstance(v, OpResult) or not isinstance(v.op, InstructionOp):
            return False
        op = v.op
        if op.spec.kind == "atomic" or op.spec.lanes == "cross":
            return False
        if any(a[0] == "sreg" and a[1] in isa.LANE_VARYING_SPECIAL_REGISTERS for a in op.operands_ast):
            return False
        work.extend(op.instruction_operands())
    return True


def _spin_source(cfg: CFG, op: InstructionOp, uniform_too: bool = False) -> bool:
    """``op``'s result may be changed by another thread while a loop runs: an ``atom``, a
    ``bar.red``, or a strong load from an address that differs between lanes (any address
    with ``uniform_too``)."""
    if op.spec.kind == "atomic" or (op.spec.sync == "barrier" and op.results):
        return True  # an atomic's result, or a CTA barrier's reduction (bar.red)
    if op.spec.transfer == "load" and op.modifier("ordering") in (".volatile", ".relaxed", ".acquire", ".mmio"):
        return uniform_too or not all(_lane_uniform(v) for v in op.instruction_operands())
    return False


def _depends_on_spin_source(cfg: CFG, loop: Loop, value: SSAValue, uniform_too: bool = False) -> bool:
    """``value`` depends, through registers computed in ``loop``, on a spin source in the
    loop (not through a warp-synchronous instruction)."""
    seen: set[SSAValue] = set()
    work = [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if cfg.index.get(v.block) in loop.blocks:
                work.extend(_incoming(cfg, v))
            continue
        if not isinstance(v, OpResult):
            continue
        op = v.op
        if not isinstance(op, InstructionOp) or cfg.index.get(op.parent_block()) not in loop.blocks:
            continue
        if _spin_source(cfg, op, uniform_too):
            return True
        if synchronises_lanes(op):
            continue
        work.extend(op.instruction_operands())
    return False


def is_spin_loop(cfg: CFG, loop: Loop) -> bool:
    """A loop ``ptxas`` gives a ``YIELD`` (see the module's docstring)."""
    ops = [op for b in loop.blocks for op in cfg.blocks[b].ops if isinstance(op, InstructionOp)]
    if any(op.spec.name == "nanosleep" for op in ops) or not any(_spin_source(cfg, op) for op in ops):
        return False
    for b in loop.blocks:
        term = cfg.blocks[b].last_op
        if not isinstance(term, InstructionOp) or term.guard_pred is None:
            continue
        leaves = term.spec.name in ("ret", "exit") or any(s not in loop.blocks for s in cfg.succs[b])
        if leaves and _depends_on_spin_source(cfg, loop, term.operands[0]):
            return True
    return False


def spin_loops(cfg: CFG) -> list[Loop]:
    """The natural loops of ``cfg`` (SSA form) that ``ptxas`` gives a ``YIELD``."""
    n = len(cfg)
    if not n:
        return []
    idom = immediate_dominators(n, 0, cfg.succs)
    return [lp for lp in find_loops(n, 0, cfg.succs, cfg.preds, idom).loops if is_spin_loop(cfg, lp)]


def _reachable(cfg: CFG, start: set[int]) -> set[int]:
    seen = set(start)
    work = list(start)
    while work:
        b = work.pop()
        for s in cfg.succs[b]:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return seen


def waiting_loop_headers(cfg: CFG) -> set[int]:
    """Headers of the loops (SSA form) that wait for another thread: an exit depends on an
    ``atom`` result or a strong load, from any address (cooperative groups' grid barrier
    spins on one word).  Where every warp of a CTA spins in one or waits at a barrier, the
    CTA waits for another (a cooperative launch runs another CTA meanwhile)."""
    n = len(cfg)
    if not n:
        return set()
    idom = immediate_dominators(n, 0, cfg.succs)
    out: set[int] = set()
    for loop in find_loops(n, 0, cfg.succs, cfg.preds, idom).loops:
        for b in loop.blocks:
            term = cfg.blocks[b].last_op
            if not isinstance(term, InstructionOp) or term.guard_pred is None:
                continue
            leaves = term.spec.name in ("ret", "exit") or any(s not in loop.blocks for s in cfg.succs[b])
            if leaves and _depends_on_spin_source(cfg, loop, term.operands[0], uniform_too=True):
                out.add(loop.header)
                break
    return out


def yield_headers(cfg: CFG) -> set[int]:
    """Headers of the spin loops (SSA form) whose ``YIELD`` releases waiting lanes: a
    warp fragment that runs one leaves every reconvergence point it was waiting for
    (docs/design.md, "Execution model").  Spin loops followed by an instruction that
    exchanges values between lanes are left out (see the module's docstring)."""
    out: set[int] = set()
    for loop in spin_loops(cfg):
        after = _reachable(cfg, set(loop.blocks))
        if any(isinstance(op, InstructionOp) and exchanges_values(op) for b in after for op in cfg.blocks[b].ops):
            continue
        out.add(loop.header)
    return out
