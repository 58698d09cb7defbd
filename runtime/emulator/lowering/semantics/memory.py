"""Loads, stores, atomics and reductions over the bounds-checked memory model.

Atomics are serialized in lane order with real host atomics (``atomicrmw``,
``cmpxchg``), so CTAs running in other processes on shared buffers see them.
"""

from __future__ import annotations

from llvmlite import ir

from hypa.ptxdialect.operands import parse_int_immediate

from .... import abi
from ...program import value_bits
from .. import initcheck
from ..irbuild import lowest_lane
from ..rules import rule
from ..softfloat import half_add
from ..types import FLOAT_KIND, LANES, i32, i64, is_signed, ivec, type_bits, vec
from .bulk_copy import CHECKS
from .matrix import ldmatrix, stmatrix, wgmma_mma_async, wmma_load, wmma_store
from .texture import check_surface


def _vec_width(e) -> int:
    for m in e.mods:
        if m in (".v2", ".v4", ".v8"):
            return int(m[2:])
    return 1


def _elem_type(e) -> str:
    for t in reversed(e.types):
        return t
    raise e.fail("needs a type")


def _space(e, kind: str) -> str:
    if kind in ("param", "cparam"):
        return kind
    sp = e.space()
    if kind == "shared" and sp == "generic":
        return "shared"
    return sp


def _memory_operand(e, k: int) -> tuple[str, int, str, ir.Value, str]:
    """(element type, its bits, address kind, address, state space) of memory operand ``k``."""
    t = _elem_type(e)
    kind, addr, _base = e.address(k)
    return t, type_bits(t), kind, addr, _space(e, kind)


def _aligned(e, addr: ir.Value, bits: int) -> None:
    """The access's natural alignment, a vector's whole size (``ld.v4.u32``: 16 bytes)."""
    e.check_alignment(addr, _vec_width(e) * max(bits, 8) // 8, e.exec_mask)


def _element_address(e, addr: ir.Value, k: int, bits: int) -> ir.Value:
    """The address of element ``k`` of a vector of ``bits``-bit elements at ``addr``."""
    return addr if k == 0 else e.b.add(addr, e.splat(k * bits // 8, i64))


@rule("ld", "ldu")
def ld(e) -> None:
    t, bits, kind, addr, space = _memory_operand(e, 1)
    _aligned(e, addr, bits)
    values = [e.load(space, _element_address(e, addr, k, bits), bits, e.exec_mask, kind) for k in range(_vec_width(e))]
    e.dst_elements(0, values, is_signed(t))


@rule("st")
def st(e) -> None:
    _t, bits, kind, addr, space = _memory_operand(e, 0)
    _aligned(e, addr, bits)
    vals = e.src_elements(1, bits)  # also ``{%r1}``: a one-element vector (Triton)
    n = _vec_width(e)
    if len(vals) != n:
        raise e.fail(f"stores {n} elements, the source has {len(vals)}")
    for k, v in enumerate(vals):
        e.store(space, _element_address(e, addr, k, bits), v, e.exec_mask, kind)


@rule("prefetch", "prefetchu", "applypriority", "discard", "createpolicy")
def prefetch(e) -> None:
    """Cache hints: no effect on values (createpolicy yields an opaque policy)."""
    if e.spec.name == "createpolicy":
        e.dst(0, e.zeros(64))


_RMW = {".add": "add", ".and": "and", ".or": "or", ".xor": "xor", ".exch": "xchg"}
_ATOMIC_OPS = (".and", ".or", ".xor", ".cas", ".exch", ".add", ".inc", ".dec", ".min", ".max")
#: 16-bit float formats: (exponent bits, fraction bits)
_HALF_FORMATS = {".f16": (5, 10), ".bf16": (8, 7)}
_PACKED = {".f16x2": ".f16", ".bf16x2": ".bf16"}


def _atomic(e, returns: bool) -> None:
    """atom / red, scalar or vector (``.v2/.v4/.v8``: each element its own atomic),
    serialized in lane order with host atomics."""
    b = e.b
    t = _elem_type(e)
    bits = type_bits(t)
    op = next((m for m in e.mods if m in _ATOMIC_OPS), None)
    if op is None:
        raise e.fail("needs an atomic operation")
    is_float = t in FLOAT_KIND or t in _PACKED
    if is_float and op not in (".add", ".min", ".max", ".exch", ".cas"):
        raise e.fail(f"{op} on {t} is not an atomic operation")
    if (t in _HALF_FORMATS or t in _PACKED) and op in (".min", ".max"):
        raise e.fail(f"atomic {op} on {t} is not emulated yet")
    ai = 1 if returns else 0
    kind, addr, _base = e.address(ai)
    space = _space(e, kind)
    _aligned(e, addr, bits)
    signed = is_signed(t)
    vals = e.src_elements(ai + 1, bits, signed)
    cmpv = e.src(ai + 2, bits) if op == ".cas" else None
    ity = ir.IntType(bits)
    results = []
    for k, val in enumerate(vals):
        ptrs = e.host_pointers(space, _element_address(e, addr, k, bits), bits // 8, e.exec_mask, kind,
                               initcheck.READ_WRITE)
        res_slot = e.entry_alloca(vec(ity))
        b.store(ir.Constant(vec(ity), 0), res_slot)
        for lane in range(LANES):
            li = ir.Constant(i32, lane)
            on = b.extract_element(e.exec_mask, li)
            with b.if_then(on):
                p = b.extract_element(ptrs, li)
                v = b.extract_element(val, li)
                c = None if cmpv is None else b.extract_element(cmpv, li)
                old = _atomic_lane(e, op, t, p, v, c, is_float, ity)
                cur = b.load(res_slot, typ=vec(ity))
                b.store(b.insert_element(cur, old, li), res_slot)
        results.append(b.load(res_slot, typ=vec(ity)))
    if returns:
        e.dst_elements(0, results, signed)


def _atomic_lane(e, op, t, p, v, c, is_float, ity):
    b = e.b
    bits = ity.width
    order = "seq_cst"
    if op == ".cas":
        # atom.cas d, [a], b, c: d = *a; *a = (*a == b) ? c : *a
        pair = b.cmpxchg(p, v, c, order, order)
        return b.extract_value(pair, 0)
    if op == ".exch" or (op in _RMW and not is_float):
        return b.atomic_rmw(_RMW[op], p, v, order)
    if op in (".min", ".max") and not is_float:
        name = ("min" if op == ".min" else "max") if is_signed(t) else ("umin" if op == ".min" else "umax")
        return b.atomic_rmw(name, p, v, order)
    # float add/min/max, inc, dec: compare-and-swap loop
    fn = b.function
    loop = fn.append_basic_block("cas_loop")
    done = fn.append_basic_block("cas_done")
    pre = b.block
    old0 = b.load(p, typ=ity)
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(ity)
    old.add_incoming(old0, pre)
    if op == ".inc":
        new = b.select(b.icmp_unsigned(">=", old, v), ir.Constant(ity, 0), b.add(old, ir.Constant(ity, 1)))
    elif op == ".dec":
        wrap = b.or_(b.icmp_unsigned("==", old, ir.Constant(ity, 0)), b.icmp_unsigned(">", old, v))
        new = b.select(wrap, v, b.sub(old, ir.Constant(ity, 1)))
    elif t in _HALF_FORMATS:  # .add.noftz: exact in f64, one rounding, subnormals kept
        new = half_add(b, old, v, _HALF_FORMATS[t])
    elif t in _PACKED:
        fmt = _HALF_FORMATS[_PACKED[t]]
        i16 = ir.IntType(16)
        halves = []
        for sh in (0, 16):
            x = b.trunc(b.lshr(old, ir.Constant(ity, sh)), i16)
            y = b.trunc(b.lshr(v, ir.Constant(ity, sh)), i16)
            halves.append(b.zext(half_add(b, x, y, fmt), ity))
        new = b.or_(halves[0], b.shl(halves[1], ir.Constant(ity, 16)))
    else:
        ft = {32: ir.FloatType(), 64: ir.DoubleType()}[bits]
        of, vf = b.bitcast(old, ft), b.bitcast(v, ft)
        if op == ".add":
            nf = b.fadd(of, vf)
        else:
            nf = b.call(e.wf.intrinsic(f"llvm.{'minnum' if op == '.min' else 'maxnum'}.{'f32' if bits == 32 else 'f64'}", ft, [ft, ft]), [of, vf])
        new = b.bitcast(nf, ity)
    pair = b.cmpxchg(p, old, new, "seq_cst", "seq_cst")
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    old.add_incoming(seen, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return seen


@rule("atom")
def atom(e) -> None:
    _atomic(e, True)


@rule("red")
def red(e) -> None:
    _atomic(e, False)


def _is_predicate_operand(e, k: int) -> bool:
    node = e.operand_node(k)
    if node[0] == "not":
        return True
    if node[0] != "reg":
        return False
    return value_bits(e.slot_of[k][0][1]) == 1


@rule("cp.async")
def cp_async(e, check_only: bool = False) -> None:
    """``cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size | ignore-src}{, policy}``.

    The copy happens when the instruction issues: ``cp.async.wait_group`` /
    ``wait_all`` then have nothing left to wait for in a sequential emulator (a
    kernel that reads the destination before waiting reads the new data, which
    real hardware may or may not show).  Bytes past ``src-size`` (all of them when
    ``ignore-src`` is true) are zero-filled.  ``check_only``: the bytes are bounds-checked,
    not copied (``check_access``).
    """
    b = e.b
    dkind, dst, _ = e.address(0)
    skind, src, _ = e.address(1)
    node = e.operand_node(2)
    if node[0] != "imm":
        raise e.fail("cp-size must be an immediate (4, 8 or 16)")
    cp = parse_int_immediate(node[1])
    if cp not in (4, 8, 16):
        raise e.fail(f"cp-size must be 4, 8 or 16, not {cp}")
    e.check_alignment(dst, cp, e.exec_mask)
    e.check_alignment(src, cp, e.exec_mask)
    nops = len(e.args)
    if any("cache_hint" in m for m in e.mods):
        nops -= 1  # the last operand is the cache policy
    src_size = None  # i32 lanes, or None: all cp bytes
    if nops > 3:
        if _is_predicate_operand(e, 3):
            ignore = e.src_pred(3)
            src_size = b.select(ignore, e.splat(0, i32), e.splat(cp, i32))
        else:
            sn = e.operand_node(3)
            if not (sn[0] == "imm" and parse_int_immediate(sn[1]) >= cp):
                src_size = e.src(3, 32)
    mask = e.exec_mask
    dspace = "shared"
    if check_only:
        def load(sa, bits, lanes):
            e.host_pointers("global", sa, bits // 8, lanes, skind)

        def store(da, _v, bits):
            e.host_pointers(dspace, da, bits // 8, mask, dkind)
    else:
        def load(sa, bits, lanes):
            return e.load("global", sa, bits, lanes, skind)

        def store(da, v, _bits):
            e.store(dspace, da, v, mask, dkind)
    if src_size is None:
        for w in range(cp // 4):
            sa = _element_address(e, src, w, 32)
            da = _element_address(e, dst, w, 32)
            store(da, load(sa, 32, mask), 32)
        return
    for k in range(cp):
        sa = _element_address(e, src, k, 8)
        da = _element_address(e, dst, k, 8)
        present = b.and_(mask, b.icmp_unsigned("<", e.splat(k, i32), src_size))
        store(da, load(sa, 8, present), 8)  # zero where not present


#: memory operand of the accesses ``check_access`` checks
_CHECKED_OPERAND = {"ld": 1, "ldu": 1, "st": 0, "atom": 1, "red": 0}
#: ... and what it does with the bytes (initcheck)
_CHECKED_INTENT = {"ld": initcheck.READ, "ldu": initcheck.READ, "st": initcheck.WRITE, "atom": initcheck.READ_WRITE,
                   "red": initcheck.READ_WRITE}


def check_access(e) -> None:
    """Slice mode's bounds check of an access outside the slice (``passes.slice.CHECKED_ACCESSES``):
    the bytes the instruction would touch, checked in the order and with the sizes its rule
    checks them, so an out-of-bounds access fails as in full mode; nothing is read or written."""
    name = e.spec.name
    if name == "cp.async":
        cp_async(e, check_only=True)
        return
    if name in CHECKS:
        CHECKS[name](e, check_only=True)
        return
    if name in ("ldmatrix", "stmatrix"):
        (ldmatrix if name == "ldmatrix" else stmatrix)(e, check_only=True)
        return
    if name in ("wmma.load", "wmma.store"):
        (wmma_load if name == "wmma.load" else wmma_store)(e, check_only=True)
        return
    if name in ("suld", "sust", "sured"):
        check_surface(e)
        return
    if name == "wgmma.mma_async":
        wgmma_mma_async(e, check_only=True)
        return
    _t, bits, kind, addr, space = _memory_operand(e, _CHECKED_OPERAND[name])
    intent = _CHECKED_INTENT[name]
    _aligned(e, addr, bits)
    for k in range(_vec_width(e)):
        e.host_pointers(space, _element_address(e, addr, k, bits), max(bits, 8) // 8, e.exec_mask, kind, intent)


# -- the per-thread stack (alloca, stacksave, stackrestore) ------------------------------
# The stack top is a warp-wide local-memory offset (``abi.WS_SP``, docs/design.md, "Execution model"):
# ``alloca`` gives every executing lane the same offset in its own local memory, sized for
# the largest request among them; a real call's return frees what the callee allocated.


def _stack_bits(e) -> int:
    return 64 if ".u64" in e.types else 32


@rule("alloca")
def alloca(e) -> None:
    b, wf = e.b, e.wf
    bits = _stack_bits(e)
    size = e.src(1, bits)
    if bits < 64:
        size = b.zext(size, ivec(64))
    align = 8
    if len(e.args) > 2 and e.args[2][0] == "imm":
        align = max(8, parse_int_immediate(e.args[2][1]))
    if align & (align - 1):
        raise e.fail(f"alloca alignment {align} is not a power of 2")
    lanes = e.exec_mask
    sp = wf.ws_word(abi.WS_SP)
    start = b.and_(b.add(sp, ir.Constant(i64, align - 1)), ir.Constant(i64, ~(align - 1) & (2**64 - 1)))
    asked = b.select(lanes, size, e.splat(0, i64))
    most = b.call(wf.intrinsic("llvm.vector.reduce.umax.v32i64", i64, [ivec(64)]), [asked])
    limit = wf.ctx_word(abi.CTX_LOCAL_SIZE)
    end = b.add(start, b.and_(b.add(most, ir.Constant(i64, 7)), ir.Constant(i64, ~7 & (2**64 - 1))))
    used = b.add(wf.ws_word(abi.WS_STACK_USED), b.sub(end, sp))
    over = b.or_(b.icmp_unsigned(">", most, limit), b.icmp_unsigned(">", end, limit))
    over = b.or_(over, b.icmp_unsigned(">", used, wf.ctx_word(abi.CTX_STACK_SIZE)))
    wf.error_if(e.instr_id, b.and_(lanes, wf.splat_value(over)), abi.ERR_CALL_STACK, size)
    anyone = b.icmp_unsigned("!=", wf.mask_to_i32(lanes), ir.Constant(i32, 0))
    wf.set_ws_word(abi.WS_SP, b.select(anyone, end, sp))
    wf.set_ws_word(abi.WS_STACK_USED, b.select(anyone, used, wf.ws_word(abi.WS_STACK_USED)))
    ptr = wf.splat_value(start)
    e.dst(0, ptr if bits == 64 else b.trunc(ptr, ivec(32)))


@rule("stacksave")
def stacksave(e) -> None:
    b, wf = e.b, e.wf
    sp = wf.splat_value(wf.ws_word(abi.WS_SP))
    e.dst(0, sp if _stack_bits(e) == 64 else b.trunc(sp, ivec(32)))


@rule("stackrestore")
def stackrestore(e) -> None:
    b, wf = e.b, e.wf
    v = e.src(0, _stack_bits(e))
    bits = wf.mask_to_i32(e.exec_mask)
    lane = lowest_lane(b, wf.module, bits)
    safe = b.select(b.icmp_unsigned("==", bits, ir.Constant(i32, 0)), ir.Constant(i32, 0), lane)
    new = b.extract_element(v, safe)
    if new.type != i64:
        new = b.zext(new, i64)
    anyone = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
    sp = wf.ws_word(abi.WS_SP)
    # what the restore frees (or, restoring upwards, takes) counts as alloca counted it
    used = b.sub(wf.ws_word(abi.WS_STACK_USED), b.sub(sp, new))
    wf.set_ws_word(abi.WS_SP, b.select(anyone, new, sp))
    wf.set_ws_word(abi.WS_STACK_USED, b.select(anyone, used, wf.ws_word(abi.WS_STACK_USED)))
