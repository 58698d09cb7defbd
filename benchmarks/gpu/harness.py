#!/usr/bin/env python3
"""Ground truth from a real GPU: block counters, Nsight Compute, instruction probes.

Run on a machine with an NVIDIA GPU, CuPy and (optionally) ``ncu``; see
``benchmarks/gpu/README.md`` for the exact command.  Everything goes under
``--out``:

``counts.json``
    per launch of every launch TOML given (docs/guide.md, "Launch specification"): the
    instrumented kernel's per-block warp and thread counts, per-branch
    executed/divergent/taken counts, per-guard true-lane counts (the
    ``instrument-block-counters`` pass, with its counter map), the metrics
    they determine, sha256 of every buffer after the uninstrumented and the
    instrumented run, the kernel's time, and Nsight Compute's SASS-level
    metrics of the uninstrumented kernel with the wall time ``ncu`` took.
``outputs.npz``
    the buffers after the uninstrumented run (key ``<launch>__<buffer>``).
``probes.json`` / ``probes.npz``
    single-instruction probe kernels (``probes.py``) and the GPU's outputs.
``ncu_raw.txt``, ``harness.log``
    what ``ncu`` printed, and the harness's own log.

Robustness: the orchestrating process never touches the GPU; launches and
probes run in worker processes that write one JSON line per item, so a
launch that faults (a sticky CUDA error), hangs or kills its worker is
recorded as failed and a fresh worker carries on with the next one.  Results
are rewritten after every phase and every ``ncu`` run, and ``--deadline``
stops starting new work in time.

Subcommands: ``all`` (default: counts, probes, ncu), ``counts``, ``probes``;
``worker``, ``plain`` and ``emulate`` are internal.  ``--backend emulator``
runs everything through hypa's own emulator instead of CuPy (no GPU needed):
it exercises the harness and produces recordings the CI comparison accepts.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import datetime
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HARNESS_VERSION = 1
COUNTS_KIND = "hypa-ground-truth-counts"
PROBES_KIND = "hypa-ground-truth-probes"

#: Nsight Compute metrics asked for (those the installed ncu lacks are dropped)
NCU_METRICS = [
    "smsp__sass_inst_executed.sum",
    "smsp__sass_thread_inst_executed.sum",
    "smsp__sass_thread_inst_executed_pred_on.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "smsp__thread_inst_executed_pred_on.sum",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "smsp__sass_branch_targets.sum",
    "smsp__sass_branch_targets_threads_divergent.sum",
    "smsp__sass_branch_targets_threads_uniform.sum",
    "smsp__sass_inst_executed_op_branch.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "gpu__time_duration.sum",
    "launch__registers_per_thread",
]
#: with ``--ncu-set memory``: what the memory system was asked for (issue 7's
#: memory divergence metrics): L1TEX sectors and requests of global loads and
#: stores, shared-memory wavefronts and bank conflicts, and the SASS memory
#: instructions behind them
NCU_MEMORY_METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "smsp__sass_inst_executed.sum",
    "smsp__sass_thread_inst_executed.sum",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
]
#: asked for alone when ncu rejects the list above
NCU_MINIMAL = ["smsp__sass_inst_executed.sum", "smsp__sass_thread_inst_executed.sum",
               "smsp__sass_average_branch_targets_threads_uniform.pct"]

LOG: list[str] = []
_log_file: io.TextIOBase | None = None


def log(msg: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, file=sys.stderr, flush=True)
    if _log_file is not None:
        _log_file.write(line + "\n")
        _log_file.flush()


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def file_sha(path: Path) -> str | None:
    try:
        return sha256_bytes(path.read_bytes())
    except OSError:
        return None


#: the device tool brings back files of at most 16 MiB: a larger recording comes back gzipped
#: (a few hundred launches of big kernels, per-block counts and counter maps, pass this)
MAX_PLAIN_BYTES = 15 << 20


def _compress_if_large(path: Path) -> None:
    """Replace ``path`` by ``path.gz`` when it is too large to come back as it is
    (``compare.py`` and ``memory_compare.py`` read either)."""
    if not path.exists() or path.stat().st_size <= MAX_PLAIN_BYTES:
        return
    import gzip

    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    log(f"{path.name} is over {MAX_PLAIN_BYTES >> 20} MiB: written as {path.name}.gz")


def write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_json_default) + "\n")
    os.replace(tmp, path)


def _json_default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return repr(o)


# ---------------------------------------------------------------------------
# Importing hypa from this checkout (the repository root is the package)
# ---------------------------------------------------------------------------


def import_hypa():
    try:
        import hypa

        if Path(hypa.__file__).resolve().parent == ROOT:
            return hypa
    except ImportError:
        pass
    for m in [m for m in sys.modules if m == "hypa" or m.startswith("hypa.")]:
        del sys.modules[m]
    d = tempfile.mkdtemp(prefix="hypa-import-")
    os.symlink(ROOT, os.path.join(d, "hypa"))
    sys.path.insert(0, d)
    import hypa

    return hypa


def import_probes():
    sys.path.insert(0, str(HERE))
    import probes

    return probes


# ---------------------------------------------------------------------------
# Preparing launches (orchestrator side: hypa + numpy, no GPU)
# ---------------------------------------------------------------------------

_SCALAR_DTYPES = {
    ".u8": "uint8", ".s8": "int8", ".b8": "uint8", ".u16": "uint16", ".s16": "int16", ".b16": "uint16",
    ".u32": "uint32", ".s32": "int32", ".b32": "uint32", ".u64": "uint64", ".s64": "int64",
    ".b64": "uint64", ".f32": "float32", ".f64": "float64", ".f16": "float16",
}


def pack_params(params: tuple, args: list) -> list[dict]:
    """One entry per kernel parameter: a buffer (by name) or the parameter's bytes,
    converted as the emulator converts launch arguments (runtime/emulator/emulator.py)."""
    import numpy as np

    from hypa.ptxdialect import isa

    if len(params) != len(args):
        raise ValueError(f"the kernel takes {len(params)} parameters, the launch gives {len(args)} arguments")
    out = []
    for (_text, name, _space, ptx_type, _align, dims), a in zip(params, args):
        size = max(1, isa.TYPE_BITS.get(ptx_type, 64) // 8)
        for d in dims:
            size *= max(d, 0)
        if isinstance(a, str):
            if size not in (4, 8):
                raise ValueError(f"parameter {name} ({ptx_type}) cannot hold a buffer address")
            out.append({"param": name, "kind": "buffer", "name": a, "size": size})
            continue
        if isinstance(a, (bytes, bytearray)):
            raw = bytes(a[:size]).ljust(size, b"\0")
        elif isinstance(a, (int, np.integer)) and ptx_type in (".b8", ".u8", ".s8") and size > 1:
            raw = (int(a) % (1 << (8 * size))).to_bytes(size, "little")
        else:
            dt = _SCALAR_DTYPES.get(ptx_type)
            if dt is None:
                raise ValueError(f"parameter {name} ({ptx_type}) needs bytes or a buffer, not {a!r}")
            if isinstance(a, float) and np.dtype(dt).kind != "f":
                a = int(a)
            raw = np.array(a).astype(dt).tobytes()[:size].ljust(size, b"\0")
        out.append({"param": name, "kind": "bytes", "hex": raw.hex(), "size": size})
    return out


def _json_arg(a):
    return a if isinstance(a, (int, float, str)) else repr(a)


def prepare_launches(tomls: list[str], work: Path, only: str | None) -> tuple[list[dict], list[dict]]:
    """Records (one per launch, in order) and worker jobs (for launches that are ready)."""
    import numpy as np

    from hypa.passes.instrument import instrument_ptx
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.launch import launches_from_toml
    from hypa.runtime.emulator.program import find_kernel

    records: list[dict] = []
    jobs: list[dict] = []
    parsed: dict[str, tuple] = {}
    stems: dict[str, int] = {}
    for toml in tomls:
        tpath = Path(toml).resolve()
        rel = os.path.relpath(tpath, ROOT)
        stem = tpath.stem
        stems[stem] = stems.get(stem, 0) + 1
        if stems[stem] > 1:
            stem = f"{stem}{stems[stem]}"
        try:
            launches = launches_from_toml(str(tpath))
        except Exception as e:  # noqa: BLE001
            records.append({"id": f"{stem}#*", "toml": rel, "status": "error", "stage": "toml", "error": str(e)})
            continue
        for i, ln in enumerate(launches):
            jid = f"{stem}#{i}"
            if only and not re.search(only, jid):
                continue
            rec: dict = {
                "id": jid, "toml": rel, "index": i, "kernel": ln.kernel, "grid": list(ln.grid), "block": list(ln.block),
                "shared_bytes": ln.shared_bytes, "args": [_json_arg(a) for a in ln.args],
                "file": os.path.relpath(ln.file, ROOT) if ln.file else None,
            }
            records.append(rec)
            try:
                if not ln.file:
                    raise ValueError("the launch names no PTX file")
                if ln.file not in parsed:
                    text = Path(ln.file).read_text()
                    itext, cmap = instrument_ptx(text)
                    parsed[ln.file] = (text, parse_ptx(text), itext, cmap)
                text, module, itext, cmap = parsed[ln.file]
                func = find_kernel(module, ln.kernel)
                params = pack_params(func.params.data, ln.args)
                buffers = ln.materialize_buffers()
                jdir = work / f"launch{len(jobs):03d}"
                jdir.mkdir(parents=True)
                (jdir / "original.ptx").write_text(text)
                (jdir / "instrumented.ptx").write_text(itext)
                bufs = []
                for name, arr in buffers.items():
                    np.save(jdir / f"buf_{name}.npy", np.ascontiguousarray(arr))
                    bufs.append({"name": name, "dtype": str(arr.dtype), "count": int(arr.size)})
                rec.update(entry=func.func_name, ptx_sha256=sha256_bytes(text.encode()), counter_map=cmap.as_dict())
                job = {
                    "kind": "launch", "id": jid, "dir": str(jdir), "entry": func.func_name, "grid": list(ln.grid),
                    "block": list(ln.block), "shared_bytes": ln.shared_bytes, "params": params, "buffers": bufs,
                    "symbol": cmap.symbol, "slots": cmap.slots, "record": len(records) - 1,
                }
                (jdir / "job.json").write_text(json.dumps(job))
                jobs.append(job)
            except Exception as e:  # noqa: BLE001
                rec.update(status="error", stage="prepare", error=f"{type(e).__name__}: {e}")
                log(f"{jid}: cannot prepare: {type(e).__name__}: {e}")
    return records, jobs


def prepare_probes(work: Path, n: int, limit: int | None, only: str | None) -> tuple[list[dict], list[dict]]:
    import numpy as np

    from hypa.runtime.emulator.probe import instruction_kernel

    probes = import_probes()
    specs = probes.probe_specs()
    if only:
        specs = [s for s in specs if re.search(only, s.id)]
    if limit is not None:
        specs = specs[:limit]
    records, jobs = [], []
    for k, spec in enumerate(specs):
        rec = spec.as_dict()
        records.append(rec)
        try:
            p = instruction_kernel(spec.instruction, spec.sources, spec.results, target=spec.target, version=spec.version,
                                   result_operand=spec.result_operand, guard=spec.guard, operands=spec.operands)
            ins = probes.probe_inputs(spec, n)
            jdir = work / f"probe{k:04d}"
            jdir.mkdir(parents=True)
            (jdir / "probe.ptx").write_text(p.ptx)
            for j, a in enumerate(ins):
                np.save(jdir / f"in{j}.npy", a)
            rec["inputs_sha256"] = probes.inputs_digest(ins)
            rec["ptx_sha256"] = sha256_bytes(p.ptx.encode())
            job = {"kind": "probe", "id": spec.id, "dir": str(jdir), "entry": p.kernel, "n": n, "inputs": len(ins),
                   "results": [str(np.dtype(probes.result_dtype(t))) for t in spec.results], "record": k}
            (jdir / "job.json").write_text(json.dumps(job))
            jobs.append(job)
        except Exception as e:  # noqa: BLE001
            rec.update(status="error", stage="prepare", error=f"{type(e).__name__}: {e}")
    return records, jobs


# ---------------------------------------------------------------------------
# Backends (worker side)
# ---------------------------------------------------------------------------


class CupyBackend:
    name = "cupy"

    def __init__(self):
        import cupy as cp
        from cupy.cuda import driver, runtime

        self.cp, self.driver, self.runtime = cp, driver, runtime
        cp.cuda.Device(0).use()
        runtime.free(runtime.malloc(16))  # create the context now

    def env(self) -> dict:
        cp, runtime = self.cp, self.runtime
        props = runtime.getDeviceProperties(0)
        name = props.get("name", b"")
        return {
            "backend": "cupy", "cupy": cp.__version__, "device": name.decode() if isinstance(name, bytes) else str(name),
            "cc": f"{props.get('major')}.{props.get('minor')}", "sm_count": props.get("multiProcessorCount"),
            "driver_version": runtime.driverGetVersion(), "runtime_version": runtime.runtimeGetVersion(),
        }

    def load(self, path: Path) -> int:
        return self.driver.moduleLoadData(path.read_bytes() + b"\0")

    def unload(self, mod: int) -> None:
        try:
            self.driver.moduleUnload(mod)
        except Exception:  # noqa: BLE001
            pass

    def upload(self, arrays: dict) -> dict:
        return {k: self.cp.asarray(v) for k, v in arrays.items()}

    def launch(self, mod: int, entry: str, grid, block, shared: int, params: list[dict], dev: dict) -> None:
        f = self.driver.moduleGetFunction(mod, entry)
        if shared > 48 * 1024:
            self.driver.funcSetAttribute(f, 8, shared)  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        holders = []
        for p in params:
            if p["kind"] == "buffer":
                raw = int(dev[p["name"]].data.ptr).to_bytes(8, "little")[: p["size"]]
            else:
                raw = bytes.fromhex(p["hex"])
            holders.append(ctypes.create_string_buffer(raw, max(len(raw), 8)))
        arr = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
        self.driver.launchKernel(f, *grid, *block, shared, 0, ctypes.addressof(arr) if holders else 0, 0)

    def sync(self) -> None:
        self.runtime.deviceSynchronize()

    def download(self, dev: dict) -> dict:
        return {k: self.cp.asnumpy(v) for k, v in dev.items()}

    def global_ptr(self, mod: int, symbol: str) -> int:
        return self.driver.moduleGetGlobal(mod, symbol)

    def zero(self, ptr: int, nbytes: int) -> None:
        self.runtime.memset(ptr, 0, nbytes)

    def read(self, ptr: int, nbytes: int):
        import numpy as np

        host = np.zeros(nbytes // 8, np.uint64)
        self.runtime.memcpy(host.ctypes.data, ptr, nbytes, self.runtime.memcpyDeviceToHost)
        return host

    def timed_launch(self, *a) -> float:
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self.launch(*a)
        end.record()
        end.synchronize()
        return float(cp.cuda.get_elapsed_time(start, end))

    def healthy(self) -> bool:
        try:
            self.runtime.deviceSynchronize()
            self.cp.asnumpy(self.cp.arange(4))
            return True
        except Exception:  # noqa: BLE001
            return False

    # -- jobs --------------------------------------------------------------------------

    def run_launch(self, job: dict, plain_only: bool = False) -> dict:
        import numpy as np

        jdir = Path(job["dir"])
        host = {b["name"]: np.load(jdir / f"buf_{b['name']}.npy") for b in job["buffers"]}
        res: dict = {}
        grid, block, shared = job["grid"], job["block"], job["shared_bytes"]
        mod = self.load(jdir / "original.ptx")
        try:
            dev = self.upload(host)
            self.launch(mod, job["entry"], grid, block, shared, job["params"], dev)
            self.sync()
            if plain_only:
                return res
            out = self.download(dev)
            for k, v in out.items():
                np.save(jdir / f"out_{k}.npy", v)
            res["plain_sha256"] = {k: sha256_bytes(v.tobytes()) for k, v in out.items()}
            dev = self.upload(host)  # the timed run starts from the same inputs
            res["gpu_time_ms"] = self.timed_launch(mod, job["entry"], grid, block, shared, job["params"], dev)
            del dev
        finally:
            self.unload(mod)
        mod = self.load(jdir / "instrumented.ptx")
        try:
            ptr = self.global_ptr(mod, job["symbol"])
            nbytes = 8 * job["slots"]
            self.zero(ptr, nbytes)
            dev = self.upload(host)
            self.launch(mod, job["entry"], grid, block, shared, job["params"], dev)
            self.sync()
            res["counters"] = [int(x) for x in self.read(ptr, nbytes)]
            res["instrumented_sha256"] = {k: sha256_bytes(v.tobytes()) for k, v in self.download(dev).items()}
        finally:
            self.unload(mod)
        return res

    def run_probe(self, job: dict) -> dict:
        import numpy as np

        jdir = Path(job["dir"])
        n = job["n"]
        ins = {f"in{j}": np.load(jdir / f"in{j}.npy") for j in range(job["inputs"])}
        outs = {f"out{k}": np.zeros(n, dt) for k, dt in enumerate(job["results"])}
        mod = self.load(jdir / "probe.ptx")
        try:
            dev = self.upload({**ins, **outs})
            params = [{"kind": "buffer", "name": k, "size": 8} for k in [*ins, *outs]]
            params.append({"kind": "bytes", "hex": int(n).to_bytes(4, "little").hex(), "size": 4})
            self.launch(mod, job["entry"], [(n + 127) // 128, 1, 1], [128, 1, 1], 0, params, dev)
            self.sync()
            got = self.download({k: dev[k] for k in outs})
        finally:
            self.unload(mod)
        for k, v in got.items():
            np.save(jdir / f"{k}.npy", v)
        return {"outputs": len(got)}


class EmulatorBackend:
    """hypa's emulator standing in for the GPU (tests the harness without one)."""

    name = "emulator"

    def __init__(self):
        import_hypa()

    def env(self) -> dict:
        return {"backend": "emulator", "device": "hypa emulator (IPDOM model)", "cc": None}

    def healthy(self) -> bool:
        return True

    def _run(self, ptx: str, job: dict, host: dict):
        import numpy as np

        from hypa.ptxdialect import parse_ptx
        from hypa.runtime.emulator.emulator import Emulator
        from hypa.runtime.emulator.launch import Launch

        args = []
        for p in job["params"]:
            if p["kind"] == "buffer":
                args.append(p["name"])
            else:
                args.append(bytes.fromhex(p["hex"]))
        bufs = {k: v.copy() for k, v in host.items()}
        t = time.perf_counter()
        r = Emulator(parse_ptx(ptx), mode="full").run(
            Launch(kernel=job["entry"], grid=job["grid"], block=job["block"], args=args, buffers=bufs,
                   shared_bytes=job.get("shared_bytes", 0)))
        return r, 1000 * (time.perf_counter() - t), np

    def run_launch(self, job: dict, plain_only: bool = False) -> dict:
        import numpy as np

        jdir = Path(job["dir"])
        host = {b["name"]: np.load(jdir / f"buf_{b['name']}.npy") for b in job["buffers"]}
        r, ms, _ = self._run((jdir / "original.ptx").read_text(), job, host)
        if plain_only:
            return {}
        for k, v in r.buffers.items():
            np.save(jdir / f"out_{k}.npy", v)
        res = {"plain_sha256": {k: sha256_bytes(v.tobytes()) for k, v in r.buffers.items()}, "gpu_time_ms": ms}
        ri, _, _ = self._run((jdir / "instrumented.ptx").read_text(), job, host)
        raw = ri.globals[job["symbol"]]
        res["counters"] = [int(x) for x in np.frombuffer(raw.tobytes(), np.uint64)[: job["slots"]]]
        res["instrumented_sha256"] = {k: sha256_bytes(v.tobytes()) for k, v in ri.buffers.items()}
        return res

    def run_probe(self, job: dict) -> dict:
        import numpy as np

        jdir = Path(job["dir"])
        n = job["n"]
        ins = {f"in{j}": np.load(jdir / f"in{j}.npy") for j in range(job["inputs"])}
        outs = {f"out{k}": np.zeros(n, dt) for k, dt in enumerate(job["results"])}
        params = [{"kind": "buffer", "name": k, "size": 8} for k in [*ins, *outs]]
        params.append({"kind": "bytes", "hex": int(n).to_bytes(4, "little").hex(), "size": 4})
        job2 = dict(job, params=params, grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1])
        r, _, _ = self._run((jdir / "probe.ptx").read_text(), job2, {**ins, **outs})
        for k in outs:
            np.save(jdir / f"{k}.npy", r.buffers[k])
        return {"outputs": len(outs)}


def make_backend(name: str):
    return CupyBackend() if name == "cupy" else EmulatorBackend()


# ---------------------------------------------------------------------------
# Workers and their supervision
# ---------------------------------------------------------------------------


def worker_main(a) -> int:
    jobs = json.loads(Path(a.jobs).read_text())
    out = open(a.results, "a")

    def emit(d: dict) -> None:
        out.write(json.dumps(d, default=_json_default) + "\n")
        out.flush()

    try:
        backend = make_backend(a.backend)
        if a.start == 0:
            emit({"type": "env", **backend.env()})
    except Exception as e:  # noqa: BLE001
        emit({"type": "fatal", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()})
        return 2
    for k in range(a.start, len(jobs)):
        job = jobs[k]
        emit({"type": "start", "k": k, "id": job["id"]})
        fault = os.environ.get("HYPA_HARNESS_FAULT", "")  # tests: "crash:<id>", "hang:<id>", "sticky:<id>"
        if fault.partition(":")[2] == job["id"]:
            if fault.startswith("crash:"):
                os._exit(1)
            if fault.startswith("hang:"):
                time.sleep(3600)
            if fault.startswith("sticky:"):
                emit({"type": "result", "k": k, "id": job["id"], "status": "error", "error": "injected sticky error"})
                return 3
        t = time.perf_counter()
        try:
            if a.mode == "emulate":
                res = emulate_job(job)
            elif job["kind"] == "probe":
                res = backend.run_probe(job)
            else:
                res = backend.run_launch(job)
            res["status"] = "ok"
        except Exception as e:  # noqa: BLE001
            res = {"status": "error", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
        res["worker_s"] = time.perf_counter() - t
        emit({"type": "result", "k": k, "id": job["id"], **res})
        if res["status"] == "error" and not backend.healthy():
            return 3  # a sticky error: the next job needs a fresh context
    return 0


def supervise(mode: str, jobs: list[dict], work: Path, backend: str, job_timeout: float, deadline: float) -> dict[int, dict]:
    """Run ``jobs`` in worker processes; restart after crashes, hangs and sticky errors.
    Returns {job index: result} and the env record under key -1."""
    jfile = work / f"{mode}_jobs.json"
    jfile.write_text(json.dumps(jobs))
    rfile = work / f"{mode}_results.jsonl"
    results: dict[int, dict] = {}
    start = 0
    restarts = 0
    while start < len(jobs):
        if time.time() > deadline:
            for k in range(start, len(jobs)):
                results.setdefault(k, {"status": "skipped", "error": "deadline"})
            break
        cmd = [sys.executable, str(Path(__file__).resolve()), "worker", "--mode", mode, "--jobs", str(jfile),
               "--results", str(rfile), "--start", str(start), "--backend", backend]
        pos = rfile.stat().st_size if rfile.exists() else 0
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(work / f"{mode}_worker.err", "a"))
        current, since = None, time.time()
        killed_reason = None
        while True:
            rc = proc.poll()
            if rfile.exists():
                with open(rfile) as f:
                    f.seek(pos)
                    chunk = f.read()
                # only whole lines
                cut = chunk.rfind("\n") + 1
                pos += len(chunk[:cut].encode())
                for line in chunk[:cut].splitlines():
                    try:
                        d = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    if d.get("type") == "env":
                        results[-1] = d
                    elif d.get("type") == "fatal":
                        results[-2] = d
                    elif d.get("type") == "start":
                        current, since = d["k"], time.time()
                    elif d.get("type") == "result":
                        results[d["k"]] = d
                        current = None
            if rc is not None:
                break
            now = time.time()
            if current is not None and now - since > job_timeout:
                killed_reason = f"timeout after {job_timeout:.0f} s"
            elif now > deadline + 30:
                killed_reason = "deadline"
            if killed_reason:
                proc.kill()
                proc.wait()
                break
            time.sleep(0.05)
        fatal = results.pop(-2, None)
        if fatal is not None:
            log(f"{mode}: the worker cannot start: {fatal.get('error')}")
            for k in range(start, len(jobs)):
                results.setdefault(k, {"status": "error", "error": "worker cannot start: " + str(fatal.get("error"))})
            results[-3] = fatal
            break
        done = [k for k in results if k >= 0]
        nxt = max(done) + 1 if done else start
        if current is not None and current not in results:
            why = killed_reason or f"worker exited with code {proc.returncode}"
            results[current] = {"status": "error", "error": why}
            log(f"{mode}: {jobs[current]['id']}: {why}")
            nxt = current + 1
        elif nxt == start and proc.returncode not in (0, None):
            results[start] = {"status": "error", "error": f"worker exited with code {proc.returncode} before reporting"}
            nxt = start + 1
        if nxt < len(jobs):
            restarts += 1
            log(f"{mode}: restarting the worker at {nxt}/{len(jobs)} ({restarts} restarts)")
        start = max(nxt, start + (1 if nxt == start else 0))
    return results


# ---------------------------------------------------------------------------
# Nsight Compute
# ---------------------------------------------------------------------------


def _number(text: str):
    t = text.strip().replace(",", "")
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return text.strip()


def parse_ncu_csv(text: str) -> list[dict]:
    """ncu ``--csv`` output (details page: one row per metric; or raw page: one
    row per kernel) -> [{"id", "kernel", "metrics": {name: value}, "units": {...}}]."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.reader(lines))
    header = rows[0]
    kernels: dict[str, dict] = {}
    if "Metric Name" in header and "Metric Value" in header:
        h = {n: i for i, n in enumerate(header)}
        for r in rows[1:]:
            if len(r) != len(header) or r[h["Metric Name"]] == "Metric Name":
                continue
            kid = r[h.get("ID", 0)]
            k = kernels.setdefault(kid, {"id": kid, "kernel": r[h["Kernel Name"]] if "Kernel Name" in h else "",
                                         "metrics": {}, "units": {}})
            name = r[h["Metric Name"]]
            k["metrics"][name] = _number(r[h["Metric Value"]])
            if "Metric Unit" in h:
                k["units"][name] = r[h["Metric Unit"]]
        return list(kernels.values())
    # raw page: header, then units, then one row per kernel
    units = rows[1] if len(rows) > 1 else []
    for r in rows[2:]:
        d = dict(zip(header, r))
        kid = d.get("ID", str(len(kernels)))
        metrics = {n: _number(v) for n, v in d.items() if "__" in n}
        kernels[kid] = {"id": kid, "kernel": d.get("Kernel Name", ""), "metrics": metrics,
                        "units": {n: u for n, u in zip(header, units) if "__" in n}}
    return list(kernels.values())


def ncu_available_metrics(ncu: str) -> set[str] | None:
    try:
        p = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=45, env=_c_locale())
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"ncu --query-metrics failed: {e}")
        return None
    names = set(re.findall(r"^\s*([a-z0-9]+__[a-z0-9_]+)", p.stdout, re.M))
    return names or None


def _c_locale() -> dict:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    return env


def run_ncu(ncu: str, metrics: list[str], job: dict, timeout: float, raw_log) -> dict:
    cmd = [ncu, "--metrics", ",".join(metrics), "--csv", "--print-units", "base", "--clock-control", "none",
           sys.executable, str(Path(__file__).resolve()), "plain", "--job", str(Path(job["dir"]) / "job.json")]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_c_locale())
    except subprocess.TimeoutExpired as e:
        return {"status": "error", "error": f"ncu timed out after {timeout:.0f} s", "wall_s": time.perf_counter() - t,
                "stdout_tail": (e.stdout or "")[-2000:] if isinstance(e.stdout, str) else ""}
    wall = time.perf_counter() - t
    raw_log.write(f"===== {job['id']} rc={p.returncode} wall={wall:.3f}s\n$ {' '.join(cmd)}\n{p.stdout[-20000:]}\n"
                  f"--- stderr\n{p.stderr[-5000:]}\n")
    raw_log.flush()
    kernels = parse_ncu_csv(p.stdout)
    res = {"wall_s": wall, "rc": p.returncode, "metrics_asked": metrics}
    if not kernels:
        res.update(status="error", error=(p.stderr.strip() or p.stdout.strip())[-800:])
        return res
    mine = [k for k in kernels if job["entry"] in k["kernel"]] or kernels
    res.update(status="ok", kernel_name=mine[0]["kernel"], metrics=mine[0]["metrics"], units=mine[0]["units"],
               profiled_kernels=len(kernels))
    return res


def plain_main(a) -> int:
    job = json.loads(Path(a.job).read_text())
    backend = make_backend(a.backend)
    backend.run_launch(job, plain_only=True)
    return 0


# ---------------------------------------------------------------------------
# Our own emulator on the same launches (timing beside ncu's)
# ---------------------------------------------------------------------------


def emulate_job(job: dict) -> dict:
    import numpy as np

    import_hypa()
    from hypa.ptxdialect import parse_ptx
    from hypa.runtime.emulator.emulator import Emulator
    from hypa.runtime.emulator.launch import Launch

    jdir = Path(job["dir"])
    host = {b["name"]: np.load(jdir / f"buf_{b['name']}.npy") for b in job["buffers"]}
    args = [p["name"] if p["kind"] == "buffer" else bytes.fromhex(p["hex"]) for p in job["params"]]
    text = (jdir / "original.ptx").read_text()
    out: dict = {}
    for mode in ("slice",) + (("full",) if os.environ.get("HYPA_EMULATE_FULL") else ()):
        for run in ("cold", "warm"):
            t = time.perf_counter()
            r = Emulator(parse_ptx(text), mode=mode).run(
                Launch(kernel=job["entry"], grid=job["grid"], block=job["block"], args=args,
                       buffers={k: v.copy() for k, v in host.items()}, shared_bytes=job["shared_bytes"]))
            out[f"{mode}_{run}_ms"] = 1000 * (time.perf_counter() - t)
        out[f"{mode}_compile_ms"] = r.compile_ms
        out[f"{mode}_metrics"] = {k: v for k, v in r.metrics.values.items()}
    return out


# ---------------------------------------------------------------------------
# The phases
# ---------------------------------------------------------------------------


def host_info() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count()}
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        info["nvidia_smi"] = p.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    for mod in ("numpy", "xdsl", "llvmlite"):
        try:
            m = __import__(mod)
            info[mod] = str(getattr(m, "__version__", "?"))
        except Exception as e:  # noqa: BLE001
            info[mod] = f"unavailable: {type(e).__name__}"
    return info


def sources_digest() -> dict:
    files = ["benchmarks/gpu/harness.py", "benchmarks/gpu/probes.py", "passes/instrument.py", "runtime/emulator/probe.py",
             "runtime/emulator/launch.py"]
    return {f: file_sha(ROOT / f) for f in files}


def phase_counts(a, out: Path, work: Path, deadline: float, doc: dict) -> tuple[list[dict], list[dict]]:
    import numpy as np

    tomls = a.tomls or sorted(str(p) for p in (ROOT / "tests/kernels/launches").glob("*.toml"))
    records, jobs = prepare_launches(tomls, work / "launches", a.only)
    log(f"counts: {len(records)} launches, {len(jobs)} ready")
    doc["launches"] = records
    results = supervise("counts", jobs, work, a.backend, a.job_timeout, deadline)
    if -1 in results:
        doc["gpu"] = {k: v for k, v in results[-1].items() if k != "type"}
    arrays: dict[str, np.ndarray] = {}
    for k, job in enumerate(jobs):
        rec = records[job["record"]]
        res = results.get(k, {"status": "skipped", "error": "not run"})
        assemble_launch_record(rec, job, res, arrays, a.max_output_bytes)
    if arrays:
        np.savez_compressed(out / "outputs.npz", **arrays)
    ok = sum(1 for r in records if r.get("status") == "ok")
    log(f"counts: {ok}/{len(records)} launches recorded")
    return records, jobs


def assemble_launch_record(rec: dict, job: dict, res: dict, arrays: dict | None = None, max_bytes: int = 12 << 20) -> dict:
    """Fill a launch record from a worker's result (decoded counters, metrics,
    buffer digests); the buffers after the plain run go to ``arrays``."""
    import numpy as np

    from hypa.passes.instrument import CounterMap
    from hypa.runtime.metrics.registry import with_ratios

    rec["status"] = res.get("status")
    if res.get("status") != "ok":
        rec["stage"] = "run"
        rec["error"] = res.get("error")
        if res.get("traceback"):
            rec["traceback"] = res["traceback"]
        return rec
    cmap = CounterMap.from_dict(rec["counter_map"])
    counters = res["counters"]
    rec["counters"] = counters
    rec.update(cmap.decode(counters))
    rec["metrics"] = with_ratios(cmap.metrics(counters))
    rec["gpu_time_ms"] = res.get("gpu_time_ms")
    bufs = {}
    total = sum(v.nbytes for v in arrays.values()) if arrays is not None else 0
    for b in job["buffers"]:
        name = b["name"]
        bufs[name] = {"dtype": b["dtype"], "count": b["count"], "sha256": res["plain_sha256"].get(name),
                      "sha256_instrumented": res["instrumented_sha256"].get(name)}
        f = Path(job["dir"]) / f"out_{name}.npy"
        if arrays is not None and f.exists():
            arr = np.load(f)
            if total + arr.nbytes <= max_bytes:
                key = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{rec['id'].replace('#', '__')}__{name}")
                arrays[key] = arr
                bufs[name]["npz_key"] = key
                total += arr.nbytes
    rec["buffers"] = bufs
    rec["instrumentation_changed_outputs"] = any(v["sha256"] != v["sha256_instrumented"] for v in bufs.values())
    return rec


def phase_probes(a, out: Path, work: Path, deadline: float, command: str) -> None:
    import numpy as np

    probes = import_probes()
    records, jobs = prepare_probes(work / "probes", a.probe_n, a.probe_limit, a.probe_only)
    log(f"probes: {len(records)} probes, {len(jobs)} ready")
    results = supervise("probes", jobs, work, a.backend, a.job_timeout, deadline)
    arrays = {}
    for k, job in enumerate(jobs):
        rec = records[job["record"]]
        res = results.get(k, {"status": "skipped", "error": "not run"})
        rec["status"] = res.get("status")
        if res.get("status") != "ok":
            rec["error"] = res.get("error")
            continue
        keys = []
        for j in range(len(job["results"])):
            key = f"p{job['record']:04d}_out{j}"
            arrays[key] = np.load(Path(job["dir"]) / f"out{j}.npy")
            keys.append(key)
        rec["outputs"] = keys
    if arrays:
        np.savez_compressed(out / "probes.npz", **arrays)
    doc = {
        "kind": PROBES_KIND, "format": 1, "command": command, "created": _now(), "n": a.probe_n,
        "seed": probes.PROBE_SEED, "host": host_info(), "gpu": results.get(-1, {}), "npz": "probes.npz",
        "sources": sources_digest(), "probes": records,
    }
    write_json(out / "probes.json", doc)
    ok = sum(1 for r in records if r.get("status") == "ok")
    log(f"probes: {ok}/{len(records)} recorded")


def phase_ncu(a, out: Path, records: list[dict], jobs: list[dict], deadline: float, doc: dict) -> None:
    ncu = shutil.which(a.ncu) if a.ncu else None
    if not ncu:
        doc["ncu"] = {"status": "unavailable"}
        log("ncu: not found; skipped")
        return
    try:
        ver = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        ver = []
    avail = ncu_available_metrics(ncu)
    if avail is not None and not all(m.split(".")[0] in avail for m in NCU_MINIMAL):
        log("ncu: --query-metrics did not list the basic metrics; asking for every metric")
        avail = None
    wanted = NCU_MEMORY_METRICS if getattr(a, "ncu_set", "counts") == "memory" else NCU_METRICS
    metrics = [m for m in wanted if avail is None or m.split(".")[0] in avail]
    dropped = [m for m in wanted if m not in metrics]
    doc["ncu"] = {"path": ncu, "version": ver[-1] if ver else None, "metrics": metrics, "dropped": dropped,
                  "options": "--csv --print-units base --clock-control none"}
    log(f"ncu: {ver[-1] if ver else '?'}; {len(metrics)} metrics ({len(dropped)} unknown to this ncu dropped)")
    ok_jobs = [j for j in jobs if records[j["record"]].get("status") == "ok"]
    if a.ncu_only:
        ok_jobs = [j for j in ok_jobs if re.search(a.ncu_only, j["id"])]
    # every launch file's first launch first, then the second ones ...: if the deadline
    # cuts the phase short, every kernel family still has its ncu figures
    ok_jobs.sort(key=lambda j: (records[j["record"]].get("index", 0), j["record"]))
    # the launcher alone, without ncu, for reference
    if ok_jobs:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "plain", "--job",
                            str(Path(ok_jobs[0]["dir"]) / "job.json")], capture_output=True, text=True)
        doc["ncu"]["launcher_alone_wall_s"] = time.perf_counter() - t
        doc["ncu"]["launcher_alone_rc"] = p.returncode
    attempts = successes = 0
    with open(out / "ncu_raw.txt", "a") as raw:
        for job in ok_jobs:
            rec = records[job["record"]]
            left = deadline - time.time()
            if left < 15:
                rec["ncu"] = {"status": "skipped", "error": "deadline"}
                continue
            if attempts >= 3 and successes == 0:
                rec["ncu"] = {"status": "skipped", "error": "ncu failed on the first three launches"}
                continue
            res = run_ncu(ncu, metrics, job, min(a.ncu_timeout, left), raw)
            if res.get("status") != "ok" and "metric" in str(res.get("error", "")).lower() and metrics != NCU_MINIMAL:
                log(f"ncu: {job['id']}: {res.get('error', '')[:200]}; retrying with the minimal metric list")
                metrics = NCU_MINIMAL
                doc["ncu"]["metrics"] = metrics
                res = run_ncu(ncu, metrics, job, min(a.ncu_timeout, deadline - time.time()), raw)
            rec["ncu"] = res
            attempts += 1
            successes += res.get("status") == "ok"
            log(f"ncu: {job['id']}: {res.get('status')} in {res.get('wall_s', 0):.2f} s"
                + ("" if res.get("status") == "ok" else f": {str(res.get('error'))[:300]}"))
            write_json(out / "counts.json", doc)


def phase_emulate(a, out: Path, work: Path, records: list[dict], jobs: list[dict], deadline: float, doc: dict) -> None:
    ok_jobs = [j for j in jobs if records[j["record"]].get("status") == "ok"]
    os.environ["HYPA_CACHE_DIR"] = str(work / "hypa-cache")  # cold compiles are part of the measurement
    results = supervise("emulate", ok_jobs, work, "emulator", a.emulate_timeout, deadline)
    for k, job in enumerate(ok_jobs):
        res = results.get(k, {"status": "skipped"})
        records[job["record"]]["emulator"] = {kk: v for kk, v in res.items() if kk not in ("type", "k", "id")}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def main_run(a) -> int:
    global _log_file
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    _log_file = open(out / "harness.log", "a")
    t0 = time.time()
    deadline = t0 + a.deadline
    command = " ".join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0].endswith(".py") else sys.argv[0], *sys.argv[1:]])
    log(f"hypa GPU harness v{HARNESS_VERSION}: {command}")
    import_hypa()
    work = Path(tempfile.mkdtemp(prefix="hypa-gpu-"))
    log(f"work folder {work}")
    doc: dict = {
        "kind": COUNTS_KIND, "format": 1, "command": command, "created": _now(), "backend": a.backend,
        "host": host_info(), "sources": sources_digest(), "harness_version": HARNESS_VERSION,
    }
    records: list[dict] = []
    jobs: list[dict] = []
    try:
        if a.cmd in ("all", "counts"):
            records, jobs = phase_counts(a, out, work, deadline, doc)
            write_json(out / "counts.json", doc)
        if a.cmd in ("all", "probes") and not a.no_probes:
            phase_probes(a, out, work, min(deadline, time.time() + a.probe_budget), command)
        if a.cmd in ("all", "counts") and not a.no_ncu and a.backend == "cupy":
            phase_ncu(a, out, records, jobs, deadline, doc)
            write_json(out / "counts.json", doc)
        if a.cmd in ("all", "counts") and a.emulate:
            phase_emulate(a, out, work, records, jobs, deadline, doc)
            write_json(out / "counts.json", doc)
    finally:
        if records:
            doc["elapsed_s"] = time.time() - t0
            write_json(out / "counts.json", doc)
            _compress_if_large(out / "counts.json")
        if not a.keep_work:
            shutil.rmtree(work, ignore_errors=True)
        summary(records)
        log(f"done in {time.time() - t0:.1f} s; results in {out}")
    return 0


def summary(records: list[dict]) -> None:
    if not records:
        return
    print(f"{'launch':28} {'status':7} {'threads':>10} {'thr_inst':>12} {'sass_thr_inst':>14} {'ncu_s':>7} {'emu_ms':>8}")
    for r in records:
        m = r.get("metrics", {})
        n = r.get("ncu", {}) or {}
        e = r.get("emulator", {}) or {}
        thr = sum(b["threads"] for b in r.get("blocks", []) if b.get("index") == 0 and b.get("function") == r.get("entry"))
        print(f"{r['id'][:28]:28} {str(r.get('status'))[:7]:7} {thr:>10} {m.get('thread_inst_executed', ''):>12} "
              f"{str(n.get('metrics', {}).get('smsp__sass_thread_inst_executed.sum', '')):>14} "
              f"{n.get('wall_s', 0):>7.2f} {e.get('slice_cold_ms', 0):>8.1f}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    for name in ("all", "counts", "probes"):
        p = sub.add_parser(name)
        p.add_argument("tomls", nargs="*", help="launch TOML files (default: tests/kernels/launches/*.toml)")
        p.add_argument("--out", required=True, help="output folder ($OUT on the device)")
        p.add_argument("--backend", choices=("cupy", "emulator"), default="cupy")
        p.add_argument("--deadline", type=float, default=540.0, help="seconds; no new work starts after this")
        p.add_argument("--only", help="regex over launch ids (toml-stem#index)")
        p.add_argument("--job-timeout", type=float, default=60.0, help="seconds one launch or probe may take")
        p.add_argument("--ncu", default="ncu", help="the ncu executable")
        p.add_argument("--no-ncu", action="store_true")
        p.add_argument("--ncu-timeout", type=float, default=120.0)
        p.add_argument("--ncu-only", help="regex over launch ids: run ncu on these only")
        p.add_argument("--ncu-set", choices=("counts", "memory"), default="counts",
                       help="which Nsight Compute metrics: instruction/branch counts (default) or the memory "
                            "system's sectors, requests, wavefronts and bank conflicts")
        p.add_argument("--no-probes", action="store_true")
        p.add_argument("--probe-n", type=int, default=2048, help="inputs per probe")
        p.add_argument("--probe-limit", type=int, default=None)
        p.add_argument("--probe-only", help="regex over probe ids")
        p.add_argument("--probe-budget", type=float, default=150.0, help="seconds the probe phase may take")
        p.add_argument("--emulate", action="store_true",
                       help="also time hypa's emulator (slice mode, cold and warm; HYPA_EMULATE_FULL=1 adds full mode) "
                            "on the launches, after ncu, in the time left")
        p.add_argument("--emulate-timeout", type=float, default=180.0)
        p.add_argument("--max-output-bytes", type=int, default=12 << 20)
        p.add_argument("--keep-work", action="store_true")
    w = sub.add_parser("worker")
    w.add_argument("--mode", required=True)
    w.add_argument("--jobs", required=True)
    w.add_argument("--results", required=True)
    w.add_argument("--start", type=int, default=0)
    w.add_argument("--backend", default="cupy")
    pl = sub.add_parser("plain")
    pl.add_argument("--job", required=True)
    pl.add_argument("--backend", default="cupy")
    a = ap.parse_args(argv)
    if a.cmd is None:
        ap.error("give a subcommand: all, counts or probes")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.cmd == "worker":
        return worker_main(a)
    if a.cmd == "plain":
        return plain_main(a)
    return main_run(a)


if __name__ == "__main__":
    sys.exit(main())
