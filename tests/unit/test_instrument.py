"""instrument-block-counters: the instrumented PTX, run in our own emulator
(full mode), must count exactly what the emulator counts for the original.

The counters array is a module ``.global`` variable, which the emulator
allocates like the GPU does; ``LaunchResult.globals`` returns it.  Thread
counts are model-independent; warp and divergent counts agree here because
both runs use the emulator's reconvergence model (docs/design.md, "Execution model": the
counters' ``vote.sync`` on ``activemask`` gathers no other lanes, so spin loops
release waiting lanes in both).

The launches are those of ``tests/kernels/launches``,
``benchmarks/gpu/launches/extra.toml`` and ``reconverge.toml`` -- the ones the GPU harness runs.
Kernels whose emulator compile takes long (cold cache) run only with
``HYPA_SLOW_TESTS=1``.
"""

from __future__ import annotations

import glob
import os
import re

import numpy as np
import pytest

from hypa.passes.instrument import COUNTER_SYMBOL, CounterMap, InstrumentError, instrument_module, instrument_ptx
from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import Launch, launches_from_toml

from helpers import (KERNEL_PTX, LAUNCHES, REGISTERS, ROOT, SLOW_OK, kernel, ptxas, ptxas_candidates, requires,
                     store_at_tid)

LAUNCH_FILES = sorted(glob.glob(os.path.join(LAUNCHES, "*.toml"))) + [
    os.path.join(ROOT, "benchmarks", "gpu", "launches", "extra.toml"),
    os.path.join(ROOT, "benchmarks", "gpu", "launches", "reconverge.toml"),
]
#: kernels whose two emulator compiles (original + instrumented) take over ~15 s on a cold cache
SLOW = {"conv2d", "double_math", "softmax", "switch_dense", "layernorm", "gemm_tiled", "spmv_csr"}


def _cases():
    out = []
    for path in LAUNCH_FILES:
        if not os.path.exists(path):
            continue
        try:
            launches = launches_from_toml(path)
        except Exception:  # another test owns the launch files' validity
            continue
        stem = os.path.splitext(os.path.basename(path))[0]
        for i, ln in enumerate(launches):
            base = os.path.basename(ln.file or "").split(".")[0]
            marks = [pytest.mark.skipif(not SLOW_OK, reason="slow compile: set HYPA_SLOW_TESTS=1")] if base in SLOW else []
            out.append(pytest.param(path, i, id=f"{stem}[{i}]:{ln.kernel}", marks=marks))
    return out


def run_pair(text: str, launch: Launch, reference=None):
    """Run the original in full mode (``reference(launch)`` where given), then the
    instrumented module; return (reference result, decoded counters, counter map,
    instrumented result)."""
    try:
        ref = (reference or Emulator(parse_ptx(text), mode="full", exact_predicates=True).run)(launch)
    except Exception as e:  # the emulator's gap, not the instrumentation's
        pytest.skip(f"the emulator cannot run the original kernel: {type(e).__name__}: {str(e)[:200]}")
    itext, cmap = instrument_ptx(text)
    got = Emulator(parse_ptx(itext), mode="full").run(launch)
    raw = got.globals[COUNTER_SYMBOL]
    counters = np.frombuffer(raw.tobytes(), np.uint64)[: cmap.slots]
    dec = cmap.decode(counters)
    dec["metrics"] = cmap.metrics(counters)
    return ref, dec, cmap, got


METRICS = ("inst_executed", "thread_inst_executed", "not_predicated_off_thread_inst_executed", "flop_count_sp",
           "flop_count_dp", "flop_count_hp", "flop_count_special", "branch", "divergent_branch")


def assert_counts_match(ref, dec) -> None:
    blocks = {(b["function"], b["index"]): b for b in dec["blocks"]}
    branches = {(b["function"], b["block"]): b for b in dec["branches"]}
    problems = []
    for b in ref.metrics.blocks:
        g = blocks.get((b.function, b.block))
        if g is None:
            if b.warps or b.threads:
                problems.append(f"{b.function}:{b.name} executed but not instrumented")
            continue
        if g["threads"] != b.threads:
            problems.append(f"{b.function}:{b.name} threads {g['threads']} != {b.threads}")
        if g["warps"] != b.warps:
            problems.append(f"{b.function}:{b.name} warps {g['warps']} != {b.warps}")
        r = branches.get((b.function, b.block))
        if r is not None:
            if r["executed"] != b.warps:
                problems.append(f"{b.function}:{b.name} branch executed {r['executed']} != {b.warps}")
            if r["divergent"] != b.divergent:
                problems.append(f"{b.function}:{b.name} divergent {r['divergent']} != {b.divergent}")
    for k in METRICS:
        if dec["metrics"][k] != ref.metrics.values[k]:
            problems.append(f"{k}: counters give {dec['metrics'][k]}, the emulator {ref.metrics.values[k]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path,index", _cases())
def test_instrumented_kernel_counts_like_the_emulator(path, index, kernel_runs):
    launch = launches_from_toml(path)[index]
    with open(launch.file) as f:
        text = f.read()
    ref, dec, cmap, got = run_pair(text, launch, lambda L: kernel_runs.run(L, "full"))
    assert_counts_match(ref, dec)
    # the instrumentation does not change what the kernel computes
    for name, arr in ref.buffers.items():
        assert np.array_equal(arr.view(np.uint8), got.buffers[name].view(np.uint8)), f"buffer {name} differs"
    assert sum(b["threads"] for b in dec["blocks"]) > 0


# ---------------------------------------------------------------------------
# Hand-made cases: negated guards, a branch to its own fall-through, guarded brx.idx
# ---------------------------------------------------------------------------

EDGE = kernel("edge(.param .u64 edge_out)", """
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    setp.lt.u32 %p1, %r1, 40;
    setp.ne.u32 %p2, %r2, 0;
    cvt.rn.f32.u32 %f1, %r1;
    @%p2 fma.rn.f32 %f2, %f1, %f1, %f1;
    @!%p1 add.f32 %f3, %f1, %f1;
    @%p2 bra $L_next;
$L_next:
    mov.u32 %r3, 7;
    $L_tab: .branchtargets $L_a, $L_b, $L_c, $L_c;
    @!%p1 brx.idx %r2, $L_tab;
    mov.u32 %r3, 100;
    bra.uni $L_join;
$L_a:
    mov.u32 %r3, 1;
    bra.uni $L_join;
$L_b:
    mov.u32 %r3, 2;
    bra.uni $L_join;
$L_c:
    mov.u32 %r3, 3;
$L_join:
    setp.gt.u32 %p3, %r1, 100;
    @%p3 brx.idx %r2, $L_tab;
""" + store_at_tid("edge_out", "%r3"))


@pytest.mark.parametrize("block", [32, 64, 96])
def test_negated_guarded_brx_and_self_target_branch(block):
    out = np.zeros(block, np.uint32)
    launch = Launch(kernel="edge", grid=2, block=block, args=["out"], buffers={"out": out})
    ref, dec, cmap, _ = run_pair(EDGE, launch)
    assert_counts_match(ref, dec)
    by_text = {b["text"]: b for b in dec["branches"]}
    assert by_text["@%p2 bra $L_next;"]["divergent"] == 0  # both ways lead to $L_next
    assert [b["same_target"] for b in cmap.branches] == [True, False, False]
    lanes = {g["text"]: g["lanes_true"] for g in dec["guards"]}
    threads = 2 * block
    assert lanes["@%p2 fma.rn.f32 %f2, %f1, %f1, %f1;"] == threads * 3 // 4
    assert lanes["@!%p1 add.f32 %f3, %f1, %f1;"] == 2 * max(0, block - 40)
    assert dec["metrics"]["flop_count_sp"] == 2 * threads * 3 // 4 + 2 * max(0, block - 40)
    brx = by_text["@!%p1 brx.idx %r2, $L_tab;"]
    # lanes >= 40 split four ways, lanes < 40 fall through: divergent in every warp holding lanes >= 40
    assert brx["divergent"] == sum(1 for w in range(block // 32) if w * 32 + 31 >= 40) * 2
    # @%p3 brx.idx: no lane > 100 with these blocks, so no warp diverges
    assert by_text["@%p3 brx.idx %r2, $L_tab;"]["divergent"] == 0


def test_counter_map_slots_are_distinct_and_dense():
    module = parse_ptx(EDGE)
    cmap = instrument_module(module)
    slots = [s for b in cmap.blocks for s in (b["warp_slot"], b["thread_slot"])]
    slots += [s for b in cmap.branches for s in (b["executed_slot"], b["divergent_slot"], b["taken_slot"]) if s is not None]
    slots += [g["slot"] for g in cmap.guards]
    assert sorted(slots) == list(range(cmap.slots))
    again = CounterMap.from_dict(cmap.as_dict())
    assert again == cmap
    dec = again.decode([0] * cmap.slots)
    assert len(dec["blocks"]) == len(cmap.blocks) and len(dec["branches"]) == 3


def test_registers_avoid_the_kernels_names_and_old_versions_are_raised():
    text = EDGE.replace(".version 8.0", ".version 6.0").replace(REGISTERS, REGISTERS + "    .reg .b32 %hypa_x;\n")
    module = parse_ptx(text)
    cmap = instrument_module(module)
    from hypa.ptxdialect.printer import module_to_ptx

    out = module_to_ptx(module)
    assert "%hypa1_mask" in out and "activemask.b32 %hypa_" not in out
    assert ".version 6.2" in out and any("6.2" in n for n in cmap.notes)


def test_refuses_a_module_instrumented_twice_and_ssa_form():
    module = parse_ptx(EDGE)
    instrument_module(module)
    with pytest.raises(InstrumentError, match="already declares"):
        instrument_module(module)
    from xdsl.context import Context

    from hypa.passes.ssa import PTXToSSA

    m2 = parse_ptx(EDGE)
    PTXToSSA().apply(Context(), m2)
    with pytest.raises(InstrumentError, match="register form"):
        instrument_module(m2)


def test_unreachable_blocks_get_no_counters():
    text = kernel("u(.param .u64 u_out)", """
    ret;
$L_dead:
    mov.u32 %r1, 1;
    ret;
""")
    cmap = instrument_module(parse_ptx(text))
    assert [b["name"] for b in cmap.blocks] == ["bb0"]


# ---------------------------------------------------------------------------
# ptxas accepts the output for the file's target
# ---------------------------------------------------------------------------

PTX_FILES = sorted(glob.glob(os.path.join(KERNEL_PTX, "**", "*.ptx"), recursive=True))


@requires("ptxas")
@pytest.mark.parametrize("path", PTX_FILES, ids=lambda p: os.path.relpath(p, KERNEL_PTX))
def test_instrumented_ptx_assembles(path, tmp_path):
    with open(path) as f:
        text = f.read()
    arch = re.search(r"^\s*\.target\s+(\w+)", text, re.M).group(1)  # type: ignore[union-attr]
    # the ptxas on PATH, else an older one that still knows the file's target (CUDA 12's: sm_52, sm_70)
    exe = next((x for x in ptxas_candidates() if ptxas(path, arch, x, "-c").returncode == 0), None)
    if exe is None:
        pytest.skip(f"no ptxas here assembles the original for {arch}")
    out, cmap = instrument_ptx(text)
    dst = tmp_path / "instrumented.ptx"
    dst.write_text(out)
    r = ptxas(dst, arch, exe, "-c")
    assert r.returncode == 0, r.stderr
    assert cmap.slots >= 2
