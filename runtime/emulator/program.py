"""A kernel made ready for lowering: inlined, in SSA form, sliced, laid out.

``KernelProgram`` gathers everything the code generator needs and nothing it
has to recompute: block numbering and immediate post-dominators (reconvergence
points), which instructions and block arguments are emulated (the slice, or
everything in full mode), the frame slot of every emulated SSA value, the
memory layout of the parameter, shared, constant and local state spaces, and
a global number for every instruction (for counters and error messages).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from hypa.passes.cfg import CFG
from hypa.passes.contract import mark_contractions
from hypa.passes.dominance import VIRTUAL_EXIT, immediate_post_dominators
from hypa.passes.inline import (
    CALL_ATTR,
    HEAP_FUNCTIONS,
    REAL_RETURN_ATTR,
    PTXInline,
    block_activations,
    block_origins,
    callee_name,
    has_calls_to_inline,
)
from hypa.passes.liveness import Liveness
from hypa.passes.spin_loops import independent_thread_scheduling, yield_headers
from hypa.passes.out_of_ssa import PTXOutOfSSA
from hypa.passes.reachable import SymbolIndex, extract_kernel
from hypa.passes.slice import SLICE_ATTR, FunctionSlice, SliceBranches, recorded_slice, slice_options_text
from hypa.passes.ssa import PTXToSSA, is_ssa
from hypa.ptxdialect import isa
from hypa.ptxdialect.diagnostics import HypaError
from .. import abi
from .options import EmulationOptions
from hypa.ptxdialect.dialect import (
    EntryValueOp,
    FallthroughOp,
    FuncOp,
    ImplicitReturnOp,
    InstructionOp,
    RegType,
    VarOp,
)
from hypa.ptxdialect.printer import instruction_text

if TYPE_CHECKING:  # the pass loads when a kernel has checks to hoist
    from hypa.passes.hoist_checks import HoistPlan

LANES = 32
SLOT_ALIGN = 64


class ProgramError(HypaError):
    """The kernel cannot be emulated (with a message that says why)."""


def value_bits(v: SSAValue) -> int:
    t = v.type
    name = t.type_name if isinstance(t, RegType) else "b32"
    if name == "pred":
        return 1
    if name == "cc":
        return 32
    return isa.TYPE_BITS.get("." + name, 32)


def slot_bytes(bits: int) -> int:
    """Bytes of a frame slot holding 32 lanes (a predicate is a 32-bit mask)."""
    if bits == 1:
        return 4
    return LANES * max(bits, 8) // 8


@dataclass
class Variable:
    name: str
    space: str
    offset: int
    size: int
    align: int
    init: str | None
    ptx_type: str


@dataclass
class RealCall:
    """A real call (docs/design.md, "Execution model"): the block that ends with it, the function it
    enters, the call parameters copied in and out (``(actual, formal)``), the block it
    returns to, and the activation that makes it (whose values and formals it saves)."""

    block: int
    callee: str
    args: list[tuple[str, str]]
    rets: list[tuple[str, str]]
    rest: int
    caller: str


@dataclass
class KernelProgram:
    module: ModuleOp
    func: FuncOp
    mode: str
    cfg: CFG
    ipdom: list[int]
    emulated: set[InstructionOp]
    emulated_args: set[BlockArgument]
    slots: dict[SSAValue, int]
    local_values: set[SSAValue]
    frame_bytes: int
    instr_ids: dict[InstructionOp, int]
    instructions: list[InstructionOp]
    block_instrs: list[list[InstructionOp]]
    barriers: list[InstructionOp]
    #: mbarrier waits (``try_wait``/``test_wait``): where a warp yields to the CTA scheduler
    yields: list[InstructionOp]
    pred_counters: dict[InstructionOp, int]
    mem_ops: dict[InstructionOp, int]
    params: list[tuple[str, str, int, int]]  # name, type, offset, size
    param_bytes: int
    shared_vars: dict[str, Variable]
    shared_static_bytes: int
    const_vars: dict[str, Variable]
    const_bytes: int
    global_vars: dict[str, Variable]
    local_vars: dict[str, Variable]
    local_bytes: int
    call_params: dict[str, Variable]
    call_param_bytes: int
    origins: list[tuple[str, int]]  # per block: (function, block index) it came from
    slice_info: FunctionSlice | None = None
    key: str = ""
    #: work done preparing: operations copied from the input module, functions reached
    ops_cloned: int = 0
    functions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: slice mode: the accesses whose address alone is computed, to bounds-check it
    checked: set[InstructionOp] = field(default_factory=set)
    #: the instructions reports count as emulated (``executed_fraction``): the slice, without
    #: what slice mode emulates only to compute the addresses it checks; None: ``emulated``
    sliced: set[InstructionOp] | None = None
    bounds_check: bool = True
    #: slice mode: the bounds checks made once per loop entry (``passes/hoist_checks.py``),
    #: and per hoisted loop the frame offset of its word of proven lanes
    hoist: HoistPlan | None = None
    hoist_masks: list[int] = field(default_factory=list)
    #: reads of shared/local bytes no thread wrote are counted (``runtime/emulator/lowering/initcheck.py``)
    initcheck: bool = True
    #: per block: the activation it runs in (the kernel, or a recursive function's copy)
    activations: list[str] = field(default_factory=list)
    #: real calls in block order; the block that enters each recursive function, and each
    #: function's return block
    real_calls: list[RealCall] = field(default_factory=list)
    function_entries: dict[str, int] = field(default_factory=dict)
    real_returns: dict[int, str] = field(default_factory=dict)
    #: ``.local`` variables of recursive functions: offset in their function's frame
    frame_vars: dict[str, Variable] = field(default_factory=dict)
    frame_sizes: dict[str, int] = field(default_factory=dict)
    #: per recursive function: its formal parameters (call parameters saved with its frame)
    formals: dict[str, list[str]] = field(default_factory=dict)
    _live_in: list[set[SSAValue]] | None = field(default=None, repr=False)
    #: the kernel needs a per-thread stack (real calls, ``alloca``, ``stacksave``): it starts
    #: at ``stack_base`` in each thread's local memory, after the kernel's own variables
    uses_stack: bool = False
    #: the kernel calls the device heap (``malloc``/``free`` without a body: runtime/emulator/device_heap.py)
    heap_calls: bool = False

    @property
    def stack_base(self) -> int:
        """Where the stack starts in a thread's local memory: after the kernel's variables,
        never at offset 0 (an ``alloca`` result is never a null pointer)."""
        return _align(self.local_bytes, 16) + 16

    def saved_values(self, call: RealCall) -> list[SSAValue]:
        """The frame values a real call saves: its caller's values live where it returns
        (lanes the call does not run keep theirs: every write is masked by the active lanes)."""
        if call.caller == self.func.func_name:
            return []
        if self._live_in is None:
            self._live_in = _live_in(self.cfg)
        live = self._live_in[call.rest]
        return [v for v in self._slot_order() if v in live and self.activations[_block_of(v, self.cfg)] == call.caller]

    def _slot_order(self) -> list[SSAValue]:
        return sorted(self.slots, key=self.slots.__getitem__)

    def call_frame_bytes(self, call: RealCall) -> tuple[int, int, int]:
        """(bytes of the caller's part of a call's frame in memory: record, saved values and
        formals; bytes of the callee's ``.local`` variables; bytes the call counts against the
        stack size: return address, saved values and the callee's locals, as the GPU counts
        frames), each a multiple of 16."""
        saved = sum(1 if value_bits(v) == 1 else max(value_bits(v), 8) // 8 for v in self.saved_values(call))
        formals = sum(self.call_params[f].size for f in self.formals.get(call.caller, ())) \
            if call.caller != self.func.func_name else 0
        head = _align(abi.CALL_RECORD_BYTES + saved + formals, 16)
        callee = self.frame_sizes.get(call.callee, 0)
        return head, callee, _align(abi.RETURN_ADDRESS_BYTES + saved, 16) + callee

    def stack_bytes(self, stack_size: int) -> int:
        """Bytes of each thread's stack region for a stack size (as the GPU counts it): frames
        in memory are larger (records, saved formals), by at most the largest ratio of a call."""
        ratio = 1.0
        for c in self.real_calls:
            head, callee, counted = self.call_frame_bytes(c)
            ratio = max(ratio, (head + callee) / counted)
        return _align(int(stack_size * ratio) + 64, 16)

    @property
    def call_counter_base(self) -> int:
        """Index of the first call-depth counter (``abi.CALL_DEPTH_COUNTERS`` of them when the
        kernel makes real calls: calls that entered each depth)."""
        return self.warp_counter_base + abi.WARP_SLOTS
    #: headers of the spin loops whose ``YIELD`` releases lanes waiting at reconvergence
    #: points (``passes/spin_loops.py``); empty with ``reconvergence="ipdom"``
    yield_blocks: frozenset[int] = frozenset()
    #: the options it was prepared with, as they act (``EmulationOptions.effective``, with
    #: ``exact_predicates`` as the slice was made)
    options: EmulationOptions = field(default_factory=EmulationOptions)

    @property
    def reported(self) -> set[InstructionOp]:
        return self.emulated if self.sliced is None else self.sliced

    @property
    def warp_counter_base(self) -> int:
        """Index of the first per-warp-slot counter (abi.WARP_SLOTS of them, the last counters)."""
        return abi.BLOCK_COUNTERS * self.num_blocks + len(self.pred_counters) + abi.MEM_COUNTERS * len(self.mem_ops) + 1

    @property
    def num_counters(self) -> int:
        return self.warp_counter_base + abi.WARP_SLOTS + (abi.CALL_DEPTH_COUNTERS if self.real_calls else 0)

    @property
    def num_blocks(self) -> int:
        return len(self.cfg)

    def instruction_text(self, i: int) -> str:
        return instruction_text(self.instructions[i])


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _var_layout(ops: list[VarOp], start: int = 0) -> tuple[dict[str, Variable], int]:
    out: dict[str, Variable] = {}
    off = start
    for v in ops:
        size = v.size_bytes()
        align = v.align or max(1, isa.TYPE_BITS.get(v.ptx_type, 8) // 8)
        if size is None:
            size = 0  # extern dynamic array: placed at the end (dynamic shared memory)
        off = _align(off, align)
        out[v.var_name] = Variable(v.var_name, v.space, off, size, align, v.init, v.ptx_type)
        off += size
    return out, off


def _call_param_layout(ops: list[VarOp]) -> tuple[dict[str, Variable], int]:
    """Call arguments and return values (``.param`` declared in a body), one slot per name.

    Each call sequence declares its parameters in its own ``{ }`` scope, and ``-G`` builds
    reuse a name (``param0``) with other sizes in other scopes.  The scopes never overlap
    in time, so one slot per name, as large and as aligned as its largest declaration,
    serves them all (laid out by the last declaration, a smaller one was out of bounds)."""
    widest: dict[str, VarOp] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for v in ops:
        size = v.size_bytes() or 0
        align = v.align or max(1, isa.TYPE_BITS.get(v.ptx_type, 8) // 8)
        old = sizes.get(v.var_name)
        if old is None or size > old[0]:
            widest[v.var_name] = v
        sizes[v.var_name] = (max(size, old[0]), max(align, old[1])) if old else (size, align)
    out: dict[str, Variable] = {}
    off = 0
    for name, v in widest.items():
        size, align = sizes[name]
        off = _align(off, align)
        out[name] = Variable(name, v.space, off, size, align, v.init, v.ptx_type)
        off += size
    return out, off


def module_kernels(module: ModuleOp) -> list[FuncOp]:
    """The kernels (defined ``.entry`` functions) of a module, in order."""
    return [op for op in module.ops if isinstance(op, FuncOp) and op.is_kernel and not op.is_declaration]


def find_kernel(module: ModuleOp, name: str | None, kernels: list[FuncOp] | None = None) -> FuncOp:
    """The kernel ``name`` (mangled or demangled; ``None``: the only one); ``kernels``
    is ``module_kernels(module)`` when the caller keeps it (one scan per module, not per call)."""
    if kernels is None:
        kernels = module_kernels(module)
    if not kernels:
        raise ProgramError("the module has no .entry kernel")
    if name is None:
        if len(kernels) > 1:
            names = ", ".join(k.func_name for k in kernels)
            raise ProgramError(f"the module has {len(kernels)} kernels ({names}); name one with kernel=")
        return kernels[0]
    for k in kernels:
        if k.func_name == name:
            return k
    from .demangle import demangle

    for k in kernels:
        d = demangle(k.func_name)
        if d == name or d.split("(")[0] == name:
            return k
    names = ", ".join(f"{k.func_name} ({demangle(k.func_name)})" for k in kernels)
    raise ProgramError(f"no kernel named '{name}' (kernels: {names})")


def prepare(
    module: ModuleOp,
    kernel: str | FuncOp | None,
    options: EmulationOptions | None = None,
    index: SymbolIndex | None = None,
) -> KernelProgram:
    """Prepare one kernel of a module for lowering: the end of a pass pipeline.

    ``options`` (``runtime/emulator/options.py``; default: the defaults) are the emulation's;
    those that change the code are in ``options.key()``.  The module may be in register or SSA
    form, inlined or not, sliced or not.  A slice that ``slice-branches`` recorded in the IR
    is what gets lowered (``exact_predicates`` None: as recorded); where there is none, or it
    does not fit the run (other options, calls still to inline), the same passes run here:
    ``ptx-out-of-ssa`` where inlining needs register form, ``ptx-inline``, ``ptx-to-ssa``,
    ``slice-branches``.

    Only the kernel and what it reaches are copied (``passes/reachable.py``): the
    caller's IR is left untouched, and the cost does not grow with the module.

    ``bounds_check`` (slice mode): the address of every access outside the slice is computed
    too (``passes.slice.address_support``) and checked as full mode checks it; the memory is
    neither read nor written, and reports count the slice alone.  ``hoist_checks``: where an
    address is affine in a loop's trip, the range of the whole loop is checked once per entry
    instead (``passes/hoist_checks.py``; lanes it cannot prove check each access as before).

    ``initcheck``: loads of shared and local bytes that no thread of the CTA has written are
    counted (full mode, and slice mode with ``bounds_check``: it sees every access there).
    ``reconvergence``: ``"yield"`` (default) reconverges divergent lanes at the immediate
    post-dominator except where a spin loop's ``YIELD`` releases them
    (``passes/spin_loops.py``, docs/design.md, "Execution model"); ``"ipdom"``: always there.
    """
    options = options or EmulationOptions()
    problem = options.problem()
    if problem is not None:
        raise ProgramError(problem)
    # bounds checks, their hoisting and initcheck as they act in this mode (options.effective)
    effective = options.effective()
    mode, exact_predicates, alias, memory_metrics = (effective.mode, effective.exact_predicates, effective.alias,
                                                     effective.memory_metrics)
    bounds_check, initcheck, hoist_checks = effective.bounds_check, effective.initcheck, effective.hoist_checks
    reconvergence = effective.reconvergence
    func = kernel if isinstance(kernel, FuncOp) else find_kernel(module, kernel)
    yields = reconvergence == "yield" and independent_thread_scheduling(module)
    extracted = extract_kernel(module, func, index)
    module, func = extracted.module, extracted.kernel
    ctx = Context()
    notes: list[str] = []
    recorded = recorded_slice(func) if mode == "slice" else None
    if recorded is not None:
        given = recorded[1]
        if exact_predicates is None:
            exact_predicates = given.get("exact-predicates") == "true"
        wanted = slice_options_text(bool(exact_predicates), alias, memory_metrics)
        fits = (given.get("exact-predicates") == str(bool(exact_predicates)).lower()
                and given.get("alias") in (alias, "space")
                and (given.get("memory-addresses") == "true" or not memory_metrics))
        if not fits:
            notes.append(f"sliced again: the IR's slice was made with {' '.join(f'{k}={v}' for k, v in given.items())}, "
                         f"this run needs {wanted}")
            recorded = None
    exact_predicates = bool(exact_predicates)
    effective = dataclasses.replace(effective, exact_predicates=exact_predicates)
    # the key names the code this preparation produces: the input it starts from (and the
    # slice it records), the options, and (in runtime/emulator/jit.py) the sources of the passes and
    # the code generator
    key = _program_key(module, func, effective, _slice_signature(func) if recorded is not None else "")
    try:
        if has_calls_to_inline(module, func):
            if is_ssa(func):  # inlining works on register form
                PTXOutOfSSA().apply(ctx, module)
            PTXInline().apply(ctx, module)
            recorded = None  # it described the body before inlining
    except DiagnosticException as e:
        raise ProgramError(str(e).removeprefix("ptx-inline: ")) from None
    origins = block_origins(func)
    activations = block_activations(func)
    defined = {op.func_name for op in module.ops if isinstance(op, FuncOp) and not op.is_declaration}
    # only the kernel matters from here on
    for op in list(module.ops):
        if isinstance(op, FuncOp) and op is not func:
            op.detach()
            op.erase(safe_erase=False)
    if not is_ssa(func):
        PTXToSSA(verify=False).apply(ctx, module)
    if options.fmad:  # the adds ptxas fuses with a mul compute as that fma (passes/contract.py)
        mark_contractions(module)
    if mode == "slice" and recorded is None:
        SliceBranches(exact_predicates=exact_predicates, alias=alias, memory_addresses=memory_metrics).apply(ctx, module)
        recorded = recorded_slice(func)
        assert recorded is not None
    cfg = CFG.of(func)
    ipdom = immediate_post_dominators(len(cfg), cfg.succs, cfg.exits)
    yield_blocks = frozenset(yield_headers(cfg)) if yields else frozenset()

    instructions: list[InstructionOp] = []
    block_instrs: list[list[InstructionOp]] = []
    for b in cfg.blocks:
        bi = [op for op in b.ops if isinstance(op, InstructionOp)]
        block_instrs.append(bi)
        instructions.extend(bi)
    instr_ids = {op: i for i, op in enumerate(instructions)}
    heap_calls = False
    for op in instructions:
        if op.spec.name == "call":
            name, direct = callee_name(op)
            callee = [name] if direct and name else []
            if callee and callee[0] not in defined and callee[0] in HEAP_FUNCTIONS:
                heap_calls = True
            elif callee and callee[0] not in defined and callee[0].startswith(("cuda", "__cudaCDP")):
                raise ProgramError(f"kernel {func.func_name} calls '{callee[0]}' of the CUDA device runtime "
                                   f"(cudadevrt: kernel launches from the device, dynamic parallelism), which hypa "
                                   f"does not provide")
            elif callee and callee[0] not in defined and callee[0] not in ("__assertfail", "vprintf"):
                # running on would be a wrong result; a GPU cannot load such a module unlinked either
                raise ProgramError(f"kernel {func.func_name} calls '{callee[0]}', which this module declares but does "
                                   f"not define (a function of another translation unit or of the CUDA device "
                                   f"runtime, linked by nvcc -rdc=true): hypa runs one module and cannot run it")
    notes = list(dict.fromkeys(notes))

    slice_info: FunctionSlice | None = None
    checked: set[InstructionOp] = set()
    support: set[InstructionOp] = set()
    support_args: set[BlockArgument] = set()
    if recorded is not None:
        slice_info = recorded[0]
        emulated = set(slice_info.ops)
        emulated_args = {v for v in slice_info.values if isinstance(v, BlockArgument)}
        if bounds_check:
            from hypa.passes.slice import address_support

            support, support_args, checked = address_support(module, slice_info, alias)
    else:
        emulated = set(instructions)
        emulated_args = {a for b in cfg.blocks for a in b.args}
    sliced = emulated

    barriers = [op for op in instructions
                if op in emulated and op.spec.name in ("bar", "barrier", "barrier.cluster") and not _is_arrive(op)]
    yields = [op for op in instructions if op in emulated and op.spec.name in ("mbarrier.try_wait", "mbarrier.test_wait")]

    mem_ops: dict[InstructionOp, int] = {}
    if memory_metrics:
        from hypa.passes.slice import is_tracked_memory

        for op in instructions:
            if is_tracked_memory(op) and (op in emulated or (slice_info is not None and op in slice_info.address_ops)):
                mem_ops[op] = len(mem_ops)
    address_users = {op for op in mem_ops if op not in emulated}
    # the slots the slice alone has decide which guards are counted (address support must
    # not make a count exact that is estimated without it: counts are the same either way)
    sliced_slots, _ = _frame_slots(cfg, emulated, emulated_args, address_users, set())
    emulated = emulated | support
    emulated_args = emulated_args | support_args
    address_users |= checked
    hoist = None
    if hoist_checks and checked and slice_info is not None:
        hoist = _plan_hoisting(func, cfg, slice_info, support, emulated_args, checked, mem_ops)
    local_values = _block_local_values(cfg, emulated | address_users, set(barriers) | set(yields))
    if hoist is not None:  # computed in some lanes only, or read by a preheader: in the frame
        local_values -= hoist.conditional_values() | hoist.leaves()
    slots, frame_bytes = _frame_slots(cfg, emulated, emulated_args, address_users, local_values)
    hoist_masks: list[int] = []
    if hoist is not None:
        hoist_masks = [frame_bytes + 4 * k for k in range(len(hoist.loops))]
        frame_bytes = _align(frame_bytes + 4 * len(hoist.loops), SLOT_ALIGN)

    pred_counters: dict[InstructionOp, int] = {}
    for op in instructions:
        g = op.guard_pred
        if g is None or op.spec.terminator:
            continue
        guard_v = op.operands[0]
        computed = guard_v in sliced_slots or (isinstance(guard_v.owner, InstructionOp) and guard_v.owner in sliced)
        if computed:
            pred_counters[op] = len(pred_counters)

    # memory layout
    params = []
    poff = 0
    for _text, name, space, ptx_type, align, dims in func.params.data:
        esize = max(1, isa.TYPE_BITS.get(ptx_type, 64) // 8)
        size = esize
        for d in dims:
            size *= max(d, 0)
        a = align or esize
        poff = _align(poff, a)
        params.append((name, ptx_type, poff, size))
        poff += size
    var_ops = [op for op in module.walk() if isinstance(op, VarOp)]
    shared_ops = [v for v in var_ops if v.space == ".shared"]
    shared_vars, shared_static = _var_layout([v for v in shared_ops if v.size_bytes() not in (None, 0)])
    dyn = [v for v in shared_ops if v.size_bytes() in (None, 0)]
    dyn_off = _align(shared_static, 16)
    for v in dyn:
        shared_vars[v.var_name] = Variable(v.var_name, ".shared", dyn_off, 0, v.align or 16, None, v.ptx_type)
    const_vars, const_bytes = _var_layout([v for v in var_ops if v.space == ".const"])
    global_vars, _ = _var_layout([v for v in var_ops if v.space == ".global"])
    # .local variables of recursive functions live in their frames (one per call)
    block_index = cfg.index
    frame_of = {v: activations[block_index[v.parent]] for v in var_ops
                if v.space == ".local" and v.parent in block_index and activations[block_index[v.parent]] != func.func_name}
    local_vars, local_bytes = _var_layout([v for v in var_ops if v.space == ".local" and v not in frame_of])
    frame_vars: dict[str, Variable] = {}
    frame_sizes: dict[str, int] = {}
    for fname in dict.fromkeys(frame_of.values()):
        fv, fsize = _var_layout([v for v, f in frame_of.items() if f == fname])
        frame_vars.update(fv)
        frame_sizes[fname] = _align(fsize, 16)
    real_calls: list[RealCall] = []
    real_returns: dict[int, str] = {}
    formals: dict[str, list[str]] = {}
    for bi, b in enumerate(cfg.blocks):
        t = b.last_op
        if isinstance(t, FallthroughOp) and CALL_ATTR in t.attributes:
            a = t.attributes[CALL_ATTR].data  # type: ignore[attr-defined]
            pairs = [[(x.data[0].data, x.data[1].data) for x in lst.data] for lst in a[1:3]]
            real_calls.append(RealCall(bi, a[0].data, pairs[0], pairs[1], cfg.index[t.successors[0]], activations[bi]))
            formals.setdefault(a[0].data, [f for _a, f in pairs[0] + pairs[1]])
        elif isinstance(t, ImplicitReturnOp) and REAL_RETURN_ATTR in t.attributes:
            real_returns[bi] = t.attributes[REAL_RETURN_ATTR].data  # type: ignore[attr-defined]
    function_entries = {f: bi for bi, (f, i, piece) in enumerate(origins)
                        if i == 0 and piece == 0 and activations[bi] == f and f != func.func_name}
    uses_stack = bool(real_calls) or any(op.spec.name in ("alloca", "stacksave", "stackrestore") for op in instructions)
    # .param variables declared inside bodies: call arguments and return values
    call_params, call_param_bytes = _call_param_layout(
        [v for v in var_ops if v.space == ".param" and v.parent_op() is not module]
    )

    prog = KernelProgram(
        module=module,
        func=func,
        mode=mode,
        cfg=cfg,
        ipdom=ipdom,
        emulated=emulated,
        emulated_args=emulated_args,
        slots=slots,
        local_values=local_values,
        frame_bytes=frame_bytes,
        instr_ids=instr_ids,
        instructions=instructions,
        block_instrs=block_instrs,
        barriers=barriers,
        yields=yields,
        pred_counters=pred_counters,
        mem_ops=mem_ops,
        params=params,
        param_bytes=poff,
        shared_vars=shared_vars,
        shared_static_bytes=dyn_off,
        const_vars=const_vars,
        const_bytes=const_bytes,
        global_vars=global_vars,
        local_vars=local_vars,
        local_bytes=local_bytes,
        call_params=call_params,
        call_param_bytes=call_param_bytes,
        origins=origins,
        slice_info=slice_info,
        checked=checked,
        sliced=sliced if support else None,
        bounds_check=bounds_check,
        hoist=hoist,
        hoist_masks=hoist_masks,
        initcheck=initcheck,
        notes=notes,
        activations=activations,
        real_calls=real_calls,
        function_entries=function_entries,
        real_returns=real_returns,
        frame_vars=frame_vars,
        frame_sizes=frame_sizes,
        formals=formals,
        uses_stack=uses_stack,
        heap_calls=heap_calls,
        yield_blocks=yield_blocks,
        options=effective,
    )
    prog.ops_cloned = extracted.ops_cloned
    prog.functions = extracted.functions
    from .phases import count

    count("operations copied from the input", extracted.ops_cloned)
    count("kernels prepared")
    count("functions prepared (kernels and the functions they call)", len(extracted.functions))
    prog.key = key
    return prog


def _plan_hoisting(func: FuncOp, cfg: CFG, slice_info: FunctionSlice, support: set[InstructionOp],
                   emulated_args: set[BlockArgument], checked: set[InstructionOp],
                   mem_ops: dict[InstructionOp, int]) -> HoistPlan | None:
    """The hoisted bounds checks (None: none).  Accesses whose guard is counted, or whose
    address memory metrics record, keep their check where they are."""
    from hypa.passes.hoist_checks import plan_hoisting

    from .phases import count

    counted = {op for op in checked if op.guard_pred is not None
               and (op.operands[0] in slice_info.values or isinstance(op.operands[0].owner, EntryValueOp))}
    plan = plan_hoisting(func, cfg, set(slice_info.ops), support, emulated_args, checked, set(mem_ops) | counted)
    if not plan.loops:
        return None
    count("loops whose bounds checks are hoisted", len(plan.loops))
    count("accesses checked once per loop entry", len(plan.hoisted))
    return plan


def _frame_slots(cfg: CFG, emulated: set[InstructionOp], emulated_args: set[BlockArgument],
                 address_users: set[InstructionOp], local_values: set[SSAValue]) -> tuple[dict[SSAValue, int], int]:
    """Frame slots (offsets) and the frame's size: results of emulated instructions, emulated
    block arguments, entry values they read (values used only later in their own block,
    ``local_values``, need none); entry values that the accesses whose address alone is
    computed (``address_users``) read."""
    slots: dict[SSAValue, int] = {}
    off = 0

    def give(v: SSAValue) -> None:
        nonlocal off
        if v in slots:
            return
        off = _align(off, SLOT_ALIGN)
        slots[v] = off
        off += slot_bytes(value_bits(v))

    for b in cfg.blocks:
        for a in b.args:
            if a in emulated_args:
                give(a)
        for op in b.ops:
            if isinstance(op, InstructionOp) and op in emulated:
                for r in op.results:
                    if r not in local_values:
                        give(r)
                for v in op.instruction_operands():
                    if isinstance(v.owner, EntryValueOp):
                        give(v)
            elif isinstance(op, InstructionOp) and op in address_users:
                for v in op.instruction_operands():
                    if isinstance(v.owner, EntryValueOp):
                        give(v)
    # edge operands of emulated block arguments must be computed too
    for b in cfg.blocks:
        term = b.last_op
        if term is None:
            continue
        for k, s in enumerate(term.successors):
            vals = _edge_values(term, k)
            for a, v in zip(s.args, vals):
                if a in emulated_args:
                    if v not in slots:
                        owner = v.owner
                        if isinstance(owner, EntryValueOp):
                            give(v)
                        elif isinstance(v, BlockArgument) and v in emulated_args:
                            pass
                        elif isinstance(owner, InstructionOp) and owner not in emulated:
                            raise ProgramError(
                                f"internal error: slice misses {instruction_text(owner)} feeding a block argument"
                            )
    return slots, _align(off, SLOT_ALIGN)


def _block_local_values(cfg: CFG, emulated: set[InstructionOp], barriers: set[InstructionOp]) -> set[SSAValue]:
    """Results used only by later emulated instructions of their own block, with no
    barrier in between: they live in LLVM registers, never in the warp frame."""
    out: set[SSAValue] = set()
    for b in cfg.blocks:
        pos: dict[InstructionOp, int] = {}
        bar_pos: list[int] = []
        for i, op in enumerate(b.ops):
            if isinstance(op, InstructionOp):
                pos[op] = i
                if op in barriers:
                    bar_pos.append(i)
        for op, i in pos.items():
            if op not in emulated or op in barriers:
                continue
            for r in op.results:
                ok = True
                for use in r.uses:
                    user = use.operation
                    j = pos.get(user)  # type: ignore[arg-type]
                    if j is None or j <= i or user not in emulated:
                        ok = False
                        break
                    if use.index >= len(user.instruction_operands()):  # type: ignore[union-attr]
                        ok = False  # passed along an edge
                        break
                    if any(i < k <= j for k in bar_pos):
                        ok = False
                        break
                if ok:
                    out.add(r)
    return out


def _is_arrive(op: InstructionOp) -> bool:
    return ".arrive" in op.modifiers


def _edge_values(term, k: int) -> list[SSAValue]:
    if isinstance(term, FallthroughOp):
        return list(term.operands)
    if isinstance(term, InstructionOp):
        return list(term.successor_operands(k))
    return []


def _program_key(module: ModuleOp, func: FuncOp, options: EmulationOptions, recorded: str) -> str:
    """A hash of the kernel's input (as PTX text: the fast printer, not xDSL's, with the
    kernel's own names made positional: ``canonical_names``), the slice the input records
    (if any) and the options that change the code (``options.key()``)."""
    from hypa.ptxdialect.printer import module_to_ptx

    text, name = canonical_names(module_to_ptx(module), func.func_name, func.param_names)
    h = hashlib.sha256()
    h.update(text.encode())
    h.update(f"|{name}|{recorded}|{options.key()!r}".encode())
    return h.hexdigest()[:32]


_LABEL_DEF = re.compile(r"^\s*([A-Za-z_$][\w$]*):", re.M)
#: a name as it stands in PTX text (not a register's, a directive's or a modifier's tail)
_NAME = re.compile(r"(?<![\w$%.])[A-Za-z_$][\w$]*")


def canonical_names(text: str, kernel: str, params: list[str]) -> tuple[str, str]:
    """The PTX ``text`` of a kernel (and what it reaches) with the kernel's name, its
    parameters and its labels replaced by positional names (``#k``, ``#p0``, ``#L0`` ...),
    and the kernel's name as it is hashed.  The emulator's code never depends on these names
    (parameters are offsets, labels blocks), so kernels that differ only in them -- an XLA
    module's copies of one fusion -- have one program key, and compile once.  A kernel whose
    name is used as a value (its address: a hash of the name) keeps its name."""
    names: dict[str, str] = {}
    if sum(1 for m in _NAME.finditer(text) if m.group() == kernel) == 1:  # only where it is declared
        names[kernel] = "#k"
    for i, p in enumerate(params):
        names.setdefault(p, f"#p{i}")
    for j, label in enumerate(dict.fromkeys(_LABEL_DEF.findall(text))):
        names.setdefault(label, f"#L{j}")
    if not names:
        return text, kernel
    return _NAME.sub(lambda m: names.get(m.group(), m.group()), text), names.get(kernel, kernel)


def _slice_signature(func: FuncOp) -> str:
    """Which instructions a recorded slice marks (in program order), as text."""
    marks = []
    for i, op in enumerate(o for o in func.body.walk() if isinstance(o, InstructionOp)):
        if SLICE_ATTR in op.attributes:
            marks.append(f"{i}")
        elif "hypa.address" in op.attributes:
            marks.append(f"a{i}")
    return ",".join(marks)


def _block_of(v: SSAValue, cfg: CFG) -> int:
    owner = v.owner
    block = owner if isinstance(v, BlockArgument) else owner.parent  # type: ignore[union-attr]
    return cfg.index[block]  # type: ignore[index]


def _live_in(cfg: CFG) -> list[set[SSAValue]]:
    """The values live at the start of each block (``passes/liveness.py``): a real call saves
    those of its return block."""
    liveness = Liveness.of(cfg)
    return [liveness.live_in(b) for b in range(len(cfg))]


def reconvergence(prog: KernelProgram, block: int) -> int:
    """Block where a divergent branch at the end of ``block`` reconverges (-1: exit)."""
    r = prog.ipdom[block]
    return -1 if r == VIRTUAL_EXIT else r

