"""The memory model: addresses of every state space to bounds-checked host pointers, and
``hypa_flat_lanes``, the lookup of flat host addresses in the table of allocations.

A generic or global address is a window (``abi.WINDOW_SHIFT``) and an offset: window 0
and windows past the last are flat host addresses, valid inside a registered allocation
(``abi.CTX_FLAT_*``, checked against the range the same access hit last, else searched);
shared, const and the kernel parameters are one block per CTA, local memory and call
parameters a block per thread.  A lane outside its space stops the warp with ``ERR_OUT_OF_BOUNDS``.

A state-space address (``ld.local``, ``ld.param``, ``ld.const`` ..., not generic) is the
offset in its space, checked with all 64 bits: an offset past the end, one that wraps
around zero (just below a variable at offset 0) or one with bits 40 and up set (a
generic address, ``2**40``) is out of bounds.  Shared addresses are 32-bit, as on the GPU:
the offset is the address's low 32 bits.
"""

from __future__ import annotations

from llvmlite import ir

from ... import abi
from . import initcheck, outline, racecheck
from .function import WarpFunction
from .irbuild import helper_function, lowest_lane
from .types import VPTR, i32, i64, ivec, ptr


def host_pointers(wf: WarpFunction, instr: int, space: str, addr: ir.Value, nbytes: int | ir.Value, mask: ir.Value,
                  kind: str, intent: str = initcheck.UNKNOWN) -> ir.Value:
    """Host pointers (``<32 x ptr>``) for ``nbytes`` at each lane's ``addr`` (i64 lanes) of
    the state space ``space`` (``kind``: how the address was given, ``Emitter.address``),
    checked in the lanes of ``mask``: out of bounds, instruction ``instr`` fails.
    ``nbytes``: a constant, or i64 lanes (the bulk copies' sizes).  ``intent``
    (``initcheck.READ`` ...): what the access does with shared and local bytes, for initcheck
    and racecheck.
    Built once per module as a helper function and called (``outline.py``)."""
    if outline.enabled(wf):
        return outline.host_pointers(wf, instr, space, addr, nbytes, mask, kind, intent, _inline_host_pointers)
    return _inline_host_pointers(wf, instr, space, addr, nbytes, mask, kind, intent)


def _inline_host_pointers(wf: WarpFunction, instr: int | ir.Value, space: str, addr: ir.Value,
                          nbytes: int | ir.Value, mask: ir.Value, kind: str, intent: str) -> ir.Value:
    """``host_pointers``' code, built where it is called."""
    ptrs, distance = _host_pointers(wf, instr, space, addr, nbytes, mask, kind)
    if distance is not None and initcheck.enabled(wf):
        initcheck.shadow(wf, instr, ptrs, distance, nbytes, mask, intent, addr)
    if racecheck.enabled(wf):
        racecheck.access(wf, instr, space, ptrs, nbytes, mask, intent)
    return ptrs


def _host_pointers(wf: WarpFunction, instr: int, space: str, addr: ir.Value, nbytes: int | ir.Value, mask: ir.Value,
                   kind: str) -> tuple[ir.Value, ir.Value | None]:
    """``host_pointers``' pointers, and the lanes' initcheck shadow distance (None: untracked)."""
    b = wf.b
    if addr.type != ivec(64):
        addr = b.zext(addr, ivec(64))
    n = nbytes if isinstance(nbytes, ir.Value) else wf.splat(nbytes, i64)
    if kind == "param":
        base = wf.ctx_word(abi.CTX_PARAM)
        size = wf.splat(wf.prog.param_bytes, i64)
        off = addr
        host = b.add(wf.splat_value(base), off)
        wf.error_if(instr, b.and_(mask, _outside(wf, off, n, size)), abi.ERR_OUT_OF_BOUNDS, addr)
        return b.inttoptr(host, VPTR), None
    if kind == "cparam" or space == "cparam":
        return _per_thread(wf, instr, abi.CTX_CPARAM, abi.CTX_CPARAM_SIZE, addr, n, mask), None
    if space in ("shared", "shared::cta", "shared::cluster"):
        off = b.and_(addr, wf.splat(0xFFFFFFFF, i64))
        size = wf.splat_value(wf.ctx_word(abi.CTX_SHARED_SIZE))
        return _in_space(wf, instr, abi.CTX_SHARED, size, off, n, mask, addr), initcheck.state_space_distance(wf, space)
    if space == "local":
        return (_per_thread(wf, instr, abi.CTX_LOCAL, abi.CTX_LOCAL_SIZE, addr, n, mask),
                initcheck.state_space_distance(wf, space))
    if space == "const":
        size = wf.splat_value(wf.ctx_word(abi.CTX_CONST_SIZE))
        return _in_space(wf, instr, abi.CTX_CONST, size, addr, n, mask, addr), None
    if space == "param":
        # a register address into the kernel parameters (rare)
        return _in_space(wf, instr, abi.CTX_PARAM, wf.splat(wf.prog.param_bytes, i64), addr, n, mask, addr), None
    # global and generic: window table; addresses outside every window (window 0 or
    # past the last) are flat host addresses, valid inside a registered allocation
    win = b.lshr(addr, wf.splat(abi.WINDOW_SHIFT, i64))
    off = b.and_(addr, wf.splat(abi.OFFSET_MASK, i64))
    nwin = wf.splat_value(wf.ctx_word(abi.CTX_NWIN))
    flat = b.or_(b.icmp_unsigned(">=", win, nwin), b.icmp_unsigned("==", win, wf.splat(0, i64)))
    flat_lanes = b.and_(mask, flat)
    bits = wf.mask_to_i32(flat_lanes)
    bad_bits = _flat_check(wf, addr, n, bits)
    wf.error_if(instr, wf.i32_to_mask(bad_bits), abi.ERR_OUT_OF_BOUNDS, addr)
    safe_win = b.select(flat, wf.splat(0, i64), win)
    wmask = b.and_(mask, b.not_(flat))
    host = b.select(flat, addr, _window_pointers(wf, instr, addr, off, n, safe_win, wmask))
    distance = initcheck.window_distance(wf, safe_win) if initcheck.enabled(wf) else None
    return b.inttoptr(host, VPTR), distance


def _window_pointers(wf: WarpFunction, instr: int, addr, off, n, win, wmask) -> ir.Value:
    """Host addresses of the lanes of ``wmask`` in their windows (``win``), bounds-checked;
    skipped where no lane is in a window (``hypa run``'s flat memory: three gathers less)."""
    b = wf.b
    pre = b.block
    with b.if_then(b.icmp_unsigned("!=", wf.mask_to_i32(wmask), ir.Constant(i32, 0))):
        bases = _gather64(wf, wf.ctx_ptr(abi.CTX_WIN_BASE), win, wmask)
        sizes = _gather64(wf, wf.ctx_ptr(abi.CTX_WIN_SIZE), win, wmask)
        strides = _gather64(wf, wf.ctx_ptr(abi.CTX_WIN_STRIDE), win, wmask)
        oob = b.icmp_unsigned(">", b.add(off, n), sizes)
        wf.error_if(instr, b.and_(wmask, oob), abi.ERR_OUT_OF_BOUNDS, addr)
        lin = b.zext(wf.thread_lin, ivec(64))
        host = b.add(b.add(bases, b.mul(lin, strides)), off)
        done = b.block
    joined = b.phi(ivec(64))
    joined.add_incoming(wf.splat(0, i64), pre)
    joined.add_incoming(host, done)
    return joined


def _site_hint(wf: WarpFunction) -> ir.Value:
    """This access's own word for the index of the allocation it hit last: one per access,
    not one per launch (``CTX_FLAT_HINT``), or a kernel reading two arrays alternately
    misses at every access and searches lane by lane (``hypa_flat_lanes``).  A global of
    the compiled code, so it lasts across warps, CTAs and launches; only a hint (any value
    is checked against the table before use), so processes and threads need not agree on it.
    A shared helper (``outline.host_pointers``) gets its caller's word as a parameter."""
    passed = getattr(wf, "flat_hint", None)
    if passed is not None:
        return passed
    g = ir.GlobalVariable(wf.module, i64, wf.module.get_unique_name("flat_hint"))
    g.linkage = "internal"
    g.initializer = ir.Constant(i64, 0)
    return g


def _flat_check(wf: WarpFunction, addr: ir.Value, n: ir.Value, bits: ir.Value) -> ir.Value:
    """The lanes (of ``bits``) whose flat address is in no allocation.  Fast path: every
    lane inside the allocation this access hit last (one vector compare); else the per-lane
    search, whose last hit becomes this access's hint."""
    b = wf.b
    pre = b.block
    fn = b.function
    site = _site_hint(wf)
    has_flat = fn.append_basic_block("flat")
    fast = fn.append_basic_block("flat.hint")
    slow = fn.append_basic_block("flat.search")
    join = fn.append_basic_block("flat.done")
    b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(i32, 0)), has_flat, join)
    b.position_at_end(has_flat)
    count = wf.ctx_word(abi.CTX_FLAT_N)
    b.cbranch(b.icmp_unsigned("!=", count, ir.Constant(i64, 0)), fast, join)
    b.position_at_end(fast)
    hint = b.load(site, typ=i64)
    safe = b.select(b.icmp_unsigned("<", hint, count), hint, ir.Constant(i64, 0))
    start = b.load(b.gep(wf.ctx_ptr(abi.CTX_FLAT_START), [safe], source_etype=i64), typ=i64)
    end = b.load(b.gep(wf.ctx_ptr(abi.CTX_FLAT_END), [safe], source_etype=i64), typ=i64)
    last = b.add(addr, n)
    inside = b.and_(b.and_(b.icmp_unsigned(">=", addr, wf.splat_value(start)),
                           b.icmp_unsigned("<=", last, wf.splat_value(end))),
                    b.icmp_unsigned(">=", last, addr))
    miss = b.and_(bits, b.not_(wf.mask_to_i32(inside)))
    # lanes inside the allowed slack before or past the bytes asked for: the first such address is kept
    exact = b.load(b.gep(wf.ctx_ptr(abi.CTX_FLAT_EXACT_END), [safe], source_etype=i64), typ=i64)
    exact_start = b.load(b.gep(wf.ctx_ptr(abi.CTX_FLAT_EXACT_START), [safe], source_etype=i64), typ=i64)
    outside = b.or_(b.icmp_unsigned(">", last, wf.splat_value(exact)), b.icmp_unsigned("<", addr, wf.splat_value(exact_start)))
    over = b.and_(b.and_(bits, wf.mask_to_i32(inside)), wf.mask_to_i32(outside))
    with b.if_then(b.icmp_unsigned("!=", over, ir.Constant(i32, 0)), likely=False):
        slack_p = b.gep(wf.ctx, [ir.Constant(i64, abi.CTX_FLAT_SLACK)], source_etype=i64)
        lane = lowest_lane(b, wf.module, over)
        first = b.extract_element(addr, lane)
        old = b.load(slack_p, typ=i64)
        b.store(b.select(b.icmp_unsigned("==", old, ir.Constant(i64, 0)), first, old), slack_p)
    fast_end = b.block
    b.cbranch(b.icmp_unsigned("==", miss, ir.Constant(i32, 0)), join, slow)
    b.position_at_end(slow)
    ok = b.call(flat_lanes_function(wf.module), [wf.ctx, addr, n, miss])
    b.store(wf.ctx_word(abi.CTX_FLAT_HINT), site)
    bad_slow = b.and_(miss, b.not_(ok))
    slow_end = b.block
    b.branch(join)
    b.position_at_end(join)
    bad = b.phi(i32)
    bad.add_incoming(ir.Constant(i32, 0), pre)
    bad.add_incoming(bits, has_flat)
    bad.add_incoming(ir.Constant(i32, 0), fast_end)
    bad.add_incoming(bad_slow, slow_end)
    return bad


def _outside(wf: WarpFunction, off: ir.Value, n: ir.Value, size: ir.Value) -> ir.Value:
    """Lanes whose ``[off, off + n)`` is not inside ``[0, size)`` (all 64 bits: an ``off``
    near 2**64 wraps ``off + n`` around zero, and is outside too)."""
    b = wf.b
    return b.or_(b.icmp_unsigned(">", off, size), b.icmp_unsigned(">", b.add(off, n), size))


def _gather64(wf: WarpFunction, table: ir.Value, idx: ir.Value, mask: ir.Value) -> ir.Value:
    """``table[idx]`` (i64 words) in the lanes of ``mask``, 0 elsewhere."""
    return wf.masked_gather(wf.vector_pointers(table, idx, 8), mask, wf.splat(0, i64))


def _in_space(wf: WarpFunction, instr: int, base_word: int, size: ir.Value, off: ir.Value, n, mask, addr) -> ir.Value:
    """Pointers to ``off`` in a state space of ``size`` bytes at ``ctx[base_word]``, checked."""
    b = wf.b
    base = wf.ctx_word(base_word)
    wf.error_if(instr, b.and_(mask, _outside(wf, off, n, size)), abi.ERR_OUT_OF_BOUNDS, addr)
    return b.inttoptr(b.add(wf.splat_value(base), off), VPTR)


def _per_thread(wf: WarpFunction, instr: int, base_word: int, size_word: int, addr: ir.Value, n, mask) -> ir.Value:
    """Pointers into the calling thread's part of a per-thread space (local, call parameters)."""
    b = wf.b
    off = addr  # all 64 bits: 2**40 is not offset 0
    base = wf.ctx_word(base_word)
    stride = wf.ctx_word(size_word)
    size = wf.splat_value(stride)
    wf.error_if(instr, b.and_(mask, _outside(wf, off, n, size)), abi.ERR_OUT_OF_BOUNDS, addr)
    lin = b.zext(wf.thread_lin, ivec(64))
    host = b.add(b.add(wf.splat_value(base), b.mul(lin, wf.splat_value(stride))), off)
    return b.inttoptr(host, VPTR)


def check_alignment(wf: WarpFunction, instr: int, addr: ir.Value, nbytes: int, mask: ir.Value) -> None:
    """Lanes of ``mask`` whose ``addr`` is not a multiple of ``nbytes`` (the access's natural
    alignment: its whole size, a vector's included) stop instruction ``instr`` with
    ``ERR_MISALIGNED`` (``CTX_ERR_AUX``: ``nbytes``), as a GPU stops with
    cudaErrorMisalignedAddress.  An AND, a compare and a branch per access; in every mode."""
    if nbytes <= 1:
        return
    b = wf.b
    if addr.type != ivec(64):
        addr = b.zext(addr, ivec(64))
    bad = b.and_(mask, b.icmp_unsigned("!=", b.and_(addr, wf.splat(nbytes - 1, i64)), wf.splat(0, i64)))
    with b.if_then(b.icmp_unsigned("!=", wf.mask_to_i32(bad), ir.Constant(i32, 0)), likely=False):
        wf.set_ctx_word(abi.CTX_ERR_AUX, ir.Constant(i64, nbytes))
        wf.error_if(instr, bad, abi.ERR_MISALIGNED, addr)


def access(wf: WarpFunction, instr: int, space: str, addr: ir.Value, bits: int, mask: ir.Value,
           value: ir.Value | None, kind: str) -> ir.Value | None:
    """Load (``value`` None: the loaded lanes, 0 outside ``mask``) or store ``value`` of
    ``bits`` per lane at ``addr`` in ``space``, bounds-checked."""
    ptrs = host_pointers(wf, instr, space, addr, max(bits, 8) // 8, mask, kind,
                         initcheck.READ if value is None else initcheck.WRITE)
    if value is None:
        return wf.masked_gather(ptrs, mask, ir.Constant(ivec(max(bits, 8)), 0))
    wf.masked_scatter(value, ptrs, mask)
    return None


def flat_lanes_function(module: ir.Module) -> ir.Function:
    """``i32 hypa_flat_lanes(ctx, <32 x i64> addr, <32 x i64> n, i32 lanes)``: the lanes (bits)
    whose ``[addr, addr + n)`` lies inside one range of the flat table (abi.CTX_FLAT_*).
    Made once per module; the last range hit is tried first."""
    f, new = helper_function(module, "hypa_flat_lanes", i32, [ptr, ivec(64), ivec(64), i32])
    if not new:
        return f
    ctx, addrs, n, lanes = f.args
    entry, loop, search, bs_head, bs_body, bs_done, found, nxt, done = (
        f.append_basic_block(n) for n in ("entry", "lane", "search", "bs_head", "bs_body", "bs_done", "found", "next", "done"))
    b = ir.IRBuilder(entry)

    def word(k):
        return b.load(b.gep(ctx, [ir.Constant(i64, k)], source_etype=i64), typ=i64)

    starts = b.inttoptr(word(abi.CTX_FLAT_START), ptr)
    ends = b.inttoptr(word(abi.CTX_FLAT_END), ptr)
    count = word(abi.CTX_FLAT_N)
    hint_p = b.gep(ctx, [ir.Constant(i64, abi.CTX_FLAT_HINT)], source_etype=i64)
    with b.if_then(b.icmp_unsigned("==", count, ir.Constant(i64, 0))):
        b.ret(ir.Constant(i32, 0))  # no flat memory: no lane is valid
    start_block = b.block
    b.branch(loop)
    # for each lane set in `lanes`
    b.position_at_end(loop)
    rem = b.phi(i32)
    ok = b.phi(i32)
    rem.add_incoming(lanes, start_block)
    ok.add_incoming(ir.Constant(i32, 0), start_block)
    more = b.icmp_unsigned("!=", rem, ir.Constant(i32, 0))
    b.cbranch(more, search, done)
    b.position_at_end(search)
    lane = lowest_lane(b, module, rem)
    a = b.extract_element(addrs, lane)
    end = b.add(a, b.extract_element(n, lane))
    no_wrap = b.icmp_unsigned(">=", end, a)
    hint = b.load(hint_p, typ=i64)
    hint_ok = b.icmp_unsigned("<", hint, count)
    safe_hint = b.select(hint_ok, hint, ir.Constant(i64, 0))
    hs = b.load(b.gep(starts, [safe_hint], source_etype=i64), typ=i64)
    he = b.load(b.gep(ends, [safe_hint], source_etype=i64), typ=i64)
    in_hint = b.and_(b.and_(hint_ok, no_wrap), b.and_(b.icmp_unsigned("<=", hs, a), b.icmp_unsigned("<=", end, he)))
    b.cbranch(in_hint, found, bs_head)
    # binary search: the last range whose start <= a
    b.position_at_end(bs_head)
    lo = b.phi(i64)
    hi = b.phi(i64)
    lo.add_incoming(ir.Constant(i64, 0), search)
    hi.add_incoming(count, search)
    b.cbranch(b.icmp_unsigned("<", lo, hi), bs_body, bs_done)
    b.position_at_end(bs_body)
    mid = b.lshr(b.add(lo, hi), ir.Constant(i64, 1))
    ms = b.load(b.gep(starts, [mid], source_etype=i64), typ=i64)
    le = b.icmp_unsigned("<=", ms, a)
    lo.add_incoming(b.select(le, b.add(mid, ir.Constant(i64, 1)), lo), bs_body)
    hi.add_incoming(b.select(le, hi, mid), bs_body)
    b.branch(bs_head)
    b.position_at_end(bs_done)
    k = b.sub(lo, ir.Constant(i64, 1))
    has = b.icmp_unsigned("!=", lo, ir.Constant(i64, 0))
    safe_k = b.select(has, k, ir.Constant(i64, 0))
    ke = b.load(b.gep(ends, [safe_k], source_etype=i64), typ=i64)
    hit = b.and_(b.and_(has, no_wrap), b.icmp_unsigned("<=", end, ke))
    with b.if_then(hit):
        b.store(safe_k, hint_p)
    miss_from = b.block
    b.cbranch(hit, found, nxt)
    b.position_at_end(found)
    k_found = b.phi(i64)
    k_found.add_incoming(safe_hint, search)
    k_found.add_incoming(safe_k, miss_from)
    exact = b.load(b.gep(b.inttoptr(word(abi.CTX_FLAT_EXACT_END), ptr), [k_found], source_etype=i64), typ=i64)
    exact_start = b.load(b.gep(b.inttoptr(word(abi.CTX_FLAT_EXACT_START), ptr), [k_found], source_etype=i64), typ=i64)
    slack_p = b.gep(ctx, [ir.Constant(i64, abi.CTX_FLAT_SLACK)], source_etype=i64)
    outside = b.or_(b.icmp_unsigned(">", end, exact), b.icmp_unsigned("<", a, exact_start))
    with b.if_then(b.and_(outside, b.icmp_unsigned("==", b.load(slack_p, typ=i64), ir.Constant(i64, 0))),
                   likely=False):
        b.store(a, slack_p)
    bit = b.shl(ir.Constant(i32, 1), lane)
    ok_found = b.or_(ok, bit)
    found_end = b.block
    b.branch(nxt)
    b.position_at_end(nxt)
    ok2 = b.phi(i32)
    ok2.add_incoming(ok_found, found_end)
    ok2.add_incoming(ok, miss_from)
    rem2 = b.and_(rem, b.sub(rem, ir.Constant(i32, 1)))
    rem.add_incoming(rem2, nxt)
    ok.add_incoming(ok2, nxt)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(ok)
    return f
