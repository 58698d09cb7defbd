"""Matrix instructions: wmma.load / wmma.mma / wmma.store, mma.sync, ldmatrix, stmatrix and
movmatrix.

The PTX ISA leaves the distribution of wmma's matrix elements over the lanes'
fragments unspecified ("architecture dependent"), so a program can only rely
on load, mma and store agreeing with each other (and on element-wise
operations on fragments).  The emulator's layout: a fragment of F elements
per lane holds, in lane l, element j, the matrix element at row-major index
(l * F + j) mod (rows * cols); when 32 * F exceeds the matrix (f16 A and B
fragments of m16n16k16 hold every element twice) the elements repeat.
wmma.mma and mma.sync compute D = A * B + C: f16/bf16 inputs as an H100's tensor
core does (``tensor_core``: one fused step per instruction, addends truncated to a
fixed alignment, the sum rounded toward zero; bit for bit), tf32 with one f32
rounding per multiply-add in k order (agrees to rounding), f64 exactly as IEEE, or
integers (s8/u8 -> s32, .satfinite clamps).  ``mma.sync``
``ldmatrix``, ``stmatrix`` and ``movmatrix`` use the fragment layouts the ISA specifies.
"""

from __future__ import annotations

import re

from llvmlite import ir

from hypa.ptxdialect import isa
from hypa.ptxdialect.operands import parse_int_immediate

from .. import initcheck
from .. import softfloat as sf
from .. import tensor_core
from ..irbuild import lowest_lane
from ..rules import rule
from ..types import LANES, MASK, VPTR, i32, i64, vec

# ---------------------------------------------------------------------------
# WMMA: wmma.load / wmma.mma / wmma.store
# ---------------------------------------------------------------------------

_WMMA_ELEM_BITS = {".f16": 16, ".bf16": 16, ".tf32": 32, ".f32": 32, ".s32": 32, ".s8": 8, ".u8": 8, ".f64": 64}


def _wmma_shape(e) -> tuple[int, int, int]:
    for m in e.mods:
        g = re.fullmatch(r"\.m(\d+)n(\d+)k(\d+)", m)
        if g:
            return int(g.group(1)), int(g.group(2)), int(g.group(3))
    raise e.fail("needs a shape (.m16n16k16, ...)")


def _wmma_dims(which: str, shape: tuple[int, int, int]) -> tuple[int, int]:
    m, n, k = shape
    return {"a": (m, k), "b": (k, n)}.get(which, (m, n))


def _wmma_type(e, t: str) -> int:
    bits = _WMMA_ELEM_BITS.get(t)
    if bits is None:
        raise e.fail(f"{t} fragments are not emulated (f16, bf16, tf32, f32, f64, s8, u8, s32 are)")
    return bits


def _wmma_space(e) -> str:
    for m in e.mods:
        if m.startswith(".shared"):
            return "shared"
        if m == ".global":
            return "global"
    return "generic"


def _frag_elements(nregs: int, ebits: int, e=None, rows: int = 0, cols: int = 0, replicated: bool = False) -> tuple[int, int, int]:
    """(register bits, elements per register, elements per lane); with ``e``,
    checks the register count the ISA gives a rows x cols fragment (f16 A and B
    fragments are 8 registers for every shape: some hold elements twice or 4 times)."""
    rbits = 64 if ebits == 64 else 32
    per = max(1, rbits // ebits)
    if e is not None:
        need = 8 if replicated else max(1, rows * cols // (LANES * per))
        if nregs != need:
            raise e.fail(f"a {rows}x{cols} fragment needs {need} registers, not {nregs}")
    return rbits, per, nregs * per


def _frag_coords(which: str, rows: int, cols: int, col_major: bool, F: int, lane: int, j: int) -> tuple[int, int]:
    """(row, column) of element j of lane's fragment.  A and B fragments follow the
    layout they were loaded with (wmma.mma names the same layouts), so a lane's
    consecutive elements are consecutive in memory; C and D fragments are
    row-major whatever the layout of wmma.load.c / wmma.store.d."""
    idx = (lane * F + j) % (rows * cols)
    if which in ("a", "b") and col_major:
        return idx % rows, idx // rows
    return idx // cols, idx % cols


def _wmma_offsets(e, which, rows, cols, F, j, col_major: bool, stride: ir.Value) -> ir.Value:
    """Element offsets (i64 lanes) in memory of fragment element j."""
    rc = [_frag_coords(which, rows, cols, col_major, F, l, j) for l in range(LANES)]
    r = ir.Constant(vec(i64), [x[0] for x in rc])
    c = ir.Constant(vec(i64), [x[1] for x in rc])
    b = e.b
    return b.add(b.mul(c, stride), r) if col_major else b.add(b.mul(r, stride), c)


def _contiguous(which, rows, cols, col_major: bool, F: int, per: int) -> bool:
    """Whether each register's ``per`` elements are consecutive in memory."""
    if per == 1:
        return True
    seg = rows if (col_major and which in ("a", "b")) else cols
    if which not in ("a", "b") and col_major:
        return False
    return seg % per == 0 and F % per == 0


def _wmma_stride(e, k: int, rows: int, cols: int, col_major: bool) -> ir.Value:
    if k < len(e.args):
        if e.args[k][0] == "imm":  # an integer whatever the fragment's type
            return e.splat(parse_int_immediate(e.args[k][1]), i64)
        return e.b.zext(e.src(k, 32), vec(i64))
    return e.splat(rows if col_major else cols, i64)


def _wmma_pointers(e, which: str, k_addr: int, k_stride: int, ebits: int, F: int, mask: ir.Value,
                   intent: str = initcheck.READ, reg_bytes: int = 0) -> list[ir.Value]:
    """Host pointers (``<32 x ptr>``) of the F fragment elements of a wmma.load or
    wmma.store, bounds-checked once per lane: its first and its last element.  With
    initcheck on, every element's bytes are checked (``intent`` READ) or marked (WRITE).
    First the matrix's address must be a multiple of a fragment register's width,
    ``reg_bytes`` (4; 8 for .f64), as a GPU faults there with a misaligned address.  The
    PTX ISA ("Matrix Storage for WMMA") asks more -- every row (column) starting at a
    multiple of the lane's fragment size, 32 bytes for m16n16k16's A -- but an H100 runs
    those loads and stores (rows 16 bytes off, strides of 17 or 19 halves: the recordings in
    tests/unit/test_alignment.py), and hypa does not stop what a GPU runs."""
    b = e.b
    rows, cols = _wmma_dims(which, _wmma_shape(e))
    col_major = ".col" in e.mods
    kind, base, _ = e.address(k_addr)
    space = kind if kind in ("param", "cparam", "shared") else _wmma_space(e)
    if reg_bytes > 1:
        e.check_alignment(base, reg_bytes, mask)
    stride = _wmma_stride(e, k_stride, rows, cols, col_major)
    offs = [_wmma_offsets(e, which, rows, cols, F, j, col_major, stride) for j in range(F)]
    lo, hi = offs[0], offs[0]
    for o in offs[1:]:
        lo = b.select(b.icmp_unsigned("<", o, lo), o, lo)
        hi = b.select(b.icmp_unsigned(">", o, hi), o, hi)
    esz = e.splat(ebits // 8, i64)
    first = e.host_pointers(space, b.add(base, b.mul(lo, esz)), ebits // 8, mask, kind, initcheck.UNTRACKED)
    e.host_pointers(space, b.add(base, b.mul(hi, esz)), ebits // 8, mask, kind, initcheck.UNTRACKED)
    if initcheck.enabled(e.wf) and space in ("shared", "local", "generic"):
        for o in offs:
            e.host_pointers(space, b.add(base, b.mul(o, esz)), ebits // 8, mask, kind, intent)
    fi = b.ptrtoint(first, vec(i64))
    return [b.inttoptr(b.add(fi, b.mul(b.sub(o, lo), esz)), VPTR) for o in offs]


def _masked_gather(e, ptrs: ir.Value, bits: int, mask: ir.Value) -> ir.Value:
    return e.wf.masked_gather(ptrs, mask, ir.Constant(vec(ir.IntType(bits)), 0))


def _which(e, default: str) -> str:
    return next((m[1] for m in e.mods if m in (".a", ".b", ".c", ".d")), default)


@rule("wmma.load")
def wmma_load(e, check_only: bool = False) -> None:
    """``check_only``: the fragment's bytes are bounds-checked (slice mode), not loaded."""
    b = e.b
    which = _which(e, "")
    if which not in ("a", "b", "c"):
        raise e.fail("needs .a, .b or .c")
    ebits = _wmma_type(e, e.types[-1])
    nregs = len(e.elements(0))
    rows, cols = _wmma_dims(which, _wmma_shape(e))
    rbits, per, F = _frag_elements(nregs, ebits, e, rows, cols, which in ("a", "b") and e.types[-1] == ".f16")
    ptrs = _wmma_pointers(e, which, 1, 2, ebits, F, e.exec_mask, reg_bytes=rbits // 8)
    if check_only:
        return
    rty = ir.IntType(rbits)
    whole = _contiguous(which, rows, cols, ".col" in e.mods, F, per)
    regs = []
    for r in range(nregs):
        if whole:  # the register's elements in one load
            regs.append(_masked_gather(e, ptrs[r * per], rbits, e.exec_mask))
            continue
        reg = None
        for p in range(per):
            v = b.zext(_masked_gather(e, ptrs[r * per + p], ebits, e.exec_mask), vec(rty))
            if p:
                v = b.shl(v, e.splat(p * ebits, rty))
            reg = v if reg is None else b.or_(reg, v)
        regs.append(reg)
    e.dst_elements(0, regs)


@rule("wmma.store")
def wmma_store(e, check_only: bool = False) -> None:
    """``check_only``: the fragment's bytes are bounds-checked (slice mode), not stored."""
    b = e.b
    ebits = _wmma_type(e, e.types[-1])
    nregs = len(e.elements(1))
    rows, cols = _wmma_dims("d", _wmma_shape(e))
    rbits, per, F = _frag_elements(nregs, ebits, e, rows, cols)
    ptrs = _wmma_pointers(e, "d", 0, 2, ebits, F, e.exec_mask, initcheck.WRITE, rbits // 8)
    if check_only:
        return
    whole = _contiguous("d", rows, cols, ".col" in e.mods, F, per)
    regs = e.src_elements(1, rbits)
    for r in range(nregs):
        if whole:
            e.wf.masked_scatter(regs[r], ptrs[r * per], e.exec_mask)
            continue
        for p in range(per):
            v = b.trunc(b.lshr(regs[r], e.splat(p * ebits, ir.IntType(rbits))), vec(ir.IntType(ebits)))
            e.wf.masked_scatter(v, ptrs[r * per + p], e.exec_mask)


def _frag_values(e, k: int, t: str, comp: ir.Type, rows: int = 0, cols: int = 0) -> tuple[list[ir.Value], int]:
    """The elements of fragment operand k (type t) as ``comp`` lanes, and F (the
    register count is checked against a rows x cols WMMA fragment when given)."""
    b = e.b
    ebits = _WMMA_ELEM_BITS[t]
    nregs = len(e.elements(k))
    rbits, per, F = _frag_elements(nregs, ebits, e if rows else None, rows, cols, k in (1, 2) and t == ".f16")
    out = []
    for reg in e.src_elements(k, rbits):
        for p in range(per):
            v = reg
            if ebits < rbits:
                v = b.trunc(b.lshr(v, e.splat(p * ebits, ir.IntType(rbits))), vec(ir.IntType(ebits)))
            if t == ".f16":
                v = sf.f16_to_f32(e, v)
            elif t == ".bf16":
                v = sf.bf16_to_f32(e, v)
            elif t == ".tf32":  # the low 13 bits of a tf32 operand are ignored
                v = b.bitcast(b.and_(v, e.splat(0xFFFFE000, i32)), vec(ir.FloatType()))
            elif t == ".f32":
                v = b.bitcast(v, vec(ir.FloatType()))
            elif t == ".f64":
                v = b.bitcast(v, vec(ir.DoubleType()))
            elif t in (".s8", ".s32"):
                v = b.sext(v, vec(comp)) if ebits < comp.width else v
            elif t == ".u8":
                v = b.zext(v, vec(comp))
            out.append(v)
    return out, F


def _scalar_loop(b: ir.IRBuilder, n: int, name: str):
    """Open ``for i in range(n)`` (i64) at the builder; returns (i, close)."""
    fn = b.function
    head = fn.append_basic_block(name + "_head")
    body = fn.append_basic_block(name + "_body")
    done = fn.append_basic_block(name + "_done")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), pre)
    b.cbranch(b.icmp_unsigned("<", i, ir.Constant(i64, n)), body, done)
    b.position_at_end(body)

    def close():
        i.add_incoming(b.add(i, ir.Constant(i64, 1)), b.block)
        b.branch(head)
        b.position_at_end(done)

    return i, close


def _mma_core(e, shape, types, frags, coords, satfinite: bool) -> None:
    """D = A * B + C for one warp.  ``frags``: the element lanes of A, B and C (in
    register order, low half first); ``coords``: for A, B and C/D, a function
    (lane, element) -> (row, column).  Writes operand 0."""
    b = e.b
    m, n, k = shape
    at, bt, ct, dt = types
    av, bv, cv = frags
    is_int = at in (".s8", ".u8")
    comp = ir.IntType(64) if is_int else (ir.DoubleType() if at == ".f64" else ir.FloatType())
    esz = 4 if isinstance(comp, ir.FloatType) else 8
    all_lanes = ir.Constant(MASK, 1)
    vt = vec(comp)
    scatter = e.wf.scatter_function(vt)
    # the fragments, row-major in a buffer each (the C buffer becomes D)
    bufs = []
    for vals, fc, cols, size in ((av, coords[0], k, m * k), (bv, coords[1], n, k * n), (cv, coords[2], n, m * n)):
        buf = e.entry_alloca(ir.ArrayType(comp, size))
        for j, v in enumerate(vals):
            idx = ir.Constant(vec(i64), [r * cols + c for r, c in (fc(l, j) for l in range(LANES))])
            b.call(scatter, [v, e.wf.vector_pointers(buf, idx, esz), all_lanes])
        bufs.append(buf)
    abuf, bbuf, dbuf = bufs
    # D = A * B + C, element by element: f16/bf16 with an f32 accumulator as the H100's tensor
    # core rounds (``tensor_core``), others one rounding per multiply-add in k order
    fn = b.function
    cell, close_cell = _scalar_loop(b, m * n, "mma_cell")
    row = b.udiv(cell, ir.Constant(i64, n))
    col = b.urem(cell, ir.Constant(i64, n))
    dptr = b.gep(dbuf, [ir.Constant(i64, 0), cell])
    acc0 = b.load(dptr, typ=comp)
    if at in (".f16", ".bf16"):
        arow = b.gep(abuf, [ir.Constant(i64, 0), b.mul(row, ir.Constant(i64, k))])
        bcol = b.gep(bbuf, [ir.Constant(i64, 0), col])
        b.store(tensor_core.dot(b, e.wf.module, at, k, n, arow, bcol, acc0), dptr)
        close_cell()
        return _mma_store_d(e, dt, n, coords, dbuf, vt, esz, satfinite)
    pre = b.block
    head, body, done = (fn.append_basic_block(f"mma_k_{x}") for x in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    kk = b.phi(i64)
    acc = b.phi(comp)
    kk.add_incoming(ir.Constant(i64, 0), pre)
    acc.add_incoming(acc0, pre)
    b.cbranch(b.icmp_unsigned("<", kk, ir.Constant(i64, k)), body, done)
    b.position_at_end(body)
    x = b.load(b.gep(abuf, [ir.Constant(i64, 0), b.add(b.mul(row, ir.Constant(i64, k)), kk)]), typ=comp)
    y = b.load(b.gep(bbuf, [ir.Constant(i64, 0), b.add(b.mul(kk, ir.Constant(i64, n)), col)]), typ=comp)
    if is_int:
        nxt = b.add(b.mul(x, y), acc)
    else:
        fname = "llvm.fma.f64" if isinstance(comp, ir.DoubleType) else "llvm.fma.f32"
        nxt = b.call(e.wf.intrinsic(fname, comp, [comp, comp, comp]), [x, y, acc])
    kk.add_incoming(b.add(kk, ir.Constant(i64, 1)), b.block)
    acc.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)
    b.store(acc, dptr)
    close_cell()
    _mma_store_d(e, dt, n, coords, dbuf, vt, esz, satfinite)


def _mma_store_d(e, dt, n, coords, dbuf, vt, esz, satfinite) -> None:
    """D's elements (``dbuf``, row-major) back into the lanes, in the C/D fragment layout."""
    b = e.b
    all_lanes = ir.Constant(MASK, 1)
    gather = e.wf.gather_function(vt)
    ebits = _WMMA_ELEM_BITS[dt]
    nregs = len(e.elements(0))
    rbits, per, _ = _frag_elements(nregs, ebits)
    regs = []
    for r in range(nregs):
        reg = None
        for p in range(per):
            j = r * per + p
            idx = ir.Constant(vec(i64), [rr * n + cc for rr, cc in (coords[2](l, j) for l in range(LANES))])
            v = b.call(gather, [e.wf.vector_pointers(dbuf, idx, esz), all_lanes, ir.Constant(vt, None)])
            v = _wmma_result(e, v, dt, satfinite)
            if ebits < rbits:
                v = b.zext(v, vec(ir.IntType(rbits)))
                if p:
                    v = b.shl(v, e.splat(p * ebits, ir.IntType(rbits)))
            reg = v if reg is None else b.or_(reg, v)
        regs.append(reg)
    e.dst_elements(0, regs)


@rule("wmma.mma")
def wmma_mma(e) -> None:
    for m in (".xor", ".and", ".popc"):
        if m in e.mods:
            raise e.fail("single-bit (.b1) wmma.mma is not emulated")
    types = e.types
    if len(types) == 2:
        dt, at, bt, ct = types[0], ".f16", ".f16", types[1]
    elif len(types) == 4:
        dt, at, bt, ct = types
    else:
        raise e.fail("expects .dtype.ctype or .dtype.atype.btype.ctype")
    for t in (dt, at, bt, ct):
        _wmma_type(e, t)
    m, n, k = _wmma_shape(e)
    is_int = at in (".s8", ".u8")
    comp = ir.IntType(64) if is_int else (ir.DoubleType() if at == ".f64" else ir.FloatType())
    av, fa = _frag_values(e, 1, at, comp, m, k)
    bv, fb = _frag_values(e, 2, bt, comp, k, n)
    cv, fc = _frag_values(e, 3, ct, comp, m, n)
    _rb, _per, fd = _frag_elements(len(e.elements(0)), _WMMA_ELEM_BITS[dt], e, m, n)
    if fd != fc:
        raise e.fail("C and D fragments differ in size")
    layouts = [m_ == ".col" for m_ in e.mods if m_ in (".row", ".col")]
    if len(layouts) != 2:
        raise e.fail("needs the layouts of A and B (.row/.col twice)")
    coords = (
        lambda l, j: _frag_coords("a", m, k, layouts[0], fa, l, j),
        lambda l, j: _frag_coords("b", k, n, layouts[1], fb, l, j),
        lambda l, j: _frag_coords("c", m, n, False, fc, l, j),
    )
    _mma_core(e, (m, n, k), (at, bt, ct, dt), (av, bv, cv), coords, ".satfinite" in e.mods)


# ---------------------------------------------------------------------------
# mma.sync and ldmatrix: the fragment layouts the PTX ISA specifies
# ---------------------------------------------------------------------------

def _g(l: int) -> int:  # groupID
    return l >> 2


def _t(l: int) -> int:  # threadID_in_group
    return l & 3


#: (atype family, shape) -> (A, B, C/D) coordinates: (lane, element) -> (row, col)
_MMA_LAYOUTS = {
    ("f16", "m16n8k16"): (
        lambda l, i: (_g(l) + 8 * ((i >> 1) & 1), _t(l) * 2 + (i & 1) + 8 * (i >> 2)),
        lambda l, i: (_t(l) * 2 + (i & 1) + 8 * (i >> 1), _g(l)),
        lambda l, i: (_g(l) + 8 * (i >> 1), _t(l) * 2 + (i & 1)),
    ),
    ("f16", "m16n8k8"): (
        lambda l, i: (_g(l) + 8 * (i >> 1), _t(l) * 2 + (i & 1)),
        lambda l, i: (_t(l) * 2 + i, _g(l)),
        lambda l, i: (_g(l) + 8 * (i >> 1), _t(l) * 2 + (i & 1)),
    ),
    ("tf32", "m16n8k8"): (
        lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1)),
        lambda l, i: (_t(l) + 4 * i, _g(l)),
        lambda l, i: (_g(l) + 8 * (i >> 1), _t(l) * 2 + (i & 1)),
    ),
    ("tf32", "m16n8k4"): (
        lambda l, i: (_g(l) + 8 * i, _t(l)),
        lambda l, i: (_t(l), _g(l)),
        lambda l, i: (_g(l) + 8 * (i >> 1), _t(l) * 2 + (i & 1)),
    ),
    ("f64", "m8n8k4"): (
        lambda l, i: (_g(l), _t(l)),
        lambda l, i: (_t(l), _g(l)),
        lambda l, i: (_g(l), _t(l) * 2 + i),
    ),
}
_MMA_FAMILY = {".f16": "f16", ".bf16": "f16", ".tf32": "tf32", ".f64": "f64"}


@rule("mma")
def mma_sync(e) -> None:
    """``mma.sync.aligned.shape.row.col.dtype.atype.btype.ctype d, a, b, c`` for
    f16/bf16 (m16n8k16, m16n8k8), tf32 (m16n8k8, m16n8k4) and f64 (m8n8k4)."""
    if any(m in e.mods for m in (".sp", ".sp::ordered_metadata", ".block_scale", ".xor", ".and", ".popc")):
        raise e.fail("sparse, block-scaled and single-bit mma are not emulated")
    types = e.types
    if len(types) != 4:
        raise e.fail("expects .dtype.atype.btype.ctype")
    dt, at, bt, ct = types
    shape = next((m[1:] for m in e.mods if m.startswith(".m") and "n" in m and "k" in m), None)
    lay = _MMA_LAYOUTS.get((_MMA_FAMILY.get(at, ""), shape or ""))
    if lay is None or at != bt or dt not in (".f32", ".f16", ".f64") or ct not in (".f32", ".f16", ".f64"):
        raise e.fail(f"mma {shape} {''.join(types)} is not emulated (f16/bf16 m16n8k16 and m16n8k8, tf32 m16n8k8 and m16n8k4, f64 m8n8k4 are)")
    m, n, k = _wmma_shape(e)
    comp = ir.DoubleType() if at == ".f64" else ir.FloatType()
    frags = []
    for kk, t, (rows, cols) in ((1, at, (m, k)), (2, bt, (k, n)), (3, ct, (m, n))):
        ebits = _WMMA_ELEM_BITS[t]
        nregs = len(e.elements(kk))
        need = rows * cols // LANES
        _rb, per, F = _frag_elements(nregs, ebits)
        if F != need:
            raise e.fail(f"operand {kk + 1}: a {rows}x{cols} {t} fragment is {need // per} registers, not {nregs}")
        frags.append(_frag_values(e, kk, t, comp)[0])
    _rb, per, fd = _frag_elements(len(e.elements(0)), _WMMA_ELEM_BITS[dt])
    if fd != m * n // LANES:
        raise e.fail(f"the D fragment is {m * n // LANES // per} registers, not {len(e.elements(0))}")
    _mma_core(e, (m, n, k), (at, bt, ct, dt), tuple(frags), lay, False)


@rule("ldmatrix")
def ldmatrix(e, check_only: bool = False) -> None:
    """``ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 d, [a]``: lanes 8i..8i+7
    give the row addresses of matrix i; lane l receives row l/4, columns 2(l%4) and
    2(l%4)+1 of it (transposed: column l/4, rows 2(l%4) and 2(l%4)+1)."""
    b = e.b
    if ".m8n8" not in e.mods or ".b16" not in e.mods:
        raise e.fail("only .m8n8 .b16 is emulated")
    num = next((int(m[2:]) for m in e.mods if m in (".x1", ".x2", ".x4")), 1)
    if len(e.elements(0)) != num:
        raise e.fail(f"expects {num} destination registers")
    trans = ".trans" in e.mods
    kind, addr, _ = e.address(1)
    space = "shared" if any(m.startswith(".shared") for m in e.mods) or kind == "shared" else "generic"
    _rows_aligned(e, addr, num, space, "reg" if kind == "shared" else kind)
    undef = ir.Constant(addr.type, None)
    regs = []
    for i in range(num):
        if not trans:
            src = ir.Constant(vec(i32), [8 * i + (l >> 2) for l in range(LANES)])
            rows = b.shuffle_vector(addr, undef, src)
            a = b.add(rows, ir.Constant(vec(i64), [4 * (l & 3) for l in range(LANES)]))
            if check_only:  # slice mode's check_access: the bytes are checked (and initchecked), not read
                e.host_pointers(space, a, 4, e.exec_mask, "reg" if kind == "shared" else kind, initcheck.READ)
                continue
            regs.append(e.load(space, a, 32, e.exec_mask, "reg" if kind == "shared" else kind))
            continue
        reg = None
        for j in range(2):
            src = ir.Constant(vec(i32), [8 * i + 2 * (l & 3) + j for l in range(LANES)])
            rows = b.shuffle_vector(addr, undef, src)
            a = b.add(rows, ir.Constant(vec(i64), [2 * (l >> 2) for l in range(LANES)]))
            if check_only:
                e.host_pointers(space, a, 2, e.exec_mask, "reg" if kind == "shared" else kind, initcheck.READ)
                continue
            v = b.zext(e.load(space, a, 16, e.exec_mask, "reg" if kind == "shared" else kind), vec(i32))
            reg = v if j == 0 else b.or_(reg, b.shl(v, e.splat(16, i32)))
        regs.append(reg)
    if not check_only:
        e.dst_elements(0, regs)


def _rows_aligned(e, addr: ir.Value, num: int, space: str = "", kind: str = "") -> None:
    """Each row address (lanes 0 .. 8*num-1 give them) must be 16-byte aligned, and its 16
    bytes in bounds: checked here, in the lanes that give the rows, so that an error names
    the thread whose address is wrong (not the lanes that receive the row's parts)."""
    givers = e.b.and_(e.exec_mask, ir.Constant(ir.VectorType(ir.IntType(1), LANES),
                                               [int(l < 8 * num) for l in range(LANES)]))
    e.check_alignment(addr, 16, givers)
    if space:
        e.host_pointers(space, addr, 16, givers, kind, initcheck.UNTRACKED)


@rule("stmatrix")
def stmatrix(e, check_only: bool = False) -> None:
    """``stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 [a], r``, ldmatrix's inverse:
    lanes 8i..8i+7 give the row addresses of matrix i; lane l's register i holds row l/4,
    columns 2(l%4) and 2(l%4)+1 of it (transposed: column l/4, rows 2(l%4) and 2(l%4)+1).
    ``check_only``: the bytes are bounds-checked, not written (``check_access``)."""
    b = e.b
    if ".m8n8" not in e.mods or ".b16" not in e.mods:
        raise e.fail("only .m8n8 .b16 is emulated")
    num = next((int(m[2:]) for m in e.mods if m in (".x1", ".x2", ".x4")), 1)
    if len(e.elements(1)) != num:
        raise e.fail(f"expects {num} source registers")
    trans = ".trans" in e.mods
    kind, addr, _ = e.address(0)
    space = "shared" if any(m.startswith(".shared") for m in e.mods) or kind == "shared" else "generic"
    akind = "reg" if kind == "shared" else kind
    _rows_aligned(e, addr, num, space, akind)
    regs = [] if check_only else e.src_elements(1, 32)
    undef = ir.Constant(addr.type, None)
    for i in range(num):
        for j in range(1 if not trans else 2):
            if not trans:
                src = ir.Constant(vec(i32), [8 * i + (l >> 2) for l in range(LANES)])
                off = ir.Constant(vec(i64), [4 * (l & 3) for l in range(LANES)])
            else:
                src = ir.Constant(vec(i32), [8 * i + 2 * (l & 3) + j for l in range(LANES)])
                off = ir.Constant(vec(i64), [2 * (l >> 2) for l in range(LANES)])
            a = b.add(b.shuffle_vector(addr, undef, src), off)
            if check_only:  # the bytes count as written (initcheck), as full mode writes them
                e.host_pointers(space, a, 2 if trans else 4, e.exec_mask, akind, initcheck.WRITE)
            elif not trans:
                e.store(space, a, regs[i], e.exec_mask, akind)
            else:
                half = b.lshr(regs[i], e.splat(16 * j, i32)) if j else regs[i]
                e.store(space, a, b.trunc(half, vec(ir.IntType(16))), e.exec_mask, akind)


@rule("movmatrix")
def movmatrix(e) -> None:
    """``movmatrix.sync.aligned.m8n8.trans.b16 d, a``: the transpose of the 8x8 matrix whose
    row l/4, columns 2(l%4) and 2(l%4)+1 lane l holds (the ldmatrix fragment).  Lane l gets
    rows 2(l%4)+j of column l/4: element (r, c) is in lane 4r + c/2, half c%2."""
    b = e.b
    if ".trans" not in e.mods:
        raise e.fail("needs .trans")
    a = e.src(1, 32)
    undef = ir.Constant(a.type, None)
    out = None
    for j in range(2):
        src = ir.Constant(vec(i32), [8 * (l & 3) + 4 * j + (l >> 3) for l in range(LANES)])
        picked = b.shuffle_vector(a, undef, src)
        shift = ir.Constant(vec(i32), [16 * ((l >> 2) & 1) for l in range(LANES)])
        h = b.and_(b.lshr(picked, shift), e.splat(0xFFFF, i32))
        out = h if j == 0 else b.or_(out, b.shl(h, e.splat(16, i32)))
    e.dst(0, out)


def _wmma_result(e, v: ir.Value, dt: str, satfinite: bool) -> ir.Value:
    b = e.b
    if dt == ".s32":
        if satfinite:
            lo, hi = e.splat(-(1 << 31), i64), e.splat((1 << 31) - 1, i64)
            v = b.select(b.icmp_signed("<", v, lo), lo, b.select(b.icmp_signed(">", v, hi), hi, v))
        return b.trunc(v, vec(i32))
    if dt == ".f64":
        return b.bitcast(v, vec(i64))
    if satfinite:
        big = ir.Constant(vec(ir.FloatType()), 3.4028234663852886e38 if dt == ".f32" else 65504.0)
        neg = b.fneg(big)
        v = b.select(b.fcmp_ordered(">", v, big), big, b.select(b.fcmp_ordered("<", v, neg), neg, v))
    if dt == ".f16":
        return sf.f32_to_f16_bits(e, v, "rn")
    return b.bitcast(v, vec(i32))


# ---------------------------------------------------------------------------
# wgmma.mma_async: a warpgroup (4 consecutive warps of a CTA) multiplies a 64xK A by a KxN B.
# Warp w of the warpgroup (its warp index in the CTA mod 4) holds rows 16w..16w+15 of D and,
# from registers, of A; B is read from shared memory through its descriptor.  So each warp
# computes its own 16 rows when it issues the instruction, with no wait for the other three:
# the product is complete at issue (wgmma.fence, commit_group and wait_group only order).
# ---------------------------------------------------------------------------

def _wgmma_dc(l: int, i: int) -> tuple[int, int]:
    """(row, column) within the warp's 16 rows of element i of lane l's D fragment."""
    return _g(l) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * _t(l) + (i & 1)


#: atype -> (row, column) in the warp's 16 rows of element i of lane l's A fragment
_WGMMA_A_REGS = {
    ".f16": lambda l, i: (_g(l) + 8 * ((i >> 1) & 1), 2 * _t(l) + (i & 1) + 8 * (i >> 2)),
    ".bf16": lambda l, i: (_g(l) + 8 * ((i >> 1) & 1), 2 * _t(l) + (i & 1) + 8 * (i >> 2)),
    ".tf32": lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1)),
}


def _wgmma_imm(e, k: int, allowed: tuple[int, ...], what: str) -> int:
    node = e.operand_node(k)
    v = parse_int_immediate(node[1]) if node[0] == "imm" else None
    if v not in allowed:
        raise e.fail(f"{what} (operand {k + 1}) must be an immediate {' or '.join(map(str, allowed))}")
    return v


def _wgmma_desc_offsets(e, desc: ir.Value, mn: ir.Value, kk: ir.Value, esz: int, k_major: bool) -> ir.Value:
    """Shared-memory addresses (i64 lanes) of elements (mn, kk) of the matrix that the scalar
    64-bit descriptor ``desc`` describes, in the canonical layouts of the PTX ISA ("Shared
    Memory Matrix Layout"): core matrices of 8 rows of 16 bytes; K-major (``k_major``) or
    MN-major; no swizzle, or a swizzle atom of 8 rows of 32/64/128 bytes whose 16-byte
    chunks are exchanged by address bits 7.. (byte offset bits [4, 4+b) ^= bits [7, 7+b))."""
    b = e.b
    c = lambda v: ir.Constant(i64, v)
    start = b.shl(b.and_(desc, c(0x3FFF)), c(4))
    lbo = b.shl(b.and_(b.lshr(desc, c(16)), c(0x3FFF)), c(4))
    sbo = b.shl(b.and_(b.lshr(desc, c(32)), c(0x3FFF)), c(4))
    mode = b.lshr(desc, c(62))
    # width: 0 (no swizzle) or 32/64/128 for modes 3/2/1: 256 >> mode, 0 for mode 0
    width = b.select(b.icmp_unsigned("==", mode, c(0)), c(0), b.lshr(c(256), mode))
    splat = e.wf.splat_value
    t = 16 // esz  # elements per 16 bytes
    v = lambda x: e.splat(x, i64)
    if k_major:
        plain = b.add(b.add(b.mul(b.urem(mn, v(8)), v(16)), b.mul(b.udiv(mn, v(8)), splat(sbo))),
                      b.add(b.mul(b.urem(kk, v(t)), v(esz)), b.mul(b.udiv(kk, v(t)), splat(lbo))))
        w = splat(b.select(b.icmp_unsigned("==", width, c(0)), c(16), width))
        swz = b.add(b.add(b.mul(b.urem(mn, v(8)), w), b.mul(b.udiv(mn, v(8)), splat(sbo))), b.mul(kk, v(esz)))
    else:
        plain = b.add(b.add(b.mul(b.urem(mn, v(t)), v(esz)), b.mul(b.udiv(mn, v(t)), splat(sbo))),
                      b.add(b.mul(b.urem(kk, v(8)), v(16)), b.mul(b.udiv(kk, v(8)), splat(lbo))))
        wb = b.select(b.icmp_unsigned("==", width, c(0)), c(16), width)
        per_row = splat(b.udiv(wb, c(esz)))  # elements in a swizzle row
        swz = b.add(b.add(b.mul(b.urem(mn, per_row), v(esz)), b.mul(b.udiv(mn, per_row), splat(lbo))),
                    b.add(b.mul(b.urem(kk, v(8)), splat(wb)), b.mul(b.udiv(kk, v(8)), splat(sbo))))
    swizzled = b.icmp_unsigned("!=", width, c(0))
    addr = b.add(splat(start), b.select(splat(swizzled), swz, plain))
    # bits [7, 7+b) onto [4, 4+b), b = log2(width / 16): the mask is width / 16 - 1 (0 unswizzled)
    chunks = b.select(swizzled, b.sub(b.udiv(width, c(16)), c(1)), c(0))
    return b.xor(addr, b.shl(b.and_(b.lshr(addr, v(7)), splat(chunks)), v(4)))


def _wgmma_load_desc(e, desc: ir.Value, buf: ir.Value | None, row0: ir.Value, rows: int, kdim: int, at: str,
                     k_major: bool, neg: bool, load_mask: ir.Value, k_by_rows: bool) -> None:
    """Read rows ``row0``..``row0 + rows`` (MN indices; ``row0`` an i64 value) x ``kdim``
    elements of a descriptor's matrix into the f32 array ``buf``: element (row0 + r, kk) at
    ``r * kdim + kk``, or at ``kk * rows + r`` with ``k_by_rows`` (B as K x N).  32 elements a
    trip; each element's address is bounds-checked against the CTA's shared memory.  ``buf``
    None: checked only (slice mode)."""
    b = e.b
    esz = 4 if at == ".tf32" else 2
    chunk, close = _scalar_loop(b, rows * kdim // LANES, "wgmma_ld")
    lane = ir.Constant(vec(i64), list(range(LANES)))
    idx = b.add(e.wf.splat_value(b.mul(chunk, ir.Constant(i64, LANES))), lane)
    r = b.udiv(idx, e.splat(kdim, i64))
    kk = b.urem(idx, e.splat(kdim, i64))
    addr = _wgmma_desc_offsets(e, desc, b.add(r, e.wf.splat_value(row0)), kk, esz, k_major)
    intent = initcheck.UNTRACKED if buf is None else initcheck.READ
    ptrs = e.host_pointers("shared", addr, esz, load_mask, "reg", intent)
    if buf is not None:
        raw = _masked_gather(e, ptrs, esz * 8, load_mask)
        if at == ".tf32":  # the low 13 bits of a tf32 operand are ignored
            val = b.bitcast(b.and_(raw, e.splat(0xFFFFE000, i32)), vec(ir.FloatType()))
        else:
            val = sf.f16_to_f32(e, raw) if at == ".f16" else sf.bf16_to_f32(e, raw)
        if neg:
            val = b.fneg(val)
        pos = b.add(b.mul(kk, e.splat(rows, i64)), r) if k_by_rows else idx
        b.call(e.wf.scatter_function(vec(ir.FloatType())), [val, e.wf.vector_pointers(buf, pos, 4), load_mask])
    close()


@rule("wgmma.mma_async")
def wgmma_mma_async(e, check_only: bool = False) -> None:
    """``wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b-desc, scale-d,
    imm-scale-a, imm-scale-b[, imm-trans-a][, imm-trans-b]`` for f16/bf16 (K 16; f16 or f32
    D) and tf32 (K 8; f32 D), A from registers or a descriptor.  D = A * B (+ D when scale-d):
    f16/bf16 as the H100's tensor core rounds (``tensor_core``), tf32 with one rounding per
    multiply-add in k order, in f32.  ``check_only``: the descriptors'
    elements are bounds-checked, nothing is read or written (slice mode)."""
    b = e.b
    if ".sp" in e.mods:
        raise e.fail("sparse wgmma (.sp) is not emulated")
    types = e.types
    if len(types) != 3:
        raise e.fail("expects .dtype.atype.btype")
    dt, at, bt = types
    if at not in _WGMMA_A_REGS or at != bt or dt not in (".f32", ".f16") or (dt == ".f16" and at != ".f16"):
        raise e.fail(f"{''.join(types)} is not emulated (.f32/.f16 .f16.f16, .f32.bf16.bf16, .f32.tf32.tf32 are;"
                     " " + isa.unemulated_forms("wgmma.mma_async") + ")")
    m, n, k = _wmma_shape(e)
    esz = 4 if at == ".tf32" else 2
    if m != 64 or k != 32 // esz or n % 8 or not 8 <= n <= 256:
        raise e.fail(f"shape m{m}n{n}k{k} does not fit {at} (m64nNk{32 // esz}, N a multiple of 8 up to 256)")
    a_regs = e.operand_node(1)[0] == "vec"
    nops = 6 if at == ".tf32" else (7 if a_regs else 8)
    if len(e.args) != nops:
        raise e.fail(f"expects {nops} operands with {at} and A from {'registers' if a_regs else 'a descriptor'}")
    neg_a = _wgmma_imm(e, 4, (1, -1), "imm-scale-a") == -1
    neg_b = _wgmma_imm(e, 5, (1, -1), "imm-scale-b") == -1
    trans_a = not a_regs and at != ".tf32" and _wgmma_imm(e, 6, (0, 1), "imm-trans-a") == 1
    trans_b = at != ".tf32" and _wgmma_imm(e, nops - 1, (0, 1), "imm-trans-b") == 1
    per = 2 if dt == ".f16" else 1
    if len(e.elements(0)) != n // 2 // per:
        raise e.fail(f"D of m64n{n} {dt} is {n // 2 // per} registers, not {len(e.elements(0))}")
    if a_regs and len(e.elements(1)) != 4:
        raise e.fail(f"A from registers is 4 registers, not {len(e.elements(1))}")
    wf = e.wf
    bits = wf.mask_to_i32(e.exec_mask)
    lane0 = b.and_(lowest_lane(b, wf.module, bits), ir.Constant(i32, LANES - 1))
    # the executing lanes' operands are the warpgroup's (uniform): the lowest lane's are read
    load_mask = wf.splat_value(b.icmp_unsigned("!=", bits, ir.Constant(i32, 0)))
    desc_b = b.extract_element(e.src(2, 64), lane0)
    desc_a = None if a_regs else b.extract_element(e.src(1, 64), lane0)
    row0 = b.zext(b.mul(b.and_(wf.warp, ir.Constant(i32, 3)), ir.Constant(i32, 16)), i64)  # the warp's rows
    if check_only:
        if desc_a is not None:
            _wgmma_load_desc(e, desc_a, None, row0, 16, k, at, not trans_a, False, load_mask, False)
        _wgmma_load_desc(e, desc_b, None, ir.Constant(i64, 0), n, k, at, not trans_b, False, load_mask, True)
        return
    f32 = ir.FloatType()
    vt = vec(f32)
    all_lanes = ir.Constant(MASK, 1)
    scatter = wf.scatter_function(vt)
    abuf = e.entry_alloca(ir.ArrayType(f32, 16 * k))  # the warp's 16 rows of A, row-major
    bbuf = e.entry_alloca(ir.ArrayType(f32, k * n))   # B, K x N row-major
    dbuf = e.entry_alloca(ir.ArrayType(f32, 16 * n))  # the warp's 16 rows of C, then D
    if a_regs:
        vals, _f = _frag_values(e, 1, at, f32)
        for i, val in enumerate(vals):
            idx = ir.Constant(vec(i64), [r * k + c for r, c in (_WGMMA_A_REGS[at](l, i) for l in range(LANES))])
            b.call(scatter, [b.fneg(val) if neg_a else val, wf.vector_pointers(abuf, idx, 4), all_lanes])
    else:
        _wgmma_load_desc(e, desc_a, abuf, row0, 16, k, at, not trans_a, neg_a, load_mask, False)
    _wgmma_load_desc(e, desc_b, bbuf, ir.Constant(i64, 0), n, k, at, not trans_b, neg_b, load_mask, True)
    # C: the registers of D before the instruction
    olds = [e.fit(wf.read(v), 32, False) for v in e.inout_uses]
    for j, reg in enumerate(olds):
        for p in range(per):
            i = j * per + p
            if dt == ".f16":
                h = b.trunc(b.lshr(reg, e.splat(16 * p, i32)) if p else reg, vec(ir.IntType(16)))
                val = sf.f16_to_f32(e, h)
            else:
                val = b.bitcast(reg, vt)
            idx = ir.Constant(vec(i64), [r * n + c for r, c in (_wgmma_dc(l, i) for l in range(LANES))])
            b.call(scatter, [val, wf.vector_pointers(dbuf, idx, 4), all_lanes])
    scale_d = b.extract_element(e.src_pred(3), lane0)
    # D = A * B (+ C)
    cell, close_cell = _scalar_loop(b, 16 * n, "wgmma_cell")
    row = b.udiv(cell, ir.Constant(i64, n))
    col = b.urem(cell, ir.Constant(i64, n))
    dptr = b.gep(dbuf, [ir.Constant(i64, 0), cell])
    b.store(b.select(scale_d, b.load(dptr, typ=f32), ir.Constant(f32, 0.0)), dptr)
    if at in (".f16", ".bf16"):  # as the H100's tensor core rounds (``tensor_core``)
        arow = b.gep(abuf, [ir.Constant(i64, 0), b.mul(row, ir.Constant(i64, k))])
        bcol = b.gep(bbuf, [ir.Constant(i64, 0), col])
        b.store(tensor_core.dot(b, wf.module, at, k, n, arow, bcol, b.load(dptr, typ=f32)), dptr)
        close_cell()
        return _wgmma_store_d(e, dbuf, n, olds, per, dt, vt)
    kk, close_k = _scalar_loop(b, k, "wgmma_k")
    x = b.load(b.gep(abuf, [ir.Constant(i64, 0), b.add(b.mul(row, ir.Constant(i64, k)), kk)]), typ=f32)
    y = b.load(b.gep(bbuf, [ir.Constant(i64, 0), b.add(b.mul(kk, ir.Constant(i64, n)), col)]), typ=f32)
    fma = wf.intrinsic("llvm.fma.f32", f32, [f32, f32, f32])
    b.store(b.call(fma, [x, y, b.load(dptr, typ=f32)]), dptr)
    close_k()
    close_cell()
    _wgmma_store_d(e, dbuf, n, olds, per, dt, vt)


def _wgmma_store_d(e, dbuf, n: int, olds, per, dt, vt) -> None:
    """D (``dbuf``, the warp's 16 rows) back into the registers of operand 0."""
    b, wf = e.b, e.wf
    all_lanes = ir.Constant(MASK, 1)
    gather = wf.gather_function(vt)
    regs = []
    for j in range(len(olds)):
        reg = None
        for p in range(per):
            i = j * per + p
            idx = ir.Constant(vec(i64), [r * n + c for r, c in (_wgmma_dc(l, i) for l in range(LANES))])
            v = b.call(gather, [wf.vector_pointers(dbuf, idx, 4), all_lanes, ir.Constant(vt, None)])
            v = _wmma_result(e, v, dt, False)
            if per == 2:
                v = b.zext(v, vec(i32))
                v = b.shl(v, e.splat(16, i32)) if p else v
            reg = v if reg is None else b.or_(reg, v)
        regs.append(reg)
    e.dst_elements(0, regs)

