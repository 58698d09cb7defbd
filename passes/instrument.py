"""``instrument-block-counters``: rewrite PTX so a GPU counts what the emulator counts.

Every basic block of every function with a body gets, right after its label,
code that adds -- from one elected lane per warp (the lowest lane of
``activemask``) -- 1 to the block's *warp* counter and ``popc(activemask)``
to its *thread* counter.  Right before every conditional branch (a guarded
``bra``, and every ``brx.idx``) the elected lane adds 1 to the branch's
*executed* counter and, when the active lanes do not all go the same way, 1
to its *divergent* counter:

* ``@%p bra`` / ``@!%p bra``: ``vote.sync.ballot.b32`` of the (possibly
  negated) condition over the active mask is neither 0 nor the mask.  A
  branch whose target is also its fall-through block never diverges (the
  emulator's rule); it gets no divergence test.
* ``brx.idx``: the lane's key is its index (or -1 where the guard of a
  guarded ``brx.idx`` is false); the key of the lowest active lane is
  broadcast with ``shfl.sync.idx`` and ``vote.sync.all.pred`` tells whether
  every active lane holds it.  Like the emulator, two indices naming the same
  label count as two ways.

Right before every other guarded instruction (``guards=true``, the default)
the elected lane adds the number of active lanes whose guard is true
(``popc`` of the ballot), and before a guarded ``bra`` the number of lanes
that take it: with those, ``not_predicated_off_thread_inst_executed`` and the
FLOP counts of guarded instructions are exact on the GPU too.

The counters are one ``.visible .global .align 8 .u64 __hypa_counters[K]``
array per module (kernel signatures do not change); the instrumentation uses
registers of its own, declared per function with names no function uses.
Only ``activemask``, ``%lanemask_lt``, ``popc``, ``vote.sync``, ``shfl.sync``
and ``red.global.add.u64`` are used, so the output assembles for every target
from ``sm_30`` (PTX ISA 6.2 or later; an older ``.version`` is raised to 6.2).

Counter slots are described by a ``CounterMap`` (``instrument_module``
returns it; ``output=FILE`` writes it as JSON): per block the function, block
index, block name (``passes.cfg.block_name``, the emulator's naming), its
slots and its static facts (instructions, FLOP weights); per conditional
branch and per guarded instruction its block, its text and its slots.
``CounterMap.metrics`` turns counter values into docs/design.md's metrics.
Blocks are identified by function and *block index*, which the
instrumentation does not change: it adds no labels, branches or blocks, so
the instrumented PTX parses into the same block structure.  Blocks
unreachable from their function's entry get no counters.

    hypa-opt -p 'instrument-block-counters{output="map.json"}' -t ptx k.ptx > k.counted.ptx
    hypa-opt -p 'instrument-block-counters{guards=false}' -t ptx k.ptx
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect.diagnostics import HypaError
from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import (
    INSTRUCTION_OPS,
    AddressSizeOp,
    ArgsAttr,
    FuncOp,
    GuardAttr,
    InstructionOp,
    LabelOp,
    RawDirectiveOp,
    RegDeclOp,
    TargetOp,
    RegNamesAttr,
    VarDeclAttr,
    VarOp,
    VersionOp,
    new_op,
    modifiers_attr,
    string_attr,
)
from hypa.ptxdialect.operands import iter_regs
from hypa.ptxdialect.printer import instruction_text

from .cfg import CFG, block_name

COUNTER_SYMBOL = "__hypa_counters"
MAP_VERSION = 1
MIN_PTX_VERSION = (6, 2)  # activemask


class InstrumentError(HypaError, DiagnosticException):
    """A module ``instrument-block-counters`` cannot instrument."""


@dataclass
class CounterMap:
    """Where each count lives in the counter array (one ``u64`` per slot), and
    the static facts of each instrumented block needed to turn block counts
    into the metrics of docs/guide.md, "Metrics"."""

    symbol: str = COUNTER_SYMBOL
    slots: int = 0
    #: per block: function, index, name, warp_slot, thread_slot, instructions
    #: (PTX instructions in the block), unguarded (those without a guard, plus
    #: guarded terminators), flops ({"sp": weight, ...} of unguarded instructions),
    #: terminator ("bra", "brx.idx", "ret", "exit", "" ...)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    #: per conditional branch: function, block (index), block_name, text, kind
    #: ("bra" or "brx.idx"), executed_slot, divergent_slot, taken_slot (guarded
    #: bra: lanes that branch; else None), same_target
    branches: list[dict[str, Any]] = field(default_factory=list)
    #: per guarded non-terminator instruction: function, block, block_name,
    #: position (among the block's instructions), text, slot (lanes whose guard
    #: is true), flop ([counter, weight] or None)
    guards: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": MAP_VERSION,
            "symbol": self.symbol,
            "slots": self.slots,
            "blocks": self.blocks,
            "branches": self.branches,
            "guards": self.guards,
            "notes": self.notes,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "CounterMap":
        if d.get("version") != MAP_VERSION:
            raise ValueError(f"counter map version {d.get('version')!r}, expected {MAP_VERSION}")
        return CounterMap(d["symbol"], d["slots"], list(d["blocks"]), list(d["branches"]), list(d.get("guards", [])),
                          list(d.get("notes", [])))

    def decode(self, counters) -> dict[str, Any]:
        """Counter values (a sequence of ``slots`` integers) as per-block,
        per-branch and per-guard records."""
        c = [int(x) for x in counters]
        if len(c) < self.slots:
            raise ValueError(f"{len(c)} counters given, the map has {self.slots} slots")
        blocks = [
            {"function": b["function"], "index": b["index"], "name": b["name"],
             "warps": c[b["warp_slot"]], "threads": c[b["thread_slot"]]}
            for b in self.blocks
        ]
        branches = [
            {"function": r["function"], "block": r["block"], "block_name": r["block_name"], "text": r["text"],
             "kind": r["kind"], "executed": c[r["executed_slot"]], "divergent": c[r["divergent_slot"]],
             "taken": None if r.get("taken_slot") is None else c[r["taken_slot"]]}
            for r in self.branches
        ]
        guards = [
            {"function": g["function"], "block": g["block"], "position": g["position"], "text": g["text"],
             "lanes_true": c[g["slot"]]}
            for g in self.guards
        ]
        return {"blocks": blocks, "branches": branches, "guards": guards}

    def metrics(self, counters) -> dict[str, Any]:
        """The docs/guide.md, "Metrics" metrics these counters determine, summed over
        every instrumented function (counters of functions a launch does not
        reach stay 0).  Warp-level figures (``inst_executed``, ``branch``,
        ``divergent_branch``) are what the hardware's scheduling gave;
        thread-level figures do not depend on it.

        ``not_predicated_off_thread_inst_executed`` counts a guarded branch
        for every active lane, as the emulator does;
        ``not_predicated_off_thread_inst_executed_taken`` counts only the lanes
        that take it (docs/design.md's definition for a guarded ``bra``).

        Counts only: their ratios (``branch_efficiency`` ...) are the metric registry's
        (``hypa.runtime.metrics.registry.with_ratios``), computed there as for the emulator."""
        c = [int(x) for x in counters]
        inst = thread_inst = npo = npo_taken = 0
        flops = {"sp": 0, "dp": 0, "hp": 0, "special": 0}
        branch = divergent = 0
        cond_blocks: dict[tuple[str, int], dict[str, Any]] = {(r["function"], r["block"]): r for r in self.branches}
        for b in self.blocks:
            warps, threads = c[b["warp_slot"]], c[b["thread_slot"]]
            n = b["instructions"]
            inst += warps * n
            thread_inst += threads * n
            npo += threads * b["unguarded"]
            npo_taken += threads * b["unguarded"]
            for k, w in b["flops"].items():
                flops[k] += w * threads
            r = cond_blocks.get((b["function"], b["index"]))
            if r is not None:
                branch += c[r["executed_slot"]]
                divergent += c[r["divergent_slot"]]
                if r.get("taken_slot") is not None:
                    npo_taken += c[r["taken_slot"]] - threads
            elif b["terminator"] in ("bra", "brx.idx"):
                branch += warps
        for g in self.guards:
            lanes = c[g["slot"]]
            npo += lanes
            npo_taken += lanes
            if g.get("flop"):
                k, w = g["flop"]
                flops[k] += w * lanes
        return {
            "inst_executed": inst,
            "thread_inst_executed": thread_inst,
            "not_predicated_off_thread_inst_executed": npo,
            "not_predicated_off_thread_inst_executed_taken": npo_taken,
            "flop_count_sp": flops["sp"],
            "flop_count_dp": flops["dp"],
            "flop_count_hp": flops["hp"],
            "flop_count_special": flops["special"],
            "branch": branch,
            "divergent_branch": divergent,
        }


# ---------------------------------------------------------------------------
# Building instructions in register form
# ---------------------------------------------------------------------------


def _reg(name: str) -> tuple:
    return ("reg", name, 0)


def _imm(v: int) -> tuple:
    return ("imm", str(v))


def _instr(opcode: str, *args: tuple, guard: tuple | None = None) -> InstructionOp:
    entry, mods = isa.resolve_opcode(opcode)
    props = {"mods": modifiers_attr("".join(mods)), "args": ArgsAttr.fast(tuple(args))}
    if guard is not None:
        props["guard"] = GuardAttr.fast(guard)
    return new_op(INSTRUCTION_OPS[entry.name], props)  # type: ignore[return-value]


def _reg_decl(ptx_type: str, names: list[str]) -> RegDeclOp:
    return new_op(  # type: ignore[return-value]
        RegDeclOp,
        {"ptx_type": string_attr(ptx_type), "names": RegNamesAttr.fast(tuple((n, 0) for n in names)), "scope": IntAttr(0)},
    )


class _Regs:
    """The instrumentation's registers in one function, under a prefix no
    register of the function starts with."""

    def __init__(self, func: FuncOp):
        used: set[str] = set()
        for op in func.body.walk():
            if isinstance(op, RegDeclOp):
                for n, _c in op.names.data:
                    used.add(n)
            elif isinstance(op, InstructionOp):
                for a in op.operands_ast:
                    for r in iter_regs(a):
                        used.add(r[1])
        prefix = "%hypa_"
        k = 0
        while any(u.startswith(prefix) for u in used):
            k += 1
            prefix = f"%hypa{k}_"
        p = prefix
        self.mask, self.low, self.cnt, self.key, self.key0 = (p + s for s in ("mask", "low", "cnt", "key", "key0"))
        self.cnt64 = p + "cnt64"
        self.leader, self.div, self.tmp = p + "leader", p + "div", p + "tmp"

    def declarations(self) -> list[RegDeclOp]:
        return [
            _reg_decl(".pred", [self.leader, self.div, self.tmp]),
            _reg_decl(".b32", [self.mask, self.low, self.cnt, self.key, self.key0]),
            _reg_decl(".b64", [self.cnt64]),
        ]


def _slot(k: int) -> tuple:
    return ("addr", ("sym", COUNTER_SYMBOL, 0), 8 * k, "")


def _elect(r: _Regs) -> list[InstructionOp]:
    """``mask`` = active lanes, ``leader`` = this lane is the lowest of them."""
    return [
        _instr("activemask.b32", _reg(r.mask)),
        _instr("mov.u32", _reg(r.low), ("sreg", "%lanemask_lt")),
        _instr("and.b32", _reg(r.low), _reg(r.low), _reg(r.mask)),
        _instr("setp.eq.u32", _reg(r.leader), _reg(r.low), _imm(0)),
    ]


def _block_code(r: _Regs, warp_slot: int, thread_slot: int) -> list[InstructionOp]:
    lead = (_reg(r.leader), False)
    return _elect(r) + [
        _instr("popc.b32", _reg(r.cnt), _reg(r.mask)),
        _instr("cvt.u64.u32", _reg(r.cnt64), _reg(r.cnt)),
        _instr("red.global.add.u64", _slot(warp_slot), _imm(1), guard=lead),
        _instr("red.global.add.u64", _slot(thread_slot), _reg(r.cnt64), guard=lead),
    ]


def _branch_code(r: _Regs, term: InstructionOp, slots: dict[str, int | None], same_target: bool) -> list[InstructionOp]:
    lead = (_reg(r.leader), False)
    code = _elect(r) + [_instr("red.global.add.u64", _slot(slots["executed_slot"]), _imm(1), guard=lead)]
    g = term.guard_pred
    if term.spec.name == "bra":
        assert g is not None
        cond = ("not", g[0]) if g[1] else g[0]
        code += [
            _instr("vote.sync.ballot.b32", _reg(r.cnt), cond, _reg(r.mask)),
            _instr("popc.b32", _reg(r.key), _reg(r.cnt)),
            _instr("cvt.u64.u32", _reg(r.cnt64), _reg(r.key)),
            _instr("red.global.add.u64", _slot(slots["taken_slot"]), _reg(r.cnt64), guard=lead),  # type: ignore[arg-type]
        ]
        if same_target:
            return code
        code += [
            _instr("setp.ne.u32", _reg(r.div), _reg(r.cnt), _imm(0)),
            _instr("setp.ne.and.u32", _reg(r.div), _reg(r.cnt), _reg(r.mask), _reg(r.div)),
        ]
    else:  # brx.idx: do all active lanes hold the lowest active lane's key?
        index = term.operands_ast[0]
        if g is None:
            code.append(_instr("mov.b32", _reg(r.key), index))
        else:
            taken, skipped = (_imm(-1), index) if g[1] else (index, _imm(-1))
            code.append(_instr("selp.b32", _reg(r.key), taken, skipped, g[0]))
        code += [
            _instr("neg.s32", _reg(r.low), _reg(r.mask)),
            _instr("and.b32", _reg(r.low), _reg(r.low), _reg(r.mask)),
            _instr("bfind.u32", _reg(r.low), _reg(r.low)),
            _instr("shfl.sync.idx.b32", _reg(r.key0), _reg(r.key), _reg(r.low), _imm(0x1F), _reg(r.mask)),
            _instr("setp.eq.u32", _reg(r.tmp), _reg(r.key), _reg(r.key0)),
            _instr("vote.sync.all.pred", _reg(r.tmp), _reg(r.tmp), _reg(r.mask)),
            _instr("not.pred", _reg(r.div), _reg(r.tmp)),
        ]
    code += [
        _instr("and.pred", _reg(r.div), _reg(r.div), _reg(r.leader)),
        _instr("red.global.add.u64", _slot(slots["divergent_slot"]), _imm(1), guard=(_reg(r.div), False)),  # type: ignore[arg-type]
    ]
    return code


def _guard_code(r: _Regs, op: InstructionOp, slot: int) -> list[InstructionOp]:
    """Before a guarded instruction: add the active lanes whose guard is true."""
    g = op.guard_pred
    assert g is not None
    cond = ("not", g[0]) if g[1] else g[0]
    return _elect(r) + [
        _instr("vote.sync.ballot.b32", _reg(r.cnt), cond, _reg(r.mask)),
        _instr("popc.b32", _reg(r.cnt), _reg(r.cnt)),
        _instr("cvt.u64.u32", _reg(r.cnt64), _reg(r.cnt)),
        _instr("red.global.add.u64", _slot(slot), _reg(r.cnt64), guard=(_reg(r.leader), False)),
    ]


# ---------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------


def _insert_before(block: Block, anchor: Operation | None, ops: list[Operation]) -> None:
    if anchor is None:
        block.add_ops(ops)
    else:
        block.insert_ops_before(ops, anchor)


def _block_start(block: Block) -> Operation | None:
    """The op the block's counting code goes before: after its label and the
    declarations and debug directives that follow it."""
    for op in block.ops:
        if isinstance(op, (LabelOp, RegDeclOp, VarOp, RawDirectiveOp)):
            continue
        return op
    return None


def _is_conditional_branch(op: Operation | None) -> bool:
    if not isinstance(op, InstructionOp):
        return False
    name = op.spec.name
    return name == "brx.idx" or (name == "bra" and op.guard_pred is not None)


def _version_tuple(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def _flop(op: InstructionOp) -> tuple[str, int] | None:
    counter, weight = isa.flop_weights(op.spec, op.modifiers)
    return (counter, weight) if counter else None


def instrument_module(module: ModuleOp, guards: bool = True) -> CounterMap:
    """Instrument ``module`` (register form) in place; return its counter map.
    ``guards``: also count the true lanes of every guarded non-branch instruction."""
    cmap = CounterMap()
    funcs = [op for op in module.ops if isinstance(op, FuncOp) and not op.is_declaration]
    for op in module.walk():
        if isinstance(op, VarOp) and op.var_name == COUNTER_SYMBOL:
            raise InstrumentError(f"the module already declares {COUNTER_SYMBOL} (instrumented twice?)")
        if isinstance(op, InstructionOp) and (op.operands or op.results):
            raise InstrumentError("instrument-block-counters works on register form: run ptx-out-of-ssa first")
    if not funcs:
        raise InstrumentError("the module defines no function to instrument")
    k = 0

    def take(n: int) -> list[int]:
        nonlocal k
        k += n
        return list(range(k - n, k))

    for func in funcs:
        cfg = CFG.of(func)
        reachable = cfg.reachable()
        regs = _Regs(func)
        fname = func.func_name
        edits: list[tuple[Block, Operation | None, list[Operation]]] = []
        for i, block in enumerate(cfg.blocks):
            if not reachable[i]:
                continue
            name = block_name(block, i)
            instrs = [op for op in block.ops if isinstance(op, InstructionOp)]
            term = block.last_op
            flops: dict[str, int] = {}
            unguarded = 0
            for op in instrs:
                if op.guard_pred is None or op.spec.terminator:
                    unguarded += 1
                    f = _flop(op)
                    if f:
                        flops[f[0]] = flops.get(f[0], 0) + f[1]
            w, t = take(2)
            cmap.blocks.append({
                "function": fname, "index": i, "name": name, "warp_slot": w, "thread_slot": t,
                "instructions": len(instrs), "unguarded": unguarded, "flops": flops,
                "terminator": term.spec.name if isinstance(term, InstructionOp) and term.spec.terminator else "",
            })
            edits.append((block, _block_start(block), _block_code(regs, w, t)))
            if guards:
                for pos, op in enumerate(instrs):
                    if op.guard_pred is None or op.spec.terminator:
                        continue
                    (slot,) = take(1)
                    cmap.guards.append({
                        "function": fname, "block": i, "block_name": name, "position": pos,
                        "text": instruction_text(op), "slot": slot, "flop": list(_flop(op) or ()) or None,
                    })
                    edits.append((block, op, _guard_code(regs, op, slot)))
            if _is_conditional_branch(term):
                assert isinstance(term, InstructionOp)
                same = term.spec.name == "bra" and len(set(cfg.succs[i])) == 1
                if term.spec.name == "bra":
                    e, d, tk = take(3)
                else:
                    (e, d), tk = take(2), None
                slots = {"executed_slot": e, "divergent_slot": d, "taken_slot": tk}
                cmap.branches.append({
                    "function": fname, "block": i, "block_name": name, "text": instruction_text(term),
                    "kind": term.spec.name, **slots, "same_target": same,
                })
                edits.append((block, term, _branch_code(regs, term, slots, same)))
        for block, anchor, ops in edits:
            _insert_before(block, anchor, ops)
        entry = func.body.blocks.first
        assert entry is not None
        first = entry.first_op
        anchor = first.next_op if isinstance(first, LabelOp) else first
        _insert_before(entry, anchor, regs.declarations())
    cmap.slots = max(k, 1)
    _declare_counters(module, cmap)
    return cmap


def _declare_counters(module: ModuleOp, cmap: CounterMap) -> None:
    decl = ((".visible",), ".global", ((".align", 8),), ".u64", COUNTER_SYMBOL, (cmap.slots,), None)
    var = new_op(VarOp, {"decl": VarDeclAttr.fast(decl)})
    anchor = None
    for op in module.ops:
        if isinstance(op, VersionOp):
            try:
                if _version_tuple(op.version.data) < MIN_PTX_VERSION:
                    old = op.version.data
                    op.properties["version"] = string_attr("%d.%d" % MIN_PTX_VERSION)
                    cmap.notes.append(f".version {old} raised to 6.2 (activemask)")
            except ValueError:
                pass
        if isinstance(op, (VersionOp, TargetOp, AddressSizeOp)):
            anchor = op
    block = module.body.block
    if anchor is None:
        block.insert_op_before(var, block.first_op) if block.first_op else block.add_op(var)
    else:
        block.insert_op_after(var, anchor)


def instrument_ptx(text: str, guards: bool = True) -> tuple[str, CounterMap]:
    """PTX text -> (instrumented PTX text, counter map)."""
    from hypa.ptxdialect import parse_ptx
    from hypa.ptxdialect.printer import module_to_ptx

    module = parse_ptx(text)
    cmap = instrument_module(module, guards=guards)
    return module_to_ptx(module), cmap


@dataclass(frozen=True)
class InstrumentBlockCounters(ModulePass):
    """Add per-block warp/thread counters and per-branch divergence counters."""

    name = "instrument-block-counters"

    output: str = ""
    guards: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cmap = instrument_module(op, guards=self.guards)
        if self.output:
            if self.output == "-":
                import sys

                sys.stderr.write(cmap.to_json() + "\n")
            else:
                with open(self.output, "w") as f:
                    f.write(cmap.to_json() + "\n")
