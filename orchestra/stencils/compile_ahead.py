"""In ``Python`` mode, worker processes compile a model's stencils ahead of their first calls.

Without orchestration gt4py compiles each stencil on its first call, one
after another: 285 s for the first call of a 12-stencil model, over an hour
for FV3's acoustic step. The stencils are independent, so once a process
shows that it runs stencils one by one, a few worker processes compile them
into gt4py's cache while the model starts and runs:

* it shows it by ``orchestrate(obj, config)`` with a ``Python``-mode config
  (the model's stencils exist then; ``config.compile_processes`` sets the
  count) or by the first call of any :class:`~orchestra.stencils.frozen.FrozenStencil`
  (:func:`start`); every DaCe-backend FrozenStencil made so far is then
  queued, and every one made later is queued as it is made
  (:func:`register`); a stencil of another backend is built when made, as
  gt4py builds it;
* the workers start at most once per process (as many as there are queued
  stencils, up to the count), as ``python -m orchestra.stencils.compile_worker``
  with this process's environment less the MPI launcher's
  (:mod:`orchestra.distributed.helper_processes`); each gets every queued
  stencil as a pickle of what makes it, and takes them newest first, while
  the model's first call takes them in call order: they meet once;
* a worker compiles a stencil holding the stencil's lock in gt4py's cache
  (:mod:`orchestra.toolchain.gt4py_builds`), and skips one whose lock is held
  (another worker, this process, or another MPI rank's worker is compiling it)
  or that gt4py's cache holds already. So the workers of all the ranks of a
  node share the work, and a stencil's first call simply builds it through
  gt4py: it waits for the lock while a worker compiles the stencil, then
  loads it from the cache, or compiles it itself when no worker took it.
  Nothing else passes between them: results are those of a serial first call;
* a stencil whose compilation fails in a worker is compiled again by its
  first call, which raises gt4py's real error there; a definition in
  ``__main__`` or one that does not pickle is left to the first call;
* when the process exits, the workers are asked to stop: one between
  stencils stops at once, one compiling finishes that stencil first.

How many: ``DaceConfig.compile_processes`` (``ORCHESTRA_COMPILE_PROCESSES``;
0: none), else the cores this rank may use that the node's ranks leave idle,
shared among them (the ranks on the node as the MPI launcher states it), and
that the load average leaves idle when the workers start (:func:`default_count`),
at most :data:`DEFAULT_LIMIT` per process.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Optional

from orchestra.distributed.helper_processes import (
    default_process_count,
    helper_environment,
    helper_settings,
    pickled_job,
    ranks_on_node_from_launcher,
    usable_cores,
)

log = logging.getLogger("orchestra")

#: Most workers one process starts by default (each holds gt4py, DaCe and a C++ compiler's memory).
DEFAULT_LIMIT = 8

#: Seconds the exiting process waits for its workers to finish their current stencils.
STOP_WAIT_S = 5.0


def default_count(load: Optional[float] = None) -> int:
    """The cores this rank may use that the node's ranks (and, by ``load``, others) leave idle, shared; at most 8.

    ``load``: the node's load average (None: read now). On a node that other
    processes keep busy a worker only takes their cores' time: on 2 cores at
    load 2-3, 12 stencils took 157 s serially, 169 s with one worker.

    >>> default_count(load=64.0)
    0
    """
    ranks = ranks_on_node_from_launcher()
    cores = usable_cores()
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    idle = max(0, cores - max(ranks, round(load)))  # the ranks themselves are part of the load
    return min(DEFAULT_LIMIT, default_process_count(cores, ranks, ranks), idle // max(1, ranks))


class CompilePool:
    """This process's compiling workers and the stencils sent to them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.jobs: list[bytes] = []
        self.workers: list[subprocess.Popen] = []
        self.started = 0  #: workers started so far
        self.folder = tempfile.TemporaryDirectory(prefix="orchestra_compile_")
        self._lock = threading.Lock()

    def submit(self, job: bytes) -> None:
        """Send ``job`` to every worker; start another worker while there are fewer than jobs and the limit."""
        with self._lock:
            message = pickle.dumps({"settings": helper_settings(), "job": job})
            self.jobs.append(message)
            self.workers = [worker for worker in self.workers if self._send(worker, message)]
            if len(self.workers) < min(self.limit, len(self.jobs)):
                self._start_worker()

    def _start_worker(self) -> None:
        self.started += 1
        output = Path(self.folder.name) / f"worker{self.started}.txt"
        try:
            with open(output, "wb") as log_file:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "orchestra.stencils.compile_worker"], stdin=subprocess.PIPE,
                    stdout=log_file, stderr=subprocess.STDOUT, env=helper_environment(),
                )
        except OSError as error:  # no worker: the first calls compile
            log.debug("could not start a stencil-compiling process (%s)", error)
            self.limit = len(self.workers)
            return
        if all(self._send(worker, message) for message in self.jobs):
            self.workers.append(worker)

    @staticmethod
    def _send(worker: subprocess.Popen, message: bytes) -> bool:
        try:
            assert worker.stdin is not None
            worker.stdin.write(len(message).to_bytes(8, "little") + message)
            worker.stdin.flush()
            return True
        except (OSError, ValueError):  # the worker ended: its stencils are compiled by others or on first call
            return False

    def worker_output(self) -> str:
        """What the workers printed (one line per stencil), for tests and debugging."""
        return "".join(path.read_text(errors="replace") for path in sorted(Path(self.folder.name).glob("*.txt")))

    def stop(self, wait_s: float = STOP_WAIT_S, cleanup: bool = True) -> None:
        """Ask each worker to stop (after its current stencil) and wait up to ``wait_s`` for them.

        The jobs stay: a later higher limit starts workers for them again (unless ``cleanup``).
        """
        with self._lock:
            workers, self.workers, self.limit = self.workers, [], 0
        for worker in workers:
            with contextlib.suppress(OSError, ValueError):
                assert worker.stdin is not None
                worker.stdin.close()  # end of jobs: a worker between stencils exits
            with contextlib.suppress(OSError):
                worker.terminate()  # one compiling finishes its stencil, then exits
        deadline = time.monotonic() + wait_s
        for worker in workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=max(0.0, deadline - time.monotonic()))
        if cleanup:
            with contextlib.suppress(OSError):
                self.folder.cleanup()

    def resume(self, limit: int) -> None:
        """Allow ``limit`` workers; start them for the jobs sent so far."""
        with self._lock:
            self.limit = limit
            for _ in range(min(self.limit, len(self.jobs)) - len(self.workers)):
                self._start_worker()


_pool: Optional[CompilePool] = None
_waiting: list[weakref.ref] = []  #: stencils made before :func:`start` (or while the count is 0), in order
_queued: set[bytes] = set()
_state_lock = threading.RLock()
_exit_hook: list = []  #: :func:`stop` registered to run at exit (once)


def register(stencil: Any) -> None:
    """Note a DaCe-backend FrozenStencil just made: queued now when the workers run, else at :func:`start`."""
    with _state_lock:
        _queue(stencil)


def start(count: Optional[int] = None) -> Optional[CompilePool]:
    """Compile the stencils made so far, and those made later, in workers; ``count`` (None: the default) of them.

    Called by ``orchestrate`` in ``Python`` mode (``count``: the config's
    ``compile_processes``) and by a FrozenStencil's first call (None). A
    later call with a count changes the count (0 stops the workers).
    """
    global _pool
    from orchestra.config import compile_processes_from_environment

    with _state_lock:
        if _pool is None:
            if count is None:
                count = compile_processes_from_environment()
            _pool = CompilePool(default_count() if count is None else count)
            if not _exit_hook:
                atexit.register(stop)
                _exit_hook.append(stop)
        elif count is not None and count != _pool.limit:
            if count == 0:
                _pool.stop(cleanup=False)
            else:
                _pool.resume(count)
        waiting = [stencil for stencil in (reference() for reference in _waiting) if stencil is not None]
        _waiting.clear()
        for stencil in waiting:  # in the order they were made: the workers take the newest first
            _queue(stencil)
        return _pool


def stop() -> None:
    """Stop this process's workers and forget them (the next :func:`start` starts new ones)."""
    global _pool
    with _state_lock:
        pool, _pool = _pool, None
        _queued.clear()
    if pool is not None:
        pool.stop()


def _queue(stencil: Any) -> None:
    if _pool is None or _pool.limit == 0:  # queued if workers are allowed later
        _waiting.append(weakref.ref(stencil))
        if len(_waiting) % 1024 == 0:  # forget stencils gone meanwhile
            _waiting[:] = [reference for reference in _waiting if reference() is not None]
        return
    job = pickled_job(stencil)
    if job is not None and job not in _queued:
        _queued.add(job)
        _pool.submit(job)
