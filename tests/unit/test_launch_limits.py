"""GPU launch limits (issue 31, case 3): what ptxas and the CUDA runtime refuse, hypa refuses.

ptxas's own limits (barrier ids and counts, ``.const`` and ``.param`` sizes, ``.maxntid``
with ``.reqntid``) have a lit test each under tests/filecheck/Frontend/errors/; here: the
static ``.shared`` limit, the launch-time limits of ``hypa-opt`` and the error codes
``hypa run`` returns (the architecture file's figures: sm_90 allows 232,448 bytes of
shared memory per CTA with the opt-in, 49,152 without).
"""

from __future__ import annotations

import pytest

from helpers import build_cuda_program, run_hypa, run_hypa_opt
from hypa.ptxdialect import limits
from hypa.ptxdialect.parser import parse_ptx
from hypa.runtime.emulator.launch_limits import arch_limits

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _ptx(tmp_path, body: str, name: str = "k.ptx"):
    p = tmp_path / name
    p.write_text(HEAD + body)
    return p


def test_arch_file_figures():
    a = arch_limits("sm_90")
    assert (a.max_threads_per_cta, a.shared_per_cta_default, a.shared_per_cta_max) == (1024, 49152, 232448)
    assert arch_limits("sm_80").shared_per_cta_max == 166912


@pytest.mark.parametrize("version,size,ok", [("8.0", 4352, True), ("8.0", 4353, False), ("8.1", 4353, True),
                                             ("8.1", 32764, True), ("8.1", 32765, False)])
def test_param_space_limit_follows_the_ptx_version(version, size, ok):
    """ptxas (CUDA 13, sm_90) accepts exactly these."""
    text = (f".version {version}\n.target sm_90\n.address_size 64\n"
            f".visible .entry k(.param .align 4 .b8 p[{size}])\n{{\n\tret;\n}}\n")
    if ok:
        parse_ptx(text)
    else:
        with pytest.raises(Exception, match=f"uses too much parameter space \\({size} bytes"):
            parse_ptx(text)


def test_register_barrier_operands_are_the_launchs_to_check():
    parse_ptx(HEAD + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, 17;\n\tmov.u32 %r2, 33;\n"
              "\tbar.sync %r1, %r2;\n\tbar.sync 15, 1024;\n\tbarrier.sync.aligned 0, 64;\n\tret;\n}\n")


STATIC = ".visible .entry k(.param .u64 p)\n{{\n\t.shared .align 4 .b8 s[{n}];\n\t.reg .b32 %r<2>;\n" \
         "\tmov.u32 %r1, s;\n\tst.shared.u32 [s], %r1;\n\tret;\n}}\n"


def test_static_shared_over_48k_is_refused(tmp_path):
    """ptxas: "Entry function 'k' uses too much shared data (0xc001 bytes, 0xc000 max)"."""
    p = _ptx(tmp_path, STATIC.format(n=limits.STATIC_SHARED_BYTES + 1))
    r = run_hypa_opt("--emulate=grid=1 block=32 args=0", str(p), "-o", "/dev/null")
    assert r.returncode == 1
    assert r.stderr == ("hypa-opt: error: kernel k uses too much shared data (49153 bytes of static .shared, 49152 max;"
                        " more must be dynamic shared memory)\n")
    ok = _ptx(tmp_path, STATIC.format(n=limits.STATIC_SHARED_BYTES), "ok.ptx")
    assert run_hypa_opt("--emulate=grid=1 block=32 args=0", str(ok), "-o", "/dev/null").returncode == 0


def test_static_plus_dynamic_over_the_opt_in_maximum(tmp_path):
    p = _ptx(tmp_path, STATIC.format(n=49152))
    r = run_hypa_opt("--emulate=grid=1 block=32 args=0 shared=200000", str(p), "-o", "/dev/null")
    assert r.returncode == 1
    assert r.stderr == ("hypa-opt: error: kernel k would have 49152 bytes of static and 200000 of dynamic shared memory, "
                        "more than the 232448 a CTA may have on sm_90\n")
    # 49152 + 183296 = 232448: the most a CTA may opt into
    assert run_hypa_opt("--emulate=grid=1 block=32 args=0 shared=183296", str(p), "-o", "/dev/null").returncode == 0


BOUNDED = ".visible .entry k(.param .u64 p)\n{directive}\n{{\n\tret;\n}}\n"


@pytest.mark.parametrize("directive,block,message", [
    (".maxntid 64, 1, 1", "128", "5:1: error: block (128, 1, 1) has 128 threads, more than the 64 kernel k allows "
                                  "(.maxntid 64, 1, 1, __launch_bounds__)"),
    ("    .maxntid 64", "32,4", "5:5: error: block (32, 4, 1) has 128 threads, more than the 64 kernel k allows "
                                "(.maxntid 64, __launch_bounds__)"),
    (".reqntid 64, 1, 1", "32,2", "5:1: error: block (32, 2, 1) is not the 64, 1, 1 that kernel k's .reqntid "
                                  "requires"),
    (".minnctapersm 1 .reqntid 64", "128", "5:17: error: block (128, 1, 1) is not the 64, 1, 1 that kernel k's "
                                           ".reqntid requires"),
])
def test_launch_against_maxntid_and_reqntid(tmp_path, directive, block, message):
    """The refusal names the directive's file:line:column, as the parser's errors do."""
    p = _ptx(tmp_path, BOUNDED.format(directive=directive))
    r = run_hypa_opt(f"--emulate=grid=1 block={block} args=0", str(p), "-o", "/dev/null")
    assert r.returncode == 1
    assert r.stderr == f"{p}:{message}\n"


def test_profile_names_the_reqntid_directive(tmp_path):
    p = _ptx(tmp_path, BOUNDED.format(directive=".reqntid 64"))
    spec = tmp_path / "l.toml"
    spec.write_text('[[launch]]\nfile = "k.ptx"\nkernel = "k"\ngrid = 1\nblock = 128\nargs = [0]\n')
    r = run_hypa("profile", "--launch", str(spec))
    assert r.returncode == 1
    message = f"{p}:5:1: block (128, 1, 1) is not the 64, 1, 1 that kernel k's .reqntid requires"
    assert r.stdout.startswith(f"launch 0 (k in k.ptx): error: {message}\nhypa profile: 1 launch of 1 kernel; "
                               f"0 analysed"), r.stdout
    assert r.stderr.endswith(f"hypa: error: launch 0 (k in k.ptx): {message}\n"), r.stderr


def test_a_block_beyond_the_architecture_is_the_launchs_own_error(tmp_path):
    """No .maxntid: 2,048 threads is the launch's error (a GPU's cudaErrorInvalidConfiguration),
    not a launch bound of the kernel."""
    p = _ptx(tmp_path, BOUNDED.format(directive=""))
    r = run_hypa_opt("--emulate=grid=1 block=2048 args=0", str(p), "-o", "/dev/null")
    assert r.returncode == 1
    assert r.stderr == "hypa-opt: error: block (2048, 1, 1) has more than 1024 threads\n"


@pytest.mark.parametrize("directive,block", [(".maxntid 64, 1, 1", "64"), (".maxntid 64, 1, 1", "16,4"),
                                             (".reqntid 32, 2, 1", "32,2")])
def test_launch_within_the_bounds_runs(tmp_path, directive, block):
    p = _ptx(tmp_path, BOUNDED.format(directive=directive))
    assert run_hypa_opt(f"--emulate=grid=1 block={block} args=0", str(p), "-o", "/dev/null").returncode == 0


LIMITS_CU = r"""
#include <cstdio>
__global__ void dyn(int *out) { extern __shared__ int s[]; s[threadIdx.x] = threadIdx.x; __syncthreads(); out[threadIdx.x] = s[threadIdx.x]; }
__global__ void __launch_bounds__(64) bounded(int *out) { out[threadIdx.x] = threadIdx.x; }
__global__ void stat(int *out) { __shared__ int s[1024]; s[threadIdx.x] = 1; __syncthreads(); out[threadIdx.x] = s[threadIdx.x]; }
#define SHOW(x) printf("%s: %s\n", #x, cudaGetErrorName(x))
int main() {
    int *d; cudaMalloc(&d, 4096);
    dyn<<<1, 32, 49153>>>(d); SHOW(cudaGetLastError());
    dyn<<<1, 32, 49152>>>(d); SHOW(cudaGetLastError());
    SHOW(cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 232449)); cudaGetLastError();
    SHOW(cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448));
    dyn<<<1, 32, 232448>>>(d); SHOW(cudaGetLastError());
    SHOW(cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000));
    dyn<<<1, 32, 60001>>>(d); SHOW(cudaGetLastError());
    SHOW(cudaFuncSetAttribute(stat, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448 - 4096 + 1)); cudaGetLastError();
    SHOW(cudaFuncSetAttribute(stat, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448 - 4096));
    SHOW(cudaFuncSetAttribute(stat, cudaFuncAttributePreferredSharedMemoryCarveout, 101)); cudaGetLastError();
    bounded<<<1, 128>>>(d); SHOW(cudaGetLastError());
    bounded<<<1, 64>>>(d); SHOW(cudaGetLastError());
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, bounded); printf("bounded: %d %zu %d\n", a.maxThreadsPerBlock, a.sharedSizeBytes, a.maxDynamicSharedSizeBytes);
    cudaFuncGetAttributes(&a, stat); printf("stat: %d %zu %d\n", a.maxThreadsPerBlock, a.sharedSizeBytes, a.maxDynamicSharedSizeBytes);
    cudaFuncGetAttributes(&a, dyn); printf("dyn: %d %zu %d\n", a.maxThreadsPerBlock, a.sharedSizeBytes, a.maxDynamicSharedSizeBytes);
    SHOW(cudaDeviceSynchronize());
    return 0;
}
"""

# launch configuration errors are not sticky: the next launch and the synchronize succeed
LIMITS_OUT = """\
cudaGetLastError(): cudaErrorInvalidValue
cudaGetLastError(): cudaSuccess
cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 232449): cudaErrorInvalidValue
cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448): cudaSuccess
cudaGetLastError(): cudaSuccess
cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000): cudaSuccess
cudaGetLastError(): cudaErrorInvalidValue
cudaFuncSetAttribute(stat, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448 - 4096 + 1): cudaErrorInvalidValue
cudaFuncSetAttribute(stat, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448 - 4096): cudaSuccess
cudaFuncSetAttribute(stat, cudaFuncAttributePreferredSharedMemoryCarveout, 101): cudaErrorInvalidValue
cudaGetLastError(): cudaErrorLaunchOutOfResources
cudaGetLastError(): cudaSuccess
bounded: 64 0 49152
stat: 1024 4096 228352
dyn: 1024 0 60000
cudaDeviceSynchronize(): cudaSuccess
"""


def test_hypa_run_returns_cuda_launch_errors(tmp_path):
    exe = build_cuda_program(tmp_path, "limits", LIMITS_CU)
    r = run_hypa("run", "-q", "--", str(exe), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == LIMITS_OUT
    assert ("hypa run: launch of _Z3dynPi: 49153 bytes of dynamic shared memory for kernel _Z3dynPi, which may have "
            "49152 (0 static; raise it with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)): "
            "cudaErrorInvalidValue\n") in r.stderr
    # the refusal names the .maxntid line of the program's PTX (hypa's own fatbin reader finds it)
    from hypa.runtime.report.inputs import InputOptions, load_sources

    (ptx,) = [s.ptx for s in load_sources(str(exe), InputOptions(cuobjdump=False)) if "_Z7boundedPi" in s.ptx]
    line = ptx.splitlines().index(".maxntid 64, 1, 1") + 1
    assert (f"hypa run: launch of _Z7boundedPi: {exe}[sm_90 PTX]:{line}:1: block (128, 1, 1) has 128 threads, more "
            f"than the 64 kernel _Z7boundedPi allows (.maxntid 64, 1, 1, __launch_bounds__): "
            f"cudaErrorLaunchOutOfResources\n") in r.stderr
    assert "hypa run: 3 launches of 2 kernels;" in r.stderr  # the refused ones never ran


BARRIERS = ".visible .entry k(.param .u32 n)\n{\n\t.reg .b32 %r<4>;\n\tld.param.u32 %r1, [n];\n\tbar.sync 0;\n" \
           "\t  bar.sync 1, 256;\n\tbarrier.sync 2, %r1;\n\tret;\n}\n"
BEYOND = ("barrier thread count beyond the CTA at kernel k, CTA (0, 0, 0), thread (0, 0, 0): {instr} (block bb0) waits "
          "for {n} threads, and the CTA has {threads} (block ({threads}, 1, 1)): a GPU would wait there forever")


@pytest.mark.parametrize("block,n,where,message", [
    # the immediate count: the barrier's line and column (a tab counts one column, as in the parser's errors)
    (128, 64, "9:4", BEYOND.format(instr="bar.sync 1, 256;", n=256, threads=128)),
    # a count in a register, past the immediate's barrier
    (256, 512, "10:2", BEYOND.format(instr="barrier.sync 2, %r1;", n=512, threads=256)),
])
def test_a_barrier_waiting_for_more_threads_than_the_cta_has(tmp_path, block, n, where, message):
    """ptxas accepts ``bar.sync 1, 256`` (a multiple of 32); in a CTA of 128 threads a GPU waits
    there forever.  The launch stops at the barrier with its count, the CTA's size and its
    source position, not with the scheduler's deadlock, in both modes."""
    p = _ptx(tmp_path, BARRIERS)
    for mode in ("slice", "full"):
        r = run_hypa_opt(f"--emulate=grid=1 block={block} args={n}", f"--mode={mode}", str(p), "-o", "/dev/null")
        assert r.returncode == 1
        assert r.stderr == f"{p}:{where}: error: {message}\n"


@pytest.mark.parametrize("block,n", [(256, 256), (256, 64), (48, 64)])
def test_barrier_counts_within_the_cta_run(tmp_path, block, n):
    """48 threads are 2 warps: a count of 64 is all of them, as a GPU counts whole warps."""
    p = _ptx(tmp_path, BARRIERS.replace("256;", f"{min(256, 32 * ((block + 31) // 32))};"))
    r = run_hypa_opt(f"--emulate=grid=1 block={block} args={n}", str(p), "-o", "/dev/null")
    assert r.returncode == 0, r.stderr


BARRIER_CU = r"""
#include <cstdio>
__global__ void k() { asm volatile("bar.sync 1, 256;"); }
int main() {
    k<<<1, 128>>>();
    cudaError_t l = cudaGetLastError(), s = cudaDeviceSynchronize();
    printf("%s %s\n", cudaGetErrorName(l), cudaGetErrorName(s));
    return 0;
}
"""


def test_hypa_run_names_the_barrier(tmp_path):
    """Under hypa run the launch fails as a hang ends on a GPU (cudaErrorLaunchTimeout, sticky)
    and the warning names the barrier's line in the program's PTX."""
    exe = build_cuda_program(tmp_path, "barrier", BARRIER_CU)
    r = run_hypa("run", "-q", "--", str(exe), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "cudaSuccess cudaErrorLaunchTimeout\n"
    from hypa.runtime.report.inputs import InputOptions, load_sources

    (ptx,) = [s.ptx for s in load_sources(str(exe), InputOptions(cuobjdump=False)) if "_Z1kv" in s.ptx]
    lines = ptx.splitlines()
    line = next(i for i, t in enumerate(lines) if "bar.sync 1, 256;" in t) + 1
    column = lines[line - 1].index("bar.sync") + 1
    assert (f"hypa run: launch 0: {exe}[sm_90 PTX]:{line}:{column}: barrier thread count beyond the CTA at kernel "
            f"_Z1kv, CTA (0, 0, 0), thread (0, 0, 0): bar.sync 1, 256; (block bb0) waits for 256 threads, and the CTA "
            f"has 128 (block (128, 1, 1)): a GPU would wait there forever\n") in r.stderr, r.stderr
