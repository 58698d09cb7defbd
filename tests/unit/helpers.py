"""What hypa's unit tests share: paths, PTX builders for hand-written kernels, emulating a
launch in one call, the project's launches emulated once per session, the command-line tools
as subprocesses, markers that skip where a tool is missing, and scripts of benchmarks/.

Test modules import it as ``helpers`` (pytest puts ``tests/unit`` on ``sys.path``; so does
running a test file as a script); the fixtures are in ``tests/conftest.py``.  pytest is
imported where it is needed only: the semantics tests' GPU checks run where it may be missing."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(os.path.abspath(__file__)).parents[2]
KERNELS = ROOT / "tests" / "kernels"
KERNEL_PTX = KERNELS / "ptx"
LAUNCHES = KERNELS / "launches"
EXAMPLES = ROOT / "examples"
#: ``HYPA_SLOW_TESTS=1``: also the tests skipped by default for their time
SLOW_OK = os.environ.get("HYPA_SLOW_TESTS") == "1"


# -- PTX text ---------------------------------------------------------------------------------


def ptx_header(target: str = "sm_80", version: str = "8.0") -> str:
    """``.version``, ``.target`` and ``.address_size 64``, one a line."""
    return f".version {version}\n.target {target}\n.address_size 64\n"


#: the header of most hand-written test kernels
HEADER = ptx_header()

#: the registers a hand-written kernel gets unless it names its own: more of each kind than
#: the test kernels use (an undeclared register is an error; unused ones change no count)
REGISTERS = """\
    .reg .pred %p<8>;
    .reg .b16 %rs<8>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<64>;
    .reg .f64 %fd<8>;
"""


def kernel(signature: str, body: str, *, before: str = "", regs: str = REGISTERS, target: str = "sm_80",
           version: str = "8.0", visible: bool = True) -> str:
    """A PTX module: the header, ``before`` (module-level variables and functions), then
    ``.visible .entry <signature>`` declaring ``regs`` and running ``body``."""
    entry = ".visible .entry" if visible else ".entry"
    body = body.lstrip("\n").rstrip()
    return ptx_header(target, version) + before + f"\n{entry} {signature}\n{{\n{regs}{body}\n}}\n"


#: a loop counting %r2 up to the parameter k_n (``k(.param .u32 k_n)``), without the ``ret``
COUNT_TO_N = """
    ld.param.u32 %r1, [k_n];
    mov.u32 %r2, 0;
$L_loop:
    add.s32 %r2, %r2, 1;
    setp.lt.s32 %p1, %r2, %r1;
    @%p1 bra $L_loop;
"""


def store_at_tid(param: str, value: str) -> str:
    """The end of many test kernels: ``param[%r1] = value`` (``.u32``; %r1 holds the thread's
    index, %rd1 to %rd3 are used) and ``ret``, 5 instructions."""
    return f"""\
    ld.param.u64 %rd1, [{param}];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], {value};
    ret;
"""


def strided_kernel(stride: int, via_shared: bool = False) -> str:
    """``strided(a)``: thread t loads ``a[t * stride]`` (f32) and stores it back there;
    ``via_shared``: through ``sh[t * stride]`` (4-byte words of shared memory) on the way."""
    shared = ".shared .align 4 .b8 sh[4096];" if via_shared else ""
    tail = """
    mov.u32 %r3, sh;
    shl.b32 %r4, %r2, 2;
    add.s32 %r5, %r3, %r4;
    st.shared.f32 [%r5], %f1;
    ld.shared.f32 %f2, [%r5];
    st.global.f32 [%rd4], %f2;""" if via_shared else """
    st.global.f32 [%rd4], %f1;"""
    return kernel("strided(.param .u64 strided_a)", f"""
    {shared}
    ld.param.u64 %rd1, [strided_a];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.lo.s32 %r2, %r1, {stride};
    mul.wide.s32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];{tail}
    ret;
""")


def saxpy_toml(n: int, a: float, grid: int, count: int, y_init: str | None = None) -> str:
    """A launch file: one launch of ``saxpy(n, a, x, y)`` (examples/saxpy.ptx) on ``grid``
    CTAs of 256 threads, buffers of ``count`` floats, x = 0, 1, 2 ..."""
    y = f'init = "{y_init}"\n' if y_init else ""
    return (f'[[launch]]\nkernel = "saxpy"\ngrid = {grid}\nblock = 256\nargs = [{n}, {a}, "x", "y"]\n'
            f'[buffers.x]\ndtype = "float32"\ncount = {count}\ninit = "arange"\n'
            f'[buffers.y]\ndtype = "float32"\ncount = {count}\n{y}')


# -- emulation ----------------------------------------------------------------------------------


def emulate(ptx: Any, args: Sequence = (), buffers: dict | None = None, *, grid: Any = 1, block: Any = 32,
            kernel: str | None = None, mode: str = "slice", shared_bytes: int = 0, jobs: int = 1,
            per_cta: bool = False, in_place: bool = False, **options: Any):
    """Emulate one launch of ``ptx`` (PTX text or a parsed module): ``Emulator(module, mode,
    **options).run(Launch(...))``.  ``mode`` defaults to the emulator's, slice."""
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import Launch

    module = parse_ptx(ptx) if isinstance(ptx, str) else ptx
    launch = Launch(kernel=kernel, grid=grid, block=block, args=list(args), buffers=dict(buffers or {}),
                    shared_bytes=shared_bytes)
    return Emulator(module, mode=mode, **options).run(launch, jobs=jobs, per_cta=per_cta, in_place=in_place)


def emulate_elementwise(ptx: str, arrays: Sequence[np.ndarray], n: int, block: int = 128) -> list[np.ndarray]:
    """Run an :class:`ElementwiseKernel` ``k(arrays..., n)`` in full mode on ``n`` threads;
    the arrays after the launch."""
    bufs = {f"b{i}": a for i, a in enumerate(arrays)}
    res = emulate(ptx, [*bufs, n], bufs, grid=(n + block - 1) // block, block=block, kernel="k", mode="full")
    return [res.buffers[name] for name in bufs]


def run_elementwise_on_gpu(ptx: str, arrays: Sequence[np.ndarray], n: int,
                           block: int = 128) -> list[np.ndarray]:  # pragma: no cover
    """The same launch on a GPU, through CuPy (the semantics tests' ``--gpu`` check)."""
    import cupy as cp

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        fn = cp.RawModule(path=path).get_function("k")
    dev = [cp.asarray(a) for a in arrays]
    fn(((n + block - 1) // block,), (block,), tuple(dev) + (np.uint32(n),))
    cp.cuda.Device().synchronize()
    return [d.get() for d in dev]


PRED = ".pred"
#: bits of a value of each register type in memory (a predicate as a 32-bit word)
WIDTH = {".b8": 8, ".b16": 16, ".b32": 32, ".b64": 64, PRED: 1}
DTYPE = {".b8": np.uint8, ".b16": np.uint16, ".b32": np.uint32, ".b64": np.uint64, PRED: np.uint32}


@dataclass
class InputGroup:
    """Test cases sharing their inputs (one :class:`ElementwiseKernel` runs them all):
    ``inputs`` maps an input's name to its register type and one value per thread."""

    name: str
    inputs: dict[str, tuple[str, list[int]]]
    cases: list = field(default_factory=list)

    @property
    def n(self) -> int:
        """The number of threads: values per input."""
        return len(next(iter(self.inputs.values()))[1])

    def rows(self) -> Iterator[dict[str, int]]:
        """Each thread's inputs by name."""
        names = list(self.inputs)
        for vals in zip(*(self.inputs[k][1] for k in names)):
            yield dict(zip(names, vals))


class ElementwiseKernel:
    """A kernel ``k(inputs..., outputs..., n)`` whose thread i (i < n) loads element i of
    each input buffer into a register; the caller adds statements and stores, :meth:`ptx`
    writes the module."""

    def __init__(self, version: str = "8.5", target: str = "sm_90", name: str = "k"):
        self.version, self.target, self.name = version, target, name
        self.decls: list[str] = []
        self.body: list[str] = []
        self.params: list[str] = []
        for r in ("%v_n", "%v_gid", "%v_cta", "%v_ntid", "%v_tid"):
            self.reg(r, ".b32")
        self.reg("%v_g64", ".b64")
        self.reg("%v_out_of_range", PRED)
        self.body += [f"ld.param.u32 %v_n, [{name}_n];", "mov.u32 %v_cta, %ctaid.x;", "mov.u32 %v_ntid, %ntid.x;",
                      "mov.u32 %v_tid, %tid.x;", "mad.lo.s32 %v_gid, %v_cta, %v_ntid, %v_tid;",
                      "setp.ge.u32 %v_out_of_range, %v_gid, %v_n;", "@%v_out_of_range bra $L_done;",
                      "cvt.u64.u32 %v_g64, %v_gid;"]

    def reg(self, name: str, t: str) -> str:
        """Declare register ``name`` of type ``t``."""
        self.decls.append(f".reg {t} {name};")
        return name

    def param(self, tag: str, row_bytes: int) -> str:
        """A pointer parameter ``<name>_<tag>``: a register holding the address of row i
        (``row_bytes`` a row) of the buffer it points to."""
        p = f"{self.name}_{tag}"
        self.params.append(f".param .u64 {p}")
        base, addr = self.reg(f"%pb_{tag}", ".b64"), self.reg(f"%pe_{tag}", ".b64")
        self.body += [f"ld.param.u64 {base}, [{p}];", f"cvta.to.global.u64 {base}, {base};",
                      f"mad.lo.u64 {addr}, %v_g64, {row_bytes}, {base};"]
        return addr

    def load(self, iname: str, t: str) -> str:
        """Input ``iname`` of type ``t``: element i loaded into a register (a predicate from
        a non-zero 32-bit word)."""
        addr = self.param(f"in_{iname}", 4 if t == PRED else WIDTH[t] // 8)
        r = self.reg(f"%in_{iname}", t)
        if t == PRED:
            w = self.reg(f"%inw_{iname}", ".b32")
            self.body += [f"ld.global.u32 {w}, [{addr}];", f"setp.ne.u32 {r}, {w}, 0;"]
        else:
            self.body.append(f"ld.global{'.u8' if t == '.b8' else t} {r}, [{addr}];")
        return r

    def add(self, statements: str) -> None:
        """PTX statements, ``;``-separated."""
        self.body += [s.strip() + ";" for s in statements.split(";") if s.strip()]

    def ptx(self) -> str:
        self.params.append(f".param .u32 {self.name}_n")
        lines = [f".visible .entry {self.name}(", ",\n".join("\t" + p for p in self.params), ")", "{"]
        lines += ["\t" + d for d in self.decls] + ["\t" + s for s in self.body]
        return ptx_header(self.target, self.version) + "\n" + "\n".join(lines + ["$L_done:", "\tret;", "}", ""])


class KernelRuns:
    """The project's test kernels (``tests/kernels/ptx``) parsed once, and their launches
    emulated once per mode with exact predicates: the outputs and counts several test
    modules check (a launch is deterministic, the emulator does not change the module)."""

    def __init__(self) -> None:
        self._results: dict[tuple, Any] = {}

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def module(path: str):
        from hypa.ptxdialect import parse_ptx_file

        return parse_ptx_file(os.path.normpath(path))

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def emulator(path: str, mode: str, schedule: str = "warp"):
        from hypa.runtime.emulator.emulator import Emulator

        return Emulator(KernelRuns.module(os.path.normpath(path)), mode=mode, exact_predicates=True,
                        schedule=schedule)

    def run(self, launch, mode: str, path: str | None = None, schedule: str = "warp"):
        """``launch`` (of a launch file) in ``mode`` and under ``schedule``, on the PTX of
        ``path`` (default: the launch's own file)."""
        path = os.path.normpath(path or launch.file)
        key = (path, mode, schedule, repr(launch))
        if key not in self._results:
            self._results[key] = self.emulator(path, mode, schedule).run(launch)
        return self._results[key]


# -- tools -----------------------------------------------------------------------------------


def which(tool: str) -> str | None:
    """Where ``tool`` is on PATH (chromium: under any of its names; CUDA's tools also where
    their wheels install them, as ``nvidia-cuda-nvdisasm`` does nvdisasm)."""
    import glob
    import sysconfig

    names = ("chromium", "chromium-browser", "google-chrome") if tool == "chromium" else (tool,)
    found = next((p for p in map(shutil.which, names) if p), None)
    if found is None:
        hits = glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "*", "bin", tool))
        found = hits[0] if hits else None
    return found


CHROMIUM = which("chromium")


def requires(*tools: str):
    """A mark: skip unless every one of ``tools`` is on PATH."""
    import pytest

    missing = [t for t in tools if which(t) is None]
    return pytest.mark.skipif(bool(missing), reason=f"{' and '.join(missing)} is not installed")


HYPA = [sys.executable, "-m", "hypa.tools.hypa_cli"]
HYPA_OPT = [sys.executable, "-m", "hypa.tools.hypa_opt"]


def run_tool(cmd: Sequence[str], *args: Any, stdin: Any = None, text: bool = True, timeout: float | None = 300,
             **kw: Any) -> subprocess.CompletedProcess:
    """``cmd args...`` with its output captured; stdin is ``stdin`` or empty, and no
    ``HYPA_TRACEBACK`` (the tests check what a user sees)."""
    env = dict(kw.pop("env", os.environ))
    env.pop("HYPA_TRACEBACK", None)
    if stdin is None:
        kw["stdin"] = subprocess.DEVNULL
    else:
        kw["input"] = stdin
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=text, timeout=timeout, env=env, **kw)


def run_hypa(*args: Any, **kw: Any) -> subprocess.CompletedProcess:
    """``hypa args...`` as a process (this interpreter: no PATH lookup, the same venv)."""
    return run_tool(HYPA, *args, **kw)


def run_hypa_opt(*args: Any, **kw: Any) -> subprocess.CompletedProcess:
    """``hypa-opt args...`` as a process."""
    return run_tool(HYPA_OPT, *args, **kw)


def call_main(main, argv: Sequence[str], capsys, must_exit: bool = False) -> tuple[Any, str, str]:
    """A command's ``main(argv)`` in this process: (exit status, stdout, stderr).
    ``must_exit``: the command ends with ``SystemExit`` whatever happens."""
    import pytest

    code: Any = 0
    if must_exit:
        with pytest.raises(SystemExit) as e:
            main(list(argv))
        code = e.value.code
    else:
        try:
            main(list(argv))
        except SystemExit as e:
            code = e.code
    out, err = capsys.readouterr()
    return code or 0, out, err


def nvcc(src: Any, exe: Any, *flags: str, shared: bool = True, arch: str = "sm_90",
         timeout: float = 300) -> subprocess.CompletedProcess:
    """``nvcc [-cudart shared] -arch=<arch> flags... -o exe src``, output captured."""
    cmd = ["nvcc", *(["-cudart", "shared"] if shared else []), f"-arch={arch}", *flags, "-o", str(exe), str(src)]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)


def build_cuda_program(folder: Path, name: str, source: str) -> Path:
    """``folder/<name>.cu`` holding ``source``, built for ``hypa run`` (sm_90, shared
    cudart); skips the test where nvcc is missing or fails."""
    import pytest

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    src = folder / f"{name}.cu"
    src.write_text(source)
    p = nvcc(src, folder / name)
    if p.returncode != 0:
        pytest.skip(f"nvcc failed: {p.stderr[-500:]}")
    return folder / name


def ptxas_candidates() -> list[str]:
    """ptxas on PATH, ``$HYPA_PTXAS``, then CUDA 12's from the nvidia-cuda-nvcc-cu12 wheel
    (it still knows sm_52 and sm_70, which CUDA 13 dropped)."""
    out = [p for p in (shutil.which("ptxas"), os.environ.get("HYPA_PTXAS")) if p]
    try:
        import nvidia.cuda_nvcc  # type: ignore[import-not-found]

        out.append(str(Path(list(nvidia.cuda_nvcc.__path__)[0]) / "bin" / "ptxas"))
    except ImportError:
        pass
    return [p for p in out if os.access(p, os.X_OK)]


def ptxas(path: Any, arch: str, exe: str = "ptxas", *flags: str) -> subprocess.CompletedProcess:
    """``exe flags... -arch=<arch> path -o /dev/null``, output captured."""
    return subprocess.run([exe, *flags, f"-arch={arch}", str(path), "-o", os.devnull], capture_output=True, text=True)


@functools.lru_cache(maxsize=None)
def ptxas_for(version: str, arch: str) -> str | None:
    """The first of :func:`ptxas_candidates` that assembles an empty kernel with this
    ``.version`` and ``.target``."""
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "probe.ptx"
        f.write_text(kernel("probe()", "\tret;\n", regs="", target=arch, version=version))
        for exe in ptxas_candidates():
            if ptxas(f, arch, exe).returncode == 0:
                return exe
    return None


def load_script(relpath: str):
    """A script of the repository (``benchmarks/...``) imported as a module."""
    name = "_hypa_script_" + Path(relpath).stem
    spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


ISA_PROGRAMS = ROOT / "tests" / "cuda_programs" / "isa"
ISA_NATIVE = ROOT / "tests" / "ground_truth" / "hypa_run" / "isa_native.json"


def gpu_recorded_run(name: str) -> dict | None:
    """What ``tests/cuda_programs/isa/<name>.cu`` printed on the GPU (``{"rc", "stdout",
    "stderr"}``, recorded by ``benchmarks/gpu/isa_programs_native.sh``), or None where the
    recording predates the program."""
    import json

    if not ISA_NATIVE.exists():
        return None
    return json.loads(ISA_NATIVE.read_text())["programs"].get(name)
