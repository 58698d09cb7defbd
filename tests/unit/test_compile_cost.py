"""What a cold compile costs, as counts: LLVM instructions per PTX instruction, programs
compiled once per distinct kernel, helper functions compiled once and found again in the
cache, kernels compiled in worker processes.  (benchmarks/compile.py measures the seconds.)"""

import json
import os
import threading

import numpy as np
import pytest

from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator import jit, phases
from hypa.runtime.emulator.emulator import Emulator, EmulationError, precompile
from hypa.runtime.emulator.launch import Launch
from hypa.runtime.emulator.lowering import lower
from hypa.runtime.emulator.program import canonical_names

from helpers import HEADER, load_script, run_hypa

compile_bench = load_script("benchmarks/compile.py")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty compile cache on disk and in this process (helpers stay loaded)."""
    monkeypatch.setenv("HYPA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(jit, "_engines", {})
    return tmp_path / "cache"


def _llvm_instructions(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("  ") and not line.lstrip().startswith(";"))


@pytest.mark.parametrize("mode", ["slice", "full"])
def test_a_checked_access_is_a_call_not_its_code(mode):
    """Every global access (loaded, stored or only bounds-checked) calls a helper function:
    the generated kernel's warp function stays within 16 LLVM instructions per PTX
    instruction (inline, its accesses made it 46), and its helpers are a handful."""
    ptx = HEADER + compile_bench.big_kernel(300)
    prog = Emulator(parse_ptx(ptx), mode=mode).program(None)
    low = lower(prog)
    assert len(prog.instructions) == 300
    per_instruction = _llvm_instructions(low.text) / len(prog.instructions)
    assert per_instruction < 16, per_instruction
    names = [n for n, _t, _d in low.helpers]
    assert len(names) <= 10 and any(n.startswith("hypa_ptrs.global.reg.4.") for n in names)
    assert "hypa_run_ctas" in names  # the CTA scheduler: one for every kernel
    # the optimized tier lowers the same accesses inline, for LLVM's optimizer
    inline = lower(prog, "optimized")
    assert not any(n.startswith("hypa_ptrs") for n, _t, _d in inline.helpers)
    assert _llvm_instructions(inline.text) > 2 * _llvm_instructions(low.text)


def _copy(name: str, label: str, k: int = 7, extra: str = "") -> str:
    return f""".visible .entry {name}(.param .u64 {name}_out, .param .u32 {name}_n)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [{name}_n];
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra {label};
    add.s32 %r3, %r1, {k};
{extra}    ld.param.u64 %rd1, [{name}_out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
{label}:
    ret;
}}
"""


def test_kernels_that_differ_only_in_their_names_compile_once(fresh_cache):
    """An XLA module repeats fusions under new names (kernel, parameters, labels): their
    programs share a key and one compiled object, and count alike.  A different constant,
    or a kernel that uses its own name as a value, is a program of its own."""
    ptx = HEADER + _copy("a", "$L_a") + _copy("b_other", "LBB7_2") + _copy("c", "$L_c", k=8) + _copy(
        "d", "$L_d", extra="    mov.u64 %rd1, d;\n")
    emu = Emulator(parse_ptx(ptx), mode="full")
    keys = {k: emu.program(k).key for k in ("a", "b_other", "c", "d")}
    assert keys["a"] == keys["b_other"]
    assert len({keys["a"], keys["c"], keys["d"]}) == 3
    phases.reset()
    outs = {}
    for k in ("a", "b_other"):
        out = np.zeros(64, np.uint32)
        emu.run(Launch(kernel=k, grid=1, block=64, args=["out", 40], buffers={"out": out}))
        outs[k] = emu.run(Launch(kernel=k, grid=1, block=64, args=["out", 40], buffers={"out": out}))
    assert phases.work().get("kernels compiled (baseline)") == 1
    assert outs["a"].metrics.values == outs["b_other"].metrics.values
    assert np.array_equal(outs["a"].buffers["out"], outs["b_other"].buffers["out"])
    assert list(outs["a"].buffers["out"][:3]) == [7, 8, 9]


def test_canonical_names_replace_only_the_kernels_own_names():
    text = ".visible .entry k(.param .u64 k_p)\n{\n\tld.param.u64 %rd1, [k_p];\n\tbra L1;\nL1:\n\tret;\n}\n"
    canon, name = canonical_names(text, "k", ["k_p"])
    assert name == "#k"
    assert canon == ".visible .entry #k(.param .u64 #p0)\n{\n\tld.param.u64 %rd1, [#p0];\n\tbra #L0;\n#L0:\n\tret;\n}\n"
    # its address taken: the kernel keeps its name (the address is a hash of it)
    used = text.replace("\tret;", "\tmov.u64 %rd2, k;\n\tret;")
    assert canonical_names(used, "k", ["k_p"])[1] == "k"


def test_out_of_bounds_errors_read_the_same_from_helpers_and_inline_code(monkeypatch, fresh_cache):
    """A failing access reports the same instruction, thread and address whether the check
    ran in a helper function (baseline) or inline (optimized)."""
    ptx = HEADER + _copy("k", "$L_k")
    messages = {}
    for tier in ("baseline", "optimized"):
        monkeypatch.setenv("HYPA_JIT", tier)
        emu = Emulator(parse_ptx(ptx), mode="full")
        with pytest.raises(EmulationError) as e:
            emu.run(Launch(kernel="k", grid=1, block=64, args=["out", 64], buffers={"out": np.zeros(50, np.uint32)}))
        messages[tier] = str(e.value)
    assert messages["baseline"] == messages["optimized"]
    assert "thread (50, 0, 0)" in messages["baseline"] and "st.global.u32 [%rd3], %r3;" in messages["baseline"]


def _profile(tmp_path, cache, *extra, env=None):
    ptx = tmp_path / "m.ptx"
    ptx.write_text(HEADER + _copy("a", "$L_a") + _copy("b", "$L_b", k=9) + _copy("c", "$L_c", k=11))
    spec = tmp_path / "m.toml"
    spec.write_text("".join(f'[[launch]]\nkernel = "{k}"\ngrid = 1\nblock = 64\nargs = ["o{k}", 40]\n'
                            f'[buffers.o{k}]\ndtype = "uint32"\ncount = 64\n' for k in "abc"))
    e = dict(os.environ, HYPA_CACHE_DIR=str(cache), **(env or {}))
    r = run_hypa("profile", ptx, "--launch", spec, "--format", "json", "--timing", "--no-progress", *extra, env=e)
    assert r.returncode == 0, r.stderr
    work = {}
    for line in r.stderr.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit():
            work[parts[1]] = int(parts[0])
    records = json.loads(r.stdout)
    for rec in records:  # what was counted, not how long it took nor where the code came from
        for k in ("duration_ms", "compile_ms", "notes", "jit_tier"):
            rec.pop(k, None)
    assert len(records) == 3 and all(rec["thread_inst_executed"] > 0 for rec in records)
    return records, work


def test_helper_functions_compile_once_per_cache_and_warm_runs_load_them(tmp_path):
    """Cold, the helpers are compiled once for all kernels; warm, kernels and their helpers
    load from the cache; without its helpers' entries a kernel is compiled again, with them,
    and the kernels that call the same helpers then load."""
    cache = tmp_path / "cache"
    cold, w1 = _profile(tmp_path, cache, env={"HYPA_COMPILE_JOBS": "1"})
    assert w1["kernels compiled (baseline)"] == 3
    helpers = w1["helper functions compiled (baseline)"]
    assert helpers == len([p for p in cache.iterdir() if p.name.startswith("h")]) > 0
    warm, w2 = _profile(tmp_path, cache)
    assert warm == cold
    assert w2["compiled kernels loaded from the cache (baseline)"] == 3
    assert "kernels compiled (baseline)" not in w2 and "helper functions compiled (baseline)" not in w2
    for p in cache.iterdir():
        if p.name.startswith("h"):
            p.unlink()
    again, w3 = _profile(tmp_path, cache)
    assert again == cold
    assert w3["kernels compiled (baseline)"] == 1 and w3["helper functions compiled (baseline)"] == helpers
    assert w3["compiled kernels loaded from the cache (baseline)"] == 2


def test_a_batch_compiles_its_kernels_in_worker_processes(tmp_path):
    """``hypa profile`` compiles a batch's distinct kernels side by side (HYPA_COMPILE_JOBS
    processes): the same results, every kernel compiled once, in the cache afterwards."""
    one, w1 = _profile(tmp_path, tmp_path / "c1", env={"HYPA_COMPILE_JOBS": "1"})
    two, w2 = _profile(tmp_path, tmp_path / "c2", env={"HYPA_COMPILE_JOBS": "2"})
    assert one == two
    assert w1["kernels compiled (baseline)"] == w2["kernels compiled (baseline)"] == 3
    bad = run_hypa("profile", tmp_path / "m.ptx", "--launch", tmp_path / "m.toml", "--no-progress",
                   env=dict(os.environ, HYPA_COMPILE_JOBS="many"))
    assert bad.returncode != 0
    assert "HYPA_COMPILE_JOBS must be a number of processes, not 'many'" in bad.stderr


def test_precompile_leaves_every_program_in_the_cache(fresh_cache, monkeypatch):
    # precompile does not fork beside other threads; earlier tests may leave some (Dask's)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    ptx = HEADER + "".join(_copy(f"k{i}", f"$L_{i}", k=i) for i in range(4))
    emu = Emulator(parse_ptx(ptx), mode="slice")
    progs = [(emu, emu.program(f"k{i}")) for i in range(4)]
    assert precompile(progs, 2) == 1
    assert all(jit.in_cache(p.key, "baseline") for _e, p in progs)
    assert precompile(progs, 2) == 0  # nothing left to compile


_HALF_OPS = {
    "fma.rn.f16x2 %r{o}, %r{a}, %r{b}, %r{o};": ("hypa_float.fma.f16.rn", 2),
    "add.rz.f32 %f{o}, %f{a}, %f{b};": ("hypa_float.add.f32.rz", 1),
    "cvt.rn.f16.f32 %h{o}, %f{a};": ("hypa_cvt.f16.f32", 1),
    "cvt.rn.bf16x2.f32 %r{o}, %f{a}, %f{b};": ("hypa_cvt.bf16.f32.rn", 2),
    "max.f16x2 %r{o}, %r{a}, %r{b};": ("hypa_float.max.f16.2", 2),
}


@pytest.mark.parametrize("instruction", list(_HALF_OPS))
def test_soft_float_rounding_is_a_call_not_its_code(instruction):
    """f16/bf16 arithmetic, conversions that round and directed roundings take 100-300
    vector instructions an element in soft float: both tiers call one helper per element
    (mixbench's half2 kernels, 4,000 ``fma.rn.f16x2``, were 6.7 MB of machine code and 70 s
    of LLVM inline; 57 s at the optimized tier)."""
    name, per_instruction = _HALF_OPS[instruction]
    n = 64
    body = "\n".join("    " + instruction.format(o=4 + k % 4, a=k % 4, b=(k + 1) % 4) for k in range(n))
    ptx = HEADER + f""".visible .entry k(.param .u64 p)
{{
    .reg .b16 %h<8>;
    .reg .b32 %r<8>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.global.v4.u32 {{%r0, %r1, %r2, %r3}}, [%rd1];
    ld.global.v4.f32 {{%f0, %f1, %f2, %f3}}, [%rd1+16];
    mov.b32 %r4, 0; mov.b32 %r5, 0; mov.b32 %r6, 0; mov.b32 %r7, 0;
    mov.f32 %f4, 0f00000000; mov.f32 %f5, 0f00000000; mov.f32 %f6, 0f00000000; mov.f32 %f7, 0f00000000;
{body}
    st.global.v4.u32 [%rd1+32], {{%r4, %r5, %r6, %r7}};
    st.global.v4.f32 [%rd1+48], {{%f4, %f5, %f6, %f7}};
    st.global.v4.b16 [%rd1+64], {{%h4, %h5, %h6, %h7}};
    ret;
}}
"""
    prog = Emulator(parse_ptx(ptx), mode="full").program(None)
    low = lower(prog)
    calls = [ln for ln in low.text.splitlines() if " call " in ln and f'@"{name}' in ln]
    assert len(calls) == n * per_instruction
    assert sum(1 for h, _t, _d in low.helpers if h.startswith(name)) == 1
    assert _llvm_instructions(low.text) < 40 * n  # inline, one fma.rn.f16x2 was ~600
    optimized = lower(prog, "optimized")
    assert sum(1 for ln in optimized.text.splitlines() if " call " in ln and f'@"{name}' in ln) == n * per_instruction
    assert sum(1 for h, _t, _d in optimized.helpers if h.startswith(name)) == 1
