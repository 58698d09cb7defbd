"""mbarrier objects and waits that yield to the CTA scheduler (issue 16).

The kernels are the lit tests' (tests/filecheck/Execution/emulate-mbarrier-*.ptx), which
check the counts in both modes; here the values, hand-computed from the PTX ISA's
definitions of the phase, the pending count and the tx-count, and the counts per block."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ROOT, emulate, ptx_header

from hypa.runtime.emulator.emulator import EmulationError

EXEC = ROOT / "tests" / "filecheck" / "Execution"


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_producer_consumer_pipeline(mode):
    """Warp 1 writes 3t (t = 32..63) and arrives; warp 0 waits with try_wait, which fails
    once (the warp yields) and succeeds when resumed: executed once, not until a budget."""
    r = emulate((EXEC / "emulate-mbarrier-pipeline.ptx").read_text(), ["out"], {"out": np.zeros(32, np.uint32)},
                block=64, mode=mode)
    assert (r.metrics["inst_executed"], r.metrics["thread_inst_executed"]) == (35, 1089)
    if mode == "full":
        assert r.buffers["out"].tolist() == [3 * (32 + t) for t in range(32)]
    blocks = {b["block"]: b["warp_executions"] for b in r.as_dict()["blocks"]}
    assert blocks["$L_wait"] == 1


def test_state_tokens_phases_and_tx_count():
    """Step by step (init for 3): the token of the first arrive has 3 pending, of the second
    2; test_wait on the first token is false; with 64 bytes expected the third arrive leaves
    the phase open (token: 1 pending) and test_wait.parity 0 is false; complete_tx of the 64
    bytes completes phase 0 (test_wait on the first token: true) and restores 3 pending;
    arrive_drop's token has 3 pending (expected drops to 2); arrive.noComplete's token 2;
    the next arrive completes phase 1 (test_wait.parity 1: true); in phase 2 an arrive's
    token has 2 pending; cp.async.mbarrier.arrive.noinc completes phase 2 (try_wait.parity
    0: true)."""
    r = emulate((EXEC / "emulate-mbarrier-tokens.ptx").read_text(), ["out"], {"out": np.full(11, 7, np.uint32)},
                block=32, mode="full")
    assert r.buffers["out"].tolist() == [3, 2, 0, 1, 0, 1, 3, 2, 1, 2, 1]


@pytest.mark.parametrize("mode", ["full", "slice"])
def test_polling_counts_once_per_round(mode):
    """A test_wait loop runs once per round it waited (twice here), a try_wait loop once;
    warp 0 reads 41 + 1."""
    r = emulate((EXEC / "emulate-mbarrier-polling.ptx").read_text(), ["out"], {"out": np.zeros(32, np.uint32)},
                block=96, mode=mode)
    blocks = {b["block"]: b["warp_executions"] for b in r.as_dict()["blocks"]}
    assert (blocks["$L_poll"], blocks["$L_relay"]) == (2, 1)
    assert r.metrics["inst_executed"] == 54
    if mode == "full":
        assert r.buffers["out"].tolist() == [42] * 32


def _waiting_kernel(wait: str) -> str:
    """One warp initialises an mbarrier for 64 arrivals, arrives (32 of them) and waits."""
    return ptx_header("sm_90", "8.0") + f"""
.visible .entry k()
{{
    .reg .pred %p<2>;
    .reg .b64 %rd<2>;
    .shared .align 8 .b64 bar;
    mbarrier.init.shared.b64 [bar], 64;
    mbarrier.arrive.shared.b64 %rd1, [bar];
$L_wait:
    {wait}
    @!%p1 bra $L_wait;
    ret;
}}
"""


@pytest.mark.parametrize("mode", ["full", "slice"])
@pytest.mark.parametrize("wait", ["mbarrier.try_wait.shared.b64 %p1, [bar], %rd1;",
                                  "mbarrier.try_wait.parity.shared.b64 %p1, [bar], 0, 1000;",
                                  "mbarrier.test_wait.shared.b64 %p1, [bar], %rd1;"])
def test_a_phase_nobody_completes_is_a_deadlock(mode, wait):
    """32 of 64 arrivals: no warp can complete the phase, and the waiting warp changes no
    mbarrier, so the scheduler reports a deadlock (not a run to the step budget)."""
    with pytest.raises(EmulationError, match=r"deadlock in kernel k, CTA \(0, 0, 0\): .* mbarrier phases that no warp "
                                             r"can complete"):
        emulate(_waiting_kernel(wait), [], {}, block=32, mode=mode, step_budget=10**6)


def test_full_block_of_32_arrivals_passes():
    """The same kernel with 32 threads arriving on an mbarrier for 32: one wait, no yield."""
    ptx = _waiting_kernel("mbarrier.try_wait.shared.b64 %p1, [bar], %rd1;").replace("[bar], 64;", "[bar], 32;")
    r = emulate(ptx, [], {}, block=32, mode="full")
    assert r.metrics["inst_executed"] == 5


def test_mapa_to_another_rank_is_an_error():
    with pytest.raises(EmulationError, match=r"mapa to CTA rank 1 at kernel far, CTA \(0, 0, 0\), thread \(0, 0, 0\): "
                                             r"mapa\.shared::cluster\.u32 %r3, %r2, %r1; \(launches have clusters of one "
                                             r"CTA: rank 0 only\)"):
        emulate((EXEC / "emulate-cluster.ptx").read_text(), [1], {}, kernel="far", mode="full")
