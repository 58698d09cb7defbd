"""Timing estimate (runtime/models/timing.py): pipeline graphs, pairwise overlap, loops,
occupancy, waves, bandwidth bounds, worked out by hand; and a smoke run over
the project's launch files."""

import glob
import json
import math
import os
import re
import subprocess

import numpy as np
import pytest

from hypa.ptxdialect import parse_ptx, parse_ptx_file
from hypa.runtime import abi
from hypa.runtime.models import timing as T
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import BufferSpec, Launch, launches_from_toml
from hypa.runtime.emulator.options import EmulationOptions
from hypa.runtime.emulator.program import prepare
from hypa.runtime.report.batch import estimate_run

from helpers import LAUNCHES, ROOT, kernel, load_script, strided_kernel, which


def straight_line(body: list[str], extra_regs: str = "", directives: str = "") -> str:
    """One kernel, one basic block: a prologue, ``body``, a store, ret."""
    lines = "\n    ".join(body)
    return kernel(f"k(.param .u64 k_out){directives}", f"""
    ld.param.u64 %rd1, [k_out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f40000000;
    {lines}
    st.global.f32 [%rd2], %f1;
    ret;
""", regs=f"    .reg .f32 %f<600>;\n    .reg .b64 %rd<8>;\n    {extra_regs}\n")


def block0_latency(text: str, arch: str = "sm_90") -> float:
    prog = prepare(parse_ptx(text), "k", EmulationOptions(mode="full"))
    assert prog.num_blocks == 1
    return T.KernelTiming(prog, arch).block_latency(0)


def independent(n: int, op: str = "add.f32") -> list[str]:
    return [f"{op} %f{10 + i}, %f1, %f2;" for i in range(n)]


def chain(n: int) -> list[str]:
    return [f"add.f32 %f{11 + i}, %f{10 + i}, %f2;" for i in range(n)]


# -- architecture files --------------------------------------------------------------


def test_arch_files_and_aliases():
    h = T.load_arch("sm_90")
    assert T.load_arch("h100") is not None and T.load_arch("H100").name == "sm_90"
    assert T.load_arch("a100").name == "sm_80"
    assert (h.sm_count, h.sub_partitions, h.clock_mhz) == (132, 4, 1980)
    # a warp-instruction keeps its unit of one sub-partition busy warp_size / (lanes / 4) clocks
    assert h.unit_occupancy("fp32") == 1 and h.unit_occupancy("fp64") == 2
    assert h.unit_occupancy("int") == 2 and h.unit_occupancy("sfu") == 8
    a = T.load_arch("sm_80")
    assert a.unit_occupancy("fp32") == 2 and a.unit_occupancy("fp64") == 4
    assert set(T.available_archs()) >= {"sm_80", "sm_90"}
    with pytest.raises(T.TimingError, match="unknown architecture"):
        T.load_arch("sm_12")


def test_an_arch_file_extends_another(tmp_path):
    """h200.toml is sm_90.toml with HBM3e: every figure the H100's but the DRAM bandwidth and the
    names; an extends that names no architecture is an error; a file of one's own extends too."""
    h100, h200 = T.load_arch("sm_90"), T.load_arch("h200")
    assert (h200.name, T.load_arch("h200-sxm").name, h200.description) == ("h200", "h200", "NVIDIA H200 SXM 141 GB (Hopper, cc 9.0)")
    assert {k: v for k, v in h200.memory.items() if h100.memory.get(k) != v} == {"dram_gbs": 4800.0}
    assert (h200.units, h200.occupancy, h200.classes, h200.sm_count, h200.clock_mhz, h200.cta_dispatch_cycles) == \
        (h100.units, h100.occupancy, h100.classes, h100.sm_count, h100.clock_mhz, h100.cta_dispatch_cycles)
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "sm_99"\nname = "x"\n')
    with pytest.raises(T.TimingError, match="extends 'sm_99', which is not an architecture"):
        T.load_arch(str(bad))
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "sm_90"\nname = "mine"\n[core]\nsm_count = 66\n')
    m = T.load_arch(str(mine))
    assert (m.name, m.sm_count, m.clock_mhz, m.memory) == ("mine", 66, h100.clock_mhz, h100.memory)


def test_every_class_of_both_archs_is_complete():
    classes = {T.classify(op) for f in glob.glob(os.path.join(ROOT, "tests/kernels/ptx/*.sm_90.ptx"))
               for op in _instructions(f)}
    for name in ("sm_80", "sm_90"):
        a = T.load_arch(name)
        assert classes <= set(a.classes), classes - set(a.classes)
        for c in a.classes.values():
            assert not c.unit or c.unit in a.units


def _instructions(path):
    from hypa.ptxdialect.dialect import InstructionOp

    return [op for op in parse_ptx_file(path).walk() if isinstance(op, InstructionOp)]


# -- the pipeline graph (Algorithm 1) on hand-made sequences -----------------------------


def _seq(n, unit="fp32", lat=4.0, occ=1.0, dependent=False):
    xs = [T.TimedInstr("x", unit, lat, 1, occ, False, False) for _ in range(n)]
    if dependent:
        for i in range(1, n):
            xs[i].srcs = [i - 1]
    return xs


def test_graph_independent_ops_issue_one_per_clock():
    a = T.load_arch("sm_90")
    # fetch 0, issue 1, 2, ..., n: the next instruction could issue at n + 1; the
    # fixed fetch->issue clock is not counted, so n independent ops take n clocks
    for n in (1, 2, 7, 30):
        s = T.solve_pipeline(_seq(n), a)
        assert s.end == n
        assert [s.stage(i, T.I) for i in range(n)] == [1 + i for i in range(n)]


def test_graph_dependent_chain_pays_the_latency():
    a = T.load_arch("sm_90")
    # issue -> dispatch -> operand read: O(i) = O(i-1) + latency, so a chain of n
    # ops with latency 4 ends 4 (n - 1) + 1 clocks after its first issue
    for n in (1, 2, 5, 12):
        s = T.solve_pipeline(_seq(n, dependent=True), a)
        assert s.end == 4 * (n - 1) + 1
        assert all(s.stage(i, T.O) - s.stage(i - 1, T.O) == 4 for i in range(1, n))


def test_graph_resource_edges_make_a_unit_bound():
    a = T.load_arch("sm_90")
    # SFU: 16 lanes per SM = 4 per sub-partition: 8 clocks per warp-instruction;
    # n independent SFU ops: executes at 3, 11, 19, ...; the instruction after the
    # last one issues once the last has been dispatched: 8 (n - 2) + 3 - 1
    for n in (2, 5, 9):
        s = T.solve_pipeline(_seq(n, "sfu", 18, 8), a)
        assert [s.stage(i, T.E) for i in range(n)] == [3 + 8 * i for i in range(n)]
        assert s.end == 8 * (n - 2) + 2
        assert s.iterations == 2  # the fixpoint: one pass to settle, one to see nothing change


def test_graph_external_operand_waits():
    a = T.load_arch("sm_90")
    xs = _seq(1)
    xs[0].ready = 100  # produced elsewhere, still 100 clocks in flight at the first issue
    s = T.solve_pipeline(xs, a)
    # its operand read waits until clock 1 + 100; the next instruction issues then
    # (101), which is 100 on the scale where n independent ops take n clocks
    assert s.stage(0, T.O) == 101 and s.end == 100


def test_graph_blocking_and_branch():
    a = T.load_arch("sm_90")
    bar = T.TimedInstr("barrier", "branch", 20, 1, 1, True, False)
    s = T.solve_pipeline([bar] + _seq(1), a)
    # the barrier issues at 1, the warp issues again 20 clocks later
    assert s.stage(1, T.I) == 21
    br = T.TimedInstr("branch", "branch", 4, 1, 1, False, True)
    s = T.solve_pipeline([br], a)
    # executes at 3; the next fetch waits 4 more clocks (7), issue at 8: end 7
    assert s.end == 7


# -- block latencies of real PTX --------------------------------------------------------


def test_straight_line_independent_alu_is_issue_bound():
    # each added independent add.f32 costs one issue slot on the H100 (32 FP32 lanes
    # per sub-partition), whatever the prologue and the store cost
    base = block0_latency(straight_line(independent(16)))
    for extra in (1, 8, 40):
        assert block0_latency(straight_line(independent(16 + extra))) - base == extra


def test_same_block_is_unit_bound_on_a100():
    # A100: 16 FP32 lanes per sub-partition: two clocks per add.f32
    base = block0_latency(straight_line(independent(16)), "sm_80")
    assert block0_latency(straight_line(independent(24)), "sm_80") - base == 16


def test_dependent_chain_is_latency_bound():
    lat = T.load_arch("sm_90").classes["fp32"].latency
    assert lat == 4
    base = block0_latency(straight_line(chain(10)))
    for extra in (1, 5, 20):
        assert block0_latency(straight_line(chain(10 + extra))) - base == 4 * extra


def test_instruction_classes():
    body = ["div.rn.f32 %f10, %f1, %f2;", "sin.approx.f32 %f11, %f1;", "fma.rn.f32 %f12, %f1, %f2, %f1;",
            "cvt.rzi.s32.f32 %r1, %f1;", "add.s64 %rd3, %rd2, 4;", "mul.wide.s32 %rd4, %r1, 4;",
            "popc.b32 %r2, %r1;", "div.s32 %r3, %r1, 3;", "mov.u32 %r4, %tid.x;",
            "ld.global.v4.f32 {%f13, %f14, %f15, %f16}, [%rd2];", "ld.shared.f32 %f17, [%rd2];",
            "bar.sync 0;", "shfl.sync.bfly.b32 %r5, %r1, 1, 31, -1;"]
    text = straight_line(body, ".reg .b32 %r<10>;")
    prog = prepare(parse_ptx(text), "k", EmulationOptions(mode="full"))
    got = {op.opcode: T.classify(op) for op in prog.block_instrs[0]}
    assert got["div.rn.f32"] == "fp32_div" and got["sin.approx.f32"] == "sfu" and got["fma.rn.f32"] == "fp32"
    assert got["cvt.rzi.s32.f32"] == "convert" and got["add.s64"] == "int64" and got["mul.wide.s32"] == "int_mul"
    assert got["popc.b32"] == "int_slow" and got["div.s32"] == "int_div" and got["mov.u32"] == "sreg"
    assert got["ld.global.v4.f32"] == "ld_global" and got["ld.shared.f32"] == "ld_shared"
    assert got["bar.sync"] == "barrier" and got["shfl.sync.bfly.b32"] == "shfl"
    assert got["ld.param.u64"] == "ld_param" and got["st.global.f32"] == "st_global" and got["ret"] == "branch"
    v4 = next(op for op in prog.block_instrs[0] if op.opcode == "ld.global.v4.f32")
    assert T.access_bytes(v4) == 16
    # a constant-bank load at a fixed address is an operand of its user (ptxas folds it in); one
    # indexed by a register is an LDC of its own, with the latency calibration.toml[101] gives it
    text = straight_line(["ld.const.u32 %r1, [ctab+8];", "ld.const.u32 %r2, [%rd2];", "ld.const.u32 %r3, [%rd2+4];"],
                         ".reg .b32 %r<10>;").replace(".visible .entry", ".const .align 4 .b8 ctab[64];\n.visible .entry", 1)
    prog = prepare(parse_ptx(text), "k", EmulationOptions(mode="full"))
    assert [T.classify(op) for op in prog.block_instrs[0] if op.spec.name == "ld" and ".const" in op.modifiers] == \
        ["ld_const", "ld_const_indexed", "ld_const_indexed"]
    assert T.load_arch("sm_90").classes["ld_const_indexed"].latency == 18
    kt = T.KernelTiming(prog, "sm_90")
    # 16 bytes x 32 lanes through a quarter of 128 B/clk: 16 clocks of the LSU
    assert kt.timed(v4).occ == 16


# -- loops and pairwise overlap ---------------------------------------------------------------

LOOP = kernel("loop(.param .u64 loop_out, .param .u32 loop_n)", """
    ld.param.u64 %rd1, [loop_out];
    ld.param.u32 %r1, [loop_n];
    mov.u32 %r2, 0;
    mov.f32 %f1, 0f00000000;
$L_loop:
    add.f32 %f1, %f1, 0f3F800000;
    add.s32 %r2, %r2, 1;
    setp.lt.s32 %p1, %r2, %r1;
    @%p1 bra $L_loop;
    cvta.to.global.u64 %rd2, %rd1;
    st.global.f32 [%rd2], %f1;
    ret;
""")


def loop_estimate(n, arch="sm_90", grid=1, block=32):
    emu = Emulator(parse_ptx(LOOP))
    L = Launch(kernel="loop", grid=grid, block=block, args=["out", n], buffers={"out": np.zeros(1, np.float32)})
    return estimate_run(emu, L, arch=arch), emu.program_for(L)


def test_loop_cost_scales_with_trip_count():
    lat = {}
    for n in (1, 5, 10, 20):
        est, prog = loop_estimate(n)
        lat[n] = est.warp["latency"]
        body = next(b for b in est.blocks if b.name == "$L_loop")
        assert body.warp_executions == n
    # the counter steps by a constant: ptxas runs four iterations a trip (``unrolled``), one
    # back-edge branch for the four.  A trip is 12 ALU instructions and the branch; the
    # loop-carried chain through a trip -- four dependent add.f32 (16 clocks), then the last
    # add.s32 -> setp -> @p bra and the fetch redirect, as one iteration had it alone (16
    # clocks a trip, less the adds' overlap) -- makes a trip add 34 clocks after the one before:
    # 8.5 per iteration, where one iteration a trip cost 16
    kt = T.KernelTiming(prog, "sm_90")
    loop_b = next(i for i in range(prog.num_blocks) if prog.cfg.name(i) == "$L_loop")
    assert kt.pair_cost(loop_b, loop_b) == 8.5
    assert lat[5] - lat[1] == 4 * 8.5 and lat[10] - lat[5] == 5 * 8.5 and lat[20] - lat[10] == 10 * 8.5


def test_loop_edge_frequencies_are_exact():
    # entry -> loop once, loop -> loop n-1 times, loop -> exit once (per warp)
    f = T.edge_frequencies([[1], [1, 2], []], [[], [0, 1], [1]], [3.0, 30.0, 3.0], [0.0, 0.0, 0.0], 3.0, {2})
    assert f == {(0, 1): 3.0, (1, 1): 27.0, (1, 2): 3.0}
    # if/else without divergence: each side's count, the join gets both
    f = T.edge_frequencies([[1, 2], [3], [3], []], [[], [0], [0], [1, 2]], [4.0, 1.0, 3.0, 4.0], [0.0] * 4, 4.0, {3})
    assert f == {(0, 1): 1.0, (0, 2): 3.0, (1, 3): 1.0, (2, 3): 3.0}


OVERLAP = kernel("ov(.param .u64 ov_in, .param .u64 ov_out)", """
    ld.param.u64 %rd1, [ov_in];
    ld.param.u64 %rd2, [ov_out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 100;
    ld.global.f32 %f1, [%rd1];
    @%p1 bra $L_use;
    add.f32 %f2, %f3, %f3;
    add.f32 %f4, %f3, %f3;
    add.f32 %f5, %f3, %f3;
    st.global.f32 [%rd2], %f2;
    ret;
$L_use:
    add.f32 %f6, %f1, %f1;
    st.global.f32 [%rd2], %f6;
    ret;
""")


HOIST = kernel("hoist(.param .u64 h_a)", """
    ld.param.u64 %rd1, [h_a];
    ld.global.f32 %f1, [%rd1];
    mul.f32 %f2, %f1, 0f40000000;
    add.s64 %rd2, %rd1, 64;
    ld.global.f32 %f3, [%rd2];
    fma.rn.f32 %f4, %f3, 0f40000000, %f2;
    st.global.f32 [%rd1], %f4;
    ld.global.f32 %f5, [%rd1+128];
    add.f32 %f6, %f5, %f4;
    st.global.f32 [%rd1+4], %f6;
    ret;
""")


def test_loads_issue_as_ptxas_schedules_them():
    # the second load and its address move up above the multiply: both loads in flight
    # at once; the load after the store may alias it and stays behind it
    prog = prepare(parse_ptx(HOIST), "hoist", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    names = [f"{op.spec.name}:{T.classify(op)}" for op in kt.order[0]]
    assert names == ["ld:ld_param", "ld:ld_global", "add:int64", "ld:ld_global", "mul:fp32", "fma:fp32",
                     "st:st_global", "ld:ld_global", "add:fp32", "st:st_global", "ret:branch"]
    l2 = T.load_arch("sm_90").memory["l2_latency"]
    # two overlapped L2 latencies, then the serialised third: about 2, not 3
    assert 2 * l2 < kt.block_latency(0) < 2 * l2 + 60


SPACES = kernel("spaces(.param .u64 s_a)", """
    .shared .align 4 .b8 sh[256];
    ld.param.u64 %rd1, [s_a];
    mov.u32 %r1, sh;
    ld.global.f32 %f1, [%rd1];
    st.shared.f32 [%r1], %f1;
    ld.global.f32 %f2, [%rd1+4];
    st.shared.f32 [%r1+4], %f2;
    ld.shared.f32 %f3, [%r1+8];
    st.global.f32 [%rd1+8], %f3;
    ld.shared.f32 %f4, [%r1+12];
    ld.global.f32 %f5, [%rd1+16];
    add.f32 %f6, %f4, %f5;
    st.global.f32 [%rd1+12], %f6;
    ret;
""")


def test_loads_pass_stores_to_another_state_space():
    # global loads cannot alias shared stores: ptxas issues both global loads first; the
    # shared loads wait for the shared stores but pass the global store; the last global
    # load may not pass the global store
    prog = prepare(parse_ptx(SPACES), "spaces", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    names = [f"{op.spec.name}.{T.classify(op)}" for op in kt.order[0]]
    assert names == ["ld.ld_param", "mov.move", "ld.ld_global", "ld.ld_global", "st.st_shared", "st.st_shared",
                     "ld.ld_shared", "ld.ld_shared", "st.st_global", "ld.ld_global", "add.fp32", "st.st_global",
                     "ret.branch"]


def _reduction(step: str, pragma: str = "") -> str:
    """One load and one add per iteration of a single-block loop stepping its counter by
    ``step`` (llm.c's layernorm_forward_kernel3 sums a row this way)."""
    return kernel("reduce(.param .u64 r_a, .param .u32 r_n, .param .u32 r_s)", f"""
    ld.param.u64 %rd1, [r_a];
    ld.param.u32 %r2, [r_n];
    ld.param.u32 %r3, [r_s];
    mov.u32 %r1, %tid.x;
    mov.f32 %f1, 0f00000000;
$L_loop:
    {pragma}
    mul.wide.s32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f2, [%rd3];
    add.f32 %f1, %f1, %f2;
    add.s32 %r1, %r1, {step};
    setp.lt.s32 %p1, %r1, %r2;
    @%p1 bra $L_loop;
    st.global.f32 [%rd1], %f1;
    ret;
""")


def test_ptxas_unrolls_a_loop_with_a_constant_step():
    """ptxas runs four iterations of such a loop a trip, their four loads back to back (the
    SASS of layernorm_forward_kernel3: four LDGs, then four FADDs), so an iteration costs
    about a quarter of the load's latency; with the step in a register (the trip count
    would take a division) it keeps one iteration a trip, each waiting for its load."""
    lat = T.load_arch("sm_90").memory["l2_latency"]
    costs = {}
    for step in ("32", "%r3"):
        prog = prepare(parse_ptx(_reduction(step)), "reduce", EmulationOptions(mode="full"))
        kt = T.KernelTiming(prog, "sm_90", footprint=1024)  # in L2: each load takes the L2 latency
        (loop,) = [b for b in range(prog.num_blocks) if b in prog.cfg.succs[b]]
        assert (kt.unrolled(loop) is not None) == (step == "32")
        costs[step] = kt.pair_cost(loop, loop)
    assert costs["%r3"] >= lat  # the add waits for the load, the next load for the add
    assert lat / 4 <= costs["32"] < lat / 4 + 20  # four loads in flight
    one = [t.cls for t in T.KernelTiming(prepare(parse_ptx(_reduction("32")), "reduce",
                                                 EmulationOptions(mode="full")), "sm_90").unrolled(1)]
    assert one.count("ld_global") == 4 and one.count("branch") == 1
    assert one.index("fp32") > max(i for i, c in enumerate(one) if c == "ld_global")  # loads first
    # NVVM marks the remainder loop of a loop it unrolled itself: ptxas leaves it as it is
    prog = prepare(parse_ptx(_reduction("32", '.pragma "nounroll";')), "reduce", EmulationOptions(mode="full"))
    (loop,) = [b for b in range(prog.num_blocks) if b in prog.cfg.succs[b]]
    assert T.KernelTiming(prog, "sm_90").unrolled(loop) is None


def _guarded_loads(side: str, n: int = 4) -> str:
    """Four loads a trip, each in a side block of its own behind ``if (k < n)`` (HeCBench
    ge-spmm's spmm_test4 guards its column loads so); ``side``: what follows each load."""
    blocks = "".join(f"""
    setp.ge.s32 %p{k + 2}, %r{k % 4 + 4}, %r2;
    @%p{k + 2} bra $L_skip{k};
    ld.global.f32 %f{k + 2}, [%rd3+{128 * k}];
    {side.replace("F", f"%f{k + 2}")}
$L_skip{k}:""" for k in range(n))
    regs = "    .reg .pred %p<16>;\n    .reg .b32 %r<32>;\n    .reg .b64 %rd<16>;\n    .reg .f32 %f<64>;\n"
    return kernel("guarded(.param .u64 g_a, .param .u32 g_n)", regs=regs, body=f"""
    ld.param.u64 %rd1, [g_a];
    ld.param.u32 %r2, [g_n];
    mov.u32 %r1, %tid.x;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r4, 0;
    mov.u32 %r5, 32;
    mov.u32 %r6, 64;
    mov.u32 %r7, 96;
$L_loop:
    mul.wide.s32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;{blocks}
    add.s32 %r1, %r1, %r2;
    setp.lt.s32 %p1, %r1, %r2;
    @%p1 bra $L_loop;
    st.global.f32 [%rd1], %f1;
    ret;
""")


def test_ptxas_predicates_short_side_blocks():
    """A chain of branches around short side blocks is one if-converted region (ptxas
    predicates them: no branch in the SASS of ge-spmm's loop): the head costs the region,
    whose four loads issue back to back, one load latency a trip instead of four; the edges
    inside cost nothing.  A side block longer than IF_CONVERT_MAX keeps its branch."""
    lat = T.load_arch("sm_90").memory["l2_latency"]
    prog = prepare(parse_ptx(_guarded_loads("add.f32 %f1, %f1, F;")), "guarded", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    ((head, chain),) = kt.regions().items()
    assert len(chain) == 9 and chain[0] == head and head in prog.cfg.succs[chain[-1]]  # 4 triangles; the loop
    trip = kt.pair_cost(chain[-1], head)
    assert lat <= trip < lat + 60  # the four loads overlap
    assert all(kt.pair_cost(a, b) == 0.0 for a, b in zip(chain, chain[1:]) if b in prog.cfg.succs[a])
    assert [T.classify(op) for op in kt._region_ops[head]][2:6] == ["ld_global"] * 4
    long = "add.f32 %f1, %f1, F;" + "\n    add.f32 %f1, %f1, F;" * T.IF_CONVERT_MAX_LOADS
    prog = prepare(parse_ptx(_guarded_loads(long)), "guarded", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    assert kt.regions() == {}
    loads = [b for b in range(prog.num_blocks) if any(T.classify(op) == "ld_global" for op in prog.block_instrs[b])]
    assert len(loads) == 4 and all(kt.pair_cost(prog.cfg.preds[b][0], b) >= lat for b in loads)
    # twelve guarded loads: ptxas issues them IF_CONVERT_LOADS (8) at a time, each batch's adds after it
    prog = prepare(parse_ptx(_guarded_loads("add.f32 %f1, %f1, F;", 12)), "guarded", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    ((head, chain),) = kt.regions().items()
    classes = [T.classify(op) for op in kt._region_ops[head] if T.classify(op) in ("ld_global", "fp32")]
    assert classes == ["ld_global"] * 8 + ["fp32"] * 8 + ["ld_global"] * 4 + ["fp32"] * 4
    assert 2 * lat <= kt.pair_cost(chain[-1], head) < 2 * lat + 120


def _hammock(shape: str, k: int = 1, load: bool = False) -> str:
    """A loop (``nounroll``) whose trip holds one hammock: ``triangle``, a side block of ``k``
    instructions (a load first with ``load``, then dependent FMAs); ``nested``, that side
    block followed by an inner ``if`` on its result (``if (c) { x = f(x); if (x < y) y++; }``);
    ``andand``, pnpoly's ``if (a && b) y++`` whose middle block's values die at the join;
    ``loop``, a loop behind the branch; ``elseif``, an if/else whose else side branches again."""
    side = ["ld.global.f32 %f1, [%rd5];"] if load else []
    side += ["fma.rn.f32 %f1, %f1, 0f3F800347, 0f3F800000;"] * (k - len(side))
    middle = "\n    ".join(side)
    if shape == "andand":
        middle = """sub.f32 %f6, %f1, 0f3F000000;
    fma.rn.f32 %f7, %f6, 0f40000000, 0f3F800000;
    setp.geu.f32 %p2, %f7, %f2;
    @%p2 bra $L_join;
    add.f32 %f2, %f2, 0f3F800000;"""
    elif shape == "loop":  # the side block is a loop (a grid-stride loop behind ``if (i < n)``)
        middle = """mov.u32 %r4, 0;
$L_inner:
    fma.rn.f32 %f1, %f1, 0f3F800347, 0f3F800000;
    add.s32 %r4, %r4, 1;
    setp.lt.s32 %p2, %r4, %r2;
    @%p2 bra $L_inner;"""
    elif shape == "elseif":  # chi2's if (y == 0) a++; else if (y == 1) b++; else c += (y == 2)
        middle = """bra.uni $L_else;
$L_a:
    add.f32 %f2, %f2, 0f3F800000;
    bra.uni $L_join;
$L_else:
    setp.eq.f32 %p2, %f1, 0f3F800000;
    @%p2 bra $L_b;
    bra.uni $L_c;
$L_b:
    add.f32 %f3, %f3, 0f3F800000;
    bra.uni $L_join;
$L_c:
    setp.eq.f32 %p2, %f1, 0f40000000;
    selp.f32 %f4, 0f3F800000, 0f00000000, %p2;
    add.f32 %f5, %f5, %f4;"""
    elif shape == "nested":
        middle += """
    setp.lt.f32 %p2, %f1, %f2;
    @!%p2 bra $L_join;
    add.f32 %f2, %f2, 0f3F800000;"""
    regs = "    .reg .pred %p<4>;\n    .reg .f32 %f<8>;\n    .reg .b32 %r<8>;\n    .reg .b64 %rd<8>;\n"
    return kernel("h(.param .u64 a, .param .u64 b, .param .u32 n)", regs=regs, target="sm_90", body=f"""
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd4, [b];
    ld.param.u32 %r2, [n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd4, %rd4;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    add.s64 %rd5, %rd4, %rd2;
    mov.f32 %f2, 0f00000000;
    mov.f32 %f3, 0f00000000;
    mov.f32 %f5, 0f00000000;
    mov.u32 %r3, 0;
$L_loop:
    .pragma "nounroll";
    ld.global.f32 %f1, [%rd3];
    setp.gt.f32 %p1, %f1, 0f3F000000;
    {"@%p1 bra $L_a;" if shape == "elseif" else "@!%p1 bra $L_join;"}
    {middle}
$L_join:
    add.f32 %f2, %f2, %f1;
    add.s32 %r3, %r3, 1;
    add.s64 %rd3, %rd3, 128;
    add.s64 %rd5, %rd5, 128;
    setp.lt.s32 %p3, %r3, %r2;
    @%p3 bra $L_loop;
    add.f32 %f2, %f2, %f3;
    add.f32 %f2, %f2, %f5;
    st.global.f32 [%rd1], %f2;
    ret;
""")


#: (shape, k, load) -> whether ptxas predicates the hammock: ``nvdisasm -c`` of
#: ``ptxas -arch=sm_90 -O3`` (CUDA 13.0) on ``_hammock``, a conditional BRA in the loop or none
IF_CONVERSIONS = {("triangle", 7, False): True, ("triangle", 8, False): False,
                  ("triangle", 18, True): True, ("triangle", 19, True): False,
                  ("nested", 1, False): False, ("nested", 4, True): False, ("andand", 1, False): True,
                  ("loop", 1, False): False, ("elseif", 1, False): False}


@pytest.mark.parametrize("case", list(IF_CONVERSIONS), ids=lambda c: f"{c[0]}-{c[1]}{'-load' if c[2] else ''}")
def test_ptxas_if_conversion_thresholds(case, tmp_path):
    """Which hammocks the model predicates (one region, no branch) is what ptxas does with
    them: side blocks of up to IF_CONVERT_MAX instructions, IF_CONVERT_MAX_LOADS where one
    loads, and an ``if (a && b)`` whose middle block's values die at the join; where ptxas and
    nvdisasm are installed, ptxas is asked again."""
    ptx = _hammock(*case)
    prog = prepare(parse_ptx(ptx), "h", EmulationOptions(mode="full"))
    regions = T.KernelTiming(prog, "sm_90", footprint=1024).regions()
    assert bool(regions) is IF_CONVERSIONS[case]
    if regions:
        ((head, chain),) = regions.items()
        assert len(chain) == (4 if case[0] == "andand" else 3)
    if which("ptxas") and which("nvdisasm"):
        (tmp_path / "h.ptx").write_text(ptx)
        subprocess.run(["ptxas", "-arch=sm_90", "-O3", str(tmp_path / "h.ptx"), "-o", str(tmp_path / "h.cubin")],
                       check=True)
        sass = subprocess.run([which("nvdisasm"), "-c", str(tmp_path / "h.cubin")], check=True,
                              capture_output=True, text=True).stdout
        branches = len(re.findall(r"@!?P\d +BRA", sass))
        assert (branches == 1) is IF_CONVERSIONS[case], sass  # the loop's (and the hammock's, and its loop's)


def _trip_with_guards_holding(ptx: str, shares: tuple[float, ...]) -> list[float]:
    """The trip cost of ``_guarded_loads``'s region where its load blocks ran in each share of
    the region's runs (the launch's warp executions, as ``estimate`` passes them)."""
    prog = prepare(parse_ptx(ptx), "guarded", EmulationOptions(mode="full"))
    ((head, chain),) = T.KernelTiming(prog, "sm_90", footprint=1024).regions().items()
    sides = [b for b in chain if any(T.classify(op) == "ld_global" for op in prog.block_instrs[b])]
    return [T.KernelTiming(prog, "sm_90", footprint=1024,
                           block_execs=[100.0 * share if b in sides else 100.0 for b in range(prog.num_blocks)])
            .pair_cost(chain[-1], head) for share in shares]


def test_a_predicated_load_is_waited_for_as_often_as_its_guard_holds():
    """A predicated-off load fetches nothing and holds up no user: a region's side blocks
    count their latencies in the share of the region's runs in which they ran (the launch's
    warp executions; HeCBench jaccard_is_opt's merge loop, whose weight load runs only where
    two column indices are equal, was estimated 3.7x too slow when every trip waited for it)."""
    lat = T.load_arch("sm_90").memory["l2_latency"]
    ptx = _guarded_loads("add.f32 %f1, %f1, F;")
    full, half, none = _trip_with_guards_holding(ptx, (1.0, 0.5, 0.0))
    assert full >= lat > none and full > half > none
    assert half == pytest.approx(none + (full - none) / 2, rel=0.1)
    # with a barrier in the loop every warp waits for those whose guard held (the halo loads
    # of cuda-samples' FiniteDifferencesKernel): the loads count whole
    synced = ptx.replace("    add.s32 %r1, %r1, %r2;", "    bar.sync 0;\n    add.s32 %r1, %r1, %r2;")
    full, none = _trip_with_guards_holding(synced, (1.0, 0.0))
    assert full == none >= lat


def test_a_region_at_the_kernel_entry_costs_its_side_blocks():
    """``if (i < n) y[i] = a * x[i] + y[i]``: the guarded body is predicated, one region from
    the kernel's first block, which no edge enters -- its warps' time is the whole region's
    (the loads' latency), not the first block's alone (a warp latency of 43 clocks before)."""
    lat = T.load_arch("sm_90").memory["l2_latency"]
    emu = Emulator(parse_ptx_file(str(ROOT / "examples/saxpy.ptx")))
    L = Launch(kernel="saxpy", grid=4, block=256, args=[1000, 2.0, "x", "y"],
               buffers={"x": np.arange(1000, dtype=np.float32), "y": np.ones(1000, np.float32)})
    r = emu.run(L)
    est = estimate_run(emu, L, r)
    prog = emu.program_for(L)
    assert 0 in T.KernelTiming(prog, "sm_90").regions()
    assert lat < est.warp["latency"] < 2 * lat


WAITED = kernel("waited(.param .u64 w_a)", """
    ld.param.u64 %rd1, [w_a];
    ld.global.f32 %f1, [%rd1];
    setp.gt.f32 %p1, %f1, 0f00000000;
    @%p1 bra $L_pos;
    mul.f32 %f2, %f1, %f1;
    mul.f32 %f2, %f2, %f1;
    mul.f32 %f2, %f2, %f1;
    mul.f32 %f2, %f2, %f1;
    mul.f32 %f2, %f2, %f1;
    mul.f32 %f2, %f2, %f1;
    mul.f32 %f2, %f2, %f1;
    mul.f32 %f2, %f2, %f1;
    st.global.f32 [%rd1], %f2;
$L_pos:
    ret;
""")


def test_a_value_its_own_block_waited_for_is_ready_in_the_next():
    """A load compared and branched on in its block: the block ends after the load's
    latency, so the side block using the value again does not wait for it a second time
    (HeCBench chi2's column walk paid each byte load once in its block and again in every
    side block: -75 %, once the branches were kept as ptxas keeps them, +160 %)."""
    lat = T.load_arch("sm_90").memory["l2_latency"]
    prog = prepare(parse_ptx(WAITED), "waited", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    assert kt.regions() == {}  # (eight multiplies and a store: the branch stays)
    assert kt.block_latency(0) >= lat
    assert kt.pair_cost(0, 1) < 100


def test_a_predicated_side_block_issues_whether_its_guard_holds_or_not():
    """ptxas predicates a short side block, so its instructions issue every time the region
    runs (quasirandomGenerator's 31 table loads and XORs, about half of them guarded off): the
    estimate's issue slots and units count them per run of the region, whichever sides the
    PTX counts say ran.  g_n = 1: one of the four guarded loads runs; 1000: all four."""
    slots = {}
    for n in (1, 1000):
        emu = Emulator(parse_ptx(_guarded_loads("add.f32 %f1, %f1, F;")))
        L = Launch(kernel="guarded", grid=1, block=32, args=["a", n], buffers={"a": np.zeros(256, np.float32)})
        r = emu.run(L)
        est = estimate_run(emu, L, r)
        slots[n] = (est.warp["issue_slots"], est.warp["unit_cycles"]["lsu"], int(r.metrics["inst_executed"]))
    assert slots[1][:2] == slots[1000][:2]
    assert slots[1][2] == slots[1000][2] - 3 * 2  # the PTX counts: three loads and adds fewer


INVARIANT = kernel("invariant(.param .u64 v_a, .param .u32 v_n, .param .u32 v_s)", """
    ld.param.u64 %rd1, [v_a];
    ld.param.u32 %r2, [v_n];
    ld.param.u32 %r3, [v_s];
    ld.global.f32 %f1, [%rd1];
    mov.u32 %r1, 0;
    mov.f32 %f2, 0f00000000;
$L_loop:
    add.f32 %f2, %f2, %f1;
    add.s32 %r1, %r1, %r3;
    setp.lt.s32 %p1, %r1, %r2;
    @%p1 bra $L_loop;
    st.global.f32 [%rd1], %f2;
    ret;
""")


def test_a_value_made_before_a_loop_is_ready_on_later_trips():
    """The loop adds a value loaded before it (binomialOptions' constants): its first trip
    waits for the load (the edge into the loop), later trips do not -- the load is long done
    -- where every trip used to wait its latency again (cuda-samples' binomialOptions at 64
    CTAs: +157 %, now +9 %)."""
    prog = prepare(parse_ptx(INVARIANT), "invariant", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    (loop,) = [b for b in range(prog.num_blocks) if b in prog.cfg.succs[b]]
    (entry,) = [p for p in prog.cfg.preds[loop] if p != loop]
    l2 = T.load_arch("sm_90").memory["l2_latency"]
    assert kt.unrolled(loop) is None  # a register stride: one iteration a trip
    assert kt.pair_cost(entry, loop) >= l2 - 20  # the first trip waits for the load
    assert kt.pair_cost(loop, loop) < 30  # later trips: the loop's own chain only


GATHER = kernel("gather(.param .u64 g_ptr, .param .u64 g_idx, .param .u64 g_x)", """
    ld.param.u64 %rd1, [g_ptr];
    ld.param.u64 %rd2, [g_idx];
    ld.param.u64 %rd3, [g_x];
    ld.global.u32 %r1, [%rd1];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd2, %rd4;
    ld.global.u32 %r2, [%rd5];
    mul.wide.u32 %rd6, %r2, 4;
    add.s64 %rd7, %rd3, %rd6;
    ld.global.f32 %f1, [%rd7];
    ld.global.u32 %r3, [%rd1+4];
    mul.wide.u32 %rd8, %r3, 4;
    add.s64 %rd9, %rd2, %rd8;
    ld.global.u32 %r4, [%rd9];
    mul.wide.u32 %rd10, %r4, 4;
    add.s64 %rd11, %rd3, %rd10;
    ld.global.f32 %f2, [%rd11];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd3], %f3;
    ret;
""")


def test_independent_load_chains_issue_level_by_level():
    """Two chains of three dependent loads (a sparse matrix-vector product's pointer, column
    index and vector element, NVVM-unrolled: Parboil's spmv_jds): a load goes after every
    load that waits for nothing, as ptxas's list scheduler issues them, so the two chains'
    loads are in flight level by level -- three latencies, not six."""
    prog = prepare(parse_ptx(GATHER), "gather", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)
    loads = [op.operands_ast[0][1] for op in kt.order[0] if T.classify(op) == "ld_global"]
    assert loads == ["%r1", "%r3", "%r2", "%r4", "%f1", "%f2"]  # pointers, indices, elements
    l2 = T.load_arch("sm_90").memory["l2_latency"]
    assert 3 * l2 < kt.block_latency(0) < 3 * l2 + 80


CONFLICT = kernel("conflict(.param .u64 c_out)", """
    .shared .align 4 .b8 sh[4096];
    ld.param.u64 %rd1, [c_out];
    mov.u32 %r1, %tid.x;
    and.b32 %r1, %r1, 31;
    shl.b32 %r2, %r1, 7;
    mov.u32 %r3, sh;
    add.s32 %r4, %r3, %r2;
    ld.shared.f32 %f1, [%r4];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.f32 [%rd2], %f1;
    ret;
""")


def test_a_lone_warp_takes_the_sms_l1_rate():
    """A 32-way bank-conflicted shared load (each lane a word 128 bytes from the next: 32
    wavefronts) keeps the L1 busy a sub-partition's share of the time when the SM has a warp
    on every sub-partition, and a quarter of it when one warp is all the SM has (a launch of
    one-warp CTAs on separate SMs: llm.c's attention_forward_kernel2)."""
    lsu = {}
    for block in (32, 128):
        emu = Emulator(parse_ptx(CONFLICT))
        L = Launch(kernel="conflict", grid=1, block=block, args=["out"], buffers={"out": np.zeros(1, np.float32)})
        lsu[block] = estimate_run(emu, L).warp["unit_cycles"]["lsu"]
    per_smsp = T.load_arch("sm_90").memory["lsu_bytes_per_clk"] / 4
    assert lsu[128] >= 32 * 128 / per_smsp  # the conflicted load alone: 32 wavefronts at a quarter of the rate
    assert lsu[32] <= lsu[128] / 3


DIVERGE = kernel("diverge(.param .u64 d_out)", """
    ld.param.u64 %rd1, [d_out];
    mov.u32 %r1, %tid.x;
    cvt.rn.f32.u32 %f1, %r1;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra $L_join;
    mul.f32 %f1, %f1, %f1;
    mul.f32 %f1, %f1, %f1;
$L_join:
    add.f32 %f2, %f1, %f1;
    add.f32 %f2, %f2, %f1;
    st.global.f32 [%rd1], %f2;
    ret;
""")


def test_a_block_after_a_divergent_branch_is_charged_once_per_execution():
    # half the lanes skip the two multiplies: the warp runs both sides and the join block
    # once; both edges into the join carry one arrival, which together cost one execution
    out = np.zeros(1, np.float32)
    emu = Emulator(parse_ptx(DIVERGE), mode="full")
    L = Launch(kernel="diverge", grid=1, block=32, args=["out"], buffers={"out": out})
    est = estimate_run(emu, L)
    join = next(b for b in est.blocks if b.name == "$L_join")
    assert join.warp_executions == 1 and len(join.pair_costs) == 2
    costs = list(join.pair_costs.values())
    assert join.cycles == pytest.approx(sum(costs) / 2)


def test_pairwise_overlap_exposes_and_hides_latency():
    prog = prepare(parse_ptx(OVERLAP), "ov", EmulationOptions(mode="full"))
    kt = T.KernelTiming(prog, "sm_90", footprint=1024)  # buffers in L2: loads take the L2 latency
    names = {prog.cfg.name(i): i for i in range(prog.num_blocks)}
    a, use, indep = 0, names["$L_use"], 1
    l2 = T.load_arch("sm_90").memory["l2_latency"]
    # the block that consumes the load right after it waits for most of its latency (the
    # load issues right after the ld.param of its address, ahead of mov/setp: ptxas order) ...
    assert kt.order[a].index(next(op for op in kt.order[a] if op.spec.name == "ld" and T.classify(op) == "ld_global")) == 2
    assert kt.pair_cost(a, use) > l2 - 30
    # ... the block that does not, runs under it: about its own issue slots
    assert kt.pair_cost(a, indep) <= kt.block_latency(indep) + 8
    assert kt.pair_cost(a, indep) < 20
    # alone, the consumer is conservative: the load was the producer's last-but-one
    # instruction (one issue slot, the branch, follows it), so it is still in flight
    assert kt.block_latency(use) >= l2 - 1


# -- occupancy --------------------------------------------------------------------------------


@pytest.mark.parametrize("arch,threads,regs,smem,ctas,limiter", [
    # 256 threads = 8 warps; 64 warps per SM: 8 CTAs (warps); 32 regs x 32 lanes = 1024
    # registers per warp, 16 warps per quarter register file: 64 warps, no limit
    ("sm_90", 256, 32, 0, 8, "warps"),
    # 64 regs: 2048 per warp, 8 warps per quarter: 32 warps = 4 CTAs
    ("sm_90", 256, 64, 0, 4, "registers"),
    # 40 regs: 1280 per warp, floor(16384 / 1280) = 12 per quarter: 48 warps = 6 CTAs
    ("sm_90", 256, 40, 0, 6, "registers"),
    # 255 regs (max): 8192 per warp, 2 per quarter: 8 warps = 1 CTA of 256 threads
    ("sm_90", 256, 255, 0, 1, "registers"),
    # 48 KB shared + 1 KB reserved = 50176 B: floor(233472 / 50176) = 4 CTAs
    ("sm_90", 256, 16, 48 * 1024, 4, "shared"),
    # the same on the A100: floor(167936 / 50176) = 3
    ("sm_80", 256, 16, 48 * 1024, 3, "shared"),
    # 8000 bytes + 1024 reserved = 9024, rounded to 128: 9088; floor(233472 / 9088) = 25
    ("sm_90", 64, 16, 8000, 25, "shared"),
    # 32-thread CTAs: 32 CTAs per SM = 32 warps (50 %)
    ("sm_90", 32, 16, 0, 32, "ctas"),
    # 1024 threads = 32 warps: 2 CTAs
    ("sm_80", 1024, 32, 0, 2, "warps"),
    # 1024 threads, 33 regs -> 40 after rounding to 8: 1280 per warp, 48 warps: 1 CTA
    ("sm_80", 1024, 33, 0, 1, "registers"),
])
def test_occupancy(arch, threads, regs, smem, ctas, limiter):
    o = T.occupancy(arch, threads, regs, smem)
    assert o.ctas_per_sm == ctas
    assert o.limiter == limiter
    assert o.warps_per_sm == ctas * math.ceil(threads / 32)
    assert o.fraction == o.warps_per_sm / 64


def test_occupancy_refuses_impossible_launches():
    with pytest.raises(T.TimingError, match="shared memory"):
        T.occupancy("sm_80", 128, 16, 200 * 1024)
    with pytest.raises(T.TimingError, match="threads per CTA"):
        T.occupancy("sm_90", 2048, 16, 0)


def test_registers_from_liveness_and_maxnreg():
    k = 24
    body = [f"ld.global.f32 %f{10 + i}, [%rd2+{4 * i}];" for i in range(k)]
    body += [f"add.f32 %f{40 + i}, %f{40 + i - 1 if i else 10}, %f{11 + i};" for i in range(k - 1)]
    body += [f"mov.f32 %f1, %f{40 + k - 2};"]
    prog = prepare(parse_ptx(straight_line(body)), "k", EmulationOptions(mode="full"))
    # right after the last load: the address %rd2 (64 bits: 2 registers, live until
    # the final store) and the 24 loaded values; %rd1 died when cvta read it
    assert T.max_live_registers(prog) == 2 + k
    regs, how = T.estimate_registers(prog, "sm_90")
    assert regs == 2 + k + T.load_arch("sm_90").occupancy["register_reserve"] and how == "SSA liveness"
    capped = prepare(parse_ptx(straight_line(body, directives="\n.maxnreg 16")), "k", EmulationOptions(mode="full"))
    assert T.estimate_registers(capped, "sm_90") == (16, "SSA liveness, capped by .maxnreg")


# -- CTAs over SMs: waves, bandwidth bounds (synthetic counts, no emulation) ------------------

COPY = kernel("copy(.param .u64 copy_x, .param .u64 copy_y)", """
    ld.param.u64 %rd1, [copy_x];
    ld.param.u64 %rd2, [copy_y];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f1;
    ret;
""")


def synthetic(grid, block=256, count=1 << 20, arch="sm_90"):
    """Estimate COPY for a launch whose counts are written by hand: one block,
    every warp runs it once with 32 threads.  ``count`` floats per buffer."""
    prog = prepare(parse_ptx(COPY), "copy", EmulationOptions(mode="full"))
    L = Launch(kernel="copy", grid=grid, block=block, args=["x", "y"],
               buffers={"x": BufferSpec("x", "float32", count), "y": BufferSpec("y", "float32", count)})
    counters = np.zeros(abi.BLOCK_COUNTERS * prog.num_blocks + 1, np.int64)
    warps = L.num_ctas * math.ceil(block / 32)
    counters[0], counters[1] = warps, L.threads
    return T.estimate(prog, L, arch, counters=counters)


def test_waves_over_sms():
    one = synthetic(132 * 8)  # 8 CTAs of 8 warps per SM: exactly one wave
    two = synthetic(132 * 8 * 2)
    three = synthetic(132 * 8 * 2 + 1)  # one CTA more: a third round on one SM
    assert (one.waves, two.waves, three.waves) == (1, 2, 3)
    assert (one.ctas_per_busiest_sm, two.ctas_per_busiest_sm, three.ctas_per_busiest_sm) == (8, 16, 17)
    assert two.components["sm"] == 2 * one.components["sm"]
    a = T.load_arch("sm_90")
    # the last round holds one CTA: one warp-pair per sub-partition, latency-bound
    single = synthetic(1)
    assert three.components["sm"] == pytest.approx(two.components["sm"] + single.components["sm"])
    # latency-bound: one warp's latency plus sm_overlap of the round's next bound (its issue)
    issue = -(-8 // a.sub_partitions) * single.warp["issue_slots"] / a.issue_per_cycle
    assert single.components["sm"] == pytest.approx(single.warp["latency"] + a.sm_overlap * issue + a.cta_launch_cycles)
    assert three.time_us == pytest.approx(three.cycles / a.clock_mhz + a.launch_overhead_us)


def test_issue_bound_when_the_sm_is_full():
    est = synthetic(132 * 8)
    # 64 warps on 4 sub-partitions: 16 each; every warp issues the block's 9 PTX
    # instructions (add.s64 counts 2 SASS ops): 11 issue slots
    assert est.warp["issue_slots"] == 11
    assert est.components["sm_issue"] == 16 * 11
    assert est.warp["unit_cycles"]["lsu"] == 8  # a load and a store, 4 clocks each


def test_dram_bound_when_buffers_exceed_l2():
    n = 20_480_000  # 80 MB per buffer: 160 MB > 50 MB of L2
    est = synthetic(n // 1024, block=1024, count=n)
    a = T.load_arch("sm_90")
    moved = min(8.0 * n, 2 * 4.0 * n)
    rate = a.memory["dram_gbs"] * 1e3 / a.clock_mhz * a.memory["dram_efficiency"]
    assert est.components["dram_bandwidth"] == pytest.approx(moved / rate)
    # the largest bound plus bound_overlap of the others
    chip = {k: v for k, v in est.components.items() if k in ("sm", "l2_bandwidth", "dram_bandwidth", "cta_dispatch")}
    top = max(chip.values())
    assert est.cycles == pytest.approx(top + a.bound_overlap * (sum(chip.values()) - top))
    small = synthetic(n // 256, count=1 << 20)  # buffers that fit in L2: re-reads, no DRAM traffic
    assert small.memory["dram_bytes"] == 0 and small.bound != "dram_bandwidth"


# -- whole launches -----------------------------------------------------------------------


def test_estimate_run_emulates_the_launch():
    emu = Emulator(parse_ptx(LOOP), mode="slice")
    L = Launch(kernel="loop", grid=2, block=64, args=["out", 7], buffers={"out": np.zeros(1, np.float32)})
    est = estimate_run(emu, L, arch="sm_80")
    body = next(b for b in est.blocks if b.name == "$L_loop")
    assert body.warp_executions == 7 * 4
    assert est.arch == "sm_80" and est.occupancy.warps_per_cta == 2


def test_memory_metrics_make_strided_loads_dearer():
    lsu = {}
    for stride in (1, 32):
        emu = Emulator(parse_ptx(strided_kernel(stride)), memory_metrics=True)
        L = Launch(kernel="strided", grid=1, block=32, args=["a"], buffers={"a": np.zeros(32 * 32, np.float32)})
        est = estimate_run(emu, L)
        lsu[stride] = est.warp["unit_cycles"]["lsu"]
        assert any("measured sectors" in n for n in est.notes)
    # coalesced: 4 sectors of one line per request, stride 32: 32 lines -- a clock a line of
    # the SM's L1, which this launch's one warp has to itself (with a warp on every
    # sub-partition a request takes a sub-partition's share: 4x as long,
    # test_a_lone_warp_takes_the_sms_l1_rate)
    assert lsu[1] == 2 and lsu[32] == 64


LAUNCH_FILES = sorted(glob.glob(os.path.join(LAUNCHES, "*.toml")))


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=[os.path.basename(p) for p in LAUNCH_FILES])
def test_smoke_project_kernels(path):
    for L in launches_from_toml(path):
        emu = Emulator(parse_ptx_file(L.file))
        r = emu.run(L)
        for arch in ("sm_90", "sm_80"):
            est = estimate_run(emu, L, r, arch)
            a = T.load_arch(arch)
            assert math.isfinite(est.cycles) and est.cycles > 0
            assert est.time_us == pytest.approx(est.cycles / a.clock_mhz + a.launch_overhead_us)
            assert est.bound in {"latency", "issue", "l2_bandwidth", "dram_bandwidth"} or est.bound.startswith("unit:")
            assert 1 <= est.occupancy.ctas_per_sm <= a.occupancy["max_ctas_per_sm"]
            # every warp-execution of a block is costed: the blocks add up to the warps' latency
            total = sum(b.cycles for b in est.blocks)
            assert total == pytest.approx(est.warp["latency"] * est.warp["warps"])
            inst = sum(b.warp_executions * b.instructions for b in est.blocks)
            assert inst == r.metrics["inst_executed"]
            json.dumps(est.as_dict())


def test_cli_estimate_time(hypa_opt_cli):
    toml = os.path.join(ROOT, "tests/kernels/launches/saxpy.toml")
    ptx = os.path.join(ROOT, "tests/kernels/ptx/saxpy.sm_80.ptx")
    base = ["--emulate", "--launch", toml, ptx]
    code, out, err = hypa_opt_cli(*base, "--format", "json", "--estimate-time=sm_80")
    assert code == 0, err
    recs = json.loads(out)
    assert len(recs) == 2 and all(r["time_estimate"]["arch"] == "sm_80" for r in recs)
    assert recs[0]["time_estimate"]["occupancy"]["ctas_per_sm"] == 8
    code, out, err = hypa_opt_cli(*base, "--format", "csv", "--estimate-time")
    header = out.splitlines()[0].split(",")
    assert header[-4:] == ["est_time_us", "est_cycles", "est_bound", "est_arch"]
    assert out.splitlines()[1].endswith("sm_90")
    code, out, err = hypa_opt_cli(*base, "--estimate-time")
    assert "time estimate (sm_90" in out and "estimated_time" in out
    # the option's optional value must not swallow the input file
    code, out, err = hypa_opt_cli("--emulate", "--launch", toml, "--estimate-time", ptx)
    assert code != 0 and "--estimate-time=ARCH" in err


# -- the GPU timing script (its GPU-free parts) and the validation script ------------------


def test_time_kernels_reads_signatures_and_arguments():
    tk = load_script("benchmarks/gpu/time_kernels.py")
    ptx = open(os.path.join(ROOT, "tests/kernels/ptx/half_math.sm_80.ptx")).read()
    sigs = tk.entry_signatures(ptx)
    name = tk.resolve_kernel(list(sigs), "half2_axpy")
    assert name.startswith("_Z10half2_axpy")
    assert sigs[name] == [("b8", 4), ("u64", 1), ("u64", 1), ("u32", 1)]
    assert tk.scalar_argument("b8", 4, 0x3C003C00).dtype == np.uint32
    assert tk.scalar_argument("f32", 1, 2.5) == np.float32(2.5)
    assert tk.scalar_argument("u32", 1, -1) == np.uint32(0xFFFFFFFF)
    assert tk.scalar_argument("s32", 1, -7) == np.int32(-7)
    items = tk.plan([os.path.join(ROOT, "tests/kernels/launches/saxpy.toml"),
                     os.path.join(ROOT, "tests/kernels/launches/printf.toml")])
    assert [it["status"] for it in items] == ["ok", "ok", "skipped: calls printf"]
    assert items[0]["kernel"] == "saxpy" and items[0]["toml"] == "tests/kernels/launches/saxpy.toml"
    with pytest.raises(ValueError, match="no kernel"):
        tk.resolve_kernel(list(sigs), "nope")


def test_time_kernels_bad_spec_is_a_message(tmp_path):
    """A launch spec the launch module refuses stops the plan with the file and the reason."""
    tk = load_script("benchmarks/gpu/time_kernels.py")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[launch]]\nkernel = "k"\ngrid = [1, 65536]\nblock = [32]\nargs = []\n')
    with pytest.raises(SystemExit, match=r"bad\.toml: grid\.y = 65536 is more than CUDA allows \(65535\)"):
        tk.plan([str(bad)])


def test_timing_validate_errors_and_summary():
    tv = load_script("benchmarks/timing_validate.py")
    # measured times made from the estimates: twice the estimate, and equal to it
    emu = Emulator(parse_ptx_file(os.path.join(ROOT, "tests/kernels/ptx/saxpy.sm_80.ptx")), address_trace=T.TRACE_RECORDS)
    Ls = launches_from_toml(os.path.join(ROOT, "tests/kernels/launches/saxpy.toml"))
    est = [estimate_run(emu, L).time_us for L in Ls]
    data = {"empty_kernel": {"median_us": 1.0}, "kernels": [
        {"toml": "tests/kernels/launches/saxpy.toml", "launch_index": 0, "median_us": 2 * est[0]},
        {"toml": "tests/kernels/launches/saxpy.toml", "launch_index": 1, "median_us": est[1]},
        {"toml": "tests/kernels/launches/printf.toml", "launch_index": 0, "status": "skipped: calls printf"}]}
    rows, skipped = tv.compare(data, "sm_90")
    assert [round(r.error_pct, 6) for r in rows] == [-50.0, 0.0]
    assert skipped == ["tests/kernels/launches/printf.toml[0]: skipped: calls printf"]
    s = tv.summarize(rows)["total"]
    assert s["n"] == 2 and s["median_abs_error_pct"] == pytest.approx(25.0) and s["worst_abs_error_pct"] == pytest.approx(50.0)
    text = tv.render(rows, tv.summarize(rows), skipped, "sm_90", "median_us")
    assert "median |error| 25.0 %" in text and "saxpy.toml[0]" in text


def test_reuse_hit_model():
    # 8 KB of buffers, a million reads of 4 bytes: all but the first touch of each
    # byte are re-reads, timed as L1 hits; first touches hit L2 (the data fit in it)
    est = synthetic(132 * 8, count=1024)
    a = T.load_arch("sm_90")
    read = 132 * 8 * 256 * 4
    hit = 1 - 8192 / read
    assert est.memory["read_bytes"] == read and est.memory["reuse_hit_rate"] == pytest.approx(hit)
    m = a.memory
    assert est.memory["global_load_latency"] == pytest.approx(hit * m["l1_latency"] + (1 - hit) * m["l2_latency"])
    # one read per byte: no reuse, L2 latency
    est = synthetic(1, count=256)
    assert est.memory["reuse_hit_rate"] == 0 and est.memory["global_load_latency"] == m["l2_latency"]


ONE_THREAD = kernel("one(.param .u64 o_out)", """
    ld.param.u64 %rd1, [o_out];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r2, 0;
$L_loop:
    add.f32 %f1, %f1, 0f3F800000;
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, 200;
    @%p1 bra $L_loop;
    st.global.f32 [%rd1], %f1;
$L_done:
    ret;
""")


def test_a_cta_lasts_as_long_as_its_critical_warp():
    # one thread of 8 warps does the work: the latency bound is that warp's, not the mean
    # warp's (the critical steps over the mean warp's steps)
    out = np.zeros(1, np.float32)
    emu = Emulator(parse_ptx(ONE_THREAD), address_trace=1024)
    L = Launch(kernel="one", grid=1, block=256, args=["out"], buffers={"out": out})
    r = emu.run(L)
    steps, crit = int(r.cta_steps[0]), int(r.cta_critical_steps[0])
    assert crit == 4 + 2 + 200 * 4 + 2 and steps == crit + 7 * 5  # the 7 idle warps: 4 + ret
    est = estimate_run(emu, L, r)
    assert est.memory["warp_skew"] == pytest.approx(8 * crit / steps)
    assert f"(the critical warp: {8 * crit / steps:.2f}x the mean warp's steps)" in T.format_estimate(est)
    r.cta_critical_steps = None  # without the critical steps: the mean warp
    mean = T.estimate(r, L, program=emu.program_for(L))
    assert mean.memory["warp_skew"] == 1.0
    assert est.warp["latency"] == pytest.approx(mean.warp["latency"] * 8 * crit / steps)


INT_LOOP = kernel("intloop(.param .u64 i_out, .param .u32 i_n)", """
    ld.param.u64 %rd1, [i_out];
    ld.param.u32 %r9, [i_n];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
    mov.f32 %f1, 0f3F800000;
$L_loop:
    add.s32 %r1, %r1, 3;
    xor.b32 %r1, %r1, 5;
    add.s32 %r1, %r1, 7;
    FP
    add.s32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r9;
    @%p1 bra $L_loop;
    cvt.rn.f32.u32 %f2, %r1;
    add.f32 %f1, %f1, %f2;
    st.global.f32 [%rd1], %f1;
    ret;
""")


@pytest.mark.parametrize("fp32", [0, 8])
def test_integer_work_shares_the_fma_pipe(fp32):
    # one warp per sub-partition: the int class's bound is its lane-clocks over the ALU lanes
    # plus the FMA pipe's integer half (64 + 64), or with FP32 work beside it, both kinds'
    # lane-clocks over both pipes (64 + 128)
    ptx = INT_LOOP.replace("FP", "\n    ".join(["fma.rn.f32 %f1, %f1, %f1, %f1;"] * fp32))
    emu = Emulator(parse_ptx(ptx), mode="full")
    L = Launch(kernel="intloop", grid=1, block=128, args=["out", 100], buffers={"out": np.zeros(1, np.float32)})
    est = estimate_run(emu, L)
    ci, cf = est.warp["unit_cycles"]["int"], est.warp["unit_cycles"].get("fp32", 0.0)
    assert ci >= 2 * 5 * 100  # 5 int ops an iteration, 2 clocks each on the ALU pipe alone
    want = max(ci * 64 / 128, (ci * 64 + cf * 128) / 192)
    assert est.components["sm_unit:int"] == pytest.approx(want)
    assert (want == ci / 2) == (fp32 == 0)
