"""``EmulationOptions`` (runtime/emulator/options.py) is the one declaration of the emulation
options: a field declared there is on every command line and, when it changes the code, in
the program key that prepared and compiled programs are cached by -- with no other file
touched.  Options that would have no effect are errors, not ignored."""

from __future__ import annotations

import argparse
import dataclasses
import os

import pytest
from helpers import ROOT, call_main, run_hypa, run_hypa_opt

from hypa.ptxdialect import parse_ptx_file
from hypa.runtime.emulator import options as options_module
from hypa.runtime.emulator.emulator import Emulator
from hypa.runtime.emulator.launch import LaunchError
from hypa.runtime.emulator.options import EmulationOptions, OptionError, add_arguments, flag, from_arguments, option

SAXPY = os.path.join(ROOT, "examples", "saxpy.ptx")
LAUNCH = "--emulate=grid=1 block=32 args=32,2.0,x,y buffer.x=float32:32 buffer.y=float32:32"

#: EmulationOptions with two options no other file knows: one that changes the code, one
#: that only steers a run
Extended = dataclasses.make_dataclass(
    "Extended",
    [("warp_check", bool, option(True, "do not check warps (a test's option)", code=True)),
     ("trace_depth", int, option(0, "trace N levels (a test's option)", minimum=0, unit="levels", metavar="N"))],
    bases=(EmulationOptions,), frozen=True)


def test_a_new_field_is_a_flag_with_its_spelling_default_and_check():
    p = argparse.ArgumentParser(prog="tool")
    add_arguments(p, cls=Extended)
    text = p.format_help()
    assert "--no-warp-check" in text and "--trace-depth N" in text and "do not check warps" in text
    assert from_arguments(p.parse_args([]), cls=Extended) == Extended()
    got = from_arguments(p.parse_args(["--no-warp-check", "--trace-depth", "3", "--mode", "full"]), cls=Extended)
    assert (got.warp_check, got.trace_depth, got.mode) == (False, 3, "full")
    with pytest.raises(SystemExit):
        p.parse_args(["--trace-depth", "-1"])


def test_a_new_field_that_changes_the_code_is_in_the_key_and_the_program_key():
    assert ("warp_check", True) in Extended().key()
    assert "trace_depth" not in dict(Extended().key())  # steers a run only
    assert Extended(warp_check=False).key() != Extended().key()
    assert Extended(trace_depth=5).key() == Extended().key()
    module = parse_ptx_file(SAXPY)
    keys = {o: Emulator(module, options=o).program(None).key
            for o in (Extended(), Extended(warp_check=False), Extended(trace_depth=5))}
    assert keys[Extended()] != keys[Extended(warp_check=False)]
    assert keys[Extended()] == keys[Extended(trace_depth=5)]


@pytest.mark.parametrize("main, argv", [("hypa_cli", ["profile", "--help"]), ("hypa_cli", ["run", "--help"]),
                                        ("hypa_opt", ["--help"])])
def test_every_command_line_offers_a_field_declared_only_in_the_options(main, argv, capsys, monkeypatch):
    """The command lines read the fields when they build their parsers: a field added to the
    class is there without touching them."""
    import importlib

    monkeypatch.setattr(options_module, "EmulationOptions", Extended)
    code, out, _ = call_main(importlib.import_module(f"hypa.tools.{main}").main, argv, capsys, must_exit=True)
    assert code == 0
    for f in options_module.cli_fields(Extended):
        assert flag(f) in out, (flag(f), argv)
    assert "--no-warp-check" in out and "--trace-depth" in out


def test_existing_spellings_and_defaults():
    assert [flag(f) for f in options_module.cli_fields()] == [
        "--mode", "--exact-predicates", "--alias", "--memory-metrics", "--no-bounds-check", "--no-hoist-checks",
        "--no-initcheck", "--racecheck", "--no-racecheck-sample", "--no-fmad", "--reconvergence", "--schedule", "--strict", "--step-budget", "--stack-size"]
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert from_arguments(p.parse_args([])) == EmulationOptions()
    o = EmulationOptions()
    assert (o.mode, o.exact_predicates, o.step_budget, o.stack_size, o.bounds_check, o.reconvergence) == (
        "slice", None, 2_000_000_000, 1024, True, "yield")
    run = argparse.ArgumentParser()
    add_arguments(run, defaults=options_module.RUN_DEFAULTS)
    assert from_arguments(run.parse_args([])) == EmulationOptions(mode="full", step_budget=100_000_000_000,
                                                                  schedule="interleave")


def test_the_api_takes_options_or_field_names_and_rejects_unknown_ones():
    module = parse_ptx_file(SAXPY)
    assert Emulator(module, mode="full", strict=True).options == EmulationOptions(mode="full", strict=True)
    given = EmulationOptions(memory_metrics=True)
    assert Emulator(module, options=given, mode="full").options == EmulationOptions(memory_metrics=True, mode="full")
    with pytest.raises(TypeError, match=r"unknown emulation option bounds \(options: mode, exact_predicates"):
        Emulator(module, bounds=False)
    with pytest.raises(LaunchError, match=r"^the stack size must be a number of bytes per thread, not -4$"):
        Emulator(module, stack_size=-4)
    with pytest.raises(LaunchError, match=r"^mode must be one of slice, full, not 'fast'$"):
        Emulator(module, mode="fast")


def test_the_key_holds_the_options_as_they_act():
    """Full mode computes and checks everything: its code does not depend on the slice's
    options; an address trace needs the memory-metrics slots."""
    assert EmulationOptions(mode="full", bounds_check=False).key() == EmulationOptions(mode="full").key()
    assert EmulationOptions(mode="full", exact_predicates=True, alias="space").key() == EmulationOptions(mode="full").key()
    assert EmulationOptions(bounds_check=False).key() != EmulationOptions().key()
    assert EmulationOptions(address_trace=64).key() == EmulationOptions(memory_metrics=True).key()
    assert EmulationOptions(step_budget=5, stack_size=64, strict=True).key() == EmulationOptions().key()
    assert [name for name, _ in EmulationOptions().key()] == [
        "mode", "exact_predicates", "alias", "memory_metrics", "bounds_check", "hoist_checks", "initcheck", "racecheck",
        "racecheck_sample", "fmad", "reconvergence", "schedule"]
    # racecheck, like initcheck, needs every access seen: not in slice mode without bounds checks
    assert EmulationOptions(racecheck=True).key() != EmulationOptions().key()
    assert EmulationOptions(racecheck=True, bounds_check=False).key() == EmulationOptions(bounds_check=False).key()
    # racecheck's sample (on by default) is part of --racecheck, and off where racecheck would be
    assert EmulationOptions(racecheck_sample=False).key() != EmulationOptions().key()
    assert EmulationOptions(racecheck=True).key() == EmulationOptions(racecheck=True, racecheck_sample=False).key()
    assert EmulationOptions(bounds_check=False).key() == EmulationOptions(bounds_check=False,
                                                                         racecheck_sample=False).key()


def test_options_that_would_have_no_effect_are_errors():
    p = argparse.ArgumentParser()
    add_arguments(p)
    for argv, message in [(["--mode", "full", "--no-bounds-check"], "--no-bounds-check has no effect with --mode full"),
                          (["--no-bounds-check", "--no-hoist-checks"],
                           "--no-hoist-checks has no effect with --no-bounds-check"),
                          (["--no-initcheck", "--strict"], "--strict has no effect with --no-initcheck"),
                          (["--no-bounds-check", "--racecheck"], "--racecheck has no effect with --no-bounds-check"),
                          (["--racecheck", "--no-racecheck-sample"],
                           "--no-racecheck-sample has no effect with --racecheck"),
                          (["--mode", "full", "--alias", "space"], "--alias has no effect with --mode full"),
                          (["--mode", "full", "--exact-predicates"], "--exact-predicates has no effect with --mode full")]:
        with pytest.raises(OptionError, match=f"^{message}$"):
            from_arguments(p.parse_args(argv))
    r = run_hypa("profile", SAXPY, "--mode", "full", "--no-bounds-check")
    assert r.returncode == 1 and r.stderr == "hypa: error: --no-bounds-check has no effect with --mode full\n"
    r = run_hypa("run", "--no-bounds-check", "--", "true")  # hypa run's default mode is full
    assert r.returncode == 2 and r.stderr == "hypa run: error: --no-bounds-check has no effect with --mode full\n"
    r = run_hypa_opt(SAXPY, "--strict")  # nothing is emulated
    assert r.returncode == 1 and r.stderr == "hypa-opt: error: --strict has no effect without --emulate or --launch\n"
    r = run_hypa_opt(SAXPY, "-t", "llvm", "--step-budget", "5")
    assert r.returncode == 1 and r.stderr == ("hypa-opt: error: --step-budget has no effect without --emulate or "
                                              "--launch (-t llvm takes the options that change the code)\n")


def test_llvm_target_takes_every_option_that_changes_the_code():
    """-t llvm lowers what the emulator would run: --no-bounds-check and the rest act on it
    (before, only --mode, --kernel, --exact-predicates and --memory-metrics did)."""
    plain = run_hypa_opt(SAXPY, "-t", "llvm")
    unchecked = run_hypa_opt(SAXPY, "-t", "llvm", "--no-bounds-check")
    spelled = run_hypa_opt(SAXPY, "-t", "llvm{bounds-check=false}")
    assert plain.returncode == unchecked.returncode == spelled.returncode == 0
    assert unchecked.stdout == spelled.stdout != plain.stdout
    assert len(unchecked.stdout) < len(plain.stdout)  # the address checks outside the slice are gone


def test_option_errors_use_the_pipeline_spelling():
    r = run_hypa_opt(SAXPY, "-p", "slice-branches{bogus=1}")
    assert r.returncode == 1
    assert r.stderr == ('hypa-opt: error: Provided arguments ["bogus"] not found in expected arguments '
                        '["exact-predicates", "keep", "alias", "dot-file", "memory-addresses"]\n')


def test_hypa_run_passes_every_option_to_the_program(monkeypatch):
    """hypa run hands the options to the program's process as JSON (HYPA_RUN): all of them
    arrive, also those hypa run had no flag for before (--exact-predicates, --stack-size ...)."""
    import json

    from hypa.cudart.host import RunOptions

    p = argparse.ArgumentParser()
    add_arguments(p, defaults={"mode": "full"})
    given = from_arguments(p.parse_args(["--mode", "slice", "--exact-predicates", "--stack-size", "4096",
                                       "--reconvergence", "ipdom"]))
    assert (given.exact_predicates, given.stack_size, given.reconvergence) == (True, 4096, "ipdom")
    monkeypatch.setenv("HYPA_RUN", json.dumps({"emulation": dataclasses.asdict(given), "arch": "sm_80"}))
    got = RunOptions.from_environment()
    assert got.emulation == given and got.arch == "sm_80"
    assert RunOptions().emulation == EmulationOptions(mode="full", step_budget=options_module.RUN_STEP_BUDGET,
                                                      schedule="interleave")
