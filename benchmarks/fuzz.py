#!/usr/bin/env python3
"""A mutation fuzzer for hypa's inputs: every outcome is classified, never ignored.

    python benchmarks/fuzz.py --minutes 5                 # all targets, random seeds
    python benchmarks/fuzz.py --target report-json --cases 2000 --seed 1
    python benchmarks/fuzz.py --small                     # CI: 120 cases of seed 20261126

Targets (each mutates a valid seed input and feeds it to the code a user's input reaches):

``report-json``
    a profile JSON (``hypa profile --format json``) with keys deleted, values replaced by other
    types, NaN, negative or huge numbers, lists truncated; checked by ``profile_problem`` and,
    if accepted, rendered by ``html_report.build``.
``launch-spec``
    a launch-spec table (docs/guide.md, "Launch specification") with mutated grid, block, shared memory,
    arguments, buffers and initialisers; read by ``launches_from_dict`` and, if accepted,
    emulated on the bundled saxpy kernel (slice and full mode).
``emulate-string``
    the ``--emulate=`` string of ``hypa-opt``, mutated token by token; parsed by
    ``launch_from_cli`` and emulated when accepted.
``ptx``
    a kernel of ``tests/kernels/ptx`` with lines deleted, duplicated or swapped and tokens
    replaced; parsed, printed and parsed again (the round trip), and each kernel prepared and
    lowered to LLVM IR (not compiled: that is the slow part, and the IR is what it reads).

``arch-file``
    an architecture description (``runtime/models/arch/*.toml``) with values replaced by zero, negative,
    huge, NaN or other types and keys deleted; read by the timing model's loader and, if
    accepted, used for a time estimate of the saxpy launch.
``binary``
    a fatbin (uncompressed, LZ4, Zstandard), a cubin or a shared library of
    ``tests/unit/data/binaries`` with bytes flipped, header fields set to 0, -1 or huge values,
    truncated or extended; read by ``load_sources`` with hypa's own fatbin reader, the PTX it
    yields parsed, and the ELF reader of ``hypa run`` (``cudart.program.inspect``) run on it.

``edge-kernel``
    a generated kernel at the edges: accesses misaligned by a few bytes (vectors, atomics and
    ``wmma.load`` too), huge ``.shared``/``.local`` sizes, a spin on ``%clock64``, barriers with
    odd ids and counts (beyond the CTA's threads, immediate or in a register), a
    ``.reqntid``/``.maxntid`` the block may not fit, a random block on a buffer of a random
    size; emulated in either mode.
``profile-file``
    a file given to ``hypa report``/``hypa diff``: the seed profile in UTF-8/16/32, truncated,
    nested deep, binary bytes, a FIFO, a device, or naming a device as its ``file``; read by
    ``report/files.py``, checked and rendered (the CFG re-reads the named file).

``cache-entry``
    the compile cache with one entry damaged (truncated, flipped, emptied, another entry's
    bytes, a FIFO, a link to ``/dev/zero``, a directory, unreadable), then a whole ``hypa-opt``
    process on the launch that made it: the clean run's counts, or a one-line error.
``signal``
    SIGINT or SIGTERM after a random delay to a ``hypa-opt`` process emulating an endless
    kernel (``-j 1`` or ``-j 2``): exit 130 / the signal's status within 30 s, no traceback.
    These two run a process a case; ``--small`` and a run without ``--target`` leave them out.

Outcomes: ``accepted`` (ran), ``rejected`` (the input error a user sees: a ``HypaError`` --
LaunchError, EmulationError, InputError ... -- with a message), ``crash`` (any other exception: a hypa bug; the
input is written to ``--save DIR`` and its traceback printed), ``hang`` (a case that ran past
``--case-seconds`` of CPU time, 60 s by default, or ten times that of wall time: stopped
by a timer, also saved; CPU time, so that a loaded machine does not turn a slow case into a
hang). Emulations get a step
budget too. The exit status is 1 when any case crashed or hung.

``--small`` (CI) runs 20 cases of every target with the fixed seed 20261126 and also exits 1
when a target saw no accepted or no rejected case (the mutations no longer reach both sides).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import random
import sys
import time
import traceback

import numpy as np

from hypa.ptxdialect.diagnostics import HypaError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP_BUDGET = 2_000_000

WEIRD = [None, True, -1, 0, 1, 2**31, 2**63, -2**63, 1.5, float("nan"), float("inf"), -0.0, "", "x", "zeros",
         "<img src=x onerror=alert(1)>", [], [1], [1, 2, 3], [0, 0, 0], [-1, 1, 1], {}, {"value": 1},
         {"random": {"seed": -1}}, {"file": "/nonexistent.npy"}, {"bytes": "zz"}, {"bytes": "00"}]


def _mutate(rng: random.Random, obj, depth: int = 0):
    """One random structural change somewhere inside ``obj`` (a JSON-like value)."""
    if isinstance(obj, dict) and obj and rng.random() < 0.8:
        k = rng.choice(list(obj))
        r = rng.random()
        if r < 0.2:
            del obj[k]
        elif r < 0.5 or depth > 4:
            obj[k] = copy.deepcopy(rng.choice(WEIRD))
        else:
            obj[k] = _mutate(rng, obj[k], depth + 1)
        return obj
    if isinstance(obj, list) and obj and rng.random() < 0.8:
        i = rng.randrange(len(obj))
        r = rng.random()
        if r < 0.2:
            del obj[i]
        elif r < 0.3:
            obj.append(copy.deepcopy(obj[i]))
        elif r < 0.6 or depth > 4:
            obj[i] = copy.deepcopy(rng.choice(WEIRD))
        else:
            obj[i] = _mutate(rng, obj[i], depth + 1)
        return obj
    if isinstance(obj, (int, float)) and not isinstance(obj, bool) and rng.random() < 0.7:
        return rng.choice([-obj, obj * 1000003, obj + 1, 0, math.nan if isinstance(obj, float) else -1, 2**40])
    return copy.deepcopy(rng.choice(WEIRD))


# -- targets ----------------------------------------------------------------------------------------


def _saxpy_module():
    from hypa.ptxdialect import parse_ptx_file

    return parse_ptx_file(os.path.join(ROOT, "examples", "saxpy.ptx"))


SPEC = {
    "launch": [{"kernel": "saxpy", "grid": [4, 1, 1], "block": [256, 1, 1], "shared_bytes": 0,
                "args": [1000, 2.0, "x", "y"]}],
    "buffers": {"x": {"dtype": "float32", "count": 1000, "init": "arange"},
                "y": {"dtype": "float32", "count": 1000, "init": {"random": {"seed": 1, "low": 0, "high": 1}}}},
}


class Targets:
    def __init__(self) -> None:
        from hypa.runtime.emulator.emulator import Emulator

        self._module = _saxpy_module()
        self.emulators = {m: Emulator(self._module, mode=m, step_budget=STEP_BUDGET) for m in ("slice", "full")}
        self._profile = None
        self._ptx: list[str] | None = None
        self._arch = None
        self._arch_result = None
        self._binaries: list[tuple[str, bytes]] | None = None
        #: the ``ptx`` target's last case: (case number, text, hypa's message or None if accepted)
        self.last_ptx: tuple[str, str | None] | None = None

    def seed_profile(self) -> list:
        if self._profile is None:
            from hypa.runtime.emulator.launch import launches_from_dict
            from hypa.runtime.report.tables import record_dict
            from hypa.runtime.report.batch import LaunchRecord
            from hypa.runtime.report.inputs import Source

            (launch,) = launches_from_dict(copy.deepcopy(SPEC))
            emu = self.emulators["full"]
            emu.options = dataclasses.replace(emu.options, memory_metrics=False)
            r = emu.run(launch)
            src = Source(os.path.join(ROOT, "examples", "saxpy.ptx"), "", "ptx")
            d = record_dict(LaunchRecord(0, src, launch, kernel="saxpy", result=r))
            d["time_estimate"] = {"time_us": 3.5, "bound": "latency", "arch": "sm_90", "occupancy": {"occupancy": 1.0},
                                  "waves": 0.03}
            d["memory"] = {"global_ld_requests": 64, "global_ld_sectors": 250, "global_ld_lines": 64}
            self._profile = json.loads(json.dumps([d, dict(d, launch=1)], default=float))
        return self._profile

    def report_json(self, rng: random.Random):
        from hypa.runtime.report import html as html_report

        data = copy.deepcopy(self.seed_profile())
        for _ in range(rng.randint(1, 3)):
            data = _mutate(rng, data)
        problem = html_report.profile_problem(data)
        if problem is not None:
            return "rejected", data
        html_report.build(data, cfg="none")
        return "accepted", data

    def launch_spec(self, rng: random.Random):
        from hypa.runtime.emulator.launch import launches_from_dict

        spec = copy.deepcopy(SPEC)
        if rng.random() < 0.4:  # a plausible change: other sizes, counts, values
            t = spec["launch"][0]
            t[rng.choice(["grid", "block", "shared_bytes"])] = rng.choice([1, 2, 7, 32, 100, 1024, [2, 3], [8, 8, 2], 0])
            t["args"][0] = rng.choice([0, 1, 999, 1000, 1001, 5000, -1])
            spec["buffers"]["x"]["count"] = rng.choice([0, 1, 100, 1000, 4096])
        for _ in range(rng.randint(0 if rng.random() < 0.3 else 1, 2)):
            spec = _mutate(rng, spec)
        if not isinstance(spec, dict):
            return "rejected", spec  # (not a table: the TOML reader could not produce it)
        try:
            launches = launches_from_dict(copy.deepcopy(spec), ROOT, "fuzz")
            for launch in launches:
                launch.kernel = launch.kernel if isinstance(launch.kernel, str) else "saxpy"
                for emu in self.emulators.values():
                    emu.run(launch)
        except HypaError:
            return "rejected", spec
        return "accepted", spec

    def emulate_string(self, rng: random.Random):
        from hypa.runtime.emulator.launch import launch_from_cli

        base = "grid=4 block=256 args=1000,2.0,x,y buffer.x=float32:1000:arange buffer.y=float32:1000:ones shared=0"
        toks = base.split()
        for _ in range(rng.randint(0 if rng.random() < 0.2 else 1, 3)):  # (some cases unmutated: both sides reached)
            i = rng.randrange(len(toks))
            k, _, v = toks[i].partition("=")
            choice = rng.random()
            if choice < 0.3:
                del toks[i]
            elif choice < 0.7:
                toks[i] = f"{k}={rng.choice(['', '-1', '0', '4294967296x4294967296', '1x1x1x1', 'nan', '1e30', 'x', ',,,', 'float32:-1:zeros', 'object:4:zeros', 'int8:4:random=5..1@x'])}"
            else:
                toks[i] = f"{k}={v}{rng.choice(['0', ',1', ':x', '..', '@'])}"
            if not toks:
                toks = ["grid=1"]
        text = " ".join(toks)
        try:
            launch = launch_from_cli(text)
            launch.kernel = "saxpy"
            for emu in self.emulators.values():
                emu.run(launch)
        except HypaError:
            return "rejected", text
        return "accepted", text

    def ptx(self, rng: random.Random):
        import re as _re

        from hypa.ptxdialect import module_to_ptx, parse_ptx
        from hypa.runtime.emulator.lowering import build_module
        from hypa.runtime.emulator.emulator import Emulator
        from hypa.runtime.emulator.program import module_kernels

        if self._ptx is None:
            self._ptx = [open(f).read() for f in _ptx_files()]
        lines = rng.choice(self._ptx).splitlines()
        tokens = [t for ln in lines for t in _re.findall(r"[%$\w.]+|[^\s\w]", ln)] or ["0"]
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines))
            r = rng.random()
            if r < 0.25:
                del lines[i]
            elif r < 0.4:
                lines.insert(i, lines[rng.randrange(len(lines))])
            elif r < 0.5:
                j = rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            else:
                toks = _re.findall(r"[%$\w.]+|[^\s\w]|\s+", lines[i])
                if toks:
                    k = rng.randrange(len(toks))
                    toks[k] = rng.choice(tokens + ["{", "}", ";", ",", "-1", "0x7fffffff", "4294967296", ".b8", "%r99999"])
                    lines[i] = "".join(toks)
            if not lines:
                lines = [".version 8.0"]
        text = "\n".join(lines) + "\n"
        try:
            module = parse_ptx(text, filename="fuzz.ptx")
            again = module_to_ptx(module)
            parse_ptx(again, filename="fuzz-printed.ptx")  # what hypa prints, it reads back
            emu = Emulator(module, mode=rng.choice(["slice", "full"]), step_budget=STEP_BUDGET)
            for k in module_kernels(module)[:2]:
                build_module(emu.program(k.func_name))
        except HypaError as e:
            self.last_ptx = (text, str(e))
            return "rejected", text
        self.last_ptx = (text, None)
        return "accepted", text


    def arch_file(self, rng: random.Random):
        import tomllib

        from hypa.runtime.models import timing

        if self._arch is None:
            with open(os.path.join(ROOT, "runtime", "models", "arch", "sm_90.toml"), "rb") as f:
                self._arch = tomllib.load(f)
            launch = timing_launch()
            self._arch_result = (self.emulators["slice"].run(launch), launch)
        data = copy.deepcopy(self._arch)
        for _ in range(rng.randint(1, 3)):
            data = _mutate(rng, data)
        if not isinstance(data, dict):
            return "rejected", data  # (not a table: the TOML reader could not produce it)
        try:
            arch = timing._check_arch(timing._arch_from_dict(data, "fuzz.toml"))
            result, launch = self._arch_result
            est = timing.estimate(result, launch, arch=arch)
            if not math.isfinite(est.time_us) or est.time_us < 0:
                raise AssertionError(f"estimate of {est.time_us} us from an accepted architecture")
        except timing.TimingError:
            return "rejected", data
        return "accepted", data

    def binary(self, rng: random.Random):
        import tempfile

        from hypa.cudart.program import inspect
        from hypa.ptxdialect import parse_ptx
        from hypa.runtime.report.inputs import InputOptions, load_sources

        if self._binaries is None:
            d = os.path.join(ROOT, "tests", "unit", "data", "binaries")
            self._binaries = [(f, open(os.path.join(d, f), "rb").read()) for f in sorted(os.listdir(d))]
        name, seed = rng.choice(self._binaries)
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            i = rng.randrange(len(data)) if data else 0
            if r < 0.35:  # a header field (the first bytes of the file or of a fatbin/ELF header inside)
                i = rng.choice([rng.randrange(min(len(data), 256) or 1), i]) & ~3
                data[i:i + rng.choice([2, 4, 8])] = rng.choice([b"\0" * 8, b"\xff" * 8, b"\xff\xff\xff\x7f" * 2,
                                                                 (1 << 40).to_bytes(8, "little")])[:rng.choice([2, 4, 8])]
            elif r < 0.7:
                for _ in range(rng.randint(1, 16)):
                    if data:
                        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif r < 0.85:
                del data[rng.randrange(len(data) + 1):]
            else:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        suffix = os.path.splitext(name)[1]
        with tempfile.NamedTemporaryFile(suffix=suffix) as f:
            f.write(bytes(data))
            f.flush()
            try:
                inspect(f.name)
            except Exception as e:  # noqa: BLE001 - only the ELF reader's own error is a rejection
                if type(e).__name__ != "NotAProgram":
                    raise
            try:
                for src in load_sources(f.name, InputOptions(cuobjdump=False)):
                    parse_ptx(src.ptx, filename=f.name)
            except HypaError:
                return "rejected", bytes(data)
        return "accepted", bytes(data)

    def edge_kernel(self, rng: random.Random):
        """A kernel generated at the edges issue 31 lists: accesses misaligned by a few bytes
        (vector, atomic and wmma.load ones too), huge or odd ``.shared``/``.local`` sizes, a spin
        on ``%clock64`` for a random number of cycles, barriers with odd ids and thread counts
        (beyond the CTA's, immediate or in a register), launch bounds the block may break,
        launched with a random block on a buffer of a random size, in either mode."""
        from hypa.ptxdialect import parse_ptx
        from hypa.runtime.emulator.emulator import Emulator
        from hypa.runtime.emulator.launch import Launch

        space = rng.choice(["global", "shared", "local"])
        vec, ty = rng.choice([("", "u32"), ("", "u8"), ("", "u64"), (".v2", "u32"), (".v4", "u32"), (".v2", "u64"),
                              ("", "f32"), (".v4", "f32")])
        size = {"u8": 1, "u32": 4, "u64": 8, "f32": 4}[ty] * {"": 1, ".v2": 2, ".v4": 4}[vec]
        offset = rng.choice([0, 0, 0, size, 1, 2, 4, 8, 12, -4, 1 << 20])
        shared = rng.choice([16, 4096, 49152, 49153, 232448, 1 << 31, 1 << 32])
        local = rng.choice([16, 1024, 1 << 20, 16 << 20, 1 << 31])
        cycles = rng.choice([0, 1, 100, 10_000, 1_000_000])
        bar = rng.choice(["bar.sync 0;", "bar.sync 1, 64;", "bar.sync 15, 32;", "bar.sync 16;", "bar.sync 0, 33;",
                          "barrier.sync 2;", ""])
        n = "{%r10, %r11, %r12, %r13}"[: {"": 0, ".v2": 15, ".v4": 24}[vec]] if vec else "%r10"
        regs = {"u8": "r", "u32": "r", "f32": "f", "u64": "rd"}[ty]
        dst = (n.replace("%r", f"%{regs}") if vec else f"%{regs}10")
        op = rng.choice(["ld", "st", "atom"]) if not vec and ty in ("u32", "u64") else rng.choice(["ld", "st"])
        addr = "%rd4" if space == "global" else ("%rd7" if space == "shared" else "%rd8")
        if op == "ld":
            access = f"ld.{space}{vec}.{ty} {dst}, [{addr}];"
        elif op == "st":
            access = f"st.{space}{vec}.{ty} [{addr}], {dst};"
        else:
            access = f"atom.{space}.add.{ty} %{regs}20, [{addr}], %{regs}10;" if space != "local" else \
                f"ld.{space}.{ty} %{regs}20, [{addr}];"
        block = rng.choice([1, 32, 64, 96, 256, 1024])
        nbytes = rng.choice([0, 16, 4096, block * size, max(0, block * size - 4), 1 << 20])
        mode, grid = rng.choice(["slice", "full"]), rng.choice([1, 2])
        # the later edges from a stream of their own (the draws above stay what they were)
        extra = random.Random(rng.getrandbits(64))
        bar_count = extra.choice([32, 64, 256, 1024, 2048])  # %r14: a barrier's count in a register
        if extra.random() < 0.25:  # more threads than the CTA may have
            bar = extra.choice(["bar.sync 1, 1024;", "barrier.sync 3, %r14;"])
        bounds = extra.choice(["", "", "", "", ".reqntid 64", ".reqntid 32, 2", ".maxntid 128", ".maxntid 1024"])
        if space == "global" and extra.random() < 0.2:  # a WMMA fragment, its address as misaligned as the rest's
            access = (f"add.s64 %rd9, %rd2, {offset};\n  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 "
                      f"{{%r20, %r21, %r22, %r23, %r24, %r25, %r26, %r27}}, [%rd9], {extra.choice([16, 17, 24])};")
        ptx = f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{bounds}
{{
  .reg .pred %p<4>;
  .reg .b16 %rs<30>;
  .reg .b32 %r<30>;
  .reg .f32 %f<30>;
  .reg .b64 %rd<30>;
  .shared .align 16 .b8 sbuf[{shared}];
  .local .align 16 .b8 lbuf[{local}];
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, {max(size, 1)};
  add.s64 %rd4, %rd2, %rd3;
  add.s64 %rd4, %rd4, {offset};
  mov.u64 %rd5, sbuf;
  add.s64 %rd7, %rd5, %rd3;
  add.s64 %rd7, %rd7, {offset};
  mov.u64 %rd6, lbuf;
  add.s64 %rd8, %rd6, {offset};
  mov.u32 %r10, 1;
  mov.u64 %rd10, 1;
  mov.f32 %f10, 0f3F800000;
  mov.u32 %r11, 2; mov.u32 %r12, 3; mov.u32 %r13, 4; mov.u32 %r14, {bar_count};
  mov.u64 %rd11, 2;
  mov.f32 %f11, 0f40000000; mov.f32 %f12, 0f40400000; mov.f32 %f13, 0f40800000;
  {access}
  mov.u64 %rd20, %clock64;
SPIN:
  mov.u64 %rd21, %clock64;
  sub.s64 %rd22, %rd21, %rd20;
  setp.lt.u64 %p1, %rd22, {cycles};
  @%p1 bra SPIN;
  {bar}
  ret;
}}
"""
        try:
            module = parse_ptx(ptx, filename="edge.ptx")
            emu = Emulator(module, mode=mode, step_budget=STEP_BUDGET)
            emu.run(Launch(kernel="k", grid=grid, block=block,
                           args=[np.zeros(nbytes // 4, np.uint32), 1]))
        except HypaError:
            return "rejected", ptx
        return "accepted", ptx

    def profile_file(self, rng: random.Random):
        """A file given to ``hypa report``/``hypa diff`` as a profile: the seed profile in
        another Unicode encoding, truncated, nested deep, binary bytes, a FIFO or a device,
        or naming a device as its PTX ``file``; read by the reports' loader, checked, and
        rendered when accepted."""
        import tempfile

        from hypa.runtime.report import diff
        from hypa.runtime.report import html as html_report
        from hypa.runtime.report.files import ReportFileError, load_json

        data = copy.deepcopy(self.seed_profile())
        kind = rng.choice(["utf-8", "utf-16", "utf-32", "truncated", "deep", "binary", "fifo", "device", "file-field"])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.json")
            text = json.dumps(data)
            if kind in ("utf-8", "utf-16", "utf-32"):
                open(path, "wb").write(text.encode(kind))
            elif kind == "truncated":
                open(path, "w").write(text[: rng.randrange(len(text))])
            elif kind == "deep":
                depth = rng.choice([10, 1000, 100_000])
                open(path, "w").write("[" * depth + "]" * depth)
            elif kind == "binary":
                open(path, "wb").write(bytes(rng.randrange(256) for _ in range(rng.randint(0, 512))))
            elif kind == "fifo":
                os.mkfifo(path)
            elif kind == "device":
                path = rng.choice(["/dev/zero", "/dev/null", "/proc/self/mem", d])
            else:
                for e in data:
                    e["file"] = rng.choice(["/dev/zero", "/dev/urandom", d, "/nonexistent.ptx"])
                open(path, "w").write(json.dumps(data))
            try:
                loaded = load_json(path)
                problem = html_report.profile_problem(loaded)
                if problem is not None:
                    return "rejected", kind
                html_report.build(loaded, cfg=None)  # the CFG section re-reads each entry's file
                diff.table(diff.pair(diff.load(path), diff.load(path)), ("A", "B"))
            except (ReportFileError, diff.DiffError):
                return "rejected", kind
        return "accepted", kind

    #: a saxpy launch whose output (metrics) a whole hypa-opt process prints
    SAXPY_CLI = ["--emulate=grid=4 block=256 args=1000,2.0,x,y buffer.x=float32:1000:arange "
                 "buffer.y=float32:1000:ones", "--mode", "full", "--format", "json"]

    def _hypa_opt(self, args: list[str], env: dict | None = None, timeout: float = 120):
        import subprocess

        return subprocess.run([sys.executable, "-m", "hypa.tools.hypa_opt", *args], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)

    def cache_entry(self, rng: random.Random):
        """A compile cache (``HYPA_CACHE_DIR``) with one entry damaged -- truncated, bytes
        flipped, emptied, another entry's bytes, a FIFO, a link to ``/dev/zero``, a
        directory, unreadable -- then a whole ``hypa-opt`` process on the launch that made
        it: the same counts as on a clean cache (accepted, with at most a warning) or a
        one-line error (rejected); a traceback, an internal error or a signal is a crash."""
        import shutil
        import stat
        import tempfile

        saxpy = os.path.join(ROOT, "examples", "saxpy.ptx")
        if not hasattr(self, "_cache_seed"):
            seed_dir = tempfile.mkdtemp(prefix="hypa-fuzz-cache-")
            p = self._hypa_opt([saxpy, *self.SAXPY_CLI], {"HYPA_CACHE_DIR": seed_dir})
            if p.returncode != 0:
                raise AssertionError(f"the clean run failed: {p.stderr}")
            self._cache_seed = (seed_dir, json.loads(p.stdout))
        seed_dir, want = self._cache_seed
        with tempfile.TemporaryDirectory(prefix="hypa-fuzz-cache-") as d:
            cache = os.path.join(d, "c")
            shutil.copytree(seed_dir, cache)
            files = sorted(os.listdir(cache))
            victim = os.path.join(cache, rng.choice(files))
            other = os.path.join(cache, rng.choice(files))
            kind = rng.choice(["truncate", "flip", "empty", "other", "fifo", "zero-link", "directory", "unreadable"])
            data = open(victim, "rb").read()
            if kind == "truncate":
                open(victim, "wb").write(data[: rng.randrange(max(1, len(data)))])
            elif kind == "flip":
                b = bytearray(data)
                for _ in range(rng.randint(1, 32)):
                    if b:
                        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
                open(victim, "wb").write(bytes(b))
            elif kind == "empty":
                open(victim, "wb").close()
            elif kind == "other":
                open(victim, "wb").write(open(other, "rb").read())
            else:
                os.remove(victim)
                if kind == "fifo":
                    os.mkfifo(victim)
                elif kind == "zero-link":
                    os.symlink("/dev/zero", victim)
                elif kind == "directory":
                    os.mkdir(victim)
                else:
                    open(victim, "wb").write(data)
                    os.chmod(victim, 0)
            try:
                p = self._hypa_opt([saxpy, *self.SAXPY_CLI], {"HYPA_CACHE_DIR": cache})
            finally:
                if os.path.exists(victim) and not os.path.islink(victim):
                    os.chmod(victim, stat.S_IRWXU)
        if p.returncode < 0 or "Traceback" in p.stderr or "internal error" in p.stderr:
            raise AssertionError(f"{kind}: exit {p.returncode}: {p.stderr[-800:]}")
        if p.returncode != 0:
            if len(p.stderr.strip().splitlines()) != 1:
                raise AssertionError(f"{kind}: not a one-line error: {p.stderr[-800:]}")
            return "rejected", kind
        got = json.loads(p.stdout)
        drop = ("duration_ms", "compile_ms", "notes")
        if [{k: v for k, v in g.items() if k not in drop} for g in got] != \
                [{k: v for k, v in w.items() if k not in drop} for w in want]:
            raise AssertionError(f"{kind}: different counts from a damaged cache")
        return "accepted", kind

    def signal(self, rng: random.Random):
        """SIGINT or SIGTERM after a random delay to a ``hypa-opt`` process emulating a kernel
        that never ends: it must stop within 30 s -- exit 130 with one line for SIGINT, the
        signal's own status for SIGTERM --, never with a traceback (accepted: stopped as it
        should; a case that does not stop is a hang)."""
        import signal as sig
        import subprocess

        ptx = """.version 8.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, 0;
L:
  add.u32 %r1, %r1, 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra L;
  ret;
}
"""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="hypa-fuzz-sig-") as d:
            f = os.path.join(d, "spin.ptx")
            open(f, "w").write(ptx)
            which = rng.choice([sig.SIGINT, sig.SIGTERM])
            delay = rng.uniform(0.05, 3.0)
            proc = subprocess.Popen([sys.executable, "-m", "hypa.tools.hypa_opt", f, "--mode", "full",
                                     "--emulate=grid=64 block=256 args=0", "--step-budget", str(10**15),
                                     "-j", str(rng.choice([1, 2]))],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            time.sleep(delay)
            os.killpg(proc.pid, which) if rng.random() < 0.5 else proc.send_signal(which)
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, sig.SIGKILL)
                proc.communicate()
                raise Hang()
        rc = proc.returncode
        if "Traceback" in err or "internal error" in err:
            raise AssertionError(f"signal {which}: exit {rc}: {err[-800:]}")
        if which == sig.SIGINT and rc != 130:
            raise AssertionError(f"SIGINT after {delay:.2f} s: exit {rc}, not 130: {err[-400:]}")
        if which == sig.SIGTERM and rc not in (-sig.SIGTERM, 128 + sig.SIGTERM):
            raise AssertionError(f"SIGTERM after {delay:.2f} s: exit {rc}: {err[-400:]}")
        return "accepted", f"{which} after {delay:.2f} s"


def timing_launch():
    from hypa.runtime.emulator.launch import launches_from_dict

    (launch,) = launches_from_dict(copy.deepcopy(SPEC))
    return launch


def _ptx_files() -> list[str]:
    d = os.path.join(ROOT, "tests", "kernels", "ptx")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".sm_90.ptx"))



TARGETS = {"report-json": "report_json", "launch-spec": "launch_spec", "emulate-string": "emulate_string", "ptx": "ptx",
           "arch-file": "arch_file", "binary": "binary", "edge-kernel": "edge_kernel", "profile-file": "profile_file",
           "cache-entry": "cache_entry", "signal": "signal"}
#: targets a whole-process case each (seconds a case): not in --small's round unless named
SLOW_TARGETS = ("cache-entry", "signal")
FAST_TARGETS = sorted(t for t in TARGETS if t not in SLOW_TARGETS)


class Hang(Exception):
    """A case ran past its time (raised by the alarm)."""


def _alarm(signum, frame):
    raise Hang()


def _normalise(message: str) -> str:
    """A diagnostic without its place and the names it quotes: the category of a disagreement."""
    import re

    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    first = re.sub(r"^ptxas[^,]*, line \d+; ", "", first)
    first = re.sub(r"^[^:\s]*\.ptx:\d+:\d+: ", "", first)
    first = re.sub(r"'[^']*'", "'…'", first)
    first = re.sub(r"`[^`]*`", "`…`", first)
    return re.sub(r"\b\d+\b", "N", first)


def compare_with_ptxas(cases: list[tuple[int, str, str | None]], ptxas: str = "ptxas",
                       arch: str = "sm_90") -> dict:
    """Run ``ptxas -arch=ARCH`` on the ``ptx`` target's cases (number, text, hypa's message or
    None when hypa accepted) and classify each: both accept, both reject, hypa accepts what
    ptxas rejects (accepted-but-invalid) or rejects what ptxas accepts (rejected-but-valid);
    disagreements are grouped by the other side's normalised message, with an example case."""
    import concurrent.futures
    import subprocess
    import tempfile

    def run(case):
        n, text, _msg = case
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(text)
        try:
            p = subprocess.run([ptxas, f"-arch={arch}", "-o", os.devnull, f.name], capture_output=True, text=True,
                               timeout=120)
            return p.returncode == 0, p.stderr
        except subprocess.TimeoutExpired:
            return False, "ptxas timed out"
        finally:
            os.unlink(f.name)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        verdicts = list(pool.map(run, cases))
    out: dict = {"both accept": 0, "both reject": 0, "accepted-but-invalid": {}, "rejected-but-valid": {}}
    for (n, _text, msg), (ok, err) in zip(cases, verdicts):
        if (msg is None) == ok:
            out["both accept" if ok else "both reject"] += 1
            continue
        kind, why = ("accepted-but-invalid", err) if msg is None else ("rejected-but-valid", msg)
        key = _normalise(why)
        entry = out[kind].setdefault(key, {"count": 0, "example": n, "examples": [],
                                           "message": why.strip().splitlines()[0] if why.strip() else ""})
        entry["count"] += 1
        if len(entry["examples"]) < 8:
            entry["examples"].append(n)
    return out


def campaign(targets: list[str], cases: int | None, seconds: float | None, seed: int,
             save: str | None = None, quiet: bool = False, case_seconds: int = 60,
             only: set[int] | None = None, ptx_cases: list | None = None) -> dict[str, dict[str, int]]:
    """Run cases; returns outcome counts per target.  ``only``: run just these case numbers
    of the campaign (what ``--save`` names a crash by), drawing the others' seeds to get there.
    ``ptx_cases``: a list that gets (number, text, hypa's message or None) of every ``ptx`` case
    hypa accepted or rejected (for ``compare_with_ptxas``)."""
    import signal

    t = Targets()
    rng = random.Random(seed)
    counts = {name: {"accepted": 0, "rejected": 0, "crash": 0, "hang": 0} for name in targets}
    start = time.monotonic()
    n = 0
    old = signal.signal(signal.SIGALRM, _alarm)
    old_prof = signal.signal(signal.SIGPROF, _alarm)
    try:
        while (cases is None or n < cases) and (seconds is None or time.monotonic() - start < seconds):
            name = targets[n % len(targets)]
            case_rng = random.Random(rng.getrandbits(64))
            if only is not None and n not in only:
                n += 1
                if n > max(only):
                    break
                continue
            # a hang: past case_seconds of this process's CPU time (a loaded machine slows a
            # case down, it does not make it a hang), or ten times that of wall time (a case
            # blocked without using the CPU: a FIFO, a lock)
            signal.setitimer(signal.ITIMER_PROF, case_seconds)
            signal.alarm(10 * case_seconds)
            text = ""
            try:
                outcome, _inp = getattr(t, TARGETS[name])(case_rng)
            except Hang:
                outcome, text = "hang", traceback.format_exc()
            except Exception:  # noqa: BLE001 - every other exception is a defect to report
                outcome, text = "crash", traceback.format_exc()
            finally:
                signal.alarm(0)
                signal.setitimer(signal.ITIMER_PROF, 0)
            if outcome in ("crash", "hang"):
                if not quiet:
                    print(f"{outcome} in {name} (case {n}):\n{text}", file=sys.stderr)
                if save:
                    os.makedirs(save, exist_ok=True)
                    with open(os.path.join(save, f"{name}-{n}-{outcome}.txt"), "w") as f:
                        f.write(f"seed {seed}, case {n}\n{text}")
            counts[name][outcome] += 1
            if ptx_cases is not None and name == "ptx" and outcome in ("accepted", "rejected") and t.last_ptx:
                ptx_cases.append((n, *t.last_ptx))
            n += 1
    finally:
        signal.signal(signal.SIGALRM, old)
        signal.signal(signal.SIGPROF, old_prof)
    return counts


def limit_memory(gib: int = 8) -> None:
    """Cap this process's address space, so an input that asks for too much memory shows up
    as a MemoryError (classified) rather than the machine's OOM killer."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))
    except (ImportError, ValueError, OSError):
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", action="append", choices=sorted(TARGETS), help="default: all")
    ap.add_argument("--cases", type=int, help="stop after this many cases")
    ap.add_argument("--minutes", type=float, help="stop after this long")
    ap.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    ap.add_argument("--save", metavar="DIR", help="write each crash's and hang's traceback here")
    ap.add_argument("--case-seconds", type=int, default=60,
                    help="a case using more CPU seconds, or ten times as many wall seconds, is a hang (default 60)")
    ap.add_argument("--only", metavar="N,N", help="replay just these case numbers of the campaign (with its --seed "
                                                   "and --target list; --cases must cover them)")
    ap.add_argument("--ptxas", nargs="?", const="ptxas", default=None, metavar="EXE",
                    help="also assemble every case of the ptx target with `ptxas -arch=sm_90` and list each case "
                         "where hypa and ptxas disagree, grouped by the rejecting side's message")
    ap.add_argument("--ptxas-json", metavar="FILE", help="with --ptxas: write the comparison here")
    ap.add_argument("--small", action="store_true",
                    help="CI: 20 cases a target with seed 20261126 (unless given); exit 1 also when a target "
                         "saw no accepted or no rejected case")
    args = ap.parse_args()
    if args.small:
        if args.seed is None:
            args.seed = 20261126
        if args.cases is None and args.minutes is None:
            args.cases = 20 * len(args.target or FAST_TARGETS)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    if args.cases is None and args.minutes is None:
        args.cases = 1000
    limit_memory()
    t0 = time.monotonic()
    ptx_cases: list | None = [] if args.ptxas else None
    counts = campaign(args.target or FAST_TARGETS, args.cases, args.minutes * 60 if args.minutes else None, seed,
                      args.save, case_seconds=args.case_seconds,
                      only={int(x) for x in args.only.split(",")} if args.only else None, ptx_cases=ptx_cases)
    total = sum(sum(c.values()) for c in counts.values())
    print(f"fuzz: seed {seed}, {total} cases in {time.monotonic() - t0:.0f} s")
    for name, c in counts.items():
        print(f"  {name:<16} accepted {c['accepted']:>7}  rejected with a message {c['rejected']:>7}  "
              f"crash {c['crash']:>5}  hang {c['hang']:>3}")
    if ptx_cases is not None:
        t1 = time.monotonic()
        cmp = compare_with_ptxas(ptx_cases, args.ptxas)
        print(f"ptx cases against `{args.ptxas} -arch=sm_90` ({len(ptx_cases)} cases, {time.monotonic() - t1:.0f} s): "
              f"both accept {cmp['both accept']}, both reject {cmp['both reject']}, "
              f"hypa accepts what ptxas rejects {sum(e['count'] for e in cmp['accepted-but-invalid'].values())}, "
              f"hypa rejects what ptxas accepts {sum(e['count'] for e in cmp['rejected-but-valid'].values())}")
        for kind, side in (("accepted-but-invalid", "ptxas says"), ("rejected-but-valid", "hypa says")):
            for key, e in sorted(cmp[kind].items(), key=lambda kv: -kv[1]["count"]):
                print(f"  {kind:<21} {e['count']:>6}  case {e['example']:>6}  {side}: {key}")
        if args.ptxas_json:
            with open(args.ptxas_json, "w") as f:
                json.dump(cmp, f, indent=1)
    one_sided = [name for name, c in counts.items() if not (c["accepted"] and c["rejected"])] if args.small else []
    for name in one_sided:
        print(f"FAIL {name}: no {'accepted' if not counts[name]['accepted'] else 'rejected'} case: "
              f"the mutations no longer reach both sides")
    sys.exit(1 if one_sided or any(c["crash"] or c["hang"] for c in counts.values()) else 0)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(ROOT))
    main()
