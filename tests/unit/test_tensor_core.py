"""The emulator's tensor-core inner product (``runtime/emulator/lowering/tensor_core.py``)
against what an H100 returned (issue 26): every inner product that
``benchmarks/gpu/tensor_core_record.py`` recorded (``tests/ground_truth/h100/tensor_cores.npz``),
through the recorded kernels (``tensor_cores.ptx``), bit for bit."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import emulate

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "tests" / "ground_truth" / "h100"
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
import tensor_core_record as rec  # noqa: E402


@functools.cache
def recorded() -> dict:
    return rec.read(str(H100 / "tensor_cores.npz"))


def emulated(case: str) -> np.ndarray:
    """D of every tile of ``case``, from the recorded kernel, emulated."""
    fam, _at, ct, (m, n, k), tiles, _seed = rec.CASES[case]
    A, B, C = rec.inputs(case)
    if fam == "wmma":
        B = B.transpose(0, 2, 1)  # the kernel reads B column-major
    D = np.zeros(C.shape, C.dtype)
    bufs = {"A": np.ascontiguousarray(A).ravel(), "B": np.ascontiguousarray(B).ravel(), "C": C.ravel(), "D": D.ravel()}
    res = emulate((H100 / "tensor_cores.ptx").read_text(), ["A", "B", "C", "D", tiles], bufs,
                  grid=tiles if fam == "wgmma" else (tiles + 3) // 4, block=128, kernel=case, mode="full")
    return res.buffers["D"].reshape(C.shape)


def _differences(case: str, want: np.ndarray, got: np.ndarray) -> str:
    A, B, C = rec.inputs(case)
    bad = np.argwhere(want != got)
    lines = []
    for t, i, j in bad[:3]:
        lines.append(f"tile {t} ({rec.CLASSES[t % len(rec.CLASSES)]}) [{i},{j}]: a={[hex(x) for x in A[t, i]]} "
                     f"b={[hex(x) for x in B[t, :, j]]} c={C[t, i, j]:#x}: H100 {want[t, i, j]:#x}, "
                     f"emulated {got[t, i, j]:#x}")
    return f"{case}: {len(bad)} of {want.size} inner products differ from the H100's:\n" + "\n".join(lines)


@pytest.mark.parametrize("case", list(rec.CASES))
def test_emulated_mma_gives_h100_bits(case):
    """Each recorded instruction (mma.sync m16n8k16 f16/bf16 -> f32, m16n8k8, f16 -> f16,
    wmma m16n16k16), emulated on the recorded inputs: every inner product's bits equal the
    H100's (NaN as its encoding, 0x7FFFFFFF / 0x7FFF)."""
    want = recorded()[case]
    assert recorded()[case + "__sha256"] == rec.digest(case), "inputs regenerated differently: re-record"
    got = emulated(case)
    assert np.array_equal(got, want), _differences(case, want, got)


def test_h100_is_not_ieee():
    """The recording discriminates: one f32 rounding per multiply-add in k order (the
    emulator's former model) misses most of the recorded f16 inner products."""
    case = "mma_m16n8k16_f16_f32"
    A, B, C = rec.inputs(case)
    a = A.view(np.float16).astype(np.float32)
    b = B.view(np.float16).astype(np.float32)
    acc = C.view(np.float32).copy()
    with np.errstate(all="ignore"):
        for kk in range(a.shape[2]):  # products of f16 are exact in f32: one rounding per add
            acc = (acc.astype(np.float64) + a[:, :, kk, None].astype(np.float64) * b[:, kk, None, :]).astype(np.float32)
    want = recorded()[case].view(np.float32)
    finite = np.isfinite(want)
    assert (acc[finite].view(np.uint32) != want[finite].view(np.uint32)).mean() > 0.5
