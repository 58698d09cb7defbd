"""Helper functions for code that every memory access, or every soft-float rounding, repeats.

The lowering of one bounds-checked access (address translation, window table, flat-memory
lookup, initcheck's shadow, the error exits) is 50 to 200 LLVM instructions, and it is the
same at every access of the same state space, size and intent: only the address, the lanes
and the instruction differ.  Built inline, it was 70% of an XLA ResNet-50 module's IR, and
compile time grows with the IR.  Built once as a helper function (``irbuild.helper_function``:
once per process, compiled once per machine) and called, an access costs a call and a
failure test.

A helper's body is built by the code that would build the sequence inline, given a
``HelperFunction``: a ``WarpFunction`` whose builder, ``ws``, ``ctx``, warp, lane ids and
current block are the helper's own, and whose ``prog`` holds only the facts the helper's
name states (anything else it asked for would be an AttributeError, not a helper whose name
does not stand for its body).  Inside, ``error_if`` records the error as the warp function
does (instruction and block are the helper's arguments) and returns failure; the call site
then returns ``RC_ERROR`` from the warp function, as the inline code did.

Soft-float arithmetic and conversions (f16/bf16, directed rounding: 100-300 vector
instructions an element) are *pure* helpers (``pure_call``): element encodings in, the
result out, built by the rule's own code given an ``ElementBuilder``; both tiers call them.

The baseline tier (no LLVM passes) calls the memory helpers; the optimized tier builds that
code inline (``lowering.lower``).
"""

from __future__ import annotations

from types import SimpleNamespace

from llvmlite import ir

from .function import WarpFunction
from .irbuild import broadcast, helper_function
from .rules import LoweringError
from .types import LANES, VPTR, i1, i32, i64, ivec, ptr


class HelperFunction(WarpFunction):
    """The ``WarpFunction`` a helper's body is built with (see the module's docstring).  It
    loads the context words it reads where it reads them (passed as parameters, the warp
    function's stable words would double the cost of a call in the code generator)."""

    def __init__(self, module: ir.Module, f: ir.Function, facts: dict, rty: ir.Type):
        # not WarpFunction.__init__: that builds a warp function
        self.prog = SimpleNamespace(**facts)
        self.module = module
        self._intrinsics = {}
        self.fn = f
        self.ws, self.ctx, self.warp, self.instr, self.cur_block, *self.params = f.args
        self._stable = {}
        self._stable_ptrs = None
        self.entry = f.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.thread_lin = self.b.add(broadcast(self.b, self.b.mul(self.warp, ir.Constant(i32, LANES))),
                                     ir.Constant(ivec(32), list(range(LANES))))
        self.active = None  # the lanes are the caller's argument
        self.steps = None  # the caller publishes its steps when it leaves
        self.local_values, self.written = {}, {}
        self.cross_lane = False
        self.rty = rty

    def fail_exit(self) -> None:
        self.b.ret(self.b.insert_value(ir.Constant(self.rty, None), ir.Constant(i1, 1), 1))


def enabled(wf: WarpFunction) -> bool:
    """Whether code built now calls helpers (not while a helper's body is built, nor for the
    optimized tier: ``lowering.lower``)."""
    return getattr(wf, "outline", True) and not isinstance(wf, HelperFunction)


def call(wf: WarpFunction, name: str, facts: dict, instr: int, args: list[ir.Value], ret: ir.Type, body) -> ir.Value:
    """The value ``body(hf, instr, *params)`` computes from ``args`` for instruction
    ``instr``, built once as the helper function ``name`` (``hf``: its ``HelperFunction``,
    whose ``prog`` has only ``facts``; ``instr`` and ``params``: its parameters standing for
    them) and called here.  ``name`` must name ``facts`` and everything else ``body``'s code
    depends on."""
    b = wf.b
    rty = ir.LiteralStructType([ret, i1])
    f, new = helper_function(wf.module, name, rty, [ptr, ptr, i32, i64, i64] + [a.type for a in args])
    if new:
        hf = HelperFunction(wf.module, f, facts, rty)
        value = body(hf, hf.instr, *hf.params)
        hf.b.ret(hf.b.insert_value(hf.b.insert_value(ir.Constant(rty, None), value, 0), ir.Constant(i1, 0), 1))
    r = b.call(f, [wf.ws, wf.ctx, wf.warp, ir.Constant(i64, instr), ir.Constant(i64, wf.cur_block), *args])
    wf.leave_if(b.extract_value(r, 1))
    return b.extract_value(r, 0)


def host_pointers(wf: WarpFunction, instr: int, space: str, addr: ir.Value, nbytes, mask: ir.Value, kind: str,
                  intent: str, inline) -> ir.Value:
    """``addressing.host_pointers`` through a helper per state space, address kind, size and
    intent; ``inline`` builds its body (``addressing._inline_host_pointers``)."""
    b = wf.b
    if addr.type != ivec(64):
        addr = b.zext(addr, ivec(64))
    # each access site keeps its own hint of the allocation it hit last (``addressing._site_hint``):
    # a word of the calling module, passed to the shared helper
    flat = space in ("global", "generic") and kind != "param"  # (the name says both)
    args = [addr, mask]
    if flat:
        hint = ir.GlobalVariable(wf.module, i64, wf.module.get_unique_name("flat_hint"))
        hint.linkage = "internal"
        hint.initializer = ir.Constant(i64, 0)
        args.append(hint)
    size = nbytes
    if isinstance(nbytes, ir.Value):
        args.append(nbytes)
        size = "n"
    facts = {"initcheck": bool(getattr(wf.prog, "initcheck", False)), "racecheck": bool(getattr(wf.prog, "racecheck", False)),
             "race_sample": bool(getattr(wf.prog, "race_sample", False))}
    name = f"hypa_ptrs.{space}.{kind}.{size}.{intent}.ic{int(facts['initcheck'])}"
    if facts["racecheck"]:
        name += ".rc"
    elif facts["race_sample"]:
        name += ".rs"  # racecheck's sample: the checks behind a test of the launch's shadow
    if kind == "param" or space == "param":
        facts["param_bytes"] = wf.prog.param_bytes
        name += f".p{wf.prog.param_bytes}"

    def body(hf, instr_p, addr_p, mask_p, *rest):
        if flat:
            hf.flat_hint, *n_p = rest
        else:
            n_p = rest
        return inline(hf, instr_p, space, addr_p, n_p[0] if n_p else nbytes, mask_p, kind, intent)

    return call(wf, name, facts, instr, args, VPTR, body)


class ElementBuilder:
    """What a rule's element code reads of an ``Emitter`` (builder, modifiers, constants and
    intrinsics), for building it as the body of a pure helper (``pure_call``)."""

    def __init__(self, wf: WarpFunction, builder: ir.IRBuilder, mods: tuple[str, ...]):
        self.wf, self.b, self.mods = wf, builder, mods

    def splat(self, value, ty: ir.Type) -> ir.Constant:
        return self.wf.splat(value, ty)

    def call(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        return self.b.call(self.wf.intrinsic(name, ret, [a.type for a in args]), args)

    def fail(self, msg: str) -> LoweringError:
        return LoweringError(msg)


def pure_call(e, name: str, args: list[ir.Value], ret: ir.Type, build) -> ir.Value:
    """``build(eb, *params)`` of ``args``, built once as the helper ``name`` + the
    instruction's modifiers (``eb``: an ``ElementBuilder`` with them; the body may read
    nothing else of the instruction) and called from the rule's emitter ``e``, in both
    tiers: the optimized tier links the helpers' IR in and LLVM inlines what pays (inline,
    mixbench's half2 kernel took 57 s of optimized compile); built inline only inside
    another helper's body."""
    wf = e.wf
    if isinstance(wf, HelperFunction):
        return build(e, *args)
    mods = tuple(sorted(e.mods))
    f, new = helper_function(wf.module, name + "".join(mods), ret, [a.type for a in args])
    if new:
        eb = ElementBuilder(wf, ir.IRBuilder(f.append_basic_block("entry")), mods)
        eb.b.ret(build(eb, *f.args))
    return e.b.call(f, args)
