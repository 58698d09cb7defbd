"""Fixtures shared by hypa's unit tests (``tests/unit``); the plain helpers they use are in
``tests/unit/helpers.py``."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "unit"))

from helpers import KernelRuns, call_main  # noqa: E402


@pytest.fixture
def hypa_cli(capsys):
    """``hypa`` in this process: ``hypa_cli("profile", ...)`` -> (exit status, stdout, stderr);
    the command always ends with ``SystemExit``."""
    from hypa.tools.hypa_cli import main

    return lambda *argv: call_main(main, argv, capsys, must_exit=True)


@pytest.fixture
def hypa_opt_cli(capsys):
    """``hypa-opt`` in this process: ``hypa_opt_cli(*argv)`` -> (exit status, stdout, stderr)."""
    from hypa.tools.hypa_opt import main

    return lambda *argv: call_main(main, argv, capsys)


@pytest.fixture(scope="session")
def kernel_runs() -> KernelRuns:
    """The launches of ``tests/kernels/launches`` emulated once per mode for the whole session
    (``test_kernels_full`` checks their outputs and counts, ``test_instrument`` compares the
    instrumented kernels' counters with them)."""
    return KernelRuns()
