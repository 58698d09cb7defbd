"""The project's CUDA test kernels (``tests/kernels/*.cu``) under the emulator.

Every launch of ``tests/kernels/launches/*.toml`` (the docs/guide.md, "Launch specification" format; the
same launches are the GPU ground-truth launches of issue 5):

* full mode computes the kernel's outputs, compared with a numpy reference written here:
  exact for integer results and wherever the float operations can be replayed in the
  kernel's order; a tolerance (stated per kernel) where the summation order or an
  approximate instruction (``ex2.approx``, ``rsqrt.approx``, libdevice) differs;
* slice mode gives exactly the metrics of full mode (every docs/guide.md, "Metrics" metric but
  ``executed_fraction``, which says how much was emulated, and every per-block count),
  with ``exact_predicates=True`` in both modes;
* the sm_90 PTX of the kernel (and sm_52/sm_70 where they exist) computes the same
  outputs; different architectures give different PTX, so their counts are not compared.
"""

from __future__ import annotations

import functools
import glob
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from hypa.runtime.emulator.launch import Launch, launches_from_toml
from hypa.runtime.metrics.registry import columns

from helpers import KERNELS, LAUNCHES, KernelRuns

OTHER_ARCHS = ("sm_90", "sm_70", "sm_52")


# ---------------------------------------------------------------------------
# launches and modules
# ---------------------------------------------------------------------------


def _all_launches() -> list[tuple[str, int, Launch]]:
    out = []
    for path in sorted(glob.glob(os.path.join(LAUNCHES, "*.toml"))):
        name = os.path.basename(path)[:-5]
        for i, launch in enumerate(launches_from_toml(path)):
            out.append((name, i, launch))
    return out


LAUNCH_LIST = _all_launches()
LAUNCH_IDS = [f"{n}-{i}-{launch.kernel}" for n, i, launch in LAUNCH_LIST]


def kernel_names(path: str) -> set[str]:
    from hypa.ptxdialect.dialect import FuncOp
    from hypa.runtime.emulator.demangle import demangle

    names = set()
    for op in KernelRuns.module(path).ops:
        if isinstance(op, FuncOp) and op.is_kernel and not op.is_declaration:
            names.add(demangle(op.func_name).split("(")[0])
    return names


# ---------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------


@dataclass
class Expect:
    """The expected contents of a buffer.  ``exact``: bit for bit (floats by their
    bits, so -0.0 != 0.0); else ``ulps`` (floats within that many units in the
    last place), ``scale`` (per element: ``|actual - expected| <= scale``) or
    ``rtol``/``atol`` (numpy's allclose)."""

    value: np.ndarray
    exact: bool = True
    ulps: int | None = None
    rtol: float = 0.0
    atol: float = 0.0
    scale: np.ndarray | None = None


def approx(value, rtol=0.0, atol=0.0) -> Expect:
    return Expect(np.asarray(value), exact=False, rtol=rtol, atol=atol)


def within_ulps(value, ulps: int) -> Expect:
    return Expect(np.asarray(value), exact=False, ulps=ulps)


def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bits mapped to integers that are consecutive for adjacent floats."""
    ity = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(ity).astype(np.int64)
    return np.where(i < 0, np.int64(np.iinfo(ity).min) - i, i)


def check(actual: np.ndarray, exp: Expect, what: str) -> None:
    want = exp.value.astype(actual.dtype) if exp.value.dtype != actual.dtype else exp.value
    assert actual.shape == want.shape, f"{what}: shape {actual.shape} != {want.shape}"
    if exp.exact:
        if actual.dtype.kind == "f":
            bad = actual.view(f"u{actual.dtype.itemsize}") != want.view(f"u{want.dtype.itemsize}")
        else:
            bad = actual != want
    elif exp.ulps is not None:
        same = (actual == want) | (np.isnan(actual) & np.isnan(want))
        bad = ~same & (np.abs(_ordered(actual) - _ordered(want)) > exp.ulps)
    elif exp.scale is not None:
        same = (actual == want) | (np.isnan(actual) & np.isnan(want))
        with np.errstate(invalid="ignore"):
            bad = ~same & ~(np.abs(actual.astype(np.float64) - want.astype(np.float64)) <= exp.scale)
    else:
        bad = ~np.isclose(actual, want, rtol=exp.rtol, atol=exp.atol, equal_nan=True)
    if bad.any():
        idx = np.flatnonzero(bad)
        shown = ", ".join(f"[{k}] {actual.flat[k]!r} != {want.flat[k]!r}" for k in idx[:8])
        pytest.fail(f"{what}: {idx.size} of {bad.size} elements differ: {shown}")


# ---------------------------------------------------------------------------
# numpy references: kernel -> f(args, launch) -> {argument index: Expect}
# ``args`` is the launch's argument list with every buffer name replaced by a
# fresh copy of the buffer's initial contents.
# ---------------------------------------------------------------------------

REFERENCES: dict[str, Callable[[list, Launch], dict[int, Expect]]] = {}


def reference(*names: str):
    def deco(fn):
        for n in names:
            REFERENCES[n] = fn
        return fn

    return deco


@reference("saxpy")
def ref_saxpy(a, launch):
    n, alpha, x, y = a
    y = y.copy()
    # fma.rn.f32 (one rounding) vs. the product and sum in f64 rounded once to f32:
    # they differ at most when f64 rounding meets a tie, by 1 ulp
    y[:n] = (np.float64(np.float32(alpha)) * x[:n].astype(np.float64) + y[:n]).astype(np.float32)
    return {3: within_ulps(y, 1)}


def _cta_spans(n: int, launch):
    """Each CTA of a 1-D launch: the span of the first ``n`` elements its threads own."""
    bs = launch.block[0]
    for c in range(launch.grid[0]):
        yield c * bs, min(n, (c + 1) * bs)


@reference("reduce_shared")
def ref_reduce_shared(a, launch):
    inp, sums, n = a
    bs = launch.block[0]
    sums = sums.copy()
    for c, (lo, hi) in enumerate(_cta_spans(n, launch)):
        buf = np.zeros(bs, np.float32)
        if hi > lo:
            buf[: hi - lo] = inp[lo:hi]
        s = bs // 2
        while s > 0:  # the kernel's tree, level by level: exact
            buf[:s] = buf[:s] + buf[s : 2 * s]
            s //= 2
        sums[c] = buf[0]
    return {1: Expect(sums)}


def _warp_tree_down(v: np.ndarray) -> np.float32:
    """Lane 0's value after the shfl.down tree (offsets 16, 8, 4, 2, 1), in f32."""
    v = v.astype(np.float32).copy()
    off = 16
    while off:
        v[:off] = v[:off] + v[off : 2 * off]
        off //= 2
    return v[0]


def _per_thread(values: np.ndarray, n: int, launch, dtype=np.int64, fill=0) -> np.ndarray:
    """``values[:n]`` spread over the launch's threads, one each (``fill`` past ``n``)."""
    v = np.full(launch.threads, fill, dtype)
    m = min(n, launch.threads)
    v[:m] = values[:m]
    return v


@reference("reduce_warp")
def ref_reduce_warp(a, launch):
    inp, out, n = a
    threads = launch.threads
    vals = _per_thread(inp, n, launch, np.float32)
    warps = [_warp_tree_down(vals[w : w + 32]) for w in range(0, threads, 32)]
    # one atomicAdd per warp: the order of the float atomics is the scheduler's
    total = np.float32(out[0]) + np.sum(np.array(warps, np.float64))
    return {1: approx(np.array([total], np.float32), rtol=1e-6)}


@reference("allreduce_warp_xor")
def ref_allreduce(a, launch):
    inp, out, n = a
    out = out.copy()
    vals = _per_thread(inp, n, launch)
    tot = vals.reshape(-1, 32).sum(axis=1).repeat(32)
    out[:n] = tot[:n].astype(np.int32)
    return {1: Expect(out)}


@reference("spmv_csr")
def ref_spmv(a, launch):
    rows, rp, col, val, x, y = a
    y = y.copy()
    for r in range(rows):
        s = np.float32(0)
        for k in range(rp[r], rp[r + 1]):
            # fma.rn.f32 replayed through f64 (exact product, one f64 rounding)
            s = np.float32(np.float64(val[k]) * np.float64(x[col[k]]) + np.float64(s))
        y[r] = s
    return {5: within_ulps(y, 1)}


@reference("histogram_global", "histogram_shared")
def ref_histogram(a, launch):
    data, n, hist = a
    return {2: Expect(hist + np.bincount(data[:n], minlength=256).astype(np.uint32))}


@reference("stencil1d")
def ref_stencil1d(a, launch):
    inp, out, n = a
    out = out.copy()
    s = (inp[: n - 2] + inp[1 : n - 1]) + inp[2:n]
    out[1 : n - 1] = s * np.float32(1.0 / 3.0)
    out[0], out[n - 1] = inp[0], inp[n - 1]
    return {1: within_ulps(out, 1)}


@reference("stencil2d")
def ref_stencil2d(a, launch):
    inp, out, w, h = a
    out = out.copy()
    g = inp[: w * h].astype(np.float64).reshape(h, w)
    p = np.pad(g, 1, mode="edge")
    lap = p[1:-1, :-2] + p[1:-1, 2:] + p[:-2, 1:-1] + p[2:, 1:-1] - 4 * g
    out[: w * h] = lap.astype(np.float32).ravel()
    # four f32 additions and an fma in the kernel: a few f32 ulps of the operands
    return {1: approx(out, rtol=1e-6, atol=4e-7)}


@reference("device_call")
def ref_device_call(a, launch):
    inp, out, pw, n = a
    out, pw = out.copy(), pw.copy()
    i = np.arange(n)
    out[:n] = np.clip(inp[:n], np.float32(-1), np.float32(1))
    pw[:n] = (i & 7) ** ((i % launch.block[0]) & 3)
    return {1: Expect(out), 2: Expect(pw)}


def _f16(x64: np.ndarray) -> np.ndarray:
    """Round f64 values to f16 (numpy rounds f64 -> f16 once, to nearest even)."""
    return np.asarray(x64, np.float64).astype(np.float16)


@reference("half_scalar")
def ref_half_scalar(a, launch):
    x, y, out, n = a
    out = out.copy()
    xd, yd = x[:n].astype(np.float64), y[:n].astype(np.float64)
    s, p, d = _f16(xd + yd), _f16(xd * yd), _f16(xd - yd)  # exact in f64, one rounding
    r = _f16(s.astype(np.float64) * p.astype(np.float64) + d.astype(np.float64))  # fma.rn.f16
    out[:n] = np.where(r > 0, r, -r)
    return {2: Expect(out)}


@reference("half2_axpy")
def ref_half2_axpy(a, launch):
    alpha, x, y, n2 = a
    y = y.copy()
    lo, hi = struct.unpack("<2e", struct.pack("<I", alpha))
    al = np.tile(np.array([lo, hi], np.float64), n2)
    xd, yd = x[: 2 * n2].astype(np.float64), y[: 2 * n2].astype(np.float64)
    t = _f16(al * xd)
    u = _f16(yd + xd)
    y[: 2 * n2] = _f16(t.astype(np.float64) * 0.5 + u.astype(np.float64))  # fma.rn.f16x2, exact product
    return {2: Expect(y)}


FILTER = np.array([1, 2, 1, 2, 4, 2, 1, 2, 1], np.float32) / np.float32(16)


@reference("conv2d")
def ref_conv2d(a, launch):
    img, out, w, h = a
    out = out.copy()
    im = img[: w * h].reshape(h, w)
    acc = np.zeros((h, w), np.float32)
    p = np.pad(im, 1)
    for dy in range(3):
        for dx in range(3):
            # products by powers of two are exact, so fma == add: replayed exactly
            acc = acc + FILTER[dy * 3 + dx] * p[dy : dy + h, dx : dx + w]
    out[: w * h] = acc.ravel()
    return {1: Expect(out)}


def _pool_taps(inp, c, h, w):
    oh, ow = (h + 1) // 2, (w + 1) // 2
    planes = inp[: c * h * w].reshape(c, h, w)
    taps = []
    for dy in range(2):
        for dx in range(2):
            t = np.full((c, oh, ow), np.nan, np.float32)
            sub = planes[:, dy::2, dx::2]
            t[:, : sub.shape[1], : sub.shape[2]] = sub
            taps.append(t)
    return taps


@reference("maxpool2x2")
def ref_maxpool(a, launch):
    inp, out, c, h, w = a
    m = np.full_like(_pool_taps(inp, c, h, w)[0], -np.inf)
    for t in _pool_taps(inp, c, h, w):
        m = np.where(np.isnan(t), m, np.maximum(m, t))
    return {1: Expect(m.ravel())}


@reference("avgpool2x2")
def ref_avgpool(a, launch):
    inp, out, c, h, w = a
    taps = _pool_taps(inp, c, h, w)
    s = np.zeros_like(taps[0])
    cnt = np.zeros(taps[0].shape, np.float32)
    for t in taps:  # the kernel's order: (0,0), (0,1), (1,0), (1,1)
        s = np.where(np.isnan(t), s, s + np.nan_to_num(t))
        cnt += ~np.isnan(t)
    return {1: Expect((s / cnt).ravel())}  # div.rn.f32: correctly rounded


@reference("softmax_rows")
def ref_softmax(a, launch):
    inp, out, rows, cols = a
    out = out.copy()
    r = inp[: rows * cols].astype(np.float64).reshape(rows, cols)
    e = np.exp(r - r.max(axis=1, keepdims=True))
    out[: rows * cols] = (e / e.sum(axis=1, keepdims=True)).ravel()
    # expf (ex2.approx.ftz.f32 after a range reduction) and the shuffle sum order
    return {1: approx(out, rtol=2e-6, atol=1e-8)}


@reference("layernorm")
def ref_layernorm(a, launch):
    x, gamma, beta, y, cols, eps = a
    y = y.copy()
    rows = launch.grid[0]
    xr = x[: rows * cols].astype(np.float64).reshape(rows, cols)
    mean = xr.mean(axis=1, keepdims=True)
    var = ((xr - mean) ** 2).mean(axis=1, keepdims=True)
    yr = (xr - mean) / np.sqrt(var + np.float32(eps)) * gamma[:cols] + beta[:cols]
    y[: rows * cols] = yr.ravel()
    # f32 block reductions in shuffle order and rsqrt.approx.f32 (2 ulp)
    return {3: approx(y, rtol=2e-6, atol=2e-6)}


@reference("gemm_tiled")
def ref_gemm(a, launch):
    A, B, C, m, n, k = a
    Am = A[: m * k].astype(np.float64).reshape(m, k)
    Bm = B[: k * n].astype(np.float64).reshape(k, n)
    return {2: _dot_bound(C, Am, Bm)}


def _dot_bound(C: np.ndarray, Am: np.ndarray, Bm: np.ndarray) -> Expect:
    """C[:m*n] = Am @ Bm, for a kernel accumulating in f32 in any order: the error of
    k f32 multiply-adds is at most k * 2^-24 * sum |a b| (the standard bound)."""
    m, k = Am.shape
    n = Bm.shape[1]
    C = C.copy()
    C[: m * n] = (Am @ Bm).ravel()
    scale = np.zeros(C.shape)
    scale[: m * n] = (k * 2.0**-24 * (np.abs(Am) @ np.abs(Bm))).ravel()
    return Expect(C, exact=False, scale=scale)


@reference("scan_block")
def ref_scan(a, launch):
    inp, out, n = a
    out = out.copy()
    for lo, hi in _cta_spans(n, launch):
        if hi > lo:
            out[lo:hi] = np.cumsum(inp[lo:hi].astype(np.int64)).astype(np.int32)
    return {1: Expect(out)}


@reference("bfs_level")
def ref_bfs(a, launch):
    nv, rp, adj, level, depth, changed = a
    new = level.copy()
    changed = changed.copy()
    for v in range(nv):
        if level[v] == depth:
            for e in range(rp[v], rp[v + 1]):
                u = adj[e]
                if new[u] < 0:
                    new[u] = depth + 1
                    changed[0] = 1
    return {3: Expect(new), 5: Expect(changed)}


def _divergence(kernel, a, launch):
    inp, out = a
    out = out.copy()
    t = launch.threads
    tid = np.arange(t)
    tx = tid % launch.block[0]
    v = inp[:t].astype(np.int64)
    low = tx < 16
    if kernel in ("divergent_if", "divergent_not"):
        out[:t] = np.where(low, v * v, v + 7)
        out[t : 2 * t] = np.where(low, v, -v)
    else:
        odd = (tx & 1) == 1
        r = np.where(low, np.where(odd, v * 3, v - 3), v << 1)
        out[t : 2 * t] = np.where(low & odd, v * 3, out[t : 2 * t])
        out[2 * t : 3 * t] = np.where(low & ~odd, v - 3, out[2 * t : 3 * t])
        out[:t] = r + np.where((tx >> 5) == 0, 100, 0)
    return {1: Expect(out)}


for _k in ("divergent_if", "divergent_not", "nested_divergence"):
    REFERENCES[_k] = functools.partial(_divergence, _k)


def _loops(kernel, a, launch):
    out = a[0].copy()
    t = launch.threads
    res = []
    for g in range(t):
        tx = g % launch.block[0]
        if kernel == "loop_break":
            lane, s, k = tx & 31, 0, 0
            while k < a[1]:
                s += k
                if s > lane * 4:
                    break
                k += 1
            res.append(k * 1000 + s)
        elif kernel == "loop_return":
            x, r = tx, None
            for k in range(a[1]):
                x = (x * 5 + 1) & 63
                if x == 0:
                    r = -k
                    break
            res.append(x if r is None else r)
        else:
            acc = 0
            for k in range(tx % 8, 0, -1):
                acc = acc * 3 + k
            res.append(acc)
    out[:t] = res
    return {0: Expect(out)}


for _k in ("loop_break", "loop_return", "countdown"):
    REFERENCES[_k] = functools.partial(_loops, _k)


def _c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _c_rem(x, y):
    return x - _c_div(x, y) * y


@reference("switch_dense")
def ref_switch(a, launch):
    sel, inp, out, n = a
    out = out.copy()
    cases = {
        0: lambda x: x + 1, 1: lambda x: x * 3, 2: lambda x: x ^ 0x55, 3: lambda x: x >> 2,
        4: lambda x: x - 17, 5: lambda x: x * x, 6: lambda x: ~x, 7: lambda x: x & 0xF0F,
        8: lambda x: x | 0x100, 9: lambda x: _c_div(x, 7), 10: lambda x: _c_rem(x, 11),
        11: lambda x: x << 3,
    }
    for i in range(n):
        f = cases.get(int(sel[i]))
        out[i] = np.int32(f(int(inp[i])) if f else -1)
    return {2: Expect(out)}


def _popc(x: int) -> int:
    return bin(x & 0xFFFFFFFF).count("1")


@reference("warp_vote")
def ref_warp_vote(a, launch):
    inp, out, n = a
    out = out.copy()
    t = launch.threads
    v = _per_thread(inp, n, launch)
    for w in range(0, t, 32):
        ww = v[w : w + 32]
        ballot = int((ww > 0).sum())
        anyneg = int((ww < 0).any())
        allnz = int((ww != 0).all())
        for lane in range(32):
            i = w + lane
            if i < n:
                active = 16 if (i % launch.block[0]) % 32 < 16 else 0  # lanes 0..15, converged
                out[i] = ballot + (anyneg << 8) + (allnz << 9) + (active << 10)
    return {1: Expect(out)}


@reference("warp_match")
def ref_warp_match(a, launch):
    keys, group, n = a
    group = group.copy()
    t = launch.threads
    k = _per_thread(keys, n, launch, fill=-1)
    for w in range(0, t, 32):
        kk = k[w : w + 32]
        for lane in range(32):
            i = w + lane
            if i < n:
                peers = np.flatnonzero(kk == kk[lane])
                group[i] = len(peers) if peers[0] == lane else 0
    return {1: Expect(group)}


@reference("atomic_max_kernel")
def ref_atomic_max(a, launch):
    inp, res, n = a
    return {1: Expect(np.array([max(res[0], inp[:n].max())], np.float32))}


@reference("atomic_sat_inc")
def ref_atomic_sat_inc(a, launch):
    counters, idx, cap, n = a
    counters = counters.copy()
    adds = np.bincount(idx[:n], minlength=counters.size)
    counters[:] = np.where(counters < cap, np.minimum(cap, counters.astype(np.int64) + adds), counters)
    return {0: Expect(counters)}


@reference("atomic_ops")
def ref_atomic_ops(a, launch):
    w, n = a
    w = [int(x) for x in w]
    u = list(range(n))
    r = list(w)
    r[0] = min([w[0]] + [x ^ 0x5A for x in u])
    r[1] = max([w[1]] + [x * 7 % 101 for x in u])
    for x in u:
        r[2] |= 1 << (x & 31)
        r[3] &= ~(1 << (x & 31)) & 0xFFFFFFFF
        r[4] ^= x
        r[6] = 0 if r[6] >= 15 else r[6] + 1
        r[7] = 9 if (r[7] == 0 or r[7] > 9) else r[7] - 1
    r[5] = 42
    wide = (w[8] | (w[9] << 32)) + sum(u)
    r[8], r[9] = wide & 0xFFFFFFFF, (wide >> 32) & 0xFFFFFFFF
    return {0: Expect(np.array(r, np.uint32))}


@reference("double_math")
def ref_double_math(a, launch):
    x, y, out, n = a
    out = out.copy()
    xs, ys = x[:n], y[:n]
    out[:n] = (xs * ys + 1.0) + xs / (np.abs(ys) + 1.0) * np.sqrt(np.abs(xs) + 2.0)
    # fma vs. mul+add, and the final sum may cancel: a few f64 ulps of the terms
    scale = np.abs(xs * ys) + 1.0 + np.abs(xs) * np.sqrt(np.abs(xs) + 2.0)
    return {2: _scaled(out, n, scale)}


def _scaled(expected: np.ndarray, n: int, size: np.ndarray, eps: float = 4e-16) -> Expect:
    """|actual - expected| <= eps * size per element (size: the magnitude of the terms),
    exact past the first n elements."""
    tol = np.zeros(expected.shape)
    tol[:n] = eps * size
    return Expect(expected, exact=False, scale=tol)


@reference("double_transcendental")
def ref_double_transcendental(a, launch):
    x, out, n = a
    out = out.copy()
    xs = x[:n]
    with np.errstate(over="ignore"):
        out[:n] = np.exp(xs * 0.5) + np.log(np.abs(xs) + 1.0) + np.sin(xs)
    # libdevice exp/log/sin are within 1-2 ulp: measure against the terms' size
    with np.errstate(over="ignore"):
        scale = np.exp(xs * 0.5) + np.abs(np.log(np.abs(xs) + 1.0)) + 1.0
    return {1: _scaled(out, n, scale, 1e-15)}


def _bits_one(x: int, y0: int) -> list[int]:
    M = 0xFFFFFFFF
    y = y0 | 1
    y = y - (1 << 32) if y >= 1 << 31 else y
    ux, uy = x & M, y & M
    o = [0] * 16
    o[0] = _c_div(x, y) & M
    o[1] = _c_rem(x, y) & M
    o[2] = ux // uy
    o[3] = ux % ((uy + 2) & M)
    o[4] = _popc(ux)
    o[5] = 32 - ux.bit_length()
    o[6] = int(f"{ux:032b}"[::-1], 2)
    o[7] = (ux & -ux).bit_length()
    inb = (uy << 32 | ux).to_bytes(8, "little")
    o[8] = int.from_bytes(bytes(inb[(0x3715 >> (4 * k)) & 7] for k in range(4)), "little")
    o[9] = (((uy << 32 | ux) << ((y & 63) & 31)) >> 32) & M
    o[10] = ((uy << 32 | ux) >> ((x & 63) & 31)) & M
    wide = ux << 32 | uy
    o[11] = bin(wide).count("1") + (64 - wide.bit_length())
    o[12] = (ux * uy) >> 32
    o[13] = ((x * y) >> 32) & M
    fu = (ux >> 5) & 0x3FF
    pos = uy & 15
    f = (ux >> pos) & 0xFFF
    fs = f - 0x1000 if f & 0x800 else f
    fi = (uy & ~0xFF00) | ((ux & 0xFF) << 8)
    o[14] = (fu + fs + fi) & M
    o[15] = (abs(x - y) + 3) & M
    return o


@reference("int_bits")
def ref_int_bits(a, launch):
    xa, yb, out, n = a
    out = out.copy()
    for i in range(n):
        out[16 * i : 16 * i + 16] = _bits_one(int(xa[i]), int(yb[i]) & 0xFFFFFFFF)
    return {2: Expect(out)}


@reference("reverse_block")
def ref_reverse(a, launch):
    inp, out, n = a
    out = out.copy()
    for lo, hi in _cta_spans(n, launch):
        out[lo:hi] = inp[lo:hi][::-1]
    return {1: Expect(out)}


@reference("debug_print")
def ref_printf(a, launch):
    inp, n = a
    return {0: Expect(inp.copy())}  # printf writes nothing the launch can see


@reference("cp_async_sum")
def ref_cp_async(a, launch):
    x, y, out, n = a
    out = out.copy()
    out[:n] = x[:n] * np.float32(2) + y[:n]  # 2x is exact: one rounding either way
    return {2: Expect(out)}


@reference("wmma_gemm")
def ref_wmma(a, launch):
    A, B, C, m, n, k = a
    Am = A[: m * k].astype(np.float64).reshape(m, k)
    Bm = B[: n * k].astype(np.float64).reshape(n, k).T  # column-major: B[col * k + kk]
    # f16 products are exact in f32; f32 accumulation in the tensor core's order
    return {2: _dot_bound(C, Am, Bm)}


# ---------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------


def short_name(kernel: str) -> str:
    from hypa.runtime.emulator.demangle import demangle

    return demangle(kernel).split("(")[0]


def expected_outputs(launch: Launch) -> dict[str, Expect]:
    kernel = short_name(launch.kernel)
    fn = REFERENCES[kernel]
    init = launch.materialize_buffers()
    args = [init[x].copy() if isinstance(x, str) else x for x in launch.args]
    exp = fn(args, launch)
    return {launch.args[k]: e for k, e in exp.items()}


def check_outputs(result, launch: Launch, where: str) -> None:
    for name, exp in expected_outputs(launch).items():
        check(result.buffers[name], exp, f"{where} buffer '{name}'")


@pytest.mark.parametrize("name,index,launch", LAUNCH_LIST, ids=LAUNCH_IDS)
def test_full_mode_outputs(name, index, launch, kernel_runs):
    r = kernel_runs.run(launch, "full")
    check_outputs(r, launch, f"{name}.toml launch {index + 1} ({launch.kernel})")
    assert r.metrics.values["executed_fraction"] == 1.0
    assert not r.metrics.predicates_estimated
    if short_name(launch.kernel) == "debug_print":  # printf: lowered (printed under `hypa run`), not skipped
        assert not any("vprintf" in n for n in r.notes)


@pytest.mark.parametrize("name,index,launch", LAUNCH_LIST, ids=LAUNCH_IDS)
def test_slice_metrics_equal_full(name, index, launch, kernel_runs):
    full = kernel_runs.run(launch, "full")  # the full-mode test's result
    sl = kernel_runs.run(launch, "slice")
    assert not sl.metrics.predicates_estimated
    # every metric of docs/guide.md, "Metrics" (and any the emulator adds) but the share emulated
    names = sorted((set(columns()) | set(full.metrics.values) | set(sl.metrics.values)) - {"executed_fraction"})
    assert {m: sl.metrics.values.get(m) for m in names} == {m: full.metrics.values.get(m) for m in names}
    assert 0 < sl.metrics.values["executed_fraction"] <= 1.0

    def blocks(r):
        return [
            (b.function, b.block, b.name, b.instructions, b.warps, b.threads, b.divergent,
             b.inst_executed, b.thread_inst_executed)
            for b in r.metrics.blocks
        ]

    assert blocks(sl) == blocks(full)
    # the launch executes something in every kernel, and the sums agree
    m = full.metrics.values
    assert m["inst_executed"] == sum(b.inst_executed for b in full.metrics.blocks)
    assert m["thread_inst_executed"] == sum(b.thread_inst_executed for b in full.metrics.blocks)
    assert m["thread_inst_executed"] >= m["not_predicated_off_thread_inst_executed"] > 0


#: kernels whose counts depend on how warps interleave: a CAS loop that warps contend for takes
#: as many trips as the interleaving makes it (on a GPU, a different number each run)
SCHEDULE_DEPENDENT = {"atomic_max_kernel", "atomic_sat_inc"}


@pytest.mark.parametrize("name,index,launch", LAUNCH_LIST, ids=LAUNCH_IDS)
def test_interleaved_schedule_gives_the_same_results(name, index, launch, kernel_runs):
    """Warps taking turns a block or a write at a time (``--schedule interleave``, hypa run's
    default) compute the same outputs as warps run to their barriers, and race-free kernels
    count the same: every metric and every per-block count."""
    warp = kernel_runs.run(launch, "full")
    inter = kernel_runs.run(launch, "full", schedule="interleave")
    check_outputs(inter, launch, f"{name}.toml launch {index + 1} ({launch.kernel}), interleaved")
    if short_name(launch.kernel) in SCHEDULE_DEPENDENT:  # the outputs agree; the trip counts need not
        return
    names = sorted(set(columns()) | set(warp.metrics.values) | set(inter.metrics.values))
    assert {m: inter.metrics.values.get(m) for m in names} == {m: warp.metrics.values.get(m) for m in names}
    assert [(b.block, b.warps, b.threads, b.divergent) for b in inter.metrics.blocks] == \
        [(b.block, b.warps, b.threads, b.divergent) for b in warp.metrics.blocks]


@pytest.mark.parametrize("kernel", ["reduce_shared", "scan_block", "gemm_tiled"])
def test_interleaved_schedule_gives_the_same_critical_steps(kernel):
    """The timing estimate's CTA figures (each CTA's warp-instructions and its critical steps,
    the longest warp between barrier releases summed) do not depend on the schedule."""
    from hypa.runtime.emulator.emulator import Emulator

    name, _i, launch = next(c for c in LAUNCH_LIST if short_name(c[2].kernel) == kernel)
    module = KernelRuns.module(os.path.normpath(launch.file))
    runs = [Emulator(module, mode="full", address_trace=64, schedule=s).run(launch) for s in ("warp", "interleave")]
    assert runs[0].cta_critical_steps is not None and runs[0].cta_critical_steps.sum() > 0
    assert np.array_equal(runs[0].cta_steps, runs[1].cta_steps)
    assert np.array_equal(runs[0].cta_critical_steps, runs[1].cta_critical_steps)


def _arch_cases():
    out = []
    for name, index, launch in LAUNCH_LIST:
        for arch in OTHER_ARCHS:
            path = os.path.normpath(os.path.join(KERNELS, "ptx", f"{name}.{arch}.ptx"))
            if os.path.exists(path):
                out.append(pytest.param(name, index, launch, path, id=f"{name}-{index}-{launch.kernel}-{arch}"))
    return out


@pytest.mark.parametrize("name,index,launch,path", _arch_cases())
def test_other_archs_compute_the_same_outputs(name, index, launch, path, kernel_runs):
    if short_name(launch.kernel) not in kernel_names(path):
        pytest.skip(f"{os.path.basename(path)} has no {launch.kernel}")
    r = kernel_runs.run(launch, "full", path)
    check_outputs(r, launch, f"{os.path.basename(path)}: {name}.toml launch {index + 1} ({launch.kernel})")


def test_every_kernel_has_launches():
    """Each tests/kernels/*.cu has a launch file, and every kernel of its sm_80 PTX is launched."""
    sources = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(KERNELS, "*.cu")))
    have = {n for n, _i, _l in LAUNCH_LIST}
    assert set(sources) <= have, f"no launches for {sorted(set(sources) - have)}"
    for name in sources:
        path = os.path.normpath(os.path.join(KERNELS, "ptx", f"{name}.sm_80.ptx"))
        launched = {short_name(launch.kernel) for n, _i, launch in LAUNCH_LIST if n == name}
        assert kernel_names(path) <= launched, f"{name}: kernels never launched: {kernel_names(path) - launched}"
        for n, _i, launch in LAUNCH_LIST:
            if n == name:
                assert os.path.normpath(launch.file) == path
                assert short_name(launch.kernel) in REFERENCES
