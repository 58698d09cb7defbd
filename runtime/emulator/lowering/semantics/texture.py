"""Texture and surface instructions: ``tex``, ``tld4``, ``txq``, ``suld``, ``sust``, ``sured``,
``suq``, ``istypep``.

Each hands its warp's operands to the texture callback (``abi.CTX_TEXTURE``,
``runtime/emulator/textures.py``): the instruction's text, the executing lanes, per lane the handle
(a register, or a ``.texref``/``.surfref`` variable read from memory) followed by the
coordinates and the other sources, 64 bits each; the callback writes up to four result words
per lane, or names a lane whose instruction faults (a handle that names no object, a
``.trap`` surface access out of range), which stops the launch (``abi.ERR_TEXTURE``).
Slice mode checks surface accesses outside the slice the same way (``check_surface``),
without reading or writing the surface.
"""

from __future__ import annotations

from llvmlite import ir

from .... import abi
from ..rules import rule
from ..types import i32, i64, ivec

#: words per lane the callback receives and returns
IN_WORDS = 16
OUT_WORDS = 4
_REGS = frozenset(["reg", "elem", "radd"])


def _vec_count(e, default: int = 1) -> int:
    return 4 if ".v4" in e.mods else 2 if ".v2" in e.mods else default


def _bracket(e, k: int):
    """(handle node, [coordinate nodes]) of the ``[a, {b, ...}]`` or ``[a]`` operand ``k``."""
    node = e.operand_node(k)
    if node[0] == "addr":
        return node[1], []
    if node[0] != "brk" or not node[1]:
        raise e.fail(f"operand {k + 1} must be [handle] or [handle, coordinates]")
    handle = node[1][0]
    coords = []
    for c in node[1][1:]:
        coords.extend(c[1] if c[0] == "vec" else [c])
    return handle, coords


def _values(e, k: int, nodes: list, first_reg: int, bits: int) -> tuple[list[ir.Value], int]:
    """``nodes`` of operand ``k`` as i64 lanes (``bits`` wide, zero-extended); registers
    are numbered from ``first_reg`` within the operand."""
    out = []
    ri = first_reg
    for n in nodes:
        if n[0] == "vec":
            vals, ri = _values(e, k, list(n[1]), ri, bits)
            out.extend(vals)
            continue
        v = e.value_of(n, k, bits, False, ri)
        if n[0] in _REGS:
            ri += 1
        out.append(e.b.zext(v, ivec(64)) if bits < 64 else v)
    return out, ri


def _handle(e, k: int, node) -> tuple[ir.Value, int]:
    """The handle lanes, and the register index after it."""
    if node[0] in _REGS:
        return e.value_of(node, k, 64, False, 0), 1
    if node[0] == "sym":
        kind = e.wf.symbol_kind(node[1])
        if kind in ("global", "param", "const"):
            addr = e.wf.symbol_address(node[1], node[2])
            return e.load(kind, addr, 64, e.exec_mask, kind), 0
        raise e.fail(f"{node[1]} is not a texture or surface (a .texref/.surfref variable or a register)")
    raise e.fail("the texture or surface must be a register or a .texref/.surfref variable")


def _call(e, words: list[ir.Value], ncoord: int, ndst: int, check: bool) -> ir.Value:
    """Call the texture callback; returns the pointer to the result words."""
    b = e.b
    wf = e.wf
    if len(words) > IN_WORDS:
        raise e.fail(f"has more than {IN_WORDS - 1} sources")
    in_t = ir.ArrayType(ivec(64), IN_WORDS)
    out_t = ir.ArrayType(ivec(64), OUT_WORDS)
    inp = e.entry_alloca(in_t)
    out = e.entry_alloca(out_t)
    slots = b.bitcast(inp, ivec(64).as_pointer())
    for j, w in enumerate(words):
        b.store(w, b.gep(slots, [ir.Constant(i32, j)]))
    text = f"{e.op.opcode}|{ncoord}|{len(words) - 1 - ncoord}|{ndst}|{int(check)}".encode() + b"\0"
    ty = ir.ArrayType(ir.IntType(8), len(text))
    g = ir.GlobalVariable(wf.module, ty, wf.module.get_unique_name("hypa_texture_instr"))
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, bytearray(text))
    fnp = wf.ctx_word(abi.CTX_TEXTURE)
    fty = ir.FunctionType(i64, [i64] * 5)
    lanes = b.zext(wf.mask_to_i32(e.exec_mask), i64)
    has_lanes = b.icmp_unsigned("!=", lanes, ir.Constant(i64, 0))
    rslot = e.entry_alloca(i64)
    b.store(ir.Constant(i64, 0), rslot)
    with b.if_then(has_lanes):
        r = b.call(b.inttoptr(fnp, fty.as_pointer()),
                   [b.ptrtoint(wf.ctx, i64), b.ptrtoint(g, i64), lanes, b.ptrtoint(inp, i64), b.ptrtoint(out, i64)])
        b.store(r, rslot)
    r = b.load(rslot, typ=i64)
    lane = b.trunc(b.sub(r, ir.Constant(i64, 1)), i32)
    bad = b.and_(b.icmp_unsigned("==", wf.lane_ids, wf.splat_value(lane)),
                 wf.splat_value(b.icmp_unsigned("!=", r, ir.Constant(i64, 0))))
    wf.error_if(e.instr_id, bad, abi.ERR_TEXTURE, None)
    return out


def _results(e, out: ir.Value, n: int, bits: int) -> list[ir.Value]:
    b = e.b
    slots = b.bitcast(out, ivec(64).as_pointer())
    vals = [b.load(b.gep(slots, [ir.Constant(i32, j)]), typ=ivec(64)) for j in range(n)]
    return [b.trunc(v, ivec(bits)) if bits < 64 else v for v in vals]


@rule("tex", "tld4")
def tex(e) -> None:
    """A texture fetch: four 32-bit results (``.v4``) from the sampler."""
    if e.operand_node(0)[0] == "pair":
        raise e.fail("the d|p form (sparse textures) is not emulated")
    handle_node, coords = _bracket(e, 1)
    handle, ri = _handle(e, 1, handle_node)
    cvals, _ = _values(e, 1, coords, ri, 32)
    lod_operands = 1 if ".level" in e.mods else 2 if ".grad" in e.mods else 0
    if len(e.args) > 2 + lod_operands:
        raise e.fail("texel offsets and depth comparison are not emulated")
    extras: list[ir.Value] = []
    for k in range(2, len(e.args)):
        vals, _ = _values(e, k, [e.operand_node(k)], 0, 32)
        extras.extend(vals)
    n = 4 if e.spec.name == "tld4" else _vec_count(e, 4)
    out = _call(e, [handle, *cvals, *extras], len(cvals), n, False)
    e.dst_elements(0, _results(e, out, n, 32))


@rule("txq", "suq")
def query(e) -> None:
    handle_node, _ = _bracket(e, 1)
    handle, _ri = _handle(e, 1, handle_node)
    extras: list[ir.Value] = []
    for k in range(2, len(e.args)):
        vals, _ = _values(e, k, [e.operand_node(k)], 0, 32)
        extras.extend(vals)
    out = _call(e, [handle, *extras], 0, 1, False)
    e.dst(0, _results(e, out, 1, 32)[0])


@rule("istypep")
def istypep(e) -> None:
    h = e.src(1, 64)
    out = _call(e, [h], 0, 1, False)
    e.dst(0, _results(e, out, 1, 1)[0])


def _surface_bits(e) -> int:
    for t in reversed(e.types):
        if t in (".b8", ".b16", ".b32", ".b64", ".u32", ".s32", ".u64", ".s64"):
            return int(t[2:])
    return 32


@rule("suld")
def suld(e) -> None:
    handle_node, coords = _bracket(e, 1)
    handle, ri = _handle(e, 1, handle_node)
    cvals, _ = _values(e, 1, coords, ri, 32)
    n = _vec_count(e)
    bits = _surface_bits(e)
    out = _call(e, [handle, *cvals], len(cvals), n, False)
    e.dst_elements(0, _results(e, out, n, bits))


def _store_words(e, check: bool) -> list[ir.Value]:
    handle_node, coords = _bracket(e, 0)
    handle, ri = _handle(e, 0, handle_node)
    cvals, _ = _values(e, 0, coords, ri, 32)
    words = [handle, *cvals]
    if not check:
        bits = _surface_bits(e)
        srcs = e.src_elements(1, bits)
        words.extend(e.b.zext(v, ivec(64)) if bits < 64 else v for v in srcs)
    return words, len(cvals)


@rule("sust", "sured")
def sust(e) -> None:
    words, ncoord = _store_words(e, False)
    _call(e, words, ncoord, 0, False)


def check_surface(e) -> None:
    """Slice mode: a surface access outside the slice faults as in full mode (a ``.trap``
    access out of range, a bad handle); nothing is read or written."""
    if ".clamp" in e.mods or ".zero" in e.mods:
        return  # never faults on coordinates
    if e.spec.name == "suld":
        handle_node, coords = _bracket(e, 1)
        handle, ri = _handle(e, 1, handle_node)
        cvals, _ = _values(e, 1, coords, ri, 32)
        words, ncoord = [handle, *cvals], len(cvals)
    else:
        words, ncoord = _store_words(e, True)
    _call(e, words, ncoord, 0, True)
