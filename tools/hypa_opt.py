"""``hypa-opt``: xDSL's optimizer driver with a PTX front end and a PTX target.

    hypa-opt kernel.ptx                 # print the IR (register form)
    hypa-opt kernel.ptx -t ptx          # print PTX again
    hypa-opt -p ptx-to-ssa kernel.ptx   # run a pipeline
    cat kernel.ptx | hypa-opt -t ptx    # stdin: PTX is recognised by its leading directive
    hypa-opt --slice-branches --emulate='grid=4 block=256 args=...' kernel.ptx

Every registered pass is also a flag (``--slice-branches``,
``--slice-branches="exact-predicates=true"``), as in ``mlir-opt``; flags and
``-p`` compose in command-line order.  ``--emulate``/``--launch`` run the
emulator on the result and print metrics instead of IR.

Everything ``xdsl-opt`` offers (``-p``, ``-o``, ``--split-input-file``,
``--parsing-diagnostics``, ``--print-op-generic`` ...) works the same way.
Errors in the input are reported as ``file:line:col: error: ...`` with the
offending line and a caret, and exit code 1; a missing or unreadable input
is a one-line error with exit code 1.  An unexpected failure inside hypa is
reported as an internal error with exit code 2 (``HYPA_TRACEBACK=1`` shows
the Python traceback).
"""

from __future__ import annotations

import gc
# Start-up makes hundreds of thousands of long-lived objects (xDSL's classes, the ptx
# dialect's 194 operation classes, then the parsed IR): the cyclic GC would traverse them
# again and again and find nothing to free (about a tenth of a short run).  It is off
# while this module's imports run and, in the hypa-opt process, until the input is parsed
# (main() then freezes what start-up made and turns it back on: _end_of_start_up).
_gc_paused = gc.isenabled()
gc.disable()

import argparse  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import IO  # noqa: E402

from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.universe import Universe  # noqa: E402
from xdsl.utils.exceptions import (  # noqa: E402
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain  # noqa: E402

from hypa import command as hypa_command, end_of_start_up  # noqa: E402
from hypa.ptxdialect.diagnostics import HypaError, InputError, PTXError  # noqa: E402

# the emulator, numpy, LLVM and the report load only when --emulate/--launch runs
from .emulate_cli import add_emulation_arguments  # noqa: E402

#: this process is the hypa-opt command (not a program that imported this module)
_COMMAND = __name__ == "__main__" or hypa_command() == "hypa-opt"
if _COMMAND:
    end_of_start_up()  # KeyboardInterrupt again, caught in main

if _gc_paused and not _COMMAND:
    # imported as a library: turn the GC back on now (which costs one collection of it all)
    _gc_paused = False
    gc.enable()

#: the first thing in a PTX text, comments and blank space aside, is a directive
_PTX_START = re.compile(rb"\A(?:\s+|//[^\n]*|/\*.*?\*/)*\.[A-Za-z_]", re.S)


class _PassFlag(argparse.Action):
    """``--pass-name[=options]``: append the pass to the pipeline, in order.  Its help (the
    pass's summary and options) is made only when ``--help`` prints it, so that ordinary
    runs do not import every pass."""

    def __init__(self, *args, pass_factory=None, **kwargs):
        self._factory = pass_factory
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def help(self):
        if self._help == argparse.SUPPRESS or self._factory is None:
            return self._help
        import dataclasses

        cls = self._factory()
        summary = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        summary = " ".join(summary.split()) or f"run the {self.dest} pass"
        fields = [f for f in dataclasses.fields(cls) if f.init] if dataclasses.is_dataclass(cls) else []
        opts = " ".join(f"{f.name.replace('_', '-')}={_option_text(f.default)}" for f in fields)
        return summary + (f" Options: {opts}" if opts else "")

    @help.setter
    def help(self, value) -> None:
        self._help = value

    def __call__(self, parser, namespace, values, option_string=None):
        flags = list(getattr(namespace, "pass_flags", None) or [])
        opts = (values or "").strip()
        if opts.startswith("{"):
            opts = opts[1:-1]
        flags.append(self.dest if not opts else f"{self.dest}{{{opts}}}")
        namespace.pass_flags = flags


def _option_text(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"' if value == "" or " " in value else value
    return str(value)


#: passes listed in --help, in pipeline order (every registered pass is accepted as a flag)
_LISTED = (
    "ptx-build-cfg", "ptx-inline", "ptx-to-ssa", "slice-branches", "ptx-out-of-ssa", "count-instructions",
    "print-cfg-dot", "instrument-block-counters",
)


class HypaOptMain(xDSLOptMain):
    version_format = "hypa-opt (hypa 0.1.0) built on xdsl {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        self._multiverse: Universe | None = None
        args = list(sys.argv[1:] if args is None else args)
        self._argv = args
        super().__init__(description="hypa modular optimizer driver for PTX", args=self._attach_pass_flags(args))

    def _attach_pass_flags(self, args: list[str]) -> list[str]:
        """A pass flag takes its options attached, as mlir-opt's do (``--slice-branches=
        'exact-predicates=true'``): a bare ``--slice-branches`` becomes ``--slice-branches=``
        so that argparse never takes the next word (the input file) for its options."""
        passes = self.multiverse().all_passes
        out = []
        for i, a in enumerate(args):
            if a == "--":
                out.extend(args[i:])
                break
            out.append(f"{a}=" if a.startswith("--") and a[2:] in passes else a)
        return out

    def multiverse(self) -> Universe:
        """Every installed xDSL universe, merged: discovered once, not once per kind of thing."""
        if self._multiverse is None:
            self._multiverse = Universe.get_multiverse()
        return self._multiverse

    # xDSLOptMain's registrations, each of which would walk the installed distributions again
    def register_all_dialects(self) -> None:
        for name, factory in self.multiverse().all_dialects.items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in self.multiverse().all_passes.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        for name, factory in self.multiverse().all_targets.items():
            if name not in self.available_targets:
                self.available_targets[name] = factory
        # for PTX, "-t llvm" is the emulator's lowering; xDSL's (the llvm dialect as text)
        # stays available as "xdsl-llvm"
        if "llvm" in self.available_targets and "ptx-llvm" in self.available_targets:
            self.available_targets["xdsl-llvm"] = self.available_targets["llvm"]
            self.available_targets["llvm"] = self.available_targets["ptx-llvm"]

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add_emulation_arguments(arg_parser)
        arg_parser.set_defaults(pass_flags=[])
        g = arg_parser.add_argument_group(
            "hypa's passes (as flags, applied in command-line order; options attached: --pass=opt=value,"
            " or -p 'pass{opt=value}')")
        order = [n for n in _LISTED if n in self.available_passes]
        for name in order + sorted(set(self.available_passes) - set(order)):
            g.add_argument(f"--{name}", dest=name, nargs="?", const="", action=_PassFlag, metavar="OPTIONS",
                           pass_factory=self.available_passes[name],
                           help=None if name in _LISTED else argparse.SUPPRESS)
        # hypa's passes first, right after the positional arguments
        groups = arg_parser._action_groups
        groups.insert(1, groups.pop(groups.index(g)))

    def setup_pipeline(self) -> None:
        flags = getattr(self.args, "pass_flags", None) or []
        if flags:
            self.args.passes = ",".join([p for p in [self.args.passes] if p] + flags)
        super().setup_pipeline()

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_ptx_chunk(stream: IO[bytes]) -> ModuleOp:
            from hypa.ptxdialect.diagnostics import decode_source
            from hypa.ptxdialect.parser import parse_ptx

            name = self.get_input_name()
            offset = getattr(self, "_chunk_offset", 0)
            text = decode_source(stream.read(), name, offset)
            return parse_ptx(text, name, offset)

        self.available_frontends["ptx"] = parse_ptx_chunk

    def get_input_name(self) -> str:
        return self.args.input_file or "<stdin>"

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        path = self.args.input_file
        if path is None:
            data = sys.stdin.buffer.read()
            kind = "ptx" if _PTX_START.match(data) else "mlir"
            return io.BytesIO(data), kind
        if os.path.isdir(path):
            raise InputError(f"cannot read '{path}': it is a directory, not a PTX or MLIR file")
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            raise InputError(f"cannot open '{path}': no such file") from None
        except OSError as e:
            raise InputError(f"cannot open '{path}': {e.strerror}") from None
        return f, os.path.splitext(path)[1].lstrip(".")

    def prepare_output(self) -> IO[str]:
        path = self.args.output_file
        if path is None:
            return sys.stdout
        try:
            return open(path, "w")
        except OSError as e:
            raise InputError(f"cannot write '{path}': {e.strerror}") from None

    def apply_passes(self, prog: ModuleOp) -> None:
        _end_of_start_up()
        super().apply_passes(prog)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        self._chunk_offset = start_offset
        try:
            if file_extension != "ptx":
                # invalid UTF-8 is a located error for any front end
                from hypa.ptxdialect.diagnostics import decode_source

                data = chunk.read()
                decode_source(data, self.get_input_name(), start_offset)
                chunk = io.BytesIO(data)
            return super().parse_chunk(chunk, file_extension, start_offset)
        except PTXError as e:
            if self.args.parsing_diagnostics:
                # like xdsl-opt: report this chunk's error and go on
                print(e.render())
                return None
            raise

    def run(self) -> None:
        from .deadline import arm

        arm(self.args.timeout, "hypa-opt")
        try:
            spec = self.args.emulate
            if spec and "=" not in spec and self.args.input_file is None and os.path.exists(spec):
                # argparse gave the optional SPEC the input file: `hypa-opt --emulate k.ptx`
                _fail(f"hypa-opt: error: --emulate took '{spec}' as its launch spec: put the input file first "
                      f"(hypa-opt {spec} --emulate=SPEC) or write --emulate=SPEC")
            if self.args.emulate is not None or self.args.launch:
                self.run_emulation()
            else:
                self._llvm_target_options()
                super().run()
        except ParseError as e:
            note = ""
            if self.args.input_file is None and not self.args.frontend:
                note = (
                    "\nnote: <stdin> was read as MLIR; PTX must start with a directive such as "
                    "'.version' (or pass -f ptx)"
                )
            _fail(_render_parse_error(e) + note)
        except (VerifyException, DiagnosticException, PassFailedException) as e:  # a pass's (InstrumentError too)
            _fail(f"{self.get_input_name()}: error: {e}")
        except HypaError as e:  # PTXError (located), InputError, LaunchError, EmulationError ...
            _fail(e.render("hypa-opt"))
        except ValueError as e:
            # xDSL's own input errors (unknown file extension, bad pipeline ...)
            hint = " (choose a front end with -f ptx or -f mlir)" if "file extension" in str(e) else ""
            _fail(f"hypa-opt: error: {_kebab_option_names(str(e), self._argv)}{hint}")


    def _llvm_target_options(self) -> None:
        """Without ``--emulate``/``--launch`` the emulation options act only on ``-t llvm``,
        and there only those that change the code (``EmulationOptions.key()``) and
        ``--kernel``: they become target options (``-t 'llvm{mode=full}'`` spells them so;
        given both ways, the target's own win).  Any other one given is an error, not ignored."""
        from hypa.runtime.emulator import options

        a = self.args
        target = getattr(a, "target", None) or ""
        llvm = target.split("{")[0] == "llvm"
        code = [f.name for f in options.cli_fields() if f.metadata["code"]] if llvm else []
        idle = options.given_flags(a, [f.name for f in options.cli_fields() if f.name not in code])
        if idle:
            raise InputError(f"{', '.join(idle)} {'has' if len(idle) == 1 else 'have'} no effect without --emulate "
                             f"or --launch" + (" (-t llvm takes the options that change the code)" if llvm else ""))
        if not llvm:
            return
        own = target[len("llvm"):].strip().removeprefix("{").removesuffix("}").strip()
        named = {t.split("=")[0].replace("-", "_") for t in own.split()}
        opts = [own] if own else []
        given = options.from_arguments(a)
        for name in code:
            value = getattr(given, name)
            if name not in named and options.given_flags(a, [name]):
                opts.append(f"{name}={str(value).lower() if isinstance(value, bool) else value}")
        if getattr(a, "kernel", None) and "kernel" not in named:
            opts.append(f"kernel={a.kernel}")
        if opts:
            a.target = "llvm{" + " ".join(opts) + "}"

    def run_emulation(self) -> None:
        """Parse, run the pipeline, emulate the launches, print metrics."""
        # hypa does no linear algebra: the OpenBLAS thread pool numpy starts when it loads
        # would only spin (about 0.1 s of CPU, taken from this thread on a busy machine)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        from .emulate_cli import emit, launches_from_args, run_launches

        launches = launches_from_args(self.args)
        chunks, ext = self.prepare_input()
        chunk, offset = chunks[0]
        module = self.parse_chunk(chunk, ext, offset)
        chunk.close()
        if module is None:
            return
        self.apply_passes(module)
        results = run_launches(module, launches, self.args)
        out = self.prepare_output()
        try:
            emit(results, self.args, out)
        finally:
            if out is not sys.stdout:
                out.close()


def _option_value_error(msg: str, argv: Sequence[str] | None) -> str:
    """xDSL's "Incompatible types: given ('maybe',), expected <class 'bool'>" names neither the
    pass nor the option: find the option given that value in the pipeline (``-p 'pass{opt=v}'``
    or ``--pass=opt=v``) and say what it takes."""
    m = re.match(r"Incompatible types: given \((.*?),?\), expected (.+)$", msg)
    if not m:
        return msg
    given = m.group(1).strip().strip("'\"")
    want = m.group(2)
    kind = ("true or false" if "bool" in want else "an integer" if "int" in want
            else "a number" if "float" in want else "text" if "str" in want else want)
    text = " ".join(sys.argv[1:] if argv is None else argv)
    places = [(mm.group(1), mm.group(2)) for mm in re.finditer(r"([a-z][a-z0-9-]*)\{([^}]*)\}", text)]
    places += [(mm.group(1), mm.group(2)) for mm in re.finditer(r"--([a-z][a-z0-9-]*)=(\S+)", text)]
    for pass_name, opts in places:
        for opt in re.split(r"[ ,]+", opts):
            name, _, value = opt.partition("=")
            if value.strip("'\"") == given:
                return f"{pass_name}: option {name.replace('_', '-')} takes {kind}, not '{given}'"
    return f"a pass option takes {kind}, not '{given}'"


def _kebab_option_names(msg: str, argv: Sequence[str] | None = None) -> str:
    """xDSL names pass and target options by their Python fields (``exact_predicates``);
    pipelines spell them as MLIR does (``exact-predicates``), and so do hypa's messages."""
    if msg.startswith("Incompatible types"):
        return _option_value_error(msg, argv)
    if "expected arguments" not in msg and "requires argument" not in msg:
        return msg
    return re.sub(r'"([a-z0-9]+(?:_[a-z0-9]+)+)"', lambda m: '"' + m.group(1).replace("_", "-") + '"', msg)


def _render_parse_error(e: ParseError) -> str:
    """An MLIR parse error as ``file:line:col: error: msg`` plus its context."""
    try:
        loc = e.span.get_location()
        context = e.span.print_with_context().split("\n", 1)[1].rstrip("\n")
        return f"{loc.file}:{loc.line}:{loc.col}: error: {e.msg}\n{context}"
    except Exception:  # pragma: no cover - an unusual span: fall back to xDSL's text
        return f"error: {e}"


def _fail(message: str, code: int = 1) -> None:
    print(message, file=sys.stderr)
    sys.exit(code)


#: freeze what start-up made when the GC goes back on (a command-line run only: in a
#: process that goes on, frozen objects that become garbage would never be collected)
_gc_freeze = False


def _end_of_start_up() -> None:
    """The input is parsed: what exists now lives until the process ends, so freeze it
    (collections skip it; forked workers share its pages) and turn the GC back on."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        if _gc_freeze:
            gc.freeze()
        gc.enable()


def main(argv: Sequence[str] | None = None) -> None:
    global _gc_paused, _gc_freeze
    if gc.isenabled():
        gc.disable()
        _gc_paused = True
    _gc_freeze = argv is None
    try:
        _main(argv)
    finally:
        if _gc_paused:
            _gc_paused = False
            gc.enable()
    if _COMMAND and argv is None:
        _exit_now()


def _exit_now() -> None:
    """The command succeeded: end the process without tearing the interpreter down (freeing
    every object of the IR, the dialects and the modules one by one), as mypy does.  hypa-opt
    has closed its output; nothing else is left to do at exit."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        return  # e.g. a closed pipe: the interpreter's own exit reports it, as it always did
    os._exit(0)


def _main(argv: Sequence[str] | None) -> None:
    try:
        try:
            tool = HypaOptMain(args=argv)
        except (ValueError, ArgSpecParseError) as e:  # a bad pass pipeline or target spec
            _fail(f"hypa-opt: error: {_kebab_option_names(' '.join(str(e).split()), argv)}")
        tool.run()
    except HypaError as e:  # an input file that cannot be read at all (InputError)
        _fail(e.render("hypa-opt"))
    except KeyboardInterrupt:  # Ctrl-C, also while a launch's native code runs (runtime/emulator/interrupt.py)
        from .fast_exit import interrupted

        interrupted("hypa-opt")
    except BrokenPipeError:
        # the reader went away (``hypa-opt big.ptx | head``): stop quietly
        try:
            sys.stdout = open(os.devnull, "w")
        finally:
            sys.exit(141)
    except OSError as e:
        where = f" '{e.filename}'" if getattr(e, "filename", None) else ""
        _fail(f"hypa-opt: error:{where} {e.strerror or e}")
    except SystemExit:
        raise
    except Exception as e:  # a bug in hypa, not in the input
        if os.environ.get("HYPA_TRACEBACK"):
            raise
        _fail(
            f"hypa-opt: internal error: {type(e).__name__}: {e}\n"
            "(this is a bug in hypa; set HYPA_TRACEBACK=1 to see where it happened)",
            2,
        )


if __name__ == "__main__":
    main()
