"""Video instructions: the scalar ``vadd vsub vabsdiff vmin vmax vshl vshr vmad vset`` and the
SIMD ``vadd2 ... vset2``, ``vadd4 ... vset4`` (PTX ISA "Video Instructions").

The SIMD forms follow the ISA's pseudo-code: operands are selected (``%r1.b0``, ``%r2.h10``;
the defaults where none is written) and sign- or zero-extended by ``.atype``/``.btype``, the
operation runs on the extended values, then saturation to the element's range and the
accumulate or merge.  ``vset2``/``vset4`` merge unselected elements from ``c`` (the
pseudo-code's ``Vc``; the prose says ``b``), and an accumulate (``.add``) adds each selected
element's full (sign-extended) result to ``c``.

The scalar forms and ``vmad`` do what ptxas's sm_90 expansion into integer SASS does (there is
no video unit on sm_70+): read from ``ptxas -arch=sm_90`` + ``cuobjdump -sass`` and checked bit
for bit against all 229 scalar probe variants recorded on an H100
(tests/ground_truth/h100/video).  It departs from the ISA's pseudo-code in the saturation of
byte/half-word destinations, the unsigned full-word ``.sat``, the width of the value the
secondary min/max sees, ``d.h1`` and vmad's signed multiply: the rules' docstrings say how.

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


def _sext32(e, v: ir.Value) -> ir.Value:
    """The low 32 bits of ``v`` (``<32 x i64>``) sign-extended back to 64."""
    return e.b.sext(e.b.trunc(v, ivec(32)), ivec(64))


@rule(*_SCALAR)
def scalar_video(e) -> None:
    """vadd vsub vabsdiff vmin vmax vshl vshr vset as ptxas expands them for sm_90 (its SASS,
    checked bit for bit against the H100's records; the ISA's pseudo-code differs where noted):

    * the operation runs on 64-bit extended operands; ``vshl`` drops bits past bit 33
      (``.s34``) only when it saturates;
    * ``.sat`` into a byte or half-word selector clamps only from above, comparing the value as
      unsigned: a negative or >= 2**32 intermediate gives the field's maximum (127, 255, 32767,
      65535), never its minimum; vshl/vshr saturate to the 32-bit destination type whatever the
      selector;
    * ``.sat`` into a full .u32: vadd/vsub give 0 for a negative value and the low 32 bits
      otherwise (no upper clamp); vabsdiff/vmin/vmax likewise (their intermediate never
      exceeds 32 bits); .s32 clamps;
    * the secondary min/max compare 64-bit values, signed for an .s32 destination (vset: an .s32
      ``a``) with c sign-extended, unsigned otherwise with c zero-extended; what they compare is
      the 32-bit result sign-extended for vadd/vsub and after a full-width vshl/vshr .sat or an
      .s32 .sat, the exact (64-bit) intermediate otherwise (after an unsigned .sat of
      vabsdiff/vmin/vmax: the intermediate with negatives raised to 0);
    * ``d.h1`` receives bits 31..16 of the 32-bit result (not bits 15..0): after a half-word
      .sat those are 0, after vshl/vshr's .sat the saturated value's high half.
    """
    b = e.b
    name = e.spec.name
    d_signed, a_signed, b_signed = _types(e)
    a, asel, _ = _word(e, 1)
    bw, bsel, _ = _word(e, 2)
    t64 = ir.IntType(64)
    ta = _part(e, a, asel, a_signed, 64)
    sat = ".sat" in e.mods
    shift = name in ("vshl", "vshr")
    if shift:
        tb = _part(e, bw, bsel, False, 64)
        if ".clamp" in e.mods:
            tb = b.select(b.icmp_unsigned(">", tb, e.splat(32, t64)), e.splat(32, t64), tb)
        else:
            tb = b.and_(tb, e.splat(0x1F, t64))
        if name == "vshl":
            tmp = b.shl(ta, tb)  # tb <= 32: ta's 33 significant bits fit in 64
            if sat:
                tmp = b.ashr(b.shl(tmp, e.splat(30, t64)), e.splat(30, t64))  # .s34
        else:
            tmp = b.ashr(ta, tb)  # ta is extended: arithmetic shift is the signed one, logical the unsigned
    else:
        tb = _part(e, bw, bsel, b_signed, 64)
        tmp = _primary(e, name, ta, tb)
    _dst_base, dsel, _ = isa.video_selector(e.operand_node(0))
    zero, u32max = e.zeros(64), e.splat(0xFFFFFFFF, t64)
    if sat and dsel and not shift:
        width = 8 if dsel[1] == "b" else 16
        limit = e.splat((1 << (width - 1)) - 1 if d_signed else (1 << width) - 1, t64)
        outside = b.or_(b.icmp_signed("<", tmp, zero), b.icmp_signed(">", tmp, u32max))
        tmp = b.select(outside, limit, tmp)
        result = b.select(b.icmp_signed(">", tmp, limit), limit, tmp)
        cmp_value = result
    elif sat and (shift or d_signed):
        result = _clamp(e, tmp, *_range(32, d_signed))
        cmp_value = _sext32(e, result)
    elif sat and name in ("vabsdiff", "vmin", "vmax"):
        result = cmp_value = b.select(b.icmp_signed("<", tmp, zero), zero, tmp)
    elif sat:
        result = b.select(b.icmp_signed("<", tmp, zero), zero, tmp)
        cmp_value = _sext32(e, result)
    else:
        result = tmp
        cmp_value = _sext32(e, tmp) if name in ("vadd", "vsub") else tmp
    secop = next((m for m in e.mods if m in isa.VIDEO_SECONDARY_OPS), None)
    if secop is not None:
        c_signed = a_signed if name == "vset" else d_signed
        c = _part(e, e.src(3, 32), "", c_signed, 64)
        if secop == ".add":
            result = b.add(cmp_value, c)
        else:
            op = "<" if secop == ".min" else ">"
            take = b.icmp_signed(op, cmp_value, c) if c_signed else b.icmp_unsigned(op, cmp_value, c)
            result = b.select(take, cmp_value, c)
    result = b.trunc(result, ivec(32))
    if dsel:
        width = 8 if dsel[1] == "b" else 16
        shift_by = int(dsel[2]) * width
        field = ((1 << width) - 1) << shift_by
        t32 = ir.IntType(32)
        if dsel == ".h1":  # bits 31..16 of the result, in place
            part = b.and_(result, e.splat(field, t32))
        else:
            part = b.and_(b.shl(result, e.splat(shift_by, t32)) if shift_by else result, e.splat(field, t32))
        result = b.or_(part, b.and_(e.src(3, 32), e.splat(~field & 0xFFFFFFFF, t32)))
    e.dst(0, result)


@rule("vmad")
def vmad(e) -> None:
    """(a * b) + c as ptxas expands it for sm_90 (its SASS, checked against the H100): a and b
    are selected and extended to 32 bits, then multiplied as signed 32-bit values (a full .u32
    word >= 2**31 counts as negative) into 64 bits; c is sign-extended; the negations, .po,
    .shr7/.shr15 (arithmetic when the result is signed, logical otherwise) and .sat (the 64-bit
    value read as signed, clamped to the .s32 or .u32 range) follow the ISA's pseudo-code."""
    b = e.b
    _d, a_signed, b_signed = _types(e)
    t64 = ir.IntType(64)
    a, asel, a_neg = _word(e, 1)
    bw, bsel, b_neg = _word(e, 2)
    c, _csel, c_neg = _word(e, 3)
    signed_final = a_signed or b_signed or (a_neg != b_neg) or c_neg
    wide_a = b.sext(_part(e, a, asel, a_signed, 32), ivec(64))
    wide_b = b.sext(_part(e, bw, bsel, b_signed, 32), ivec(64))
    tmp = b.mul(wide_a, wide_b)
    lsb = 0
    if ".po" in e.mods:
        lsb = 1
    elif a_neg != b_neg:
        tmp, lsb = b.not_(tmp), 1
    elif c_neg:
        c, lsb = b.not_(c), 1
    tmp = b.add(b.add(tmp, b.sext(c, ivec(64))), e.splat(lsb, t64))
    for scale, shift in ((".shr7", 7), (".shr15", 15)):
        if scale in e.mods:
            sh = e.splat(shift, t64)
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

