"""The errors that end one launch of a batch (the others go on): each says what is wrong
with the input, the launch or the kernel, in words a user can act on."""

from __future__ import annotations

from hypa.ptxdialect.diagnostics import PTXError

from ..emulator.lowering import LoweringError
from ..emulator.emulator import EmulationError
from .inputs import InputError
from ..emulator.launch import LaunchError
from ..emulator.program import ProgramError

#: errors that end one launch (the others go on)
LAUNCH_ERRORS = (LaunchError, EmulationError, ProgramError, InputError, PTXError, LoweringError)
