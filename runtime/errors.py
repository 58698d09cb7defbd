"""The errors that end one launch of a batch (the others go on): each says what is wrong
with the input, the launch or the kernel, in words a user can act on."""

from __future__ import annotations

from hypa.ptxdialect.diagnostics import PTXError

from .lowering import LoweringError
from .emulator import EmulationError
from .inputs import InputError
from .launch import LaunchError
from .program import ProgramError

#: errors that end one launch (the others go on)
LAUNCH_ERRORS = (LaunchError, EmulationError, ProgramError, InputError, PTXError, LoweringError)
