"""FMA contraction as ``ptxas`` does it: which ``add``/``sub`` the GPU runs fused with a ``mul``.

The PTX ISA lets the code generator fuse a ``mul`` and an ``add`` that carry no rounding
modifier into one fused multiply-add (one rounding instead of two), and nvcc's default
``-fmad=true`` relies on it: ``ptxas`` does it wherever the rule below allows, so a kernel's
floating-point results on the GPU are those of ``fma(a, b, c)``, not of ``(a * b) + c``
rounded twice.  Emulating the PTX literally differs from the GPU in the last bit of such
results (and whatever a program computes from them).

The rule, read from ``ptxas -arch=sm_90`` (CUDA 13) SASS on small kernels (``FFMA``/``DFMA``/
``HFMA2`` where fused, ``FMUL`` + ``FADD`` where not; tests/unit/test_contract.py holds the
cases and the SASS they gave):

* the ``mul`` has no rounding modifier (``.rn`` and friends never fuse), no ``.sat`` and no
  guard predicate; types ``.f32``, ``.f64``, ``.f16``, ``.f16x2``, ``.bf16``, ``.bf16x2``;
* **every** use of its result is an ``add`` or ``sub`` of the same type, without a rounding
  modifier, with the same ``.ftz`` as the ``mul``, that reads the result once (a ``mul`` whose
  result is also stored or multiplied again stays a separate ``FMUL``); the ``add`` may carry
  ``.sat`` and a guard;
* the uses are in the ``mul``'s basic block, or one of the ``mul``'s operands is an immediate
  or a kernel parameter (``ld.param``): ``ptxas`` then moves the product into the blocks that
  use it, a loop's body included (the operand stays in the constant bank, so no register more
  is live), and fuses it there; a product of two registers used in another block stays an
  ``FMUL`` (Parboil cp: ``gridspacing * x`` before the atom loop, ``- atom.x`` in it);
* an ``add``/``sub`` with two such ``mul`` operands fuses its first one.

``ptxas`` also merges identical ``mul`` instructions before it fuses (their uses then count
together) and folds a ``neg`` between ``mul`` and ``add``; neither is modelled, as NVVM's PTX
rarely leaves either.

``ptx-contract-fma`` marks each fused ``add``/``sub`` with ``hypa.contract``: the textual
operand (1 or 2) whose ``mul`` it absorbs.  The instruction and its counts stay what the PTX
says; only its value is computed as the fused operation (runtime/emulator/lowering/semantics/
floating.py).  Runs on SSA-form functions.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.passes import ModulePass

from hypa.ptxdialect.dialect import FuncOp, InstructionOp

from .ssa import is_ssa

#: on an ``add``/``sub``: the textual operand (1 or 2) whose ``mul`` the GPU fuses into it
CONTRACT_ATTR = "hypa.contract"

#: the types ``ptxas`` fuses (``FFMA``, ``DFMA``, ``HFMA2``, ``HFMA2.BF16_V2``)
FUSED_TYPES = frozenset({".f32", ".f64", ".f16", ".f16x2", ".bf16", ".bf16x2"})
_ROUNDING = frozenset({".rn", ".rz", ".rm", ".rp", ".rna", ".rs"})


def _plain(op: InstructionOp) -> bool:
    """No rounding modifier, a type that fuses."""
    mods = op.modifiers
    return not _ROUNDING.intersection(mods) and len(op.types) == 1 and op.types[0] in FUSED_TYPES


def _fusable_mul(op: InstructionOp) -> bool:
    """A ``mul`` whose every use absorbs it (the rule in the module docstring)."""
    if op.spec.name != "mul" or not _plain(op) or ".sat" in op.modifiers or op.guard_pred is not None:
        return False
    if len(op.results) != 1 or not op.results[0].uses:
        return False
    ftz = ".ftz" in op.modifiers
    sinkable = _sinkable(op)
    for use in op.results[0].uses:
        a = use.operation
        if (not isinstance(a, InstructionOp) or a.spec.name not in ("add", "sub")
                or (a.parent is not op.parent and not sinkable)
                or not _plain(a) or a.types != op.types or (".ftz" in a.modifiers) != ftz):
            return False
        reads = [k for k in (1, 2) for v in a.arg_operands(k) if v is op.results[0]]
        if len(reads) != 1:
            return False
    return True


def _constant(op: InstructionOp, k: int) -> bool:
    """Operand ``k`` of ``op`` is an immediate or a kernel parameter (``ld.param`` of one):
    what SASS reads from an instruction's constant operand, needing no register."""
    ast = op.operands_ast[k] if k < len(op.operands_ast) else None
    if isinstance(ast, tuple) and ast[0] == "imm":
        return True
    vals = op.arg_operands(k)
    if len(vals) != 1 or not isinstance(vals[0].owner, InstructionOp):
        return False
    ld = vals[0].owner
    if ld.spec.name != "ld" or ".param" not in ld.modifiers or ld.guard_pred is not None:
        return False
    addr = ld.operands_ast[1] if len(ld.operands_ast) > 1 else None
    func = op.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    return (isinstance(addr, tuple) and addr[0] == "addr" and isinstance(addr[1], tuple) and addr[1][0] == "sym"
            and func is not None and func.is_kernel and addr[1][1] in func.param_names)


def _sinkable(op: InstructionOp) -> bool:
    """``ptxas`` moves the ``mul`` into the blocks of its uses (and fuses it there) when one of
    its operands is a constant: the product then keeps no more registers live than before."""
    return _constant(op, 1) or _constant(op, 2)


def contractions(func: FuncOp) -> dict[InstructionOp, int]:
    """The ``add``/``sub`` instructions ``ptxas`` fuses with a ``mul``, and which textual
    operand (1 or 2) that ``mul`` feeds."""
    out: dict[InstructionOp, int] = {}
    for block in func.body.blocks:
        for op in block.ops:
            if not isinstance(op, InstructionOp) or op.spec.name not in ("add", "sub") or not _plain(op):
                continue
            for k in (1, 2):
                vals = op.arg_operands(k)
                if len(vals) == 1 and isinstance(vals[0].owner, InstructionOp) and _fusable_mul(vals[0].owner):
                    out[op] = k
                    break
    return out


def mark_contractions(module: ModuleOp) -> int:
    """Mark every fused ``add``/``sub`` of the module's SSA-form functions; the number marked."""
    n = 0
    for func in module.ops:
        if isinstance(func, FuncOp) and is_ssa(func):
            for op, k in contractions(func).items():
                op.attributes[CONTRACT_ATTR] = IntegerAttr(k, 32)
                n += 1
    return n


class ContractFMA(ModulePass):
    """Mark the ``add``/``sub`` instructions that ``ptxas`` fuses with a ``mul`` (``-fmad=true``)."""

    name = "ptx-contract-fma"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mark_contractions(op)
