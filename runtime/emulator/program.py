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
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from hypa.passes.cfg import CFG
from hypa.passes.contract import CONTRACT_ATTR, mark_contractions
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
from hypa.passes.spin_loops import independent_thread_scheduling, waiting_loop_headers, yield_headers
from hypa.passes.out_of_ssa import PTXOutOfSSA
from hypa.passes.reachable import SymbolIndex, extract_kernel, reachable
from hypa.passes.slice import SLICE_ATTR, FunctionSlice, SliceBranches, recorded_slice, slice_options_text
from hypa.passes.ssa import PTXToSSA, is_ssa
from hypa.ptxdialect import isa
from hypa.ptxdialect.diagnostics import HypaError
from hypa.ptxdialect.limits import STATIC_SHARED_BYTES
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
    #: hazards between threads on shared bytes are found (``runtime/emulator/lowering/racecheck.py``)
    racecheck: bool = False
    #: racecheck's sample (``EmulationOptions.racecheck_sample``): the kernel writes shared
    #: memory, so its code holds racecheck's checks, run only where the launch gives a shadow
    #: (``CTX_RACE_SHADOW``: the first CTA of the kernel's first launch, ``Emulator._run``)
    race_sample: bool = False
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
    #: the interleaved schedule (``EmulationOptions.schedule``): the writes to memory other
    #: threads see, before which a warp's turn ends (``lowering/warp.py``, ``gen_turn``)
    turns: list[InstructionOp] = field(default_factory=list)
    #: ... and the headers of the loops that wait for another thread, where its turn ends
    #: with ``RC_SPIN`` (``passes/spin_loops.py``, ``waiting_loop_headers``)
    wait_blocks: frozenset[int] = frozenset()

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

    def materialize(self) -> None:
        """Make every field the whole preparation's (a ``ReusedProgram`` prepares again)."""

    def read_parameters(self) -> set[str] | None:
        """Kernel parameters whose buffers the emulated code may read (``None``: any).

        The emulated instructions are the slice (or everything in full mode); a buffer no
        emulated instruction reads cannot change the counts, so its contents need not be part
        of a launch's key."""
        from hypa.passes.slice import AddressBases, memory_effect

        bases = AddressBases(set(self.func.param_names), set(self.global_vars) | set(self.shared_vars))
        out: set[str] = set()
        for op in self.instructions:
            if op not in self.emulated:
                continue
            name = op.spec.name
            if op.spec.kind == "texture" or name.startswith("cp."):
                return None  # textures, surfaces, bulk copies: not traced here
            reads, _writes = memory_effect(op)
            if not reads:
                continue
            if isa.state_space(op.spec, op.modifiers) not in ("global", "generic", None):
                continue
            roots = bases.of_access(op)
            if not isinstance(roots, frozenset):
                return None
            for r in roots:
                if r.startswith("param:"):
                    out.add(r[6:])
        return out

    def buffer_reads(self) -> list[tuple[InstructionOp, list[str]]]:
        """Sliced loads of global memory whose address comes from parameters alone, with
        those parameters: a launch must bind one of them to a buffer."""
        if self.slice_info is None:
            return []
        from hypa.passes.slice import AddressBases, memory_effect

        bases = AddressBases(set(self.func.param_names), set(self.global_vars) | set(self.shared_vars))
        out = []
        for op in sorted(self.slice_info.ops, key=self.instr_ids.__getitem__):  # in program order
            reads, _w = memory_effect(op)
            if not reads or isa.state_space(op.spec, op.modifiers) not in ("global", "generic"):
                continue
            roots = bases.of_access(op)
            if roots == "?" or not roots:
                continue
            # the roots also hold scalars used in the offset (``p[i * n]``: p and n):
            # the access is fine when one root is a buffer or a variable
            params = sorted(r[6:] for r in roots if r.startswith("param:"))  # type: ignore[union-attr]
            if len(params) == len(roots):
                out.append((op, params))
        return out


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
    reuse: bool = False,
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

    ``reuse``: a kernel in register form without calls to inline whose program key was
    prepared before (in this process, or in the cache: ``PreparedSummary``) skips the passes:
    its blocks and layout come from the input, what the passes decided (the slice, the
    counted guards, the frame size ...) from the record, and the rest of the preparation
    runs only when something needs it (lowering, an error message): ``ReusedProgram``.
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
    if reuse and not is_ssa(func) and (mode == "full" or recorded_slice(func) is None) \
            and not has_calls_to_inline(module, func):
        # the options as the key of a whole preparation has them (no slice recorded in the IR)
        keyed = dataclasses.replace(effective, exact_predicates=bool(exact_predicates))
        prog = _reused(module, func, index, keyed, lambda: prepare(module, func, options, index))
        if prog is not None:
            return prog
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
    reusable = reuse and recorded is None and not is_ssa(func) and not has_calls_to_inline(module, func)
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
    wait_blocks = frozenset(waiting_loop_headers(cfg)) if effective.schedule == "interleave" else frozenset()

    instructions: list[InstructionOp] = []
    block_instrs: list[list[InstructionOp]] = []
    for b in cfg.blocks:
        bi = [op for op in b.ops if isinstance(op, InstructionOp)]
        block_instrs.append(bi)
        instructions.extend(bi)
    instr_ids = {op: i for i, op in enumerate(instructions)}
    heap_calls = _calls_heap(func, instructions, defined)
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
    turns = [op for op in instructions if op in emulated and is_turn_write(op)] \
        if effective.schedule == "interleave" else []
    local_values = _block_local_values(cfg, emulated | address_users, set(barriers) | set(yields) | set(turns))
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

    layout = _layout([op for op in module.walk() if isinstance(op, VarOp)], module, func, cfg, instructions,
                     origins, activations)

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
        turns=turns,
        wait_blocks=wait_blocks,
        pred_counters=pred_counters,
        mem_ops=mem_ops,
        origins=origins,
        slice_info=slice_info,
        checked=checked,
        sliced=sliced if support else None,
        bounds_check=bounds_check,
        hoist=hoist,
        hoist_masks=hoist_masks,
        initcheck=initcheck,
        racecheck=effective.racecheck,
        race_sample=effective.racecheck_sample and writes_shared(instructions, layout["shared_vars"]),
        notes=notes,
        activations=activations,
        heap_calls=heap_calls,
        yield_blocks=yield_blocks,
        options=effective,
        **layout,
    )
    prog.ops_cloned = extracted.ops_cloned
    prog.functions = extracted.functions
    from .phases import count

    count("operations copied from the input", extracted.ops_cloned)
    count("kernels prepared")
    count("functions prepared (kernels and the functions they call)", len(extracted.functions))
    prog.key = key
    if reusable:
        _remember(key, PreparedSummary.of(prog))
    return prog


# -- reusing a preparation ------------------------------------------------------------------
# A warm run prepared every kernel again although its compiled code came from the cache:
# the passes cost more than the rest of the run (HyPA's module_0002: 1.1 s of 2.7 s).  What
# the passes decide is recorded per program key (the kernel's text with its names made
# positional, the module-level declarations it uses, the options) beside the compiled code;
# a kernel whose key was prepared before takes its blocks and layout from the input and the
# decisions from the record, and kernels that differ only in their names (an XLA module's
# copies of one fusion) share one record in a process too.

#: the format of a record (``jit.read_record``); a record of another format is prepared again
PREPARED_MAGIC = b"HYPAPREP2"  # 2: sealed with the record's name too (jit.write_record)
#: records of this process, by program key
_summaries: dict[str, "PreparedSummary"] = {}


def _fingerprint(block_instrs: list[list[InstructionOp]], params: int) -> str:
    """The shape a record's indices refer to: each block's opcodes and guards, and the number
    of parameters (the same in register and SSA form; names left out)."""
    h = hashlib.sha256(f"{params}|{len(block_instrs)}".encode())
    for ops in block_instrs:
        h.update(("|" + ";".join(op.opcode + ("@" if op.guard_pred is not None else "") for op in ops)).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class PreparedSummary:
    """What the passes decided for a program, by instruction index (layout order) and
    parameter index: what reports, launch keys and the launch's memory need from them."""

    fingerprint: str
    frame_bytes: int
    #: the instructions reports count as emulated, the guards whose true lanes are counted
    #: and the memory instructions measured (in counter order)
    reported: tuple[int, ...]
    pred_counters: tuple[int, ...]
    mem_ops: tuple[int, ...]
    notes: tuple[str, ...]
    #: sliced loads whose address comes from parameters alone: (instruction, parameters)
    buffer_reads: tuple[tuple[int, tuple[int, ...]], ...]
    #: ``read_parameters`` (None: any)
    read_params: tuple[int, ...] | None

    @staticmethod
    def of(prog: KernelProgram) -> "PreparedSummary":
        ids = prog.instr_ids
        pnames = prog.func.param_names
        read = prog.read_parameters()
        return PreparedSummary(
            _fingerprint(prog.block_instrs, len(prog.params)), prog.frame_bytes,
            tuple(sorted(ids[op] for op in prog.reported)),
            tuple(ids[op] for op in sorted(prog.pred_counters, key=prog.pred_counters.__getitem__)),
            tuple(ids[op] for op in sorted(prog.mem_ops, key=prog.mem_ops.__getitem__)),
            tuple(prog.notes),
            tuple((ids[op], tuple(pnames.index(p) for p in params)) for op, params in prog.buffer_reads()),
            None if read is None else tuple(sorted(pnames.index(p) for p in read)))

    def to_bytes(self) -> bytes:
        import json

        return json.dumps(self.__dict__).encode()

    @staticmethod
    def from_bytes(data: bytes) -> "PreparedSummary | None":
        """The record, or None where it is not one of this format."""
        import json

        try:
            d = json.loads(data)
            ints = lambda xs: tuple(int(x) for x in xs)  # noqa: E731
            s = PreparedSummary(str(d["fingerprint"]), int(d["frame_bytes"]), ints(d["reported"]),
                                ints(d["pred_counters"]), ints(d["mem_ops"]), tuple(str(n) for n in d["notes"]),
                                tuple((int(i), ints(ps)) for i, ps in d["buffer_reads"]),
                                None if d["read_params"] is None else ints(d["read_params"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return s if len(d) == len(s.__dict__) else None

    def fits(self, instructions: int, params: int) -> bool:
        """Whether every index names an instruction or parameter of the program."""
        idx = [*self.reported, *self.pred_counters, *self.mem_ops, *(i for i, _ in self.buffer_reads)]
        pidx = [*(p for _, ps in self.buffer_reads for p in ps), *(self.read_params or ())]
        return all(0 <= i < instructions for i in idx) and all(0 <= p < params for p in pidx)


def _record_name(key: str) -> str:
    """A record's name in the cache: the program key, the sources that prepare it
    (``jit.sources_digest``) and the record's format."""
    from .jit import sources_digest

    return hashlib.sha256(f"{key}|{sources_digest()}|".encode() + PREPARED_MAGIC).hexdigest()[:40]


def _recall(key: str) -> PreparedSummary | None:
    s = _summaries.get(key)
    if s is None:
        from .jit import read_record

        data = read_record(_record_name(key), PREPARED_MAGIC)
        s = PreparedSummary.from_bytes(data) if data is not None else None
    return s


def _remember(key: str, summary: PreparedSummary) -> None:
    from .jit import write_record

    _summaries[key] = summary
    write_record(_record_name(key), PREPARED_MAGIC, summary.to_bytes())


class _TopLevel:
    """Module-level operations printed as a module (``module_to_ptx`` reads ``ops``)."""

    def __init__(self, ops: list) -> None:
        self.ops = ops


def _reused(module: ModuleOp, func: FuncOp, index: SymbolIndex | None, options: EmulationOptions,
            again) -> "ReusedProgram | None":
    """The program of a kernel (register form, nothing to inline) from its record, made from
    the input's own operations (nothing is copied: a ``ReusedProgram`` never changes its IR);
    None where there is no record, or it does not fit the kernel's blocks.  ``options``:
    ``_program_key``'s, as ``prepare`` normalizes them; ``again``: the whole preparation."""
    from .phases import count

    keep, reached = reachable(module, func, index)
    key = _program_key(_TopLevel(keep), func, options, "")  # type: ignore[arg-type]
    summary = _recall(key)
    if summary is None:
        return None
    cfg = CFG.of(func)
    block_instrs = [[op for op in b.ops if isinstance(op, InstructionOp)] for b in cfg.blocks]
    instructions = [op for ops in block_instrs for op in ops]
    nparams = len(func.params.data)
    if summary.fingerprint != _fingerprint(block_instrs, nparams) or not summary.fits(len(instructions), nparams):
        _summaries.pop(key, None)
        count("prepared programs whose record did not fit (prepared again)")
        return None
    _summaries[key] = summary
    origins = block_origins(func)
    activations = block_activations(func)
    heap_calls = _calls_heap(func, instructions, set(reached))
    var_ops: list[VarOp] = []  # as the walk of prepare's copy, which holds only the kernel's body
    for op in keep:
        if isinstance(op, VarOp):
            var_ops.append(op)
        elif op is func:
            var_ops.extend(o for o in func.body.walk() if isinstance(o, VarOp))
    layout = _layout(var_ops, module, func, cfg, instructions, origins, activations)
    prog = ReusedProgram.__new__(ReusedProgram)
    prog.__dict__.update(
        module=module, func=func, mode=options.mode, cfg=cfg, instructions=instructions, block_instrs=block_instrs,
        instr_ids={op: i for i, op in enumerate(instructions)}, frame_bytes=summary.frame_bytes,
        sliced={instructions[i] for i in summary.reported},
        pred_counters={instructions[i]: k for k, i in enumerate(summary.pred_counters)},
        mem_ops={instructions[i]: k for k, i in enumerate(summary.mem_ops)},
        origins=origins, activations=activations, key=key, notes=list(summary.notes), ops_cloned=0,
        functions=reached, heap_calls=heap_calls, bounds_check=options.bounds_check, initcheck=options.initcheck,
        racecheck=options.racecheck, options=options, **layout)
    prog.race_sample = options.racecheck_sample and writes_shared(instructions, layout["shared_vars"])
    prog._summary, prog._again, prog.materialized = summary, again, False
    count("kernels prepared")
    count("functions prepared (kernels and the functions they call)", len(reached))
    count("kernels prepared from a record (passes skipped)")
    return prog


class ReusedProgram(KernelProgram):
    """A program made from a record (``PreparedSummary``): its blocks are the input's, in
    register form; the fields only lowering and error messages read (frame slots, the slice's
    values, the hoisted checks ...) come from preparing the kernel again, the first time one
    is read (``materialize``), which replaces every field with the whole preparation's."""

    materialized: bool

    def materialize(self) -> None:
        if not self.materialized:
            self.__dict__.update(self._again().__dict__)
            self.materialized = True

    def read_parameters(self) -> set[str] | None:
        if self.materialized:
            return super().read_parameters()
        read = self._summary.read_params
        return None if read is None else {self.func.param_names[p] for p in read}

    def buffer_reads(self) -> list[tuple[InstructionOp, list[str]]]:
        if self.materialized:
            return super().buffer_reads()
        names = self.func.param_names
        return [(self.instructions[i], [names[p] for p in ps]) for i, ps in self._summary.buffer_reads]


def _prepared_field(name: str) -> property:
    def get(self):
        if name not in self.__dict__:
            self.materialize()
        return self.__dict__[name]

    def put(self, value) -> None:
        self.__dict__[name] = value

    return property(get, put)


for _name in ("emulated", "emulated_args", "slots", "local_values", "barriers", "yields", "turns", "wait_blocks", "ipdom", "slice_info",
              "checked", "hoist", "hoist_masks", "yield_blocks", "_live_in"):
    setattr(ReusedProgram, _name, _prepared_field(_name))
del _name



def _calls_heap(func: FuncOp, instructions: list[InstructionOp], defined: set[str]) -> bool:
    """Whether the kernel calls the device heap; a ProgramError where it calls a function the
    module declares but does not define."""
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
    return heap_calls


def _layout(var_ops: list[VarOp], module: ModuleOp, func: FuncOp, cfg: CFG, instructions: list[InstructionOp],
            origins: list[tuple[str, int, int]], activations: list[str]) -> dict:
    """The memory layout of a kernel's state spaces, its real calls and its stack: the
    ``KernelProgram`` fields that follow from the blocks and declarations alone
    (``var_ops``: the declarations of the module holding the kernel, in module order)."""
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
    shared_ops = [v for v in var_ops if v.space == ".shared"]
    shared_vars, shared_static = _var_layout([v for v in shared_ops if v.size_bytes() not in (None, 0)])
    if shared_static > STATIC_SHARED_BYTES:  # ptxas refuses it (it has no line to point at either)
        raise ProgramError(f"kernel {func.func_name} uses too much shared data ({shared_static} bytes of static "
                           f".shared, {STATIC_SHARED_BYTES} max; more must be dynamic shared memory)")
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

    return dict(params=params, param_bytes=poff, shared_vars=shared_vars, shared_static_bytes=dyn_off,
                const_vars=const_vars, const_bytes=const_bytes, global_vars=global_vars, local_vars=local_vars,
                local_bytes=local_bytes, call_params=call_params, call_param_bytes=call_param_bytes,
                real_calls=real_calls, function_entries=function_entries, real_returns=real_returns,
                frame_vars=frame_vars, frame_sizes=frame_sizes, formals=formals, uses_stack=uses_stack)


def _plan_hoisting(func: FuncOp, cfg: CFG, slice_info: FunctionSlice, support: set[InstructionOp],
                   emulated_args: set[BlockArgument], checked: set[InstructionOp],
                   mem_ops: dict[InstructionOp, int]) -> HoistPlan | None:
    """The hoisted bounds checks (None: none).  Accesses whose guard is counted keep their
    check where they are; those whose address memory metrics record have it hoisted, their
    address still computed every time (the metrics read it)."""
    from hypa.passes.hoist_checks import plan_hoisting

    from .phases import count

    counted = {op for op in checked if op.guard_pred is not None
               and (op.operands[0] in slice_info.values or isinstance(op.operands[0].owner, EntryValueOp))}
    plan = plan_hoisting(func, cfg, set(slice_info.ops), support, emulated_args, checked, counted, set(mem_ops))
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


def syncs_grid(prog: KernelProgram) -> bool:
    """The kernel reads cooperative groups' grid workspace (``%envreg1``/``%envreg2``): a
    ``grid.sync()``, whose CTAs wait for each other, so every CTA must be resident."""
    hit = getattr(prog, "_syncs_grid", None)
    if hit is None:
        hit = any(a[0] == "sreg" and a[1] in ("%envreg1", "%envreg2")
                  for op in prog.instructions for a in op.operands_ast if isinstance(a, tuple))
        prog._syncs_grid = hit  # type: ignore[attr-defined]
    return hit


def writes_shared(instructions: list[InstructionOp], shared_vars: dict) -> bool:
    """Whether a kernel may write shared memory: a write to ``.shared``, or a generic (or
    matrix) write where the kernel has shared variables.  Without one no shared-memory hazard
    can happen, and racecheck's sample leaves the kernel's code as it is."""
    for op in instructions:
        if "w" in op.spec.memory and op.spec.kind != "texture":
            space = isa.state_space(op.spec, op.modifiers)
            if space == "shared" or (shared_vars and space in ("generic", None)):
                return True
    return False


def is_turn_write(op: InstructionOp) -> bool:
    """A write to memory that other threads see (not ``.local``/``.param``): the
    interleaved schedule ends a warp's turn before it."""
    return "w" in op.spec.memory and isa.state_space(op.spec, op.modifiers) not in ("local", "param")


def _block_local_values(cfg: CFG, emulated: set[InstructionOp], barriers: set[InstructionOp]) -> set[SSAValue]:
    """Results used only by later emulated instructions of their own block, with no
    barrier in between: they live in LLVM registers, never in the warp frame.  An
    ``add``/``sub`` fused with a ``mul`` (``hypa.contract``) reads that ``mul``'s operands
    where it stands, so it counts as their user too (a turn between the two ends the block)."""
    out: set[SSAValue] = set()
    # the fused adds (in any block: ptxas sinks a mul by a constant into other blocks) by the
    # values of their mul's operands
    fused_readers: dict[SSAValue, list[InstructionOp]] = {}
    for b in cfg.blocks:
        for op in b.ops:
            mark = op.attributes.get(CONTRACT_ATTR) if isinstance(op, InstructionOp) else None
            if isinstance(mark, IntegerAttr):
                mul = op.arg_operands(mark.value.data)[0].owner
                assert isinstance(mul, InstructionOp)
                for v in (*mul.arg_operands(1), *mul.arg_operands(2)):
                    fused_readers.setdefault(v, []).append(op)
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
                for user in fused_readers.get(r, ()) if ok else ():
                    if user in emulated and (user not in pos or any(i < k <= pos[user] for k in bar_pos)):
                        ok = False  # read in another block, or after a turn or barrier
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

