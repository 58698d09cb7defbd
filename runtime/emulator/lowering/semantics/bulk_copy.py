"""Bulk asynchronous copies and the asynchronous stores and reductions.

``cp.async.bulk``, ``cp.reduce.async.bulk``, ``st.async``, ``red.async`` and ``st.bulk``
happen when they issue, lane after lane in lane order; a form that completes through an
mbarrier (``.mbarrier::complete_tx::bytes``) then performs the complete-tx of the bytes it
moved on that mbarrier.  The bulk-group forms need nothing more: ``commit_group`` and
``wait_group`` find every copy complete.  ``cp.async.bulk.prefetch`` changes no data.
Every byte is bounds-checked before any is moved (``check_only``: checked, not moved, for
slice mode's ``check_access``).  The ``.tensor`` forms need a CUtensorMap and are not
emulated.
"""

from __future__ import annotations

from llvmlite import ir

from hypa.ptxdialect import isa
from hypa.ptxdialect.operands import parse_int_immediate

from .... import abi
from ..rules import WHY_NOT, rule
from ..irbuild import Loop
from ..types import i1, i64, ivec, ptr, type_bits
from .mbarrier import complete_tx, for_each_lane, pointers

_TX = ".mbarrier::complete_tx::bytes"
#: modifiers of forms the emulator does not cover, and why
_REFUSED = {
    ".multicast::cluster": "multicast needs a cluster of more than one CTA",
    ".cp_mask": "the .cp_mask byte mask is not emulated",
    ".ignore_oob": ".ignore_oob is not emulated",
}


def _spaces(e) -> tuple[str, str]:
    """(destination, source) state spaces: the first two state-space modifiers, in order."""
    sp = [m.split("::")[0][1:] for m in e.mods if m.split("::")[0] in isa.STATE_SPACES]
    if len(sp) < 2:
        raise e.fail("needs a destination and a source state space")
    return sp[0], sp[1]


def _refuse(e) -> None:
    for m, why in _REFUSED.items():
        if m in e.mods:
            raise e.fail(why)


def _size(e, k: int) -> ir.Value:
    """The byte count operand ``k`` (an integer even where the type is a float type)."""
    node = e.operand_node(k)
    if node[0] == "imm":
        return e.splat(parse_int_immediate(node[1]) & 0xFFFFFFFF, i64)
    return e.b.zext(e.src(k, 32), ivec(64))


def _copy_pointers(e, n: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Checked host pointers of ``n`` bytes at the destination and the source, in the
    executing lanes."""
    dspace, sspace = _spaces(e)
    return pointers(e, 0, n, dspace), pointers(e, 1, n, sspace)


@rule("cp.async.bulk")
def cp_async_bulk(e, check_only: bool = False) -> None:
    """``cp.async.bulk.dst.src{.mbarrier::complete_tx::bytes | .bulk_group} [dst], [src],
    size{, [mbar]}{, policy}``: ``size`` bytes from ``src`` to ``dst``."""
    _refuse(e)
    b = e.b
    n = _size(e, 2)
    dptrs, sptrs = _copy_pointers(e, n)
    mbar = pointers(e, 3) if _TX in e.mods else None
    if check_only:
        return
    move = e.wf.intrinsic("llvm.memmove.p0.p0.i64", ir.VoidType(), [ptr, ptr, i64, i1])
    for_each_lane(e, e.exec_mask, lambda lane: b.call(move, [b.extract_element(dptrs, lane), b.extract_element(sptrs, lane),
                                                             b.extract_element(n, lane), ir.Constant(i1, 0)]))
    if mbar is not None:
        complete_tx(e, mbar, n)


@rule("cp.async.bulk.prefetch")
def cp_async_bulk_prefetch(e) -> None:
    """A hint to bring global memory into L2: no effect on data."""


#: integer reductions with an ``atomicrmw`` operation: (signed, unsigned)
_RMW = {".add": ("add", "add"), ".min": ("min", "umin"), ".max": ("max", "umax"),
        ".and": ("and", "and"), ".or": ("or", "or"), ".xor": ("xor", "xor")}


def _reduce_op(e) -> str:
    op = next((m for m in e.mods if m in (*_RMW, ".inc", ".dec")), None)
    if op is None:
        raise e.fail("needs a reduction operation")
    return op


def _reduce_element(e, op: str, t: str, p: ir.Value, v: ir.Value) -> None:
    """``*p = *p op v`` as one host atomic (buffers may be shared with other processes)."""
    b = e.b
    if t in (".f32", ".f64"):
        if op != ".add":
            raise e.fail(f"{op} on {t} is not a reduction of this instruction")
        ft = ir.FloatType() if t == ".f32" else ir.DoubleType()
        b.atomic_rmw("fadd", p, b.bitcast(v, ft), "monotonic")
        return
    if t in (".f16", ".bf16"):
        raise e.fail(f"{t} reductions are not emulated yet")
    if op in _RMW:
        signed = t.startswith(".s")
        b.atomic_rmw(_RMW[op][0 if signed else 1], p, v, "monotonic")
        return
    # .inc / .dec (.u32): wrap at v, as atom.inc / atom.dec
    ity = v.type
    pre = b.block
    loop = b.function.append_basic_block("red_loop")
    done = b.function.append_basic_block("red_done")
    old0 = b.load(p, typ=ity)
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(ity)
    old.add_incoming(old0, pre)
    zero, one = ir.Constant(ity, 0), ir.Constant(ity, 1)
    if op == ".inc":
        new = b.select(b.icmp_unsigned(">=", old, v), zero, b.add(old, one))
    else:
        new = b.select(b.or_(b.icmp_unsigned("==", old, zero), b.icmp_unsigned(">", old, v)), v, b.sub(old, one))
    pair = b.cmpxchg(p, old, new, "monotonic", "monotonic")
    old.add_incoming(b.extract_value(pair, 0), b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)


def _element_type(e) -> str:
    types = e.types
    if not types:
        raise e.fail("needs a type")
    return types[-1]


@rule("cp.reduce.async.bulk")
def cp_reduce_async_bulk(e, check_only: bool = False) -> None:
    """``cp.reduce.async.bulk.dst.src.completion.op.type [dst], [src], size{, [mbar]}``:
    each element of ``dst`` becomes ``dst op src``, element after element."""
    _refuse(e)
    b = e.b
    t = _element_type(e)
    op = _reduce_op(e)
    eb = type_bits(t) // 8
    n = _size(e, 2)
    dptrs, sptrs = _copy_pointers(e, n)
    mbar = pointers(e, 3) if _TX in e.mods else None
    if check_only:
        return
    ity = ir.IntType(8 * eb)

    def lane_body(lane):
        d = b.extract_element(dptrs, lane)
        s = b.extract_element(sptrs, lane)
        count = b.udiv(b.extract_element(n, lane), ir.Constant(i64, eb))
        el = Loop(b, ir.Constant(i64, 0), count, "elem")
        off = b.mul(el.i, ir.Constant(i64, eb))
        dp = b.gep(d, [off], source_etype=ir.IntType(8))
        sp = b.gep(s, [off], source_etype=ir.IntType(8))
        _reduce_element(e, op, t, dp, b.load(sp, typ=ity))
        el.close()

    for_each_lane(e, e.exec_mask, lane_body)
    if mbar is not None:
        complete_tx(e, mbar, n)


def _vec_width(e) -> int:
    return next((int(m[2:]) for m in e.mods if m in (".v2", ".v4")), 1)


def _require_cluster(e) -> None:
    """``st.async``/``red.async`` fault on an H100 in a launch without clusters, even to the
    CTA's own shared memory (``.probe``-style check recorded in tests/ground_truth/hypa_run/
    isa_native.json, ``cluster_async``): they run only in kernels that declare a cluster
    (``.explicitcluster``/``.reqnctapercluster``, CUDA's ``__cluster_dims__``)."""
    func = e.wf.prog.func
    if func.directive(".explicitcluster") is None and func.directive(".reqnctapercluster") is None:
        e.wf.error_if(e.instr_id, e.exec_mask, abi.ERR_NO_CLUSTER, None)


@rule("st.async")
def st_async(e, check_only: bool = False) -> None:
    """``st.async{.sem}{.scope}.shared::cluster.mbarrier::complete_tx::bytes{.vec}.type
    [a], b, [mbar]``: the store, then the complete-tx of its bytes on ``mbar``."""
    b = e.b
    t = _element_type(e)
    bits = type_bits(t)
    nvec = _vec_width(e)
    nbytes = bits // 8 * nvec
    _require_cluster(e)
    ptrs = pointers(e, 0, nbytes)
    mbar = pointers(e, 2) if len(e.args) > 2 else None
    if check_only:
        return
    vals = e.src_elements(1, bits)
    for k, v in enumerate(vals):
        addr = b.ptrtoint(ptrs, ivec(64))
        pk = b.inttoptr(b.add(addr, e.splat(k * bits // 8, i64)), ptrs.type) if k else ptrs
        e.wf.masked_scatter(v, pk, e.exec_mask)
    if mbar is not None:
        complete_tx(e, mbar, e.splat(nbytes, i64))


@rule("red.async")
def red_async(e, check_only: bool = False) -> None:
    """``red.async{.sem}{.scope}{.ss}{.mbarrier::complete_tx::bytes}.op.type [a], b{, [mbar]}``:
    the reduction (lane after lane), then the complete-tx of its bytes on ``mbar``."""
    b = e.b
    t = _element_type(e)
    op = _reduce_op(e)
    bits = type_bits(t)
    space = "global" if ".global" in e.mods else None
    if space is None:
        _require_cluster(e)
    ptrs = pointers(e, 0, bits // 8, space)
    mbar = pointers(e, 2) if len(e.args) > 2 else None
    if check_only:
        return
    v = e.src(1, bits)
    for_each_lane(e, e.exec_mask, lambda lane: _reduce_element(e, op, t, b.extract_element(ptrs, lane),
                                                               b.extract_element(v, lane)))
    if mbar is not None:
        complete_tx(e, mbar, e.splat(bits // 8, i64))


@rule("st.bulk")
def st_bulk(e, check_only: bool = False) -> None:
    """``st.bulk{.weak}{.shared::cta} [a], size, initval``: ``size`` bytes of ``initval``
    (which must be 0) from ``a``."""
    b = e.b
    n = _size(e, 1)
    node = e.operand_node(2)
    if node[0] != "imm" or e.imm_bits(node[1], 32) != 0:
        raise e.fail("initval must be the immediate 0")
    ptrs = pointers(e, 0, n, "shared" if ".shared::cta" in e.mods else "generic", align=8)
    if check_only:
        return
    fill = e.wf.intrinsic("llvm.memset.p0.i64", ir.VoidType(), [ptr, ir.IntType(8), i64, i1])
    for_each_lane(e, e.exec_mask, lambda lane: b.call(fill, [b.extract_element(ptrs, lane), ir.Constant(ir.IntType(8), 0),
                                                             b.extract_element(n, lane), ir.Constant(i1, 0)]))


for _name in ("cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "cp.async.bulk.prefetch.tensor"):
    WHY_NOT[_name] = "the .tensor forms read a CUtensorMap (cuTensorMapEncode*), which hypa does not model"

#: the rules ``check_access`` calls with ``check_only`` (slice mode: accesses outside the slice)
CHECKS = {"cp.async.bulk": cp_async_bulk, "cp.reduce.async.bulk": cp_reduce_async_bulk, "st.async": st_async,
          "red.async": red_async, "st.bulk": st_bulk}
