"""Video instructions: the scalar ``vadd vsub vabsdiff vmin vmax vshl vshr vmad vset`` and the
SIMD ``vadd2 ... vset2``, ``vadd4 ... vset4`` (PTX ISA "Video Instructions").

Each follows the ISA's pseudo-code: operands are selected (``%r1.b0``, ``%r2.h10``; the SIMD
forms' defaults where none is written) and sign- or zero-extended by ``.atype``/``.btype``,
the operation runs on the extended values (held here in 64 or 128 bits, so nothing wraps
before the ISA says so), then saturation, the secondary operation and the merge, and the low
32 bits are written.  Where the ISA's text leaves a choice the pseudo-code decides:

* the scalar intermediate result is ``.s34`` (``optSaturate( .s34 tmp, ..)``): a ``vshl`` that
  shifts bits past bit 33 loses them before saturation;
* ``.sat`` with a secondary operation saturates before it (``optSaturate`` then ``optSecOp``);
  the secondary operation's result is not saturated;
* ``vset2``/``vset4`` merge unselected elements from ``c`` (the pseudo-code's ``Vc``; the
  prose says ``b``), and an accumulate (``.add``) adds each selected element's full
  (sign-extended) result to ``c``.

Which selectors and negations an instruction takes is ``isa.VIDEO_FORMS``'s (checked by the
front end); the rules read them from the operand nodes with ``isa.video_selector``.
"""

from __future__ import annotations

from llvmlite import ir

from hypa.ptxdialect import isa

from ..rules import rule
from ..types import ivec

_SCALAR = "vadd vsub vabsdiff vmin vmax vshl vshr vset".split()
_SIMD2 = "vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2".split()
_SIMD4 = "vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4".split()
_CMP = {".eq": "==", ".ne": "!=", ".lt": "<", ".le": "<=", ".gt": ">", ".ge": ">="}


def _types(e) -> tuple[bool, bool, bool]:
    """(dtype, atype, btype signed); vset's unsigned result stands for its dtype."""
    t = e.types
    if e.spec.name.startswith("vset"):
        return False, t[0] == ".s32", t[1] == ".s32"
    return t[0] == ".s32", t[1] == ".s32", t[2] == ".s32"


def _word(e, k: int, default: str = "") -> tuple[ir.Value, str, bool]:
    """Operand ``k`` as ``<32 x i32>``, its selector and whether it is negated."""
    base, sel, neg = isa.video_selector(e.operand_node(k), default)
    return e.value_of(base, k, 32, False, 0), sel, neg


def _part(e, x: ir.Value, sel: str, signed: bool, bits: int) -> ir.Value:
    """partSelectSignExtend: the byte (``.b0``..``.b3``), half-word (``.h0``, ``.h1``) or
    word ``sel`` of ``x`` (``<32 x i32>``), sign- or zero-extended to ``bits``."""
    b = e.b
    if sel:
        width = 8 if sel[1] == "b" else 16
        shift = int(sel[2]) * width
        if shift:
            x = b.lshr(x, e.splat(shift, ir.IntType(32)))
        x = b.trunc(x, ivec(width))
    return b.sext(x, ivec(bits)) if signed else b.zext(x, ivec(bits))


def _clamp(e, v: ir.Value, lo: int, hi: int) -> ir.Value:
    b = e.b
    t = v.type.element  # type: ignore[attr-defined]
    v = b.select(b.icmp_signed(">", v, e.splat(hi, t)), e.splat(hi, t), v)
    return b.select(b.icmp_signed("<", v, e.splat(lo, t)), e.splat(lo, t), v)


def _range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _minmax(e, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
    take_x = e.b.icmp_signed("<" if op == "min" else ">", x, y)
    return e.b.select(take_x, x, y)


def _primary(e, name: str, ta: ir.Value, tb: ir.Value) -> ir.Value:
    """The primary operation on extended values (signed comparisons: they are exact)."""
    b = e.b
    if name.startswith("vadd"):
        return b.add(ta, tb)
    if name.startswith("vsub"):
        return b.sub(ta, tb)
    if name.startswith("vabsdiff"):
        d = b.sub(ta, tb)
        return b.select(b.icmp_signed("<", d, e.zeros(d.type.element.width)), b.neg(d), d)  # type: ignore[attr-defined]
    if name.startswith("vmin"):
        return _minmax(e, "min", ta, tb)
    if name.startswith("vmax"):
        return _minmax(e, "max", ta, tb)
    if name.startswith("vavrg"):  # rounds half away from zero: (s + 1) >> 1 for s >= 0
        s = b.add(ta, tb)
        t = s.type.element  # type: ignore[attr-defined]
        up = b.ashr(b.add(s, e.splat(1, t)), e.splat(1, t))
        return b.select(b.icmp_signed(">=", s, e.splat(0, t)), up, b.ashr(s, e.splat(1, t)))
    if name.startswith("vset"):
        cmp = next(m for m in e.mods if m in _CMP)
        return b.zext(b.icmp_signed(_CMP[cmp], ta, tb), ta.type)
    raise e.fail("no video operation")


@rule(*_SCALAR)
def scalar_video(e) -> None:
    """vadd vsub vabsdiff vmin vmax vshl vshr vset: select and extend, operate (.s34),
    optSaturate, then optSecOp or optMerge with c."""
    b = e.b
    name = e.spec.name
    d_signed, a_signed, b_signed = _types(e)
    a, asel, _ = _word(e, 1)
    bw, bsel, _ = _word(e, 2)
    ta = _part(e, a, asel, a_signed, 64)
    if name in ("vshl", "vshr"):
        tb = _part(e, bw, bsel, False, 64)
        if ".clamp" in e.mods:
            tb = b.select(b.icmp_unsigned(">", tb, e.splat(32, ir.IntType(64))), e.splat(32, ir.IntType(64)), tb)
        else:
            tb = b.and_(tb, e.splat(0x1F, ir.IntType(64)))
        if name == "vshl":
            tmp = b.shl(ta, tb)  # tb <= 32 and ta < 2**33: fits in 64 bits
            tmp = b.ashr(b.shl(tmp, e.splat(30, ir.IntType(64))), e.splat(30, ir.IntType(64)))  # .s34
        else:
            tmp = b.ashr(ta, tb)  # ta is extended: arithmetic shift is the signed one, logical the unsigned
    else:
        tb = _part(e, bw, bsel, b_signed, 64)
        tmp = _primary(e, name, ta, tb)
    _dst_base, dsel, _ = isa.video_selector(e.operand_node(0))
    if ".sat" in e.mods:
        bits = 32 if not dsel else 8 if dsel[1] == "b" else 16
        tmp = _clamp(e, tmp, *_range(bits, d_signed))
    secop = next((m for m in e.mods if m in isa.VIDEO_SECONDARY_OPS), None)
    if secop is not None:
        c = _part(e, e.src(3, 32), "", d_signed, 64)
        if secop == ".add":
            tmp = b.add(tmp, c)
        else:
            tmp = _minmax(e, secop[1:], tmp, c)
    result = b.trunc(tmp, ivec(32))
    if dsel:
        width = 8 if dsel[1] == "b" else 16
        shift = int(dsel[2]) * width
        field = ((1 << width) - 1) << shift
        t32 = ir.IntType(32)
        part = b.and_(b.shl(result, e.splat(shift, t32)) if shift else result, e.splat(field, t32))
        result = b.or_(part, b.and_(e.src(3, 32), e.splat(~field & 0xFFFFFFFF, t32)))
    e.dst(0, result)


@rule("vmad")
def vmad(e) -> None:
    """(a * b) + c with operand negation, .po, .shr7/.shr15 and .sat, in 128 bits as the
    ISA's pseudo-code computes it."""
    b = e.b
    _d, a_signed, b_signed = _types(e)
    t128 = ir.IntType(128)
    a, asel, a_neg = _word(e, 1)
    bw, bsel, b_neg = _word(e, 2)
    c, _csel, c_neg = _word(e, 3)
    signed_final = a_signed or b_signed or (a_neg != b_neg) or c_neg
    tmp = b.mul(_part(e, a, asel, a_signed, 128), _part(e, bw, bsel, b_signed, 128))
    lsb = 0
    if ".po" in e.mods:
        lsb = 1
    elif a_neg != b_neg:
        tmp, lsb = b.not_(tmp), 1
    elif c_neg:
        c, lsb = b.not_(c), 1
    c128 = b.sext(c, ivec(128)) if signed_final else b.zext(c, ivec(128))
    tmp = b.add(b.add(tmp, c128), e.splat(lsb, t128))
    for scale, shift in ((".shr7", 7), (".shr15", 15)):
        if scale in e.mods:
            sh = e.splat(shift, t128)
            tmp = b.ashr(tmp, sh) if signed_final else b.lshr(tmp, sh)
    if ".sat" in e.mods:
        tmp = _clamp(e, tmp, *_range(32, signed_final))
    e.dst(0, b.trunc(tmp, ivec(32)))


def _lanes(e, n: int, sel: str, signed: bool, words: tuple[ir.Value, ir.Value]) -> list[ir.Value]:
    """extractAndSignExt_2/_4: the ``n`` elements ``sel`` picks from the 64 bits ``{b, a}``
    (``.h10``: element 1 is half-word 1, element 0 half-word 0; half-words 2, 3 and bytes
    4..7 are b's), each sign- or zero-extended to 32 bits."""
    b = e.b
    width = 32 // n
    digits = sel[2:]
    out = []
    for i in range(n):
        src = int(digits[n - 1 - i])
        word = words[src * width // 32]
        shift = (src * width) % 32
        part = b.lshr(word, e.splat(shift, ir.IntType(32))) if shift else word
        part = b.trunc(part, ivec(width))
        out.append(b.sext(part, ivec(32)) if signed else b.zext(part, ivec(32)))
    return out


def _simd(e, n: int) -> None:
    """The 2- and 4-way SIMD forms: per element operate, saturate to the element's range,
    then accumulate the selected elements into c (.add) or merge them with c's."""
    b = e.b
    name = e.spec.name
    form = isa.VIDEO_FORMS[e.spec.video]
    d_signed, a_signed, b_signed = _types(e)
    a, asel, _ = _word(e, 1, form.a_default)
    bw, bsel, _ = _word(e, 2, form.b_default)
    c = e.src(3, 32)
    _base, mask, _ = isa.video_selector(e.operand_node(0), form.d_default)
    va = _lanes(e, n, asel, a_signed, (a, bw))
    vb = _lanes(e, n, bsel, b_signed, (a, bw))
    width = 32 // n
    t32 = ir.IntType(32)
    picked = {int(ch) for ch in mask[2:]}
    out = c if ".add" in e.mods else e.zeros(32)
    for i in range(n):
        t = _primary(e, name, va[i], vb[i])
        if ".sat" in e.mods:
            t = _clamp(e, t, *_range(width, d_signed))
        if ".add" in e.mods:
            if i in picked:
                out = b.add(out, t)
            continue
        field = ((1 << width) - 1) << (i * width)
        if i in picked:
            part = b.shl(t, e.splat(i * width, t32)) if i else t
        else:
            part = c
        out = b.or_(out, b.and_(part, e.splat(field, t32)))
    e.dst(0, out)


@rule(*_SIMD2)
def simd2_video(e) -> None:
    _simd(e, 2)


@rule(*_SIMD4)
def simd4_video(e) -> None:
    _simd(e, 4)

