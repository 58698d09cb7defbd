"""Bounds checks in every mode (issue 17): slice mode computes the address of every access
outside the slice and checks it as full mode does (``--no-bounds-check`` opts out), and every
state space is checked with all 64 bits of a state-space address."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import EXAMPLES, HEADER, emulate, run_hypa_opt

from hypa.runtime.emulator.emulator import EmulationError

SAXPY = EXAMPLES / "saxpy.ptx"
SMALL_X = "grid=4 block=256 args=1000,2.0,x,y buffer.x=float32:100:arange buffer.y=float32:1000:ones"
SAXPY_OOB = ("hypa-opt: error: out-of-bounds access at kernel saxpy, CTA (0, 0, 0), thread (100, 0, 0): "
             "ld.global.f32 %f2, [%rd6]; (block bb1) touches address 0x80000000190 "
             "(buffer 'x' byte 400, which holds 400 bytes)")


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_saxpy_small_buffer_is_an_error_in_every_mode(mode):
    r = run_hypa_opt("--mode", mode, f"--emulate={SMALL_X}", SAXPY)
    assert r.returncode == 1
    assert r.stderr.strip() == SAXPY_OOB


def test_no_bounds_check_gives_the_old_result():
    r = run_hypa_opt("--no-bounds-check", f"--emulate={SMALL_X}", "--format=json", SAXPY)
    assert r.returncode == 0, r.stderr
    assert '"thread_inst_executed": 20264' in r.stdout


def _saxpy(n_x: int, **options):
    x = np.arange(n_x, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    return emulate(SAXPY.read_text(), [1000, 2.0, "x", "y"], {"x": x, "y": y}, grid=4, block=256, **options)


def test_counts_and_fractions_do_not_change():
    """Address computation is not counted: the same metrics with and without the checks."""
    checked = _saxpy(1000)
    unchecked = _saxpy(1000, bounds_check=False)
    assert checked.metrics.values == unchecked.metrics.values
    assert f"{100 * checked.metrics['executed_fraction']:.2f}" == "35.37"  # README's figure
    # memory is not read or written by the checked accesses: y stays ones in slice mode
    assert (checked.buffers["y"] == 1).all()


def test_python_api_option():
    with pytest.raises(EmulationError, match=r"buffer 'x' byte 400, which holds 400 bytes"):
        _saxpy(100)
    assert _saxpy(100, bounds_check=False).metrics["thread_inst_executed"] == 20264


def _one_thread(body: str, before: str = "") -> str:
    return (HEADER + before + "\n.visible .entry k(.param .u32 k_n, .param .u64 k_out)\n{\n"
            "    .reg .b32 %r<8>;\n    .reg .b64 %rd<8>;\n" + body +
            "    ld.param.u64 %rd3, [k_out];\n    cvta.to.global.u64 %rd4, %rd3;\n"
            "    st.global.u32 [%rd4], %r1;\n    ret;\n}\n")


PARAM_2_40 = _one_thread("    mov.u64 %rd1, k_n;\n    add.s64 %rd2, %rd1, 1099511627776;\n    ld.param.u32 %r1, [%rd2];\n")
LOCAL_2_40 = _one_thread("    .local .align 4 .b8 buf[16];\n    mov.u64 %rd1, buf;\n    add.s64 %rd2, %rd1, 1099511627776;\n"
                         "    st.local.u32 [%rd2], 7;\n    ld.local.u32 %r1, [%rd1];\n")
CONST_BELOW = _one_thread("    mov.u64 %rd1, table;\n    ld.const.u32 %r1, [%rd1+-4];\n",
                          before=".const .align 4 .u32 table[4] = {1, 2, 3, 4};\n")
WHERE = "out-of-bounds access at kernel k, CTA (0, 0, 0), thread (0, 0, 0): "


@pytest.mark.parametrize("mode", ["slice", "full"])
@pytest.mark.parametrize("ptx, message", [
    (PARAM_2_40, "ld.param.u32 %r1, [%rd2]; (block bb0) touches parameter memory offset 0x10000000000, "
                 "beyond the 16 bytes of the kernel's parameters"),
    (LOCAL_2_40, "st.local.u32 [%rd2], 7; (block bb0) touches local memory offset 0x10000000000, "
                 "beyond the 16 bytes each thread has"),
    (CONST_BELOW, "ld.const.u32 %r1, [%rd1+-4]; (block bb0) touches constant memory offset -0x4, "
                  "before the 16 bytes of constant variables"),
], ids=["param-2**40", "local-2**40", "const-below"])
def test_state_spaces_checked_with_full_width_addresses(ptx, message, mode):
    out = np.zeros(1, np.uint32)
    with pytest.raises(EmulationError) as err:
        emulate(ptx, [1, "out"], {"out": out}, block=1, mode=mode)
    assert str(err.value) == WHERE + message


def test_state_space_accesses_in_bounds_still_run():
    ok = _one_thread("    .local .align 4 .b8 buf[16];\n    mov.u64 %rd1, buf;\n    st.local.u32 [%rd1+12], 7;\n"
                     "    ld.local.u32 %r1, [%rd1+12];\n    mov.u64 %rd2, k_n;\n    ld.param.u32 %r2, [%rd2];\n"
                     "    mov.u64 %rd5, table;\n    ld.const.u32 %r3, [%rd5+12];\n    add.s32 %r1, %r1, %r3;\n"
                     "    add.s32 %r1, %r1, %r2;\n",
                     before=".const .align 4 .u32 table[4] = {1, 2, 3, 4};\n")
    for mode in ("slice", "full"):
        r = emulate(ok, [5, "out"], {"out": np.zeros(1, np.uint32)}, block=1, mode=mode)
        if mode == "full":
            assert int(r.buffers["out"][0]) == 7 + 4 + 5


def test_wmma_fragments_are_checked_in_slice_mode():
    """wmma.load/wmma.store outside the slice are bounds-checked (fragment's first and last
    element, with the stride computed): A of 1,000 halves instead of 1,024 fails in both modes,
    the full-size launch runs with the same counts with and without the checks."""
    import dataclasses

    import pytest

    from helpers import LAUNCHES
    from hypa.ptxdialect import parse_ptx_file
    from hypa.runtime.emulator.emulator import EmulationError, Emulator
    from hypa.runtime.emulator.launch import launches_from_toml

    (L,) = launches_from_toml(str(LAUNCHES / "wmma_gemm.toml"))
    module = parse_ptx_file(L.file)
    checked = Emulator(module, mode="slice").run(L).metrics.values
    assert checked == Emulator(module, mode="slice", bounds_check=False).run(L).metrics.values
    small = dataclasses.replace(L, buffers={**L.buffers, "A": dataclasses.replace(L.buffers["A"], count=1000)})
    for mode in ("slice", "full"):
        with pytest.raises(EmulationError, match=r"out-of-bounds access at kernel _Z9wmma_gemm.*: wmma\.load\.a\..*"
                                               r"buffer 'A' byte 2014, which holds 2000 bytes"):
            Emulator(module, mode=mode).run(small)


LDMATRIX_OOB = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<8>;
  .reg .b32 %r<12>;
  .reg .pred %p<2>;
  .shared .align 16 .b8 sm[512];
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 7;
  shl.b32 %r3, %r2, 4;
  mov.u32 %r4, sm;
  add.s32 %r5, %r4, %r3;
  setp.eq.u32 %p1, %r1, 3;
  @%p1 add.s32 %r5, %r5, 4096;
  OP
  ret;
}
"""


@pytest.mark.parametrize("mode", ["full", "slice"])
@pytest.mark.parametrize("op", ["ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r6}, [%r5];",
                                "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r5], {%r1};"])
def test_ldmatrix_out_of_bounds_names_the_thread_giving_the_row(op, mode):
    """Thread 3 gives matrix row 3's address, out of bounds; lanes 12-15 would receive that
    row's parts: the error names thread 3, whose address is wrong (issue 31, item 11)."""
    from hypa.runtime.emulator.emulator import EmulationError

    from helpers import emulate

    with pytest.raises(EmulationError, match=r"out-of-bounds access at kernel k, CTA \(0, 0, 0\), thread \(3, 0, 0\): "):
        emulate(LDMATRIX_OOB.replace("OP", op), ["b"], {"b": np.zeros(32, np.uint32)}, block=32, mode=mode)
