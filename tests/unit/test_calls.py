"""Indirect calls, recursion and the per-thread stack (``alloca``, ``stacksave``,
``stackrestore``), issue 16: results, exact counts worked out by hand in the comments, in
full mode and in slice mode, the call depth reported and bounded, and the CUDA programs of
``tests/cuda_programs/isa`` under ``hypa run`` (compared with the GPU's recording where there
is one).  The PTX files are in ``tests/filecheck/Execution/Inputs/calls`` (the lit tests run
them too); ``ptxas -arch=sm_90`` accepts each."""

from __future__ import annotations

import math
import os
import shutil
import subprocess

import numpy as np
import pytest

from hypa.passes.inline import indirect_targets
from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import EmulationError, ProgramError

from helpers import ISA_PROGRAMS, ROOT, emulate, gpu_recorded_run, nvcc, run_hypa

INPUTS = ROOT / "tests" / "filecheck" / "Execution" / "Inputs" / "calls"
MODES = ["full", "slice"]


def ptx(name: str) -> str:
    return (INPUTS / f"{name}.ptx").read_text()


def counts(r) -> dict:
    v = r.metrics.values
    return {k: v[k] for k in ("inst_executed", "thread_inst_executed", "calls", "max_call_depth") if k in v}


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
@pytest.mark.parametrize("name", ["fact", "table", "frames", "alloca"])
def test_ptxas_accepts_the_inputs(name):
    p = subprocess.run(["ptxas", "-arch=sm_90", "-o", os.devnull, str(INPUTS / f"{name}.ptx")],
                       check=False, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# -- recursion -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_recursive_factorial_diverges_by_depth(mode):
    # fact(n) = n <= 1 ? 1 : n * fact(n - 1); lane t computes fact(t % 5) (one warp).
    # fact's blocks: A = ld.param, setp, @p bra (3); B = sub, st.param, call (3);
    # C = ld.param, mul, st.param, ret (4); BASE = st.param, ret (2).
    # Threads: fact(0) = fact(1) = A + BASE = 5, fact(n) = 10 + fact(n - 1): 15, 25, 35 for
    # n = 2, 3, 4; lanes per n: 7, 7, 6, 6, 6 -> 35 + 35 + 90 + 150 + 210 = 520, plus the
    # kernel's 10 instructions x 32 = 320: 840.
    # Warp: depths 1..3 hold lanes with n <= 1 and lanes that recurse: A, B, C, BASE = 12
    # each; depth 4 (only n = 4 lanes, now at 1) runs A and BASE = 5: 36 + 5 + 10 = 51.
    r = emulate(ptx("fact"), ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)
    assert counts(r) == {"inst_executed": 51, "thread_inst_executed": 840, "calls": 4, "max_call_depth": 4}
    if mode == "full":
        assert list(r.buffers["out"]) == [math.factorial(t % 5) for t in range(32)]


@pytest.mark.parametrize("mode", MODES)
def test_returned_value_decides_a_branch(mode):
    # the kernel skips its store where fact(t % 5) > 5 (n = 3, 4: 12 lanes); slice mode
    # must compute the recursion for it (the copy of fact is all slice roots)
    text = ptx("fact").replace("\tld.param.u64 %rd1, [out];", "\tsetp.gt.u32 %p1, %r3, 5;\n\t@%p1 bra SKIP;\n"
                               "\tld.param.u64 %rd1, [out];").replace(
        "\tst.global.u32 [%rd3], %r3;\n\tret;", "\tst.global.u32 [%rd3], %r3;\nSKIP:\n\tret;").replace(
        ".reg .b32 %r<4>;", ".reg .b32 %r<4>;\n\t.reg .pred %p<2>;")
    r = emulate(text, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)
    # kernel: 7 instructions by all (mov rem st.param call ld.param setp bra), 4 by 20 lanes,
    # ret by all: warp 7 + 4 + 1 = 12, threads 224 + 80 + 32 = 336; fact as above: 41, 520
    assert counts(r) == {"inst_executed": 53, "thread_inst_executed": 856, "calls": 4, "max_call_depth": 4}


@pytest.mark.parametrize("mode", MODES)
def test_each_frame_has_its_own_locals(mode):
    # f(n, parent) stores n in its .local slot, calls f(n - 1, &slot) when n > 0, then reads
    # its own slot (n, whatever the callee stored in its own) and the parent's (n + 1):
    # f(0, p) = 0 + 0 + 1 = 1, f(1, 0) = f(0, &s) + 1 + 0 = 2, f(2, 0) = f(1, &s) + 2 = 4 + 2 = 6.
    # Threads (blocks A 6, B 5, C 1, D 4, E 1, F 4): f(0,0) = 14, f(0,p) = 15, f(1,0) = 35,
    # f(1,p) = 36, f(2,0) = 56; lanes n = t % 3: 11, 11, 10 -> 154 + 385 + 560 + kernel 11 x 32.
    # Warp: depth 1 A B C D F = 20, depth 2 A B C D E F = 21, depth 3 A D E F = 15, kernel 11.
    r = emulate(ptx("frames"), ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)
    assert counts(r) == {"inst_executed": 67, "thread_inst_executed": 1451, "calls": 3, "max_call_depth": 3}
    if mode == "full":
        assert list(r.buffers["out"]) == [[0, 2, 6][t % 3] for t in range(32)]


@pytest.mark.parametrize("mode", MODES)
def test_call_depth_is_bounded_by_the_stack_size(mode):
    # lane t computes fact(1000 + t).  A call counts as the GPU's frames do: the 8-byte
    # return address and the caller's registers live after the call (fact's n, 4 bytes),
    # rounded to 16 (ptxas -v gives fact a 16-byte frame); the kernel's call 8 -> 16.
    # 1024 bytes hold 64 calls: the call entering depth 65 stops the launch.
    text = ptx("fact").replace("rem.u32 %r2, %r1, 5;", "add.u32 %r2, %r1, 1000;")
    with pytest.raises(EmulationError) as e:
        emulate(text, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)
    assert str(e.value) == (
        "call stack overflow at kernel k, CTA (0, 0, 0), thread (0, 0, 0): call (rv__real1), fact, (a__real1); "
        "in fact (block bb3) would enter fact at call depth 65, past the 1024 bytes of stack per thread or the "
        "deepest call counted (1023); raise the stack with --stack-size")
    with pytest.raises(EmulationError, match="at call depth 513, past the 8192 bytes"):
        emulate(text, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode, stack_size=8192)
    # 50 + t: the deepest lane (t = 31) goes 81 calls deep, one warp-level call per depth
    small = ptx("fact").replace("rem.u32 %r2, %r1, 5;", "add.u32 %r2, %r1, 50;")
    r = emulate(small, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode, stack_size=4096)
    assert counts(r)["calls"] == 81 and counts(r)["max_call_depth"] == 81
    if mode == "full":
        assert list(r.buffers["out"]) == [math.factorial(50 + t) % 2**32 for t in range(32)]


def test_real_calls_refuse_what_they_cannot_do():
    # a recursive function with a .reg parameter, and one that executes exit
    reg = """.version 8.0
.target sm_90
.address_size 64
.func (.reg .b32 r) g(.reg .b32 x)
{
	.reg .pred %p<2>;
	setp.eq.u32 %p1, x, 0;
	@%p1 bra DONE;
	call (r), g, (x);
DONE:
	mov.u32 r, x;
	ret;
}
.visible .entry k()
{
	.reg .b32 %r<3>;
	mov.u32 %r1, 3;
	call (%r2), g, (%r1);
	ret;
}
"""
    with pytest.raises(ProgramError, match="recursive function 'g' has the .reg parameter 'x'"):
        emulate(reg, [], {}, block=32, mode="full")
    ext = ptx("fact").replace("BASE:\n\tst.param.b32 [fact_ret], 1;", "BASE:\n\texit;\n\tst.param.b32 [fact_ret], 1;")
    with pytest.raises(ProgramError, match="recursive function 'fact' executes 'exit'"):
        emulate(ext, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode="full")
    guarded = ptx("fact").replace("\tcall (rv), fact, (a);\n\tld.param.b32 %r3", "\t@%p1 call (rv), fact, (a);\n"
                                  "\tld.param.b32 %r3", 1)
    with pytest.raises(ProgramError, match=r"guarded call '@%p1 call \.\.\.' in fact: the emulator runs guarded calls of "
                                           r"non-recursive functions only"):
        emulate(guarded, ["out"], {"out": np.zeros(32, np.uint32)}, block=32, mode="full")


# -- indirect calls ---------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_function_pointer_table_dispatch(mode):
    # lane t calls table[(t / div) % 3] = twice, square, negate (4 instructions each) on t;
    # the kernel has 16 instructions.  div = 1: every warp runs all three functions, one
    # after another, and reconverges after the call: 16 + 12 = 28; div = 32: one function.
    for div, warp in ((1, 28), (32, 20)):
        r = emulate(ptx("table"), ["out", div], {"out": np.zeros(32, np.int32)}, block=32, mode=mode)
        assert counts(r) == {"inst_executed": warp, "thread_inst_executed": 32 * 20}
        if mode == "full":
            want = [[2 * t, t * t, -t][(t // div) % 3] for t in range(32)]
            assert list(r.buffers["out"]) == want


def test_possible_targets_follow_the_prototype_and_calltargets():
    m = parse_ptx(ptx("table"))
    funcs = {f.func_name: f for f in m.ops if getattr(f, "func_name", None) and not f.is_declaration}
    call = next(op for op in m.walk() if op.name == "ptx.call")
    assert indirect_targets(m, call, funcs) == ["twice", "square", "negate"]
    # a prototype taking two arguments matches none of them
    bad = ptx("table").replace("prot: .callprototype (.param .b32 _) _ (.param .b32 _);",
                               "prot: .callprototype (.param .b32 _) _ (.param .b32 _, .param .b32 _);")
    with pytest.raises(ProgramError, match="has no possible target"):
        emulate(bad, ["out", 1], {"out": np.zeros(32, np.int32)}, block=32, mode="full")
    # .calltargets names them: only those are dispatched to
    listed = ptx("table").replace("prot: .callprototype (.param .b32 _) _ (.param .b32 _);",
                                  "prot: .calltargets twice, negate;")
    m = parse_ptx(listed)
    call = next(op for op in m.walk() if op.name == "ptx.call")
    assert indirect_targets(m, call, funcs) == ["twice", "negate"]
    # lanes with square's address are then calls through no listed target
    with pytest.raises(EmulationError, match=r"indirect call through 0x[0-9a-f]+, the address of none of its "
                                             r"possible targets, at kernel k, CTA \(0, 0, 0\), thread \(1, 0, 0\)"):
        emulate(listed, ["out", 1], {"out": np.zeros(32, np.int32)}, block=32, mode="full")


@pytest.mark.parametrize("mode", MODES)
def test_function_address_from_mov(mode):
    # mov.u64 %rd, func gives the address the dispatch compares; even lanes call twice,
    # odd lanes negate: warp 16 - 0 (same count of kernel instructions: mov replaces ld)
    # kernel: mov tid, ld.param, div, rem, mul.wide, mov, add, mov twice, and, setp, @p mov
    # (11), st.param, call, ld.param, ld.param, mul.wide, add, st.global, ret (8) = 19;
    # two functions of 4: warp 27, threads 32 x 23
    text = ptx("table").replace("\tld.global.u64 %rd4, [%rd3];", "\tmov.u64 %rd4, twice;\n\tand.b32 %r4, %r1, 1;\n"
                                "\tsetp.eq.u32 %p1, %r4, 1;\n\t@%p1 mov.u64 %rd4, negate;").replace(
        ".reg .b32 %r<5>;", ".reg .b32 %r<5>;\n\t.reg .pred %p<2>;")
    r = emulate(text, ["out", 1], {"out": np.zeros(32, np.int32)}, block=32, mode=mode)
    assert counts(r) == {"inst_executed": 27, "thread_inst_executed": 32 * 23}
    if mode == "full":
        assert list(r.buffers["out"]) == [2 * t if t % 2 == 0 else -t for t in range(32)]


# -- alloca, stacksave, stackrestore --------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_alloca_with_stackrestore_in_a_loop(mode):
    # 100 times: save the stack pointer, alloca 4 (t + 1) bytes, store t at the start and
    # t + 1 at the last word, read both back, restore.  Without the restore 100 allocations
    # of up to 128 bytes would pass the 1024-byte stack.  out = t + (t + 1), and 2 for t = 0
    # (both stores hit the same word).  8 + 11 x 100 + 5 instructions per thread.
    r = emulate(ptx("alloca"), ["out", 0], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)
    assert counts(r) == {"inst_executed": 1113, "thread_inst_executed": 32 * 1113}
    if mode == "full":
        assert list(r.buffers["out"]) == [2] + [2 * t + 1 for t in range(1, 32)]
    with pytest.raises(EmulationError) as e:
        emulate(ptx("alloca"), ["out", 2000], {"out": np.zeros(32, np.uint32)}, block=32, mode=mode)
    assert str(e.value) == ("call stack overflow at kernel k, CTA (0, 0, 0), thread (0, 0, 0): alloca.u64 %rd3, %rd2, 16; "
                            "(block LOOP) asks for more than the 1024 bytes of stack per thread (raise it with --stack-size)")


def test_alloca_memory_is_bounds_checked():
    # the thread's local memory ends with its stack: a store 2000 bytes past the allocation fails
    text = ptx("alloca").replace("\tst.local.u32 [%rd5], %r2;", "\tst.local.u32 [%rd5+2000], %r2;")
    with pytest.raises(EmulationError, match="out-of-bounds access at kernel k, CTA \\(0, 0, 0\\), thread \\(0, 0, 0\\): "
                                             "st.local.u32 \\[%rd5\\+2000\\], %r2;"):
        emulate(text, ["out", 0], {"out": np.zeros(32, np.uint32)}, block=32, mode="slice")


# -- real programs ------------------------------------------------------------------------------

def _fib(n: int) -> int:
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def _frames(n: int, depth: int) -> int:
    s = _frames(n // 2, depth + 1) if n > 0 else 0
    return s + n * (((n + depth) & 7) + 1) + depth


def _recursion_stdout() -> str:
    n = 64
    sf = sum(math.factorial(t % 21) for t in range(n)) % 2**64
    sb = sum(_fib(t % 13) for t in range(n))
    se = sum((t % 7 + t // 16) % 2 == 0 for t in range(n))
    sl = sum(_frames(t * 37 % 1000, 0) for t in range(n))
    return (f"fact[20]={math.factorial(20)} fib[12]={_fib(12)} sum_fact={sf} sum_fib={sb} evens={se} "
            f"local[5]={_frames(5 * 37 % 1000, 0)} sum_local={sl}\nPASS\n")


def _function_pointers_stdout() -> str:
    sel = [(t * 5 + t // 8) % 4 for t in range(64)]
    out = [[t + 7, t - 7, t * 7, max(t, 7)][s] for t, s in enumerate(sel)]
    return f"out[0..7]={' '.join(map(str, out[:8]))} sum={sum(out)}\nPASS\n"


def _alloca_stdout() -> str:
    """alloca_stack.cu: out[t] = sum over 3 iterations of sum_{k < n} (k + t + it), n = t % 5 + 1."""
    out = [sum(k + t + it for it in range(3) for k in range(t % 5 + 1)) for t in range(64)]
    return f"no error\nout[0] = {out[0]}, out[7] = {out[7]}, out[63] = {out[63]}, sum = {sum(out)}\nPASS\n"


@pytest.mark.parametrize("name,expected,depth", [("recursion", _recursion_stdout, 12),
                                                 ("function_pointers", _function_pointers_stdout, None),
                                                 ("alloca_stack", _alloca_stdout, None)])
def test_cuda_program_under_hypa_run(tmp_path, name, expected, depth):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    exe = tmp_path / name
    p = nvcc(ISA_PROGRAMS / f"{name}.cu", exe)
    assert p.returncode == 0, p.stderr
    report = tmp_path / "r.json"
    r = run_hypa("run", "--format", "json", "-o", str(report), "--", str(exe), timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected()
    import json

    launch = json.loads(report.read_text())[0]
    assert not any("racecheck" in n for d in json.loads(report.read_text()) for n in d.get("notes", []))  # racecheck's sample (on by default) finds no shared-memory hazard
    if depth is not None:  # fib(12) goes 12 calls deep, is_even(9) 10
        assert launch["max_call_depth"] == depth
    else:
        assert "max_call_depth" not in launch  # every target inlined: no real call
    gpu = gpu_recorded_run(name)
    if gpu is not None:
        assert gpu["rc"] == 0 and gpu["stdout"] == r.stdout


@pytest.mark.parametrize("mode", MODES)
def test_barrier_inside_a_recursive_function(mode):
    # fact(4) on two warps with a bar.sync before each recursive call: a warp waiting at the
    # barrier three calls deep resumes there.  Per warp: depths 1-3 run A (3), B (sub, bar,
    # st.param, call: 4), C (4) = 11 each, depth 4 runs A and BASE = 5, the kernel 10: 48.
    text = ptx("fact").replace("\tsub.u32 %r2, %r1, 1;", "\tbar.sync 0;\n\tsub.u32 %r2, %r1, 1;").replace(
        "rem.u32 %r2, %r1, 5;", "mov.u32 %r2, 4;")
    r = emulate(text, ["out"], {"out": np.zeros(64, np.uint32)}, block=64, mode=mode)
    assert counts(r) == {"inst_executed": 96, "thread_inst_executed": 64 * 48, "calls": 8, "max_call_depth": 4}
    if mode == "full":
        assert list(r.buffers["out"]) == [24] * 64



#: a table of function pointers (a C++ vtable) read by a kernel that reaches none of its
#: functions, and the address ``mov`` gives in another kernel: the same value.  Under
#: ``hypa run`` a module variable's bytes are made once, by the first kernel launched
#: (``first``, which names neither): newdelete makes objects in one kernel and calls through
#: their vtables in later ones.
VTABLE = """.version 8.0
.target sm_80
.address_size 64

.func (.param .b32 r) seven()
{
	.reg .b32 %r<2>;
	mov.u32 %r1, 7;
	st.param.b32 [r], %r1;
	ret;
}

.global .align 8 .u64 vtable[2] = {0, seven};

.visible .entry first(.param .u64 first_out)
{
	.reg .b64 %rd<4>;
	ld.param.u64 %rd3, [first_out];
	st.global.u64 [%rd3], 1;
	ret;
}

.visible .entry read_table(.param .u64 read_table_out)
{
	.reg .b64 %rd<4>;
	mov.u64 %rd1, vtable;
	ld.global.u64 %rd2, [%rd1+8];
	ld.param.u64 %rd3, [read_table_out];
	st.global.u64 [%rd3], %rd2;
	ret;
}

.visible .entry take_address(.param .u64 take_address_out)
{
	.reg .b64 %rd<4>;
	mov.u64 %rd1, seven;
	ld.param.u64 %rd3, [take_address_out];
	st.global.u64 [%rd3], %rd1;
	ret;
}
"""


def test_function_pointer_table_made_by_a_kernel_that_reaches_none_of_its_functions(tmp_path):
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.flat_memory import FlatMemory, HostBinding
    from hypa.runtime.emulator.launch import Launch

    if shutil.which("ptxas"):
        (tmp_path / "v.ptx").write_text(VTABLE)
        assert subprocess.run(["ptxas", "-arch=sm_90", "-o", os.devnull, str(tmp_path / "v.ptx")], check=False).returncode == 0
    storage: dict = {}
    emu = Emulator(parse_ptx(VTABLE), mode="full")
    emu.host = HostBinding(FlatMemory(), lambda name, size, init: storage.setdefault(name, init.copy()))
    got = []
    for k in ("first", "read_table", "take_address"):
        r = emu.run(Launch(kernel=k, grid=1, block=1, args=["out"], buffers={"out": np.zeros(1, np.uint64)}))
        got.append(int(r.buffers["out"][0]))
    assert got[0] == 1
    assert got[1] == got[2] != 0


#: ``@%p1 call (retval0), twice, (param0);``: lanes whose tid & m is non-zero run the inlined
#: body (5 instructions), the others skip it; both go on after the call.  Per thread 9 before
#: and with the call, 5 after: 14; warp: 9 + 5 (body, when a lane's guard holds) + 5.
GUARDED = (ROOT / "tests" / "filecheck" / "Execution" / "Inputs" / "heap" / "guarded.ptx").read_text()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m,out,counts", [
    (1, [100 if t % 2 == 0 else 2 * t + 1 for t in range(32)], (19, 32 * 14 + 16 * 5, 32 * 14 + 16 * 5 - 16)),
    (0, [100] * 32, (14, 32 * 14, 32 * 14 - 32)),
    (0xFFFFFFFF, [100] + [2 * t + 1 for t in range(1, 32)], (19, 32 * 14 + 31 * 5, 32 * 14 + 31 * 5 - 1)),
])
def test_guarded_direct_call_runs_in_the_guard_lanes_only(mode, m, out, counts):
    r = emulate(GUARDED, ["out", m], {"out": np.zeros(32, np.uint32)}, mode=mode)
    v = r.metrics.values
    assert (v["inst_executed"], v["thread_inst_executed"], v["not_predicated_off_thread_inst_executed"]) == counts
    if mode == "full":
        assert r.buffers["out"].tolist() == out


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
def test_ptxas_accepts_the_guarded_call(tmp_path):
    (tmp_path / "g.ptx").write_text(GUARDED)
    p = subprocess.run(["ptxas", "-arch=sm_90", "-o", os.devnull, str(tmp_path / "g.ptx")], check=False, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr


def test_call_of_a_function_the_module_does_not_define_is_refused():
    """An ``.extern .func`` defined in another translation unit (nvcc -rdc=true) or the device
    runtime (``cudaGraphSetConditional``): it was skipped with a note (a wrong result); now a
    message, as a GPU cannot load the module unlinked either.  Indirect calls through a
    ``.callprototype`` label are not such calls."""
    from helpers import kernel

    ptx = kernel("k(.param .u64 k_out)", """
    {
    .param .b64 param0;
    st.param.b64 [param0], 1;
    call.uni ext_fn, (param0);
    }
    ret;
""", before=".extern .func ext_fn(.param .b64 p)\n;\n")
    for mode in MODES:
        with pytest.raises(ProgramError, match=r"kernel k calls 'ext_fn', which this module declares but does not define "
                                               r"\(a function of another translation unit or of the CUDA device runtime, "
                                               r"linked by nvcc -rdc=true\): hypa runs one module and cannot run it"):
            emulate(ptx, ["out"], {"out": np.zeros(1, np.uint32)}, mode=mode)
