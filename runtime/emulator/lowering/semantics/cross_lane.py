"""Warp-wide operations across lanes: shfl, vote, match, redux, activemask, elect.

A lane reads other lanes' registers here, so the warp function lowers these rules
with ``cross_lane`` set: a register is read from the frame, not from a value kept
for the active lanes only.
"""

from __future__ import annotations

from llvmlite import ir

from ..rules import rule
from ..types import LANES, MASK, i1, i32, i64, is_signed, type_bits, vec


def _membermask(e, k: int) -> ir.Value:
    """The member mask operand as lanes: the active lanes that are members."""
    b = e.b
    m = e.src(k, 32)
    bit = b.and_(b.lshr(m, e.wf.lane_ids), e.splat(1, i32))
    return b.and_(e.active, b.icmp_unsigned("!=", bit, e.splat(0, i32)))


def _permute(e, v: ir.Value, idx: ir.Value) -> ir.Value:
    """``out[l] = v[idx[l]]`` for 32 lanes (via a stack buffer)."""
    b = e.b
    buf = e.entry_alloca(v.type)
    b.store(v, buf)
    ptrs = e.wf.vector_pointers(buf, b.zext(idx, vec(i64)), v.type.element.width // 8)
    return e.wf.masked_gather(ptrs, ir.Constant(MASK, 1), ir.Constant(v.type, 0))


@rule("shfl.sync", "shfl")
def shfl(e) -> None:
    b = e.b
    a = e.src(1, 32)
    bb = b.and_(e.src(2, 32), e.splat(31, i32))
    c = e.src(3, 32)
    lane = e.wf.lane_ids
    clamp = b.and_(c, e.splat(0x1F, i32))
    segmask = b.and_(b.lshr(c, e.splat(8, i32)), e.splat(0x1F, i32))
    maxlane = b.or_(b.and_(lane, segmask), b.and_(clamp, b.not_(segmask)))
    minlane = b.and_(lane, segmask)
    mode = next(m for m in e.mods if m in (".up", ".down", ".bfly", ".idx"))
    if mode == ".up":  # the ISA: pval = (j >= maxLane); the usual c = 0 makes it the segment start
        j = b.sub(lane, bb)
        ok = b.icmp_signed(">=", j, maxlane)
    elif mode == ".down":
        j = b.add(lane, bb)
        ok = b.icmp_signed("<=", j, maxlane)
    elif mode == ".bfly":
        j = b.xor(lane, bb)
        ok = b.icmp_signed("<=", j, maxlane)
    else:
        j = b.or_(minlane, b.and_(bb, b.not_(segmask)))
        ok = b.icmp_signed("<=", j, maxlane)
    j = b.select(ok, j, lane)
    j = b.and_(j, e.splat(31, i32))
    # shfl.sync: reading a lane that is not in membermask (or not active) is
    # undefined in the ISA; the emulator reads that lane's register as it is
    r = _permute(e, a, j)
    e.dst_pair(0, r, ok)


@rule("vote", "vote.sync")
def vote(e) -> None:
    b = e.b
    # ``vote.ballot.sync.b32 d, p, mask`` (CUB writes the mode before ``.sync``) is vote.sync
    sync = e.spec.name == "vote.sync" or ".sync" in e.mods
    members = _membermask(e, 2) if sync else e.active
    p = e.src_pred(1)
    mbits = b.bitcast(members, i32)
    tbits = b.bitcast(b.and_(members, p), i32)
    if ".ballot" in e.mods:
        e.dst(0, e.wf.splat_value(tbits))
        return
    if ".all" in e.mods:
        r = b.icmp_unsigned("==", tbits, mbits)
    elif ".any" in e.mods:
        r = b.icmp_unsigned("!=", tbits, ir.Constant(i32, 0))
    else:  # .uni
        r = b.or_(b.icmp_unsigned("==", tbits, mbits), b.icmp_unsigned("==", tbits, ir.Constant(i32, 0)))
    e.dst(0, e.wf.splat_value(r))


@rule("activemask")
def activemask(e) -> None:
    e.dst(0, e.wf.splat_value(e.b.bitcast(e.active, i32)))


@rule("match")
def match(e) -> None:
    b = e.b
    t = e.types[-1]
    bits = type_bits(t)
    v = e.src(1, bits)
    members = _membermask(e, 2)
    eq_masks = e.splat(0, i32)
    for lane in range(LANES):
        li = ir.Constant(i32, lane)
        x = e.wf.splat_value(b.extract_element(v, li))
        same = b.and_(b.icmp_unsigned("==", v, x), members)
        bit = b.bitcast(same, i32)
        eq_masks = b.insert_element(eq_masks, bit, li)
    if ".any" in e.mods:
        e.dst(0, eq_masks)
        return
    mbits = e.wf.splat_value(b.bitcast(members, i32))
    all_same = b.icmp_unsigned("==", eq_masks, mbits)
    anyall = ir.Constant(i1, 1)
    for lane in range(LANES):
        anyall = b.and_(anyall, b.or_(b.extract_element(all_same, ir.Constant(i32, lane)), b.not_(b.extract_element(members, ir.Constant(i32, lane)))))
    res = b.select(e.wf.splat_value(anyall), mbits, e.splat(0, i32))
    e.dst_pair(0, res, e.wf.splat_value(anyall))


@rule("redux.sync")
def redux(e) -> None:
    b = e.b
    t = e.types[-1]
    members = _membermask(e, 2)
    op = next(m for m in e.mods if m in (".add", ".min", ".max", ".and", ".or", ".xor"))
    if t == ".f32":
        raise e.fail("redux.sync.f32 is not emulated yet")
    v = e.src(1, 32, is_signed(t))
    ident = {".add": 0, ".and": -1, ".or": 0, ".xor": 0,
             ".min": (0x7FFFFFFF if is_signed(t) else -1), ".max": (-0x80000000 if is_signed(t) else 0)}[op]
    v = b.select(members, v, e.splat(ident, i32))
    name = {".add": "add", ".and": "and", ".or": "or", ".xor": "xor",
            ".min": "smin" if is_signed(t) else "umin", ".max": "smax" if is_signed(t) else "umax"}[op]
    r = e.call(f"llvm.vector.reduce.{name}.v32i32", i32, [v])
    e.dst(0, e.wf.splat_value(r))


@rule("elect.sync")
def elect(e) -> None:
    b = e.b
    members = _membermask(e, 1)
    bits = b.bitcast(members, i32)
    lead = e.call("llvm.cttz.i32", i32, [bits, ir.Constant(i1, 1)])
    is_lead = b.and_(b.icmp_unsigned("==", e.wf.lane_ids, e.wf.splat_value(lead)), members)
    e.dst_pair(0, e.wf.splat_value(lead), is_lead)
