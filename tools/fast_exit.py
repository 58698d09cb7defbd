"""Leave a command-line process without the interpreter's teardown.

After a run, tearing the interpreter down (clearing every module, collecting xDSL's
classes, the dialect's and the IR's objects) took about 80 ms of a 0.5 s ``hypa profile``.
Nothing of it is observable: the output is flushed and the ``atexit`` functions run here,
then the process ends with the status ``sys.exit`` would give.  Where something could
still need the teardown (a non-daemon thread, a child process of ``multiprocessing``, a
stream that cannot be flushed) the ordinary exit happens instead."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives (printing a message as it does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def exit_now(e: SystemExit) -> NoReturn:
    """End the process as ``raise e`` would at the top level, without the teardown."""
    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        raise e
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.active_children():
        raise e
    try:
        status = _status(e.code)
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # e.g. a closed pipe: let Python report it as it always does
        raise e from None
    os._exit(status)


def interrupted(tool: str) -> NoReturn:
    """Ctrl-C (or SIGINT) stopped the command: one line, exit status 130.  Further SIGINTs are
    ignored from here on -- a second one while the first is being reported (the signal a
    stopped launch raises again for Python's handler, or a key held down) would otherwise end
    the process by the signal, without the status a script checks."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say there
        pass
    os.write(2, f"{tool}: interrupted\n".encode())
    os._exit(130)
