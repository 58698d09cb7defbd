"""initcheck: reads of shared or local memory that no thread has written.

A GPU's shared memory holds whatever the previous CTA left and local memory whatever the
previous thread did; the emulator zero-fills both, so a kernel that reads a byte before any
thread of its CTA wrote it would silently read 0 here and garbage there.  Each byte of the
CTA's shared and local memory has a shadow byte, 0 when a CTA starts and 0xFF once written;
a load (or the read of an atomic) of a byte whose shadow is 0 is counted, and the first one
kept (``abi.CTX_UNINIT_*``), like compute-sanitizer's ``initcheck`` does for global memory.

Accesses whose intent is not known (instructions that write shared memory through their
own helpers) mark their bytes as written: a missed warning is better than a false one.
"""

from __future__ import annotations

from llvmlite import ir

from ... import abi
from .function import WarpFunction, as_i64
from .irbuild import each_lane, helper_function, lowest_lane
from .types import VPTR, i32, i64, ivec, ptr

#: how an access uses its bytes: a load checks them, a store marks them, an atomic does both;
#: an access of unknown intent marks them too (racecheck leaves it out)
READ, WRITE, READ_WRITE, UNKNOWN, UNTRACKED = "read", "write", "read-write", "unknown", "untracked"


def enabled(wf: WarpFunction) -> bool:
    return bool(getattr(wf.prog, "initcheck", False))


def shadow(wf: WarpFunction, instr: int, ptrs: ir.Value, distance: ir.Value, nbytes: int | ir.Value, mask: ir.Value,
           intent: str, addr: ir.Value) -> None:
    """Check and/or mark the shadow bytes of ``nbytes`` at each lane's host pointer (in the
    lanes of ``mask``); ``distance`` (i64 lanes) leads from a byte to its shadow.  ``nbytes``
    as i64 lanes (bulk copies): marked when written, not checked when read."""
    if intent == UNTRACKED:
        return
    b = wf.b
    mask = b.and_(mask, b.icmp_unsigned("!=", distance, wf.splat(0, i64)))  # generic: other windows
    base = b.ptrtoint(ptrs, ivec(64))
    if isinstance(nbytes, ir.Value):
        if intent in (WRITE, READ_WRITE, UNKNOWN):
            sh = b.inttoptr(b.add(base, distance), VPTR)
            b.call(_mark_function(wf.module), [sh, nbytes, wf.mask_to_i32(mask)])
        return
    pieces = [(0, nbytes)] if nbytes in (1, 2, 4, 8, 16) else [(k, 1) for k in range(nbytes)]
    bad = None
    for k, size in pieces:
        sh = b.inttoptr(b.add(b.add(base, distance), wf.splat(k, i64)), VPTR)
        ones = ir.Constant(ivec(8 * size), ir.Constant(ir.IntType(8 * size), -1))
        if intent in (READ, READ_WRITE):
            got = wf.masked_gather(sh, mask, ones)
            miss = b.icmp_unsigned("!=", got, ones)
            bad = miss if bad is None else b.or_(bad, miss)
        if intent in (WRITE, READ_WRITE, UNKNOWN):
            wf.masked_scatter(ones, sh, mask)
    if bad is None:
        return
    bits = wf.mask_to_i32(b.and_(mask, bad))
    with b.if_then(b.icmp_unsigned("!=", bits, ir.Constant(i32, 0)), likely=False):
        a = addr if addr.type == ivec(64) else b.zext(addr, ivec(64))
        b.call(_record_function(wf.module), [wf.ctx, as_i64(instr), bits, a, b.zext(wf.warp, i64)])


def state_space_distance(wf: WarpFunction, space: str) -> ir.Value | None:
    """Bytes from a byte of ``space`` to its shadow (i64 lanes); None: not tracked."""
    if space in ("shared", "shared::cta", "shared::cluster"):
        return wf.splat_value(wf.ctx_word(abi.CTX_SHADOW_SHARED))
    if space == "local":
        return wf.splat_value(wf.ctx_word(abi.CTX_SHADOW_LOCAL))
    return None


def window_distance(wf: WarpFunction, win: ir.Value) -> ir.Value:
    """For generic addresses (window ids ``win``): the shadow distance of the shared and local
    windows, 0 for the others (lanes with distance 0 are not tracked)."""
    b = wf.b
    zero = wf.splat(0, i64)
    shared = wf.splat_value(wf.ctx_word(abi.CTX_SHADOW_SHARED))
    local = wf.splat_value(wf.ctx_word(abi.CTX_SHADOW_LOCAL))
    d = b.select(b.icmp_unsigned("==", win, wf.splat(abi.WIN_SHARED, i64)), shared, zero)
    return b.select(b.icmp_unsigned("==", win, wf.splat(abi.WIN_LOCAL, i64)), local, d)


def _mark_function(module: ir.Module) -> ir.Function:
    """``void hypa_shadow_mark(<32 x ptr> shadow, <32 x i64> n, i32 lanes)``: sets ``n[l]``
    shadow bytes at ``shadow[l]`` for each lane ``l`` of ``lanes`` (sizes known at run time)."""
    f, new = helper_function(module, "hypa_shadow_mark", ir.VoidType(), [VPTR, ivec(64), i32])
    if not new:
        return f
    sh, n, lanes = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    memset = module.declare_intrinsic("llvm.memset", [ptr, i64])
    each_lane(b, module, lanes, lambda b, lane: b.call(memset, [b.extract_element(sh, lane), ir.Constant(ir.IntType(8), 0xFF),
                                                             b.extract_element(n, lane), ir.Constant(ir.IntType(1), 0)]))
    b.ret_void()
    return f


def _record_function(module: ir.Module) -> ir.Function:
    """``void hypa_uninit(ctx, i64 instr, i32 lanes, <32 x i64> addr, i64 warp)``: counts the
    lanes and keeps the first read (out of line: it runs only when a read finds one)."""
    f, new = helper_function(module, "hypa_uninit", ir.VoidType(), [ptr, i64, i32, ivec(64), i64])
    if not new:
        return f
    ctx, instr, lanes, addr, warp = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))

    def word(k):
        return b.gep(ctx, [ir.Constant(i64, k)], source_etype=i64)

    n = b.zext(b.call(module.declare_intrinsic("llvm.ctpop", [i32]), [lanes]), i64)
    old = b.load(word(abi.CTX_UNINIT_COUNT), typ=i64)
    b.store(b.add(old, n), word(abi.CTX_UNINIT_COUNT))
    with b.if_then(b.icmp_unsigned("==", old, ir.Constant(i64, 0))):
        lane = lowest_lane(b, module, lanes)
        b.store(instr, word(abi.CTX_UNINIT_INSTR))
        b.store(b.extract_element(addr, lane), word(abi.CTX_UNINIT_ADDR))
        b.store(b.zext(lane, i64), word(abi.CTX_UNINIT_LANE))
        b.store(warp, word(abi.CTX_UNINIT_WARP))
        b.store(b.load(word(abi.CTX_CTA_LINEAR), typ=i64), word(abi.CTX_UNINIT_CTA))
    b.ret_void()
    return f
