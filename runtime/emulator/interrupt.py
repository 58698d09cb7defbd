"""Stopping a launch's native code on SIGINT or SIGTERM.

Python runs its signal handlers between bytecodes, never while native code runs: a Ctrl-C
during a launch that spins for minutes would wait for the launch.  The generated code
checks the launch's step budget (``abi.CTX_BUDGET``, read afresh at every loop head and
every CTA start), so a signal handler written in native code (a few lines of LLVM IR,
compiled once per process) sets the budget word of every running launch to 0: each stops
at its next loop head.  The handler is installed only while native launch code runs, and
only for a signal that has a handler already (Python's, or a CUDA program's own under
``hypa run``): a signal left to its default action kills the process at once anyway, and
an ignored one stays ignored.  When the launch returns, the previous handler comes back,
the signal is raised again for it (Python's raises ``KeyboardInterrupt``; under ``hypa run``,
whose thread blocks signals, a thread of the program takes it), and the launch raises
``KeyboardInterrupt`` itself where that did not (a thread other than Python's main one).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .. import abi

#: the signals that stop launches
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: launches running at once (threads of one process) that a signal can stop
SLOTS = 64

#: word 0: the last signal caught (0: none); words 1..SLOTS: the addresses of the budget
#: words of the running launches (0: a free slot).  The native handler reads and writes it.
_table = (ctypes.c_int64 * (SLOTS + 1))()
_lock = threading.Lock()
_depth = 0  # guards in flight (threads of this process)
_saved: dict[int, "_SigAction"] = {}
_handler: int | None = None  # the native handler's address (0: none can be made here)


class _SigAction(ctypes.Structure):
    """glibc's ``struct sigaction`` (x86-64 and AArch64 Linux)."""

    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_uint64 * 16), ("flags", ctypes.c_int),
                ("restorer", ctypes.c_void_p)]


_SA_RESTART = 0x10000000
_SA_ONSTACK = 0x08000000
_libc = None


def _handler_ir(table: int) -> str:
    """``void hypa_stop_launches(i32 sig)``: record the signal, zero every registered budget
    word (atomic stores only: async-signal-safe)."""
    return f"""
define void @hypa_stop_launches(i32 %sig) {{
entry:
  %t = inttoptr i64 {table} to ptr
  %s = sext i32 %sig to i64
  store atomic volatile i64 %s, ptr %t monotonic, align 8
  br label %loop
loop:
  %i = phi i64 [1, %entry], [%n, %next]
  %p = getelementptr i64, ptr %t, i64 %i
  %a = load atomic volatile i64, ptr %p monotonic, align 8
  %free = icmp eq i64 %a, 0
  br i1 %free, label %next, label %stop
stop:
  %q = inttoptr i64 %a to ptr
  store atomic volatile i64 0, ptr %q monotonic, align 8
  br label %next
next:
  %n = add i64 %i, 1
  %more = icmp ule i64 %n, {SLOTS}
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


def _native_handler() -> int:
    """The handler's address, compiled on first use (0 where signals cannot be caught this
    way: not Linux)."""
    global _handler, _libc
    if _handler is None:
        _handler = 0
        if sys.platform.startswith("linux"):
            from .jit import load_private

            _libc = ctypes.CDLL(None, use_errno=True)
            _handler = load_private(_handler_ir(ctypes.addressof(_table)), "hypa_stop_launches")
    return _handler


def _install() -> None:
    """Put the native handler in front of each signal that has a handler now."""
    handler = _native_handler()
    if not handler:
        return
    for sig in SIGNALS:
        old = _SigAction()
        if _libc.sigaction(int(sig), None, ctypes.byref(old)) != 0 or (old.handler or 0) in (0, 1):
            continue  # SIG_DFL kills at once, SIG_IGN ignores: nothing to do
        new = _SigAction()
        new.handler = handler
        new.flags = _SA_RESTART | _SA_ONSTACK
        if _libc.sigaction(int(sig), ctypes.byref(new), None) == 0:
            _saved[int(sig)] = old


def _restore() -> None:
    for sig, old in _saved.items():
        _libc.sigaction(sig, ctypes.byref(old), None)
    _saved.clear()


@contextmanager
def stoppable(ctx: np.ndarray) -> Iterator[None]:
    """Run the native code of the launch whose context is ``ctx`` inside: a SIGINT or
    SIGTERM stops it at its next loop head, then raises ``KeyboardInterrupt`` (after the
    signal's own handler has run)."""
    global _depth
    budget = int(ctx[abi.CTX_BUDGET])
    with _lock:
        slot = next((k for k in range(1, SLOTS + 1) if not _table[k]), None)
        if slot is not None:
            _table[slot] = ctx.ctypes.data + 8 * abi.CTX_BUDGET
            if _depth == 0:
                _install()
            _depth += 1
    if slot is None:  # more launches at once than slots: this one runs as before
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _table[slot] = 0
            _depth -= 1
            caught = 0
            if _depth == 0:
                _restore()
                caught, _table[0] = _table[0], 0
        stopped = budget != 0 and int(ctx[abi.CTX_BUDGET]) == 0
        ctx[abi.CTX_BUDGET] = budget
        if caught:  # to its own handler now: Python's raises KeyboardInterrupt here
            if caught in signal.pthread_sigmask(signal.SIG_BLOCK, []):
                os.kill(os.getpid(), caught)  # this thread blocks it (hypa run's thread): another takes it
            else:
                signal.raise_signal(caught)
        if stopped:
            raise KeyboardInterrupt
