"""The clock model (runtime/emulator/clock.py, issue 31): ``%clock``/``%clock64`` advance one
cycle per warp-instruction the context executes, ``%globaltimer`` is the same count in
nanoseconds at the architecture's clock rate, and both are monotonic across launches, so a
clock wait ends after exactly the cycles it asked for."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import emulate, kernel

from hypa.cudart.properties import attribute_value, h100_properties
from hypa.runtime.emulator import clock

#: spin until clock64() - start >= 1,000,000; store the difference
SPIN = kernel("k(.param .u64 k_out)", """
    mov.u64 %rd1, %clock64;
$L_spin:
    mov.u64 %rd2, %clock64;
    sub.s64 %rd3, %rd2, %rd1;
    setp.lt.s64 %p1, %rd3, 1000000;
    @%p1 bra $L_spin;
    ld.param.u64 %rd4, [k_out];
    cvta.to.global.u64 %rd5, %rd4;
    st.global.u64 [%rd5], %rd3;
    ret;
""")


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_a_clock64_wait_ends_after_the_cycles_it_asked_for(mode):
    out = np.zeros(1, np.int64)
    r = emulate(SPIN, ["out"], {"out": out}, block=32, mode=mode)
    # the first block (1 instruction) reads the clock; each pass of the 4-instruction loop
    # advances it by 4 cycles: 250,000 passes reach exactly 1,000,000, then the 4-instruction exit
    assert r.metrics["inst_executed"] == 1 + 4 * 250_000 + 4
    if mode == "full":  # (slice mode does not perform the store)
        assert int(r.buffers["out"][0]) == 1_000_000


#: %clock, %clock_hi, %clock64, %globaltimer(_lo/_hi) before and after a 1,000-pass loop
READS = kernel("k(.param .u64 k_out)", """
    mov.u64 %rd1, %clock64;
    mov.u32 %r1, %clock;
    mov.u32 %r2, %clock_hi;
    mov.u64 %rd2, %globaltimer;
    mov.u32 %r3, %globaltimer_lo;
    mov.u32 %r4, %globaltimer_hi;
    mov.u32 %r10, 0;
$L_loop:
    add.s32 %r10, %r10, 1;
    setp.lt.s32 %p1, %r10, 1000;
    @%p1 bra $L_loop;
    mov.u64 %rd3, %clock64;
    mov.u64 %rd4, %globaltimer;
    ld.param.u64 %rd5, [k_out];
    cvta.to.global.u64 %rd6, %rd5;
    st.global.u64 [%rd6], %rd1;
    st.global.u64 [%rd6+8], %rd2;
    st.global.u64 [%rd6+16], %rd3;
    st.global.u64 [%rd6+24], %rd4;
    cvt.u64.u32 %rd7, %r1;
    st.global.u64 [%rd6+32], %rd7;
    cvt.u64.u32 %rd7, %r2;
    st.global.u64 [%rd6+40], %rd7;
    cvt.u64.u32 %rd7, %r3;
    st.global.u64 [%rd6+48], %rd7;
    cvt.u64.u32 %rd7, %r4;
    st.global.u64 [%rd6+56], %rd7;
    ret;
""")


def _reads():
    out = np.zeros(8, np.uint64)
    base = clock.now()
    r = emulate(READS, ["out"], {"out": out}, block=32, mode="full")
    return base, [int(v) for v in r.buffers["out"]], r.metrics["inst_executed"]


def test_reads_around_a_loop_differ_by_its_instructions():
    base, (c0, t0, c1, t1, lo, hi, tlo, thi), n = _reads()
    # block 0 holds the 7 instructions before the loop: the clock reads base + 7 there
    assert c0 == base + 7
    assert c1 - c0 == 3 * 1000 + 17  # the loop's passes, then the 17-instruction block after it
    assert (lo, hi) == (c0 & 0xFFFFFFFF, c0 >> 32)
    assert t0 == c0 * 1000 // 1980 and t1 == c1 * 1000 // 1980  # ns at 1,980 MHz
    assert (tlo, thi) == (t0 & 0xFFFFFFFF, t0 >> 32)
    # a block's reads count its whole block; the device clock moved to the launch's last reading
    assert clock.now() == base + n == c1


def test_monotonic_across_launches():
    _, first, _ = _reads()
    _, second, _ = _reads()
    assert second[0] > first[2] and second[1] >= first[3]


def test_a_wait_in_every_warp_of_several_ctas_ends():
    out = np.zeros(1, np.int64)
    r = emulate(SPIN, ["out"], {"out": out}, grid=3, block=64, mode="full")
    assert int(r.buffers["out"][0]) >= 1_000_000
    # the warps of a CTA share the clock (as an SM's): no warp spins longer than one alone
    assert r.metrics["inst_executed"] <= 6 * (1 + 4 * 250_000 + 4)


def test_clock_rate_matches_the_model():
    assert h100_properties()["clockRate"] == attribute_value(13, major_cuda=12) == clock.clock_rate_khz() == 1_980_000
    assert clock.nanoseconds(1980) == 1000
