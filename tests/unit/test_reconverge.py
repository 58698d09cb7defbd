"""Reconvergence around spin loops and inlined returns (issue 16; docs/design.md, "Execution model").

Divergent lanes reconverge at the immediate post-dominator, except that a spin loop's
``YIELD`` (``passes/spin_loops.py``) lets the lanes waiting there go on alone: the
blocks after the join then run once per group, as on the H100 (``atomic_cas#2`` of
tests/ground_truth/h100).  The probes of benchmarks/gpu/launches/reconverge.toml (2 CTAs
of 64 threads: 4 warps) are checked against warp counts computed by hand; thread-level
counts never depend on the model.
"""

from __future__ import annotations

import json
import sys

import numpy as np

import pytest

from helpers import KERNEL_PTX, LAUNCHES, ROOT, call_main, emulate, kernel

from hypa.passes.cfg import CFG
from hypa.passes.spin_loops import spin_loops, yield_headers
from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import launches_from_toml
from hypa.runtime.emulator.options import EmulationOptions
from hypa.runtime.emulator.program import ProgramError, prepare, reconvergence

PROBES = ROOT / "benchmarks" / "gpu" / "launches" / "reconverge.toml"
W = 4  # warps per launch

# kernel -> {block: warp executions} where the two models differ, (yield model, IPDOM model);
# every other block runs once per warp that reaches it in both
SPLIT = {
    # lane 0 leaves, runs a CAS retry loop (YIELD): the 31 others run ret without it
    "cas_lane0_ret": {"$L_join": (2 * W, W)},
    "cas_lane0_exit": {"$L_join": (2 * W, W)},
    "cas_half_ret": {"$L_join": (2 * W, W)},
    # everything after the join runs once per group, a divergent branch there too
    "cas_lane0_work": {"$L_join": (2 * W, W), "$L_even": (2 * W, W)},
    # lane 0 leaves the inner and the outer reconvergence point: both joins run twice (the
    # H100 runs $L_inner once: tests/ground_truth/h100/reconverge/explanations.json, open)
    "cas_nested": {"$L_inner": (2 * W, W), "$L_outer": (2 * W, W)},
    # a CTA barrier or bar.warp.sync after the join does not stop the release (H100-recorded)
    "cas_lane0_bar": {"$L_join": (2 * W, W)},
    "cas_lane0_syncwarp": {"$L_join": (2 * W, W)},
    # ld.volatile from a per-warp address: a spin loop too
    "volatile_spin_lane0": {"$L_join": (2 * W, W)},
    # every lane leaves the loop alone (lane L after L+1 iterations) and runs the rest alone
    "spin_exit_by_lane": {"bb2": (32 * W, W)},
    # the CAS loop inside an inlined device function
    "cas_func_lane0": {"$L_join": (2 * W, W)},
}
# no spin loop (no YIELD), or one followed by a lane-synchronising instruction: IPDOM
SAME = ["cas_once_lane0", "atom_lane0_ret", "store_lane0_ret", "counted_atom_lane0", "counted_exit_by_lane"]


@pytest.fixture(scope="module")
def probe_results():
    launches = {L.kernel: L for L in launches_from_toml(str(PROBES))}
    module = parse_ptx((KERNEL_PTX / "hand" / "reconverge.ptx").read_text())
    out = {}
    for model in ("yield", "ipdom"):
        emu = Emulator(module, mode="full", exact_predicates=True, reconvergence=model)
        out[model] = {k: emu.run(L) for k, L in launches.items()}
    emu = Emulator(module, mode="slice")
    out["slice"] = {k: emu.run(L) for k, L in launches.items()}
    return out


def _warps(result) -> dict[str, int]:
    return {b.name: b.warps for b in result.metrics.blocks if b.function == result.metrics.blocks[0].function}


def test_slice_mode_counts_the_same(probe_results):
    for name, r in probe_results["slice"].items():
        assert _warps(r) == _warps(probe_results["yield"][name]), name


def test_every_probe_is_covered():
    names = {L.kernel for L in launches_from_toml(str(PROBES))}
    assert names == set(SPLIT) | set(SAME)


@pytest.mark.parametrize("name", sorted(SPLIT))
def test_spin_loop_releases_waiting_lanes(probe_results, name):
    y, p = probe_results["yield"][name], probe_results["ipdom"][name]
    wy, wp = _warps(y), _warps(p)
    for block, (split, ipdom) in SPLIT[name].items():
        assert (wy[block], wp[block]) == (split, ipdom), block
    assert {b: n for b, n in wy.items() if b not in SPLIT[name]} == {b: n for b, n in wp.items() if b not in SPLIT[name]}
    # thread-level counts are the model's business in no way
    for k in ("thread_inst_executed", "not_predicated_off_thread_inst_executed"):
        assert y.metrics.values[k] == p.metrics.values[k]
    assert [b.threads for b in y.metrics.blocks] == [b.threads for b in p.metrics.blocks]
    for buf in y.buffers:
        assert (y.buffers[buf] == p.buffers[buf]).all()


@pytest.mark.parametrize("name", SAME)
def test_no_release_without_a_spin_loop(probe_results, name):
    y, p = probe_results["yield"][name], probe_results["ipdom"][name]
    assert _warps(y) == _warps(p)
    assert y.metrics.values["inst_executed"] == p.metrics.values["inst_executed"]


def test_probe_totals(probe_results):
    """inst_executed, by hand: cas_lane0_ret has 16 instructions up to the branch, 1 in the
    lane-0 block, 5 in the loop, 1 (ret) at the join: 4 warps x (16 + 1 + 5) + 8 x 1."""
    assert probe_results["yield"]["cas_lane0_ret"].metrics.values["inst_executed"] == 4 * 22 + 8
    assert probe_results["ipdom"]["cas_lane0_ret"].metrics.values["inst_executed"] == 4 * 22 + 4
    # spin_exit_by_lane: 17 before the loop, 3 in it (32 iterations a warp), 2 after
    r = probe_results["yield"]["spin_exit_by_lane"].metrics.values
    assert r["inst_executed"] == 4 * (17 + 32 * 3) + 128 * 2
    assert r["thread_inst_executed"] == 4 * (32 * 17 + 3 * sum(range(1, 33)) + 32 * 2)
    out = probe_results["yield"]["spin_exit_by_lane"].buffers["out"]
    assert list(out[:32]) == list(range(32))  # lane L leaves when the old value reaches L


def test_intra_warp_lock_makes_progress():
    """A spin lock taken by the lanes of one warp: the lane that wins leaves the loop, and at
    the others' YIELD it runs first (as on the GPU), unlocks, and the next lane wins.  Under
    the IPDOM model the losers would spin for ever, waiting for a lane that waits for them."""
    body = """
    ld.param.u64 %rd1, [k_p];
L:
    atom.global.cas.b32 %r1, [%rd1], 0, 1;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra L;
    ld.global.u32 %r2, [%rd1+4];
    add.u32 %r2, %r2, 1;
    st.global.u32 [%rd1+4], %r2;
    atom.global.exch.b32 %r3, [%rd1], 0;
    ret;"""
    text = kernel("k(.param .u64 k_p)", body)
    res = emulate(text, ["w"], {"w": np.zeros(2, np.uint32)}, block=64, mode="full", step_budget=100_000)
    assert list(res.buffers["w"]) == [0, 64]
    # one lane wins per iteration: 32 iterations a warp, 32 + 31 + ... + 1 lanes; the
    # critical section once per lane
    assert {b.name: (b.warps, b.threads) for b in res.metrics.blocks} == {
        "bb0": (2, 64), "L": (64, 2 * 528), "bb2": (64, 64)}
    with pytest.raises(Exception, match="step budget"):
        emulate(text, ["w"], {"w": np.zeros(2, np.uint32)}, block=64, mode="full", step_budget=100_000,
                reconvergence="ipdom")


# -- the rule ------------------------------------------------------------------------------


def _cfg(body: str, sig: str = "k(.param .u64 k_p)") -> CFG:
    prog = prepare(parse_ptx(kernel(sig, body)), "k", EmulationOptions(mode="full"))
    return prog.cfg


PRE = """
    ld.param.u64 %rd1, [k_p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r3, 0;
"""


@pytest.mark.parametrize("loop,spins", [
    # exit on an atom's result (what ptxas marks with YIELD)
    ("atom.global.cas.b32 %r4, [%rd1], 0, 1; setp.ne.u32 %p1, %r4, 0; @%p1 bra L;", True),
    ("atom.global.add.u32 %r4, [%rd1], 1; and.b32 %r5, %r4, 7; setp.ne.u32 %p1, %r5, 0; @%p1 bra L;", True),
    # strong loads from a per-lane address; from one address for all lanes the exit is uniform
    ("ld.volatile.global.u32 %r4, [%rd3]; setp.ne.u32 %p1, %r4, 0; @%p1 bra L;", True),
    ("ld.acquire.gpu.global.u32 %r4, [%rd3]; setp.ne.u32 %p1, %r4, 0; @%p1 bra L;", True),
    ("ld.volatile.global.u32 %r4, [%rd1]; setp.ne.u32 %p1, %r4, 0; @%p1 bra L;", False),
    # a weak load, a counted loop with an atom, a nanosleep, an exit through vote.sync
    ("ld.global.u32 %r4, [%rd3]; setp.ne.u32 %p1, %r4, 0; @%p1 bra L;", False),
    ("atom.global.add.u32 %r4, [%rd1], 1; add.u32 %r3, %r3, 1; setp.lt.u32 %p1, %r3, 9; @%p1 bra L;", False),
    ("ld.volatile.global.u32 %r4, [%rd3]; nanosleep.u32 100; setp.ne.u32 %p1, %r4, 0; @%p1 bra L;", False),
    ("atom.global.add.u32 %r4, [%rd1], 1; setp.ne.u32 %p2, %r4, 5; vote.sync.any.pred %p1, %p2, -1; @%p1 bra L;",
     False),
])
def test_spin_loop_rule(loop, spins):
    """The cases benchmarks/gpu/yield_check.py checked against ptxas -arch=sm_90's SASS."""
    cfg = _cfg(PRE + "L:\n    " + loop.replace("; ", ";\n    ") + "\n    st.global.u32 [%rd3], %r3;\n    ret;")
    assert (len(spin_loops(cfg)) == 1) is spins


def test_no_release_before_a_value_exchanging_instruction():
    """A .sync shuffle/vote with a full mask after the loop exchanges values between the groups:
    IPDOM there; a CTA barrier or bar.warp.sync does not stop the release (H100-recorded)."""
    spin = "L:\n    atom.global.cas.b32 %r4, [%rd1], 0, 1;\n    setp.ne.u32 %p1, %r4, 0;\n    @%p1 bra L;\n"
    assert yield_headers(_cfg(PRE + spin + "    st.global.u32 [%rd3], %r3;\n    ret;"))
    for sync, released in (("bar.sync 0;", True), ("bar.warp.sync -1;", True),
                           ("shfl.sync.idx.b32 %r5, %r3, 0, 31, -1;", False)):
        cfg = _cfg(PRE + spin + f"    {sync}\n    st.global.u32 [%rd3], %r3;\n    ret;")
        assert len(spin_loops(cfg)) == 1 and bool(yield_headers(cfg)) is released, sync


def test_sync_on_the_active_lanes_gathers_no_others():
    """``shfl.sync``/``vote.sync`` with ``activemask``'s mask (``__shfl_sync(__activemask(), ..)``,
    the GPU counters' ballots) names only the lanes running together: the release stands."""
    spin = "L:\n    atom.global.cas.b32 %r4, [%rd1], 0, 1;\n    setp.ne.u32 %p1, %r4, 0;\n    @%p1 bra L;\n"
    tail = "    activemask.b32 %r6;\n    shfl.sync.idx.b32 %r5, %r3, 0, 31, %r6;\n    st.global.u32 [%rd3], %r5;\n    ret;"
    assert yield_headers(_cfg(PRE + spin + tail))


@pytest.mark.parametrize("target,released", [("sm_52", False), ("sm_60", False), ("sm_70", True), ("sm_90a", True)])
def test_only_targets_with_independent_thread_scheduling(target, released):
    """ptxas gives PTX for targets before sm_70 no YIELD (atomic_cas.sm_52.ptx for sm_90)."""
    spin = "L:\n    atom.global.cas.b32 %r4, [%rd1], 0, 1;\n    setp.ne.u32 %p1, %r4, 0;\n    @%p1 bra L;\n"
    text = kernel("k(.param .u64 k_p)", PRE + spin + "    ret;", target=target)
    prog = prepare(parse_ptx(text), "k", EmulationOptions(mode="full"))
    assert bool(prog.yield_blocks) is released


def test_option_is_checked():
    with pytest.raises(ProgramError, match="reconvergence must be one of yield, ipdom"):
        prepare(parse_ptx(kernel("k()", "    ret;")), "k", EmulationOptions(mode="full", reconvergence="its"))


# -- inlined returns -----------------------------------------------------------------------


def test_inlined_ret_is_not_an_exit():
    """An inlined callee's ret goes back to the caller: divergence around the call
    reconverges after it (it used to reconverge at the virtual exit, so the kernel's ret
    ran once more per partial warp than on the GPU: device_call#0, double_math#1)."""
    text = (KERNEL_PTX / "device_call.sm_80.ptx").read_text()
    prog = prepare(parse_ptx(text), "_Z11device_callPKfPfPii", EmulationOptions(mode="full"))
    rets = [i for i, b in enumerate(prog.cfg.blocks) if b.last_op.name == "ptx.ret"]
    (kernel_ret,) = prog.cfg.exits
    assert len(rets) == 3 and kernel_ret in rets
    assert reconvergence(prog, 0) == kernel_ret
    # 18 warps, one of them split by `if (i < n)`: the GPU ran the kernel's ret 18 times
    (launch,) = [L for L in launches_from_toml(str(LAUNCHES / "device_call.toml")) if L.grid == (3, 1, 1)]
    res = Emulator(parse_ptx(text), mode="full").run(launch)
    assert {b.name: b.warps for b in res.metrics.blocks if b.function == "_Z11device_callPKfPfPii"} == {
        "bb0": 18, "bb1": 16, "$L__BB2_2": 18}


def test_yield_check_agrees_with_ptxas():
    """Where ptxas, cuobjdump and nvdisasm are installed: the rule finds one spin loop in exactly the
    probe kernels whose instrumented SASS has a YIELD."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
    import yield_check

    tool = yield_check.cuobjdump()
    if tool is None or not yield_check.shutil.which("ptxas"):
        pytest.skip("needs ptxas, cuobjdump and nvdisasm (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    rows = yield_check.check(str(KERNEL_PTX / "hand" / "reconverge.ptx"), "sm_90", False, tool)
    assert {n: (r, s) for n, r, s in rows} == {
        n: ((1, 1) if n in SPLIT or n in ("cas_lane0_bar", "cas_lane0_syncwarp") else (0, 0)) for n, _, _ in rows}


def test_cli_option(capsys):
    """``hypa-opt --emulate --reconvergence ipdom`` gives the IPDOM counts."""
    from hypa.tools.hypa_opt import main

    out = {}
    for model in ("yield", "ipdom"):
        code, text, err = call_main(main, [str(KERNEL_PTX / "hand" / "reconverge.ptx"), "--launch", str(PROBES),
                                           "--kernel", "cas_lane0_ret", "--mode", "full", "--reconvergence", model,
                                           "--format", "json"], capsys)
        assert code == 0, err
        out[model] = json.loads(text)[0]["inst_executed"]
    assert out == {"yield": 96, "ipdom": 92}
