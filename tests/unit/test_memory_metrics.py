"""Memory-divergence metrics: sectors and lines per request (global), bank
conflicts (shared); the same in slice mode (addresses sliced) and full mode."""

import numpy as np
import pytest

from helpers import emulate, strided_kernel


def strided(stride: int) -> str:
    # thread t reads a[t * stride] (global) and sh[t * stride] (shared, 4-byte words)
    return strided_kernel(stride, via_shared=True)


@pytest.mark.parametrize("mode", ["full", "slice"])
@pytest.mark.parametrize("stride,sectors,wavefronts", [(1, 4, 1), (2, 8, 2), (8, 32, 8), (32, 32, 32)])
def test_strided_access(mode, stride, sectors, wavefronts):
    # One warp.  Global: 32 lanes x 4 bytes at a stride of 4*stride bytes
    # touch min(32, 4*stride) 32-byte sectors ... 4 sectors when contiguous.
    # Shared: lanes 32/stride words apart share a bank: stride-way conflicts
    # (32-way at stride 32), 1 wavefront when contiguous.
    a = np.zeros(32 * 32, np.float32)
    r = emulate(strided(stride), ["a"], {"a": a}, block=32, mode=mode, memory_metrics=True)
    mem = r.metrics.memory
    assert mem["global_ld_requests"] == 1 and mem["global_st_requests"] == 1
    assert mem["global_ld_sectors"] == sectors
    assert mem["global_ld_sectors_per_request"] == sectors
    assert mem["global_ld_lines"] == (1 if stride == 1 else min(32, stride))
    assert mem["shared_st_wavefronts"] == wavefronts
    assert mem["shared_ld_bank_conflicts"] == wavefronts - 1
    if mode == "slice":
        assert r.metrics["executed_fraction"] < 1.0


def test_broadcast_is_not_a_conflict():
    # every lane reads the same shared word: one wavefront; one global sector
    a = np.zeros(64, np.float32)
    r = emulate(strided(0), ["a"], {"a": a}, block=32, mode="slice", memory_metrics=True)
    mem = r.metrics.memory
    assert (mem["global_ld_sectors"], mem["shared_ld_wavefronts"], mem["shared_ld_bank_conflicts"]) == (1, 1, 0)


def test_partial_warp_counts_only_active_lanes():
    # 40 threads: warp 1 has 8 lanes -> 1 sector; warp 0 -> 4 sectors
    a = np.zeros(64, np.float32)
    r = emulate(strided(1), ["a"], {"a": a}, block=40, mode="slice", memory_metrics=True)
    mem = r.metrics.memory
    assert mem["global_ld_requests"] == 2
    assert mem["global_ld_sectors"] == 4 + 1


# -- the writers: table, CSV row sets, per-block instruction mix --------------------------------


def test_writers_show_memory_and_the_instruction_mix():
    import csv
    import io

    from hypa.runtime.report.tables import render

    a = np.zeros(32 * 32, np.float32)
    r = emulate(strided(8), ["a"], {"a": a}, block=64, mode="slice", memory_metrics=True)
    table = render([r], "table")
    assert "instruction mix (top 10 of 13 opcodes)" in table
    assert "global ld    requests          2  sectors         64  sectors/request  32.00" in table
    assert "shared st    requests          2  wavefronts         16  bank conflicts         14" in table
    mix = list(csv.DictReader(io.StringIO(render([r], "csv", "mix"))))
    kernel_rows = [m for m in mix if m["basic_block"] == "*"]
    # 14 instructions, 2 warps, one block: every opcode's kernel row is the block's row
    assert sum(int(m["warp_count"]) for m in kernel_rows) == r.metrics["inst_executed"] == 28
    assert sum(int(m["thread_count"]) for m in kernel_rows) == r.metrics["thread_inst_executed"] == 14 * 64
    by_block = {m["opcode"]: int(m["warp_count"]) for m in mix if m["basic_block"] == "bb0"}
    assert by_block == {m["opcode"]: int(m["warp_count"]) for m in kernel_rows}
    assert {m["opcode"]: m["category"] for m in kernel_rows}["ld.global.f32"] == "mem"
    (blk,) = [b.as_dict() for b in r.metrics.blocks]
    assert blk["instruction_mix"]["mul.lo.s32"] == {"warp": 2, "thread": 64}
    mem = list(csv.DictReader(io.StringIO(render([r], "csv", "memory"))))
    assert [(m["space"], m["requests"]) for m in mem] == [("global", "2"), ("shared", "2"), ("shared", "2"), ("global", "2")]
    assert mem[0]["sectors_per_request"] == "32.0000" and mem[1]["bank_conflicts"] == "14"
    blocks = list(csv.DictReader(io.StringIO(render([r], "csv", "blocks"))))
    assert blocks[0]["inst_executed"] == "28" and blocks[0]["thread_executions"] == "64"
