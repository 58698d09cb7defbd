"""Device pointers that are host addresses (``hypa run``'s memory model), launch-spec
``variables`` and ``{bytes = ...}`` arguments, and ``--capture`` replaying a real program's
launches with identical counts."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import EmulationError, Emulator
from hypa.runtime.emulator.flat_memory import FlatMemory, HostBinding
from hypa.runtime.emulator.launch import Launch, launches_from_dict

from helpers import build_cuda_program, kernel, run_hypa, store_at_tid


# out[i] = *table[i] + k: the pointers come from memory, as in a real program's pointer arrays
GATHER = kernel("gather(.param .u64 table, .param .u64 out)", """
    ld.param.u64 %rd1, [table];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u64 %rd5, [%rd4];
    ld.global.u32 %r2, [%rd5];
    ld.const.u32 %r3, [k];
    add.s32 %r4, %r2, %r3;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.u32 [%rd7], %r4;
    ret;
""", before=""".visible .const .align 4 .u32 k = 5;
""", target="sm_90")


def _binding(mem: FlatMemory, store: dict) -> HostBinding:
    def variable(name, size, init):
        if name not in store:
            store[name] = init.copy()
        return store[name]

    return HostBinding(mem, variable)


def _ptr(a) -> bytes:
    return int(a.start).to_bytes(8, "little")


def test_pointers_are_host_addresses_and_stored_pointers_work():
    mem, store = FlatMemory(), {}
    vals = [mem.allocate(4, "device") for _ in range(4)]
    for i, a in enumerate(vals):
        np.ctypeslib.as_array(a.owner[1])[:] = np.frombuffer(np.uint32(10 * i).tobytes(), np.uint8)
    table = mem.allocate(32, "device")
    np.ctypeslib.as_array(table.owner[1])[:] = np.frombuffer(np.array([a.start for a in vals], np.uint64).tobytes(), np.uint8)
    out = mem.allocate(16, "device")
    emu = Emulator(parse_ptx(GATHER), mode="full")
    emu.host = _binding(mem, store)
    r = emu.run(Launch(kernel="gather", grid=1, block=4, args=[_ptr(table), _ptr(out)]))
    assert list(out.owner[1].view(np.uint32)) == [5, 15, 25, 35]
    assert r.metrics["thread_inst_executed"] == 4 * 13  # 13 instructions, no branch, 4 threads
    # __constant__ data the program wrote persists into the next launch
    store["k"][:] = np.frombuffer(np.uint32(100).tobytes(), np.uint8)
    emu.run(Launch(kernel="gather", grid=1, block=4, args=[_ptr(table), _ptr(out)]))
    assert list(out.owner[1].view(np.uint32)) == [100, 110, 120, 130]


def test_access_outside_every_allocation_names_thread_address_and_nearest_allocation():
    mem = FlatMemory(exact_bounds=True)  # compute-sanitizer's view: every byte past the size counts
    table = mem.allocate(24, "device")  # room for 3 pointers: thread 3 reads past the end
    vals = mem.allocate(4, "device")
    np.ctypeslib.as_array(table.owner[1])[:] = np.frombuffer(np.array([vals.start] * 3, np.uint64).tobytes(), np.uint8)
    out = mem.allocate(16, "device")
    emu = Emulator(parse_ptx(GATHER), mode="full")
    emu.host = _binding(mem, {})
    with pytest.raises(EmulationError) as e:
        emu.run(Launch(kernel="gather", grid=1, block=4, args=[_ptr(table), _ptr(out)]))
    msg = str(e.value)
    assert "thread (3, 0, 0)" in msg and f"{table.start + 24:#x}" in msg
    assert "outside every allocation; 0 bytes past the end of the 24-byte device allocation" in msg
    with pytest.raises(EmulationError, match="a null pointer"):
        emu.run(Launch(kernel="gather", grid=1, block=1, args=[bytes(8), _ptr(out)]))


def test_launch_spec_variables_and_byte_arguments():
    spec = {
        "launch": [{"kernel": "gather", "grid": 1, "block": 1, "args": ["t", "o"], "variables": {"k": "kk"}}],
        "buffers": {"t": {"dtype": "uint64", "count": 1}, "o": {"dtype": "uint32", "count": 1},
                    "kk": {"dtype": "uint32", "count": 1, "init": {"value": 7}}},
    }
    (launch,) = launches_from_dict(spec)
    assert launch.variables == {"k": "kk"}
    ptx = kernel("s(.param .align 4 .b8 p[12], .param .u64 out)", """
    ld.param.u32 %r1, [p+8];
    ld.const.u32 %r2, [k];
    add.s32 %r3, %r1, %r2;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r3;
    ret;
""", before=""".visible .const .align 4 .u32 k = 5;
""", target="sm_90")
    (l2,) = launches_from_dict({
        "launch": [{"kernel": "s", "grid": 1, "block": 1, "args": [{"bytes": "000000000000000009000000"}, "o"],
                    "variables": {"k": "kk"}}],
        "buffers": {"o": {"dtype": "uint32", "count": 1}, "kk": {"dtype": "uint32", "count": 1, "init": {"value": 30}}},
    })
    r = Emulator(parse_ptx(ptx), mode="full").run(l2)
    assert int(r.buffers["o"][0]) == 39
    from hypa.runtime.emulator.launch import LaunchError

    with pytest.raises(LaunchError, match="not hex"):
        launches_from_dict({"launch": [{"kernel": "s", "grid": 1, "block": 1, "args": [{"bytes": "zz"}]}]})


CAPTURED = r"""
#include <cstdio>
struct Affine { float a, b; int n; };
__constant__ float bias;
__device__ int hits;
__global__ void apply(Affine f, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < f.n && x[i] > 1.0f) { y[i] = f.a * x[i] + f.b + bias; atomicAdd(&hits, 1); }
}
__global__ void count_big(const float *y, int n, int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] > 10.0f) atomicAdd(out, 1);
}
int main() {
    const int n = 1000;
    float hx[n]; for (int i = 0; i < n; ++i) hx[i] = (i % 13) * 0.5f;
    float *x, *y; int *c; cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMalloc(&c, 4);
    cudaMemcpy(x, hx, n * 4, cudaMemcpyHostToDevice); cudaMemset(y, 0, n * 4); cudaMemset(c, 0, 4);
    float b = 1.0f; cudaMemcpyToSymbol(bias, &b, 4);
    apply<<<4, 256>>>(Affine{3.0f, 0.5f, n}, x, y);
    count_big<<<4, 256>>>(y, n, c);
    int big, h; cudaMemcpy(&big, c, 4, cudaMemcpyDeviceToHost); cudaMemcpyFromSymbol(&h, hits, 4);
    printf("hits %d big %d\n", h, big);
    return 0;
}
"""


@pytest.fixture(scope="module")
def captured_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("capture")
    build_cuda_program(d, "p", CAPTURED)
    return d


def test_capture_replays_every_launch_with_the_same_counts(captured_program):
    d = captured_program
    run = run_hypa("run", "--capture", d / "cap", "-o", d / "run.json", "--", d / "p")
    if run.returncode != 0 and "C compiler" in run.stderr:
        pytest.skip(run.stderr)
    assert run.returncode == 0, run.stderr
    # hand-computed: i < 1000 has residues 0..11 mod 13 77 times each and 12 76 times;
    # x = (i % 13) * 0.5 > 1 for residues 3..12: 9 * 77 + 76 = 769; y = 3x + 1.5 > 10 for
    # x > 2.83, residues 6..12: 6 * 77 + 76 = 538
    assert run.stdout == "hits 769 big 538\n"
    ran = json.load(open(d / "run.json"))
    replay = run_hypa("profile", d / "cap", "--format", "json")
    assert replay.returncode == 0, replay.stderr
    again = json.load(__import__("io").StringIO(replay.stdout))
    assert [r["kernel"] for r in again] == [r["kernel"] for r in ran] == ["_Z5apply6AffinePKfPf", "_Z9count_bigPKfiPi"]
    assert all(r["mode"] == "slice" for r in again)
    for a, b in zip(ran, again):
        for k in ("inst_executed", "thread_inst_executed", "branch", "divergent_branch", "flop_count_sp"):
            assert a[k] == b[k], (a["kernel"], k)
    toml = (d / "cap" / "launches.toml").read_text()
    assert 'variables = { "bias" = ' in toml  # the __constant__ the program wrote
    assert "args = [{ bytes = " in toml  # the struct, by value
    assert os.path.exists(d / "cap" / "module_0.ptx")


PRINTF = kernel("p()", """
    .local .align 8 .b8 __local_depot0[16];
    mov.u64 %rd1, __local_depot0;
    cvta.local.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    setp.gt.u32 %p1, %r1, 1;
    @%p1 bra $L_done;
    cvt.rn.f64.u32 %fd1, %r1;
    st.local.u32 [%rd1], %r1;
    st.local.f64 [%rd1+8], %fd1;
    mov.u64 %rd3, $str;
    cvta.global.u64 %rd4, %rd3;
    { .param .b64 param0; st.param.b64 [param0], %rd4;
      .param .b64 param1; st.param.b64 [param1], %rd2;
      .param .b32 retval0;
      call.uni (retval0), vprintf, (param0, param1);
      ld.param.b32 %r2, [retval0]; }
$L_done:
    ret;
""", before=""".global .align 1 .b8 $str[12] = {118, 61, 37, 100, 32, 37, 46, 50, 102, 32, 10, 0};
.global .align 1 .b8 $str2[3] = {104, 105, 0};
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
""", target="sm_90")


def test_device_printf_reaches_the_host_callback_in_lane_order():
    import ctypes

    from hypa.cudart.printf import format_device
    from hypa.runtime.emulator.flat_memory import host_address

    lines = []

    def cb(ctx, fmt, args):
        lines.append(format_device(ctypes.string_at(fmt), args, lambda p: ctypes.string_at(host_address(ctx, p))))

    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(cb)
    emu = Emulator(parse_ptx(PRINTF), mode="full")
    emu.host = _binding(FlatMemory(), {})
    r = emu.run(Launch(kernel="p", grid=1, block=32, args=[]))
    assert lines == []  # no callback: counted, not printed
    emu.host.printf = ctypes.cast(fn, ctypes.c_void_p).value
    r2 = emu.run(Launch(kernel="p", grid=1, block=32, args=[]))
    assert lines == [b"v=0 0.00 \n", b"v=1 1.00 \n"]
    assert r.metrics["thread_inst_executed"] == r2.metrics["thread_inst_executed"]


def test_as_on_a_gpu_small_overruns_do_not_fault_but_are_reported():
    # thread 3 reads table[3], 0 bytes past a 24-byte allocation: a GPU does not fault there;
    # hypa allows SLACK bytes (mapped, zero), notes the first such address, and the zeros are
    # a null pointer, so the next load faults and names it.  With exact bounds the first does.
    for exact, expect in ((False, "a null pointer"), (True, "0 bytes past the end of the 24-byte")):
        mem = FlatMemory(exact_bounds=exact)
        table = mem.allocate(24, "device")
        vals = mem.allocate(4, "device")
        np.ctypeslib.as_array(table.owner[1])[:] = np.frombuffer(np.array([vals.start] * 3, np.uint64).tobytes(), np.uint8)
        out = mem.allocate(16, "device")
        emu = Emulator(parse_ptx(GATHER), mode="full")
        emu.host = _binding(mem, {})
        with pytest.raises(EmulationError, match=expect):
            emu.run(Launch(kernel="gather", grid=1, block=4, args=[_ptr(table), _ptr(out)]))
    # an overrun that stays in the slack: the launch completes and says where it went
    mem = FlatMemory()
    vals = [mem.allocate(4, "device") for _ in range(4)]
    table = mem.allocate(24, "device")  # 3 pointers; the 4th slot is slack: a null pointer
    np.ctypeslib.as_array(table.owner[1])[:] = np.frombuffer(np.array([a.start for a in vals[:3]], np.uint64).tobytes(), np.uint8)
    out = mem.allocate(12, "device")  # thread 3's store lands 0 bytes past its end
    emu = Emulator(parse_ptx(GATHER.replace("ld.global.u64 %rd5, [%rd4];", "ld.global.u64 %rd5, [%rd1];")), mode="full")
    emu.host = _binding(mem, {})
    r = emu.run(Launch(kernel="gather", grid=1, block=4, args=[_ptr(table), _ptr(out)]))
    assert any(f"an access touched {out.start + 12:#x}, 0 bytes past the end of the 12-byte device allocation" in n
               for n in r.notes)
    starts, ends, exact_starts, exact = mem.tables()
    i = list(exact_starts).index(out.start)
    assert int(ends[i]) - int(exact[i]) == FlatMemory.SLACK == int(exact_starts[i]) - int(starts[i]) and mem.find(out.start + 12) is None  # copies check the size


def test_metrics_are_a_mapping_and_inputs_are_copied_unless_in_place():
    ptx = kernel("inc(.param .u64 p)", """
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
""", target="sm_90")
    emu = Emulator(parse_ptx(ptx), mode="full")
    a = np.zeros(32, np.uint32)
    r = emu.run(Launch(kernel="inc", grid=1, block=32, args=["a"], buffers={"a": a}))
    assert not a.any() and list(r.buffers["a"]) == list(range(32))
    b = np.zeros(32, np.uint32)
    r2 = emu.run(Launch(kernel="inc", grid=1, block=32, args=[b]))  # an array given directly
    assert not b.any() and list(r2.buffers["<array 0>"]) == list(range(32))
    emu.run(Launch(kernel="inc", grid=1, block=32, args=["a"], buffers={"a": a}), in_place=True)
    assert list(a) == list(range(32))
    m = r.metrics
    assert sorted(m)[:2] == ["branch", "branch_efficiency"] and dict(m)["thread_inst_executed"] == 6 * 32  # 6 instructions
    assert "flop_count_sp" in m and len(m) == len(m.values) and m.get("nope", -1) == -1


# out[t] = sum over j < n of a[t + j] + b[t + j]: every iteration reads a, then b
ALTERNATE = kernel("alt(.param .u64 a, .param .u64 b, .param .u64 out, .param .u32 n)", """
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u32 %r9, [n];
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, 0;
    mov.u32 %r4, 0;
$L_loop:
    setp.ge.u32 %p1, %r3, %r9;
    @%p1 bra $L_done;
    add.u32 %r5, %r3, %r1;
    mul.wide.u32 %rd4, %r5, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.u32 %r6, [%rd5];
    add.s64 %rd6, %rd2, %rd4;
    ld.global.u32 %r7, [%rd6];
    add.u32 %r4, %r4, %r6;
    add.u32 %r4, %r4, %r7;
    add.u32 %r3, %r3, 1;
    bra $L_loop;
$L_done:
""" + store_at_tid("out", "%r4"), target="sm_90")


def _array(mem: FlatMemory, values) -> object:
    a = mem.allocate(4 * len(values), "device")
    np.ctypeslib.as_array(a.owner[1])[:] = np.frombuffer(np.asarray(values, np.uint32).tobytes(), np.uint8)
    return a


def test_each_access_remembers_its_allocation_and_stale_hints_are_checked():
    # each access keeps the allocation it hit last (reading two arrays alternately hits both
    # hints); the hints outlive the launch, so later launches over a changed table (fewer
    # allocations, other indices) must still check them, and an overrun still faults
    mem = FlatMemory(exact_bounds=True)
    fillers = [mem.allocate(8, "device") for _ in range(4)]
    a, b = _array(mem, range(64)), _array(mem, [1000 * k for k in range(64)])
    out = mem.allocate(128, "device")
    emu = Emulator(parse_ptx(ALTERNATE), mode="full")
    emu.host = _binding(mem, {})

    def run(x, y, n):
        emu.run(Launch(kernel="alt", grid=1, block=32, args=[_ptr(x), _ptr(y), _ptr(out), n]))
        return list(out.owner[1].view(np.uint32))

    assert run(a, b, 32) == [1001 * (32 * t + 496) for t in range(32)]
    for f in fillers:
        mem.release(f.start)
    a2, b2 = _array(mem, [2] * 64), _array(mem, [3] * 64)
    assert run(b2, a2, 16) == [80] * 32  # other ranges, fewer of them
    assert run(a, b, 32) == [1001 * (32 * t + 496) for t in range(32)]
    with pytest.raises(EmulationError) as e:
        run(a, b, 34)  # thread 31 reads a[64], 0 bytes past the end
    assert "thread (31, 0, 0)" in str(e.value) and f"{a.start + 256:#x}" in str(e.value)
    assert "0 bytes past the end of the 256-byte device allocation" in str(e.value)


def test_one_generic_access_mixes_window_and_flat_lanes():
    # even lanes read shared memory through a generic address (a window), odd lanes the
    # program's memory (flat): one access, both kinds of lanes
    ptx = kernel("mix(.param .u64 g, .param .u64 out)", """
    ld.param.u64 %rd10, [g];
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, 3;
    mul.wide.u32 %rd4, %r1, 4;
    mov.u64 %rd5, sbuf;
    add.s64 %rd5, %rd5, %rd4;
    st.shared.u32 [%rd5], %r2;
    bar.sync 0;
    cvta.shared.u64 %rd6, %rd5;
    add.s64 %rd7, %rd10, %rd4;
    and.b32 %r3, %r1, 1;
    setp.eq.u32 %p1, %r3, 0;
    selp.b64 %rd8, %rd6, %rd7, %p1;
    ld.u32 %r4, [%rd8];
""" + store_at_tid("out", "%r4"), before=".shared .align 4 .b8 sbuf[128];\n", target="sm_90")
    mem = FlatMemory()
    g = _array(mem, [7 + k for k in range(32)])
    out = mem.allocate(128, "device")
    emu = Emulator(parse_ptx(ptx), mode="full")
    emu.host = _binding(mem, {})
    emu.run(Launch(kernel="mix", grid=1, block=32, args=[_ptr(g), _ptr(out)]))
    assert list(out.owner[1].view(np.uint32)) == [3 * t if t % 2 == 0 else 7 + t for t in range(32)]


def test_every_global_access_has_its_own_allocation_hint():
    from hypa.runtime.emulator.lowering import build_module

    emu = Emulator(parse_ptx(ALTERNATE), mode="full")
    text = str(build_module(emu.program("alt")))
    assert text.count("internal global i64 0") == 3  # a, b and the store to out


def test_an_access_just_before_an_allocation_is_slack_too():
    """Issue 26: a wavelet kernel reads 72 bytes before a 9,216-byte allocation; a GPU does not
    fault there, so hypa warns (as past the end) instead of stopping; --exact-bounds faults."""
    ptx = kernel("k(.param .u64 p, .param .u64 q)", """
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [q];
    ld.global.u32 %r1, [%rd1+-72];
    st.global.u32 [%rd2], %r1;
    ret;
""")
    for exact in (False, True):
        mem = FlatMemory(exact_bounds=exact)
        src = mem.allocate(9216, "device")
        out = mem.allocate(4, "device")
        emu = Emulator(parse_ptx(ptx), mode="full")
        emu.host = _binding(mem, {})
        launch = Launch(kernel="k", grid=1, block=1, args=[_ptr(src), _ptr(out)])
        if exact:
            with pytest.raises(EmulationError, match=r"72 bytes before the 9216-byte device allocation"):
                emu.run(launch)
        else:
            r = emu.run(launch)
            assert any(f"an access touched {src.start - 72:#x}, 72 bytes before the 9216-byte device allocation at "
                       f"{src.start:#x}: a GPU does not fault" in n for n in r.notes), r.notes
