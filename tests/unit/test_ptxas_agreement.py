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


#: lit tests of names and operand shapes hypa rejects as ptxas does (symbols.check_function and
#: the module/parameter checks of the parser); ptxas must reject each too
PTXAS_REJECTS = ["undeclared_symbol", "symbol_declared_later", "label_as_operand", "symbol_not_register",
                 "dotted_operand", "result_register_required", "immediate_address", "duplicate_parameter",
                 "duplicate_variable", "call_wrong_arity", "missing_target", "dotted_function_name",
                 "pragma_not_string", "cvta_register_width", "duplicate_call_param", "header_repeated",
                 "param_at_module_scope", "alignment_not_power_of_two", "initializer_missing_comma",
                 "initializer_dotted_name", "two_state_spaces", "float_literal_integer_operand",
                 "special_register_width", "shfl_lane_width", "mixed_integer_float_types", "barrier_float_id",
                 "duplicate_module_variable", "target_in_body_bad", "symbol_as_store_data"]


@requires("ptxas")
def test_ptxas_rejects_what_the_name_checks_reject(tmp_path):
    import subprocess

    from helpers import ROOT

    for name in PTXAS_REJECTS:
        src = ROOT / "tests" / "filecheck" / "Frontend" / "errors" / f"{name}.ptx"
        p = subprocess.run(["ptxas", "-arch=sm_90", "-o", str(tmp_path / "out.cubin"), str(src)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode != 0, f"ptxas accepts {name}.ptx"


@requires("ptxas")
def test_fuzzed_ptx_agrees_with_ptxas():
    """A short deterministic slice of the mutation fuzzer's PTX cases, assembled by ptxas too:
    hypa and ptxas accept and reject the same ones."""
    fuzz = load_script("benchmarks/fuzz.py")
    cases: list = []
    fuzz.campaign(["ptx"], 400, None, 11, quiet=True, ptx_cases=cases)
    out = fuzz.compare_with_ptxas(cases)
    assert out["accepted-but-invalid"] == {} and out["rejected-but-valid"] == {}, out
    assert out["both reject"] + out["both accept"] == 400 and out["both accept"] > 50
