"""Work on a Dask distributed cluster (``hypa profile --scheduler ADDRESS``).

Kernels, launches and CTA ranges are independent, so each unit of work (a
unique launch, or a CTA range of one) becomes a Dask task.  A task carries the
kernel's PTX text (scattered once per kernel), the launch with its buffers'
contents, the options and the CTA range; the worker parses and compiles the
kernel once per process (``_emulator``) and returns the result without the
launch's memory.  CTA ranges come back with their raw counters, which the
client adds up (``Emulator.merge``), so results equal a local run's.

``dask[distributed]`` is an optional dependency: ``pip install 'hypa[dask]'``.
``ADDRESS`` is a scheduler's address (``tcp://host:8786``), or ``local`` /
``local:N`` for a cluster of N worker processes on this machine.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .launch import LaunchError

_EMULATORS: dict[tuple, Any] = {}


def _emulator(ptx: str, label: str, options: tuple):
    key = (hashlib.sha256(ptx.encode("utf-8", errors="replace")).hexdigest(), label, options)
    emu = _EMULATORS.get(key)
    if emu is None:
        from hypa.ptxdialect import parse_ptx

        from .emulator import Emulator

        emu = _EMULATORS[key] = Emulator(parse_ptx(ptx, label), **dict(options))
    return emu


def run_unit(ptx: str, label: str, options: tuple, launch, ctas, per_cta: bool):
    """One unit of work, on a worker: a result without buffers, or an error message."""
    from .errors import LAUNCH_ERRORS

    try:
        return _emulator(ptx, label, options).run(launch, per_cta=per_cta, ctas=ctas).without_memory()
    except LAUNCH_ERRORS as e:
        return str(e)


def connect(address: str):
    """A Dask client for ``address`` (and the local cluster it started, or ``None``)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise LaunchError("--scheduler needs Dask: pip install 'hypa[dask]' (dask[distributed])") from None
    if address == "local" or address.startswith("local:"):
        n = int(address.split(":", 1)[1]) if ":" in address else None
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="30s"), None
    except (OSError, TimeoutError) as e:
        raise LaunchError(f"cannot reach the Dask scheduler at {address}: {e}") from None


def run_units_dask(address: str, records, units, opts, bar) -> list:
    from distributed import as_completed

    client, cluster = connect(address)
    try:
        import uuid

        run_id = uuid.uuid4().hex[:8]
        options = tuple(sorted(opts.emulator_options().items()))
        texts: dict[str, Any] = {}
        futures = []
        index = {}
        for k, u in enumerate(units):
            rec = records[u.record]
            src = rec.source
            if src.label not in texts:
                texts[src.label] = client.scatter(src.ptx, broadcast=False)
            f = client.submit(run_unit, texts[src.label], src.label, options, rec.launch, u.ctas, opts.per_cta,
                              pure=False, key=f"hypa-{run_id}-{k}")
            futures.append(f)
            index[f.key] = k
        out: list = [None] * len(units)
        for f in as_completed(futures):
            k = index[f.key]
            try:
                out[k] = f.result()
            except Exception as e:  # a worker died, or the task could not be run
                out[k] = f"Dask task failed: {type(e).__name__}: {e}"
            bar.update(1, records[units[k].record].kernel)
        return out
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
