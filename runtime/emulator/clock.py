"""The emulated GPU's clock: what ``%clock``, ``%clock64`` and ``%globaltimer`` read.

A kernel that waits on the clock (cuda-samples' ``clock_block``: spin until ``clock64() -
start >= N``) must see it advance, or it never ends.  The model: the emulated device issues
one warp-instruction per clock (``issue_per_cycle`` of the architecture file, one scheduler),
so a reading is the device's cycles when the launch started plus the warp-instructions the
running context has executed so far (all warps of its CTAs, as an SM's clock counts cycles
whichever warp issues).  It is monotonic for every warp and across launches: after each
launch the device clock advances by the launch's warp-instructions.  ``%globaltimer`` is the
same count in nanoseconds at the architecture's clock rate (``cudaDeviceProp.clockRate``).

The step count of a clock wait is therefore exact: a loop of ``k`` instructions spinning
until the clock advanced ``N`` cycles runs ``ceil(N / k)`` iterations.
"""

from __future__ import annotations

import threading

from . import arch_file

#: the architecture the emulated device is (cudart/properties.py reports an H100 SXM5)
ARCH_FILE = arch_file.ARCH_DIR / "sm_90.toml"


def _core() -> dict:
    return arch_file.read(str(ARCH_FILE))["core"]


def clock_mhz() -> int:
    """The SM clock in MHz (``[core] clock_mhz``)."""
    return int(_core()["clock_mhz"])


def clock_rate_khz() -> int:
    """``cudaDeviceProp.clockRate`` (kHz)."""
    return 1000 * clock_mhz()


def cycles_per_warp_instruction() -> int:
    """Clocks a warp-instruction takes in the model: one issue slot (``[core] issue_per_cycle``)."""
    issue = _core()["issue_per_cycle"]
    if issue != 1:  # the model counts whole cycles; an arch issuing faster per scheduler needs a new one
        raise ValueError(f"{ARCH_FILE.name}: issue_per_cycle = {issue}, the clock model needs 1")
    return 1


def nanoseconds(cycles: int) -> int:
    """``%globaltimer`` at ``cycles`` (the generated code computes the same)."""
    return cycles * 1000 // clock_mhz()


_lock = threading.Lock()
_cycles = 0  # the device's clock: every launch of this process so far


def now() -> int:
    """The device's cycles when the next launch starts."""
    return _cycles


def advance(warp_instructions: int) -> None:
    """A launch ran ``warp_instructions``: the clock moves past every reading it gave."""
    global _cycles
    with _lock:
        _cycles += max(0, int(warp_instructions)) * cycles_per_warp_instruction()
