"""Emulator metrics on kernels whose answer is worked out by hand, in slice and full mode."""

import numpy as np
import pytest

from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import EmulationError, Emulator
from hypa.runtime.emulator.launch import Launch, LaunchError

from helpers import emulate, kernel, store_at_tid

IF_ELSE = kernel("div(.param .u64 div_out)", """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra $L_then;
    mul.lo.s32 %r2, %r1, 3;
    bra.uni $L_join;
$L_then:
    mul.lo.s32 %r2, %r1, 5;
$L_join:
""" + store_at_tid("div_out", "%r2"))


def run(text, mode, block=64, grid=1, n_out=64, **kw):
    return emulate(text, ["out"], {"out": np.zeros(n_out, np.uint32)}, mode=mode, grid=grid, block=block, **kw)


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_divergent_if_else_on_64_threads(mode):
    # Two warps.  bb0 (3 instructions): both warps, 64 threads.  The else
    # block (2): warp 0 with lanes 16..31 and warp 1 whole: 2 warps, 48
    # threads.  The then block (1): warp 0 lanes 0..15: 1 warp, 16 threads.
    # The join (5): both warps reconverged, 64 threads.
    r = run(IF_ELSE, mode)
    m = r.metrics.values
    assert m["inst_executed"] == 3 * 2 + 2 * 2 + 1 * 1 + 5 * 2 == 21
    assert m["thread_inst_executed"] == 3 * 64 + 2 * 48 + 1 * 16 + 5 * 64 == 624
    # bra in bb0 twice, bra.uni in the else block twice; only warp 0 diverges
    assert m["branch"] == 4
    assert m["divergent_branch"] == 1
    assert m["branch_efficiency"] == 75.0
    assert m["static_instructions"] == 11
    assert m["static_estimate"] == 11 * 64
    blocks = {b.name: (b.warps, b.threads, b.divergent) for b in r.metrics.blocks}
    assert blocks == {"bb0": (2, 64, 1), "bb1": (2, 48, 0), "$L_then": (1, 16, 0), "$L_join": (2, 64, 0)}
    if mode == "full":
        tid = np.arange(64)
        assert np.array_equal(r.buffers["out"], np.where(tid < 16, tid * 5, tid * 3))
        assert m["executed_fraction"] == 1.0
    else:
        # the slice: mov, setp, bra -- 3 of the 624 thread instructions per ... 3*64
        assert m["executed_fraction"] == pytest.approx(3 * 64 / 624)


def test_negated_guard_gives_the_same_counts():
    text = IF_ELSE.replace("setp.lt.u32 %p1, %r1, 16;\n    @%p1", "setp.ge.u32 %p1, %r1, 16;\n    @!%p1")
    for mode in ("full", "slice"):
        m = run(text, mode).metrics.values
        assert (m["inst_executed"], m["thread_inst_executed"], m["divergent_branch"]) == (21, 624, 1)


LOOP = kernel("loop(.param .u64 loop_out)", """
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    mov.u32 %r3, 0;
$L_loop:
    add.s32 %r3, %r3, 1;
    setp.le.s32 %p1, %r3, %r2;
    @%p1 bra $L_loop;
""" + store_at_tid("loop_out", "%r3"))


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_loop_with_lane_dependent_trip_count(mode):
    # One warp; lane l iterates (l % 4) + 1 times.  The loop block runs with
    # 32, 24, 16 and 8 lanes; the first three exits split the warp.
    r = run(LOOP, mode, block=32, n_out=32)
    m = r.metrics.values
    assert m["inst_executed"] == 3 + 3 * 4 + 5 == 20
    assert m["thread_inst_executed"] == 3 * 32 + 3 * (32 + 24 + 16 + 8) + 5 * 32 == 496
    assert (m["branch"], m["divergent_branch"]) == (4, 3)
    assert m["branch_efficiency"] == 25.0
    if mode == "full":
        assert np.array_equal(r.buffers["out"], np.arange(32) % 4 + 1)


NESTED = kernel("nest(.param .u64 nest_out)", """
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 0;
    setp.ge.u32 %p1, %r1, 16;
    @%p1 bra $L_outer_else;
    setp.ge.u32 %p2, %r1, 8;
    @%p2 bra $L_inner_else;
    mov.u32 %r2, 1;
    bra.uni $L_inner_join;
$L_inner_else:
    mov.u32 %r2, 2;
$L_inner_join:
    add.s32 %r2, %r2, 10;
    bra.uni $L_join;
$L_outer_else:
    mov.u32 %r2, 3;
$L_join:
""" + store_at_tid("nest_out", "%r2"))


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_nested_divergence(mode):
    # One warp.  bb0 (4): 32 lanes, diverges (16/16).  bb1 inner test (2):
    # lanes 0..15, diverges (8/8).  inner then (2): 8 lanes.  inner else (1):
    # 8 lanes.  inner join (2): 16 lanes.  outer else (1): 16 lanes.
    # join (5): 32 lanes.
    r = run(NESTED, mode, block=32, n_out=32)
    m = r.metrics.values
    assert m["inst_executed"] == 4 + 2 + 2 + 1 + 2 + 1 + 5 == 17
    assert m["thread_inst_executed"] == 4 * 32 + 2 * 16 + 2 * 8 + 1 * 8 + 2 * 16 + 1 * 16 + 5 * 32 == 392
    # bra in bb0, bra in bb1, bra.uni after the inner then, bra.uni in the inner join
    assert (m["branch"], m["divergent_branch"]) == (4, 2)
    if mode == "full":
        tid = np.arange(32)
        assert np.array_equal(r.buffers["out"], np.where(tid < 8, 11, np.where(tid < 16, 12, 3)))


BRX_SAME_JOIN = kernel("sw(.param .u64 sw_out)", """
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 7;
    mov.u32 %r3, 100;
    setp.gt.u32 %p1, %r2, 2;
    @%p1 bra $L_join;
    $L_t: .branchtargets $L_a, $L_b, $L_c;
    brx.idx %r2, $L_t;
$L_a:
    mov.u32 %r3, 10;
    bra.uni $L_join;
$L_b:
    mov.u32 %r3, 11;
    bra.uni $L_join;
$L_c:
    mov.u32 %r3, 12;
$L_join:
""" + store_at_tid("sw_out", "%r3"))


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_brx_inside_a_divergent_branch_reconverges_once(mode):
    # The bra's and the brx's immediate post-dominator are both $L_join: the
    # warp runs $L_join once (a second reconvergence entry at the same block
    # ran it twice: the GPU's SASS does it once, as ncu's store requests show).
    # bb0 (5): 32 lanes, diverges 20/12.  brx block (1): 12 lanes, 3 targets of 4.
    # $L_a, $L_b (2 each), $L_c (1): 4 lanes.  $L_join (5): 32 lanes, once.
    r = run(BRX_SAME_JOIN, mode, block=32, n_out=32)
    m = r.metrics.values
    assert m["inst_executed"] == 5 + 1 + 2 + 2 + 1 + 5 == 16
    assert m["thread_inst_executed"] == 5 * 32 + 12 + 2 * 4 + 2 * 4 + 4 + 5 * 32 == 352
    assert (m["branch"], m["divergent_branch"]) == (4, 2)
    if mode == "full":
        k = np.arange(32) & 7
        assert np.array_equal(r.buffers["out"], np.where(k > 2, 100, 10 + k))


def test_out_of_bounds_access_is_reported():
    out = np.zeros(10, np.uint32)  # the kernel writes 64 elements
    with pytest.raises(EmulationError) as ei:
        emulate(IF_ELSE, ["out"], {"out": out}, block=64, mode="full")
    msg = str(ei.value)
    assert "out-of-bounds access at kernel div, CTA (0, 0, 0), thread (10, 0, 0)" in msg
    assert "st.global.u32 [%rd3], %r2;" in msg
    assert "buffer 'out' byte 40, which holds 40 bytes" in msg
    assert not out.any() or out[:10].any()  # nothing written past the buffer


def test_step_budget_stops_a_runaway_loop():
    text = kernel("spin()", """
$L_top:
    bra.uni $L_top;
""")
    with pytest.raises(EmulationError, match=r"step budget of 10000 warp-instructions exhausted .* in block \$L_top"):
        emulate(text, mode="full", step_budget=10_000)


def test_argument_count_is_checked():
    with pytest.raises(LaunchError, match="takes 1 parameters"):
        emulate(IF_ELSE, block=64, mode="slice")


def test_forked_workers_give_the_same_counts_and_outputs():
    # 8 CTAs of 64 threads over 3 processes: counters are summed, buffers shared
    out1 = np.zeros(64 * 8, np.uint32)
    out3 = np.zeros(64 * 8, np.uint32)
    text = IF_ELSE.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.x;\n    mov.u32 %r3, %ctaid.x;\n    mad.lo.s32 %r1, %r3, 64, %r1;")
    emu = Emulator(parse_ptx(text), mode="full")
    r1 = emu.run(Launch(grid=8, block=64, args=["out"], buffers={"out": out1}))
    r3 = emu.run(Launch(grid=8, block=64, args=["out"], buffers={"out": out3}), jobs=3)
    assert r1.metrics.values == r3.metrics.values
    assert [b.as_dict() for b in r1.metrics.blocks] == [b.as_dict() for b in r3.metrics.blocks]
    assert np.array_equal(r1.buffers["out"], r3.buffers["out"])
    i = np.arange(64 * 8)
    assert np.array_equal(r3.buffers["out"], np.where(i < 16, i * 5, i * 3))


PRED = kernel("pred(.param .u64 pred_out)", """
    ld.param.u64 %rd1, [pred_out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 8;
    mov.f32 %f1, 0f3F800000;
    @%p1 add.f32 %f1, %f1, %f1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f1;
    ret;
""")


@pytest.mark.parametrize("mode,exact", [("full", False), ("slice", True)])
def test_guarded_instruction_counts_true_lanes_exactly(mode, exact):
    # 32 threads, 9 instructions; the guarded add runs on 8 lanes only:
    # 8 * 32 + 8 lanes with a true guard, 8 single-precision FLOPs
    out = np.zeros(32, np.float32)
    r = emulate(PRED, ["out"], {"out": out}, mode=mode, exact_predicates=exact)
    m = r.metrics
    assert m["thread_inst_executed"] == 9 * 32
    assert m["not_predicated_off_thread_inst_executed"] == 8 * 32 + 8
    assert m["flop_count_sp"] == 8
    assert not m.predicates_estimated
    if mode == "full":
        assert np.array_equal(r.buffers["out"], np.where(np.arange(32) < 8, 2.0, 1.0).astype(np.float32))


def test_without_exact_predicates_guarded_lanes_are_estimated():
    out = np.zeros(32, np.float32)
    r = emulate(PRED, ["out"], {"out": out}, mode="slice")
    assert r.metrics.predicates_estimated
    assert r.metrics["not_predicated_off_thread_inst_executed"] == 9 * 32  # every active lane assumed true
    assert any("estimated" in n for n in r.notes)


ADDRESS_INIT = kernel("k(.param .u64 k_out)", """
    ld.global.u64 %rd1, [ptrs];
    ld.u32 %r1, [%rd1];
    ld.global.u64 %rd2, [ptrs+8];
    ld.u32 %r2, [%rd2];
    ld.param.u64 %rd3, [k_out];
    st.global.v2.u32 [%rd3], {%r1, %r2};
    ret;
""", before=""".visible .global .align 4 .u32 x = 7;
.const .align 4 .u32 c[2] = {11, 13};
.visible .global .align 8 .u64 ptrs[2] = {generic(x), generic(c)+4};
""")


def test_initializers_hold_the_addresses_of_variables():
    # generic(x) and generic(c)+4 in an initializer are the addresses the kernel
    # sees for x and c[1] (LLVM's NVPTX back end writes such tables of pointers)
    r = run(ADDRESS_INIT, "full", block=1, n_out=2)
    assert list(r.buffers["out"]) == [7, 13]


STRIDED = kernel("strided(.param .u64 strided_in, .param .u64 strided_out, .param .u32 strided_stride)", """
    ld.param.u64 %rd1, [strided_in];
    ld.param.u32 %r1, [strided_stride];
    mov.u32 %r2, %tid.x;
    mul.lo.s32 %r3, %r2, %r1;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r4, [%rd3];
    mov.u32 %r5, 1;
    setp.lt.u32 %p1, %r4, 16;
    @%p1 bra $L_store;
    mov.u32 %r5, 2;
$L_store:
    ld.param.u64 %rd4, [strided_out];
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r5;
    ret;
""")


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_scalar_parameter_in_an_address_needs_no_buffer(mode):
    # in[tid * stride] decides the branch: the address is traced to both parameters,
    # but only the pointer reads memory, so the integer stride is a valid argument.
    # 32 threads, stride 2, in = 0..63: lanes 0..7 read values < 16 and skip one mov.
    # bb0: 10 instructions, bb1 (mov): 1 on 24 lanes, $L_store: 5.
    src = np.arange(64, dtype=np.uint32)
    out = np.zeros(32, np.uint32)
    r = emulate(STRIDED, ["in", "out", 2], {"in": src, "out": out}, mode=mode, exact_predicates=True)
    m = r.metrics.values
    assert m["inst_executed"] == 10 + 1 + 5
    assert m["thread_inst_executed"] == 10 * 32 + 24 + 5 * 32
    assert (m["branch"], m["divergent_branch"]) == (1, 1)
    if mode == "full":
        assert list(r.buffers["out"]) == [1] * 8 + [2] * 24
