"""``slice-branches``: the filtered dependency graph of HyPA, on SSA form.

The slice is the backward closure, over SSA use-def edges, from every value
that decides control flow: the guard of every conditional terminator
(``@p bra``, ``@p ret``, ``@p exit``), the index of ``brx.idx``, and every
``call`` (callees are emulated) and barrier (warps must meet there), and every
instruction that reads or updates an mbarrier (waits suspend warps until the arrivals and
the copies completing through it have happened; ``isa.mbarrier_operand``).  Block
arguments pull in the values flowing along every incoming edge.

Memory dependences: a load in the slice pulls in every instruction that may
write what it reads -- stores, atomics, reductions, async copies to the same
state space (a generic address may alias global, shared and local).  Global
and shared accesses are narrowed by a base-object analysis: an address is
traced through address arithmetic to the kernel pointer parameter or the
variable it is based on, and accesses based on different objects do not
alias (``alias=param``, the default: distinct pointer parameters are assumed
to point to distinct buffers -- the emulator checks this against the launch --
``alias=space`` keeps every same-space writer).  Across calls: a callee's
``st.param`` to its return parameters joins its slice when a call's result is
needed, and a caller's ``st.param`` of call arguments joins when the callee
reads the parameter.

Options: ``exact-predicates`` also slices the guard of every guarded
instruction (so ``not_predicated_off_thread_inst_executed`` is exact);
``keep=a,b`` adds every instruction of the named ISA entries as roots;
``memory-addresses`` also slices the address of every global, shared and
generic memory access (for memory-divergence metrics; the accesses themselves
are not emulated unless needed, members are marked ``hypa.address``);
``dot-file=F`` writes the dependence graph of the slice as Graphviz.

Slice members carry the attribute ``hypa.slice``; the function records
``hypa.slice_size`` (instructions in the slice) and, under ``alias=param``,
``hypa.noalias_params`` (the pointer parameters assumed distinct).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import EntryValueOp, FallthroughOp, FuncOp, InstructionOp
from hypa.ptxdialect.operands import iter_syms

from .inline import KEEP_ATTR
from .ssa import convert_function as to_ssa
from .ssa import is_ssa

SLICE_ATTR = "hypa.slice"

# ---------------------------------------------------------------------------
# Memory effects
# ---------------------------------------------------------------------------

def memory_effect(op: InstructionOp) -> tuple[bool, bool]:
    """``(reads, writes)`` memory (not registers) for an instruction: the ISA table's
    ``memory`` fact."""
    m = op.spec.memory
    return "r" in m, "w" in m


def _spaces(op: InstructionOp) -> set[str]:
    """State spaces an access may touch (``generic`` widened to the three it covers)."""
    name = op.spec.name
    if name == "cp.async":
        return {"shared"}  # the destination; the source is global and read-only here
    sp = isa.state_space(op.spec, op.modifiers) if op.spec.kind in ("mem", "atomic") else None
    if name.startswith("mbarrier") or name in ("ldmatrix", "stmatrix", "wgmma.mma_async"):
        sp = sp if sp not in (None, "generic") else "shared"
    if sp is None or sp == "generic":
        return {"global", "shared", "local", "generic"}
    return {sp}


def address_operand_index(op: InstructionOp) -> int | None:
    """Position in ``operands_ast`` of the memory operand ``[...]``."""
    for i, a in enumerate(op.operands_ast):
        if a[0] in ("addr", "brk"):
            return i
    return None


# ---------------------------------------------------------------------------
# Base objects of addresses
# ---------------------------------------------------------------------------

UNKNOWN = "?"


@dataclass
class AddressBases:
    """Trace SSA address values back to the objects they point into."""

    kernel_params: set[str]
    variables: set[str]
    memo: dict[SSAValue, frozenset[str] | str] = field(default_factory=dict)
    access_memo: dict[tuple, frozenset[str] | str] = field(default_factory=dict)

    def of_value(self, v: SSAValue) -> frozenset[str] | str:
        if v not in self.memo:
            self._solve(v)
        return self.memo.get(v, UNKNOWN)

    def _solve(self, v: SSAValue) -> None:
        """Roots of every value of the function holding ``v``, as the least fixpoint.

        Loop-carried values make the use-def graph cyclic: a depth-first trace
        that memoizes what it finds while a loop header is still in progress
        would keep partial answers (a pointer stepped by a scalar losing its
        base), and slicing would then miss stores that alias a sliced load.
        Round-robin iteration in program order over the whole function
        converges in a few rounds (the lattice is a set of roots under union,
        topped by "unknown").
        """
        owner = v.block.parent_op() if isinstance(v, BlockArgument) else v.owner
        func = owner
        while func is not None and not isinstance(func, FuncOp):
            func = func.parent_op()
        root = func if func is not None else owner
        values: list[SSAValue] = []
        for op in root.walk():
            for region in op.regions:
                for block in region.blocks:
                    values.extend(block.args)
            if op is not root:
                values.extend(op.results)
        if v not in values:
            values.append(v)
        rules = []
        for x in values:
            self.memo.setdefault(x, frozenset())
            rule = self._rule(x)
            if rule == UNKNOWN:
                self.memo[x] = UNKNOWN
            else:
                rules.append((x, *rule))
        changed = True
        while changed:
            changed = False
            for x, own, deps in rules:
                new = self._join([own, *(self.memo.get(d, UNKNOWN) for d in deps)])
                if new != self.memo[x]:
                    self.memo[x] = new
                    changed = True

    def _rule(self, v: SSAValue):
        """``UNKNOWN``, or (roots of its own, values whose roots flow into ``v``)."""
        if isinstance(v, BlockArgument):
            return frozenset(), _incoming(v)
        op = v.owner
        if isinstance(op, EntryValueOp) or not isinstance(op, InstructionOp):
            return UNKNOWN
        name = op.spec.name
        if name in ("ld", "ldu"):
            sp = isa.state_space(op.spec, op.modifiers)
            if sp == "param":
                addr = op.operands_ast[address_operand_index(op) or 1]
                hit = set(iter_syms(addr)) & self.kernel_params
                if hit:
                    return frozenset("param:" + s for s in hit), ()
            return UNKNOWN  # a pointer loaded from memory
        if op.spec.kind in ("atomic", "call") or op.spec.lanes == "cross":
            return UNKNOWN  # from memory, from a callee or from other lanes
        ins = op.instruction_operands()
        if op.guard_pred is not None:
            ins = ins[1:]
        return self._syms(op), list(ins)

    def _join(self, items: Iterable[frozenset[str] | str]) -> frozenset[str] | str:
        acc: set[str] = set()
        for it in items:
            if it == UNKNOWN:
                return UNKNOWN
            acc |= it  # type: ignore[arg-type]
        return frozenset(acc)

    def _syms(self, op: InstructionOp) -> frozenset[str]:
        out = set()
        for a in op.operands_ast:
            for s in iter_syms(a):
                if s in self.variables:
                    out.add("var:" + s)
        return frozenset(out)

    def of_access(self, op: InstructionOp, index: int | None = None) -> frozenset[str] | str:
        key = (op, index)
        hit = self.access_memo.get(key)
        if hit is None:
            hit = self.access_memo[key] = self._of_access(op, index)
        return hit

    def _of_access(self, op: InstructionOp, index: int | None = None) -> frozenset[str] | str:
        i = address_operand_index(op) if index is None else index
        if i is None:
            return UNKNOWN
        addr = op.operands_ast[i]
        syms = frozenset("var:" + s for s in iter_syms(addr) if s in self.variables)
        vals = op.arg_operands(i)  # SSA operands for registers inside the address
        if not vals and not syms:
            return UNKNOWN
        return self._join([syms, *(self.of_value(v) for v in vals)])


def _incoming(arg: BlockArgument) -> list[SSAValue]:
    """Values flowing into a block argument along every incoming edge."""
    out: list[SSAValue] = []
    block = arg.block
    for use in block.uses:
        term = use.operation
        slot = use.index
        if isinstance(term, FallthroughOp):
            vals = term.operands
        elif isinstance(term, InstructionOp):
            vals = term.successor_operands(slot)
        else:
            continue
        if arg.index < len(vals):
            out.append(vals[arg.index])
    return out


def _may_alias(a: frozenset[str] | str, b: frozenset[str] | str) -> bool:
    if a == UNKNOWN or b == UNKNOWN:
        return True
    if not a or not b:
        return True
    return bool(a & b)  # type: ignore[operator]


# ---------------------------------------------------------------------------
# The slice
# ---------------------------------------------------------------------------


@dataclass
class FunctionSlice:
    func: FuncOp
    ops: set[InstructionOp] = field(default_factory=set)
    values: set[SSAValue] = field(default_factory=set)
    memory_edges: list[tuple[InstructionOp, InstructionOp]] = field(default_factory=list)
    roots: list[InstructionOp] = field(default_factory=list)
    needs_return_params: bool = False
    #: memory instructions whose address (only) is computed: ``memory-addresses``
    address_ops: set[InstructionOp] = field(default_factory=set)


class _Slicer:
    def __init__(self, module: ModuleOp, exact_predicates: bool, keep: set[str], alias: str,
                 memory_addresses: bool = False):
        self.memory_addresses = memory_addresses
        self.module = module
        self.exact = exact_predicates
        self.keep = keep
        self.alias = alias
        self.funcs: dict[str, FuncOp] = {}
        for op in module.ops:
            if isinstance(op, FuncOp) and not op.is_declaration:
                self.funcs[op.func_name] = op
        self.variables = {o.var_name for o in module.walk() if o.name == "ptx.var"}  # type: ignore[attr-defined]
        self.slices: dict[str, FunctionSlice] = {}

    def run(self) -> dict[str, FunctionSlice]:
        for name, f in self.funcs.items():
            self.slices[name] = FunctionSlice(f)
        pending = list(self.funcs)
        while pending:
            name = pending.pop()
            changed_callees = self._slice_function(self.slices[name])
            for c in changed_callees:
                if c not in pending:
                    pending.append(c)
        return self.slices

    def _slice_function(self, fs: FunctionSlice) -> set[str]:
        f = fs.func
        instrs = [op for op in f.body.walk() if isinstance(op, InstructionOp)]
        closure = _Closure(self, fs, instrs)
        address_vals: list[SSAValue] = []
        for op in instrs:
            name = op.spec.name
            g = op.guard_pred
            if op.spec.terminator and (g is not None or name == "brx.idx"):
                closure.add_op(op)
                fs.roots.append(op)
            elif (op.spec.sync in ("barrier", "warp-barrier", "stack") or name == "call" or KEEP_ATTR in op.attributes
                  or isa.mbarrier_operand(op.spec, op.modifiers) is not None):
                # mbarrier waits suspend warps until arrivals and copies complete the phase
                closure.add_op(op)
                fs.roots.append(op)
            elif name in self.keep:
                closure.add_op(op)
                fs.roots.append(op)
            elif self.exact and g is not None:
                closure.work_vals.append(op.operands[0])
            if self.memory_addresses and is_tracked_memory(op):
                vals = address_values(op)
                if vals is not None:
                    fs.address_ops.add(op)
                    address_vals.extend(vals)
            if fs.needs_return_params and name == "st" and isa.state_space(op.spec, op.modifiers) == "param":
                syms = set(iter_syms(op.operands_ast[0]))
                if syms & {p[1] for p in (f.ret_params.data if f.ret_params is not None else ())}:
                    closure.add_op(op)
        closure.work_vals.extend(address_vals)
        closure.run()
        return closure.callee_updates


class _Closure:
    """The backward closure of a slice over use-def edges and memory dependences: ``add_op``
    and ``work_vals`` seed it, ``run`` grows ``fs.ops`` and ``fs.values`` to the fixpoint."""

    def __init__(self, slicer: _Slicer, fs: FunctionSlice, instrs: list[InstructionOp]):
        self.slicer = slicer
        self.fs = fs
        f = fs.func
        kernel_params = set(f.param_names) if f.is_kernel else set()
        self.bases = AddressBases(kernel_params, slicer.variables)
        self.writers = [op for op in instrs if memory_effect(op)[1] or op.spec.name == "call"]
        # every (load, store) pair may be asked about: the stores' spaces once
        self.store_spaces = [(w, _spaces(w)) for w in self.writers if w.spec.name != "call"]
        self.work_ops: list[InstructionOp] = []
        self.work_vals: list[SSAValue] = []
        self.callee_updates: set[str] = set()

    def add_op(self, op: InstructionOp) -> None:
        if op not in self.fs.ops:
            self.fs.ops.add(op)
            self.work_ops.append(op)

    def run(self) -> None:
        fs, add_op, work_ops, work_vals = self.fs, self.add_op, self.work_ops, self.work_vals
        writers, store_spaces, bases = self.writers, self.store_spaces, self.bases
        slicer = self.slicer
        while work_ops or work_vals:
            while work_vals:
                v = work_vals.pop()
                if v in fs.values:
                    continue
                fs.values.add(v)
                if isinstance(v, BlockArgument):
                    work_vals.extend(_incoming(v))
                elif isinstance(v.owner, InstructionOp):
                    add_op(v.owner)
            while work_ops:
                op = work_ops.pop()
                work_vals.extend(op.instruction_operands())
                reads, _writes = memory_effect(op)
                name = op.spec.name
                if name == "call":
                    callee = _callee(op)
                    if callee in slicer.slices and _call_returns(op):
                        cs = slicer.slices[callee]
                        if not cs.needs_return_params:
                            cs.needs_return_params = True
                            self.callee_updates.add(callee)
                    # arguments written with st.param before the call
                    args = _call_arg_symbols(op)
                    for w in writers:
                        if w.spec.name == "st" and set(iter_syms(w.operands_ast[0])) & args:
                            if w not in fs.ops:
                                fs.memory_edges.append((w, op))
                            add_op(w)
                if not reads:
                    continue
                # cp.async reads global memory (and writes shared memory)
                spaces = {"global", "generic"} if name == "cp.async" else _spaces(op)
                if "param" in spaces:
                    syms = set(iter_syms(op.operands_ast[address_operand_index(op) or 1]))
                    for w in writers:
                        if w.spec.name == "call" and syms & _call_ret_symbols(w):
                            fs.memory_edges.append((w, op))
                            add_op(w)
                        elif w.spec.name == "st" and isa.state_space(w.spec, w.modifiers) == "param" and syms & set(iter_syms(w.operands_ast[0])):
                            fs.memory_edges.append((w, op))
                            add_op(w)
                    continue
                if spaces <= {"const"}:
                    continue
                src_index = 1 if name == "cp.async" else None
                rbase = bases.of_access(op, src_index) if slicer.alias == "param" else UNKNOWN
                for w, wsp in store_spaces:
                    if w in fs.ops or w is op:
                        continue  # already in the slice: nothing new to learn
                    if not (wsp & spaces or "generic" in wsp or "generic" in spaces):
                        continue
                    if slicer.alias == "param" and not _may_alias(rbase, bases.of_access(w)):
                        continue
                    fs.memory_edges.append((w, op))
                    add_op(w)


def _callee(call: InstructionOp) -> str | None:
    for a in call.operands_ast:
        if a[0] == "sym":
            return a[1]
    return None


def _call_returns(call: InstructionOp) -> bool:
    args = call.operands_ast
    return bool(args) and args[0][0] == "paren" and len(args) > 1


def _call_ret_symbols(call: InstructionOp) -> set[str]:
    return set(iter_syms(call.operands_ast[0])) if _call_returns(call) else set()


def _call_arg_symbols(call: InstructionOp) -> set[str]:
    parens = [a for a in call.operands_ast if a[0] == "paren"]
    if _call_returns(call):
        parens = parens[1:]
    out: set[str] = set()
    for p in parens:
        out |= set(iter_syms(p))
    return out


def is_tracked_memory(op: InstructionOp) -> bool:
    """Global, shared, local or generic loads, stores and atomics: what memory metrics count."""
    r, w = memory_effect(op)
    if not (r or w) or op.spec.name.startswith(("mbarrier", "tcgen05", "cp.async.bulk", "cp.reduce", "wgmma")):
        return False
    sp = isa.state_space(op.spec, op.modifiers)
    return sp in ("global", "shared", "local", "generic") or op.spec.name == "cp.async"


def address_values(op: InstructionOp) -> list[SSAValue] | None:
    """The values that give the addresses of a memory instruction and the lanes that access
    them: the registers inside each ``[...]`` operand, the guard, and ``cp.async``'s
    source size (which bytes it reads); None where it has no memory operand."""
    addrs = [k for k, a in enumerate(op.operands_ast) if a[0] in ("addr", "brk")] or descriptor_operands(op)
    if not addrs:
        return None
    vals: list[SSAValue] = []
    for k in addrs:
        vals.extend(op.arg_operands(k))
    if op.spec.name == "cp.async":
        for k in range(3, len(op.operands_ast)):
            vals.extend(op.arg_operands(k))
    elif op.spec.name in ("cp.async.bulk", "cp.reduce.async.bulk", "st.bulk"):
        vals.extend(op.arg_operands(1 if op.spec.name == "st.bulk" else 2))  # the size
    elif op.spec.name in ("wmma.load", "wmma.store") and len(op.operands_ast) > 2:
        vals.extend(op.arg_operands(2))  # the stride
    if op.guard_pred is not None:
        vals.append(op.operands[0])
    return vals


#: the accesses slice mode bounds-checks without performing them, in every state space (the
#: lowering checks the bytes each one would touch, as the instruction itself does)
CHECKED_ACCESSES = frozenset({"ld", "ldu", "st", "atom", "red", "cp.async", "cp.async.bulk", "cp.reduce.async.bulk",
                              "st.async", "red.async", "st.bulk", "ldmatrix", "stmatrix", "suld", "sust", "sured",
                              "wmma.load", "wmma.store", "wgmma.mma_async"})


def is_checked_access(op: InstructionOp) -> bool:
    return op.spec.name in CHECKED_ACCESSES and (address_operand_index(op) is not None or bool(descriptor_operands(op)))


def descriptor_operands(op: InstructionOp) -> list[int]:
    """Positions of ``wgmma.mma_async``'s shared-memory matrix descriptors (64-bit registers
    that hold the address of A or B): B's, and A's unless A is in registers ``{..}``."""
    if op.spec.name != "wgmma.mma_async" or len(op.operands_ast) < 3:
        return []
    return [2] if op.operands_ast[1][0] == "vec" else [1, 2]


def address_support(module: ModuleOp, fs: FunctionSlice, alias: str = "param",
                    ) -> tuple[set[InstructionOp], set[BlockArgument], set[InstructionOp]]:
    """What slice mode adds to the slice ``fs`` (of a function of ``module`` that calls no
    defined function) to bounds-check every access: the instructions to emulate in full that
    only compute addresses (pointers loaded from memory pull in what may store them, as in
    the slice), the block arguments they and the addresses read, and the accesses
    (``CHECKED_ACCESSES``) whose address alone is computed.
    ``fs`` is left as it is."""
    slicer = _Slicer(module, False, set(), alias)
    slicer.slices = {}
    grown = FunctionSlice(fs.func, ops=set(fs.ops), values=set(fs.values))
    instrs = list(_instructions(fs.func))
    closure = _Closure(slicer, grown, instrs)
    checked = [op for op in instrs if op not in fs.ops and is_checked_access(op)]
    for op in checked:
        closure.work_vals.extend(address_values(op) or ())
    closure.run()
    args = {v for v in grown.values - fs.values if isinstance(v, BlockArgument)}
    return grown.ops - fs.ops, args, {op for op in checked if op not in grown.ops}


def compute_slices(
    module: ModuleOp, exact_predicates: bool = False, keep: Iterable[str] = (), alias: str = "param",
    memory_addresses: bool = False,
) -> dict[str, FunctionSlice]:
    """Slice every function of an SSA-form module (converting it first if needed)."""
    if alias not in ("param", "space"):
        raise DiagnosticException(f"slice-branches: alias must be 'param' or 'space', not '{alias}'")
    keep = set(keep)
    unknown = keep - set(isa.INSTRUCTIONS_BY_NAME)
    if unknown:
        raise DiagnosticException(f"slice-branches: keep= names unknown instructions: {', '.join(sorted(unknown))}")
    for f in module.ops:
        if isinstance(f, FuncOp) and not is_ssa(f):
            to_ssa(f)
    return _Slicer(module, exact_predicates, keep, alias, memory_addresses).run()


def mark_slices(slices: dict[str, FunctionSlice], alias: str) -> None:
    for fs in slices.values():
        unit = UnitAttr()  # attributes are immutable: one serves every operation
        for op in _instructions(fs.func):
            if op in fs.ops:
                op.attributes[SLICE_ATTR] = unit
            else:
                op.attributes.pop(SLICE_ATTR, None)
            if op in fs.address_ops and op not in fs.ops:
                op.attributes["hypa.address"] = unit
        fs.func.attributes["hypa.slice_size"] = IntAttr(len(fs.ops))
        if alias == "param" and fs.func.is_kernel:
            ptr_params = [n for n, _t in _pointer_params(fs.func)]
            if ptr_params:
                fs.func.attributes["hypa.noalias_params"] = ArrayAttr([StringAttr(p) for p in ptr_params])


def _pointer_params(func: FuncOp) -> list[tuple[str, str]]:
    return [(p[1], p[3]) for p in func.params.data if p[3] in (".u64", ".b64", ".s64", ".u32", ".b32")]


def slice_dot(slices: dict[str, FunctionSlice]) -> str:
    """The dependence graph of each slice as Graphviz (one cluster per function)."""
    from hypa.ptxdialect.printer import instruction_text

    lines = ["digraph slice {", "  node [shape=box, fontname=monospace];"]
    ids: dict[Operation, str] = {}
    for fi, fs in enumerate(slices.values()):
        lines.append(f'  subgraph cluster_{fi} {{ label="{fs.func.func_name}";')
        order = [op for op in fs.func.body.walk() if op in fs.ops]
        for k, op in enumerate(order):
            nid = f"f{fi}_{k}"
            ids[op] = nid
            style = ", style=filled, fillcolor=lightsalmon" if op in fs.roots else ""
            text = instruction_text(op).replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'    {nid} [label="{text}"{style}];')
        lines.append("  }")
        for op in order:
            for v in op.instruction_operands():
                for src in _producers(v, set()):
                    if src in ids:
                        lines.append(f"  {ids[src]} -> {ids[op]};")
        for w, r in fs.memory_edges:
            if w in ids and r in ids:
                lines.append(f'  {ids[w]} -> {ids[r]} [style=dashed, label="mem"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _producers(v: SSAValue, seen: set[SSAValue]) -> list[Operation]:
    if v in seen:
        return []
    seen.add(v)
    if isinstance(v, BlockArgument):
        out: list[Operation] = []
        for x in _incoming(v):
            out.extend(_producers(x, seen))
        return out
    return [v.owner] if isinstance(v.owner, InstructionOp) else []


@dataclass(frozen=True)
class SliceBranches(ModulePass):
    """Mark the instructions that decide control flow (HyPA's filtered dependency graph)."""

    name = "slice-branches"

    exact_predicates: bool = False
    keep: str = ""
    alias: str = "param"
    dot_file: str = ""
    memory_addresses: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        keep = [k for k in self.keep.split(",") if k] if self.keep else []
        slices = compute_slices(op, self.exact_predicates, keep, self.alias, self.memory_addresses)
        mark_slices(slices, self.alias)
        text = slice_options_text(self.exact_predicates, self.alias, self.memory_addresses, self.keep)
        for fs in slices.values():
            fs.func.attributes[OPTIONS_ATTR] = StringAttr(text)
        if self.dot_file:
            with open(self.dot_file, "w") as f:
                f.write(slice_dot(slices))


#: on a sliced function: the options its slice was made with (``slice-branches`` syntax)
OPTIONS_ATTR = "hypa.slice_options"


def slice_options_text(exact_predicates: bool, alias: str, memory_addresses: bool, keep: str = "") -> str:
    t = f"exact-predicates={str(exact_predicates).lower()} alias={alias} memory-addresses={str(memory_addresses).lower()}"
    return t + (f" keep={keep}" if keep else "")


def recorded_slice(func: FuncOp) -> tuple[FunctionSlice, dict[str, str]] | None:
    """The slice ``slice-branches`` marked on an SSA-form function, with the options it was
    made with; None where the function carries none.  Block arguments are in the slice when
    a slice member reads them, directly or through other block arguments (what the slicer's
    closure over use-def edges adds)."""
    attr = func.attributes.get(OPTIONS_ATTR)
    if not isinstance(attr, StringAttr) or not is_ssa(func):
        return None
    options = dict(kv.split("=", 1) for kv in attr.data.split())
    fs = FunctionSlice(func)
    for op in _instructions(func):
        if SLICE_ATTR in op.attributes:
            fs.ops.add(op)
        elif "hypa.address" in op.attributes:
            fs.address_ops.add(op)
    work = [v for op in fs.ops for v in op.instruction_operands()]
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument) and v not in fs.values:
            fs.values.add(v)
            work.extend(_incoming(v))
    fs.values.update(r for op in fs.ops for r in op.results)
    return fs, options


def _instructions(func: FuncOp):
    """The instructions of a function body, block by block (cheaper than a generic walk)."""
    for b in func.body.blocks:
        for op in b.ops:
            if isinstance(op, InstructionOp):
                yield op
