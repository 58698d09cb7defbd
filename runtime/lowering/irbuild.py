"""IR idioms that the warp function, the helper functions and the CTA scheduler share: a
counted loop, a scalar broadcast to every lane, the ``llvm.cttz.i32`` declaration."""

from __future__ import annotations

from llvmlite import ir

from .types import i1, i32, vec


class Loop:
    """``for i in range(start, stop)`` (signed compare) at the builder's position; the body
    is built after the constructor, with ``self.i``, and ``close()`` ends it."""

    def __init__(self, b: ir.IRBuilder, start: ir.Value, stop: ir.Value, name: str):
        fn = b.function
        self.b = b
        self.head = fn.append_basic_block(name + "_head")
        self.body = fn.append_basic_block(name + "_body")
        self.exit = fn.append_basic_block(name + "_exit")
        pre = b.block
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(start.type, name=name)
        self.i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", self.i, stop), self.body, self.exit)
        b.position_at_end(self.body)

    def close(self) -> None:
        b = self.b
        nxt = b.add(self.i, ir.Constant(self.i.type, 1))
        self.i.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)


def broadcast(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The scalar ``v`` in every lane."""
    vt = vec(v.type)
    undef = ir.Constant(vt, None)
    ins = b.insert_element(undef, v, ir.Constant(i32, 0))
    return b.shuffle_vector(ins, undef, ir.Constant(vec(i32), 0))


def cttz(module: ir.Module) -> ir.Function:
    """``llvm.cttz.i32``, declared once per module (``WarpFunction.intrinsic`` finds it)."""
    return module.globals.get("llvm.cttz.i32") or ir.Function(module, ir.FunctionType(i32, [i32, i1]), "llvm.cttz.i32")


def helper_function(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> tuple[ir.Function, bool]:
    """The module's internal function ``name`` (made once per module), and whether it is
    new: then its caller builds the body."""
    f = module.globals.get(name)
    if f is not None:
        return f, False  # type: ignore[return-value]
    f = ir.Function(module, ir.FunctionType(ret, args), name)
    f.linkage = "internal"
    return f, True


def lowest_lane(b: ir.IRBuilder, module: ir.Module, bits: ir.Value) -> ir.Value:
    """The lowest lane set in the i32 mask ``bits`` (32 when none is)."""
    return b.call(cttz(module), [bits, ir.Constant(i1, 0)])


def each_lane(b: ir.IRBuilder, module: ir.Module, lanes: ir.Value, emit) -> None:
    """A loop over the lanes set in the i32 mask ``lanes``, lowest first: ``emit(b, lane)``
    builds each trip's body; ``b`` ends positioned after the loop."""
    fn = b.function
    pre = b.block
    loop, body, done = (fn.append_basic_block(x) for x in ("lane", "lane.body", "lane.done"))
    b.branch(loop)
    b.position_at_end(loop)
    rem = b.phi(ir.IntType(32))
    rem.add_incoming(lanes, pre)
    b.cbranch(b.icmp_unsigned("!=", rem, ir.Constant(ir.IntType(32), 0)), body, done)
    b.position_at_end(body)
    emit(b, lowest_lane(b, module, rem))
    rem.add_incoming(b.and_(rem, b.sub(rem, ir.Constant(ir.IntType(32), 1))), b.block)
    b.branch(loop)
    b.position_at_end(done)
