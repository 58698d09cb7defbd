"""The PTX instruction set, described once, as data.

Every layer reads this table: the parser resolves opcodes and validates
modifiers against it, the dialect generates one xDSL operation per entry, the
printer and the SSA conversion take operand roles (which operands a statement
writes) from it, counting takes categories and FLOP weights from it, and the
lowering looks up semantics by the entry's name.

An entry names an instruction as the PTX ISA writes it before its modifiers
(``add``, ``cp.async.bulk.tensor``, ``mbarrier.try_wait``).  A statement's
opcode token is resolved to the longest entry that is a dot-separated prefix of
it; the remaining dot-separated parts are its modifiers and must each be in the
entry's modifier set (or match one of its patterns).  A modifier token never
contains a dot: ``min.xorsign.abs.f32`` has the modifiers ``.xorsign``,
``.abs`` and ``.f32``.

Two instructions glue a ``::`` qualifier straight onto their last name part
(``tcgen05.fence::before_thread_sync``, ``tcgen05.wait::ld``): there the entry
is ``tcgen05.fence`` / ``tcgen05.wait`` and the first modifier is the
``::``-suffix itself (``"::before_thread_sync"``).

The table covers PTX ISA 9.0 as ``ptxas`` of CUDA 13.0 accepts it (the
``tests/filecheck/Dialect/ptx/isa_*.ptx`` files assemble one statement of every
entry), plus the instructions and qualifiers that PTX ISA 9.1 and 9.2 add
(``multimem.cp.async.bulk``, ``add.sat.u16x2``, ``.u8x4`` ...) and 9.3
(``clmad``, ``multimem.st.async``/``red.async``, ``mbarrier.check_layout``,
the ``fabric.*`` family, ``.phase_type``/``.layout`` qualifiers).  Entries
newer than 9.0 carry ``since`` and are read and printed without assembling
them here.  Not covered: PTX 9.4's ``spcompress``/``spdecompress`` and
``applypriority.async.bulk*`` and the mbarrier report-operand forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

# ---------------------------------------------------------------------------
# Fundamental types
# ---------------------------------------------------------------------------

INT_TYPES = frozenset(
    ".b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .u16x2 .s16x2".split()
)
FP16_TYPES = frozenset(".f16 .f16x2 .bf16 .bf16x2".split())
FP32_TYPES = frozenset(".f32 .f32x2 .tf32".split())
FP64_TYPES = frozenset([".f64"])
FP8_TYPES = frozenset(
    ".e4m3 .e5m2 .e2m3 .e3m2 .e2m1 .e4m3x2 .e5m2x2 .e2m3x2 .e3m2x2 .e2m1x2 "
    ".e4m3x4 .e5m2x4 .e2m3x4 .e3m2x4 .e2m1x4 .ue8m0 .ue8m0x2 .ue4m3 .s2f6x2".split()
)
FLOAT_TYPES = FP16_TYPES | FP32_TYPES | FP64_TYPES | FP8_TYPES
#: types a register, variable or parameter can be declared with
ALL_TYPES = INT_TYPES | FLOAT_TYPES | frozenset([".pred"])
#: types that only appear as instruction type modifiers (sub-byte MMA operands,
#: packed 8-bit SIMD, the opaque 1024-bit tensor-map object)
INSTR_ONLY_TYPES = frozenset(".b1 .u2 .s2 .u4 .s4 .u8x4 .s8x4 .b1024".split())
PACKED_TYPES = frozenset(".f16x2 .bf16x2 .f32x2".split())

#: bit width of each register/value type (packed types by their whole width)
TYPE_BITS = {
    ".pred": 1, ".b8": 8, ".u8": 8, ".s8": 8, ".b16": 16, ".u16": 16, ".s16": 16,
    ".f16": 16, ".bf16": 16, ".b32": 32, ".u32": 32, ".s32": 32, ".f32": 32,
    ".f16x2": 32, ".bf16x2": 32, ".u16x2": 32, ".s16x2": 32, ".tf32": 32,
    ".b64": 64, ".u64": 64, ".s64": 64, ".f64": 64, ".f32x2": 64, ".b128": 128,
    ".e4m3": 8, ".e5m2": 8, ".e2m3": 8, ".e3m2": 8, ".e2m1": 8, ".ue8m0": 8,
    ".ue4m3": 8, ".e4m3x2": 16, ".e5m2x2": 16, ".e2m3x2": 16, ".e3m2x2": 16,
    ".e2m1x2": 8, ".ue8m0x2": 16, ".e4m3x4": 32, ".e5m2x4": 32, ".e2m3x4": 32,
    ".e3m2x4": 32, ".e2m1x4": 16, ".s2f6x2": 16,
    ".b1": 1, ".u2": 2, ".s2": 2, ".u4": 4, ".s4": 4, ".u8x4": 32, ".s8x4": 32,
    ".b1024": 1024,
}

#: vector register types (``.reg .v2 .u32 v`` has the type ``.v2.u32``): a register of
#: 2 or 4 elements of a non-predicate type, at most 128 bits (as ``ptxas`` allows)
VECTOR_REG_TYPES: dict[str, tuple[int, str]] = {
    f".v{n}{t}": (n, t)
    for n in (2, 4)
    for t in sorted(ALL_TYPES - {".pred"})
    if n * TYPE_BITS[t] <= 128
}
TYPE_BITS.update({vt: n * TYPE_BITS[t] for vt, (n, t) in VECTOR_REG_TYPES.items()})


#: element suffixes of a vector register (``v.x``) and the element each selects
ELEMENT_FIELDS = {".x": 0, ".y": 1, ".z": 2, ".w": 3, ".r": 0, ".g": 1, ".b": 2, ".a": 3}


def vector_reg_type(qualifiers, ptx_type: str) -> str:
    """The register type of a declaration: ``.u32``, or ``.v2.u32`` with a vector qualifier."""
    vec = [q for q in qualifiers if q in (".v2", ".v4", ".v8")]
    return vec[-1] + ptx_type if vec else ptx_type


STATE_SPACES = (".global", ".shared", ".local", ".param", ".const")

# ---------------------------------------------------------------------------
# Special registers (read-only sources)
# ---------------------------------------------------------------------------

_SREG_VECTOR = "tid ntid ctaid nctaid cluster_ctaid cluster_nctaid clusterid nclusterid".split()
_SREG_SCALAR = (
    "laneid warpid nwarpid smid nsmid gridid lanemask_eq lanemask_le lanemask_lt "
    "lanemask_ge lanemask_gt clock clock_hi clock64 globaltimer globaltimer_lo "
    "globaltimer_hi total_smem_size aggr_smem_size dynamic_smem_size "
    "reserved_smem_offset_begin reserved_smem_offset_end reserved_smem_offset_cap "
    "reserved_smem_offset_0 reserved_smem_offset_1 cluster_ctarank cluster_nctarank "
    "is_explicit_cluster current_graph_exec perctamemoryoffset perctamemorysize"
).split()

SPECIAL_REGISTERS: frozenset[str] = frozenset(
    [f"%{n}" for n in _SREG_VECTOR]
    + [f"%{n}.{c}" for n in _SREG_VECTOR for c in "xyz"]
    + [f"%{n}" for n in _SREG_SCALAR]
    + [f"%pm{i}" for i in range(8)]
    + [f"%pm{i}_64" for i in range(8)]
    + [f"%envreg{i}" for i in range(32)]
)

#: special registers whose value differs between the lanes of a warp (the others are the
#: same for every lane: ``%ctaid``, ``%ntid``, ``%warpid`` ...)
LANE_VARYING_SPECIAL_REGISTERS: frozenset[str] = frozenset(
    r for r in SPECIAL_REGISTERS
    if r.split(".")[0] in ("%tid", "%laneid", "%clock", "%clock_hi", "%clock64", "%globaltimer",
                           "%globaltimer_lo", "%globaltimer_hi")
    or r.startswith("%lanemask_") or r.startswith("%pm")
)

# ---------------------------------------------------------------------------
# Instruction entries
# ---------------------------------------------------------------------------

#: counting categories, in report order
CATEGORIES = (
    "int", "fp16", "fp32", "fp64", "sfu", "convert", "move", "mem", "atomic",
    "control", "sync", "warp", "matrix", "texture", "misc",
)

#: entry kinds; "arith" and "convert" take their category from the type modifiers
KINDS = frozenset(
    "arith logic convert move sfu mem atomic control sync warp matrix texture misc call".split()
)


@dataclass(frozen=True)
class Instr:
    """One PTX instruction.

    ``defs``: how many leading operands the statement writes (registers inside a
    vector ``{..}`` or pair ``p|q`` in those positions are all written);
    ``defs_with`` overrides it when a modifier is present (``bar.red`` writes,
    ``bar.sync`` does not).  ``inout``: the first operand is also read
    (``wgmma`` accumulators).  ``cc_use``: reads the carry flag (``addc``); any
    entry with ``.cc`` among its modifiers writes it when ``.cc`` is given.
    ``arity``: the least and most operands, counting a vector ``{..}``, an
    address or bracketed list ``[..]`` and a pair ``p|q`` as one operand each
    (``None``: any number, ``call``).
    ``flops``: FLOPs per lane on floating-point types (packed types count
    twice); ``special``: counted in ``flop_count_special`` on floating-point
    types.  ``terminator``: ends a basic block.  ``since``: the PTX ISA version
    that introduced the entry (blank: before 8.0).  ``status``: ``"full"`` when
    operand roles, modifiers and category are described; ``"parse"`` when the
    entry only lets the statement be read and printed.
    ``memory``: what the statement does to memory (not registers), for slicing:
    ``"r"``, ``"w"``, ``"rw"`` or ``""``; its address is the ``[...]`` operand and
    its state space comes from the modifiers (``state_space``).  ``transfer``:
    ``"load"`` or ``"store"`` for a plain access that moves data between memory and
    registers (the timing model's load/store classes; atomics, reductions, async
    copies and mbarrier updates are not plain).  ``sync``: ``"barrier"`` (CTA or
    cluster barrier), ``"warp-barrier"``, ``"fence"``, ``"wait"`` (waits for
    asynchronous work), ``"stack"`` (moves or reads the per-thread stack pointer:
    ``alloca``, ``stacksave``, ``stackrestore``) or ``""``.  ``MEMORY_FACTS`` sets these three.
    ``lanes``: ``"cross"`` when a lane's result depends on other lanes' operands (shuffles,
    votes, warp reductions, the warp-wide matrix operations), else ``""``.  ``timing``: the
    family of timing classes the statement belongs to (``TIMING_FAMILIES``; the timing model
    picks the class within it from the modifiers), ``""`` where the kind decides.
    ``LANE_AND_TIMING_FACTS`` sets these two.
    ``video``: the video instruction form (``VIDEO_FORMS``: which selectors and negations
    its operands take), ``""`` for other entries.
    ``unsupported_reason``: why the entry stays parse-only or without emulator semantics on
    purpose (later architectures only, several GPUs ...); quoted by the coverage table and the
    emulator's "no emulator semantics" error.  ``UNSUPPORTED_REASONS`` sets it.
    """

    name: str
    kind: str
    mods: frozenset[str] = frozenset()
    patterns: tuple[str, ...] = ()
    defs: int = 1
    defs_with: tuple[tuple[str, int], ...] = ()
    arity: tuple[int, int] | None = None
    inout: bool = False
    cc_use: bool = False
    flops: int = 0
    special: bool = False
    terminator: bool = False
    since: str = ""
    status: str = "full"
    memory: str = ""
    transfer: str = ""
    sync: str = ""
    lanes: str = ""
    timing: str = ""
    video: str = ""
    unsupported_reason: str = ""
    _pattern_re: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @property
    def op_name(self) -> str:
        return "ptx." + self.name

    def accepts_modifier(self, mod: str) -> bool:
        if mod in self.mods:
            return True
        return self._pattern_re is not None and self._pattern_re.fullmatch(mod[1:]) is not None

    def num_defs(self, mods: tuple[str, ...]) -> int:
        for m, n in self.defs_with:
            if m in mods:
                return n
        return self.defs


def _expand(spec: str) -> frozenset[str]:
    out: set[str] = set()
    for tok in spec.split():
        if tok.startswith("@"):
            out |= GROUPS[tok[1:]]
        else:
            out.add(tok if tok.startswith((".", "::")) else "." + tok)
    for tok in out:
        assert tok.startswith("::") or "." not in tok[1:], f"modifier {tok!r} contains a dot"
    return frozenset(out)


GROUPS: dict[str, frozenset[str]] = {}


def _group(name: str, spec: str) -> None:
    GROUPS[name] = _expand(spec)


# types
_group("ityp", ".u16 .u32 .u64 .s16 .s32 .s64")
_group("btyp", ".b16 .b32 .b64")
_group("ityp8", "@ityp .u8 .s8")
_group("btyp8", "@btyp .b8")
_group("i32_64", ".u32 .s32 .u64 .s64")
_group("h", ".f16 .f16x2 .bf16 .bf16x2")
_group("ftyp", "@h .f32 .f32x2 .f64")
_group("f8", ".e4m3 .e5m2")
_group("f8f6f4", ".e4m3 .e5m2 .e3m2 .e2m3 .e2m1")
_group("simd8", ".u8x4 .s8x4")  # PTX 9.2 packed bytes
_group("memtyp", "@ityp8 @btyp8 .b128 .f32 .f64")
# rounding and comparison
_group("rnd", ".rn .rz .rm .rp")
_group("irnd", ".rni .rzi .rmi .rpi")
_group("cmp", ".eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan")
_group("boolop", ".and .or .xor")
# memory
_group("scope", ".cta .cluster .gpu .sys")
_group("space", ".global .shared .shared::cta .shared::cluster .local .param .param::entry .param::func .const")
_group("atomspace", ".global .shared .shared::cta .shared::cluster")
_group("cvtaspace", ".const .global .local .shared .shared::cta .shared::cluster .param .param::entry")
_group("evict1", ".L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last .L1::no_allocate")
_group("evict2", ".L2::evict_normal .L2::evict_first .L2::evict_last")
_group("prefsize", ".L2::64B .L2::128B .L2::256B")
_group("hint", ".L2::cache_hint")
_group("vec", ".v2 .v4 .v8")
_group("atomop", ".and .or .xor .cas .exch .add .inc .dec .min .max")
_group("redop", ".and .or .xor .add .inc .dec .min .max")
_group("mbar_tx", ".mbarrier::complete_tx::bytes")
_group("cta_group", ".cta_group::1 .cta_group::2")
_group("phase", ".phase_type::primary .phase_type::conditional")  # PTX 9.3
_group("tdim", ".1d .2d .3d .4d .5d")
_group("load_mode", ".tile .tile::gather4 .tile::scatter4 .im2col .im2col::w .im2col::w::128 .im2col_no_offs")
# conversion
_group(
    "cvttyp",
    "@ityp8 .f16 .bf16 .f32 .f64 .tf32 .f16x2 .bf16x2 .e4m3x2 .e5m2x2 .e2m3x2 .e3m2x2 "
    ".e2m1x2 .e4m3x4 .e5m2x4 .e2m3x4 .e3m2x4 .e2m1x4 .ue8m0x2 .s2f6x2",
)
# video
_group("vtyp", ".u32 .s32")
_group("vcmp", ".eq .ne .lt .le .gt .ge")
_group("vop2", ".add .min .max")
# texture and surface
_group("tgeom", ".1d .2d .3d .a1d .a2d .cube .acube .2dms .a2dms")
_group("sgeom", ".1d .2d .3d .a1d .a2d")
_group("oob", ".trap .clamp .zero")
# matrix
_group("mtyp", "@h .f32 .f64 .tf32 @f8f6f4 .u8 .s8 .u4 .s4 .b1 .s32")

# open families matched by pattern (over the token without its leading dot)
_SHAPE = r"m\d+n\d+k\d+"
_KIND = r"kind::\w+"
_SCALE_VEC = r"scale_vec::\d+X"
_TC_SHAPE = r"\d+x\d+b(?:x2)?"  # tcgen05 data-movement shapes .16x64b, .16x32bx2
_TC_NUM = r"x\d+"  # tcgen05 repeat counts .x1 ... .x128
_COLLECTOR = r"collector::\w+::\w+"


def _entry(
    name: str, kind: str, mods: str = "", *, patterns: tuple[str, ...] = (), **kw: object
) -> Instr:
    pat = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
    assert kind in KINDS, kind
    return Instr(name=name, kind=kind, mods=_expand(mods), patterns=patterns, _pattern_re=pat, **kw)  # type: ignore[arg-type]


def _video(names: str, mods: str, arity: tuple[int, int], form: str) -> list[Instr]:
    # Byte/half-word selectors on operands (``%r1.b0``, ``d.h10``) and vmad's negated
    # operands (``-%r2``) are operand syntax (``("vsel", ..)``, ``("neg", ..)`` nodes);
    # ``VIDEO_FORMS[form]`` says which operand takes which.
    return [_entry(n, "arith", mods, arity=arity, video=form) for n in names.split()]


INSTRUCTIONS: tuple[Instr, ...] = (
    # --- integer arithmetic -------------------------------------------------
    _entry("add", "arith", "@ityp .u16x2 .s16x2 @simd8 .sat .cc @ftyp @rnd .ftz", arity=(3, 3), flops=1),
    _entry("sub", "arith", "@ityp @simd8 .sat .cc @ftyp @rnd .ftz", arity=(3, 3), flops=1),
    _entry("mul", "arith", "@ityp .lo .hi .wide @ftyp @rnd .ftz .sat", arity=(3, 3), flops=1),
    _entry("mad", "arith", "@ityp .lo .hi .wide .sat .cc .f32 .f64 @rnd .ftz", arity=(4, 4), flops=2),
    _entry("clmad", "arith", ".lo .hi .u64 .b64", arity=(4, 4), since="9.3", status="parse"),
    _entry("mul24", "arith", ".hi .lo .u32 .s32", arity=(3, 3)),
    _entry("mad24", "arith", ".hi .lo .sat .u32 .s32", arity=(4, 4)),
    _entry("sad", "arith", "@ityp", arity=(4, 4)),
    _entry("div", "arith", "@ityp .f32 .f64 @rnd .full .approx .ftz", arity=(3, 3), special=True),
    _entry("rem", "arith", "@ityp", arity=(3, 3)),
    _entry("abs", "arith", ".s16 .s32 .s64 .f32 .f64 @h .ftz", arity=(2, 2)),
    _entry("neg", "arith", ".s16 .s32 .s64 @simd8 .f32 .f64 @h .ftz", arity=(2, 2)),
    _entry("min", "arith", "@ityp .u16x2 .s16x2 @simd8 .relu .f32 .f64 @h .ftz .NaN .xorsign .abs", arity=(3, 4)),
    _entry("max", "arith", "@ityp .u16x2 .s16x2 @simd8 .relu .f32 .f64 @h .ftz .NaN .xorsign .abs", arity=(3, 4)),
    _entry("popc", "logic", ".b32 .b64", arity=(2, 2)),
    _entry("clz", "logic", ".b32 .b64", arity=(2, 2)),
    _entry("bfind", "logic", ".shiftamt .u32 .u64 .s32 .s64", arity=(2, 2)),
    _entry("fns", "logic", ".b32", arity=(4, 4)),
    _entry("brev", "logic", ".b32 .b64", arity=(2, 2)),
    _entry("bfe", "logic", ".u32 .u64 .s32 .s64", arity=(4, 4)),
    _entry("bfi", "logic", ".b32 .b64", arity=(5, 5)),
    _entry("szext", "logic", ".clamp .wrap .u32 .s32", arity=(3, 3)),
    _entry("bmsk", "logic", ".clamp .wrap .b32", arity=(3, 3)),
    _entry("dp4a", "arith", ".u32 .s32", arity=(4, 4)),
    _entry("dp2a", "arith", ".lo .hi .u32 .s32", arity=(4, 4)),
    # --- extended precision (add.cc / sub.cc / mad.cc are add/sub/mad + .cc) ---
    _entry("addc", "arith", ".cc @i32_64", arity=(3, 3), cc_use=True),
    _entry("subc", "arith", ".cc @i32_64", arity=(3, 3), cc_use=True),
    _entry("madc", "arith", ".lo .hi .cc @i32_64", arity=(4, 4), cc_use=True),
    # --- floating point -----------------------------------------------------
    _entry("testp", "arith", ".finite .infinite .number .notanumber .normal .subnormal .f32 .f64", arity=(2, 2)),
    _entry("copysign", "arith", ".f32 .f64", arity=(3, 3)),
    _entry("fma", "arith", "@rnd .ftz .sat .relu .oob @ftyp", arity=(4, 4), flops=2),
    _entry("rcp", "sfu", ".approx .ftz @rnd .f32 .f64", arity=(2, 2), special=True),
    _entry("sqrt", "sfu", ".approx .ftz @rnd .f32 .f64", arity=(2, 2), special=True),
    _entry("rsqrt", "sfu", ".approx .ftz .f32 .f64", arity=(2, 2), special=True),
    _entry("sin", "sfu", ".approx .ftz .f32", arity=(2, 2), special=True),
    _entry("cos", "sfu", ".approx .ftz .f32", arity=(2, 2), special=True),
    _entry("lg2", "sfu", ".approx .ftz .f32", arity=(2, 2), special=True),
    _entry("ex2", "sfu", ".approx .ftz .f32 @h", arity=(2, 2), special=True),
    _entry("tanh", "sfu", ".approx .f32 @h", arity=(2, 2), special=True),
    # --- comparison and selection -------------------------------------------
    _entry("setp", "arith", "@cmp @boolop .ftz @ityp @btyp .f32 .f64 @h", arity=(3, 4)),
    _entry("set", "arith", "@cmp @boolop .ftz @ityp @btyp .f32 .f64 @h", arity=(3, 4)),
    _entry("selp", "arith", "@ityp @btyp .f32 .f64", arity=(4, 4)),
    _entry("slct", "arith", ".ftz @ityp @btyp .f32 .f64", arity=(4, 4)),
    # --- logic and shift ----------------------------------------------------
    _entry("and", "logic", ".pred @btyp", arity=(3, 3)),
    _entry("or", "logic", ".pred @btyp", arity=(3, 3)),
    _entry("xor", "logic", ".pred @btyp", arity=(3, 3)),
    _entry("not", "logic", ".pred @btyp", arity=(2, 2)),
    _entry("cnot", "logic", "@btyp", arity=(2, 2)),
    _entry("lop3", "logic", ".b32 .or .and", arity=(5, 6)),
    _entry("shf", "logic", ".l .r .clamp .wrap .b32", arity=(4, 4)),
    _entry("shl", "logic", "@btyp", arity=(3, 3)),
    _entry("shr", "logic", "@btyp @ityp", arity=(3, 3)),
    # --- data movement ------------------------------------------------------
    _entry("mov", "move", ".pred @ityp @btyp .b128 .f32 .f64 .v2 .v4", arity=(2, 2)),
    _entry("shfl", "warp", ".up .down .bfly .idx .b32", arity=(4, 4)),
    _entry("shfl.sync", "warp", ".up .down .bfly .idx .b32", arity=(5, 5)),
    _entry("prmt", "logic", ".b32 .f4e .b4e .rc8 .ecl .ecr .rc16", arity=(4, 4)),
    _entry(
        "ld", "mem",
        "@space .weak .volatile .relaxed .acquire .mmio @scope .ca .cg .cs .lu .cv .nc "
        "@evict1 @evict2 @hint @prefsize @vec @memtyp",
        arity=(2, 3),
    ),
    _entry("ldu", "mem", ".global .v2 .v4 @memtyp", arity=(2, 2)),
    _entry(
        "st", "mem",
        "@space .weak .volatile .relaxed .release .mmio @scope .wb .cg .cs .wt "
        "@evict1 @evict2 @hint @vec @memtyp",
        defs=0, arity=(2, 3),
    ),
    _entry(
        "st.async", "mem",
        ".weak .release .mmio .cluster .gpu .sys .shared::cluster .global @mbar_tx .v2 .v4 @memtyp",
        defs=0, arity=(2, 3), since="8.1",
    ),
    _entry("st.bulk", "mem", ".weak .shared::cta", defs=0, arity=(3, 3), since="8.6"),
    _entry(
        "multimem.ld_reduce", "mem",
        ".weak .relaxed .acquire @scope .global .min .max .add .and .or .xor .acc::f32 .acc::f16 "
        "@vec @ityp .b32 .b64 .f32 .f64 @h @f8 .e4m3x2 .e5m2x2 .e4m3x4 .e5m2x4",
        arity=(2, 2), since="8.1", status="parse",
    ),
    _entry(
        "multimem.st", "mem",
        ".weak .relaxed .release @scope .global @vec @ityp .b32 .b64 .f32 .f64 @h "
        "@f8 .e4m3x2 .e5m2x2 .e4m3x4 .e5m2x4",
        defs=0, arity=(2, 2), since="8.1", status="parse",
    ),
    _entry(
        "multimem.red", "atomic",
        ".relaxed .release @scope .global .min .max .add .and .or .xor @vec @ityp .b32 .b64 .f32 .f64 @h",
        defs=0, arity=(2, 2), since="8.1", status="parse",
    ),
    _entry(
        "multimem.st.async", "mem", ".release @scope .global @ityp8 @btyp8 .f32 .f64 @h",
        defs=0, arity=(2, 2), since="9.3", status="parse",
    ),
    _entry(
        "multimem.red.async", "atomic", ".release @scope .global .add .min .max @ityp .b32 .b64",
        defs=0, arity=(2, 2), since="9.3", status="parse",
    ),
    _entry(
        "multimem.cp.async.bulk", "mem", ".weak .relaxed @scope .global .shared::cta .bulk_group .cp_mask .b128",
        defs=0, arity=(3, 4), since="9.1", status="parse",
    ),
    _entry(
        "multimem.cp.reduce.async.bulk", "mem",
        ".relaxed @scope .global .shared::cta .bulk_group @redop .noftz .f16 .bf16 .b32 .u32 .s32 .b64 .u64 .s64 .f32 .f64",
        defs=0, arity=(3, 3), since="9.1", status="parse",
    ),
    _entry(
        "prefetch", "mem", ".global .local .const .param .L1 .L2 .L2::evict_last .L2::evict_normal .tensormap",
        defs=0, arity=(1, 1),
    ),
    _entry("prefetchu", "mem", ".L1", defs=0, arity=(1, 1)),
    _entry("applypriority", "mem", ".global .L2::evict_normal", defs=0, arity=(2, 2)),
    _entry("discard", "mem", ".global .L2", defs=0, arity=(2, 2)),
    _entry(
        "createpolicy", "misc",
        ".range .fractional .cvt .global .L2 .L2::evict_last .L2::evict_normal .L2::evict_first "
        ".L2::evict_unchanged .b64",
        arity=(1, 4),
    ),
    _entry("isspacep", "move", "@cvtaspace", arity=(2, 2)),
    _entry("cvta", "move", ".to @cvtaspace .u32 .u64", arity=(2, 2)),
    _entry("cvt", "convert", "@irnd @rnd .rna .rs .ftz .sat .relu .satfinite @cvttyp", arity=(2, 4)),
    _entry("cvt.pack", "convert", ".sat .u16 .s16 .u8 .s8 .u4 .s4 .u2 .s2 .s32 .b32", arity=(3, 4)),
    _entry("mapa", "move", ".shared::cluster .u32 .u64", arity=(3, 3), since="7.8"),
    _entry("getctarank", "move", ".shared::cluster .u32 .u64", arity=(2, 2), since="7.8"),
    # --- asynchronous copies ------------------------------------------------
    _entry("cp.async", "mem", ".ca .cg .shared .shared::cta .global @hint @prefsize", defs=0, arity=(3, 5)),
    _entry("cp.async.commit_group", "sync", "", defs=0, arity=(0, 0)),
    _entry("cp.async.wait_group", "sync", "", defs=0, arity=(1, 1)),
    _entry("cp.async.wait_all", "sync", "", defs=0, arity=(0, 0)),
    _entry(
        "cp.async.bulk", "mem",
        ".shared::cta .shared::cluster .global @mbar_tx .bulk_group .multicast::cluster @hint .cp_mask "
        ".ignore_oob .weak .relaxed @scope .b128",
        defs=0, arity=(3, 7), since="8.0",
    ),
    _entry(
        "cp.reduce.async.bulk", "mem",
        ".shared::cta .shared::cluster .global @mbar_tx .bulk_group @hint @redop .noftz .relaxed @scope "
        ".f16 .bf16 .b32 .u32 .s32 .b64 .u64 .s64 .f32 .f64",
        defs=0, arity=(3, 5), since="8.0",
    ),
    _entry("cp.async.bulk.prefetch", "mem", ".L2 .global @hint", defs=0, arity=(2, 3), since="8.0"),
    _entry(
        "cp.async.bulk.tensor", "mem",
        "@tdim .shared::cta .shared::cluster .global @load_mode @mbar_tx .bulk_group .multicast::cluster @cta_group @hint",
        defs=0, arity=(2, 6), since="8.0",
    ),
    _entry(
        "cp.reduce.async.bulk.tensor", "mem",
        "@tdim .global .shared::cta @redop .tile .im2col_no_offs .bulk_group @hint",
        defs=0, arity=(2, 3), since="8.0",
    ),
    _entry(
        "cp.async.bulk.prefetch.tensor", "mem", "@tdim .L2 .global @load_mode @hint",
        defs=0, arity=(1, 3), since="8.0",
    ),
    _entry("cp.async.bulk.commit_group", "sync", "", defs=0, arity=(0, 0), since="8.0"),
    _entry("cp.async.bulk.wait_group", "sync", ".read", defs=0, arity=(1, 1), since="8.0"),
    # --- tensor maps --------------------------------------------------------
    _entry(
        "tensormap.replace", "mem",
        ".tile .global_address .rank .box_dim .global_dim .global_stride .element_stride .elemtype "
        ".interleave_layout .swizzle_mode .swizzle_atomicity .fill_mode .global .shared::cta .b1024 .b32 .b64",
        defs=0, arity=(2, 3), since="8.3", status="parse",
    ),
    _entry(
        "tensormap.cp_fenceproxy", "sync",
        ".global .shared::cta .tensormap::generic .release @scope .sync .aligned",
        defs=0, arity=(3, 3), since="8.3", status="parse",
    ),
    # --- texture and surface ------------------------------------------------
    _entry("tex", "texture", ".base .level .grad @tgeom .v4 .v2 .u32 .s32 .f16 .f32 .f16x2", arity=(2, 6)),
    _entry("tld4", "texture", ".r .g .b .a .2d .a2d .cube .acube .v4 .u32 .s32 .f32", arity=(2, 4)),
    _entry(
        "txq", "texture",
        ".level .width .height .depth .channel_data_type .channel_order .normalized_coords .array_size "
        ".num_mipmap_levels .num_samples .force_unnormalized_coords .filter_mode .addr_mode_0 .addr_mode_1 "
        ".addr_mode_2 .b32",
        arity=(2, 3),
    ),
    _entry("istypep", "texture", ".texref .samplerref .surfref", arity=(2, 2)),
    _entry("suld", "texture", ".b @sgeom .ca .cg .cs .cv .v2 .v4 @btyp8 @oob", arity=(2, 2)),
    _entry("sust", "texture", ".b .p @sgeom .wb .cg .cs .wt .v2 .v4 @btyp8 @oob", defs=0, arity=(2, 2)),
    _entry(
        "sured", "texture", ".b .p .add .min .max .and .or .1d .2d .3d .u32 .u64 .s32 .s64 .b32 .b64 @oob",
        defs=0, arity=(2, 2),
    ),
    _entry(
        "suq", "texture", ".width .height .depth .channel_data_type .channel_order .array_size .memory_layout .b32",
        arity=(2, 2),
    ),
    # --- control flow -------------------------------------------------------
    _entry("bra", "control", ".uni", defs=0, arity=(1, 1), terminator=True),
    _entry("brx.idx", "control", ".uni", defs=0, arity=(2, 2), terminator=True),
    _entry("call", "call", ".uni", defs=0),
    _entry("ret", "control", ".uni", defs=0, arity=(0, 0), terminator=True),
    _entry("exit", "control", "", defs=0, arity=(0, 0), terminator=True),
    # --- synchronisation and communication ----------------------------------
    _entry("bar", "sync", ".cta .sync .arrive .red .popc .and .or .u32 .pred", defs=0, defs_with=((".red", 1),), arity=(1, 4)),
    _entry(
        "barrier", "sync", ".cta .sync .arrive .red .popc .and .or .u32 .pred .aligned",
        defs=0, defs_with=((".red", 1),), arity=(1, 4),
    ),
    _entry("bar.warp.sync", "sync", "", defs=0, arity=(1, 1)),
    _entry("barrier.cluster", "sync", ".arrive .wait .relaxed .release .acquire .aligned", defs=0, arity=(0, 0), since="7.8"),
    _entry("membar", "sync", ".cta .gl .sys .proxy .alias .async .global .shared::cta .shared::cluster", defs=0, arity=(0, 0)),
    _entry(
        "fence", "sync",
        ".sc .acq_rel .acquire .release @scope .sync_restrict::shared::cluster .sync_restrict::shared::cta "
        ".op_restrict .mbarrier_init .proxy .alias .async .global .shared::cta .shared::cluster "
        ".tensormap::generic .async::generic .fabric::generic .generic::fabric .fabric::fabric",
        defs=0, arity=(0, 2),
    ),
    _entry(
        "atom", "atomic",
        "@atomspace .relaxed .acquire .release .acq_rel @scope @atomop .noftz @hint .v2 .v4 .v8 "
        "@btyp .b128 .u32 .u64 .s32 .s64 .f32 .f64 @h",
        arity=(3, 5),
    ),
    _entry(
        "red", "atomic",
        "@atomspace .relaxed .release @scope @redop .noftz @hint .v2 .v4 .v8 "
        ".b32 .b64 .u32 .u64 .s32 .s64 .f32 .f64 @h",
        defs=0, arity=(2, 3),
    ),
    _entry(
        "red.async", "atomic",
        ".relaxed .release .mmio @scope .shared::cluster .global @mbar_tx @redop .u32 .s32 .b32 .u64 .s64",
        defs=0, arity=(2, 3), since="8.1",
    ),
    # ``vote.ballot.sync.b32 d, p, mask`` (the mode before ``.sync``, as CUB's
    # inline assembly writes it; ptxas accepts it) resolves to this entry
    _entry("vote", "warp", ".all .any .uni .ballot .pred .b32 .sync", arity=(2, 3)),
    _entry("vote.sync", "warp", ".all .any .uni .ballot .pred .b32", arity=(3, 3)),
    _entry("match", "warp", ".any .all .sync .b32 .b64", arity=(3, 3)),
    _entry("activemask", "warp", ".b32", arity=(1, 1)),
    _entry("redux.sync", "warp", ".add .min .max .and .or .xor .u32 .s32 .b32 .f32 .abs .NaN", arity=(3, 3)),
    _entry("griddepcontrol", "sync", ".launch_dependents .wait", defs=0, arity=(0, 0), since="7.8"),
    _entry("elect.sync", "warp", "", arity=(2, 2), since="8.0"),
    _entry("mbarrier.init", "sync", ".shared .shared::cta .b64 .layout::v0 .layout::v1", defs=0, arity=(2, 2)),
    _entry("mbarrier.inval", "sync", ".shared .shared::cta .b64", defs=0, arity=(1, 1)),
    _entry(
        "mbarrier.expect_tx", "sync", ".relaxed .cta .cluster .shared .shared::cta .shared::cluster .b64",
        defs=0, arity=(2, 2), since="8.0",
    ),
    _entry(
        "mbarrier.complete_tx", "sync", ".relaxed .cta .cluster .shared .shared::cta .shared::cluster .b64",
        defs=0, arity=(2, 2), since="8.0",
    ),
    _entry(
        "mbarrier.arrive", "sync",
        ".release .relaxed .cta .cluster .shared .shared::cta .shared::cluster .expect_tx .noComplete .b64",
        arity=(2, 3),
    ),
    _entry(
        "mbarrier.arrive_drop", "sync",
        ".release .relaxed .cta .cluster .shared .shared::cta .shared::cluster .expect_tx .noComplete .b64",
        arity=(2, 3),
    ),
    _entry("mbarrier.test_wait", "sync", ".parity .acquire .relaxed .cta .cluster .shared .shared::cta .b64 @phase", arity=(3, 3)),
    _entry("mbarrier.try_wait", "sync", ".parity .acquire .relaxed .cta .cluster .shared .shared::cta .b64 @phase", arity=(3, 4)),
    _entry("mbarrier.pending_count", "sync", ".b64 .layout::v0 .layout::v1", arity=(2, 2)),
    _entry("mbarrier.check_layout", "sync", ".layout::v0 .layout::v1 .shared::cta .b64", arity=(2, 2), since="9.3", status="parse"),
    _entry("cp.async.mbarrier.arrive", "sync", ".noinc .shared .shared::cta .b64", defs=0, arity=(1, 1)),
    _entry(
        "clusterlaunchcontrol.try_cancel", "misc",
        ".async .shared::cta @mbar_tx .multicast::cluster::all .b128",
        defs=0, arity=(2, 2), since="8.6",
    ),
    _entry(
        "clusterlaunchcontrol.query_cancel", "misc",
        ".is_canceled .pred .b128 .get_first_ctaid .get_first_ctaid::x .get_first_ctaid::y .get_first_ctaid::z .v4 .b32",
        arity=(2, 2), since="8.6",
    ),
    # --- warp-level matrix --------------------------------------------------
    _entry("wmma.load", "matrix", ".a .b .c .sync .aligned .row .col .global .shared .shared::cta @mtyp", patterns=(_SHAPE,), arity=(2, 3)),
    _entry("wmma.store", "matrix", ".d .sync .aligned .row .col .global .shared .shared::cta .f16 .f32 .s32 .f64", patterns=(_SHAPE,), defs=0, arity=(2, 3)),
    _entry("wmma.mma", "matrix", ".sync .aligned .row .col @mtyp .satfinite @rnd .xor .and .popc", patterns=(_SHAPE,), arity=(4, 4)),
    _entry(
        "mma", "matrix",
        ".sp .sp::ordered_metadata .sync .aligned .row .col @mtyp .satfinite .xor .and .popc .block_scale .ue8m0 .ue4m3",
        patterns=(_SHAPE, _KIND, _SCALE_VEC), arity=(4, 10),
    ),
    _entry("ldmatrix", "matrix", ".sync .aligned .m8n8 .m16n16 .m8n16 .x1 .x2 .x4 .trans .shared .shared::cta .b16 .b8 .b8x16 .b6x16_p32 .b4x16_p64", arity=(2, 2)),
    _entry("stmatrix", "matrix", ".sync .aligned .m8n8 .m16n8 .x1 .x2 .x4 .trans .shared .shared::cta .b16 .b8", defs=0, arity=(2, 2), since="7.8"),
    _entry("movmatrix", "matrix", ".sync .aligned .m8n8 .trans .b16", arity=(2, 2), since="7.8"),
    # --- warpgroup-level matrix (sm_90a) ------------------------------------
    _entry(
        "wgmma.mma_async", "matrix", ".sp .sync .aligned @mtyp .satfinite .and .popc",
        patterns=(_SHAPE,), inout=True, arity=(4, 10), since="8.0",
    ),
    _entry("wgmma.fence", "sync", ".sync .aligned", defs=0, arity=(0, 0), since="8.0"),
    _entry("wgmma.commit_group", "sync", ".sync .aligned", defs=0, arity=(0, 0), since="8.0"),
    _entry("wgmma.wait_group", "sync", ".sync .aligned", defs=0, arity=(1, 1), since="8.0"),
    # --- TensorCore 5th generation (sm_100a) --------------------------------
    _entry("tcgen05.alloc", "matrix", "@cta_group .sync .aligned .shared::cta .b32", defs=0, arity=(2, 2), since="8.6", status="parse"),
    _entry("tcgen05.dealloc", "matrix", "@cta_group .sync .aligned .b32", defs=0, arity=(2, 2), since="8.6", status="parse"),
    _entry("tcgen05.relinquish_alloc_permit", "matrix", "@cta_group .sync .aligned", defs=0, arity=(0, 0), since="8.6", status="parse"),
    _entry(
        "tcgen05.ld", "matrix", ".sync .aligned .pack::16b .b32 .red .min .max .abs .NaN .f32 .u32 .s32",
        patterns=(_TC_SHAPE, _TC_NUM), defs_with=((".red", 2),), arity=(2, 4), since="8.6", status="parse",
    ),
    _entry(
        "tcgen05.st", "matrix", ".sync .aligned .unpack::16b .b32",
        patterns=(_TC_SHAPE, _TC_NUM), defs=0, arity=(2, 3), since="8.6", status="parse",
    ),
    _entry("tcgen05.wait", "sync", "::ld ::st .sync .aligned", defs=0, arity=(0, 0), since="8.6", status="parse"),
    _entry(
        "tcgen05.cp", "matrix", "@cta_group .warpx2::02_13 .warpx2::01_23 .warpx4 .b8x16 .b6x16_p32 .b4x16_p64",
        patterns=(_TC_SHAPE,), defs=0, arity=(2, 2), since="8.6", status="parse",
    ),
    _entry("tcgen05.shift", "matrix", "@cta_group .down", defs=0, arity=(1, 1), since="8.6", status="parse"),
    _entry(
        "tcgen05.mma", "matrix", "@cta_group .ws .sp .block_scale .block16 .block32 .ashift",
        patterns=(_KIND, _SCALE_VEC, _COLLECTOR), defs=0, arity=(5, 8), since="8.6", status="parse",
    ),
    _entry(
        "tcgen05.commit", "sync", "@cta_group .mbarrier::arrive::one .shared::cluster .multicast::cluster .b64",
        defs=0, arity=(1, 2), since="8.6", status="parse",
    ),
    _entry("tcgen05.fence", "sync", "::before_thread_sync ::after_thread_sync", defs=0, arity=(0, 0), since="8.6", status="parse"),
    # --- fabric (PTX 9.3) ----------------------------------------------------
    *(
        _entry(
            n, "mem",
            ".async .multimem .shared::cta .mbarrier::complete_tx::bytes .mbarrier::complete_tx::16B "
            ".mbarrier::report::fabric .counted::bytes .cp_mask .relaxed .sys .b128" + extra,
            defs=0, arity=(4, 5), since="9.3", status="parse",
        )
        for n, extra in (
            ("fabric.try_get", ""), ("fabric.try_put", ""),
            ("fabric.try_red", " @redop @ityp .b32 .b64 .f32 .f64 @h"),
            ("fabric.try_pullred", " .sync @redop @ityp .b32 .b64 .f32 .f64 @h @f8"),
        )
    ),
    _entry("fabric.submit", "sync", ".op_restrict::fetching", defs=0, arity=(0, 0), since="9.3", status="parse"),
    _entry("fabric.wait", "sync", ".sync_restrict::reads", defs=0, arity=(0, 0), since="9.3", status="parse"),
    # --- stack manipulation -------------------------------------------------
    _entry("stacksave", "move", ".u32 .u64", arity=(1, 1)),
    _entry("stackrestore", "move", ".u32 .u64", defs=0, arity=(1, 1)),
    _entry("alloca", "move", ".u32 .u64", arity=(2, 3)),
    # --- video (scalar, 2-way and 4-way SIMD) -------------------------------
    *_video("vadd vsub vabsdiff vmin vmax", "@vtyp .sat @vop2", (3, 4), "scalar"),
    *_video("vshl vshr", "@vtyp .sat .clamp .wrap @vop2", (3, 4), "scalar"),
    *_video("vmad", "@vtyp .po .sat .shr7 .shr15", (4, 4), "vmad"),
    *_video("vset", "@vtyp @vcmp @vop2", (3, 4), "scalar"),
    *_video("vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2", "@vtyp .sat .add", (4, 4), "simd2"),
    *_video("vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4", "@vtyp .sat .add", (4, 4), "simd4"),
    *_video("vset2", "@vtyp @vcmp .add", (4, 4), "simd2"),
    *_video("vset4", "@vtyp @vcmp .add", (4, 4), "simd4"),
    # --- miscellaneous ------------------------------------------------------
    _entry("brkpt", "misc", "", defs=0, arity=(0, 0)),
    _entry("nanosleep", "misc", ".u32", defs=0, arity=(1, 1)),
    _entry("pmevent", "misc", ".mask", defs=0, arity=(1, 1)),
    _entry("trap", "control", "", defs=0, arity=(0, 0), terminator=True),
    _entry("setmaxnreg", "misc", ".inc .dec .sync .aligned .u32", defs=0, arity=(1, 1), since="8.0"),
)


#: memory effect, plain transfer and synchronisation role of the entries that have any
#: (``Instr.memory``, ``.transfer``, ``.sync``): the one place these facts are written
MEMORY_FACTS: dict[str, dict[str, str]] = {
    **{n: {"memory": "r", "transfer": "load"} for n in
       "ld ldu tex tld4 suld multimem.ld_reduce ldmatrix wmma.load tcgen05.ld".split()},
    # reads its shared-memory matrix descriptors' elements (A and B)
    "wgmma.mma_async": {"memory": "r"},
    **{n: {"memory": "w", "transfer": "store"} for n in
       "st st.async st.bulk sust multimem.st multimem.st.async stmatrix wmma.store tcgen05.st".split()},
    "atom": {"memory": "rw"},
    # reductions: read-modify-write in memory, nothing returned to a register
    **{n: {"memory": "w"} for n in "red red.async sured multimem.red multimem.red.async".split()},
    # asynchronous copies: cp.async's global source is read where it is issued; the bulk
    # copies are modelled as writes of their destination
    "cp.async": {"memory": "rw"},
    **{n: {"memory": "w"} for n in
       "cp.async.bulk cp.async.bulk.tensor cp.reduce.async.bulk cp.reduce.async.bulk.tensor "
       "multimem.cp.async.bulk multimem.cp.reduce.async.bulk tcgen05.cp tcgen05.mma".split()},
    # mbarrier objects live in shared memory: waits read them, updates write them
    **{n: {"memory": "r", "sync": "wait"} for n in "mbarrier.test_wait mbarrier.try_wait".split()},
    "mbarrier.pending_count": {"memory": "r"},
    **{n: {"memory": "w"} for n in
       "mbarrier.init mbarrier.arrive mbarrier.arrive_drop mbarrier.expect_tx mbarrier.complete_tx "
       "mbarrier.inval cp.async.mbarrier.arrive".split()},
    **{n: {"sync": "barrier"} for n in "bar barrier barrier.cluster".split()},
    "bar.warp.sync": {"sync": "warp-barrier"},
    **{n: {"sync": "fence"} for n in "membar fence".split()},
    **{n: {"sync": "wait"} for n in
       "cp.async.wait_group cp.async.wait_all cp.async.bulk.wait_group wgmma.wait_group tcgen05.wait".split()},
    # the per-thread stack pointer: each moves or reads it, so they keep their order
    **{n: {"sync": "stack"} for n in "alloca stacksave stackrestore".split()},
}
MEMORY_EFFECTS = ("", "r", "w", "rw")
TRANSFERS = ("", "load", "store")
SYNC_ROLES = ("", "barrier", "warp-barrier", "fence", "wait", "stack")

#: cross-lane behaviour and timing family of the entries that have one (``Instr.lanes``,
#: ``.timing``): the one place these facts are written
LANE_AND_TIMING_FACTS: dict[str, dict[str, str]] = {
    **{n: {"lanes": "cross", "timing": "shfl"} for n in "shfl shfl.sync movmatrix".split()},
    **{n: {"lanes": "cross", "timing": "vote"} for n in "vote vote.sync activemask elect.sync".split()},
    "match": {"lanes": "cross", "timing": "match"},
    "redux.sync": {"lanes": "cross", "timing": "redux"},
    **{n: {"lanes": "cross", "timing": "tensor"} for n in "wmma.mma mma wgmma.mma_async tcgen05.mma".split()},
    **{n: {"lanes": "cross"} for n in "wmma.load wmma.store ldmatrix stmatrix".split()},
    **{n: {"timing": "int_mul"} for n in "mul mad mul24 mad24 sad dp4a dp2a madc clmad".split()},
    **{n: {"timing": "int_slow"} for n in "popc clz bfind brev fns".split()},
    **{n: {"timing": "div"} for n in "div rem".split()},
    **{n: {"timing": "int_compare"} for n in "setp selp set slct".split()},
    **{n: {"timing": "int_bitwise"} for n in "and or xor not shl shr cnot".split()},
    **{n: {"timing": "cp_async"} for n in
       "cp.async cp.async.bulk cp.reduce.async.bulk cp.async.bulk.prefetch cp.async.bulk.tensor "
       "cp.reduce.async.bulk.tensor cp.async.bulk.prefetch.tensor multimem.cp.async.bulk "
       "multimem.cp.reduce.async.bulk".split()},
    **{n: {"timing": "prefetch"} for n in "prefetch prefetchu applypriority discard".split()},
}
LANES = ("", "cross")
#: the timing families (``Instr.timing``): the classes of an arch file's ``[classes]`` they
#: lead to are chosen by ``runtime/models/timing.py`` from the modifiers
TIMING_FAMILIES = ("", "shfl", "vote", "match", "redux", "tensor", "int_mul", "int_slow", "div", "int_compare",
                   "int_bitwise", "cp_async", "prefetch")

_SM90_REJECTS = "ptxas -arch=sm_90 rejects it"
_NEWER_PTX = "newer than the CUDA 13.0 ptxas (PTX ISA 9.0), which rejects it for every target"
_MULTICAST = "needs a multicast object bound to several GPUs (NVLink SHARP, cuMulticastCreate): no single-GPU meaning"
_TCGEN05 = f"sm_100a and later only ({_SM90_REJECTS}): Tensor Memory of the 5th-generation Tensor Cores"

#: why an entry stays parse-only or without emulator semantics (``Instr.unsupported_reason``),
#: for the entries that stay so on purpose: the one place these reasons are written.  A reason that names a
#: later target says ``ptxas -arch=sm_90 rejects it`` (tests/unit/test_unsupported_reasons.py
#: checks that with ptxas); ``PTX ISA 9.x`` ones are newer than the ptxas here.
UNSUPPORTED_REASONS: dict[str, str] = {
    "clmad": f"PTX ISA 9.3, {_NEWER_PTX}: no assembler or GPU here to check it against",
    **{n: _MULTICAST for n in "multimem.ld_reduce multimem.st multimem.red".split()},
    **{n: f"PTX ISA 9.3, {_NEWER_PTX}; {_MULTICAST}" for n in "multimem.st.async multimem.red.async".split()},
    **{n: f"PTX ISA 9.1, {_NEWER_PTX}; {_MULTICAST}"
       for n in "multimem.cp.async.bulk multimem.cp.reduce.async.bulk".split()},
    "tensormap.replace": f"sm_90a and later only ({_SM90_REJECTS}): edits a tensor map (CUtensorMap), "
                         "which the emulator does not model",
    "tensormap.cp_fenceproxy": "copies a tensor map (CUtensorMap) under a proxy fence: the emulator does not "
                               "model tensor maps",
    **{n: _TCGEN05 for n in
       "tcgen05.alloc tcgen05.dealloc tcgen05.relinquish_alloc_permit tcgen05.ld tcgen05.st tcgen05.wait "
       "tcgen05.cp tcgen05.shift tcgen05.mma tcgen05.commit tcgen05.fence".split()},
    **{n: f"PTX ISA 9.3, {_NEWER_PTX}: transfers over the NVLink fabric between GPUs" for n in
       "fabric.try_get fabric.try_put fabric.try_red fabric.try_pullred fabric.submit fabric.wait".split()},
    **{n: f"sm_100 and later only ({_SM90_REJECTS}): cancels the launch of clusters not yet running" for n in
       "clusterlaunchcontrol.try_cancel clusterlaunchcontrol.query_cancel".split()},
    "mbarrier.check_layout": f"PTX ISA 9.3, {_NEWER_PTX}",
}

#: the forms of an emulated entry that its rule leaves out, and why (the rule's error quotes it;
#: docs/opcode-coverage.md lists it): the one place these are written
UNEMULATED_FORMS: dict[str, str] = {
    "wgmma.mma_async": ".e4m3/.e5m2 (FP8), .s8/.u8 (integer), .b1 and sparse (.sp) wgmma are not emulated; "
                       "a descriptor's matrix base offset (bits 49-51) is ignored: the swizzle uses the address bits",
}

INSTRUCTIONS = tuple(replace(i, **MEMORY_FACTS[i.name]) if i.name in MEMORY_FACTS else i for i in INSTRUCTIONS)
INSTRUCTIONS = tuple(
    replace(i, **LANE_AND_TIMING_FACTS[i.name]) if i.name in LANE_AND_TIMING_FACTS else i for i in INSTRUCTIONS)
INSTRUCTIONS = tuple(
    replace(i, unsupported_reason=UNSUPPORTED_REASONS[i.name]) if i.name in UNSUPPORTED_REASONS else i
    for i in INSTRUCTIONS)
INSTRUCTIONS_BY_NAME: dict[str, Instr] = {i.name: i for i in INSTRUCTIONS}
assert set(UNSUPPORTED_REASONS) <= {i.name for i in INSTRUCTIONS}, set(UNSUPPORTED_REASONS) - {i.name for i in INSTRUCTIONS}
assert len(INSTRUCTIONS_BY_NAME) == len(INSTRUCTIONS), "duplicate ISA entry"
assert set(MEMORY_FACTS) <= set(INSTRUCTIONS_BY_NAME), set(MEMORY_FACTS) - set(INSTRUCTIONS_BY_NAME)
assert set(LANE_AND_TIMING_FACTS) <= set(INSTRUCTIONS_BY_NAME), set(LANE_AND_TIMING_FACTS) - set(INSTRUCTIONS_BY_NAME)

#: longest entry name in dot-separated parts (bounds the opcode prefix search)
_MAX_PARTS = max(i.name.count(".") + 1 for i in INSTRUCTIONS)


class UnknownOpcode(Exception):
    pass


class UnknownModifier(Exception):
    def __init__(self, instr: Instr, modifier: str):
        super().__init__(modifier)
        self.instr = instr
        self.modifier = modifier


def _check_mods(instr: Instr, mods: tuple[str, ...]) -> tuple[Instr, tuple[str, ...]]:
    for m in mods:
        if not instr.accepts_modifier(m):
            raise UnknownModifier(instr, m)
    return instr, mods


@lru_cache(maxsize=65536)
def resolve_opcode(token: str) -> tuple[Instr, tuple[str, ...]]:
    """Split an opcode token into its ISA entry and its modifiers.

    The entry is the longest one whose name is a dot-separated prefix of
    ``token`` (``red.async.relaxed...`` is ``red.async``, ``red.add...`` is
    ``red``); an entry's last part may also carry a ``::`` qualifier
    (``tcgen05.wait::ld`` is ``tcgen05.wait`` with the modifier ``::ld``).
    Raises ``UnknownOpcode`` or ``UnknownModifier`` (the first modifier that
    the entry does not accept).
    """
    parts = token.split(".")
    for n in range(min(_MAX_PARTS, len(parts)), 0, -1):
        instr = INSTRUCTIONS_BY_NAME.get(".".join(parts[:n]))
        if instr is not None:
            return _check_mods(instr, tuple("." + p for p in parts[n:]))
        last = parts[n - 1]
        if "::" in last and n > 1:
            head, tail = last.split("::", 1)
            instr = INSTRUCTIONS_BY_NAME.get(".".join(parts[: n - 1] + [head]))
            if instr is not None:
                return _check_mods(instr, ("::" + tail,) + tuple("." + p for p in parts[n:]))
    raise UnknownOpcode(parts[0])


# ---------------------------------------------------------------------------
# Facts derived from an entry and a statement's modifiers
# ---------------------------------------------------------------------------

_TYPE_TOKENS = ALL_TYPES | INSTR_ONLY_TYPES


#: what a modifier token says, where the table knows it: the structure the MLIR
#: form prints (``<rounding = ".rn", type = ".f32">``) and accessors read
MODIFIER_ROLES: dict[str, str] = {
    **{t: "type" for t in _TYPE_TOKENS},
    **{t: "rounding" for t in GROUPS["rnd"] | GROUPS["irnd"] | {".rna", ".rs"}},
    **{t: "space" for t in GROUPS["space"] | GROUPS["cvtaspace"]},
    **{t: "vector" for t in GROUPS["vec"]},
    **{t: "scope" for t in GROUPS["scope"]},
    **{t: "ordering" for t in (".relaxed", ".acquire", ".release", ".acq_rel", ".weak", ".volatile", ".mmio", ".sc")},
}
ROLES = ("type", "rounding", "space", "vector", "scope", "ordering")


def modifier_role(token: str) -> str:
    """The role of a modifier token (one of ``ROLES``), or ``""``."""
    return MODIFIER_ROLES.get(token, "")


def type_modifiers(mods: tuple[str, ...]) -> tuple[str, ...]:
    """The type modifiers among ``mods``, in order (``cvt.f32.s32`` -> f32, s32)."""
    return tuple(m for m in mods if m in _TYPE_TOKENS)


@lru_cache(maxsize=65536)
def category(instr: Instr, mods: tuple[str, ...]) -> str:
    """The counting category of a statement (one of ``CATEGORIES``)."""
    kind = instr.kind
    if kind in ("arith", "convert"):
        types = type_modifiers(mods)
        if any(t in FP64_TYPES for t in types):
            return "fp64" if kind == "arith" else "convert"
        if kind == "convert":
            return "convert"
        if any(t in FP32_TYPES for t in types):
            return "fp32"
        if any(t in FP16_TYPES or t in FP8_TYPES for t in types):
            return "fp16"
        return "int"
    if kind == "logic":
        return "int"
    if kind == "call":
        return "control"
    return kind


#: position of the mbarrier address operand of the instructions that read or update an
#: mbarrier object (the waits, arrivals, tx-count updates, and the asynchronous operations
#: that complete through one, which have it only with ``.mbarrier::complete_tx::bytes``)
MBARRIER_OPERAND: dict[str, int] = {
    "mbarrier.init": 0, "mbarrier.inval": 0, "mbarrier.expect_tx": 0, "mbarrier.complete_tx": 0,
    "mbarrier.arrive": 1, "mbarrier.arrive_drop": 1, "mbarrier.test_wait": 1, "mbarrier.try_wait": 1,
    "cp.async.mbarrier.arrive": 0,
    "cp.async.bulk": 3, "cp.reduce.async.bulk": 3, "cp.async.bulk.tensor": 2, "st.async": 2, "red.async": 2,
}
_COMPLETES_TX = ".mbarrier::complete_tx::bytes"


def mbarrier_operand(instr: Instr, mods: tuple[str, ...]) -> int | None:
    """The position of the mbarrier the statement reads or updates, or None (``MBARRIER_OPERAND``)."""
    k = MBARRIER_OPERAND.get(instr.name)
    if k is None or (not instr.name.startswith(("mbarrier.", "cp.async.mbarrier")) and _COMPLETES_TX not in mods):
        return None
    return k


@lru_cache(maxsize=65536)
def state_space(instr: Instr, mods: tuple[str, ...]) -> str | None:
    """The state space a memory/atomic statement accesses (``generic`` if none)."""
    if instr.kind not in ("mem", "atomic"):
        return None
    for m in mods:
        base = m.split("::")[0]
        if base in STATE_SPACES:
            return base[1:]
    return "generic"


@lru_cache(maxsize=65536)
def flop_weights(instr: Instr, mods: tuple[str, ...]) -> tuple[str, int]:
    """``(counter, weight)``: which FLOP counter a statement adds to per lane.

    ``counter`` is ``"sp"``, ``"dp"``, ``"hp"``, ``"special"`` or ``""`` (not a
    FLOP).  Packed two-element types count twice.  The first type modifier
    decides (the destination type: ``fma.rn.f32.f16`` is single precision).
    """
    types = type_modifiers(mods)
    if not types or not (instr.flops or instr.special):
        return ("", 0)
    t = types[0]
    if t not in FLOAT_TYPES:
        return ("", 0)
    mult = 2 if t in PACKED_TYPES else 1
    if instr.special:
        return ("special", mult)
    if t in FP64_TYPES:
        return ("dp", instr.flops * mult)
    if t in FP32_TYPES:
        return ("sp", instr.flops * mult)
    return ("hp", instr.flops * mult)


def parse_only_entries() -> list[str]:
    return sorted(i.name for i in INSTRUCTIONS if i.status == "parse")


def fully_described_entries() -> list[str]:
    return sorted(i.name for i in INSTRUCTIONS if i.status == "full")


def coverage_rows() -> list[tuple[str, str, str]]:
    """``(entry, kind, status)`` for every entry, in table order (for docs/opcode-coverage.md)."""
    return [(i.name, i.kind, i.status) for i in INSTRUCTIONS]


def unemulated_forms(name: str) -> str:
    """What the rule of the emulated entry ``name`` leaves out, or ``""`` (``UNEMULATED_FORMS``)."""
    return UNEMULATED_FORMS.get(name, "")


def unsupported_reason(name: str) -> str:
    """Why the emulator gives the entry ``name`` no semantics, or ``""`` (``UNSUPPORTED_REASONS``)."""
    instr = INSTRUCTIONS_BY_NAME.get(name)
    return instr.unsupported_reason if instr is not None else ""


# ---------------------------------------------------------------------------
# Operand types (PTX ISA "Type checking rules" for instruction types)
# ---------------------------------------------------------------------------

#: entries whose register operands all have the instruction's type (when it has one)
_SAME_TYPE_ALL = frozenset(
    "add sub min max abs neg and or xor not cnot div rem fma mad mul sqrt rcp rsqrt sin cos "
    "lg2 ex2 tanh copysign brev mov".split()
)
#: entries where only some operand positions have the instruction's type
_SAME_TYPE_AT = {"selp": (0, 1, 2), "setp": (1, 2), "shl": (0, 1), "shr": (0, 1)}


#: entries whose statements take integer results of a fixed type (bit counts, positions)
_U32_RESULT = frozenset("popc clz bfind".split())
_WIDER = {".s16": ".s32", ".u16": ".u32", ".s32": ".s64", ".u32": ".u64", ".b16": ".b32", ".b32": ".b64"}

#: a rule: (operand position, type, "exact" or "data"); "data": the register may be wider
#: than an integer type (ld, st and cvt, PTX ISA "operand size exceeding instruction-type size")
TypeRule = tuple[int, str, str]


def type_count_error(instr: Instr, mods: tuple[str, ...]) -> str | None:
    """Entries of one instruction type given two integer types (``setp.ge.s32.b32``), as ptxas
    rejects them (a float pair is the mixed-precision form, ``add.f32.f16``, of sm_100)."""
    if instr.name in _SAME_TYPE_ALL or instr.name in _SAME_TYPE_AT or instr.name in _U32_RESULT \
            or instr.name in _ONE_SPACE:
        types = type_modifiers(mods)
        if len(types) > 1 and not all(t[:2] == ".f" or t[:3] == ".bf" for t in types):
            return f"'{instr.name}' takes one instruction type, not {len(types)} ({''.join(types)})"
    if instr.name in _ONE_SPACE:
        spaces = [m for m in mods if m.split("::")[0] in STATE_SPACES]
        if len(spaces) > 1:
            return f"'{instr.name}' takes one state space, not {len(spaces)} ({''.join(spaces)})"
    return None


#: entries of one state space (``cvta.to.global.u64.param`` is rejected by ptxas)
_ONE_SPACE = frozenset("cvta ld ldu st atom red isspacep prefetch".split())
#: special registers of 64 bits (the others are 32-bit); ptxas checks them like registers
SPECIAL_REGISTERS_64: frozenset[str] = frozenset(
    ["%clock64", "%globaltimer", "%gridid", "%current_graph_exec"] + [f"%pm{i}_64" for i in range(8)])


def integer_operand_positions(instr: Instr, mods: tuple[str, ...]) -> tuple[int, ...]:
    """Operand positions of a signed or unsigned integer type: a floating-point literal there
    (``mul.wide.s32 %rd1, %r3, 0f00000000``) is rejected by ptxas (a ``.bN`` operand takes
    one: ``mov.b32 %r1, 0f3F800000``)."""
    rules = operand_type_rules(instr, mods) or ()
    return tuple(k for k, t, _mode in rules if t[:2] in (".u", ".s"))


def sized_operand_positions(instr: Instr, mods: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """(position, bits) of the operands whose register must have exactly the instruction
    type's size (special registers are checked against it: ``add.s64 %rd9, %tid.x, %rd8``)."""
    rules = operand_type_rules(instr, mods) or ()
    out = []
    for k, t, mode in rules:
        digits = "".join(ch for ch in t if ch.isdigit())
        if mode == "exact" and digits and t != ".pred":
            out.append((k, int(digits)))
    return tuple(out)


def float_operand_positions(instr: Instr, mods: tuple[str, ...]) -> tuple[int, ...]:
    """Operand positions of a floating-point type: a constant there must be a floating-point
    literal (``1.0``, ``0f3F800000``); ptxas rejects an integer one (``add.f32 %f1, %f2, 1``)."""
    rules = operand_type_rules(instr, mods) or ()
    return tuple(k for k, t, _mode in rules if t[:2] == ".f" or t == ".bf16")


def operand_type_rules(instr: Instr, mods: tuple[str, ...]) -> tuple[TypeRule, ...] | None:
    """The operand positions whose registers must fit a type, or None where the table says
    nothing (instructions with several types not listed here, vector forms)."""
    types = type_modifiers(mods)
    name = instr.name
    if name == "cvt":
        if len(types) != 2 or _vector_width(mods) > 1:
            return None
        return ((0, types[0], "data"), (1, types[1], "data"))
    if len(types) != 1:
        return None
    t = types[0]
    if name in ("mul", "mad") and ".wide" in mods:
        wide = _WIDER.get(t)
        if wide is None:
            return None
        return ((0, wide, "exact"), (1, t, "exact"), (2, t, "exact")) + (((3, wide, "exact"),) if name == "mad" else ())
    if name in _SAME_TYPE_ALL:
        return tuple((k, t, "exact") for k in range(8))
    if name in _SAME_TYPE_AT:
        rules = tuple((k, t, "exact") for k in _SAME_TYPE_AT[name])
        if name == "setp":
            return rules + ((0, ".pred", "exact"), (3, ".pred", "exact"))
        if name == "selp":
            return rules + ((3, ".pred", "exact"),)
        return rules + ((2, ".u32", "exact"),)  # shl, shr: the shift amount
    if name in _U32_RESULT:
        return ((0, ".u32", "exact"), (1, t, "exact"))
    if name in ("shfl", "shfl.sync"):  # d[|p], a, b (lane), c (clamp)[, membermask]: 32-bit
        return ((1, t, "exact"), (2, ".u32", "exact"), (3, ".u32", "exact")) + \
            (((4, ".u32", "exact"),) if name == "shfl.sync" else ())
    if name == "cvta":  # an address: both registers of the address size
        return ((0, t, "exact"), (1, t, "exact"))
    if _vector_width(mods) > 1:
        return None
    if name in ("ld", "ldu"):
        return ((0, t, "data"),)
    if name == "st":
        return ((1, t, "data"),)
    if name == "atom":  # d, [a], b[, c for .cas][, cache policy]
        return ((0, t, "exact"), (2, t, "exact")) + (((3, t, "exact"),) if ".cas" in mods else ())
    if name == "red":
        return ((1, t, "exact"),)
    return None


def _type_class(t: str) -> str:
    if t == ".pred":
        return "pred"
    if t[1] == "b":
        return "bits"
    if t in FLOAT_TYPES:
        return "float"
    return "int"


def register_fits_data(register_type: str, instruction_type: str) -> bool:
    """``register_fits``, except that an integer or bit type's register may be wider
    (``ld.u8`` into a ``.u32`` register), and a bit-type register any wider type (``st.f32`` from a ``.b64``), as ptxas takes them."""
    r, i = _type_class(register_type), _type_class(instruction_type)
    if r == "bits" and i != "pred" or r == "int" and i in ("int", "bits"):
        return TYPE_BITS.get(register_type, 0) >= TYPE_BITS.get(instruction_type, 1 << 30)
    return register_fits(register_type, instruction_type)


def fits(register_type: str, rule: str, instruction_type: str) -> bool:
    """Whether a register of ``register_type`` satisfies a ``TypeRule``."""
    return (register_fits_data if rule == "data" else register_fits)(register_type, instruction_type)


def register_fits(register_type: str, instruction_type: str) -> bool:
    """Whether a register declared ``register_type`` may be an operand of an
    instruction of ``instruction_type``: the same size, and ``.bN`` goes with any
    type of size N, ``.uN``/``.sN`` with each other, ``.fN`` only with ``.fN``/``.bN``."""
    if TYPE_BITS.get(register_type) != TYPE_BITS.get(instruction_type):
        return False
    r, i = _type_class(register_type), _type_class(instruction_type)
    if "pred" in (r, i):
        return r == i
    return r == i or "bits" in (r, i)


#: entries that move whole vector registers, and the operand positions that hold the data
_VECTOR_DATA = {"mov": (0, 1), "ld": (0,), "ldu": (0,), "st": (1,)}


def _vector_width(mods: tuple[str, ...]) -> int:
    for m in mods:
        if m in (".v2", ".v4", ".v8"):
            return int(m[2:])
    return 1


def vector_data_positions(instr: Instr, mods: tuple[str, ...]) -> tuple[int, ...]:
    """The data operands of a ``.v2``/``.v4`` ``mov``, ``ld`` or ``st`` (a vector ``{..}``
    or a vector register of that width), or ``()``."""
    return _VECTOR_DATA.get(instr.name, ()) if _vector_width(mods) > 1 else ()


def _operand_name(node: tuple) -> str:
    if node[0] == "vsel":
        return _operand_name(node[1]) + node[2]
    if node[0] == "neg":
        return "-" + _operand_name(node[1])
    if node[0] == "elem":
        return node[1][1] + node[2]
    if node[0] == "radd":
        return f"{node[1][1]}+{node[2]}"
    if node[0] == "sink":
        return "_"
    return node[1] if isinstance(node[1], str) else node[0]


def vector_operand_error(instr: Instr, mods: tuple[str, ...], args: tuple, reg_type) -> str | None:
    """Why a statement's vector registers and elements do not fit it, or None: an element
    ``v.z`` must exist, ``reg + imm`` needs an integer register, a whole vector register is
    data of ``mov``/``ld``/``st`` with its own width (or of ``mov.bN`` of its whole size)."""
    data = _VECTOR_DATA.get(instr.name, ())
    width = _vector_width(mods)
    for k, node in enumerate(args):
        kind = node[0]
        if kind == "elem":
            rt = reg_type(node[1])
            vt = VECTOR_REG_TYPES.get(rt) if rt is not None else None
            if rt is not None and vt is None:
                return f"operand {k + 1} ('{_operand_name(node)}') selects an element of '{node[1][1]}', a {rt} register, not a vector"
            if vt is not None and ELEMENT_FIELDS[node[2]] >= vt[0]:
                return f"operand {k + 1} ('{_operand_name(node)}'): '{node[1][1]}' is a {rt} register of {vt[0]} elements"
            if k in data and width > 1:
                return f"operand {k + 1} ('{_operand_name(node)}') is one element; '{instr.name}' with .v{width} needs a vector"
        elif kind == "radd":
            rt = reg_type(node[1])
            if rt is not None and (rt == ".pred" or rt in FLOAT_TYPES or rt in VECTOR_REG_TYPES):
                return f"operand {k + 1} ('{_operand_name(node)}'): a register plus an immediate needs an integer register, '{node[1][1]}' is {rt}"
        elif kind == "reg":
            rt = reg_type(node)
            vt = VECTOR_REG_TYPES.get(rt) if rt is not None else None
            if vt is None:
                if k in data and width > 1 and rt is not None:
                    return f"operand {k + 1} ('{node[1]}') is a {rt} register; '{instr.name}' with .v{width} needs a vector register or {{...}}"
                continue
            if k not in data and instr.name != "call":
                return f"operand {k + 1} ('{node[1]}') is a {rt} vector register; '{instr.name}' takes its elements ('{node[1]}.x')"
            if width > 1 and width != vt[0]:
                return f"operand {k + 1} ('{node[1]}') is a {rt} register of {vt[0]} elements; the instruction moves {width}"
            if width == 1 and instr.name != "mov":
                return f"operand {k + 1} ('{node[1]}') is a {rt} vector register; use '{instr.name}.v{vt[0]}'"
    return None


def address_register_error(instr: Instr, mods: tuple[str, ...], args: tuple, reg_type,
                           address_size: int | None) -> str | None:
    """Why a register inside ``[ ]`` cannot be an address, or None: it must be an integer
    or bit register, and a ``.global`` or generic address of a module with
    ``.address_size 64`` needs 64 bits (other state spaces take 32), as ``ptxas`` checks."""
    space = state_space(instr, mods)
    if space is None:
        return None
    if sum(1 for m in mods if m.split("::")[0] in STATE_SPACES) > 1:
        space = ""  # a copy between state spaces (cp.async.bulk.global.shared::cta): one per address
    for k, node in enumerate(args):
        if node[0] != "addr" or node[1][0] != "reg" or node[1][1] == "%cc":
            continue
        rt = reg_type(node[1])
        if rt is None or rt in VECTOR_REG_TYPES:
            continue
        if _type_class(rt) in ("pred", "float"):
            return f"operand {k + 1} ('[{node[1][1]}]'): an address needs an integer register, not a {rt} one"
        # (ptxas takes 16-bit registers there, as it takes immediates; 32-bit ones it refuses)
        if address_size == 64 and space in ("global", "generic") and TYPE_BITS.get(rt) == 32:
            where = "a .global" if space == "global" else "a generic"
            return (f"operand {k + 1} ('[{node[1][1]}]') is a {rt} register; {where} address needs 64 bits "
                    f"(.address_size 64)")
    return None


# ---------------------------------------------------------------------------
# Video instructions (PTX ISA "Video Instructions": vadd ... vset4)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VideoForm:
    """What the operands of one form of video instruction take, as ``ptxas`` checks.

    ``a``/``b``/``d``: the selectors (``.b0``, ``.h10``, ``.b7654``) operand a, b and the
    destination accept, as a regular expression over the selector without its dot (the
    scalar forms take a destination selector only in the merge form, four operands and
    no secondary operation); ``a_default``/``b_default``/``d_default``: the selector an
    operand without one has (the SIMD forms); ``lanes``: elements per 32-bit operand (1:
    scalar); ``immediates``: whether a, b and c may be immediates; ``negation``: whether
    a, b and c may be negated (``vmad``)."""

    a: str
    b: str
    d: str
    a_default: str = ""
    b_default: str = ""
    d_default: str = ""
    lanes: int = 1
    immediates: bool = True
    negation: bool = False


_SCALAR_SEL = r"b[0-3]|h[01]"
VIDEO_FORMS: dict[str, VideoForm] = {
    "scalar": VideoForm(a=_SCALAR_SEL, b=_SCALAR_SEL, d=_SCALAR_SEL),
    "vmad": VideoForm(a=_SCALAR_SEL, b=_SCALAR_SEL, d="(?!)", negation=True),
    # .hxy: x, y in 0..3 (halfwords 0, 1 of a, 2, 3 of b); .h0, .h1, .h10: the halfwords written
    "simd2": VideoForm(a="h[0-3]{2}", b="h[0-3]{2}", d="h0|h1|h10", a_default=".h10", b_default=".h32",
                       d_default=".h10", lanes=2, immediates=False),
    # .bxyzw: x..w in 0..7 (bytes 0..3 of a, 4..7 of b); the mask: byte positions, descending
    "simd4": VideoForm(a="b[0-7]{4}", b="b[0-7]{4}", d="b(?=[0-3]+$)3?2?1?0?", a_default=".b3210",
                       b_default=".b7654", d_default=".b3210", lanes=4, immediates=False),
}
#: the operand syntax of a selector (``%r1.b0``): which ones an instruction takes is ``VIDEO_FORMS``'s
VIDEO_SELECTOR_SYNTAX = re.compile(r"[bh][0-9]+")
#: the secondary operations of the scalar forms (the SIMD forms take ``.add`` only)
VIDEO_SECONDARY_OPS = (".add", ".min", ".max")


def video_operand_error(instr: Instr, mods: tuple[str, ...], args: tuple, reg_type) -> str | None:
    """Why a statement's video selectors, negations, immediates, types or modifiers are not
    a form ``ptxas`` accepts, or None (also: no selector or negation outside video)."""
    form = VIDEO_FORMS.get(instr.video)
    if form is None:
        for k, node in enumerate(args):
            if node[0] == "vsel":
                return f"operand {k + 1} ('{_operand_name(node)}'): a video selector, which only video instructions take"
            if node[0] == "neg":
                return f"operand {k + 1} ('{_operand_name(node)}'): operand negation is for vmad only"
        return None
    name = instr.name
    types = type_modifiers(mods)
    ntypes = 2 if name.startswith("vset") else 3
    if len(types) != ntypes:
        want = ".atype.btype" if ntypes == 2 else ".dtype.atype.btype"
        return f"takes {ntypes} types ({want}, each .u32 or .s32), found {len(types)}"
    if name in ("vshl", "vshr") and types[2] != ".u32":
        return "the shift amount's type (.btype) must be .u32"
    def count(group):  # a repeated modifier counts twice (ptxas takes only .sat twice)
        return sum(1 for m in mods if m in group)
    if name in ("vshl", "vshr") and count((".clamp", ".wrap")) != 1:
        return "needs exactly one of .clamp and .wrap"
    if name.startswith("vset") and count(GROUPS["vcmp"]) != 1:
        return "needs exactly one comparison (.eq .ne .lt .le .gt .ge)"
    if count(VIDEO_SECONDARY_OPS) > 1:
        return "takes at most one secondary operation (.add, .min, .max)"
    if count((".shr7", ".shr15")) > 1:
        return "takes at most one of .shr7 and .shr15"
    if form.lanes > 1 and ".sat" in mods and ".add" in mods:
        return ".sat cannot be used with the secondary accumulate operation .add"
    secop = count(VIDEO_SECONDARY_OPS) == 1
    negated = []
    for k, node in enumerate(args):
        neg = node[0] == "neg"
        if neg:
            if not form.negation or k == 0:
                return f"operand {k + 1} ('{_operand_name(node)}'): operand negation is for vmad's sources only"
            negated.append(k)
            node = node[1]
        sel = ""
        if node[0] == "vsel":
            sel, node = node[2], node[1]
        kind = node[0]
        what = f"operand {k + 1} ('{_operand_name(args[k])}')"
        if kind == "imm":
            if k == 0 or not form.immediates:
                return f"{what}: '{name}' takes registers only here"
        elif kind == "reg":
            rt = reg_type(node)
            if rt is not None and (TYPE_BITS.get(rt) != 32 or _type_class(rt) not in ("int", "bits")):
                return f"{what} is a {rt} register; video instructions take 32-bit integer registers"
        else:
            return f"{what}: video instructions take 32-bit registers{' or immediates' if form.immediates else ''}"
        if not sel:
            continue
        if k == 3:
            return f"{what}: operand c takes no selector"
        allowed = (form.d, form.a, form.b)[k]
        if re.fullmatch(allowed, sel[1:]) is None:
            return f"{what}: '{sel}' is not a selector '{name}' takes there"
        if k == 0 and form.lanes == 1 and (len(args) != 4 or secop):
            return (f"{what}: a destination selector (merge into c) needs four operands and no "
                    f"secondary operation")
    if form.lanes == 1 and instr.video == "scalar" and secop and len(args) != 4:
        return "a secondary operation needs the operand c"
    if negated:
        if ".po" in mods:
            return "operand negation cannot be used with .po"
        if (1 in negated) != (2 in negated) and 3 in negated:
            return "operand negation is limited to a or b (the product), or c"
    return None


def video_selector(node: tuple, default: str = "") -> tuple[tuple, str, bool]:
    """``(operand, selector, negated)`` of a video operand (``-%r1.b0``: %r1, ".b0", True);
    ``default`` where it has no selector."""
    neg = node[0] == "neg"
    if neg:
        node = node[1]
    if node[0] == "vsel":
        return node[1], node[2], neg
    return node, default, neg


def operand_type_error(instr: Instr, mods: tuple[str, ...], args: tuple, reg_type,
                       address_size: int | None = None) -> str | None:
    """Why a statement's register operands do not fit its instruction type, or None.

    ``reg_type(node)`` gives the declared type of a register node (or None where
    unknown); vector registers (``.v2.u32``) and their elements are checked too
    (``vector_operand_error``), and video operands (``video_operand_error``).  Register
    operands named by ``operand_type_rules`` are checked."""
    why = video_operand_error(instr, mods, args, reg_type) or vector_operand_error(
        instr, mods, args, reg_type) or address_register_error(instr, mods, args, reg_type, address_size)
    if why is not None:
        return why
    rules = operand_type_rules(instr, mods)
    if rules is None:
        return None
    types = type_modifiers(mods)
    for k, t, rule in rules:
        if k >= len(args):
            continue
        node = args[k]
        kind = node[0]
        if kind == "radd":
            # like an integer immediate: any size, but not for a floating-point type
            if t in FLOAT_TYPES:
                return (f"operand {k + 1} ('{_operand_name(node)}') is an integer (a register plus an "
                        f"immediate), which does not fit the instruction type {t}")
            continue
        if kind == "elem":
            rt = reg_type(node[1])
            vt = VECTOR_REG_TYPES.get(rt) if rt is not None else None
            rt = vt[1] if vt is not None else None
        elif kind != "reg" or node[1] == "%cc":
            continue
        else:
            rt = reg_type(node)
            vt = VECTOR_REG_TYPES.get(rt) if rt is not None else None
            if vt is not None:
                # mov.v2.u32 v, w: the elements fit; mov.b64 %rd, v: the whole register
                if _vector_width(mods) > 1:
                    rt = vt[1]
                elif t[1] == "b" and TYPE_BITS.get(t) == TYPE_BITS[rt]:
                    continue
        if rt is not None and not fits(rt, rule, t):
            return (f"operand {k + 1} ('{_operand_name(node)}') is a {rt} register, which does not fit "
                    f"{'the instruction type ' + t if t in types else 'the ' + t + ' it takes'}")
    return None
