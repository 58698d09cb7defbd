"""hypa: dynamic PTX instruction counts without a GPU (hybrid PTX analysis)."""

__version__ = "0.1.0"


def _command_name() -> str | None:
    """The hypa command this process runs (``hypa``, ``hypa-opt``), or None when hypa is imported
    as a library.  The console scripts name it in ``argv[0]``; ``python -m hypa.tools.X`` in
    ``sys.orig_argv`` (``argv[0]`` is still ``-m`` while runpy imports this package)."""
    import sys

    base = sys.argv[0].rsplit("/", 1)[-1] if sys.argv else ""
    if base.endswith(".exe"):
        base = base[:-4]
    if base in ("hypa", "hypa-opt"):
        return base
    orig = getattr(sys, "orig_argv", [])
    for i, a in enumerate(orig[:-1]):
        if a == "-m":
            return {"hypa.tools.hypa_cli": "hypa", "hypa.tools.hypa_opt": "hypa-opt"}.get(orig[i + 1])
    return None


def _interrupt_start_up(tool: str) -> None:
    """Ctrl-C while the command loads xDSL, numpy and LLVM (this package is the first of its
    modules Python imports): one line and exit status 130, as later in ``main``, not a
    traceback from inside whichever module was loading.  ``_signal`` (built in) rather than
    ``signal``: importing the latter builds its enums, a window of its own.  Each command's
    ``main`` puts Python's handler back once it can catch ``KeyboardInterrupt`` itself."""
    import _signal
    import os

    line = f"{tool}: interrupted\n".encode()

    def interrupted(signum, frame):
        os.write(2, line)
        os._exit(130)

    interrupted.hypa_start_up = True
    _signal.signal(_signal.SIGINT, interrupted)


def end_of_start_up() -> None:
    """Python's own SIGINT handler again (``KeyboardInterrupt``, which ``main`` catches), where
    the start-up one is installed; a program that imported hypa keeps whatever it set."""
    import _signal

    if getattr(_signal.getsignal(_signal.SIGINT), "hypa_start_up", False):
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)


_COMMAND = _command_name()
if _COMMAND is not None:
    _interrupt_start_up(_COMMAND)


def command() -> str | None:
    """The hypa command this process runs (``hypa``, ``hypa-opt``), or None (a library)."""
    return _COMMAND
