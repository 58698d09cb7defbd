"""``--timeout SECONDS``: a wall-clock limit for a whole command.

The step budget bounds the work of each launch; this bounds the time of everything (a
huge module to prepare, a program that launches forever, a machine under load).  A
timer thread ends the process, whatever it is doing (native emulator code included),
after writing one line; forked workers are stopped first.  The exit status is 124, as
GNU ``timeout`` gives."""

from __future__ import annotations

import os
import sys
import threading

EXIT_TIMEOUT = 124


def positive_seconds(text: str) -> float:
    """argparse ``type=`` for ``--timeout``."""
    import argparse
    import math

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"the timeout must be a positive number of seconds, not {text}")
    return v


def arm(seconds: float | None, command: str) -> threading.Timer | None:
    """End the process after ``seconds`` (None: no limit)."""
    if not seconds:
        return None

    def expire() -> None:
        try:
            executor = sys.modules.get("hypa.runtime.emulator.executor")
            if executor is not None:
                executor.kill_workers()
            sys.stderr.write(f"{command}: error: stopped after {seconds:g} s (--timeout)\n")
            sys.stderr.flush()
        finally:
            os._exit(EXIT_TIMEOUT)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer
