"""The emulation options: declared once, here.

``EmulationOptions`` is what an emulation is run with (``Emulator(module, options=...)``,
``prepare(module, kernel, options)``, ``ProfileOptions.emulation``, ``hypa run``'s
``RunOptions.emulation``).  Each field carries, as metadata (``option``), its one-line help,
whether it changes the prepared and compiled code (``code``: part of ``key()``), and how it
is checked; the command lines take their flags from it (``add_arguments``, ``from_arguments``):
a ``bool`` defaulting to True is ``--no-NAME``, any other field ``--NAME``, in kebab case.

Adding an option is adding a field here, and reading it where it has its effect
(docs/design.md, "Emulation options").  Importing this module is cheap (no numpy, no
emulator): command lines import it to build their parsers.
"""

from __future__ import annotations

import argparse
import dataclasses
import operator
from dataclasses import dataclass, field
from typing import Any

from hypa.ptxdialect.diagnostics import HypaError

from ..abi import DEFAULT_STACK_SIZE

#: warp-instructions per launch (a runaway loop stops)
DEFAULT_STEP_BUDGET = 2_000_000_000
#: ... under ``hypa run``: a real program's launches are larger than a spec's; a runaway loop
#: still stops, after some minutes
RUN_STEP_BUDGET = 100_000_000_000
#: ``hypa run``'s own defaults: a program sees its real results (full mode), a real program's
#: step budget, and warps that advance together as on the GPU (docs/guide.md, "hypa run")
RUN_DEFAULTS = {"mode": "full", "step_budget": RUN_STEP_BUDGET, "schedule": "interleave"}


class OptionError(HypaError, ValueError):
    """Options given on a command line that contradict each other: one would have no effect."""


def option(default: Any, help: str, *, code: bool = False, cli: bool = True, choices: tuple = (),
           minimum: int | None = None, unit: str = "", metavar: str | None = None,
           needs: tuple[tuple[str, Any], ...] = (), also: str = "") -> Any:
    """A field of ``EmulationOptions``: its default and what the rest of hypa needs to know.

    ``help``: the command lines' help (``%(default)s`` is the tool's default).  ``code``: the
    option changes the prepared program or its compiled code, so it is part of ``key()``.
    ``cli``: False for options set by hypa itself, never on a command line.  ``choices``,
    ``minimum`` (with the ``unit`` an error message names) and ``metavar``: how values are
    checked and shown.  ``needs``: (field, value) pairs without which a value other than the
    default has no effect (a command line that gives it is an error: ``from_arguments``).
    ``also``: a bool's second spelling as another tool spells it, taking ``true``/``false``
    (``--fmad=false``, as nvcc takes it)."""
    return field(default=default, metadata={"help": help, "code": code, "cli": cli, "choices": tuple(choices),
                                            "minimum": minimum, "unit": unit, "metavar": metavar,
                                            "needs": tuple(needs), "also": also})


@dataclass(frozen=True)
class EmulationOptions:
    """How kernels are emulated: one frozen value, hashable, picklable (it travels to workers)."""

    mode: str = option("slice", "emulate only what control flow needs (slice: the memory a kernel writes is not "
                       "computed) or every instruction (full); default %(default)s", code=True,
                       choices=("slice", "full"))
    exact_predicates: bool | None = option(
        None, "also slice guard predicates so predicated-off counts are exact (default: as a slice recorded in the "
              "IR says, else off)", code=True, needs=(("mode", "slice"),))
    alias: str = option("param", "slice mode: stores through distinct pointer parameters are taken not to alias "
                        "(param: a launch that binds one buffer to two of them is sliced again) or every store "
                        "to the state space may (space); default %(default)s", code=True,
                        choices=("param", "space"), needs=(("mode", "slice"),))
    memory_metrics: bool = option(False, "also slice memory addresses: sectors/lines per request (global), bank "
                                         "conflicts (shared)", code=True)
    bounds_check: bool = option(True, "slice mode: do not compute and bounds-check the addresses of accesses outside "
                                      "the slice (faster; an out-of-bounds or misaligned access there then goes unreported)", code=True,
                                needs=(("mode", "slice"),))
    hoist_checks: bool = option(True, "slice mode: check the accesses of a loop one by one, not its whole range once "
                                      "per entry (the same results, slower; for comparisons)", code=True,
                                needs=(("mode", "slice"), ("bounds_check", True)))
    initcheck: bool = option(True, "do not track which shared/local bytes were written (initcheck: a read of a byte "
                                   "no thread wrote is a warning; off in slice mode with --no-bounds-check)", code=True)
    racecheck: bool = option(False, "report hazards between threads of a CTA on the same shared-memory bytes with no "
                                    "barrier between them (write-after-write, write-after-read, read-after-write), as "
                                    "compute-sanitizer's racecheck does; a warning", code=True,
                             needs=(("bounds_check", True),))
    racecheck_sample: bool = option(True, "do not check the first CTA of each kernel's first launch for shared-memory "
                                          "hazards (racecheck's sample: a warning, never an error; costs little, "
                                          "nothing for kernels that write no shared memory; --racecheck checks every "
                                          "CTA of every launch)", code=True, needs=(("racecheck", False),))
    fmad: bool = option(True, "compute every add/sub as its own instruction, as ptxas does under nvcc -fmad=false "
                              "(default: the adds ptxas fuses with a mul compute as that fma, passes/contract.py)",
                        code=True, also="--fmad")
    reconvergence: str = option(
        "yield", "where divergent lanes of a warp reconverge (warp-level counts only): at the immediate "
                 "post-dominator, except that lanes waiting there go on alone when others run a spin loop (ptxas's "
                 "YIELD, as on the GPU; the default), or always at the immediate post-dominator",
        code=True, choices=("yield", "ipdom"))
    schedule: str = option(
        "warp", "how the warps of a CTA take turns: each runs until it exits or waits at a barrier (warp: the "
                "fastest; a race between warps shows in the results) or round-robin, a turn ending before each write "
                "to shared or global memory and at loop heads, as the warps of a CTA advance together on the GPU "
                "(interleave: a race the GPU never loses resolves as there); race-free kernels count the same; "
                "default %(default)s", code=True, choices=("warp", "interleave"))
    strict: bool = option(False, "a read of shared/local memory never written (initcheck) or a shared-memory hazard "
                                 "(--racecheck) is an error, not a warning",
                          needs=(("initcheck", True),))
    step_budget: int = option(DEFAULT_STEP_BUDGET, "stop a launch after N warp-instructions (runaway loops; default "
                              "%(default)s)", minimum=1, unit="warp-instructions", metavar="N")
    stack_size: int = option(DEFAULT_STACK_SIZE, "call stack per thread for recursion and alloca (default %(default)s, "
                             "CUDA's cudaLimitStackSize)", minimum=0, unit="bytes per thread", metavar="BYTES")
    #: records of the address trace kept per launch, for the timing estimate's cache model
    #: (runtime/models/cache_model.py); a trace needs the memory-metrics slots
    address_trace: int = option(0, "address-trace records kept per launch", cli=False, minimum=0, unit="records")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # numpy integers and the like: plain ints
            v = getattr(self, f.name)
            if f.type in ("int", int) and not isinstance(v, bool):
                try:
                    object.__setattr__(self, f.name, operator.index(v))
                except TypeError:
                    pass  # reported by problem()

    @classmethod
    def of(cls, options: "EmulationOptions | None" = None, **changes: Any) -> "EmulationOptions":
        """``options`` (default: the defaults) with ``changes`` by field name; an unknown name is
        a ``TypeError`` naming the options there are."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise TypeError(f"unknown emulation option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                            f"(options: {', '.join(f.name for f in dataclasses.fields(cls))})")
        base = options if options is not None else cls()
        return dataclasses.replace(base, **changes) if changes else base

    def problem(self) -> str | None:
        """What is wrong with these options (the first field whose value its metadata rejects),
        or None.  The layer that uses them raises it as its own error."""
        for f in dataclasses.fields(self):
            v, m = getattr(self, f.name), f.metadata
            words = f.name.replace("_", " ")
            if m.get("choices") and v not in m["choices"]:
                return f"{words} must be one of {', '.join(m['choices'])}, not {v!r}"
            if m.get("minimum") is not None and (isinstance(v, bool) or not isinstance(v, int) or v < m["minimum"]):
                what = "a positive number" if m["minimum"] == 1 else "a number"
                return f"the {words} must be {what} of {m['unit']}, not {v!r}"
        return None

    def effective(self) -> "EmulationOptions":
        """These options as they act: an address trace needs the memory-metrics slots; the
        slice's options (its predicates, aliasing, bounds checks outside it) mean nothing in
        full mode, which computes and checks everything; hoisting needs bounds checks;
        initcheck and racecheck need every access seen (full mode, or slice mode with bounds checks);
        racecheck's sample is part of the full racecheck."""
        sliced = self.mode == "slice"
        memory_metrics = bool(self.memory_metrics) or self.address_trace > 0
        bounds_check = bool(self.bounds_check) and sliced
        return dataclasses.replace(self, memory_metrics=memory_metrics, bounds_check=bounds_check,
                                   exact_predicates=self.exact_predicates if sliced else None,
                                   alias=self.alias if sliced else "param",
                                   hoist_checks=bool(self.hoist_checks) and bounds_check,
                                   initcheck=bool(self.initcheck) and (not sliced or bounds_check),
                                   racecheck=bool(self.racecheck) and (not sliced or bounds_check),
                                   racecheck_sample=bool(self.racecheck_sample) and not self.racecheck
                                   and (not sliced or bounds_check))

    def key(self) -> tuple[tuple[str, Any], ...]:
        """The options that change the prepared program and its compiled code (``code`` fields),
        as they act (``effective``): equal keys, equal code for the same kernel.  Options that
        only steer a run (step budget, stack size, strict) are not in it."""
        e = self.effective()
        return tuple((f.name, getattr(e, f.name)) for f in dataclasses.fields(e) if f.metadata.get("code"))


def flag(f: dataclasses.Field) -> str:
    """The command-line spelling of a field: ``--no-bounds-check`` for a bool that defaults to
    True, else ``--exact-predicates``, ``--step-budget`` ..."""
    name = f.name.replace("_", "-")
    return f"--no-{name}" if f.default is True else f"--{name}"


def cli_fields(cls: type = None) -> list[dataclasses.Field]:  # type: ignore[assignment]
    """The fields of ``cls`` (default ``EmulationOptions``) a command line offers."""
    return [f for f in dataclasses.fields(cls or EmulationOptions) if f.metadata.get("cli", True)]


def _at_least(f: dataclasses.Field):
    """argparse ``type=`` of an integer option with a minimum: the error names the flag."""
    minimum, unit = f.metadata["minimum"], f.metadata["unit"]

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or v < minimum:
            what = "a positive number" if minimum == 1 else "a number"
            raise argparse.ArgumentTypeError(f"must be {what} of {unit}, not {text!r}")
        return v

    parse.__name__ = f.name  # argparse names the type in some messages
    return parse


def add_arguments(parser, defaults: dict[str, Any] | None = None, cls: type = None) -> None:  # type: ignore[assignment]
    """Add the options of ``cls`` (default ``EmulationOptions``) to an argparse parser or
    group; ``defaults``: a tool's own defaults by field name (``hypa run``: full mode)."""
    defaults = defaults or {}
    for f in cli_fields(cls):
        m = f.metadata
        default = defaults.get(f.name, f.default)
        kw: dict[str, Any] = {"dest": f.name, "default": default, "help": m["help"]}
        if f.default is True:
            kw["action"] = "store_false"
        elif f.default is False or (f.default is None and f.type in ("bool | None", bool)):
            kw["action"] = "store_true"
        else:
            if m["choices"]:
                kw["choices"] = m["choices"]
            elif m["minimum"] is not None:
                kw["type"] = _at_least(f)
            kw["metavar"] = m["metavar"]
        parser.add_argument(flag(f), **kw)
        if m.get("also"):
            parser.add_argument(m["also"], dest=f.name, type=_bool_word, metavar="{true,false}",
                                help=f"nvcc's spelling: {m['also']}=false is {flag(f)}")


def _bool_word(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def from_arguments(args: argparse.Namespace, cls: type = None, **changes: Any) -> EmulationOptions:  # type: ignore[assignment]
    """The options parsed by a parser ``add_arguments`` built, with ``changes`` by field name.
    An option given where another makes it ineffective (``needs``) is an ``OptionError``."""
    cls = cls or EmulationOptions
    given = {f.name: getattr(args, f.name) for f in cli_fields(cls) if hasattr(args, f.name)}
    opts = cls.of(None, **{**given, **changes})
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    for f in cli_fields(cls):
        if getattr(opts, f.name) == f.default:
            continue
        for name, wanted in f.metadata.get("needs", ()):
            value = getattr(opts, name)
            if value != wanted:
                other = flag(by_name[name]) + ("" if isinstance(value, bool) else f" {value}")
                raise OptionError(f"{flag(f)} has no effect with {other}")
    return opts


def given_flags(args: argparse.Namespace, names: list[str], cls: type = None) -> list[str]:  # type: ignore[assignment]
    """The flags among the fields ``names`` whose parsed value is not the default: for "this
    option has no effect here" errors."""
    return [flag(f) for f in cli_fields(cls) if f.name in names and getattr(args, f.name, f.default) != f.default]
