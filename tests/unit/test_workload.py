"""Whole workloads: preparing a kernel copies only what it reaches (so a module of N
kernels costs O(N), not O(N^2)), and the JIT's tiers give identical counts.

Scaling is checked on counts of work (operations copied, functions prepared),
never on time: benchmarks/workload.py measures the seconds."""

import numpy as np
import pytest

from hypa.passes.reachable import SymbolIndex, extract_kernel, reachable
from hypa.ptxdialect import parse_ptx
from hypa.ptxdialect.dialect import FuncOp, VarOp
from hypa.runtime.emulator import emulator as emulator_module
from hypa.runtime.emulator import jit, phases
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import Launch

from helpers import HEADER, ROOT, emulate, kernel, load_script


def kernel_text(k: int) -> str:
    """Kernel ``k``: calls ``twice_k``, uses shared array ``tile_k`` (not the module's ``counter``).
    Thread t writes 2 * (t + k) to out[t] when t < 40, else nothing (one divergent branch)."""
    return f"""
.shared .align 4 .b8 tile_{k}[128];
.func (.param .b32 twice_{k}_ret) twice_{k}(.param .b32 twice_{k}_x)
{{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [twice_{k}_x];
    add.s32 %r2, %r1, %r1;
    st.param.b32 [twice_{k}_ret], %r2;
    ret;
}}
.visible .entry kern_{k}(.param .u64 kern_{k}_out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 40;
    @%p1 bra $L_done;
    add.s32 %r2, %r1, {k};
    {{
    .param .b32 a;
    .param .b32 r;
    st.param.b32 [a], %r2;
    call.uni (r), twice_{k}, (a);
    ld.param.b32 %r3, [r];
    }}
    mov.u32 %r4, tile_{k};
    st.shared.u32 [%r4], %r3;
    ld.param.u64 %rd1, [kern_{k}_out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
$L_done:
    ret;
}}
"""


def module_text(n: int) -> str:
    return HEADER + ".visible .global .align 4 .u32 counter;\n" + "".join(kernel_text(k) for k in range(n))


def test_a_kernel_is_prepared_from_what_it_reaches_only():
    module = parse_ptx(module_text(3))
    before = sum(1 for _ in module.walk())
    kern_1 = next(op for op in module.ops if isinstance(op, FuncOp) and op.func_name == "kern_1")
    ex = extract_kernel(module, kern_1)
    funcs = [op.func_name for op in ex.module.ops if isinstance(op, FuncOp)]
    variables = [op.var_name for op in ex.module.ops if isinstance(op, VarOp)]
    assert funcs == ["twice_1", "kern_1"]  # module order
    assert ex.functions == ["kern_1", "twice_1"]  # the kernel first
    # .global and .shared variables only where referenced: no kernel names counter
    assert variables == ["tile_1"]
    assert ex.ops_cloned == sum(1 for _ in ex.module.walk()) - 1  # everything but the new module op
    assert sum(1 for _ in module.walk()) == before  # the input is untouched
    keep, reached = reachable(module, kern_1, SymbolIndex.of(module))
    assert reached == ["kern_1", "twice_1"] and len(keep) == len(list(ex.module.ops))


def test_only_the_global_variables_a_kernel_names_are_kept():
    """A .global variable no instruction of the kernel names (CUDA C++ headers' constants: a
    CuPy reduction's module declares 1,300) is left out, so it takes none of the emulator's
    address windows; one a kept variable's initializer names is kept, as .const ones are."""
    text = HEADER + """
.global .align 4 .u32 unused_a = 1;
.global .align 4 .u32 target;
.global .align 8 .u64 table = generic(target);
.global .align 4 .u32 unused_b;
.const .align 4 .u32 k_unused = 7;

.visible .entry kern(.param .u64 out)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<2>;
    ld.global.u64 %rd1, [table];
    ld.param.u64 %rd2, [out];
    ld.u32 %r1, [%rd1];
    st.global.u32 [%rd2], %r1;
    ret;
}
"""
    module = parse_ptx(text)
    kern = next(op for op in module.ops if isinstance(op, FuncOp) and op.func_name == "kern")
    ex = extract_kernel(module, kern)
    assert [op.var_name for op in ex.module.ops if isinstance(op, VarOp)] == ["target", "table", "k_unused"]
    assert list(Emulator(module).program("kern").global_vars) == ["target", "table"]


def test_preparation_work_grows_linearly_with_the_module():
    """A module of 10x the kernels copies exactly 10x the operations: each kernel's
    preparation copies the same operations, whatever the module around it."""
    work = {}
    per_kernel = {}
    for n in (3, 30):
        phases.reset()
        emu = Emulator(parse_ptx(module_text(n)), mode="slice")
        for k in range(n):
            prog = emu.program(f"kern_{k}")
            per_kernel.setdefault(k % 3, set()).add(prog.ops_cloned)
            assert prog.functions == [f"kern_{k}", f"twice_{k}"]
        work[n] = phases.work()
    assert work[30]["operations copied from the input"] == 10 * work[3]["operations copied from the input"]
    assert work[30]["kernels prepared"] == 30 and work[3]["kernels prepared"] == 3
    assert work[30]["functions prepared (kernels and the functions they call)"] == 60
    assert all(len(v) == 1 for v in per_kernel.values())  # the same per kernel in both modules


def test_every_copy_of_a_kernel_counts_the_same():
    emu = Emulator(parse_ptx(module_text(4)), mode="full")
    results = []
    for k in range(4):
        out = np.zeros(64, np.uint32)
        r = emu.run(Launch(kernel=f"kern_{k}", grid=1, block=64, args=["out"], buffers={"out": out}))
        assert list(r.buffers["out"][:40]) == [2 * (t + k) for t in range(40)]
        assert not r.buffers["out"][40:].any()
        results.append(r.metrics.values)
    assert all(v == results[0] for v in results)
    # the one branch runs in both warps; warp 1 (threads 32..63) splits at t < 40
    m = results[0]
    assert m["branch"] == 2 and m["divergent_branch"] == 1


@pytest.fixture
def fresh_jit(tmp_path, monkeypatch):
    """An empty compile cache on disk and in this process."""
    monkeypatch.setenv("HYPA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(jit, "_engines", {})
    return tmp_path


def run_grid(text: str, grid: int):
    return emulate(text, ["out"], {"out": np.zeros(64 * grid, np.uint32)}, kernel="kern_0", grid=grid, block=64,
                   mode="full")


def test_jit_tiers_give_identical_counts_and_outputs(fresh_jit, monkeypatch):
    text = module_text(1)
    results = {}
    for tier in ("baseline", "optimized"):
        monkeypatch.setenv("HYPA_JIT", tier)
        monkeypatch.setattr(jit, "_engines", {})
        results[tier] = run_grid(text, 5)
        assert results[tier].jit_tier == tier
    a, b = results["baseline"], results["optimized"]
    assert a.metrics.values == b.metrics.values
    assert [x.as_dict() for x in a.metrics.blocks] == [x.as_dict() for x in b.metrics.blocks]
    assert np.array_equal(a.buffers["out"], b.buffers["out"])


def test_auto_tier_moves_to_optimized_code_when_the_launch_repays_it(fresh_jit, monkeypatch):
    text = module_text(1)
    monkeypatch.setenv("HYPA_JIT", "baseline")
    reference = run_grid(text, 6)
    monkeypatch.setenv("HYPA_JIT", "auto")
    monkeypatch.setattr(jit, "_engines", {})
    # a launch that would not repay an optimized compile stays at baseline ...
    monkeypatch.setattr(emulator_module, "REPAY_FACTOR", 1e9)
    short = run_grid(text, 6)
    assert short.jit_tier == "baseline"
    # ... one that would (here: any) runs its first CTA at baseline, the rest optimized
    monkeypatch.setattr(emulator_module, "REPAY_FACTOR", 0.0)
    long = run_grid(text, 6)
    assert long.jit_tier == "baseline+optimized"
    for r in (short, long):
        assert r.metrics.values == reference.metrics.values
        assert np.array_equal(r.buffers["out"], reference.buffers["out"])
    # the optimized code is cached now: the next launch starts with it
    assert run_grid(text, 6).jit_tier == "optimized"


def test_auto_tier_first_cta_counts_with_forked_workers_and_per_cta(fresh_jit, monkeypatch):
    monkeypatch.setenv("HYPA_JIT", "auto")
    monkeypatch.setattr(emulator_module, "REPAY_FACTOR", 0.0)
    text = module_text(1).replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.x;\n    mov.u32 %r5, %ctaid.x;\n"
                                  "    mad.lo.s32 %r1, %r5, 64, %r1;")
    emu = Emulator(parse_ptx(text), mode="full")
    outs = [np.zeros(64 * 6, np.uint32) for _ in range(3)]
    r1 = emu.run(Launch(kernel="kern_0", grid=6, block=64, args=["out"], buffers={"out": outs[0]}))
    monkeypatch.setattr(jit, "_engines", {})
    for p in fresh_jit.iterdir():
        p.unlink()
    r2 = emu.run(Launch(kernel="kern_0", grid=6, block=64, args=["out"], buffers={"out": outs[1]}), jobs=2)
    assert r2.jit_tier == "baseline+optimized"
    monkeypatch.setattr(jit, "_engines", {})
    for p in fresh_jit.iterdir():
        p.unlink()
    r3 = emu.run(Launch(kernel="kern_0", grid=6, block=64, args=["out"], buffers={"out": outs[2]}), per_cta=True)
    assert r3.jit_tier == "baseline+optimized"
    assert r1.metrics.values == r2.metrics.values == r3.metrics.values
    assert np.array_equal(r1.buffers["out"], r2.buffers["out"])
    assert np.array_equal(r1.buffers["out"], r3.buffers["out"])
    assert len(r3.per_cta) == 6
    # CTA 0 has threads 0..63 (40 take the call), CTA 1 threads 64..127 (none do)
    assert r3.per_cta[0]["divergent_branch"] == 1 and r3.per_cta[1]["divergent_branch"] == 0
    assert sum(c["thread_inst_executed"] for c in r3.per_cta) == r1.metrics.values["thread_inst_executed"]


def test_a_damaged_cache_entry_is_compiled_again(fresh_jit, capsys):
    """Entries carry a checksum: a truncated or corrupted object file is never loaded (it
    could crash LLVM); it is reported, removed and compiled again."""
    text = module_text(1)
    first = run_grid(text, 2)
    # the kernel's entry; the helper functions it calls have their own ("h...")
    (entry,) = [p for p in fresh_jit.iterdir() if not p.name.startswith("h")]
    for damage in (b"", entry.read_bytes()[:100], entry.read_bytes()[:-1] + b"x"):
        entry.write_bytes(damage)
        jit._engines.clear()
        again = run_grid(text, 2)
        assert again.metrics.values == first.metrics.values
        assert "damaged entry in the compile cache" in capsys.readouterr().err
        assert len(entry.read_bytes()) > 100  # written anew


def test_launch_limits_and_numeric_buffers():
    from hypa.runtime.emulator.launch import LaunchError, launch_from_cli

    with pytest.raises(LaunchError, match=r"dynamic shared memory of -16 bytes is outside 0 \.\. 232448"):
        Launch(grid=1, block=1, shared_bytes=-16)
    with pytest.raises(LaunchError, match=r"dynamic shared memory of -16 bytes"):
        launch_from_cli("grid=1 block=1 shared=-16")
    with pytest.raises(LaunchError, match=r"grid.x = 4294967296 is more than CUDA allows \(2147483647\)"):
        launch_from_cli("grid=4294967296x4294967296 block=1")
    with pytest.raises(LaunchError, match=r"block.z = 65 is more than CUDA allows \(64\)"):
        Launch(grid=1, block=(1, 1, 65))
    with pytest.raises(LaunchError, match=r"buffer 'x': dtype object is not a numeric type"):
        launch_from_cli("grid=1 block=1 args=x buffer.x=object:4:zeros").materialize_buffers()
    emu = Emulator(parse_ptx(module_text(1)), mode="full")
    with pytest.raises(LaunchError, match=r"dtype object is not a numeric type"):
        emu.run(Launch(kernel="kern_0", grid=1, block=32, args=[np.array([None] * 64, dtype=object)]))


def test_budget_counts_and_buffer_parameters_are_checked(tmp_path):
    from hypa.runtime.emulator.launch import LaunchError, launches_from_toml

    with pytest.raises(LaunchError, match=r"step budget must be a positive number of warp-instructions, not -1"):
        Emulator(parse_ptx(module_text(1)), step_budget=-1)
    toml = tmp_path / "l.toml"
    toml.write_text('[[launch]]\nkernel = "k"\nargs = ["x"]\n[buffers.x]\ndtype = "int32"\ncount = 1.5\n')
    with pytest.raises(LaunchError, match=r"count must be a whole number of elements, not 1.5"):
        launches_from_toml(str(toml))
    scalar = kernel("s(.param .u32 s_n, .param .f32 s_a)", """
    ret;
""")
    emu = Emulator(parse_ptx(scalar), mode="full")
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match=r"parameter s_n \(\.u32\) cannot hold the address of buffer 'x'"):
        emu.run(Launch(grid=1, block=1, args=["x", 1.0], buffers={"x": x}))
    with pytest.raises(LaunchError, match=r"parameter s_a \(\.f32\) cannot hold the address of buffer 'x'"):
        emu.run(Launch(grid=1, block=1, args=[1, "x"], buffers={"x": x}))


def test_step_budget_holds_for_loop_free_kernels_on_large_grids():
    """The budget was checked only where loops close: a loop-free kernel on a huge grid ran
    every CTA.  Now it also stops the launch at the first CTA that starts with it spent."""
    from hypa.runtime.emulator.emulator import EmulationError

    saxpy = (ROOT / "examples" / "saxpy.ptx").read_text()
    emu = Emulator(parse_ptx(saxpy), mode="slice", step_budget=1000)
    x = np.zeros(1000, np.float32)
    with pytest.raises(EmulationError, match=r"step budget of 1000 warp-instructions exhausted before CTA "
                                             r"\((\d+), 0, 0\) of kernel saxpy started \(\1 CTAs ran"):
        emu.run(Launch(grid=20000, block=256, args=[1000, 2.0, "x", "y"], buffers={"x": x, "y": x.copy()}))


def test_the_workload_benchmark_builds_specs_and_scaled_modules(tmp_path):
    """benchmarks/workload.py's generated inputs: one launch per kernel with the kernel's
    .reqntid block, and modules of k copies whose kernels all profile like the original."""
    from hypa.runtime.emulator.options import EmulationOptions
    from hypa.runtime.report.batch import ProfileOptions, run_profile

    wl = load_script("benchmarks/workload.py")
    text = module_text(2).replace(".visible .entry kern_1(.param .u64 kern_1_out)\n",
                                  ".visible .entry kern_1(.param .u64 kern_1_out)\n.reqntid 64, 2, 1\n")
    assert wl.kernel_signatures(text) == [("kern_0", 1, 256), ("kern_1", 1, 128)]
    scaled = wl.scaled_module(text, 3)
    assert sorted(wl.function_names(scaled)) == sorted(
        f"{f}_{i}{s}" for f in ("kern", "twice") for i in range(2) for s in ("", "_x1", "_x2"))
    (tmp_path / "m.ptx").write_text(scaled)
    (tmp_path / "m.toml").write_text(wl.scaled_spec(text, 3, 1024))
    prof = run_profile([str(tmp_path / "m.ptx")], [str(tmp_path / "m.toml")],
                       ProfileOptions(emulation=EmulationOptions(mode="slice")))
    assert len(prof.records) == 6 and not prof.errors
    by_kernel = {r.kernel: r.result.metrics.values["thread_inst_executed"] for r in prof.records}
    for k in ("kern_0", "kern_1"):
        assert by_kernel[k] == by_kernel[k + "_x1"] == by_kernel[k + "_x2"] > 0


def test_a_bad_jit_tier_is_a_launch_error(monkeypatch):
    from hypa.runtime.emulator.launch import LaunchError

    monkeypatch.setenv("HYPA_JIT", "fastest")
    with pytest.raises(LaunchError, match=r"HYPA_JIT must be auto, baseline or optimized, not 'fastest'"):
        run_grid(module_text(1), 1)
    # the cache replay's tier (runtime/models/cache_replay.py) is not one for kernels
    monkeypatch.setenv("HYPA_JIT", "scalar")
    with pytest.raises(LaunchError, match=r"HYPA_JIT must be auto, baseline or optimized, not 'scalar'"):
        run_grid(module_text(1), 1)
