"""``hoist-bounds-checks``: slice mode's bounds checks, once per loop entry where they can be.

Slice mode emulates the slice and, to stay as safe as full mode, also computes the address
of every access outside it and checks it (``slice.address_support``): inside a loop, that
is the address arithmetic of every access, every trip.  This pass finds the accesses whose
address is affine in a loop's trip number ``k`` -- ``base + stride*k`` with ``base`` and
``stride`` known when the loop is entered -- and checks, once per entry and per lane, the
whole range ``k`` covers.  The trip count comes from the loop's exit test: an exiting block
that every trip runs (it dominates the latches) whose branch compares an affine value with
a loop-invariant one.  From the compare a candidate last trip ``k_exit`` is solved, then
verified by evaluating the exit test at ``k_exit`` exactly as the emulator would (wrapping
arithmetic at the instruction's width): if the lane would leave there, it runs at most
``k_exit + 1`` trips, whatever the loop does before (an early ``break`` only makes it fewer),
so the range of trips ``0..k_exit`` covers every access the lane makes.

A lane whose whole range is in bounds (and whose sign/zero extensions along the way cannot
wrap inside it: ``Obligation``) is *proven* for this entry: the accesses of the loop and the
address arithmetic only they need (``HoistedLoop.conditional``) are skipped for it.  Every
other lane -- a range reaching out of bounds, a trip count that cannot be solved, an address
in memory the check does not cover -- runs them as before, access by access: an access out
of bounds is reported at the same trip with the same diagnostic as without hoisting, and a
loop that leaves early never reports an access it does not make.  Proofs are per lane and
per entry: the preheader (the loop's one entry block) computes them for the lanes running
it, which are the only lanes that can reach the header from outside.

What is hoisted: ``ld``/``ldu``/``st`` outside the slice (``prog.checked``) in global or
generic memory, addressed by a register, in a loop of a function without real calls, not
under a counted guard.  An access whose address memory metrics (or the timing estimate's
trace) record is hoisted too, but the arithmetic of its address stays computed for every
lane, since the metrics read it on every trip.  With initcheck on, a range in the shared or local
window is not proven (those accesses mark and check shadow bytes).  The address arithmetic
understood: ``mov``, ``add``, ``sub``, ``mul.lo``/``.wide``, ``mad.lo``/``.wide``, ``shl`` by an
immediate, integer ``cvt`` and ``cvta`` to global, over loop-invariant values, immediates,
``%tid``/``%ctaid``/``%ntid``/``%nctaid`` and induction variables (a header argument that
every latch steps by a loop-invariant amount).

Marks (for reading the IR; ``runtime/emulator/program.prepare`` recomputes the plan): a hoisted
access carries ``hypa.hoisted_check`` (the loop's label), arithmetic computed only for
unproven lanes ``hypa.hoisted_address``, and the preheader's terminator
``hypa.range_checks``: the loop's exit test and each access's range.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from hypa.ptxdialect import isa
from hypa.ptxdialect.dialect import FallthroughOp, FuncOp, InstructionOp
from hypa.ptxdialect.operands import is_float_immediate, parse_int_immediate

from .cfg import CFG
from .dominance import dominates, immediate_dominators
from .inline import CALL_ATTR, DISPATCH_ATTR, GUARDED_CALL_ATTR, REAL_RETURN_ATTR
from .loops import Loop, find_loops

MASK64 = (1 << 64) - 1

# ---------------------------------------------------------------------------
# Loop-invariant expressions (evaluated in the preheader, as 64-bit lanes)
# ---------------------------------------------------------------------------
# ("v", value)          the value's lanes, zero-extended
# ("c", n)              a constant (0 <= n < 2**64)
# ("sreg", name)        a special register that does not change while a thread runs
# ("add"|"sub"|"mul", a, b)
# ("sext"|"zext", a, bits)   the low ``bits`` of ``a``, extended
# A quantity of ``bits`` bits is right in the low ``bits`` of its expression's value.

Expr = tuple
ZERO: Expr = ("c", 0)

#: special registers whose value a thread keeps for its whole life
INVARIANT_SREGS = frozenset(f"%{r}.{c}" for r in ("tid", "ntid", "ctaid", "nctaid") for c in "xyz") | {"%laneid"}


def const(n: int) -> Expr:
    return ("c", n & MASK64)


def _add(a: Expr, b: Expr) -> Expr:
    if a[0] == "c" and b[0] == "c":
        return const(a[1] + b[1])
    if a == ZERO:
        return b
    if b == ZERO:
        return a
    return ("add", a, b)


def _sub(a: Expr, b: Expr) -> Expr:
    if a[0] == "c" and b[0] == "c":
        return const(a[1] - b[1])
    if b == ZERO:
        return a
    return ("sub", a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    if a[0] == "c" and b[0] == "c":
        return const(a[1] * b[1])
    if a == ZERO or b == ZERO:
        return ZERO
    if a == ("c", 1):
        return b
    if b == ("c", 1):
        return a
    if b[0] == "c":  # constants first: 4*%r1
        a, b = b, a
    return ("mul", a, b)


def _ext(a: Expr, bits: int, signed: bool) -> Expr:
    if bits >= 64:
        return a
    if a[0] == "c":
        v = a[1] & ((1 << bits) - 1)
        if signed and v >> (bits - 1):
            v -= 1 << bits
        return const(v)
    return ("sext" if signed else "zext", a, bits)


@dataclass(frozen=True)
class Aff:
    """A value that is ``base + step*k`` (mod ``2**bits``) in trip ``k`` of a loop."""

    base: Expr
    step: Expr
    bits: int

    @property
    def invariant(self) -> bool:
        return self.step == ZERO


@dataclass(frozen=True)
class Obligation:
    """``aff`` (``bits`` wide) must not wrap over the trips ``0..k_exit`` read as
    ``signed`` (or unsigned) numbers: then its extension to 64 bits is affine too."""

    aff: Aff
    signed: bool


@dataclass(frozen=True)
class Exit:
    """The lane leaves the loop in the first trip where ``x <rel> y`` holds (``x`` affine,
    ``y`` invariant, compared at ``x.bits`` as signed or unsigned numbers)."""

    x: Aff
    y: Expr
    rel: str  # lt le gt ge eq ne
    signed: bool
    branch: InstructionOp


@dataclass(frozen=True)
class RangeCheck:
    """An access whose address is ``addr`` (64-bit, affine) and which touches ``nbytes``."""

    op: InstructionOp
    addr: Aff
    nbytes: int


@dataclass
class HoistedLoop:
    """One loop whose checks are hoisted: its header and single entry block (the preheader,
    where the range checks run), its exit test, the accesses and the no-wrap conditions."""

    index: int
    header: int
    preheader: int
    blocks: set[int]
    label: str
    exit: Exit
    checks: list[RangeCheck]
    obligations: list[Obligation]
    #: instructions and header arguments that only the hoisted accesses need: computed
    #: only for the lanes whose range check failed
    conditional: set[InstructionOp] = field(default_factory=set)
    conditional_args: set[BlockArgument] = field(default_factory=set)

    def leaves(self) -> set[SSAValue]:
        """The values the preheader reads to check the loop."""
        out: set[SSAValue] = set()
        exprs: list[Expr] = [self.exit.x.base, self.exit.x.step, self.exit.y]
        for c in self.checks:
            exprs += [c.addr.base, c.addr.step]
        for o in self.obligations:
            exprs += [o.aff.base, o.aff.step]
        for e in exprs:
            out |= expr_values(e)
        return out


@dataclass
class HoistPlan:
    """The hoisted loops of one kernel, and the lookups the lowering needs."""

    loops: list[HoistedLoop] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reindex()

    def reindex(self) -> None:
        #: instruction (hoisted access or conditional arithmetic) -> its loop
        self.region: dict[InstructionOp, HoistedLoop] = {}
        self.conditional_args: dict[BlockArgument, HoistedLoop] = {}
        self.by_preheader: dict[int, list[HoistedLoop]] = {}
        for lp in self.loops:
            for c in lp.checks:
                self.region[c.op] = lp
            for op in lp.conditional:
                self.region[op] = lp
            for a in lp.conditional_args:
                self.conditional_args[a] = lp
            self.by_preheader.setdefault(lp.preheader, []).append(lp)

    @property
    def hoisted(self) -> list[InstructionOp]:
        return [c.op for lp in self.loops for c in lp.checks]

    def conditional_values(self) -> set[SSAValue]:
        out: set[SSAValue] = set()
        for lp in self.loops:
            for op in lp.conditional:
                out.update(op.results)
            out.update(lp.conditional_args)
        return out

    def leaves(self) -> set[SSAValue]:
        out: set[SSAValue] = set()
        for lp in self.loops:
            out |= lp.leaves()
        return out


def expr_values(e: Expr) -> set[SSAValue]:
    if e[0] == "v":
        return {e[1]}
    if e[0] in ("c", "sreg"):
        return set()
    if e[0] in ("sext", "zext"):
        return expr_values(e[1])
    return expr_values(e[1]) | expr_values(e[2])


# ---------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------

#: arithmetic the plan may skip for proven lanes (no memory, no side effect, no error)
PURE = frozenset({"mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "cvt", "cvta",
                  "setp", "selp", "neg", "min", "max", "abs"})
#: memory operand of the accesses hoisted
_ADDRESS_OPERAND = {"ld": 1, "ldu": 1, "st": 0}
_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
#: setp comparisons: (relation, signedness: "s" follows the type, "u" unsigned, None either)
_CMP = {".eq": ("eq", None), ".ne": ("ne", None), ".lt": ("lt", "s"), ".le": ("le", "s"), ".gt": ("gt", "s"),
        ".ge": ("ge", "s"), ".lo": ("lt", "u"), ".ls": ("le", "u"), ".hi": ("gt", "u"), ".hs": ("ge", "u")}


def _value_bits(v: SSAValue) -> int | None:
    """Bits of a scalar integer register value; None for predicates, vectors, others."""
    name = getattr(v.type, "type_name", None)
    if name is None or name == "pred":
        return None
    bits = isa.TYPE_BITS.get("." + name)
    return bits if bits in (8, 16, 32, 64) else None


def _int_type(t: str) -> bool:
    return t[:2] in (".s", ".u", ".b") and t[2:].isdigit() and int(t[2:]) in (8, 16, 32, 64)


def _is_signed(t: str) -> bool:
    return t.startswith(".s")


def _types(op: InstructionOp) -> tuple[str, ...]:
    return op.types


class _LoopAnalysis:
    """Affine forms of the values of one loop (``None``: not affine, or not readable)."""

    def __init__(self, ctx: "_Context", loop: Loop):
        self.ctx = ctx
        self.loop = loop
        self.header_block = ctx.cfg.blocks[loop.header]
        self.memo: dict[SSAValue, tuple[Aff, frozenset[Obligation]] | None] = {}

    # -- values ----------------------------------------------------------------------

    def level(self, block: Block) -> bool:
        """The block belongs to this loop and to none of its inner loops."""
        bi = self.ctx.cfg.index.get(block)
        return bi is not None and self.ctx.innermost.get(bi) is self.loop

    def inside(self, block: Block | None) -> bool:
        bi = self.ctx.cfg.index.get(block) if block is not None else None
        return bi is not None and bi in self.loop.blocks

    def of(self, v: SSAValue) -> tuple[Aff, frozenset[Obligation]] | None:
        if v in self.memo:
            return self.memo[v]
        self.memo[v] = None  # a cycle other than an induction variable's is not affine
        r = self._of(v)
        self.memo[v] = r
        return r

    def _of(self, v: SSAValue) -> tuple[Aff, frozenset[Obligation]] | None:
        bits = _value_bits(v)
        if bits is None:
            return None
        block = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
        if not self.inside(block):
            return (Aff(("v", v), ZERO, bits), frozenset()) if self.ctx.readable(v) else None
        if isinstance(v, BlockArgument):
            return self._induction(v, bits) if v.block is self.header_block else None
        op = v.owner
        if not isinstance(op, InstructionOp) or not self.level(op.parent_block()) or op.guard_pred is not None:
            return None
        if len(op.results) != 1:
            return None
        r = self._instruction(op)
        if r is None:
            return None
        aff, obl = r
        # a destination register wider than the result: extended as the emulator writes it
        # (sign-extended by cvt to a signed type, zero-extended otherwise)
        return self._fit(aff, obl, bits, op.spec.name == "cvt" and _is_signed(_types(op)[0]))

    def _induction(self, arg: BlockArgument, bits: int) -> tuple[Aff, frozenset[Obligation]] | None:
        """A header argument fed ``init`` from the preheader and ``arg + step`` by every latch."""
        entry_vals, back_vals = self.ctx.incoming(arg, self.loop)
        if len(set(entry_vals)) != 1 or not back_vals or len(set(back_vals)) != 1:
            return None
        init = entry_vals[0]
        if not self.ctx.readable(init) or _value_bits(init) != bits:
            return None
        nxt = back_vals[0]
        if nxt is arg:
            return Aff(("v", init), ZERO, bits), frozenset()
        op = nxt.owner
        if (not isinstance(op, InstructionOp) or op.spec.name not in ("add", "sub") or op.guard_pred is not None
                or not self.level(op.parent_block()) or not self._plain_int(op)):
            return None
        t = _types(op)[0]
        if isa.TYPE_BITS[t] != bits or _value_bits(nxt) != bits:
            return None
        args = op.operands_ast
        regs = [op.arg_operands(k) for k in (1, 2)]
        if args[1][0] == "reg" and regs[0] == [arg]:
            other = 2
        elif op.spec.name == "add" and args[2][0] == "reg" and regs[1] == [arg]:
            other = 1
        else:
            return None
        self.memo[arg] = None  # the step must not depend on the induction variable
        s = self._operand(op, other, bits, _is_signed(t))
        if s is None or not s[0].invariant or s[1]:
            return None
        step = s[0].base if op.spec.name == "add" else _sub(ZERO, s[0].base)
        return Aff(("v", init), step, bits), frozenset()

    @staticmethod
    def _plain_int(op: InstructionOp) -> bool:
        """An integer instruction with no saturation, carry or high half."""
        types = _types(op)
        return (bool(types) and all(_int_type(t) for t in types) and not op.spec.cc_use
                and not any(m in (".sat", ".cc", ".hi") for m in op.modifiers))

    def _operand(self, op: InstructionOp, k: int, bits: int, signed: bool) -> tuple[Aff, frozenset[Obligation]] | None:
        """Operand ``k`` of ``op`` read at ``bits`` (narrowed, or extended by ``signed``)."""
        node = op.operands_ast[k]
        kind = node[0]
        if kind == "imm":
            if is_float_immediate(node[1]):
                return None
            return Aff(const(parse_int_immediate(node[1]) & ((1 << bits) - 1)), ZERO, bits), frozenset()
        if kind == "sreg":
            if node[1] not in INVARIANT_SREGS:
                return None
            return self._fit(Aff(("sreg", node[1]), ZERO, 32), frozenset(), bits, False)
        if kind in ("reg", "radd"):
            vals = op.arg_operands(k)
            if len(vals) != 1:
                return None
            r = self.of(vals[0])
            if r is None:
                return None
            aff, obl = r
            if kind == "radd":  # %r + imm, wrapped at the register's width
                aff = Aff(_add(aff.base, const(node[2])), aff.step, aff.bits)
            return self._fit(aff, obl, bits, signed)
        return None

    @staticmethod
    def _fit(aff: Aff, obl: frozenset[Obligation], bits: int, signed: bool) -> tuple[Aff, frozenset[Obligation]]:
        """``aff`` read at ``bits``: narrowing keeps the low bits (exact); widening extends
        every trip's value, which is affine if the narrow values do not wrap (an obligation),
        or if the value is invariant."""
        if aff.bits >= bits:
            return Aff(aff.base, aff.step, bits), obl
        base = _ext(aff.base, aff.bits, signed)
        if aff.invariant:
            return Aff(base, ZERO, bits), obl
        return Aff(base, _ext(aff.step, aff.bits, True), bits), obl | {Obligation(aff, signed)}

    def _instruction(self, op: InstructionOp) -> tuple[Aff, frozenset[Obligation]] | None:
        name = op.spec.name
        types = _types(op)
        if name == "cvta":
            if ".global" not in op.modifiers or (types and types[-1] not in (".u64", ".b64", ".s64")):
                return None
            return self._operand(op, 1, 64, False)
        if name not in ("mov", "add", "sub", "mul", "mad", "shl", "cvt") or not self._plain_int(op):
            return None
        t = types[0]
        bits = isa.TYPE_BITS[t]
        signed = _is_signed(t)
        if name == "mov":
            return self._operand(op, 1, bits, False)
        if name == "cvt":
            if len(types) != 2 or len(op.modifiers) != 2:
                return None  # rounding or saturation
            st = types[1]
            src = self._operand(op, 1, isa.TYPE_BITS[st], _is_signed(st))
            return None if src is None else self._fit(*src, bits, _is_signed(st))
        if name == "shl":
            n = op.operands_ast[2]
            if n[0] != "imm" or is_float_immediate(n[1]):
                return None
            x = self._operand(op, 1, bits, signed)
            if x is None:
                return None
            amount = parse_int_immediate(n[1]) & 0xFFFFFFFF
            factor = const(1 << amount) if amount < bits else ZERO
            return Aff(_mul(x[0].base, factor), _mul(x[0].step, factor), bits), x[1]
        if name in ("add", "sub"):
            x, y = self._operand(op, 1, bits, signed), self._operand(op, 2, bits, signed)
            if x is None or y is None:
                return None
            f = _add if name == "add" else _sub
            return Aff(f(x[0].base, y[0].base), f(x[0].step, y[0].step), bits), x[1] | y[1]
        # mul / mad: .lo (wrapping) or .wide (both operands extended first)
        wide = ".wide" in op.modifiers
        x, y = self._operand(op, 1, bits, signed), self._operand(op, 2, bits, signed)
        if x is None or y is None:
            return None
        out_bits = 2 * bits if wide else bits
        if wide:
            x, y = self._fit(*x, out_bits, signed), self._fit(*y, out_bits, signed)
        (xa, xo), (ya, yo) = x, y
        if not ya.invariant:
            xa, ya = ya, xa
        if not ya.invariant:
            return None  # a product of two varying values is not affine
        prod = Aff(_mul(xa.base, ya.base), _mul(xa.step, ya.base), out_bits)
        obl = xo | yo
        if name == "mad":
            c = self._operand(op, 3, out_bits, signed)
            if c is None:
                return None
            prod = Aff(_add(prod.base, c[0].base), _add(prod.step, c[0].step), out_bits)
            obl |= c[1]
        return prod, obl

    # -- the exit test -----------------------------------------------------------------

    def exit(self) -> tuple[Exit, frozenset[Obligation]] | None:
        """An exit test every trip runs, solved as ``x <rel> y``; the latch's first."""
        ctx = self.ctx
        lp = self.loop
        cands = [b for b in sorted(lp.blocks, key=lambda b: (b not in lp.latches, b))
                 if ctx.innermost.get(b) is lp and all(dominates(ctx.idom, b, u) for u in lp.latches)]
        for bi in cands:
            r = self._exit_of(bi)
            if r is not None:
                return r
        return None

    def _exit_of(self, bi: int) -> tuple[Exit, frozenset[Obligation]] | None:
        term = self.ctx.cfg.blocks[bi].last_op
        if not isinstance(term, InstructionOp) or term.spec.name != "bra" or term.guard_pred is None:
            return None
        succ = [self.ctx.cfg.index[s] for s in term.successors]
        taken_in, fall_in = succ[0] in self.loop.blocks, succ[-1] in self.loop.blocks
        if taken_in == fall_in:
            return None
        # the lane leaves when the guard (with its negation) is true on the taken edge, or false
        exit_when = (not taken_in) != bool(term.guard_pred[1])
        p = term.operands[0]
        op = p.owner
        if not isinstance(op, InstructionOp) or op.spec.name != "setp" or op.guard_pred is not None:
            return None
        if not self.level(op.parent_block()) and self.inside(op.parent_block()):
            return None
        types = _types(op)
        if len(types) != 1 or not _int_type(types[0]) or len(op.operands_ast) != 3 or op.operands_ast[0][0] != "reg":
            return None
        cmp = next((m for m in op.modifiers if m in _CMP), None)
        if cmp is None or any(m in (".and", ".or", ".xor") for m in op.modifiers):
            return None
        rel, sign = _CMP[cmp]
        t = types[0]
        bits = isa.TYPE_BITS[t]
        signed = sign == "s" and _is_signed(t)
        x = self._operand(op, 1, bits, _is_signed(t))
        y = self._operand(op, 2, bits, _is_signed(t))
        if x is None or y is None:
            return None
        if x[0].invariant and not y[0].invariant:
            x, y = y, x
            rel = _SWAP[rel]
        if not y[0].invariant:
            return None
        if not exit_when:
            rel = _NEGATE[rel]
        return Exit(x[0], y[0].base, rel, signed, term), x[1] | y[1]


class _Context:
    """What the analysis of every loop of one function shares."""

    def __init__(self, func: FuncOp, cfg: CFG, emulated: set[InstructionOp], emulated_args: set[BlockArgument]):
        self.func = func
        self.cfg = cfg
        self.emulated = emulated
        self.emulated_args = emulated_args
        self.idom = immediate_dominators(len(cfg), 0, cfg.succs)
        self.info = find_loops(len(cfg), 0, cfg.succs, cfg.preds, self.idom)
        self.innermost: dict[int, Loop] = {}
        for lp in sorted(self.info.loops, key=lambda lp: -len(lp.blocks)):
            for b in lp.blocks:
                self.innermost[b] = lp  # smaller loops overwrite larger ones

    def readable(self, v: SSAValue) -> bool:
        """Computed in every lane that runs its definition (so the preheader can read it)."""
        if isinstance(v, BlockArgument):
            return v in self.emulated_args
        return isinstance(v.owner, InstructionOp) and v.owner in self.emulated

    def incoming(self, arg: BlockArgument, loop: Loop) -> tuple[list[SSAValue], list[SSAValue]]:
        """Values flowing into a header argument: from outside the loop, from its latches."""
        entry: list[SSAValue] = []
        back: list[SSAValue] = []
        hi = self.cfg.index[arg.block]
        for p in set(self.cfg.preds[hi]):
            term = self.cfg.blocks[p].last_op
            for k, s in enumerate(term.successors):
                if s is not arg.block:
                    continue
                vals = list(term.operands) if isinstance(term, FallthroughOp) else list(term.successor_operands(k))
                if arg.index >= len(vals):
                    return [], []
                (back if p in loop.blocks else entry).append(vals[arg.index])
        return entry, back


def plan_hoisting(func: FuncOp, cfg: CFG, slice_ops: set[InstructionOp], support: set[InstructionOp],
                  emulated_args: set[BlockArgument], checked: set[InstructionOp],
                  exclude: Iterable[InstructionOp] = (), keep_address: Iterable[InstructionOp] = ()) -> HoistPlan:
    """The loops whose checks are hoisted, for slice mode with bounds checks: ``slice_ops``
    the slice, ``support`` the address arithmetic ``slice.address_support`` adds to it,
    ``emulated_args`` the block arguments either computes, ``checked`` the accesses whose
    address alone is checked, ``exclude`` accesses whose check stays where it is (a counted
    guard), ``keep_address`` accesses whose check may be hoisted but whose address is read
    every time all the same (memory metrics, the timing estimate's trace): the arithmetic
    they read stays computed for every lane."""
    for b in cfg.blocks:
        t = b.last_op
        if t is not None and any(a in t.attributes for a in (CALL_ATTR, REAL_RETURN_ATTR)):
            return HoistPlan()  # real calls: frames, activations, edges the loops do not show
    emulated = slice_ops | support
    ctx = _Context(func, cfg, emulated, emulated_args)
    if not ctx.info.loops:
        return HoistPlan()
    exclude = set(exclude)
    keep = set(keep_address)
    taken: set[InstructionOp] = set()  # conditional in some loop already
    taken_args: set[BlockArgument] = set()
    planned: list[HoistedLoop] = []
    for lp in sorted(ctx.info.loops, key=lambda lp: len(lp.blocks)):  # innermost first
        entries = [p for p in set(cfg.preds[lp.header]) if p not in lp.blocks]
        if len(entries) != 1:
            continue
        pre = entries[0]
        t = cfg.blocks[pre].last_op
        if t is None or any(a in t.attributes for a in (DISPATCH_ATTR, GUARDED_CALL_ATTR)):
            continue
        an = _LoopAnalysis(ctx, lp)
        ex = an.exit()
        if ex is None:
            continue
        exit_, obligations = ex
        checks: list[RangeCheck] = []
        obl = set(obligations)
        for bi in sorted(lp.blocks):
            if ctx.innermost.get(bi) is not lp:
                continue
            for op in cfg.blocks[bi].ops:
                if not isinstance(op, InstructionOp) or op not in checked or op in exclude:
                    continue
                rc = _range_check(an, op)
                if rc is not None:
                    checks.append(rc[0])
                    obl |= rc[1]
        if not checks:
            continue
        hl = HoistedLoop(len(planned), lp.header, pre, set(lp.blocks), cfg.name(lp.header), exit_, checks,
                         sorted(obl, key=_obligation_key))
        _conditional(ctx, hl, support, checked, exclude | keep, taken, taken_args, planned)
        planned.append(hl)
        taken |= hl.conditional
        taken_args |= hl.conditional_args
    return HoistPlan(planned)


def _obligation_key(o: Obligation) -> str:
    return f"{o.signed}{aff_text(o.aff)}{o.aff.bits}"


def _range_check(an: _LoopAnalysis, op: InstructionOp) -> tuple[RangeCheck, frozenset[Obligation]] | None:
    k = _ADDRESS_OPERAND.get(op.spec.name)
    if k is None or len(op.operands_ast) <= k:
        return None
    space = isa.state_space(op.spec, op.modifiers)
    if space not in ("global", "generic"):
        return None
    node = op.operands_ast[k]
    if node[0] != "addr" or node[1][0] != "reg" or node[3]:
        return None
    vals = op.arg_operands(k)
    if len(vals) != 1:
        return None
    a = an.of(vals[0])
    if a is None:
        return None
    aff, obl = an._fit(*a, 64, False)  # the emulator reads the address register zero-extended
    if node[2]:
        aff = Aff(_add(aff.base, const(node[2])), aff.step, 64)
    types = _types(op)
    if not types:
        return None
    bits = isa.TYPE_BITS.get(types[-1])
    if bits is None:
        return None
    vec = next((int(m[2:]) for m in op.modifiers if m in (".v2", ".v4", ".v8")), 1)
    nbytes = (vec - 1) * (bits // 8) + max(bits, 8) // 8
    return RangeCheck(op, aff, nbytes), obl


def _reads(ctx: _Context, user: Operation, checked: set[InstructionOp], reading: set[InstructionOp]) -> bool:
    """Whether the lowering reads the operands of ``user`` (an instruction it emits or checks)."""
    return isinstance(user, InstructionOp) and (user in ctx.emulated or user in checked or user in reading)


def _conditional(ctx: _Context, hl: HoistedLoop, support: set[InstructionOp], checked: set[InstructionOp],
                 reading: set[InstructionOp], taken: set[InstructionOp], taken_args: set[BlockArgument],
                 planned: list[HoistedLoop]) -> None:
    """The arithmetic of the loop that only its hoisted accesses read (through each other and
    the loop's own back edges), to the fixpoint: what proven lanes skip.  ``reading``: the
    accesses outside the slice whose address the lowering reads every time (hoisted or not)."""
    cfg = ctx.cfg
    header = cfg.blocks[hl.header]
    hoisted = {c.op for c in hl.checks}
    lp_blocks = hl.blocks
    level = [bi for bi in sorted(lp_blocks) if ctx.innermost.get(bi) is ctx.innermost.get(hl.header)]
    ops: set[InstructionOp] = set()
    for bi in level:
        for op in cfg.blocks[bi].ops:
            if (isinstance(op, InstructionOp) and op in support and op not in taken and op.spec.name in PURE
                    and not op.spec.terminator and op.guard_pred is None and op.results):
                ops.add(op)
    args = {a for a in header.args if a in ctx.emulated_args and a not in taken_args}
    # the preheaders' checks of loops planned already read these: they must stay computed
    kept: set[SSAValue] = set()
    for other in planned:
        kept |= other.leaves()
    kept |= hl.leaves()

    def use_ok(use) -> bool:
        user = use.operation
        if user in ops or (user in hoisted and user not in reading and use.index < len(user.instruction_operands())):
            return True
        if isinstance(user, (InstructionOp, FallthroughOp)) and user.successors:
            n = len(user.instruction_operands()) if isinstance(user, InstructionOp) else 0
            if use.index >= n:  # passed along an edge: written there if the argument is computed
                back = cfg.index[user.parent_block()] in lp_blocks
                for target in _edge_targets(user, use.index):
                    if target in ctx.emulated_args and not (back and target in args):
                        return False
                return True
        return not _reads(ctx, user, checked, reading)

    changed = True
    while changed:
        changed = False
        for op in list(ops):
            if any(r in kept or not all(use_ok(u) for u in r.uses) for r in op.results):
                ops.discard(op)
                changed = True
        for a in list(args):
            if a in kept or not all(use_ok(u) for u in a.uses):
                args.discard(a)
                changed = True
    hl.conditional = ops
    hl.conditional_args = args


def _edge_targets(term: Operation, index: int) -> list[BlockArgument]:
    """The block arguments operand ``index`` of a terminator is passed to."""
    if isinstance(term, FallthroughOp):
        s = term.successors[0]
        return [s.args[index]] if index < len(s.args) else []
    assert isinstance(term, InstructionOp)
    sizes = term.succ_sizes.data if term.succ_sizes is not None else ()
    pos = index - (len(term.operands) - sum(sizes))
    for k, n in enumerate(sizes):
        if pos < n:
            s = term.successors[k]
            return [s.args[pos]] if pos < len(s.args) else []
        pos -= n
    return []


# ---------------------------------------------------------------------------
# Text (the marks and diagnostics)
# ---------------------------------------------------------------------------


def expr_text(e: Expr, bits: int = 64) -> str:
    """``e`` as text, constants as signed ``bits``-bit numbers (the width it is read at)."""
    kind = e[0]
    if kind == "v":
        return "%" + (e[1].name_hint or "?")
    if kind == "c":
        n = e[1] & ((1 << bits) - 1)
        return str(n - (1 << bits) if n >> (bits - 1) else n)
    if kind == "sreg":
        return e[1]
    if kind in ("sext", "zext"):
        return f"{kind}{e[2]}({expr_text(e[1], e[2])})"
    a, b = expr_text(e[1], bits), expr_text(e[2], bits)
    if kind == "mul":
        if e[1][0] in ("add", "sub"):
            a = f"({a})"
        if e[2][0] in ("add", "sub"):
            b = f"({b})"
        return f"{a}*{b}"
    if kind == "sub" and e[2][0] in ("add", "sub"):
        b = f"({b})"
    if kind == "add" and b.startswith("-"):  # x + -4: x - 4
        return f"{a} - {b[1:]}"
    return f"{a} {'+' if kind == 'add' else '-'} {b}"


def aff_text(a: Aff) -> str:
    """``base + step*k`` (``k``: the trip, from 0 at each entry of the loop)."""
    if a.invariant:
        return expr_text(a.base, a.bits)
    step = expr_text(a.step, a.bits)
    if a.step[0] in ("add", "sub"):
        step = f"({step})"
    term = "k" if step == "1" else "-k" if step == "-1" else f"{step}*k"
    if a.base == ZERO:
        return term
    base = expr_text(a.base, a.bits)
    return f"{base} - {term[1:]}" if term.startswith("-") else f"{base} + {term}"


_REL_TEXT = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def loop_text(hl: HoistedLoop) -> list[str]:
    from hypa.ptxdialect.printer import instruction_text

    ex = hl.exit
    sign = "" if ex.rel in ("eq", "ne") else (" (signed)" if ex.signed else " (unsigned)")
    out = [f"{hl.label}: trip k leaves when {aff_text(ex.x)} {_REL_TEXT[ex.rel]} {expr_text(ex.y, ex.x.bits)}{sign}, "
           f"{ex.x.bits}-bit"]
    for c in hl.checks:
        out.append(f"{instruction_text(c.op)} [{aff_text(c.addr)}], {c.nbytes} bytes")
    for o in hl.obligations:
        out.append(f"no {'signed' if o.signed else 'unsigned'} wrap: {aff_text(o.aff)}, {o.aff.bits}-bit")
    return out


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------

HOISTED_ATTR = "hypa.hoisted_check"
CONDITIONAL_ATTR = "hypa.hoisted_address"
RANGES_ATTR = "hypa.range_checks"


def mark_plan(plan: HoistPlan, cfg: CFG) -> None:
    for hl in plan.loops:
        label = StringAttr(hl.label)
        for c in hl.checks:
            c.op.attributes[HOISTED_ATTR] = label
        for op in hl.conditional:
            op.attributes[CONDITIONAL_ATTR] = label
        term = cfg.blocks[hl.preheader].last_op
        old = term.attributes.get(RANGES_ATTR)
        items = list(old.data) if isinstance(old, ArrayAttr) else []
        term.attributes[RANGES_ATTR] = ArrayAttr(items + [StringAttr(s) for s in loop_text(hl)])


@dataclass(frozen=True)
class HoistBoundsChecks(ModulePass):
    """Mark the bounds checks slice mode makes once per loop entry (after ``slice-branches``;
    a kernel without a recorded slice is sliced first)."""

    name = "hoist-bounds-checks"

    alias: str = "param"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from .inline import has_calls_to_inline
        from .slice import SliceBranches, address_support, recorded_slice

        # a kernel that calls functions is emulated inlined: its loops are planned then
        funcs = [f for f in op.ops if isinstance(f, FuncOp) and f.is_kernel and not f.is_declaration
                 and not has_calls_to_inline(op, f)]
        if any(recorded_slice(f) is None for f in funcs):
            SliceBranches(alias=self.alias).apply(ctx, op)
        for f in funcs:
            rec = recorded_slice(f)
            if rec is None:
                continue
            fs = rec[0]
            support, support_args, checked = address_support(op, fs, self.alias)
            cfg = CFG.of(f)
            args = {v for v in fs.values if isinstance(v, BlockArgument)} | support_args
            plan = plan_hoisting(f, cfg, set(fs.ops), support, args, checked)
            mark_plan(plan, cfg)
