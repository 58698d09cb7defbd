"""The H100 tensor core's inner product for f16/bf16 inputs with f32 accumulation (issue 26):
what ``HMMA.16816``/``HMMA.1688`` (``mma.sync`` m16n8k16/m16n8k8, ``wmma.mma`` f16/bf16) and
``HGMMA`` (``wgmma.mma_async`` f16/bf16) return, bit for bit, where IEEE arithmetic does not.

One instruction's ``d = c + a_0 * b_0 + ... + a_(k-1) * b_(k-1)`` (k <= 16) is one fused
step, not k roundings:

* each product is exact; its exponent is taken as ``exp(a) + exp(b)`` (the inputs' unbiased
  exponents, a subnormal input counting as the format's smallest, -14 or -126), whatever
  the product's leading bit; ``c``'s is its encoding's (a subnormal counting as -126);
* every nonzero addend (the k products and ``c``) is aligned to the largest such exponent
  ``E`` and truncated (toward zero) to a multiple of ``2^(E - 25)``;
* the truncated addends are summed exactly and the sum is rounded to f32 toward zero (f32
  subnormals kept), except that a sum of 2^128 or more is infinite.

Infinities and NaNs give IEEE's result (a NaN is ``0x7FFFFFFF``); all-zero addends give
IEEE's signed zero.  An f16 D is that f32 result rounded to nearest.  Recorded on an H100 by
``benchmarks/gpu/tensor_core_record.py`` and checked against every recorded inner product
by ``tests/unit/test_tensor_core.py`` (docs/validation.md, "Tensor cores on an H100").

Built once per (input format, k, row length) as a scalar helper function: a call per D
element, in both tiers.
"""

from __future__ import annotations

from llvmlite import ir

from .irbuild import helper_function
from .types import f32, f64, i32, i64, ptr

#: alignment: addends are truncated to multiples of 2^(E - ALIGN_BITS), E the largest exponent
ALIGN_BITS = 25
#: the smallest unbiased exponent of a normal input (a subnormal input counts as this)
_EMIN = {".f16": -14, ".bf16": -126}
_NONE = -100000  # the exponent of a zero addend: below every real one


def dot(b: ir.IRBuilder, module: ir.Module, at: str, k: int, stride: int, a_row: ir.Value, b_col: ir.Value,
        c: ir.Value) -> ir.Value:
    """``c + sum(a_row[i] * b_col[i * stride])`` (f32 values of ``at`` inputs, f32 ``c``) as
    the H100's tensor core computes it; k > 16 is done 16 at a time, as the instructions do."""
    acc = c
    for k0 in range(0, k, 16):
        kk = min(16, k - k0)
        name = f"hypa_tensor_core_dot.{at[1:]}.k{kk}.s{stride}"
        f, new = helper_function(module, name, f32, [ptr, ptr, f32])
        if new:
            _build(f, at, kk, stride)
        pa = b.gep(a_row, [ir.Constant(i64, k0)], source_etype=f32) if k0 else a_row
        pb = b.gep(b_col, [ir.Constant(i64, k0 * stride)], source_etype=f32) if k0 else b_col
        acc = b.call(f, [pa, pb, acc])
    return acc


def _intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    f = module.globals.get(name)
    return f if f is not None else ir.Function(module, ir.FunctionType(ret, args), name)


def _build(f: ir.Function, at: str, k: int, stride: int) -> None:
    module = f.module
    b = ir.IRBuilder(f.append_basic_block("entry"))
    pa, pb, c = f.args
    fabs32 = _intrinsic(module, "llvm.fabs.f32", f32, [f32])
    fabs64 = _intrinsic(module, "llvm.fabs.f64", f64, [f64])
    fma = _intrinsic(module, "llvm.fma.f32", f32, [f32, f32, f32])
    inf = ir.Constant(f32, float("inf"))
    emin = ir.Constant(i32, _EMIN[at])

    def finite(v):
        return b.fcmp_ordered("<", b.call(fabs32, [v]), inf)

    def smax(x, y):
        return b.select(b.icmp_signed(">", x, y), x, y)

    def exponent(v):  # unbiased exponent field of an f32, at least the input format's smallest
        field = b.and_(b.lshr(b.bitcast(v, i32), ir.Constant(i32, 23)), ir.Constant(i32, 0xFF))
        return smax(b.sub(field, ir.Constant(i32, 127)), emin)

    none = ir.Constant(i32, _NONE)
    ok = finite(c)
    ieee = c
    prods, exps = [], []
    for i in range(k):
        x = b.load(b.gep(pa, [ir.Constant(i64, i)], source_etype=f32), typ=f32)
        y = b.load(b.gep(pb, [ir.Constant(i64, i * stride)], source_etype=f32), typ=f32)
        ok = b.and_(ok, b.and_(finite(x), finite(y)))
        ieee = b.call(fma, [x, y, ieee])
        p = b.fmul(b.fpext(x, f64), b.fpext(y, f64))  # exact
        prods.append(p)
        nz = b.fcmp_unordered("!=", p, ir.Constant(f64, 0.0))
        exps.append(b.select(nz, b.add(exponent(x), exponent(y)), none))
    # c's exponent: its encoding's, a subnormal counting as -126
    cd = b.fpext(c, f64)
    cexp = smax(b.sub(b.and_(b.lshr(b.bitcast(c, i32), ir.Constant(i32, 23)), ir.Constant(i32, 0xFF)),
                      ir.Constant(i32, 127)), ir.Constant(i32, -126))
    cexp = b.select(b.fcmp_unordered("!=", cd, ir.Constant(f64, 0.0)), cexp, none)
    emax = cexp
    for e in exps:
        emax = smax(emax, e)
    some = b.icmp_signed(">", emax, none)
    emax = smax(emax, ir.Constant(i32, -400))  # (no nonzero addend: any scale, the result is not used)

    def pow2(e):  # 2^e as f64, e in the normal range
        return b.bitcast(b.shl(b.zext(b.add(e, ir.Constant(i32, 1023)), i64), ir.Constant(i64, 52)), f64)

    scale = pow2(b.sub(ir.Constant(i32, ALIGN_BITS), emax))
    total = b.fptosi(b.fmul(cd, scale), i64)  # fptosi truncates toward zero
    for p in prods:
        total = b.add(total, b.fptosi(b.fmul(p, scale), i64))
    exact = b.fmul(b.sitofp(total, f64), pow2(b.sub(emax, ir.Constant(i32, ALIGN_BITS))))
    # to nearest, then one step toward zero where that was away from zero, except that a sum
    # of 2^128 or more is infinite
    r = b.fptrunc(exact, f32)
    mag = b.call(fabs64, [exact])
    away = b.and_(b.fcmp_ordered(">", b.call(fabs64, [b.fpext(r, f64)]), mag),
                  b.fcmp_ordered("<", mag, ir.Constant(f64, 2.0 ** 128)))
    r = b.select(away, b.bitcast(b.sub(b.bitcast(r, i32), ir.Constant(i32, 1)), f32), r)
    nan = b.fcmp_unordered("uno", ieee, ieee)
    ieee = b.select(nan, b.bitcast(ir.Constant(i32, 0x7FFFFFFF), f32), ieee)
    b.ret(b.select(b.and_(ok, some), r, ieee))
