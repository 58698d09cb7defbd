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
entry's modifier set (or match one of its patterns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
    ".e4m3x4 .e5m2x4 .e2m3x4 .e3m2x4 .e2m1x4 .ue8m0 .ue8m0x2 .ue4m3".split()
)
FLOAT_TYPES = FP16_TYPES | FP32_TYPES | FP64_TYPES | FP8_TYPES
ALL_TYPES = INT_TYPES | FLOAT_TYPES | frozenset([".pred"])
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
    ".e3m2x4": 32, ".e2m1x4": 16,
}

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
    "is_explicit_cluster current_graph_exec"
).split()

SPECIAL_REGISTERS: frozenset[str] = frozenset(
    [f"%{n}" for n in _SREG_VECTOR]
    + [f"%{n}.{c}" for n in _SREG_VECTOR for c in "xyz"]
    + [f"%{n}" for n in _SREG_SCALAR]
    + [f"%pm{i}" for i in range(8)]
    + [f"%pm{i}_64" for i in range(8)]
    + [f"%envreg{i}" for i in range(32)]
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
    ``flops``: FLOPs per lane on floating-point types (packed types count
    twice); ``special``: counted in ``flop_count_special`` on floating-point
    types.  ``status``: ``"full"`` when operand roles, modifiers and category are
    described; ``"parse"`` when the entry only lets the statement be read and
    printed (its modifiers are checked against a permissive set).
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
            out.add(tok if tok.startswith(".") else "." + tok)
    return frozenset(out)


GROUPS: dict[str, frozenset[str]] = {}


def _group(name: str, spec: str) -> None:
    GROUPS[name] = _expand(spec)


_group("ityp", ".u16 .u32 .u64 .s16 .s32 .s64")
_group("btyp", ".b16 .b32 .b64")
_group("ityp8", "@ityp .u8 .s8")
_group("btyp8", "@btyp .b8")
_group("ftyp", ".f16 .f16x2 .bf16 .bf16x2 .f32 .f32x2 .f64")
_group("rnd", ".rn .rz .rm .rp")
_group("irnd", ".rni .rzi .rmi .rpi")
_group("cmp", ".eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan")
_group("boolop", ".and .or .xor")
_group("space", ".global .shared .shared::cta .shared::cluster .local .param .param::entry .param::func .const")
_group("scope", ".cta .cluster .gpu .sys")
_group("sem", ".relaxed .acquire .release .acq_rel .weak .volatile .mmio")
_group("cop", ".ca .cg .cs .lu .cv .wb .wt .nc")
_group(
    "cache",
    ".L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last .L1::no_allocate "
    ".L2::evict_normal .L2::evict_first .L2::evict_last .L2::cache_hint .L2::64B .L2::128B "
    ".L2::256B .L2::evict_unchanged",
)
_group("vec", ".v2 .v4 .v8")
_group("ldtyp", "@ityp8 @btyp8 .b128 .f16 .f16x2 .bf16 .bf16x2 .f32 .f64 .pred")
_group("atomop", ".and .or .xor .cas .exch .add .inc .dec .min .max")
_group("cvttyp", "@ityp8 .f16 .bf16 .f32 .f64 .tf32 .f16x2 .bf16x2 .e4m3x2 .e5m2x2 .e2m3x2 .e3m2x2 .e2m1x2 .e4m3x4 .e5m2x4 .e2m3x4 .e3m2x4 .e2m1x4 .ue8m0x2")


def _entry(
    name: str, kind: str, mods: str = "", *, patterns: tuple[str, ...] = (), **kw: object
) -> Instr:
    pat = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
    assert kind in KINDS, kind
    return Instr(name=name, kind=kind, mods=_expand(mods), patterns=patterns, _pattern_re=pat, **kw)  # type: ignore[arg-type]


_SHAPE = r"m\d+n\d+k\d+"

INSTRUCTIONS: tuple[Instr, ...] = (
    # --- integer arithmetic -------------------------------------------------
    _entry("add", "arith", "@ityp @btyp .u16x2 .s16x2 .sat .cc @ftyp @rnd .ftz", arity=(3, 3), flops=1),
    _entry("sub", "arith", "@ityp @btyp .u16x2 .s16x2 .sat .cc @ftyp @rnd .ftz", arity=(3, 3), flops=1),
    _entry("addc", "arith", ".cc .u32 .s32 .u64 .s64 .b32 .b64", arity=(3, 3), cc_use=True),
    _entry("subc", "arith", ".cc .u32 .s32 .u64 .s64 .b32 .b64", arity=(3, 3), cc_use=True),
    _entry("mul", "arith", "@ityp .lo .hi .wide @ftyp @rnd .ftz .sat", arity=(3, 3), flops=1),
    _entry("mad", "arith", "@ityp .lo .hi .wide .sat .cc @ftyp @rnd .ftz", arity=(4, 4), flops=2),
    _entry("madc", "arith", "@ityp .lo .hi .cc", arity=(4, 4), cc_use=True),
    _entry("mul24", "arith", ".hi .lo .u32 .s32", arity=(3, 3)),
    _entry("mad24", "arith", ".hi .lo .sat .u32 .s32", arity=(4, 4)),
    _entry("sad", "arith", "@ityp", arity=(4, 4)),
    _entry("div", "arith", "@ityp @ftyp @rnd .full .approx .ftz", arity=(3, 3), special=True),
    _entry("rem", "arith", "@ityp", arity=(3, 3)),
    _entry("abs", "arith", "@ityp .s16x2 @ftyp .ftz .relu", arity=(2, 2)),
    _entry("neg", "arith", "@ityp @ftyp .ftz", arity=(2, 2)),
    _entry("min", "arith", "@ityp @btyp .u16x2 .s16x2 .relu @ftyp .ftz .NaN .xorsign.abs .abs .xorsign", arity=(3, 4)),
    _entry("max", "arith", "@ityp @btyp .u16x2 .s16x2 .relu @ftyp .ftz .NaN .xorsign.abs .abs .xorsign", arity=(3, 4)),
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
    # --- floating point -----------------------------------------------------
    _entry("fma", "arith", "@rnd .ftz .sat .relu .oob .oob.relu @ftyp .f32.f16 .f32.bf16", arity=(4, 4), flops=2),
    _entry("rcp", "sfu", ".approx .ftz @rnd .f32 .f64", arity=(2, 2), special=True),
    _entry("sqrt", "sfu", ".approx .ftz @rnd .f32 .f64", arity=(2, 2), special=True),
    _entry("rsqrt", "sfu", ".approx .ftz .f32 .f64", arity=(2, 2), special=True),
    _entry("sin", "sfu", ".approx .ftz .f32", arity=(2, 2), special=True),
    _entry("cos", "sfu", ".approx .ftz .f32", arity=(2, 2), special=True),
    _entry("lg2", "sfu", ".approx .ftz .f32", arity=(2, 2), special=True),
    _entry("ex2", "sfu", ".approx .ftz .atype .f32 .f16 .f16x2 .bf16 .bf16x2", arity=(2, 2), special=True),
    _entry("tanh", "sfu", ".approx .f32 .f16 .f16x2 .bf16 .bf16x2", arity=(2, 2), special=True),
    _entry("copysign", "arith", ".f32 .f64", arity=(3, 3)),
    _entry("testp", "arith", ".finite .infinite .number .notanumber .normal .subnormal .f32 .f64", arity=(2, 2)),
    # --- comparison and selection -------------------------------------------
    _entry("setp", "arith", "@cmp @boolop .ftz @ityp @btyp @ftyp", arity=(3, 4)),
    _entry("set", "arith", "@cmp @boolop .ftz .u32 .s32 .f32 @ityp @btyp @ftyp", arity=(3, 4)),
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
    _entry("prmt", "logic", ".b32 .f4e .b4e .rc8 .ecl .ecr .rc16", arity=(4, 4)),
    # --- data movement ------------------------------------------------------
    _entry("mov", "move", ".pred @ityp @btyp .b128 .f32 .f64 .f16 .f16x2 .bf16 .bf16x2 .u8 .s8 .b8", arity=(2, 2)),
    _entry("ld", "mem", "@space @sem @scope @cop @cache @vec @ldtyp .unified", arity=(2, 3)),
    _entry("ldu", "mem", ".global @vec @ldtyp", arity=(2, 2)),
    _entry("st", "mem", "@space @sem @scope @cop @cache @vec @ldtyp", defs=0, arity=(2, 3)),
    _entry("prefetch", "mem", ".global .local .L1 .L2 .L2::evict_last .L2::evict_normal .tensormap .const .param", defs=0, arity=(1, 1)),
    _entry("prefetchu", "mem", ".L1", defs=0, arity=(1, 1)),
    _entry("cvta", "move", ".to .global .shared .shared::cta .shared::cluster .local .const .param .param::entry .u32 .u64", arity=(2, 2)),
    _entry("cvt", "convert", "@irnd @rnd .rna .rs .ftz .sat .relu .satfinite @cvttyp", arity=(2, 4)),
    _entry("isspacep", "move", ".global .shared .shared::cta .shared::cluster .local .const .param .param::entry", arity=(2, 2)),
    _entry("istypep", "move", ".texref .samplerref .surfref", arity=(2, 2)),
    _entry("alloca", "move", ".u32 .u64 .local", arity=(2, 3)),
    _entry("stacksave", "move", ".u32 .u64", arity=(1, 1)),
    _entry("stackrestore", "move", ".u32 .u64", defs=0, arity=(1, 1)),
    _entry("mapa", "move", ".shared::cluster .u32 .u64", arity=(3, 3)),
    _entry("getctarank", "move", ".shared::cluster .u32 .u64", arity=(2, 2)),
    # --- atomics and reductions ---------------------------------------------
    _entry("atom", "atomic", "@space @sem @scope @atomop .noftz .L2::cache_hint @vec @btyp .b128 @ityp .f16 .f16x2 .bf16 .bf16x2 .f32 .f64", arity=(3, 5)),
    _entry("red", "atomic", "@space @sem @scope @atomop .noftz .L2::cache_hint @vec @btyp @ityp .f16 .f16x2 .bf16 .bf16x2 .f32 .f64", defs=0, arity=(2, 3)),
    # --- control flow -------------------------------------------------------
    _entry("bra", "control", ".uni", defs=0, arity=(1, 1), terminator=True),
    _entry("brx.idx", "control", ".uni", defs=0, arity=(2, 2), terminator=True),
    _entry("call", "call", ".uni", defs=0),
    _entry("ret", "control", ".uni", defs=0, arity=(0, 0), terminator=True),
    _entry("exit", "control", "", defs=0, arity=(0, 0), terminator=True),
    _entry("trap", "control", "", defs=0, arity=(0, 0), terminator=True),
    _entry("brkpt", "misc", "", defs=0, arity=(0, 0)),
    _entry("nanosleep", "misc", ".u32", defs=0, arity=(1, 1)),
    _entry("pmevent", "misc", ".mask", defs=0, arity=(1, 1)),
    # --- synchronisation ----------------------------------------------------
    _entry("bar", "sync", ".cta .sync .arrive .red .popc .and .or .u32 .pred .aligned", defs=0, defs_with=((".red", 1),), arity=(1, 4)),
    _entry("barrier", "sync", ".cta .sync .arrive .red .popc .and .or .u32 .pred .aligned", defs=0, defs_with=((".red", 1),), arity=(1, 4)),
    _entry("barrier.cluster", "sync", ".arrive .wait .relaxed .aligned .acquire .release", defs=0, arity=(0, 0)),
    _entry("bar.warp.sync", "sync", "", defs=0, arity=(1, 1)),
    _entry("membar", "sync", ".cta .gl .sys .proxy.alias .proxy", defs=0, arity=(0, 0)),
    _entry("fence", "sync", "@sem .sc .acq_rel @scope .proxy .alias .async .async.global .async.shared::cta .async.shared::cluster .tensormap::generic .op_restrict .mbarrier_init .sync_restrict::shared::cluster .sync_restrict::shared::cta .proxy.tensormap::generic .global .shared::cta .shared::cluster", patterns=(r"proxy.*",), defs=0, arity=(0, 2)),
    _entry("mbarrier.init", "sync", ".shared .shared::cta .b64", defs=0, arity=(2, 2)),
    _entry("mbarrier.inval", "sync", ".shared .shared::cta .b64", defs=0, arity=(1, 1)),
    _entry("mbarrier.expect_tx", "sync", "@sem @scope .shared .shared::cta .shared::cluster .b64", defs=0, arity=(2, 2)),
    _entry("mbarrier.complete_tx", "sync", "@sem @scope .shared .shared::cta .shared::cluster .b64", defs=0, arity=(2, 2)),
    _entry("mbarrier.arrive", "sync", "@sem @scope .shared .shared::cta .shared::cluster .noComplete .expect_tx .b64", arity=(2, 3)),
    _entry("mbarrier.arrive_drop", "sync", "@sem @scope .shared .shared::cta .shared::cluster .noComplete .expect_tx .b64", arity=(2, 3)),
    _entry("mbarrier.test_wait", "sync", "@sem @scope .parity .shared .shared::cta .b64", arity=(3, 3)),
    _entry("mbarrier.try_wait", "sync", "@sem @scope .parity .shared .shared::cta .b64", arity=(3, 4)),
    _entry("mbarrier.pending_count", "sync", ".b64", arity=(2, 2)),
    _entry("cp.async", "mem", ".ca .cg .shared .shared::cta .global .L2::cache_hint .L2::64B .L2::128B .L2::256B", defs=0, arity=(3, 5)),
    _entry("cp.async.commit_group", "sync", "", defs=0, arity=(0, 0)),
    _entry("cp.async.wait_group", "sync", "", defs=0, arity=(1, 1)),
    _entry("cp.async.wait_all", "sync", "", defs=0, arity=(0, 0)),
    _entry("cp.async.mbarrier.arrive", "sync", ".noinc .shared .shared::cta .b64", defs=0, arity=(1, 1)),
    _entry("elect.sync", "warp", "", arity=(2, 2)),
    # --- warp-level ---------------------------------------------------------
    _entry("shfl", "warp", ".up .down .bfly .idx .b32", arity=(4, 4)),
    _entry("shfl.sync", "warp", ".up .down .bfly .idx .b32", arity=(5, 5)),
    _entry("vote", "warp", ".all .any .uni .ballot .pred .b32", arity=(2, 2)),
    _entry("vote.sync", "warp", ".all .any .uni .ballot .pred .b32", arity=(3, 3)),
    _entry("match", "warp", ".any .all .sync .b32 .b64", arity=(3, 3)),
    _entry("redux.sync", "warp", ".add .min .max .and .or .xor .u32 .s32 .b32 .f32 .abs .NaN", arity=(3, 3)),
    _entry("activemask", "warp", ".b32", arity=(1, 1)),
)


INSTRUCTIONS_BY_NAME: dict[str, Instr] = {i.name: i for i in INSTRUCTIONS}
assert len(INSTRUCTIONS_BY_NAME) == len(INSTRUCTIONS), "duplicate ISA entry"

#: longest entry name in dot-separated parts (bounds the opcode prefix search)
_MAX_PARTS = max(i.name.count(".") + 1 for i in INSTRUCTIONS)


class UnknownOpcode(Exception):
    pass


class UnknownModifier(Exception):
    def __init__(self, instr: Instr, modifier: str):
        super().__init__(modifier)
        self.instr = instr
        self.modifier = modifier


@lru_cache(maxsize=65536)
def resolve_opcode(token: str) -> tuple[Instr, tuple[str, ...]]:
    """Split an opcode token into its ISA entry and its modifiers.

    Raises ``UnknownOpcode`` or ``UnknownModifier`` (the first modifier that
    the entry does not accept).
    """
    parts = token.split(".")
    for n in range(min(_MAX_PARTS, len(parts)), 0, -1):
        instr = INSTRUCTIONS_BY_NAME.get(".".join(parts[:n]))
        if instr is not None:
            mods = tuple("." + p for p in parts[n:])
            for m in mods:
                if not instr.accepts_modifier(m):
                    raise UnknownModifier(instr, m)
            return instr, mods
    raise UnknownOpcode(parts[0])


# ---------------------------------------------------------------------------
# Facts derived from an entry and a statement's modifiers
# ---------------------------------------------------------------------------


def type_modifiers(mods: tuple[str, ...]) -> tuple[str, ...]:
    """The type modifiers among ``mods``, in order (``cvt.f32.s32`` -> f32, s32)."""
    return tuple(m for m in mods if m in ALL_TYPES)


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
    FLOP).  Packed two-element types count twice.
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


def writes_cc(instr: Instr, mods: tuple[str, ...]) -> bool:
    return ".cc" in mods


def parse_only_entries() -> list[str]:
    return sorted(i.name for i in INSTRUCTIONS if i.status == "parse")


def fully_described_entries() -> list[str]:
    return sorted(i.name for i in INSTRUCTIONS if i.status == "full")
