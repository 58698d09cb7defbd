"""Operand types as ptxas checks them: on a sample of the cases of
``benchmarks/ptxas_agreement.py`` (one operand replaced by a register of every other type),
hypa accepts exactly what ptxas accepts."""

from __future__ import annotations

from helpers import load_script, requires


@requires("ptxas")
def test_hypa_rejects_no_operand_types_ptxas_accepts(capsys):
    out = load_script("benchmarks/ptxas_agreement.py").check_all(every=9)
    assert out["rejected-but-valid"] == 0 and out["accepted-but-invalid"] == 0, capsys.readouterr().out
    assert out["agree"] > 100
