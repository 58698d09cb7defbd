"""Records what a GPU's MUFU (special function unit) returns for the PTX ``.approx`` f32
functions (issue 26), so the emulator can reproduce them bit for bit.

Runs on the GPU machine (CuPy; device tool, three calls of 20, 8 and 17 s):

    python3 benchmarks/gpu/mufu_record.py --out $OUT               # rsqrt, ex2 (+ rcp/sqrt/lg2 reduced domains)
    python3 benchmarks/gpu/mufu_record.py --set rcp_sqrt --out $OUT
    python3 benchmarks/gpu/mufu_record.py --set div --out $OUT      # mufu_div_in.npz, mufu_div_*.npz

then here, on the files that came back (makes ``runtime/emulator/mufu_h100.npz``, the
emulator's tables, and ``tests/ground_truth/h100/mufu/checks.npz``, the other recordings
thinned; docs/validation.md, "Special functions (MUFU) on an H100"):

    python benchmarks/gpu/mufu_record.py --pack DIR1 DIR2 DIR3

(DIR1: what ``--out`` wrote, DIR2: ``--set rcp_sqrt --out``, DIR3: ``--set div --out``.)

Writes ``$OUT/mufu_<group>.npz``: for every contiguous range of input encodings
``<op>__<name>__range`` = (first input encoding, count, first output encoding) and
``<op>__<name>__diff`` = the lzma-compressed first differences of the output encodings
(``__dtype`` the narrowest integer type that holds them), or for sampled inputs
``<op>__<name>__in``/``__out`` (lzma-compressed uint32); ``read_npz`` below decodes either.
``$OUT/mufu_sass.txt`` is ``cuobjdump -sass`` of the same instructions built by nvcc for
sm_90 (what ptxas wraps around each MUFU op).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import lzma
from concurrent.futures import ProcessPoolExecutor

import numpy as np

#: op name -> PTX instruction (one f32 source)
OPS = {
    "rsqrt": "rsqrt.approx.f32",
    "rsqrt_ftz": "rsqrt.approx.ftz.f32",
    "ex2": "ex2.approx.f32",
    "ex2_ftz": "ex2.approx.ftz.f32",
    "rcp": "rcp.approx.f32",
    "rcp_ftz": "rcp.approx.ftz.f32",
    "lg2_ftz": "lg2.approx.ftz.f32",
    "sqrt": "sqrt.approx.f32",
    "sqrt_ftz": "sqrt.approx.ftz.f32",
}

KERNEL = r"""
extern "C" __global__ void k_{name}(const unsigned* in, unsigned use_in, unsigned start, unsigned* out,
                              unsigned long long n) {{
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned b = use_in ? in[i] : start + (unsigned)i;
  float x = __uint_as_float(b), r;
  asm volatile("{ptx} %0, %1;" : "=f"(r) : "f"(x));
  out[i] = __float_as_uint(r);
}}
"""


#: two-source instructions (``--set div``): a / b
OPS2 = {"div_approx": "div.approx.f32", "div_approx_ftz": "div.approx.ftz.f32",
        "div_full": "div.full.f32", "div_full_ftz": "div.full.ftz.f32"}

KERNEL2 = r"""
extern "C" __global__ void k_{name}(const unsigned* a, const unsigned* b, unsigned* out, unsigned long long n) {{
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float r;
  asm volatile("{ptx} %0, %1, %2;" : "=f"(r) : "f"(__uint_as_float(a[i])), "f"(__uint_as_float(b[i])));
  out[i] = __float_as_uint(r);
}}
"""


def source() -> str:
    return "".join(KERNEL.format(name=n, ptx=p) for n, p in OPS.items()) + \
        "".join(KERNEL2.format(name=n, ptx=p) for n, p in OPS2.items())


def div_inputs(n: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) for ``--set div``: divisors of every exponent, subnormal, near 2^-126 and
    2^126, specials; dividends random or a few binades from b's (quotients near overflow
    and underflow)."""
    rng = np.random.default_rng(28)
    q = n // 4
    b = np.concatenate([
        rng.integers(0, 1 << 32, q, dtype=np.uint32),
        (rng.integers(0, 1 << 23, q, dtype=np.uint32) | (rng.integers(0, 256, q, dtype=np.uint32) << 23)
         | (rng.integers(0, 2, q, dtype=np.uint32) << 31)),
        # exponent fields 0..3 and 250..254: subnormal, near 2^-126, near 2^126
        (rng.integers(0, 1 << 23, q, dtype=np.uint32) | (rng.choice([0, 1, 2, 3, 250, 251, 252, 253, 254], q).astype(np.uint32) << 23)
         | (rng.integers(0, 2, q, dtype=np.uint32) << 31)),
        np.resize(specials(), q)])
    be = (b >> 23) & 0xFF
    ae = np.clip(be.astype(np.int64) + rng.integers(-130, 131, n), 0, 255).astype(np.uint32)
    a_near = rng.integers(0, 1 << 23, n, dtype=np.uint32) | (ae << 23) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    a = np.where(rng.random(n) < 0.5, rng.integers(0, 1 << 32, n, dtype=np.uint32), a_near).astype(np.uint32)
    a[: len(specials()) ** 2] = np.repeat(specials(), len(specials()))
    b[: len(specials()) ** 2] = np.tile(specials(), len(specials()))
    return a, b


def f32_bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def binade(exp_biased: int, neg: bool = False) -> tuple[int, int]:
    return ((1 << 31) if neg else 0) | (exp_biased << 23), 1 << 23


def specials() -> np.ndarray:
    s = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,
         0xFFFFFFFF, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
         0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x40000000, 0x3F000000, 0xBF000000]
    return np.array(s, dtype=np.uint32)


def jobs_rcp_sqrt():
    """The second call (``--set rcp_sqrt``): rcp and sqrt beyond their reduced domains."""
    rng = np.random.default_rng(27)
    out = []
    m = rng.integers(0x3F800000, 0x40000000, 1024, dtype=np.uint32).view(np.float32).astype(np.float64)
    scaled = np.concatenate([np.ldexp(m, k) for k in range(-150, 129)]).astype(np.float32)
    ins = np.concatenate([f32_bits(scaled), f32_bits(-scaled), specials(), rng.integers(0, 1 << 32, 65536, dtype=np.uint32)])
    for op in ("rcp", "rcp_ftz"):
        out.append(("rcpsqrt", op, "subnormal", (1, (1 << 23) - 1)))
        out.append(("rcpsqrt", op, "scaled", ins))
    m = rng.integers(0x3F800000, 0x40800000, 1024, dtype=np.uint32).view(np.float32).astype(np.float64)
    scaled = np.concatenate([np.ldexp(m, 2 * k) for k in range(-80, 64)]).astype(np.float32)
    neg = -rng.random(4096).astype(np.float32) * np.float32(2.0) ** rng.integers(-140, 120, 4096)
    ins = np.concatenate([f32_bits(scaled), f32_bits(neg), specials(), rng.integers(0, 1 << 32, 65536, dtype=np.uint32)])
    out.append(("rcpsqrt", "sqrt_ftz", "core", (0x3F800000, 1 << 24)))
    for op in ("sqrt", "sqrt_ftz"):
        out.append(("rcpsqrt", op, "subnormal", (1, (1 << 23) - 1)))
        out.append(("rcpsqrt", op, "scaled", ins))
    return out


def jobs():
    """(group, op, name, range (start, count) or inputs)"""
    rng = np.random.default_rng(26)
    out = []
    # rsqrt: every float in [1,4), every positive subnormal, x * 4^k samples, specials
    m = rng.integers(0x3F800000, 0x40800000, 1024, dtype=np.uint32)
    x = m.view(np.float32).astype(np.float64)
    scaled = np.concatenate([np.ldexp(x, 2 * k) for k in range(-80, 64)]).astype(np.float32)
    neg = -rng.random(4096).astype(np.float32) * np.float32(2.0) ** rng.integers(-140, 120, 4096)
    ins = np.concatenate([f32_bits(scaled), f32_bits(neg), specials(), rng.integers(0, 1 << 32, 65536, dtype=np.uint32)])
    for op in ("rsqrt", "rsqrt_ftz"):
        out.append(("rsqrt", op, "core", (0x3F800000, 1 << 24)))
        out.append(("rsqrt", op, "subnormal", (1, (1 << 23) - 1)))
        out.append(("rsqrt", op, "samples", ins))
    # ex2.ftz: every float with |x| in [2^-8, 2); both ex2 variants: samples
    for e in range(127 - 8, 128):
        for neg in (False, True):
            out.append(("ex2n" if neg else "ex2p", "ex2_ftz", f"binade{e - 127}{'n' if neg else 'p'}", binade(e, neg)))
    frac = rng.random(4096).astype(np.float32)
    fr = np.concatenate([frac, f32_bits(frac[:64]).view(np.float32)])
    ints = np.arange(-160, 131, dtype=np.float32)
    xi = (ints[:, None] + fr[None, :]).astype(np.float32).ravel()
    small = [rng.integers(lo, lo + (1 << 23), 1024, dtype=np.uint32) | s
             for e in list(range(0, 127 - 8)) + list(range(128, 256)) for lo in [e << 23] for s in (0, 1 << 31)]
    ins = np.concatenate([f32_bits(xi), np.concatenate(small), specials(),
                          rng.integers(0, 1 << 32, 65536, dtype=np.uint32)])
    for op in ("ex2", "ex2_ftz"):
        out.append(("ex2s", op, "samples", ins))
    # ex2 (not ftz) where results are subnormal or near: every float in [-152, -120]
    lo = f32_bits(np.float32(-120.0)).item()
    hi = f32_bits(np.float32(-152.0)).item()
    for op in ("ex2", "ex2_ftz"):
        out.append(("ex2s", op, "tail", (lo, hi - lo + 1)))
    # cheap extras (not modelled yet): the reduced domains of rcp, lg2, sqrt
    out.append(("extra", "rcp", "core", (0x3F800000, 1 << 23)))
    out.append(("extra", "rcp_ftz", "core", (0x3F800000, 1 << 23)))
    out.append(("extra", "lg2_ftz", "core", (0x3F800000, 1 << 23)))
    out.append(("extra", "sqrt", "core", (0x3F800000, 1 << 24)))
    ins = np.concatenate([specials(), rng.integers(0, 1 << 32, 65536, dtype=np.uint32)])
    for op in ("rcp", "rcp_ftz", "lg2_ftz", "sqrt"):
        out.append(("extra", op, "samples", ins))
    return out


def pack(a: np.ndarray) -> np.ndarray:
    return np.frombuffer(lzma.compress(a.tobytes(), preset=6), np.uint8)


def unpack(a: np.ndarray, dtype) -> np.ndarray:
    return np.frombuffer(lzma.decompress(a.tobytes()), dtype)


def encode(item):
    key, kind, a, b = item
    if kind == "range":
        d = np.diff(a.astype(np.int64))
        dt = next(t for t in (np.int8, np.int16, np.int32, np.int64) if d.size == 0 or
                  (d.min() >= np.iinfo(t).min and d.max() <= np.iinfo(t).max))
        return key, {"range": np.array([b[0], b[1], a[0]], dtype=np.int64), "diff": pack(d.astype(dt)),
                     "dtype": np.array(np.dtype(dt).str)}
    return key, {"in": pack(b), "out": pack(a)}


def read_npz(path) -> dict:
    """{(op, name): (inputs uint32, outputs uint32)} from a file ``main`` wrote."""
    z = np.load(path)
    res = {}
    for k in z.files:
        op, name, part = k.split("__")
        if part == "range":
            s, n, first = (int(v) for v in z[k])
            d = unpack(z[f"{op}__{name}__diff"], np.dtype(str(z[f"{op}__{name}__dtype"])))
            out = np.concatenate([[first], first + np.cumsum(d, dtype=np.int64)])
            res[(op, name)] = ((s + np.arange(n, dtype=np.int64)).astype(np.uint32), out.astype(np.uint32))
        elif part == "in":
            i = unpack(z[k], np.uint32)
            o = unpack(z[f"{op}__{name}__out"], np.uint32)
            res[(op, name)] = (i, o)
    return res


def sass(out: str) -> None:
    src = source().replace('extern "C" __global__', 'extern "C" __global__ __launch_bounds__(256)')
    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, "m.cu")
        open(cu, "w").write(src)
        cub = os.path.join(d, "m.cubin")
        p = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", cub, cu], capture_output=True, text=True)
        text = p.stderr
        if p.returncode == 0:
            text += subprocess.run(["cuobjdump", "-sass", cub], capture_output=True, text=True).stdout
        open(os.path.join(out, "mufu_sass.txt"), "w").write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="on the GPU machine: record into this folder")
    ap.add_argument("--set", choices=("rsqrt_ex2", "rcp_sqrt", "div"), default="rsqrt_ex2",
                    help="what to record: the first call's sets (default) or the second's")
    ap.add_argument("--pack", metavar="DIR", nargs="+", help="here: make the emulator's tables and the recorded "
                    "checks from the files the device calls wrote to the folders DIR")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if a.pack:
        pack_files(a.pack, os.path.join(root, "runtime", "emulator", "mufu_h100.npz"),
                   os.path.join(root, "tests", "ground_truth", "h100", "mufu", "checks.npz"))
        return 0
    if not a.out:
        ap.error("give --out (on the GPU machine) or --pack")
    import cupy as cp

    sass(a.out)
    mod = cp.RawModule(code=source())
    kern = {n: mod.get_function(f"k_{n}") for n in list(OPS) + list(OPS2)}
    if a.set == "div":
        x, y = div_inputs()
        np.savez(os.path.join(a.out, "mufu_div_in.npz"), a=pack(x), b=pack(y))
        for op in OPS2:  # a file each (at most 16 MiB come back per file)
            o = cp.empty(x.size, dtype=cp.uint32)
            kern[op](((x.size + 255) // 256,), (256,), (cp.asarray(x), cp.asarray(y), o, np.uint64(x.size)))
            np.savez(os.path.join(a.out, f"mufu_{op}.npz"), out=pack(cp.asnumpy(o)))
        print("div", x.size, "pairs")
        return 0
    print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip())
    groups: dict[str, list] = {}
    for group, op, name, spec in (jobs() if a.set == "rsqrt_ex2" else jobs_rcp_sqrt()):
        if isinstance(spec, tuple):
            s, n = spec
            dev_in, use, start = cp.zeros(1, dtype=cp.uint32), 0, s
        else:
            n = len(spec)
            dev_in, use, start = cp.asarray(spec), 1, 0
        o = cp.empty(n, dtype=cp.uint32)
        kern[op](((n + 255) // 256,), (256,), (dev_in, np.uint32(use), np.uint32(start), o, np.uint64(n)))
        res = cp.asnumpy(o)
        groups.setdefault(group, []).append((f"{op}__{name}", "range" if isinstance(spec, tuple) else "in",
                                             res, spec))
    with ProcessPoolExecutor(16) as ex:
        for group, items in groups.items():
            arrays = {}
            for key, parts in ex.map(encode, items):
                for part, v in parts.items():
                    arrays[f"{key}__{part}"] = v
            path = os.path.join(a.out, f"mufu_{group}.npz")
            np.savez(path, **arrays)
            print(group, len(items), "jobs", os.path.getsize(path), "bytes")
    return 0



# ---------------------------------------------------------------------------
# here, after the device call: the emulator's tables and the recorded checks
# ---------------------------------------------------------------------------


def _diff_blob(out: np.ndarray) -> dict:
    d = np.diff(out.astype(np.int64))
    dt = next(t for t in (np.int8, np.int16, np.int32, np.int64)
              if d.min() >= np.iinfo(t).min and d.max() <= np.iinfo(t).max)
    return {"first": np.array(int(out[0]), dtype=np.int64), "dtype": np.array(np.dtype(dt).str),
            "diff": np.frombuffer(lzma.compress(d.astype(dt).tobytes(), preset=9 | lzma.PRESET_EXTREME), np.uint8)}


def undiff(z, prefix: str) -> np.ndarray:
    """The uint32 array ``_diff_blob`` stored under ``prefix`` in ``z``."""
    d = np.frombuffer(lzma.decompress(z[f"{prefix}__diff"].tobytes()), np.dtype(str(z[f"{prefix}__dtype"])))
    first = int(z[f"{prefix}__first"])
    return np.concatenate([[first], first + np.cumsum(d, dtype=np.int64)]).astype(np.uint32)


def pack_files(recorded: list[str], tables: str, checks: str) -> None:
    """``recorded``: the folders the device calls wrote.  ``tables``: the emulator's MUFU tables
    (runtime/emulator/mufu_h100.npz: the H100's outputs for every input of the reduced
    domains); ``checks``: the other recordings, thinned (tests/ground_truth/h100/mufu/checks.npz)."""
    rec = {}
    for d in recorded:
        for g in ("rsqrt", "ex2p", "ex2n", "ex2s", "extra", "rcpsqrt"):
            if os.path.exists(os.path.join(d, f"mufu_{g}.npz")):
                rec.update(read_npz(os.path.join(d, f"mufu_{g}.npz")))
    # lg2: not modelled; the first call's random rcp/sqrt samples: the second call's "scaled" has as many
    rec = {k: v for k, v in rec.items() if not k[0].startswith("lg2") and not (k[0] in ("rcp", "rcp_ftz", "sqrt")
                                                                                 and k[1] == "samples")}
    for a, b in (("rsqrt", "rsqrt_ftz"), ("rcp", "rcp_ftz"), ("sqrt", "sqrt_ftz")):
        assert np.array_equal(rec[(a, "core")][1], rec[(b, "core")][1]), f"{a} and {b} differ on the reduced domain"
    t = {}
    for name, (ins, outs), first in (("rsqrt", rec[("rsqrt", "core")], 0x3F800000),
                                     ("ex2_pos", rec[("ex2_ftz", "binade0p")], 0x3F800000),
                                     ("ex2_neg", rec[("ex2_ftz", "binade0n")], 0xBF800000),
                                     ("rcp", rec[("rcp", "core")], 0x3F800000),
                                     ("sqrt", rec[("sqrt", "core")], 0x3F800000)):
        assert ins[0] == first
        if name == "ex2_pos":
            outs = outs - np.uint32(1 << 23)  # 2^(1+f) -> 2^f
        if name == "ex2_neg":
            outs = outs + np.uint32(1 << 23)  # 2^-(1+g) -> 2^-g
        for k, v in _diff_blob(outs).items():
            t[f"{name}__{k}"] = v
    np.savez(tables, **t)
    rng = np.random.default_rng(1)
    c = {}
    for (op, name), (ins, outs) in sorted(rec.items()):
        if name in ("core", "binade0p", "binade0n"):
            continue  # in the tables
        contiguous = ins.size > 1 and np.all(np.diff(ins.astype(np.int64)) == 1)
        if contiguous:
            c[f"{op}__{name}__start"] = np.array(int(ins[0]), dtype=np.int64)
            c[f"{op}__{name}__count"] = np.array(ins.size, dtype=np.int64)
            for k, v in _diff_blob(outs).items():
                c[f"{op}__{name}__{k}"] = v
        else:
            keep = np.union1d(rng.choice(ins.size, min(ins.size, 16384), replace=False),
                              np.flatnonzero(np.isin(ins, specials())))
            c[f"{op}__{name}__in"] = pack(ins[keep])
            c[f"{op}__{name}__out"] = pack(outs[keep])
    for d in recorded:  # --set div: 16,384 of the pairs (the specials' 484 among them)
        if os.path.exists(os.path.join(d, "mufu_div_in.npz")):
            z = np.load(os.path.join(d, "mufu_div_in.npz"))
            x, y = unpack(z["a"], np.uint32), unpack(z["b"], np.uint32)
            keep = np.union1d(np.arange(len(specials()) ** 2), rng.choice(x.size, 16384 - len(specials()) ** 2, replace=False))
            c["div__pairs__a"], c["div__pairs__b"] = pack(x[keep]), pack(y[keep])
            for op in OPS2:
                c[f"{op}__pairs__out"] = pack(unpack(np.load(os.path.join(d, f"mufu_{op}.npz"))["out"], np.uint32)[keep])
    np.savez(checks, **c)


if __name__ == "__main__":
    sys.exit(main())
