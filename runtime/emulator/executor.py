"""Where independent work runs: in this process, on forked processes, or on a Dask cluster.

Every parallel path of hypa has the same shape: a list of independent tasks (a unique
launch, a CTA range of one) whose outcomes are wanted in task order, with a callback as
each one finishes (a progress bar).  An ``Executor`` is that shape, once:

- ``InProcess``: one task after the other, here;
- ``Forked``: ``jobs`` processes forked from this one.  They inherit everything built so
  far (parsed modules, prepared and compiled programs, shared mappings of a launch's
  buffers), so tasks are never pickled, only their outcomes.  Tasks are handed out one at a
  time, so a long launch does not hold up the rest;
- ``DaskCluster``: tasks on a Dask distributed cluster (``--scheduler ADDRESS``); the task
  function and its arguments travel by pickle, large shared arguments once each
  (``share``).

``hypa profile`` runs its units with one of them (``runtime/report/batch.py``); the CTAs of one
launch split over workers (``runtime/emulator/cta_ranges.py``, ``-j`` of ``hypa run`` and
``Emulator.run``) run on ``Forked``.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

from .launch import LaunchError

Done = Callable[[int, Any], None]


class TaskFailed:
    """The outcome of a task that could not be run: its worker died, or the cluster lost or
    failed it.  ``str()`` is the message a record shows."""

    def __init__(self, message: str):
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"TaskFailed({self.message!r})"


class Executor:
    """Runs ``fn(*task)`` for every task and returns the outcomes in task order.

    ``done(k, outcome)`` is called here, in this process, as task ``k`` finishes (in the
    order they finish).  ``stop(outcome)``: where tasks run one after another, the rest are
    skipped (outcome ``None``) once it says so; parallel executors run every task, since
    what had finished before a failure would depend on timing.  An exception raised by a
    task is raised here (a bug shows its traceback), except on a cluster, where it becomes
    a ``TaskFailed`` as a lost worker does."""

    where = "?"
    #: the tasks see this process's objects as they are (never pickled; outcomes of forked
    #: workers are)
    shares_memory = True
    #: tasks run here, in this process, one after another
    in_process = False

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple], done: Done | None = None,
            stop: Callable[[Any], bool] | None = None) -> list:
        raise NotImplementedError

    def share(self, value: Any) -> Any:
        """``value`` as a task argument, sent once however many tasks take it."""
        return value

    def close(self) -> None:
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcess(Executor):
    """Tasks one after the other in this process."""

    where = "this process"
    in_process = True

    def map(self, fn, tasks, done=None, stop=None) -> list:
        out: list = []
        for k, task in enumerate(tasks):
            r = fn(*task)
            out.append(r)
            if done is not None:
                done(k, r)
            if stop is not None and stop(r):
                out.extend([None] * (len(tasks) - k - 1))
                break
        return out


# -- forked workers ---------------------------------------------------------------------------------

_HEAD = struct.Struct("<q")  # a task index (-1: no more), or the length of an outcome's pickle


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _serve(fn, tasks, sock: socket.socket) -> None:
    """A worker's loop: read a task index, run the task, send back its outcome (or the
    exception it raised), until told to stop."""
    import traceback
    while True:
        head = _recv_exact(sock, _HEAD.size)
        if not head or _HEAD.unpack(head)[0] < 0:
            return
        (k,) = _HEAD.unpack(head)
        try:
            msg = (k, True, fn(*tasks[k]))
        except Exception as e:  # noqa: BLE001 - raised again in the parent, with this traceback
            msg = (k, False, (e, traceback.format_exc()))
        try:
            data = pickle.dumps(msg)
        except Exception as e:  # noqa: BLE001 - an outcome or exception that cannot be pickled
            data = pickle.dumps((k, False, (RuntimeError(f"{type(e).__name__}: {e}"), traceback.format_exc())))
        sock.sendall(_HEAD.pack(len(data)) + data)


class WorkerTraceback(Exception):
    """The traceback of an exception raised in a forked worker (its ``__cause__``)."""

    def __str__(self) -> str:
        return f"\n\n(in the worker process)\n{self.args[0]}"


class _Worker:
    """A forked worker as the parent sees it: its process, its end of the socket pair, the
    task it runs and what has arrived of its outcome."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock
        self.task: int | None = None
        self.buf = bytearray()
        LIVE_WORKERS.add(pid)

    def give(self, k: int) -> None:
        """Hand out task ``k`` (-1: no more).  A worker that died meanwhile shows as the end
        of its stream, so the task is then reported lost (never SIGPIPE: ``hypa run``'s
        program may not ignore it)."""
        self.task = k if k >= 0 else None
        try:
            import socket

            self.sock.sendall(_HEAD.pack(k), socket.MSG_NOSIGNAL)
        except OSError:
            pass

    def outcome(self):
        """``(k, ok, value)`` once the whole message has arrived, else ``None``."""
        if len(self.buf) < _HEAD.size:
            return None
        (n,) = _HEAD.unpack_from(self.buf)
        if len(self.buf) < _HEAD.size + n:
            return None
        with memoryview(self.buf) as view, view[_HEAD.size:_HEAD.size + n] as body:
            msg = pickle.loads(body)
        del self.buf[:_HEAD.size + n]
        return msg

    def end(self, kill: bool) -> int:
        """Stop and reap the process; returns its wait status."""
        self.sock.close()
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        status = os.waitpid(self.pid, 0)[1]
        LIVE_WORKERS.discard(self.pid)
        return status


#: the worker processes this process has forked and not yet reaped
LIVE_WORKERS: set[int] = set()


def kill_workers() -> None:
    """Stop every live worker at once (a command's ``--timeout`` ran out)."""
    for pid in list(LIVE_WORKERS):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"status {status}"


class Forked(Executor):
    """Tasks on ``jobs`` processes forked from this one, handed out one at a time.

    A worker that dies (a crash in compiled code, a signal) costs its task, which gets a
    ``TaskFailed``; the other workers go on."""

    def __init__(self, jobs: int):
        self.jobs = max(1, int(jobs))

    @property
    def where(self) -> str:  # type: ignore[override]
        return f"local pool of {self.jobs} processes"

    def map(self, fn, tasks, done=None, stop=None) -> list:
        import selectors  # (worker processes only: a one-process run never loads these)
        import socket

        n = len(tasks)
        out: list = [None] * n
        workers: list[_Worker] = []
        sel = selectors.DefaultSelector()

        def finish(k: int, value) -> None:
            out[k] = value
            if done is not None:
                done(k, value)

        ok = False
        try:
            for _ in range(min(self.jobs, n)):
                mine, theirs = socket.socketpair()
                pid = os.fork()
                if pid == 0:  # the worker: never returns into the caller's code
                    try:
                        mine.close()
                        for w in workers:  # the other workers' sockets stay theirs
                            w.sock.close()
                        _serve(fn, tasks, theirs)
                    finally:
                        os._exit(0)
                theirs.close()
                workers.append(_Worker(pid, mine))
            todo = iter(range(n))
            for w in workers:
                w.give(next(todo))
                sel.register(w.sock, selectors.EVENT_READ, w)
            busy = len(workers)
            while busy:
                for key, _ev in sel.select():
                    w: _Worker = key.data
                    chunk = w.sock.recv(1 << 20)
                    if not chunk:  # the worker died: its task failed, the others go on
                        sel.unregister(w.sock)
                        busy -= 1
                        workers.remove(w)
                        status = w.end(kill=False)
                        if w.task is not None:
                            finish(w.task, TaskFailed(f"a worker process died ({_death(status)})"))
                        continue
                    w.buf += chunk
                    msg = w.outcome()
                    if msg is None:
                        continue
                    k, good, value = msg
                    if not good:
                        raise value[0] from WorkerTraceback(value[1])
                    finish(k, value)
                    nxt = next(todo, -1)
                    w.give(nxt)
                    if nxt < 0:
                        sel.unregister(w.sock)
                        busy -= 1
            for k in todo:  # every worker died before these were handed out
                finish(k, TaskFailed("no worker process left to run it"))
            ok = True
        finally:
            sel.close()
            for w in workers:
                w.end(kill=not ok)
        return out


# -- Dask -----------------------------------------------------------------------------------------------


def connect(address: str):
    """A Dask client for ``address`` (and the local cluster it started, or ``None``):
    a scheduler's address (``tcp://host:8786``), or ``local`` / ``local:N`` for a cluster
    of N worker processes on this machine."""
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


class DaskCluster(Executor):
    """Tasks on a Dask distributed cluster (``pip install 'hypa[dask]'``); connects when made.
    The task function travels by reference (workers import hypa), its arguments by pickle."""

    shares_memory = False

    def __init__(self, address: str):
        self.address = address
        self.client, self.cluster = connect(address)

    @property
    def where(self) -> str:  # type: ignore[override]
        return f"Dask scheduler {self.address}"

    def share(self, value: Any) -> Any:
        return self.client.scatter(value, broadcast=False)

    def map(self, fn, tasks, done=None, stop=None) -> list:
        import uuid

        from distributed import as_completed

        run_id = uuid.uuid4().hex[:8]
        futures = [self.client.submit(fn, *task, pure=False, key=f"hypa-{run_id}-{k}") for k, task in enumerate(tasks)]
        index = {f.key: k for k, f in enumerate(futures)}
        out: list = [None] * len(tasks)
        for f in as_completed(futures):
            k = index[f.key]
            try:
                out[k] = f.result()
            except Exception as e:  # noqa: BLE001 - a worker died, or the task could not be run
                out[k] = TaskFailed(f"Dask task failed: {type(e).__name__}: {e}")
            if done is not None:
                done(k, out[k])
        return out

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


__all__ = ["DaskCluster", "Executor", "Forked", "InProcess", "TaskFailed", "WorkerTraceback", "connect"]
