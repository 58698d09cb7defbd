"""The kernel-name demangler (runtime/emulator/demangle.py) against what ``c++filt`` prints for
the same symbols (the expected strings were checked with binutils 2.40's ``c++filt``; the last
test asks the installed one where there is one)."""

import shutil
import subprocess

import pytest

from hypa.runtime.emulator.demangle import demangle

#: a Numba-CUDA 0.30 kernel (tests/cuda_programs/python/numba_jit.py's block_sum): ABI tags and
#: a template of type, literal and source-name arguments
NUMBA = ("_ZN8__main__9block_sumB2v1B92cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3CwAkMXLaJtQYkOIgxJU0gCqOkEJoHkbttqdVhoq"
         "lspQGNFHSgJ5BnXagIAE5ArrayIiLi1E1C7mutable7alignedE5ArrayIiLi1E1C7mutable7alignedE5ArrayIiLi1E1C7mut"
         "able7alignedEi")

CASES = [
    ("_Z5saxpyifPKfPf", "saxpy(int, float, float const*, float*)"),
    ("_Z11corr_kerneliiPfS_", "corr_kernel(int, int, float*, float*)"),
    ("_Z6reduceIfLi256EEvPKT_PS0_j", "void reduce<float, 256>(float const*, float*, unsigned int)"),
    (NUMBA, "__main__::block_sum[abi:v1][abi:cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3CwAkMXLaJtQYkOIgxJU0gCqOkEJoHkbttqdVh"
            "oqlspQGNFHSgJ5BnXagIA](Array<int, 1, C, mutable, aligned>, Array<int, 1, C, mutable, aligned>, "
            "Array<int, 1, C, mutable, aligned>, int)"),
    ("_ZN3foo3barB5cxx11Ev", "foo::bar[abi:cxx11]()"),
    ("_Z3fooB3tagi", "foo[abi:tag](int)"),
    ("not_mangled", "not_mangled"),
    ("_Z10testKernelI8RGBA32_2EvPT_S2_i", "void testKernel<RGBA32_2>(RGBA32_2*, RGBA32_2*, int)"),
]


@pytest.mark.parametrize("symbol,expected", CASES)
def test_demangled_as_cxxfilt_prints_it(symbol, expected):
    assert demangle(symbol) == expected


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) is not installed")
def test_the_installed_cxxfilt_agrees():
    symbols = [s for s, _ in CASES if s.startswith("_Z")]
    out = subprocess.run(["c++filt", *symbols], capture_output=True, text=True, check=True).stdout.splitlines()
    assert [demangle(s) for s in symbols] == out
