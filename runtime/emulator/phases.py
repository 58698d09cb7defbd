"""Where a run's time goes: wall-clock seconds per phase, like ``mlir-opt --mlir-timing``.

A whole workload costs far more around the emulation (parsing, preparing each
kernel, compiling it) than in it, so ``hypa profile --timing`` reports each
phase.  Phases nest: time spent in an inner phase is charged to it, not to the
phase around it, so the figures add up to the time measured.

    with phase("parse"):
        ...
    print(report())
"""

from __future__ import annotations

import time
from contextlib import contextmanager

#: the phases in the order they happen in a run (others are listed after these)
ORDER = ("start-up", "input", "parse", "prepare", "launches", "lower", "compile", "emulate", "workers", "estimate", "report")

_seconds: dict[str, float] = {}
_counts: dict[str, int] = {}
_stack: list[list] = []  # [name, start of the current slice]
_work: dict[str, int] = {}  # counts of work done, by what was done


@contextmanager
def phase(name: str):
    """Charge the time inside the block to ``name`` (minus that of nested phases)."""
    now = time.perf_counter()
    if _stack:
        outer = _stack[-1]
        _seconds[outer[0]] = _seconds.get(outer[0], 0.0) + now - outer[1]
    entry = [name, now]
    _stack.append(entry)
    _counts[name] = _counts.get(name, 0) + 1
    try:
        yield
    finally:
        end = time.perf_counter()
        _seconds[name] = _seconds.get(name, 0.0) + end - entry[1]
        _stack.pop()
        if _stack:
            _stack[-1][1] = end


def add(name: str, seconds: float, count: int = 1) -> None:
    """Charge seconds measured elsewhere (e.g. in worker processes) to ``name``."""
    _seconds[name] = _seconds.get(name, 0.0) + seconds
    _counts[name] = _counts.get(name, 0) + count


def count(what: str, n: int = 1) -> None:
    """Count work done (operations copied, kernels compiled ...): the figures that show
    whether a run's cost grows with what it does, whatever the machine's speed."""
    _work[what] = _work.get(what, 0) + n


def work() -> dict[str, int]:
    return dict(_work)


def snapshot() -> dict[str, float]:
    """Seconds per phase so far, in run order."""
    names = [n for n in ORDER if n in _seconds] + sorted(n for n in _seconds if n not in ORDER)
    return {n: _seconds[n] for n in names}


def reset() -> None:
    _seconds.clear()
    _counts.clear()
    _stack.clear()
    _work.clear()


def report(total: float | None = None, title: str = "hypa timing report") -> str:
    """The phases as a table: seconds, share of ``total`` and how often each was entered."""
    snap = snapshot()
    total = total if total is not None else sum(snap.values())
    lines = [f"===-- {title} --===", f"  total wall time: {total:.4f} s", "",
             f"  {'phase':<10} {'seconds':>9} {'share':>7} {'count':>7}"]
    for n, s in snap.items():
        share = 100.0 * s / total if total > 0 else 0.0
        lines.append(f"  {n:<10} {s:>9.4f} {share:>6.1f}% {_counts.get(n, 0):>7}")
    rest = total - sum(snap.values())
    if rest > 0.0005:
        lines.append(f"  {'other':<10} {rest:>9.4f} {100.0 * rest / total:>6.1f}%")
    if _work:
        lines += ["", "  work done:"] + [f"  {n:>12}  {what}" for what, n in sorted(_work.items())]
    return "\n".join(lines)
