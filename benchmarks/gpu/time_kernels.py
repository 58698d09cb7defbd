"""Time kernel launches on a GPU with CUDA events (CuPy): the measurements the
timing estimate (runtime/models/timing.py) is validated against.

    python benchmarks/gpu/time_kernels.py tests/kernels/launches/*.toml \\
        benchmarks/gpu/launches/extra.toml benchmarks/gpu/launches/timing.toml \\
        -o benchmarks/gpu/results/kernel_times.h100.json --reps 200
    python benchmarks/timing_validate.py benchmarks/gpu/results/kernel_times.h100.json

Every ``[[launch]]`` of the given TOML files (docs/guide.md, "Launch specification") is loaded
from its PTX with ``cupy.RawModule(path=...)`` (the driver JIT-compiles PTX of
any older target), its buffers are built exactly as the emulator builds them,
and it is timed:

- ``median_us`` (and mean/min/max/std): one CUDA event pair around each of
  ``--reps`` single launches, after ``--warmup`` launches; buffers the launch
  writes are restored from a pristine device copy before every launch
  (outside the timed interval), so data-dependent kernels repeat the same work; a spin kernel
  of ``--spacer-us`` (default 50) runs before each start event, so the GPU is busy while the host
  enqueues the events and the launch: the interval is the GPU's launch latency plus the
  kernel, whatever CuPy's host overhead (without it an empty kernel "took" 8 us, a kernel after a
  buffer restore 4 us);
- ``batched_us``: ``--batch`` back-to-back launches between one event pair,
  divided by the count (no restoring: the launch-to-launch throughput);
- ``empty_kernel``: the same measurements for an empty kernel, the fixed
  launch overhead the estimate's ``launch_overhead_us`` stands for.

The registers ptxas gave each kernel (``num_regs``) are recorded too, so the
validation can take occupancy from them.  ``--dry-run`` checks the launches
(kernel names, parameter types, buffers) without a GPU or CuPy, and exits 1 when one cannot
be timed for a reason other than printf.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# launch files: hypa's own parser (pure Python + numpy), also without hypa installed
# ---------------------------------------------------------------------------


def _launch_module():
    try:
        from hypa.runtime.emulator import launch as mod  # type: ignore[import-not-found]

        return mod
    except ImportError:  # the checkout itself is the package (a GPU machine without hypa installed)
        spec = importlib.util.spec_from_file_location("hypa", ROOT / "__init__.py",
                                                      submodule_search_locations=[str(ROOT)])
        pkg = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["hypa"] = pkg
        spec.loader.exec_module(pkg)  # type: ignore[union-attr]
        return importlib.import_module("hypa.runtime.emulator.launch")


# ---------------------------------------------------------------------------
# PTX entry signatures and arguments (no GPU needed)
# ---------------------------------------------------------------------------

_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.S)
_TYPE = re.compile(r"\.(u8|s8|b8|u16|s16|b16|f16|u32|s32|b32|f32|u64|s64|b64|f64)\b")


def entry_signatures(ptx: str) -> dict[str, list[tuple[str, int]]]:
    """``{kernel: [(ptx type, element count), ...]}`` for every ``.entry``."""
    text = re.sub(r"//[^\n]*", "", ptx)
    out: dict[str, list[tuple[str, int]]] = {}
    for m in _ENTRY.finditer(text):
        params = []
        for p in m.group(2).split(","):
            p = p.strip()
            if not p:
                continue
            t = _TYPE.search(p)
            if t is None:
                raise ValueError(f"kernel {m.group(1)}: cannot read parameter '{p}'")
            dims = [int(d) for d in re.findall(r"\[(\d+)\]", p)]
            n = 1
            for d in dims:
                n *= d
            params.append((t.group(1), n))
        out[m.group(1)] = params
    return out


def resolve_kernel(names: list[str], wanted: str | None) -> str:
    """The mangled name of the kernel a launch names (mangled, demangled or plain)."""
    if wanted is None:
        if len(names) != 1:
            raise ValueError(f"the file has {len(names)} kernels ({', '.join(names)}); the launch must name one")
        return names[0]
    if wanted in names:
        return wanted
    base = wanted.split("(")[0].strip()
    hits = [n for n in names if n.startswith(f"_Z{len(base)}{base}")]
    if len(hits) == 1:
        return hits[0]
    raise ValueError(f"no kernel '{wanted}' (kernels: {', '.join(names)})")


_NP = {"u8": "uint8", "s8": "int8", "b8": "uint8", "u16": "uint16", "s16": "int16", "b16": "uint16",
       "f16": "float16", "u32": "uint32", "s32": "int32", "b32": "uint32", "f32": "float32",
       "u64": "uint64", "s64": "int64", "b64": "uint64", "f64": "float64"}


def scalar_argument(ptype: str, count: int, value):
    """A by-value argument as the numpy scalar CuPy passes with the parameter's size."""
    import numpy as np

    size = int(re.sub(r"\D", "", ptype)) // 8 * count
    if count > 1:
        # a by-value aggregate (``.param .align 4 .b8 p[4]``): the integer's bytes
        kinds = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
        if size not in kinds:
            raise ValueError(f"by-value aggregate of {size} bytes is not supported")
        return kinds[size](int(value) % (1 << (8 * size)))
    dt = np.dtype(_NP[ptype])
    if dt.kind == "f":
        return dt.type(float(value))
    return dt.type(int(value) % (1 << (8 * dt.itemsize)) if dt.kind == "u" else int(value))


def plan(toml_paths: list[str]) -> list[dict]:
    """Every launch of the TOML files, checked: its PTX, kernel, parameters, buffers."""
    lm = _launch_module()
    out = []
    for tp in toml_paths:
        try:
            launches = lm.launches_from_toml(tp)
        except (lm.LaunchError, OSError, ValueError) as e:  # a bad spec: its message, not a traceback
            raise SystemExit(f"{tp}: {e}") from None
        for i, L in enumerate(launches):
            item = {"toml": _rel(tp), "launch_index": i, "launch": L, "status": "ok"}
            try:
                if L.file is None:
                    raise ValueError("the launch names no PTX `file`")
                ptx = Path(L.file).read_text()
                sigs = entry_signatures(ptx)
                name = resolve_kernel(list(sigs), L.kernel)
                params = sigs[name]
                if len(params) != len(L.args):
                    raise ValueError(f"{name} takes {len(params)} parameters, the launch gives {len(L.args)}")
                if re.search(r"\bcall\b[^;]*\bvprintf\b", ptx):
                    item["status"] = "skipped: calls printf"
                item.update(file=_rel(L.file), kernel=name, params=params)
            except (OSError, ValueError) as e:
                item["status"] = f"skipped: {e}"
            out.append(item)
    return out


def _rel(p: str | os.PathLike) -> str:
    p = Path(p).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


# ---------------------------------------------------------------------------
# timing (CuPy)
# ---------------------------------------------------------------------------


def _stats(us: list[float]) -> dict[str, float]:
    return {"median_us": statistics.median(us), "mean_us": statistics.fmean(us), "min_us": min(us),
            "max_us": max(us), "std_us": statistics.pstdev(us) if len(us) > 1 else 0.0}


def time_function(cp, fn, grid, block, args, shared, reps, warmup, batch, restore=None, spacer=None) -> dict:
    def launch():
        fn(grid, block, args, shared_mem=shared)

    for _ in range(warmup):
        if restore:
            restore()
        launch()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    us = []
    for _ in range(reps):
        if restore:
            restore()  # enqueued before the start event: not timed
        if spacer:
            spacer()  # keeps the GPU busy while the host enqueues: the interval is the GPU's
        start.record()
        launch()
        end.record()
        end.synchronize()
        us.append(cp.cuda.get_elapsed_time(start, end) * 1000.0)
    out = _stats(us)
    out["reps"] = reps
    if batch > 0:
        start.record()
        for _ in range(batch):
            launch()
        end.record()
        end.synchronize()
        out["batched_us"] = cp.cuda.get_elapsed_time(start, end) * 1000.0 / batch
        out["batch"] = batch
    return out


def _device_info(cp) -> dict:
    dev = cp.cuda.Device()
    p = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
    info = {"name": name, "compute_capability": f"{p['major']}.{p['minor']}", "sm_count": p["multiProcessorCount"],
            "clock_mhz": p["clockRate"] / 1000.0, "l2_bytes": p.get("l2CacheSize"),
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(), "cuda_driver": cp.cuda.runtime.driverGetVersion(),
            "cupy": cp.__version__}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.limit",
                            "--format=csv,noheader,nounits", f"--id={dev.id}"], capture_output=True, text=True,
                           timeout=10)
        if q.returncode == 0:
            sm, smax, mem, power = [x.strip() for x in q.stdout.strip().split(",")]
            info.update(nvidia_smi_clock_sm_mhz=sm, nvidia_smi_max_clock_sm_mhz=smax, nvidia_smi_clock_mem_mhz=mem,
                        nvidia_smi_power_limit_w=power)
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return info


#: a kernel that spins on %globaltimer for the given nanoseconds (one thread): enqueued before
#: the start event, it keeps the GPU busy while the host enqueues the event pair and the launch,
#: so the interval measures the GPU (launch latency on the GPU + kernel), not CuPy's host time
SPIN_PTX = """.version 7.0
.target sm_70
.address_size 64
.visible .entry hypa_spin(.param .u64 ns)
{
    .reg .u64 %t0, %t1, %d, %n;
    .reg .pred %p;
    ld.param.u64 %n, [ns];
    mov.u64 %t0, %globaltimer;
SPIN:
    mov.u64 %t1, %globaltimer;
    sub.u64 %d, %t1, %t0;
    setp.lt.u64 %p, %d, %n;
    @%p bra SPIN;
    ret;
}
"""

EMPTY_PTX = """.version 7.0
.target sm_70
.address_size 64
.visible .entry hypa_empty()
{
    ret;
}
"""


def run(items: list[dict], args) -> dict:
    import cupy as cp

    result = {"recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": _device_info(cp),
              "settings": {"reps": args.reps, "warmup": args.warmup, "batch": args.batch,
                           "restore": not args.no_restore, "spacer_us": args.spacer_us},
              "kernels": []}
    spacer = None
    with tempfile.TemporaryDirectory() as td:
        empty = Path(td) / "empty.ptx"
        empty.write_text(EMPTY_PTX)
        fn = cp.RawModule(path=str(empty)).get_function("hypa_empty")
        if args.spacer_us > 0:
            spin_path = Path(td) / "spin.ptx"
            spin_path.write_text(SPIN_PTX)
            spin = cp.RawModule(path=str(spin_path)).get_function("hypa_spin")
            ns = int(args.spacer_us * 1000)

            def spacer(spin=spin, ns=ns):
                spin((1,), (1,), (cp.uint64(ns),))

        result["empty_kernel"] = time_function(cp, fn, (1,), (32,), (), 0, args.reps, args.warmup, args.batch,
                                               spacer=spacer)
    modules: dict[str, object] = {}
    for it in items:
        L = it.pop("launch")
        rec = {k: v for k, v in it.items() if k != "params"}
        rec.update(grid=list(L.grid), block=list(L.block), shared_bytes=L.shared_bytes)
        if it["status"] != "ok" or (args.exclude and re.search(args.exclude, it.get("kernel", ""))):
            if it["status"] == "ok":
                rec["status"] = "skipped: --exclude"
            result["kernels"].append(rec)
            print(f"{rec['toml']}[{rec['launch_index']}]: {rec['status']}", file=sys.stderr)
            continue
        try:
            path = str(ROOT / it["file"])
            mod = modules.get(path)
            if mod is None:
                mod = modules[path] = cp.RawModule(path=path)
            fn = mod.get_function(it["kernel"])  # type: ignore[attr-defined]
            if L.shared_bytes > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = L.shared_bytes
            host = L.materialize_buffers()
            dev = {n: cp.asarray(a) for n, a in host.items()}
            kargs = []
            for (ptype, count), a in zip(it["params"], L.args):
                kargs.append(dev[a] if isinstance(a, str) else scalar_argument(ptype, count, a))
            restore = None
            if not args.no_restore and dev:
                pristine = {n: d.copy() for n, d in dev.items()}

                def restore(dev=dev, pristine=pristine):
                    for n, d in dev.items():
                        cp.copyto(d, pristine[n])

            t = time_function(cp, fn, tuple(L.grid), tuple(L.block), tuple(kargs), L.shared_bytes, args.reps,
                              args.warmup, args.batch, restore, spacer)
            rec.update(t)
            for attr in ("num_regs", "local_size_bytes", "shared_size_bytes", "max_threads_per_block"):
                try:
                    rec[attr] = int(getattr(fn, attr))
                except (AttributeError, TypeError, ValueError):
                    pass
            del dev, kargs
            cp.get_default_memory_pool().free_all_blocks()
            print(f"{rec['toml']}[{rec['launch_index']}] {it['kernel']}: median {t['median_us']:.2f} us"
                  f" (min {t['min_us']:.2f}, batched {t.get('batched_us', float('nan')):.2f})", file=sys.stderr)
        except Exception as e:  # a launch that fails on the device is recorded, not fatal
            rec["status"] = f"failed: {type(e).__name__}: {e}"
            print(f"{rec['toml']}[{rec['launch_index']}]: {rec['status']}", file=sys.stderr)
        result["kernels"].append(rec)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tomls", nargs="+", help="launch files (docs/guide.md, \"Launch specification\")")
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks/gpu/results/kernel_times.json"))
    ap.add_argument("--reps", type=int, default=200, help="timed single launches per kernel (default 200)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=100, help="back-to-back launches for batched_us (0: skip)")
    ap.add_argument("--no-restore", action="store_true", help="do not restore written buffers between launches")
    ap.add_argument("--spacer-us", type=float, default=50.0, metavar="US",
                    help="spin the GPU this long before each timed launch so that the host's enqueue time is not "
                         "in the interval (0: no spacer; default 50)")
    ap.add_argument("--exclude", default=None, metavar="REGEX", help="skip kernels whose name matches")
    ap.add_argument("--dry-run", action="store_true", help="check the launches; no GPU, no CuPy")
    args = ap.parse_args(argv)
    items = plan(args.tomls)
    if args.dry_run:
        for it in items:
            L = it["launch"]
            print(f"{it['toml']}[{it['launch_index']}] {it.get('kernel', L.kernel)} grid={L.grid} block={L.block}"
                  f" params={it.get('params')}: {it['status']}")
        # a launch the plan cannot time for a reason other than printf is a broken launch file
        broken = [it for it in items if it["status"] not in ("ok", "skipped: calls printf")]
        print(f"dry run: {len(items)} launches, {sum(it['status'] == 'ok' for it in items)} ok, "
              f"{len(items) - len(broken) - sum(it['status'] == 'ok' for it in items)} call printf, {len(broken)} broken")
        return 1 if broken else 0
    result = run(items, args)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    ok = sum(1 for k in result["kernels"] if "median_us" in k)
    print(f"{ok} of {len(result['kernels'])} launches timed -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
