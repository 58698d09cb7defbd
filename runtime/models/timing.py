"""Timing estimate: kernel cycles and time from exact block counts and a pipeline model.

    from hypa.runtime.models.timing import estimate
    result = emulator.run(launch)
    est = estimate(result, launch, "sm_80")        # the finished run's counts (and address trace)
    est.time_us, est.cycles, est.bound, est.occupancy.ctas_per_sm, est.blocks

The model reads a finished run and never runs one; ``runtime.report.batch.estimate_run``
runs a launch and estimates it.

The model follows source-level performance simulation of GPU cores (Gerum,
Bringmann and Rosenstiel, DATE 2015), rebuilt on PTX and on the emulator's
exact per-block execution counts:

1. **Architecture** -- a data file per target (``runtime/models/arch/sm_90.toml``:
   H100 SXM5; ``sm_80.toml``: A100): SMs, clock, sub-partitions and their
   issue width, execution units (lanes per SM), instruction classes
   (unit, latency, SASS expansion), memory latencies and bandwidths,
   occupancy limits.  Every figure cites its source.
2. **Block timing** -- every basic block becomes a *pipeline execution
   graph* for one warp: nodes are (instruction, stage) for the stages fetch,
   issue, operand collect, execute and write-back; edges are the in-order
   stage progression (an instruction enters a stage when the one before it
   has moved on), issue and fetch bandwidth, data dependences (SSA use-def
   inside the graph: a use's operand collect waits for its producer's
   write-back) and resource edges (an execution unit is busy for
   ``warp_size / lanes`` clocks per warp-instruction).  The graph is solved
   by the fixpoint iteration of Gerum et al.'s Algorithm 1: node times are
   relaxed to the longest path over the static edges and the resource edges
   implied by the current schedule, which is re-derived from the new times,
   until nothing changes.  A block's latency is the clock at which the
   instruction after it could issue.  Values from other blocks are ready
   conservatively: their producer's latency minus the issue slots that
   follow it in its own block.
3. **Pairwise overlap** -- for every CFG edge A -> B the graph of (the tail
   of) A followed by B is solved; ``cost(B | A) = T(A;B) - T(A)`` is what B
   adds when it follows A (pipeline fill, latencies hidden or exposed across
   the boundary, the branch's fetch redirect).
4. **Warp time** -- block counts come from the emulator; edge counts are not
   counted (the code generator is left alone), so they are derived from the
   block counts and the CFG: flow conservation (a block's entries equal its
   executions, a block's exits equal its executions plus its divergent
   executions) fixes every edge of a single-entry or single-exit block, the
   rest is split by iterative proportional fitting.  Executions no edge
   explains (the first one of each warp, re-entries after divergence) cost the
   block's stand-alone latency.  This gives the *latency bound* of one
   (average) warp.
5. **CTA and SM time** -- the warps resident on an SM share its
   sub-partitions: per sub-partition the *issue bound* is the warps' issue
   slots over the issue width, the *resource-usage bound* of every unit is the
   warps' busy clocks on it; an SM round takes the largest of the latency,
   issue and resource bounds.
6. **Occupancy and waves** -- CTAs per SM from warps, CTAs, registers (the
   ``.maxnreg`` directive, a caller's figure, or an SSA-liveness estimate)
   and shared memory (static layout + dynamic + the per-CTA reservation);
   the busiest SM runs ``ceil(ctas / SMs)`` CTAs in rounds of that many.
   Global memory traffic bounds the kernel by L2 and DRAM bandwidth
   (sectors from ``--memory-metrics`` when present, else coalesced
   accesses).  Time = cycles / clock + the launch overhead.

What is approximate and why is listed in docs/guide.md, "What is approximate".
"""

from __future__ import annotations

import math
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.ir import Block, BlockArgument, SSAValue

from hypa.passes.liveness import Liveness
from hypa.ptxdialect import isa
from hypa.ptxdialect.diagnostics import HypaError
from hypa.ptxdialect.dialect import FallthroughOp, InstructionOp, RawDirectiveOp

from ..emulator.program import KernelProgram, value_bits
from ..metrics import registry
from ..metrics.counters import CounterView, memory_space

ARCH_DIR = Path(__file__).with_name("arch")
DEFAULT_ARCH = "sm_90"
#: address-trace records the estimate keeps per launch (runtime/models/cache_model.py): 16 B each;
#: longer streams are set-sampled down to this
TRACE_RECORDS = 1 << 17

#: pipeline stages of one instruction, in order
STAGES = ("fetch", "issue", "operand", "execute", "writeback")
F, I, O, E, W = range(5)
NS = len(STAGES)


#: timing class (the arch file's [classes]) -> the stall a warp waiting on such an instruction
#: shows, in Nsight Compute's words (fixed-latency arithmetic: "wait")
STALL_OF_CLASS = {
    "ld_global": "long scoreboard", "ld_local": "long scoreboard", "st_local": "long scoreboard",
    "atom_global": "long scoreboard", "cp_async": "long scoreboard", "async_wait": "long scoreboard",
    "ld_shared": "short scoreboard", "st_shared": "mio throttle", "atom_shared": "short scoreboard",
    "ld_const": "imc miss", "ld_const_indexed": "short scoreboard", "ld_param": "imc miss",
    "sfu": "short scoreboard", "shfl": "short scoreboard",
    "int_div": "math pipe throttle", "int_div64": "math pipe throttle", "fp32_div": "math pipe throttle",
    "fp64": "math pipe throttle", "fp64_div": "math pipe throttle", "tensor": "math pipe throttle",
    "barrier": "barrier", "bar_arrive": "barrier", "fence": "membar", "branch": "branch resolving",
    "st_global": "lg throttle",
}


def _throttle(cls: str) -> str:
    """The stall of a warp waiting for a unit an instruction of class ``cls`` keeps busy:
    shared memory's pipe (MIO), the global/local one (LG), else a math pipe."""
    if cls in ("ld_shared", "st_shared", "atom_shared", "shfl", "redux", "match"):
        return "mio throttle"
    if cls in ("ld_global", "st_global", "ld_local", "st_local", "atom_global", "cp_async", "ld_const",
               "ld_const_indexed", "ld_param"):
        return "lg throttle"
    return "math pipe throttle"


class TimingError(HypaError):
    """The estimate cannot be made (unknown architecture, a launch that cannot run ...)."""


# ---------------------------------------------------------------------------
# Architecture descriptions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InstrClass:
    """One instruction class of an architecture (see ``[classes]`` in the arch files)."""

    name: str
    unit: str  # "" for none
    latency: float | str  # clocks, or a memory level: shared, l1, l2, global, const
    issue: int = 1
    occupancy: float = 1.0
    blocking: bool = False


@dataclass
class Arch:
    name: str
    description: str
    sm_count: int
    clock_mhz: float
    warp_size: int
    sub_partitions: int
    issue_per_cycle: float
    fetch_per_cycle: float
    launch_overhead_us: float
    cta_launch_cycles: float
    pair_window: int
    occupancy: dict[str, int]
    units: dict[str, float]
    tensor: dict[str, float]
    memory: dict[str, float]
    classes: dict[str, InstrClass]
    source: str = ""
    #: shared-memory carve-outs the L1/shared storage can be split at (KB), ascending
    carveouts_kb: tuple[float, ...] = ()
    #: share of the smaller bounds (SM, L2, DRAM) added to the largest (0: perfect overlap)
    bound_overlap: float = 0.0
    #: clocks between two CTAs the block scheduler starts on one SM (a bound, not a sum)
    cta_dispatch_cycles: float = 0.0
    #: share of an SM round's second-largest bound (latency, issue, a unit) added to the largest
    sm_overlap: float = 0.0

    def unit_occupancy(self, unit: str) -> float:
        """Clocks one warp-instruction keeps ``unit`` of a sub-partition busy."""
        lanes = self.units.get(unit)
        if not lanes:
            return 0.0
        return self.warp_size / (lanes / self.sub_partitions)

    def level_latency(self, level: str, footprint: float | None = None, reuse_hit: float = 0.0) -> float:
        m = self.memory
        if level == "shared":
            return m["shared_latency"]
        if level == "l1":
            return m["l1_latency"]
        if level == "l2":
            return m["l2_latency"]
        if level == "const":
            return m["const_latency"]
        if level == "global":
            # a simple hit model: re-read bytes hit L1 (``reuse_hit``, at least the file's
            # l1_hit_rate); first touches hit L2 when the kernel's data fit in it (timed
            # launches repeat, so L2 is warm), else go to DRAM
            below = m["l2_latency"] if footprint is not None and footprint <= m["l2_bytes"] else m["dram_latency"]
            h = max(m.get("l1_hit_rate", 0.0), reuse_hit)
            return h * m["l1_latency"] + (1 - h) * below
        raise TimingError(f"arch {self.name}: unknown memory level '{level}'")


_ARCH_CACHE: dict[str, Arch] = {}


def available_archs() -> list[str]:
    return sorted(p.stem for p in ARCH_DIR.glob("*.toml"))


def load_arch(name: str | Arch = DEFAULT_ARCH) -> Arch:
    """An architecture by name (``sm_90``, ``h100``, ``sm_80``, ``a100`` ...) or TOML path."""
    if isinstance(name, Arch):
        return name
    key = str(name)
    if key in _ARCH_CACHE:
        return _ARCH_CACHE[key]
    path = Path(key)
    if not (path.suffix == ".toml" and path.is_file()):
        path = ARCH_DIR / f"{key.lower()}.toml"
        if not path.is_file():
            for p in ARCH_DIR.glob("*.toml"):
                with open(p, "rb") as f:
                    data = tomllib.load(f)
                if key.lower() in [a.lower() for a in data.get("aliases", [])]:
                    path = p
                    break
            else:
                raise TimingError(f"unknown architecture '{name}' (known: {', '.join(available_archs())}, or a .toml file)")
    arch = _check_arch(_arch_from_dict(_arch_data(path), str(path)))
    _ARCH_CACHE[key] = arch
    return arch


def _arch_data(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """An architecture file's tables; a file with ``extends = "NAME"`` is that architecture
    (a name in ARCH_DIR) with its own keys put over it, table by table (the H200 is the
    H100's SM with other memory)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise TimingError(f"{path}: {e}") from None
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    base_path = ARCH_DIR / f"{str(base_name).lower()}.toml"
    if not isinstance(base_name, str) or not base_path.is_file():
        raise TimingError(f"{path}: extends '{base_name}', which is not an architecture of {ARCH_DIR}")
    if base_path.resolve() in seen:
        raise TimingError(f"{path}: extends '{base_name}', which extends it back")
    merged = _arch_data(base_path, seen + (path.resolve(),))
    merged.pop("aliases", None)  # the base's names are not this architecture's
    for k, v in data.items():
        merged[k] = {**merged[k], **v} if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
    return merged


def arch_argument(text: str) -> str:
    """argparse ``type=`` for an architecture option: the name, checked."""
    import argparse

    try:
        load_arch(text)
    except TimingError as e:
        raise argparse.ArgumentTypeError(
            f"{e} (write --estimate-time=ARCH with '=', or put the option after the input file)") from None
    return text


def _arch_from_dict(d: dict[str, Any], source: str) -> Arch:
    try:
        core = d["core"]
        classes = {}
        for cname, c in d["classes"].items():
            classes[cname] = InstrClass(cname, c.get("unit", ""), c["latency"], int(c.get("issue", 1)),
                                        float(c.get("occupancy", 1.0)), bool(c.get("blocking", False)))
        return Arch(
            name=d["name"],
            description=d.get("description", d["name"]),
            sm_count=int(core["sm_count"]),
            clock_mhz=float(core["clock_mhz"]),
            warp_size=int(core.get("warp_size", 32)),
            sub_partitions=int(core["sub_partitions"]),
            issue_per_cycle=float(core.get("issue_per_cycle", 1)),
            fetch_per_cycle=float(core.get("fetch_per_cycle", 1)),
            launch_overhead_us=float(core.get("launch_overhead_us", 0.0)),
            cta_launch_cycles=float(core.get("cta_launch_cycles", 0.0)),
            pair_window=int(core.get("pair_window", 64)),
            occupancy={k: int(v) for k, v in d["occupancy"].items()},
            units={k: float(v) for k, v in d["units"].items()},
            tensor={k: float(v) for k, v in d.get("tensor", {}).items()},
            memory={k: float(v) for k, v in d["memory"].items()},
            classes=classes,
            source=source,
            carveouts_kb=tuple(sorted(float(x) for x in core.get("carveouts_kb", []))),
            bound_overlap=float(core.get("bound_overlap", 0.0)),
            sm_overlap=float(core.get("sm_overlap", 0.0)),
            cta_dispatch_cycles=float(core.get("cta_dispatch_cycles", 0.0)),
        )
    except KeyError as e:
        raise TimingError(f"{source}: missing key {e}") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as e:  # a value of the wrong kind
        raise TimingError(f"{source}: {e}") from None


#: what the model reads from an architecture file's [memory] and [occupancy] tables
_MEMORY_KEYS = ("shared_latency", "l1_latency", "l2_latency", "const_latency", "dram_latency", "l2_bytes",
                "dram_gbs", "l2_bytes_per_clk", "lsu_bytes_per_clk", "l1_shared_bytes", "l2_effective_bytes")
_MEMORY_DIVISORS = ("l2_bytes", "dram_gbs", "l2_bytes_per_clk", "lsu_bytes_per_clk")
#: optional memory figures, positive where given (the model divides by them or scales by them)
_OPTIONAL_MEMORY_DIVISORS = ("dram_efficiency", "local_sector_clk")
_OCCUPANCY_KEYS = ("max_ctas_per_sm", "max_registers_per_thread", "max_threads_per_cta", "max_threads_per_sm",
                   "max_warps_per_sm", "register_alloc_unit", "registers_per_sm", "shared_alloc_unit",
                   "shared_per_cta_max", "shared_per_sm")


def _check_arch(a: "Arch") -> "Arch":
    """Values the model divides by or adds must make sense: an arch file with a zero clock or a
    negative overhead is an error, not an infinite or negative time."""
    def bad(what: str, v) -> TimingError:
        return TimingError(f"{a.source}: {what} must be {'positive' if 'overhead' not in what else 'zero or more'}, not {v}")

    import math

    for what, v in (("core.sm_count", a.sm_count), ("core.clock_mhz", a.clock_mhz), ("core.warp_size", a.warp_size),
                    ("core.sub_partitions", a.sub_partitions), ("core.issue_per_cycle", a.issue_per_cycle),
                    ("core.fetch_per_cycle", a.fetch_per_cycle), ("core.pair_window", a.pair_window)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise bad(what, v)
    for what, v in (("core.launch_overhead_us", a.launch_overhead_us), ("core.cta_launch_cycles", a.cta_launch_cycles),
                    ("core.cta_dispatch_cycles", a.cta_dispatch_cycles)):
        if not (math.isfinite(v) and v >= 0):
            raise bad(what, v)
    for what, v in (("core.bound_overlap", a.bound_overlap), ("core.sm_overlap", a.sm_overlap)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 1):  # a share
            raise TimingError(f"{a.source}: {what} must be a share from 0 to 1, not {v}")
    for group, values in (("occupancy", a.occupancy), ("units", a.units), ("memory", a.memory), ("tensor", a.tensor)):
        for k, v in values.items():
            if not (math.isfinite(v) and v >= 0):
                raise TimingError(f"{a.source}: {group}.{k} must be zero or more, not {v}")
    for group, values, keys in (("memory", a.memory, _MEMORY_KEYS), ("occupancy", a.occupancy, _OCCUPANCY_KEYS)):
        missing = sorted(k for k in keys if k not in values)
        if missing:
            raise TimingError(f"{a.source}: [{group}] lacks {', '.join(missing)}")
    for group, values, keys in (("memory", a.memory, _MEMORY_DIVISORS), ("occupancy", a.occupancy, _OCCUPANCY_KEYS),
                                ("memory", a.memory, [k for k in _OPTIONAL_MEMORY_DIVISORS if k in a.memory])):
        for k in keys:
            if not values[k] > 0:
                raise TimingError(f"{a.source}: {group}.{k} must be positive, not {values[k]}")
    if "misc" not in a.classes:
        raise TimingError(f"{a.source}: [classes] lacks misc (the class of instructions no other class names)")
    for c in a.classes.values():
        if not isinstance(c.unit, str):
            raise TimingError(f"{a.source}: classes.{c.name}.unit must be the name of a unit, not {c.unit!r}")
        if isinstance(c.latency, bool) or not isinstance(c.latency, (int, float, str)):
            raise TimingError(f"{a.source}: classes.{c.name}.latency must be cycles or a memory level, not {c.latency!r}")
        if isinstance(c.latency, str):
            if c.latency not in ("shared", "l1", "l2", "global", "const"):
                raise TimingError(f"{a.source}: classes.{c.name}.latency: unknown memory level '{c.latency}'")
        elif not (math.isfinite(float(c.latency)) and c.latency >= 0):
            raise TimingError(f"{a.source}: classes.{c.name}.latency must be zero or more, not {c.latency}")
        if c.issue < 1 or not (math.isfinite(c.occupancy) and c.occupancy >= 0):
            raise TimingError(f"{a.source}: classes.{c.name}: issue must be 1 or more and occupancy zero or more")
    return a


# ---------------------------------------------------------------------------
# Instructions -> classes
# ---------------------------------------------------------------------------

_64 = {".u64", ".s64", ".b64"}


def classify(op: InstructionOp) -> str:
    """The timing class of a PTX statement (a key of an arch file's ``[classes]``): the
    ISA table's timing family (``Instr.timing``) and kind, refined by the modifiers."""
    spec = op.spec
    name, kind, family = spec.name, spec.kind, spec.timing
    mods = op.modifiers
    types = isa.type_modifiers(mods)
    if kind in ("control", "call"):
        return "branch"
    if kind == "sync":
        if spec.sync == "barrier":
            return "bar_arrive" if ".arrive" in mods else "barrier"
        if spec.sync == "fence":
            return "fence"
        if spec.sync == "wait":
            return "async_wait"
        return "misc"
    if kind == "matrix":
        if family in ("tensor", "shfl"):
            return family
        if spec.transfer:
            return _mem_class(op, spec.transfer == "load")
        return "misc"
    if kind in ("mem", "texture"):
        if family in ("cp_async", "prefetch"):
            return family
        if spec.transfer:
            return _mem_class(op, spec.transfer == "load")
        return "misc"
    if kind == "atomic":
        sp = isa.state_space(spec, mods)
        return "atom_shared" if sp == "shared" else "atom_global"
    if kind == "warp":
        return family or "vote"
    if kind == "sfu":
        if any(t in isa.FP64_TYPES for t in types) and ".approx" not in mods:
            return "fp64_div"
        if ".rn" in mods or ".rz" in mods or ".rm" in mods or ".rp" in mods:
            return "fp64_div" if any(t in isa.FP64_TYPES for t in types) else "fp32_div"
        return "sfu"
    if kind == "arith":
        if family == "div":
            if any(t in isa.FP64_TYPES for t in types):
                return "fp64_div"
            if any(t in isa.FP32_TYPES for t in types):
                return "fp32_div" if ".rn" in mods or not ({".approx", ".full"} & set(mods)) else "sfu"
            return "int_div64" if any(t in _64 for t in types) else "int_div"
        cat = isa.category(spec, mods)
        if cat in ("fp32", "fp64", "fp16"):
            return cat
        wide64 = any(t in _64 for t in types)
        if family == "int_mul":
            return "int64_mul" if wide64 and ".wide" not in mods else "int_mul"
        return "int64" if wide64 and family != "int_compare" else "int"
    if kind == "logic":
        if family == "int_slow":
            return "int_slow"
        return "int64" if any(t in _64 for t in types) and family == "int_bitwise" else "int"
    if kind == "convert":
        if name == "cvt" and len(types) >= 2:
            d, s = types[0], types[1]
            fl = isa.FLOAT_TYPES
            if d in fl or s in fl:
                if d == s and d in isa.FP32_TYPES:
                    return "fp32"  # cvt.rni.f32.f32: rounding on the FMA pipe
                return "convert"
        return "int"
    if kind == "move":
        if name == "mov" and any(a[0] == "sreg" for a in op.operands_ast):
            return "sreg"
        if name == "mov":
            return "move"
        return "int"
    return "misc"


def _mem_class(op: InstructionOp, load: bool) -> str:
    sp = isa.state_space(op.spec, op.modifiers)
    if op.spec.kind == "texture" or sp in ("global", "generic", None):
        return "ld_global" if load else "st_global"
    if sp == "shared":
        return "ld_shared" if load else "st_shared"
    if sp == "local":
        return "ld_local" if load else "st_local"
    if sp == "const":
        if load and _register_addressed(op):
            return "ld_const_indexed"  # an LDC, not an operand of the constant bank
        return "ld_const" if load else "st_global"
    if sp == "param":
        return "ld_param" if load else "st_local"
    return "ld_global" if load else "st_global"


def _register_addressed(op: InstructionOp) -> bool:
    """Whether a memory instruction's address is a register (``[%rd5]``, ``[%r3+8]``), not a
    symbol or an immediate: ptxas folds a constant-bank load at a fixed address into its
    users' operands, and loads one indexed by a register with an instruction of its own (LDC)."""
    return any(node[0] == "addr" and node[1][0] == "reg" for node in op.operands_ast)


def access_bytes(op: InstructionOp) -> int:
    """Bytes one lane moves (type size x vector width)."""
    mods = op.modifiers
    types = isa.type_modifiers(mods)
    bits = isa.TYPE_BITS.get(types[0], 32) if types else 32
    vec = 1
    for m in mods:
        if m in (".v2", ".v4", ".v8"):
            vec = int(m[2:])
    if op.spec.lanes == "cross" and op.spec.transfer:  # warp-wide matrix fragments: 16 bytes a lane
        return 16
    return max(1, bits // 8) * vec


def tensor_fmas(op: InstructionOp) -> tuple[int, str]:
    """FMAs one warp-instruction of a matrix op performs, and its rate key."""
    m = n = k = 16
    for mod in op.modifiers:
        if mod.startswith(".m") and "n" in mod and "k" in mod:
            try:
                mm, rest = mod[2:].split("n", 1)
                nn, kk = rest.split("k", 1)
                m, n, k = int(mm), int(nn), int(kk)
            except ValueError:
                pass
    types = isa.type_modifiers(op.modifiers)
    rate = "f16"
    if any(t == ".tf32" for t in types):
        rate = "tf32"
    elif any(t == ".f64" for t in types) and not any(t in (".f16", ".bf16") for t in types):
        rate = "f64"
    elif any(t in (".s8", ".u8", ".s4", ".u4", ".b1", ".e4m3", ".e5m2") for t in types):
        rate = "i8"
    fmas = m * n * k
    if op.spec.name == "wgmma.mma_async":
        fmas //= 4  # a warpgroup instruction: each of its 4 warps carries a quarter
    return fmas, rate


# ---------------------------------------------------------------------------
# The pipeline execution graph of one instruction sequence
# ---------------------------------------------------------------------------


#: timing classes ptxas hoists (``KernelTiming.issue_order``) and those they may not pass
_HOISTED = frozenset({"ld_global", "ld_shared", "ld_local", "ld_const", "ld_const_indexed", "ld_param"})
#: iterations ptxas puts in one trip of a single-block loop whose trip count it does not know
#: (four, the remainder run apart: ``cuobjdump -sass`` of llm.c's layernorm_forward_kernel3,
#: whose PTX loop of one load and one add becomes four LDGs, then four FADDs)
UNROLL = 4
#: how far a load moves down per load it waits for (less than one position: ``_issue_positions``)
_DEPTH_STEP = 1e-3
#: the longest such loop body (PTX instructions) the estimate unrolls
UNROLL_MAX_BODY = 48
#: what keeps a loop as it is: global stores and atomics (the same kernel's loop that loads,
#: then stores, stays one iteration a trip), barriers, fences, calls and other ``misc`` work,
#: warp-wide and asynchronous operations
_NOT_UNROLLED = frozenset({"st_global", "st_local", "atom_global", "atom_shared", "barrier", "bar_arrive", "fence",
                           "misc", "shfl", "vote", "redux", "match", "async_wait", "cp_async", "tensor"})
#: what ptxas predicates instead of branching around it (if-conversion): a hammock -- the
#: blocks between a conditional branch and the block both its paths reach first -- of at most
#: this many instructions besides branches, and of at most ``IF_CONVERT_MAX_LOADS`` where it
#: loads (hiding a load's latency pays for more predicated instructions).  ``nvdisasm`` of
#: ptxas (CUDA 13, sm_90) on a loop's side block of k dependent FMAs: predicated up to 7, a
#: branch from 8; of a load and k - 1 FMAs: predicated up to 18, a branch from 19
#: (tests/unit/test_timing.py, test_ptxas_if_conversion_thresholds); nested branches
#: (pnpoly's ``if (a && b)``) are predicated alike where the middle block's values die at the
#: join (``_passes_own_values``; HeCBench pnpoly_opt: 16 such hammocks a trip, no branch in
#: its SASS loop), not behind an if/else (chi2's else-if chain keeps its outer branch)
IF_CONVERT_MAX = 7
IF_CONVERT_MAX_LOADS = 18
#: loads a region issues ahead of their uses at most: ptxas's batches in the SASS of
#: quasirandomGenerator (31 predicated LDCs, 8 at a time) and ge-spmm (8 LDGs a trip)
IF_CONVERT_LOADS = 8
_BATCHED_LOADS = _HOISTED - {"ld_param"}  # (parameter loads are constant-bank operands)
#: what a side block may not hold to be predicated: what keeps a loop from unrolling, stores
#: excepted (ptxas predicates them)
_NOT_IF_CONVERTED = _NOT_UNROLLED - {"st_global", "st_local"}
_ORDERING = frozenset({"st_global", "st_shared", "st_local", "atom_global", "atom_shared", "barrier",
                       "bar_arrive", "fence", "async_wait", "cp_async", "branch", "misc"})
#: the stores and atomics a load of a state space may pass: those of a space it cannot alias
#: (a ``.global``/``.const``/``.param`` load and shared memory; a ``.shared`` load and global
#: memory -- generic accesses may be either and pass nothing)
_DISJOINT = {"global": frozenset({"st_shared", "atom_shared"}), "const": frozenset({"st_shared", "atom_shared", "st_global", "atom_global", "st_local"}),
             "param": frozenset({"st_shared", "atom_shared", "st_global", "atom_global"}),
             "shared": frozenset({"st_global", "atom_global", "st_local"})}


@dataclass
class TimedInstr:
    """What the pipeline graph needs to know about one instruction."""

    cls: str
    unit: str
    latency: float
    issue: int
    occ: float  # clocks the unit stays busy
    blocking: bool
    branch: bool
    srcs: list[int] = field(default_factory=list)  # graph indices of producers
    ready: float = 0.0  # operands from outside the graph are ready this long after the start


@dataclass
class GraphSolution:
    times: list[float]  # per node (instruction * 5 + stage); the sentinel instruction is last
    end: float  # clocks until the instruction after the sequence can issue (minus the fixed fetch->issue)
    iterations: int
    #: per node, its static in-edges (node, weight, what a wait on the edge is charged to:
    #: (instruction, reason) or None); the resource edges of the final schedule
    edges: list[list[tuple[int, float, tuple[int, str] | None]]] = field(default_factory=list, repr=False)
    resource: dict[int, tuple[int, float]] = field(default_factory=dict, repr=False)
    instrs: list["TimedInstr"] = field(default_factory=list, repr=False)

    def stage(self, i: int, s: int) -> float:
        return self.times[NS * i + s]

    def charges(self) -> list[dict[str, float]]:
        """The sequence's clocks charged to its instructions: the critical path from the start
        to the issue of the instruction after the sequence, walked back edge by edge; each
        edge's clocks go to the instruction that caused them (a latency to its producer, a busy
        unit to the instruction that kept it busy, a fetch redirect to the branch), with the
        reason a warp waiting there shows, in Nsight Compute's words (``STALL_OF_CLASS``).
        The charges add up to the sequence's clocks (``end`` + 1).  Computed once per solution."""
        cached = self.__dict__.get("_charges")
        if cached is not None:
            return cached
        self.__dict__["_charges"] = out = self._walk()
        return out

    def _walk(self) -> list[dict[str, float]]:
        n = len(self.instrs)
        out: list[dict[str, float]] = [defaultdict(float) for _ in range(n)]
        t = self.times
        v = NS * n + I
        while v >= 0 and t[v] > 0:
            best = None
            r = self.resource.get(v)
            if r is not None and abs(t[r[0]] + r[1] - t[v]) < 1e-9:
                a = r[0] // NS
                best = (r[0], r[1], (a, _throttle(self.instrs[a].cls)))
            for p, w, who in self.edges[v]:
                if abs(t[p] + w - t[v]) < 1e-9 and (best is None or w > best[1]):
                    best = (p, w, who)
            if best is None:  # the node's own floor: an operand from another block
                i = min(v // NS, n - 1)
                if n:
                    out[i]["wait"] += t[v]
                break
            p, w, who = best
            if w > 0 and who is not None and n:
                out[min(who[0], n - 1)][who[1]] += w
            v = p
        return [dict(x) for x in out]


def solve_pipeline(instrs: list[TimedInstr], arch: Arch, max_iter: int = 100) -> GraphSolution:
    """Gerum et al.'s Algorithm 1 on the pipeline graph of ``instrs`` (one warp).

    Nodes are (instruction, stage) for the five stages; a sentinel
    instruction after the last one measures when the sequence lets the next
    instruction issue.  Static edges are built once; resource edges chain the
    users of every unit in the order of their current execute times and are
    rebuilt every iteration; node times are relaxed (in index order, which is
    topological for the static edges) until no time changes.
    """
    n = len(instrs)
    N = NS * (n + 1)
    preds: list[list[tuple[int, float]]] = [[] for _ in range(N)]
    base = [0.0] * N
    fetch_gap = 1.0 / arch.fetch_per_cycle
    issue_gap = 1.0 / arch.issue_per_cycle
    users: dict[str, list[int]] = defaultdict(list)
    # what a wait on each edge is charged to (``GraphSolution.charges``), beside ``preds``
    who: list[list[tuple[int, str] | None]] = [[] for _ in range(N)]

    def edge(v: int, p: int, w: float, charge: tuple[int, str] | None) -> None:
        preds[v].append((p, w))
        who[v].append(charge)

    last_blocking = -1
    for i in range(n + 1):
        x = NS * i
        mine = (i, "selected")
        edge(x + I, x + F, 1.0, mine)  # fetch/decode
        edge(x + O, x + I, 1.0, mine)  # dispatch
        edge(x + E, x + O, 1.0, mine)  # operand collect (register read)
        if i > 0:
            p = NS * (i - 1)
            prev = instrs[i - 1]
            edge(x + F, p + F, fetch_gap, (i, "no instruction"))  # fetch bandwidth
            edge(x + F, p + I, 0.0, None)  # the fetch buffer holds one instruction
            edge(x + I, p + I, prev.issue * issue_gap, (i - 1, "selected"))  # issue bandwidth (SASS expansion)
            edge(x + I, p + O, 0.0, None)  # in order: issue after the previous left issue
            edge(x + O, p + E, 0.0, None)  # in order: dispatch after the previous was dispatched
            if prev.branch:
                edge(x + F, p + E, prev.latency, (i - 1, "branch resolving"))  # fetch redirect after the branch resolves
            if last_blocking >= 0 and last_blocking == i - 1:
                # the warp issues again ``latency`` clocks after the blocking instruction issued
                edge(x + I, NS * last_blocking + W, 0.0, None)
        if i == n:
            break
        ins = instrs[i]
        edge(x + W, x + E, max(0.0, ins.latency - 2), (i, STALL_OF_CLASS.get(ins.cls, "wait")))
        for s in ins.srcs:
            edge(x + O, NS * s + W, 1.0, (i, "selected"))  # RAW: read after the producer's write-back
        # an operand from outside: ready ``ready`` clocks after the first issue (clock 1)
        base[x + O] = ins.ready + 1.0 if ins.ready > 0 else 0.0
        if ins.unit and ins.occ > 0:
            users[ins.unit].append(i)
        if ins.blocking:
            last_blocking = i
    occ = [ins.occ for ins in instrs]
    t = [0.0] * N
    it = 0
    while it < max_iter:
        it += 1
        # resource edges from the current schedule: each user of a unit starts
        # after the previous user (by execute time, then program order) frees it
        rpred: dict[int, tuple[int, float]] = {}
        for us in users.values():
            if len(us) < 2:
                continue
            order = sorted(us, key=lambda k: (t[NS * k + E], k))
            for a, b in zip(order, order[1:]):
                rpred[NS * b + E] = (NS * a + E, occ[a])
        changed = False
        for v in range(N):
            best = base[v]
            for p, w in preds[v]:
                c = t[p] + w
                if c > best:
                    best = c
            r = rpred.get(v)
            if r is not None:
                c = t[r[0]] + r[1]
                if c > best:
                    best = c
            if best != t[v]:
                t[v] = best
                changed = True
        if not changed:
            break
    end = t[NS * n + I] - 1.0
    edges = [[(p, w, c) for (p, w), c in zip(preds[v], who[v])] for v in range(N)]
    return GraphSolution(t, max(0.0, end), it, edges, rpred, instrs)


# ---------------------------------------------------------------------------
# Per-block timing of a kernel
# ---------------------------------------------------------------------------


@dataclass
class BlockCost:
    """Timing of one basic block (program block index ``index``)."""

    index: int
    name: str
    instructions: int
    latency: float  # stand-alone, one warp
    issue_slots: int
    unit_cycles: dict[str, float]
    warp_executions: int = 0
    cycles: float = 0.0  # all warps, with overlaps
    pair_costs: dict[int, float] = field(default_factory=dict)  # predecessor -> cost(B | pred)

    def as_dict(self) -> dict:
        return {
            "block": self.name, "index": self.index, "instructions": self.instructions,
            "latency": self.latency, "issue_slots": self.issue_slots,
            "warp_executions": self.warp_executions,
            "cycles_per_execution": self.cycles / self.warp_executions if self.warp_executions else 0.0,
            "cycles": self.cycles,
            "pair_costs": {str(k): v for k, v in sorted(self.pair_costs.items())},
        }


def _no_unroll(block: Block) -> bool:
    """Whether the loop's block says ``.pragma "nounroll";`` (the PTX ISA's loop pragma: NVVM
    marks the remainder loop of a loop it has unrolled itself so, and ptxas leaves it)."""
    return any(isinstance(op, RawDirectiveOp) and op.directive.data == ".pragma" and "nounroll" in op.text.data
               for op in block.ops)


def _constant_step(body: list[InstructionOp]) -> bool:
    """Whether a single-block loop's exit test compares a counter the body steps by a constant
    (``add.s32 %r, %r, 32`` of the value the loop carries): the loops ptxas unrolls -- not a
    binary search's ``min + 1``.  With a stride held in a register
    (llm.c's matmul_backward_bias_kernel4, ``add.s32 %r49, %r49, %r6``) it keeps one
    iteration a trip -- the trip count would take a division."""
    inside = set(body)
    term = body[-1] if body else None
    if term is None or term.guard_pred is None or not term.instruction_operands():
        return False
    test = term.instruction_operands()[0].owner
    if not isinstance(test, InstructionOp) or test not in inside or test.spec.name != "setp":
        return False
    for v in test.instruction_operands():
        step = v.owner
        if (isinstance(step, InstructionOp) and step in inside and step.spec.name in ("add", "sub")
                and any(a[0] == "imm" for a in step.operands_ast)
                and any(isinstance(x, BlockArgument) and x.block is step.parent for x in step.instruction_operands())):
            return True  # an induction variable: the loop's own value, stepped by a constant
    return False


class KernelTiming:
    """Pipeline-graph timing of every block and CFG edge of a prepared kernel."""

    def __init__(self, prog: KernelProgram, arch: Arch | str = DEFAULT_ARCH, footprint: float | None = None,
                 mem_occupancy: dict[InstructionOp, float] | None = None, reuse_hit: float = 0.0,
                 mem_latency: dict[InstructionOp, float] | None = None, block_execs: list[float] | None = None):
        prog.materialize()  # the issue order follows SSA values
        self.prog = prog
        #: latencies of global loads from the cache model (where they were traced)
        self.mem_latency = mem_latency or {}
        self.arch = load_arch(arch)
        self.footprint = footprint
        self.reuse_hit = reuse_hit
        self.mem_occupancy = mem_occupancy or {}
        self._info: dict[InstructionOp, TimedInstr] = {}
        self._pos: dict[InstructionOp, tuple[int, int]] = {}
        self._suffix: list[list[int]] = []
        #: each block's instructions in the order the warp issues them (``issue_order``)
        self.order = [self.issue_order(ops) for ops in prog.block_instrs]
        for bi, ops in enumerate(self.order):
            for k, op in enumerate(ops):
                self._pos[op] = (bi, k)
        for bi, ops in enumerate(self.order):
            suf = [0] * (len(ops) + 1)
            for k in range(len(ops) - 1, -1, -1):
                suf[k] = suf[k + 1] + self.timed(ops[k]).issue
            self._suffix.append(suf)
        self._ext: dict[SSAValue, float] = {}
        self._alone: dict[int, GraphSolution] = {}
        self._tail_end: dict[int, float] = {}
        self._pairs: dict[tuple[int, int], float] = {}
        self._innermost: dict[int, frozenset[int]] | None = None
        #: if-converted regions (``regions``): a member block -> its region's head, and each
        #: head's instructions as ptxas schedules the region (one straight-line block)
        self._region_of: dict[int, int] = {}
        self._region_ops: dict[int, list[InstructionOp]] = {}
        self._region_via: dict[int, dict[Block, Block]] = {}
        self._regions: dict[int, list[int]] | None = None
        self._ipdom: list[int] | None = None
        #: warp executions of each block (the launch's counts): how often a predicated side
        #: block's guard holds, so its loads are waited for that often (``_weigh_sides``)
        self.block_execs = block_execs
        self._side_weight: dict[InstructionOp, float] = {}
        self._region_alone: dict[int, float] = {}

    # -- instructions --------------------------------------------------------------

    def timed(self, op: InstructionOp) -> TimedInstr:
        """The class facts of one instruction (cached; sources filled per graph)."""
        ti = self._info.get(op)
        if ti is not None:
            return ti
        arch = self.arch
        cname = classify(op)
        c = arch.classes.get(cname) or arch.classes["misc"]
        lat = c.latency
        latency = float(arch.level_latency(lat, self.footprint, self.reuse_hit)) if isinstance(lat, str) else float(lat)
        if op in self.mem_latency and cname in ("ld_global", "atom_global"):
            latency = self.mem_latency[op]
        unit = c.unit
        occ = arch.unit_occupancy(unit) * c.occupancy if unit else 0.0
        if cname == "tensor":
            fmas, rate = tensor_fmas(op)
            per_smsp = arch.tensor.get(rate, arch.tensor.get("f16", 1024.0)) / arch.sub_partitions
            occ = fmas / per_smsp * c.occupancy
        elif unit == "lsu" and cname not in ("shfl", "redux", "match"):
            per_smsp = arch.memory["lsu_bytes_per_clk"] / arch.sub_partitions
            measured = self.mem_occupancy.get(op)
            if measured is not None:
                occ = measured * c.occupancy
            else:
                # coalesced: the warp's bytes through the sub-partition's share of L1
                occ = max(1.0, arch.warp_size * access_bytes(op) / per_smsp) * c.occupancy
        ti = TimedInstr(cname, unit, latency, c.issue, occ, c.blocking, op.spec.terminator and op.spec.kind in ("control",))
        self._info[op] = ti
        return ti

    def issue_order(self, ops: list[InstructionOp]) -> list[InstructionOp]:
        """A block's instructions as ptxas schedules them, to the extent that decides
        latency: every load moves up to just after the last instruction it depends on (its
        operands' producers, or a store, atomic, barrier, fence or call it may not pass: a
        store to another state space it passes, ``_DISJOINT``), and the arithmetic computing
        its address with it, so independent loads issue back to back and their latencies
        overlap; a load that waits for another load's value goes after every load that waits
        for none (level by level, ``_issue_positions``); the rest keep PTX order.  A load
        after a store that may alias stays behind it, as on the GPU."""
        if not any(self.timed(op).cls in _HOISTED for op in ops):
            return list(ops)
        index = {op: i for i, op in enumerate(ops)}

        def producers(i: int) -> list[int]:
            out = []
            for v in ops[i].instruction_operands():
                j = index.get(v.owner)  # type: ignore[arg-type]
                if j is not None and j < i:
                    out.append(j)
            return out

        return [ops[i] for i in self._issue_positions(ops, [producers(i) for i in range(len(ops))])]

    def _waits_for_load(self, op: InstructionOp) -> bool:
        """Whether an operand of ``op`` is a load's value from before the sequence (a load of
        another block, or of the loop's previous trip through a block argument)."""
        for v in op.instruction_operands():
            vals = self._incoming(v) if isinstance(v, BlockArgument) else [v]
            if any(isinstance(x.owner, InstructionOp) and self.timed(x.owner).cls in _HOISTED for x in vals):
                return True
        return False

    def _issue_positions(self, ops: list[InstructionOp], producers: list[list[int]]) -> list[int]:
        """``issue_order``'s rule over positions: ``producers[i]`` are the earlier positions
        instruction ``i`` reads (a sequence may hold an instruction more than once)."""
        # the loads' address arithmetic moves up with them
        feeds = [False] * len(ops)
        for i in range(len(ops) - 1, -1, -1):
            if feeds[i] or self.timed(ops[i]).cls in _HOISTED:
                for j in producers[i]:
                    if self.timed(ops[j]).cls not in _ORDERING:
                        feeds[j] = True
        keys: list[float] = []
        # loads between an instruction and the block's start along its operands: a load
        # waiting for another goes after every load that waits for none (ptxas's list
        # scheduler issues the independent loads of unrolled chains first)
        depth = [0] * len(ops)
        fences: dict[str, float] = {}  # the last ordering instruction's key, per class
        for i, op in enumerate(ops):
            cls = self.timed(op).cls
            after = max((keys[j] for j in producers[i]), default=-1.0)
            depth[i] = max((depth[j] + (self.timed(ops[j]).cls in _HOISTED) for j in producers[i]),
                           default=0)
            if (cls in _HOISTED or feeds[i]) and not depth[i] and self._waits_for_load(op):
                depth[i] = 1
            if cls in _HOISTED:
                passes = _DISJOINT.get(isa.state_space(op.spec, op.modifiers) or "", frozenset())
                fence = max((k for c, k in fences.items() if c not in passes), default=-1.0)
                k = max(fence, after) + _DEPTH_STEP * depth[i]
            elif feeds[i]:
                k = after + _DEPTH_STEP * depth[i]
            else:
                k = float(i)
                if cls in _ORDERING:
                    fences[cls] = k
            keys.append(k)
        return sorted(range(len(ops)), key=lambda i: (keys[i], i))

    def unrolled(self, bi: int, trips: int = 1) -> list[TimedInstr] | None:
        """``trips`` trips around single-block loop ``bi`` as ptxas compiles it when it does not
        know the trip count: ``UNROLL`` iterations in one body (the back-edge branches of all
        but the last dropped), each trip scheduled as one block (``_issue_positions``), so the
        loads of later iterations issue before the arithmetic of earlier ones where nothing
        orders them -- a reduction's loads in flight four at a time.  None where ptxas keeps
        the loop as it is (a body over ``UNROLL_MAX_BODY`` instructions, or one with a
        barrier, call or warp-wide operation)."""
        body = self.prog.block_instrs[bi]
        block = self.prog.cfg.blocks[bi]
        if (len(body) > UNROLL_MAX_BODY or any(self.timed(op).cls in _NOT_UNROLLED for op in body)
                or not _constant_step(body) or _no_unroll(block)):
            return None
        inner = body[:-1] if body and body[-1].spec.terminator else body
        trip = [op for k in range(UNROLL) for op in (body if k == UNROLL - 1 else inner)]
        ops = trip * trips
        joins: dict[int, Block] = {}
        pos = 0
        for _ in range(trips):
            for k in range(UNROLL):
                if pos:
                    joins[pos] = block
                pos += len(body if k == UNROLL - 1 else inner)
        seq = self.sequence(ops, joins, self._loop_of(bi))
        n = len(trip)
        order: list[int] = []
        for t in range(trips):
            lo = t * n
            local = [[j - lo for j in seq[lo + i].srcs if j >= lo] for i in range(n)]
            order.extend(lo + i for i in self._issue_positions(trip, local))
        new = {old: i for i, old in enumerate(order)}
        return [replace(seq[old], srcs=sorted(new[j] for j in seq[old].srcs)) for old in order]

    def _external_ready(self, v: SSAValue, depth: int = 0) -> float:
        """How long after a block starts a value from another block may still be in flight
        (its producer's latency minus the issue slots after it in its own block; none where an
        instruction of that block after it waited for it: chi2's loaded byte, compared and
        branched on in its block, was waited for again in each side block)."""
        r = self._ext.get(v)
        if r is not None:
            return r
        r = 0.0
        owner = v.owner
        if isinstance(owner, InstructionOp) and owner in self._pos:
            bi, k = self._pos[owner]
            if any(v in op.operands for op in self.order[bi][k + 1:]):
                r = 0.0  # its own block waited for it (a load, its compare, the branch on it)
            else:
                r = max(0.0, self.timed(owner).latency - self._suffix[bi][k + 1])
        elif isinstance(v, BlockArgument) and depth == 0:
            r = max((self._external_ready(x, 1) for x in self._incoming(v)), default=0.0)
        self._ext[v] = r
        return r

    def _incoming(self, arg: BlockArgument, only_from: Block | None = None) -> list[SSAValue]:
        out: list[SSAValue] = []
        blk = arg.block
        cfg = self.prog.cfg
        bi = cfg.index.get(blk)
        if bi is None:
            return out
        for p in cfg.preds[bi]:
            pb = cfg.blocks[p]
            if only_from is not None and pb is not only_from:
                continue
            term = pb.last_op
            if term is None:
                continue
            for k, s in enumerate(term.successors):
                if s is not blk:
                    continue
                vals = list(term.operands) if isinstance(term, FallthroughOp) else (
                    list(term.successor_operands(k)) if isinstance(term, InstructionOp) else [])
                if arg.index < len(vals):
                    out.append(vals[arg.index])
                break
        return out

    def sequence(self, ops: list[InstructionOp], joins: dict[int, Block] | None = None,
                 settled: frozenset[int] | None = None, via: dict[Block, Block] | None = None) -> list[TimedInstr]:
        """Timed instructions of ``ops`` with data edges inside the sequence.

        ``joins`` maps the position where a new block starts to the block before it,
        so block arguments resolve to the value that edge passes.  ``settled``: the blocks of
        the loop the sequence runs in, on a trip after its first -- a value made outside
        them was made before the loop began, and is ready.  ``via``: for an if-converted
        region, whose blocks' instructions interleave, the block each block is entered from."""
        if self._regions is None:
            self.regions()  # (the side blocks' weights)
        where: dict[InstructionOp, list[int]] = defaultdict(list)
        for k, op in enumerate(ops):
            where[op].append(k)  # a self-loop pair (A;A) holds every op twice
        out: list[TimedInstr] = []
        prev_block: Block | None = None
        for k, op in enumerate(ops):
            if joins and k in joins:
                prev_block = joins[k]
            if via is not None and op.parent in via:
                prev_block = via[op.parent]
            base = self.timed(op)
            srcs: list[int] = []
            ready = 0.0
            for v in op.instruction_operands():
                vals = [v]
                if isinstance(v, BlockArgument) and prev_block is not None and v.block is op.parent:
                    inc = self._incoming(v, prev_block)
                    if inc:
                        vals = inc
                for x in vals:
                    owner = x.owner
                    j = None
                    if isinstance(owner, InstructionOp):
                        for cand in reversed(where.get(owner, ())):
                            if cand < k:
                                j = cand
                                break
                    if j is not None:
                        srcs.append(j)
                    elif settled is None or not self._made_outside(x, settled):
                        ready = max(ready, self._external_ready(x))
            latency = base.latency * self._side_weight.get(op, 1.0) if self._side_weight else base.latency
            out.append(TimedInstr(base.cls, base.unit, latency, base.issue, base.occ, base.blocking,
                                  base.branch, sorted(set(srcs)), ready))
        return out

    # -- blocks and pairs --------------------------------------------------------------

    def block_solution(self, bi: int) -> GraphSolution:
        s = self._alone.get(bi)
        if s is None:
            s = self._alone[bi] = solve_pipeline(self.sequence(self.order[bi]), self.arch)
        return s

    def block_latency(self, bi: int) -> float:
        """Clocks one warp spends in block ``bi`` on its own."""
        return self.block_solution(bi).end

    def _made_outside(self, v: SSAValue, blocks: frozenset[int]) -> bool:
        """Whether ``v`` is an instruction's result from a block outside ``blocks``."""
        pos = self._pos.get(v.owner) if isinstance(v.owner, InstructionOp) else None  # type: ignore[arg-type]
        return pos is not None and pos[0] not in blocks

    def _loop_of(self, b: int) -> frozenset[int] | None:
        """The blocks of the innermost natural loop holding block ``b`` (None: no loop)."""
        if self._innermost is None:
            from hypa.passes.dominance import immediate_dominators
            from hypa.passes.loops import find_loops

            cfg = self.prog.cfg
            n = self.prog.num_blocks
            info = find_loops(n, 0, cfg.succs, cfg.preds, immediate_dominators(n, 0, cfg.succs))
            inner: dict[int, frozenset[int]] = {}
            for lp in sorted(info.loops, key=lambda lp: -len(lp.blocks)):  # inner loops last: they win
                for x in lp.blocks:
                    inner[x] = frozenset(lp.blocks)
            self._innermost = inner
        return self._innermost.get(b)

    def regions(self) -> dict[int, list[int]]:
        """The if-converted regions: head block -> its blocks in layout order.  A region is a
        chain of hammocks (``_hammock``), each one's join heading the next, that ptxas turns
        into one straight-line block of predicated instructions, so the side blocks' loads
        issue with the rest instead of each waiting behind its own branch."""
        if self._regions is not None:
            return self._regions
        cfg = self.prog.cfg
        out: dict[int, list[int]] = {}
        self._regions = out
        for head in range(self.prog.num_blocks):
            if head in self._region_of:
                continue
            chain, cur = [head], head
            while True:
                ham = self._hammock(cur)
                if ham is None:
                    break
                inner, j = ham
                if j in chain or j in self._region_of or any(b in self._region_of for b in inner):
                    break
                chain += [*inner, j]
                cur = j
                if self._synchronizes(j):
                    break  # the warps meet there: what follows is a region of its own
            if len(chain) > 1:
                out[head] = chain
                for b in chain:
                    self._region_of[b] = head
                ops: list[InstructionOp] = []
                via: dict[Block, Block] = {}
                placed: list[int] = []
                for k, b in enumerate(chain):
                    body = self.prog.block_instrs[b]
                    if k < len(chain) - 1 and body and body[-1].spec.terminator:
                        body = body[:-1]  # the branch the predication replaces
                    ops.extend(body)
                    if k:  # entered from the last of its predecessors placed before it
                        pred = max((p for p in cfg.preds[b] if p in placed), key=placed.index)
                        via[cfg.blocks[b]] = cfg.blocks[pred]
                    placed.append(b)
                self._region_ops[head] = self._batched_issue_order(ops)
                self._region_via[head] = via
                self._weigh_sides(chain)
        return out

    def _synchronizes(self, b: int) -> bool:
        """Whether block ``b`` holds a barrier (or another operation that waits for other warps)."""
        return any(self.timed(op).cls in ("barrier", "bar_arrive") for op in self.prog.block_instrs[b])

    def _weigh_sides(self, chain: list[int]) -> None:
        """The share of a region's runs in which each of its blocks' guards hold (the launch's
        warp executions of the block over its head's): a predicated-off load neither fetches
        nor holds up its users, so a side block's latencies count that often (HeCBench
        jaccard_is_opt's merge loop: the weight load of ``if (a[i] == b[j])``, rarely true) --
        in a loop without barriers, where each warp goes its own pace."""
        ex = self.block_execs
        if not ex or not ex[chain[0]]:
            return
        loop = self._loop_of(chain[0])
        if loop is None or any(self._synchronizes(b) for b in loop):
            # a barrier makes every warp wait for those whose guard held (the halo loads
            # of cuda-samples' FiniteDifferencesKernel): the latency counts whole
            return
        for b in chain[1:]:
            w = min(1.0, ex[b] / ex[chain[0]])
            if w < 1.0:
                for op in self.prog.block_instrs[b]:
                    self._side_weight[op] = w

    def _hammock(self, x: int) -> tuple[list[int], int] | None:
        """(inner blocks in layout order, join) where block ``x`` ends in a conditional branch
        whose paths meet again at ``x``'s immediate post-dominator, the join, through blocks
        entered from ``x`` alone, without loops, barriers, atomics, calls or warp-wide
        operations, and few enough instructions that ptxas predicates them
        (``IF_CONVERT_MAX``, ``IF_CONVERT_MAX_LOADS``)."""
        cfg = self.prog.cfg
        body = self.prog.block_instrs[x]
        if len(set(cfg.succs[x])) != 2 or not body or body[-1].guard_pred is None or not body[-1].spec.terminator:
            return None
        if self._ipdom is None:
            from hypa.passes.dominance import immediate_post_dominators

            self._ipdom = immediate_post_dominators(self.prog.num_blocks, cfg.succs, cfg.exits)
        j = self._ipdom[x]
        if j < 0 or j <= x:
            return None
        inner: set[int] = set()
        stack = [s for s in cfg.succs[x] if s != j]
        # an if/else whose sides branch again (chi2's ``if (y == 0) ... else if (y == 1) ...``):
        # ptxas predicates the inner branch and keeps the outer one
        diamond = len(stack) == 2
        count = loads = 0
        while stack:
            b = stack.pop()
            if b in inner:
                continue
            # forward edges only (layout order), each block entered from inside
            if b <= x or b >= j or any(p != x and p not in inner and not (x < p < j) for p in cfg.preds[b]):
                return None
            inner.add(b)
            ops = self.prog.block_instrs[b]
            term = ops[-1] if ops and ops[-1].spec.terminator else None
            if term is not None and term.spec.name != "bra":
                return None
            if term is not None and term.guard_pred is not None and (diamond or self._passes_own_values(b, term, j)):
                return None
            for op in ops:
                if op is term:
                    continue
                cls = self.timed(op).cls
                if cls in _NOT_IF_CONVERTED:
                    return None
                count += 1
                loads += cls in _BATCHED_LOADS
            if count > IF_CONVERT_MAX_LOADS:
                return None
            for s in cfg.succs[b]:
                if s <= b:  # a loop (a self-loop, a back edge) is not predicated
                    return None
                if s != j:
                    stack.append(s)
        if not inner or count > (IF_CONVERT_MAX_LOADS if loads else IF_CONVERT_MAX):
            return None
        if any(p != x and p not in inner for p in cfg.preds[j]) or any(
                p != x and p not in inner for b in inner for p in cfg.preds[b]):
            return None
        return sorted(inner), j

    def _passes_own_values(self, b: int, term: InstructionOp, j: int) -> bool:
        """Whether block ``b``'s conditional branch ``term`` takes a value ``b`` made to the
        join ``j``: ptxas then keeps the branch (a middle block whose results live on, as
        ``if (c) { x = f(x); if (x < y) ... }``), where it predicates an ``if (a && b)`` whose
        middle block's values die at the join (pnpoly's)."""
        blk = self.prog.cfg.blocks[b]
        target = self.prog.cfg.blocks[j]
        for k, s in enumerate(term.successors):
            if s is target and any(v.owner.parent is blk for v in term.successor_operands(k)
                                   if isinstance(v.owner, InstructionOp)):
                return True
        return False

    def _batched_issue_order(self, ops: list[InstructionOp]) -> list[InstructionOp]:
        """A region's instructions as ptxas schedules them: ``issue_order`` over batches of at
        most ``IF_CONVERT_LOADS`` loads each (the SASS of cuda-samples' quasirandomGenerator:
        its 31 predicated table loads issue 8 at a time, each batch's XORs after it -- the
        registers the loaded values need bound how far loads run ahead)."""
        out: list[InstructionOp] = []
        batch: list[InstructionOp] = []
        loads = 0
        for op in ops:
            if self.timed(op).cls in _BATCHED_LOADS:
                if loads == IF_CONVERT_LOADS:
                    out.extend(self.issue_order(batch))
                    batch, loads = [], 0
                loads += 1
            batch.append(op)
        out.extend(self.issue_order(batch))
        return out

    def region_head(self, b: int) -> int:
        """The head of the if-converted region holding block ``b`` (``b`` itself outside one)."""
        self.regions()
        return self._region_of.get(b, b)

    def _tail(self, a: int) -> list[InstructionOp]:
        self.regions()
        head = self._region_of.get(a)
        ops = self._region_ops[head] if head is not None else self.order[a]
        return ops[-self.arch.pair_window:] if self.arch.pair_window > 0 else ops

    def pair_cost(self, a: int, b: int) -> float:
        """What block ``b`` adds when it runs right after block ``a``: T(a;b) - T(a).  An
        if-converted region (``regions``) runs as one block: its head costs the whole region,
        the edges inside it nothing."""
        key = (a, b)
        c = self._pairs.get(key)
        if c is not None:
            return c
        self.regions()
        head = self._region_of.get(b)
        if head is not None and head != b and self._region_of.get(a) == head:
            self._pairs[key] = 0.0
            return 0.0
        if a == b:
            one = self.unrolled(b, 1)
            if one is not None:
                # the steady state: what a trip adds after a trip, per iteration
                two = self.unrolled(b, 2)
                c = self._pairs[key] = max(0.0, solve_pipeline(two, self.arch).end
                                           - solve_pipeline(one, self.arch).end) / UNROLL
                return c
        tail = self._tail(a)
        loop = self._loop_of(b)
        settled = loop if loop is not None and a in loop else None  # a trip of b's loop after its first
        if settled is None:
            ta = self._tail_end.get(a)
            if ta is None:
                ta = self._tail_end[a] = solve_pipeline(self.sequence(tail), self.arch).end
        else:
            ta = solve_pipeline(self.sequence(tail, settled=settled), self.arch).end
        if head == b:
            via = dict(self._region_via[b])
            via[self.prog.cfg.blocks[b]] = self.prog.cfg.blocks[a]
            seq = self.sequence(tail + self._region_ops[b], {len(tail): self.prog.cfg.blocks[a]}, settled, via)
            both = solve_pipeline(seq, self.arch).end
        else:
            ops = tail + self.order[b]
            both = solve_pipeline(self.sequence(ops, {len(tail): self.prog.cfg.blocks[a]}, settled), self.arch).end
        c = self._pairs[key] = max(0.0, both - ta)
        return c

    def block_cost(self, bi: int) -> BlockCost:
        ops = self.prog.block_instrs[bi]
        units: dict[str, float] = defaultdict(float)
        slots = 0
        for op in ops:
            ti = self.timed(op)
            slots += ti.issue
            if ti.unit:
                units[ti.unit] += ti.occ
        return BlockCost(bi, self.prog.cfg.name(bi), len(ops), self.alone_latency(bi), slots, dict(units))

    def alone_latency(self, bi: int) -> float:
        """Clocks one warp spends from block ``bi`` on, on its own (entered from no block the
        estimate knows: the kernel's first block, a warp's re-entry): the block's, or for a
        region's head the whole region's, whose other blocks' edges cost nothing."""
        if self.regions().get(bi) is None:
            return self.block_latency(bi)
        lat = self._region_alone.get(bi)
        if lat is None:
            lat = self._region_alone[bi] = solve_pipeline(
                self.sequence(self._region_ops[bi], via=self._region_via[bi]), self.arch).end
        return lat


# ---------------------------------------------------------------------------
# Edge frequencies from block counts
# ---------------------------------------------------------------------------


def edge_frequencies(succs: list[list[int]], preds: list[list[int]], execs: list[float], divergent: list[float],
                     entry: float, exits: set[int]) -> dict[tuple[int, int], float]:
    """Approximate traversal counts of CFG edges from block execution counts.

    Constraints: a block's executions not counted as the kernel entry arrive
    over its in-edges; a block that cannot leave the kernel leaves over its
    out-edges once per execution plus once more per divergent execution (the
    warp runs both sides).  Constraints with one unknown edge fix it; the
    remaining edges are split by iterative proportional fitting.  Exact for
    chains, single-entry loops and if/else without divergence; approximate
    elsewhere (the counters count blocks, not edges).
    """
    nb = len(execs)
    edges = sorted({(a, s) for a in range(nb) for s in succs[a]})
    need_in = [max(0.0, execs[b] - (entry if b == 0 else 0.0)) for b in range(nb)]
    need_out = [execs[a] + divergent[a] if a not in exits else None for a in range(nb)]
    ins: dict[int, list[tuple[int, int]]] = defaultdict(list)
    outs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in edges:
        outs[e[0]].append(e)
        ins[e[1]].append(e)
    f: dict[tuple[int, int], float] = {}
    for e in edges:
        if execs[e[0]] == 0 or execs[e[1]] == 0:
            f[e] = 0.0
    progress = True
    while progress:
        progress = False
        for b in range(nb):
            unk = [e for e in ins[b] if e not in f]
            if len(unk) == 1:
                f[unk[0]] = max(0.0, need_in[b] - sum(f[e] for e in ins[b] if e in f))
                progress = True
        for a in range(nb):
            if need_out[a] is None:
                continue
            unk = [e for e in outs[a] if e not in f]
            if len(unk) == 1:
                f[unk[0]] = max(0.0, need_out[a] - sum(f[e] for e in outs[a] if e in f))  # type: ignore[operator]
                progress = True
    rest = [e for e in edges if e not in f]
    if rest:
        g = {e: max(execs[e[0]], 1e-9) for e in rest}
        for _ in range(200):
            delta = 0.0
            for b in {e[1] for e in rest}:
                mine = [e for e in ins[b] if e in g]
                want = max(0.0, need_in[b] - sum(f[e] for e in ins[b] if e in f))
                tot = sum(g[e] for e in mine)
                if tot > 0:
                    for e in mine:
                        nv = g[e] * want / tot
                        delta = max(delta, abs(nv - g[e]))
                        g[e] = nv
            for a in {e[0] for e in rest}:
                mine = [e for e in outs[a] if e in g]
                cap = (need_out[a] if need_out[a] is not None else execs[a] + divergent[a])
                cap = max(0.0, cap - sum(f[e] for e in outs[a] if e in f))
                tot = sum(g[e] for e in mine)
                if tot > cap and tot > 0:
                    for e in mine:
                        nv = g[e] * cap / tot
                        delta = max(delta, abs(nv - g[e]))
                        g[e] = nv
            if delta < 1e-9:
                break
        f.update(g)
    return f


# ---------------------------------------------------------------------------
# Occupancy
# ---------------------------------------------------------------------------


@dataclass
class Occupancy:
    ctas_per_sm: int
    warps_per_cta: int
    warps_per_sm: int
    limiter: str
    limits: dict[str, int]
    registers: int
    registers_source: str
    shared_bytes: int  # per CTA, as allocated
    fraction: float

    def as_dict(self) -> dict:
        return {
            "ctas_per_sm": self.ctas_per_sm, "warps_per_cta": self.warps_per_cta,
            "warps_per_sm": self.warps_per_sm, "occupancy": self.fraction, "limiter": self.limiter,
            "limits": dict(self.limits), "registers_per_thread": self.registers,
            "registers_source": self.registers_source, "shared_bytes_per_cta": self.shared_bytes,
        }


def _round_up(n: float, unit: int) -> int:
    return int(math.ceil(n / unit) * unit) if unit > 0 else int(n)


def occupancy(arch: Arch | str, threads_per_cta: int, registers: int, shared_bytes: int,
              registers_source: str = "given") -> Occupancy:
    """CTAs resident per SM (the CUDA occupancy calculator's rules).

    ``shared_bytes``: static plus dynamic shared memory of one CTA (the
    per-CTA reservation and the allocation unit are added here)."""
    a = load_arch(arch)
    o = a.occupancy
    if threads_per_cta < 1 or threads_per_cta > o["max_threads_per_cta"]:
        raise TimingError(f"{threads_per_cta} threads per CTA: {a.name} allows 1..{o['max_threads_per_cta']}")
    wpc = -(-threads_per_cta // a.warp_size)
    limits: dict[str, int] = {
        "ctas": o["max_ctas_per_sm"],
        "warps": o["max_warps_per_sm"] // wpc,
        "threads": o["max_threads_per_sm"] // (wpc * a.warp_size),
    }
    regs = max(1, min(int(registers), o["max_registers_per_thread"]))
    regs_per_warp = _round_up(regs * a.warp_size, o["register_alloc_unit"])
    # registers are allocated per sub-partition (cuda_occupancy.h): whole warps per quarter file
    per_part = o["registers_per_sm"] // a.sub_partitions
    warps_by_regs = (per_part // regs_per_warp) * a.sub_partitions
    limits["registers"] = warps_by_regs // wpc
    smem = 0
    if shared_bytes > 0:
        if shared_bytes > o["shared_per_cta_max"]:
            raise TimingError(f"{shared_bytes} bytes of shared memory per CTA: {a.name} allows {o['shared_per_cta_max']}")
        smem = _round_up(shared_bytes + o["shared_reserved_per_cta"], o["shared_alloc_unit"])
        limits["shared"] = o["shared_per_sm"] // smem
    limiter = min(limits, key=lambda k: (limits[k], ["warps", "registers", "shared", "ctas", "threads"].index(k)))
    ctas = limits[limiter]
    if ctas < 1:
        raise TimingError(f"no CTA fits on an SM of {a.name} ({limiter}: {limits})")
    warps = ctas * wpc
    return Occupancy(ctas, wpc, warps, limiter, limits, regs, registers_source, smem, warps / o["max_warps_per_sm"])


def estimate_registers(prog: KernelProgram, arch: Arch | str = DEFAULT_ARCH) -> tuple[int, str]:
    """Registers per thread: ``.maxnreg`` if the kernel caps them (or
    ``.maxntid`` x ``.minnctapersm`` does), else the largest number of 32-bit
    registers live at once in the SSA form plus a small reserve."""
    a = load_arch(arch)
    o = a.occupancy
    cap = o["max_registers_per_thread"]
    how = "SSA liveness"
    txt = prog.func.directive(".maxnreg")
    if txt:
        try:
            cap = min(cap, int(txt.split(",")[0]))
            how = "SSA liveness, capped by .maxnreg"
        except ValueError:
            pass
    maxntid = prog.func.directive(".maxntid") or prog.func.directive(".reqntid")
    minc = prog.func.directive(".minnctapersm")
    if maxntid and minc:
        try:
            nt = 1
            for x in maxntid.split(","):
                nt *= int(x)
            per = o["registers_per_sm"] // (int(minc) * _round_up(nt, a.warp_size))
            per = per // 8 * 8
            if per < cap:
                cap, how = per, "SSA liveness, capped by .maxntid/.minnctapersm"
        except ValueError:
            pass
    live = max_live_registers(prog)
    regs = max(o.get("min_registers", 0), live + o.get("register_reserve", 0))
    return int(min(cap, regs)), how


def _reg_weight(v: SSAValue) -> int:
    bits = value_bits(v)
    if bits == 1:
        return 0  # predicates live in their own file
    return max(1, -(-bits // 32))


def max_live_registers(prog: KernelProgram) -> int:
    """The largest number of 32-bit registers live at one point (SSA liveness,
    ``passes/liveness.py``), scanning each block backwards from its live-out set; once per
    program (every launch of a kernel estimates with it)."""
    known = prog.__dict__.get("_max_live_registers")
    if known is None:
        known = prog.__dict__["_max_live_registers"] = _max_live_registers(prog)
    return known


def _max_live_registers(prog: KernelProgram) -> int:
    prog.materialize()
    liveness = Liveness.of(prog.cfg)
    index = liveness.index
    # the values of each register width as one bit mask: a set's weight is a few popcounts
    by_weight: dict[int, int] = {}
    for i, v in enumerate(liveness.values):
        w = _reg_weight(v)
        if w:
            by_weight[w] = by_weight.get(w, 0) | (1 << i)
    groups = list(by_weight.items())

    def mask(values) -> int:
        m = 0
        for v in values:
            m |= 1 << index[v]
        return m

    def weight(m: int) -> int:
        return sum(w * (m & g).bit_count() for w, g in groups)

    best = 0
    for b, block in enumerate(prog.cfg.blocks):
        live = liveness.live_out_masks[b]
        best = max(best, weight(live))
        for op in reversed(list(block.ops)):
            if not isinstance(op, InstructionOp):
                continue
            r, u = mask(op.results), mask(op.instruction_operands())
            best = max(best, weight(live | r))
            live = (live & ~r) | u
            best = max(best, weight(live))
    return best


# ---------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------


@dataclass
class Estimate:
    kernel: str
    arch: str
    arch_description: str
    cycles: float  # kernel cycles (SM clock), launch overhead excluded
    time_us: float  # cycles / clock + launch overhead
    bound: str
    occupancy: Occupancy
    waves: int
    ctas_per_busiest_sm: int
    clock_mhz: float
    launch_overhead_us: float
    warp: dict[str, Any]  # per (average) warp: latency, issue slots, unit clocks
    components: dict[str, float]  # kernel-level cycles of every bound
    memory: dict[str, Any]
    blocks: list[BlockCost]
    notes: list[str] = field(default_factory=list)
    #: the estimate's cycles split by what decided them (``_shares``): they add up to ``cycles``
    shares: dict[str, float] = field(default_factory=dict)
    #: per PTX instruction (layout order, as ``runtime.report.source_view`` numbers them): its
    #: cycles of the estimate by stall reason (``_instruction_cycles``)
    instructions: list[dict[str, float]] = field(default_factory=list, repr=False)
    #: cycles the shared-memory bank conflicts add (this estimate minus the one with every
    #: shared access conflict-free); 0 without conflicts or without --memory-metrics
    bank_conflict_cycles: float = 0.0

    @property
    def kernel_us(self) -> float:
        """The kernel's own time, launch overhead excluded."""
        return self.cycles / self.clock_mhz

    def as_dict(self) -> dict[str, Any]:
        return {
            "arch": self.arch, "arch_description": self.arch_description,
            "cycles": self.cycles, "time_us": self.time_us, "kernel_us": self.kernel_us, "bound": self.bound,
            "clock_mhz": self.clock_mhz, "launch_overhead_us": self.launch_overhead_us,
            "waves": self.waves, "ctas_per_busiest_sm": self.ctas_per_busiest_sm,
            "occupancy": self.occupancy.as_dict(), "warp": dict(self.warp),
            "components": dict(self.components), "memory": dict(self.memory),
            "blocks": [b.as_dict() for b in self.blocks], "notes": list(self.notes),
            "shares": dict(self.shares), "bank_conflict_cycles": self.bank_conflict_cycles,
        }


def _raw_counts(prog: KernelProgram, counters) -> tuple[list[int], list[int], list[int]]:
    view = CounterView(prog, counters)
    return view.warps, view.threads, view.divergent


def _shares(components: dict[str, float], round_added: dict[str, float], sm_cycles: float,
            a: Arch) -> dict[str, float]:
    """The estimate's cycles split by what decided them: the kernel's bounds as
    ``combine_bounds`` adds them (the largest whole, the others ``bound_overlap`` of
    theirs), the SM's part split further into the SM rounds' bounds as ``sm_round`` adds
    them (``latency``, ``issue``, ``unit:<pipe>``) and ``cta_launch`` (CTA launch clocks
    and unequal CTAs).  The values add up to the estimate's cycles."""
    order = sorted(components, key=lambda k: -components[k])
    out: dict[str, float] = {}
    for k, v in components.items():
        w = v if k == order[0] else a.bound_overlap * v
        if k == "sm":
            added = sum(round_added.values())
            scale = w / max(sm_cycles, added) if sm_cycles > 0 else 0.0
            for k2, v2 in round_added.items():
                out[k2] = out.get(k2, 0.0) + v2 * scale
            out["cta_launch"] = max(0.0, sm_cycles - added) * scale
        else:
            out[k] = out.get(k, 0.0) + w
    return {k: v for k, v in out.items() if v > 0}


_GLOBAL_CLASSES = ("ld_global", "st_global", "atom_global", "cp_async")


def _instruction_cycles(prog: KernelProgram, kt: "KernelTiming", blocks: list[BlockCost], execs, threads,
                        sector_bytes: dict, shares: dict[str, float], unit_total: dict[str, float],
                        issue_total: float, lat_total: float) -> list[dict[str, float]]:
    """Each instruction's cycles of the estimate, by stall reason: the ``latency`` share
    as the blocks' critical paths charge it (``GraphSolution.charges``, each block weighted
    by its cycles), ``issue`` by issue slots, a pipe's share by the clocks each instruction
    keeps it busy, the L2/DRAM bandwidth shares by the global bytes each moves, the atomic
    shares by atomic executions.  Only ``cta_launch`` and ``cta_dispatch`` belong to no
    instruction."""
    index: dict[InstructionOp, int] = {}
    for ops in prog.block_instrs:
        for op in ops:
            index[op] = len(index)
    out: list[dict[str, float]] = [defaultdict(float) for _ in range(len(index))]
    lat = shares.get("latency", 0.0)
    if lat > 0 and lat_total > 0:
        for b, bc in enumerate(blocks):
            if not execs[b] or bc.cycles <= 0:
                continue
            charges = kt.block_solution(b).charges()
            tot = sum(sum(c.values()) for c in charges)
            if tot <= 0:
                continue
            scale = lat * bc.cycles / lat_total / tot
            for op, c in zip(kt.order[b], charges):
                for reason, v in c.items():
                    out[index[op]][reason] += v * scale
    issue = shares.get("issue", 0.0)
    gbytes: dict[int, float] = {}
    atomics: dict[int, float] = {}
    for b, ops in enumerate(prog.block_instrs):
        if not execs[b]:
            continue
        for op in ops:
            ti = kt.timed(op)
            i = index[op]
            if issue > 0 and issue_total > 0:
                out[i]["selected"] += issue * execs[b] * ti.issue / issue_total
            share = shares.get(f"unit:{ti.unit}", 0.0) if ti.unit else 0.0
            if share > 0 and ti.occ > 0 and unit_total.get(ti.unit):
                out[i][_throttle(ti.cls)] += share * execs[b] * ti.occ / unit_total[ti.unit]
            if ti.cls in _GLOBAL_CLASSES:
                gbytes[i] = gbytes.get(i, 0.0) + sector_bytes.get(op, threads[b] * access_bytes(op))
            if ti.cls == "atom_global":
                atomics[i] = atomics.get(i, 0.0) + execs[b]
    for keys, weights, reason in ((("l2_bandwidth", "l2_sm_bandwidth"), gbytes, "L2 bandwidth"),
                                  (("dram_bandwidth",), gbytes, "DRAM bandwidth"),
                                  (("atomic_serialization", "atomic_throughput"), atomics, "atomic throughput")):
        share = sum(shares.get(k, 0.0) for k in keys)
        tot = sum(weights.values())
        if share > 0 and tot > 0:
            for i, w in weights.items():
                out[i][reason] += share * w / tot
    return [dict(x) for x in out]


def _conflicted(c) -> bool:
    """A shared-memory instruction's counters show bank conflicts (more wavefronts than ideal)."""
    _req, _sectors, _lines, wavefronts, ideal = c
    return bool(wavefronts) and wavefronts > ideal > 0


def _mem_stats(prog: KernelProgram, counters, arch: Arch,
               ideal_shared: bool = False) -> tuple[dict[InstructionOp, float], dict[InstructionOp, float]]:
    """Per memory instruction (when --memory-metrics ran): LSU clocks per request
    (sectors or wavefronts through the sub-partition's share of L1) and bytes
    moved per request (sectors x 32).  ``ideal_shared``: shared accesses take their
    conflict-free wavefronts (what bank conflicts cost is the difference)."""
    occ: dict[InstructionOp, float] = {}
    sector_bytes: dict[InstructionOp, float] = {}
    mem_ops = getattr(prog, "mem_ops", None) or {}
    if not mem_ops or counters is None:
        return occ, sector_bytes
    per_smsp = arch.memory["lsu_bytes_per_clk"] / arch.sub_partitions
    local_clk = arch.memory.get("local_sector_clk")
    for op, c in CounterView(prog, counters).memory_ops():
        req, sectors, lines, wavefronts, ideal = c
        if req <= 0:
            continue
        if ideal_shared and wavefronts and ideal:
            wavefronts = min(wavefronts, ideal)
        if local_clk and memory_space(op, c) == "local":
            # the L1 serves a local request's sectors one at a time (``local_sector_clk`` SM
            # clocks each), the SM's sub-partitions in turn: our local_rmw kernels, and
            # HeCBench entropy's per-thread histogram, run at 1.1-1.5 clocks a sector
            occ[op] = max(1.0, sectors / req * local_clk * arch.sub_partitions)
            continue
        if wavefronts:
            occ[op] = max(1.0, wavefronts / req * 128.0 / per_smsp)
        else:
            # the L1 moves one 128-byte line's sectors a clock for the whole SM: a request
            # takes a clock per line it touches even when it uses one sector of each
            occ[op] = max(1.0, max(sectors * 32.0, lines * 128.0) / req / per_smsp)
            sector_bytes[op] = sectors * 32.0
    return occ, sector_bytes


def estimate(run, launch=None, arch: str | Arch = DEFAULT_ARCH, registers: int | None = None,
             program: KernelProgram | None = None, counters=None, _ideal_shared: bool = False) -> Estimate:
    """Estimated cycles and time of one finished kernel launch on ``arch``.

    ``run``: the ``LaunchResult`` of ``Emulator.run(launch)`` -- with ``program``, the
    program that run used (``Emulator.program_for(launch)``), where the result does not
    carry it (results sent back from worker processes drop it) -- or a ``KernelProgram``
    with ``counters``, a raw counter array (written by hand, say; the buffers' sizes then
    come from the launch).  The model reads a run's results and never runs a launch
    (``runtime.report.batch.estimate_run`` runs one, then estimates it).  ``registers``
    overrides the per-thread register count (e.g. ptxas ``-v``'s figure).
    """
    a = load_arch(arch)
    notes: list[str] = []
    res = None
    if isinstance(run, KernelProgram):
        prog = run
        if launch is None or counters is None:
            raise TimingError("estimate(program, launch, counters=...): a program alone has no counts; "
                              "estimate a finished run's result (runtime.report.batch.estimate_run runs one)")
        buffers = None
        res_bytes = sum(launch.buffer_nbytes().values())
    elif hasattr(run, "counters"):
        res = run
        prog = program if program is not None else getattr(res, "program", None)
        counters = res.counters if counters is None else counters
        launch = launch if launch is not None else getattr(res, "launch", None)
        if prog is None or counters is None or launch is None:
            raise TimingError("estimate(result, launch, program=Emulator.program_for(launch)): "
                              "the result alone does not carry its program, counters and launch")
        buffers = res.buffers if res.buffers or not getattr(res, "buffer_bytes", 0) else None
    else:
        raise TimingError(f"estimate() takes a LaunchResult or a KernelProgram, not {type(run).__name__}")
    prog.materialize()  # the model reads the kernel's values (a reused program prepares again)

    mem_occ, sector_bytes = _mem_stats(prog, counters, a, _ideal_shared)
    if mem_occ:
        notes.append("memory instructions timed from measured sectors/wavefronts per request")
    else:
        notes.append("memory accesses assumed coalesced and conflict-free (run with --memory-metrics to measure)")
    trace = getattr(res, "memory_trace", None)
    if res is not None and trace is None and not mem_occ:
        notes.append("the run kept no address trace: no cache model, memory assumed coalesced "
                     "(runtime.report.batch.estimate_run(emu, launch) runs with one, as hypa profile "
                     "--estimate-time does)")
    execs, threads, divergent = _raw_counts(prog, counters)
    nb = prog.num_blocks
    threads_per_cta = launch.threads_per_cta
    wpc = -(-threads_per_cta // a.warp_size)
    total_warps = wpc * launch.num_ctas

    # occupancy: it decides the caches' capacity and the order the GPU runs the accesses in
    if registers is not None:
        regs, how = int(registers), "given"
    else:
        regs, how = estimate_registers(prog, a)
    shared = prog.shared_static_bytes + launch.shared_bytes
    occ = occupancy(a, threads_per_cta, regs, shared, how)

    # global memory traffic (bytes the warps ask for) and the data it can touch at most
    read = written = 0.0
    for b in range(nb):
        if not threads[b]:
            continue
        for op in prog.block_instrs[b]:
            c = classify(op)
            if c in ("ld_global", "st_global", "atom_global", "cp_async"):
                nbytes = sector_bytes.get(op, threads[b] * access_bytes(op))
                if c.startswith("ld") or c == "cp_async":
                    read += nbytes
                else:
                    written += nbytes
    requested = read + written
    if buffers is None:  # a result without its memory (or a launch not run): the sizes recorded
        recorded = int(res.buffer_bytes) if res is not None else res_bytes
        buffer_bytes = recorded + sum(v.size for v in prog.global_vars.values())
    else:
        buffer_bytes = sum(int(x.nbytes) for x in buffers.values()) + sum(v.size for v in prog.global_vars.values())
    footprint = float(min(buffer_bytes, requested))
    unique_read = min(float(buffer_bytes), read)
    # without a trace: bytes read more than once are re-reads, assumed to hit L1
    reuse_hit = 1.0 - unique_read / read if read > 0 else 0.0
    cache = None
    mem_latency: dict[InstructionOp, float] = {}
    if trace is not None:
        from .cache_model import simulate

        cache = simulate(trace, wpc, occ.ctas_per_sm, a.sm_count, l1_capacity(a, occ), a.memory["l2_effective_bytes"],
                         written=getattr(res, "memory_ranges", None), active_sms=min(launch.num_ctas, a.sm_count))
        if cache.sample_factor > 1 and sector_bytes:
            _exact_sectors(prog, cache, sector_bytes)
        mem_latency = _load_latencies(prog, counters, cache, a)
        notes.append(f"L1/L2 hit rates from the launch's address stream ({cache.records} sectors traced"
                     + (f", 1 line in {cache.sample_factor} sampled" if cache.sample_factor > 1 else "") + ")")
    # the L1 moves ``lsu_bytes_per_clk`` for the whole SM; a request's clocks above take a
    # sub-partition's share of it, as when every sub-partition has warps.  With fewer warps on
    # an SM than sub-partitions (a launch of a few one-warp CTAs) the warps share the SM's
    # whole rate: llm.c's attention_forward_kernel2 on 12 CTAs of one warp, whose 32-way
    # bank-conflicted shared loads take 32 clocks a request, not 128
    resident = min(occ.ctas_per_sm, -(-launch.num_ctas // a.sm_count)) * wpc
    if mem_occ and 0 < resident < a.sub_partitions:
        mem_occ = {op: max(1.0, c * resident / a.sub_partitions) for op, c in mem_occ.items()}
    kt = kernel_timing(prog, a, footprint, mem_occ, reuse_hit, mem_latency, [float(x) for x in execs])

    # block and pair costs
    exits = set(prog.cfg.exits)
    freqs = edge_frequencies(prog.cfg.succs, prog.cfg.preds, [float(x) for x in execs], [float(x) for x in divergent],
                             float(total_warps), exits)
    blocks: list[BlockCost] = []
    issue_total = 0.0
    unit_total: dict[str, float] = defaultdict(float)
    lat_total = 0.0
    for b in range(nb):
        bc = kt.block_cost(b)
        bc.warp_executions = execs[b]
        if execs[b]:
            explained = 0.0
            cyc = 0.0
            for p in sorted(set(prog.cfg.preds[b])):
                f = freqs.get((p, b), 0.0)
                if f <= 0:
                    continue
                c = kt.pair_cost(p, b)
                bc.pair_costs[p] = c
                cyc += f * c
                explained += f
            if explained > execs[b]:
                # more arrivals than executions: a divergent branch's two sides both reach
                # the block, which the warp then runs once (reconverged) -- each edge weighs
                # its share of the executions
                cyc *= execs[b] / explained
            rest = max(0.0, execs[b] - explained)
            cyc += rest * bc.latency
            bc.cycles = cyc
            lat_total += cyc
        # a side block ptxas predicates issues whenever its region runs, its guard true or not
        issued = execs[kt.region_head(b)]
        if issued:
            issue_total += issued * bc.issue_slots
            for u, busy in bc.unit_cycles.items():
                unit_total[u] += issued * busy
        blocks.append(bc)
    warp_latency = lat_total / total_warps
    # a CTA lasts as long as its critical warp: where the work sits in a few of its warps
    # (one thread of the CTA works, a reduction's last steps), that warp's latency, not the
    # mean warp's -- the critical steps over the mean warp's steps, CTAs weighted by work
    skew = 1.0
    cta_steps = getattr(res, "cta_steps", None) if res is not None else None
    critical = getattr(res, "cta_critical_steps", None) if res is not None else None
    if cta_steps is not None and critical is not None and len(critical) == len(cta_steps):
        total_steps = float(np.sum(cta_steps))
        if total_steps > 0:
            skew = max(1.0, wpc * float(np.sum(critical)) / total_steps)
    warp_latency *= skew
    warp_issue = issue_total / total_warps
    warp_units = {u: c / total_warps for u, c in sorted(unit_total.items())}

    def sm_round(c: int) -> tuple[float, dict[str, float]]:
        k = -(-(c * wpc) // a.sub_partitions)  # warps per sub-partition
        comps = {"latency": warp_latency, "issue": k * warp_issue / a.issue_per_cycle}
        for u, cyc in warp_units.items():
            comps[f"unit:{u}"] = k * cyc
        if "int" in warp_units and a.units.get("int") and a.units.get("int_fma"):
            # ptxas moves integer adds and moves onto the FMA pipe where the ALU pipe is the
            # busier: the int class is bound by its lane-clocks over the ALU lanes plus those
            # FMA lanes, and with the FP32 work by both pipes' lanes together
            li, lx, lf = a.units["int"], a.units["int_fma"], a.units.get("fp32", 0)
            ci, cf = warp_units["int"], warp_units.get("fp32", 0.0)
            comps["unit:int"] = k * max(ci * li / (li + lx), (ci * li + cf * lf) / (li + lf))
        ranked = sorted(comps.values(), reverse=True)
        # a warp's own latency and its sub-partition's issue/unit work overlap only in part
        return ranked[0] + a.sm_overlap * (ranked[1] if len(ranked) > 1 else 0.0), comps

    def round_weights(comps: dict[str, float]) -> dict[str, float]:
        """What each bound adds to a round: the largest all of it, the second ``sm_overlap``."""
        order = sorted(comps, key=lambda k: -comps[k])
        w = {k: 0.0 for k in comps}
        if order:
            w[order[0]] = comps[order[0]]
        if len(order) > 1:
            w[order[1]] = a.sm_overlap * comps[order[1]]
        return w

    per_sm = -(-launch.num_ctas // a.sm_count)
    full, rem = divmod(per_sm, occ.ctas_per_sm)
    sm_cycles = 0.0
    round_comps: dict[str, float] = defaultdict(float)
    round_added: dict[str, float] = defaultdict(float)  # what each bound adds to the rounds
    for c, times in ((occ.ctas_per_sm, full), (rem, 1 if rem else 0)):
        if times:
            t, comps = sm_round(c)
            sm_cycles += times * (t + a.cta_launch_cycles)
            for k2, v in comps.items():
                round_comps[k2] += times * v
            for k2, v in round_weights(comps).items():
                round_added[k2] += times * v
    waves = -(-launch.num_ctas // (occ.ctas_per_sm * a.sm_count))
    # CTAs of unequal work: the busiest SM's share, as the block scheduler hands them out
    imbalance = 1.0
    if cta_steps is not None and len(cta_steps) == launch.num_ctas:
        imbalance = cta_imbalance(cta_steps, occ.ctas_per_sm * a.sm_count)
        if imbalance > 1.0:
            # the longest CTA runs on after the others have left its SM: at most its own
            # latency (its work over the mean, times one warp's latency) past the rounds
            steps = np.asarray(cta_steps, dtype=np.float64)
            tail = float(steps.max() / steps.mean()) * warp_latency if steps.mean() > 0 else 0.0
            sm_cycles = min(sm_cycles * imbalance, sm_cycles + tail)
        else:
            sm_cycles *= imbalance

    # L2 and DRAM bandwidth bounds
    m = a.memory
    dram_bytes_per_clk = m["dram_gbs"] * 1e3 / a.clock_mhz * m.get("dram_efficiency", 1.0)
    if cache is not None:
        l2_bytes = 32.0 * cache.l2_sectors
        dram_bytes = 32.0 * (cache.dram_read_sectors + cache.dram_write_sectors)
    else:
        # every requested byte crosses L1-L2 (no L1 reuse assumed: an upper bound), the
        # unique bytes cross DRAM unless they fit in L2
        l2_bytes = requested
        fits = footprint <= m["l2_bytes"]
        dram_bytes = 0.0 if fits else unique_read + min(float(buffer_bytes), written)
        if fits and requested:
            notes.append(f"global data ({footprint:.0f} B) fit in L2: first touches timed as L2 hits "
                         "(repeated launches keep L2 warm)")
    l2_cycles = l2_bytes / m["l2_bytes_per_clk"]
    dram_cycles = dram_bytes / dram_bytes_per_clk

    components = {"sm": sm_cycles, "l2_bandwidth": l2_cycles, "dram_bandwidth": dram_cycles,
                  # the block scheduler starts a CTA on an SM every so many clocks at best
                  "cta_dispatch": per_sm * a.cta_dispatch_cycles}
    if cache is not None and m.get("l2_sm_bytes_per_clk"):
        # what one SM can move to and from L2 (its L1 misses are filled at this rate)
        components["l2_sm_bandwidth"] = 32.0 * cache.busiest_sm_l2_sectors / m["l2_sm_bytes_per_clk"]
    if cache is not None and cache.atomic_requests:
        # the L2 performs the operations on one address one after the other, and only so
        # many atomic sectors, and operations on an address a request already updates, a clock
        components["atomic_serialization"] = cache.atomic_max_sector_lanes * m.get("atomic_lane_cycles", 0.0)
        components["atomic_throughput"] = (cache.atomic_requests / m.get("atomic_sectors_per_clk", 1e9)
                                           + cache.atomic_same_address_extra / m.get("atomic_same_address_per_clk", 1e9))
    cycles = combine_bounds(components, a)
    top = max(components, key=lambda k: components[k])
    if top == "sm":
        # which bound decided the SM rounds (the full rounds dominate)
        t, comps = sm_round(occ.ctas_per_sm if full else rem)
        bound = max(comps, key=lambda k: comps[k])
    else:
        bound = top
    time_us = cycles / a.clock_mhz + a.launch_overhead_us
    warp = {"latency": warp_latency, "issue_slots": warp_issue, "unit_cycles": warp_units,
            "warps": total_warps, "warps_per_cta": wpc}
    memory = {"requested_bytes": requested, "read_bytes": read, "written_bytes": written, "footprint_bytes": footprint,
              "buffer_bytes": buffer_bytes, "l2_bytes": l2_bytes, "dram_bytes": dram_bytes, "reuse_hit_rate": reuse_hit,
              "global_load_latency": a.level_latency("global", footprint, reuse_hit), "cta_imbalance": imbalance,
              "warp_skew": skew}
    if cache is not None:
        memory["cache"] = cache.as_dict()
    comps_out = dict(components)
    comps_out.update({f"sm_{k}": v for k, v in round_comps.items()})
    shares = _shares(components, round_added, sm_cycles, a)
    instr = _instruction_cycles(prog, kt, blocks, execs, threads, sector_bytes, shares, unit_total, issue_total,
                                lat_total)
    est = Estimate(prog.func.func_name, a.name, a.description, cycles, time_us, bound, occ, waves, per_sm,
                   a.clock_mhz, a.launch_overhead_us, warp, comps_out, memory, blocks, notes, shares, instr)
    if not _ideal_shared and any(_conflicted(c) for _op, c in CounterView(prog, counters).memory_ops()):
        # what the conflicts cost: the same estimate with every shared access conflict-free
        ideal = estimate(run, launch, arch, registers, program, counters, _ideal_shared=True)
        est.bank_conflict_cycles = max(0.0, cycles - ideal.cycles)
    return est


def kernel_timing(prog: KernelProgram, arch: Arch, footprint: float, mem_occ: dict, reuse_hit: float,
                  mem_latency: dict, block_execs: list[float] | None = None) -> KernelTiming:
    """The pipeline-graph timing of ``prog`` for these inputs, reused by later launches of the
    kernel with the same ones (a program launched many times solves its graphs once)."""
    fits = footprint <= arch.memory["l2_bytes"]
    slots = getattr(prog, "mem_ops", None) or {}
    key = (_graph_inputs(arch), fits, reuse_hit,
           tuple((slots.get(op), v) for op, v in mem_occ.items()),
           tuple((slots.get(op), v) for op, v in mem_latency.items()), tuple(block_execs or ()))
    cache = prog.__dict__.setdefault("_timing_cache", {})
    kt = cache.get(key)
    if kt is None:
        if len(cache) >= 16:
            cache.clear()
        kt = cache[key] = KernelTiming(prog, arch, footprint, mem_occ, reuse_hit, mem_latency, block_execs)
    return kt


def _graph_inputs(arch: Arch) -> tuple:
    """What of an architecture the pipeline graphs depend on (a key for reusing them)."""
    return (arch.warp_size, arch.sub_partitions, arch.issue_per_cycle, arch.fetch_per_cycle, arch.pair_window,
            tuple(sorted(arch.classes.items())), tuple(sorted(arch.units.items())), tuple(sorted(arch.tensor.items())),
            tuple(sorted(arch.memory.items())))


def combine_bounds(components: dict[str, float], arch: Arch) -> float:
    """Kernel cycles from its bounds (SM, L2, DRAM): the largest, plus the share
    ``core.bound_overlap`` of the others that the GPU does not overlap with it."""
    vals = sorted(components.values(), reverse=True)
    if not vals:
        return 0.0
    return vals[0] + arch.bound_overlap * sum(vals[1:])


def cta_imbalance(steps, slots: int) -> float:
    """How much longer the busiest CTA slot works than it would if every CTA did the mean
    work: CTAs handed out in launch order to the slot that frees first (``slots``: SMs x
    CTAs per SM), each taking time in proportion to its warp-instructions."""
    import heapq

    import numpy as np

    w = np.asarray(steps, dtype=np.float64)
    n = len(w)
    mean = float(w.mean()) if n else 0.0
    if n == 0 or mean <= 0 or float(w.max()) == float(w.min()):
        return 1.0
    uniform = -(-n // slots) * mean
    if n <= slots:
        return float(w.max()) / uniform
    free = [0.0] * slots
    heapq.heapify(free)
    for x in w.tolist():
        heapq.heappush(free, heapq.heappop(free) + x)
    return max(free) / uniform


def l1_capacity(arch: Arch, occ: "Occupancy") -> float:
    """Bytes of an SM's L1/shared storage left to L1: the driver picks the smallest
    shared-memory carve-out (``core.carveouts_kb``) that holds the resident CTAs'
    shared memory."""
    m = arch.memory
    total = m.get("l1_shared_bytes", 0.0)
    need = occ.ctas_per_sm * occ.shared_bytes
    options = sorted(arch.carveouts_kb) or [0.0]
    carve = next((k * 1024 for k in options if k * 1024 >= need), options[-1] * 1024)
    return max(0.0, total - carve)


def _exact_sectors(prog: KernelProgram, cache, sector_bytes: dict[InstructionOp, float]) -> None:
    """The sampled replay's shares over the exact sectors of each global access
    (``cache_model.with_exact_sectors``)."""
    from .cache_model import with_exact_sectors

    loads: dict[int, float] = defaultdict(float)
    others = 0.0
    for op, slot in (getattr(prog, "mem_ops", None) or {}).items():
        b = sector_bytes.get(op)
        if b is None:
            continue
        if classify(op) == "ld_global":
            loads[slot] += b / 32.0
        else:
            others += b / 32.0
    with_exact_sectors(cache, dict(loads), others)


def _load_latencies(prog: KernelProgram, counters, cache, arch: Arch) -> dict[InstructionOp, float]:
    """Each traced global load's latency from where its requests' slowest sectors were found
    (a warp waits for the slowest); where requests cannot be told apart, from the sectors'
    shares: with ``k`` sectors per request a warp waits for L2 unless all hit L1 (``p1 ** k``)
    and for DRAM if any misses L2."""
    m = arch.memory
    view = CounterView(prog, counters)
    spr = registry.metric("sectors_per_request")
    out: dict[InstructionOp, float] = {}
    for op, slot in (getattr(prog, "mem_ops", None) or {}).items():
        rq = cache.request_levels(slot)
        if rq is not None:  # each request waits for its slowest sector, as the trace says
            q1, q2, qd = rq
            out[op] = q1 * m["l1_latency"] + q2 * m["l2_latency"] + qd * m["dram_latency"]
            continue
        lv = cache.slot_levels(slot)
        if lv is None:
            continue
        k = max(1.0, spr.value(view.memory(slot)._asdict()))
        p1, _p2, pd = lv
        all_l1 = p1 ** k
        any_dram = 1.0 - (1.0 - pd) ** k
        out[op] = (m["l1_latency"] + (1.0 - all_l1) * (m["l2_latency"] - m["l1_latency"])
                   + any_dram * (m["dram_latency"] - m["l2_latency"]))
    return out


# ---------------------------------------------------------------------------
# Text output
# ---------------------------------------------------------------------------


def format_estimate(est: Estimate, blocks: bool = True) -> str:
    o = est.occupancy
    lines = [
        f"  time estimate ({est.arch}: {est.arch_description})",
        f"    {'estimated_time':<40} {est.time_us:>14.3f} us   (kernel {est.kernel_us:.3f} us + launch {est.launch_overhead_us:.2f} us)",
        f"    {'estimated_cycles':<40} {est.cycles:>14.0f}   ({est.clock_mhz:.0f} MHz)",
        f"    {'bound':<40} {est.bound:>14}",
        f"    {'occupancy':<40} {100 * o.fraction:>13.1f} %   ({o.ctas_per_sm} CTAs x {o.warps_per_cta} warps per SM,"
        f" limited by {o.limiter})",
        f"    {'registers_per_thread':<40} {o.registers:>14}   ({o.registers_source})",
        f"    {'shared_bytes_per_cta':<40} {o.shared_bytes:>14}",
        f"    {'waves':<40} {est.waves:>14}   ({est.ctas_per_busiest_sm} CTAs on the busiest SM)",
        f"    {'warp_latency_cycles':<40} {est.warp['latency']:>14.1f}",
        f"    {'warp_issue_slots':<40} {est.warp['issue_slots']:>14.1f}",
    ]
    skew = est.memory.get("warp_skew", 1.0)
    if skew > 1.0:
        lines[-2] += f"   (the critical warp: {skew:.2f}x the mean warp's steps)"
    cache = est.memory.get("cache")
    if cache:
        lines.append(f"    {'l1_hit_rate':<40} {100 * cache['l1_hit_rate']:>13.1f} %   (global sectors, from the address trace)")
        lines.append(f"    {'l2_hit_rate':<40} {100 * cache['l2_hit_rate']:>13.1f} %")
        lines.append(f"    {'dram_bytes':<40} {cache['dram_read_bytes'] + cache['dram_write_bytes']:>14.0f}   "
                     f"(read {cache['dram_read_bytes']:.0f}, written {cache['dram_write_bytes']:.0f})")
    comps = ", ".join(f"{k} {v:.0f}" for k, v in est.components.items() if not k.startswith("sm_") and v > 0)
    lines.append(f"    {'bounds_cycles':<40} {comps}")
    if est.shares and est.cycles > 0:  # what the estimate is made of (they add up to it)
        parts = ", ".join(f"{k} {100 * v / est.cycles:.1f}%" for k, v in sorted(est.shares.items(), key=lambda kv: -kv[1]))
        lines.append(f"    {'time_shares':<40} {parts}")
    if est.bank_conflict_cycles > 0 and est.cycles > 0:
        lines.append(f"    {'bank_conflict_cost':<40} {100 * est.bank_conflict_cycles / est.cycles:>13.1f} %   "
                     f"({est.bank_conflict_cycles:.0f} cycles: the estimate with conflict-free shared accesses is shorter by this)")
    if est.warp["unit_cycles"]:
        units = ", ".join(f"{u} {c:.1f}" for u, c in est.warp["unit_cycles"].items())
        lines.append(f"    {'warp_unit_cycles':<40} {units}")
    if blocks:
        lines.append(f"    {'block':<28} {'instr':>6} {'latency':>8} {'execs':>10} {'cyc/exec':>9} {'share':>7}")
        total = sum(b.cycles for b in est.blocks) or 1.0
        for b in est.blocks:
            if not b.warp_executions:
                continue
            lines.append(f"    {b.name:<28} {b.instructions:>6} {b.latency:>8.0f} {b.warp_executions:>10}"
                         f" {b.cycles / b.warp_executions:>9.1f} {100 * b.cycles / total:>6.1f}%")
    for n in est.notes:
        lines.append(f"    note: {n}")
    return "\n".join(lines) + "\n"


def add_to_report(text: str, results, fmt: str) -> str:
    """Add the estimates attached to ``results`` (``result.time_estimate``) to a
    rendered report: a ``time_estimate`` object per JSON record, three CSV
    columns, or a section per launch after the table."""
    ests = [getattr(r, "time_estimate", None) for r in results]
    if fmt == "json":
        import json

        data = json.loads(text)
        for d, e in zip(data, ests):
            if e is not None and isinstance(d, dict):
                d["time_estimate"] = e.as_dict()
        return json.dumps(data, indent=2) + "\n"
    if fmt == "csv":
        import csv
        import io

        rows = list(csv.reader(io.StringIO(text)))
        if not rows:
            return text
        rows[0] += ["est_time_us", "est_cycles", "est_bound", "est_arch"]
        for row, e in zip(rows[1:], ests):
            row += ["", "", "", ""] if e is None else [f"{e.time_us:.3f}", f"{e.cycles:.0f}", e.bound, e.arch]
        s = io.StringIO()
        csv.writer(s, lineterminator="\n").writerows(rows)
        return s.getvalue()
    parts = [text.rstrip("\n") + "\n"]
    for r, e in zip(results, ests):
        if e is None:
            continue
        g = "x".join(map(str, r.grid))
        b = "x".join(map(str, r.block))
        parts.append(f"\nkernel {e.kernel}  grid {g}  block {b}\n" + format_estimate(e))
    return "".join(parts)


__all__ = [
    "Arch", "Estimate", "KernelTiming", "Occupancy", "TimingError", "available_archs", "classify",
    "edge_frequencies", "estimate", "estimate_registers", "format_estimate", "load_arch", "occupancy",
    "solve_pipeline",
]
