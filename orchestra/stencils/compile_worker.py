"""A worker process of :mod:`orchestra.stencils.compile_ahead`: compiles stencils into gt4py's cache, newest first.

It reads length-prefixed pickles from stdin (a stencil's job and the
sending process's ``sys.path`` and gt4py cache settings), and compiles each
stencil unless gt4py's cache holds it or its lock is held (someone is
compiling it). It prints one line per stencil. The end of input or SIGTERM
stops it: at once between stencils, after the current stencil otherwise.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from typing import Any

#: Seconds a worker woken by a job waits for the rest of its burst.
SETTLE_S = 0.2

_busy = False  #: compiling a stencil now: a stop request waits for it
_stop_requested = False


def _on_terminate(signum: int, frame: Any) -> None:
    global _stop_requested
    if not _busy:
        os._exit(0)  # between stencils: nothing half-written
    _stop_requested = True


def _read_jobs(jobs: list[dict], arrived: threading.Condition, ended: threading.Event) -> None:
    """Read length-prefixed jobs from stdin into ``jobs`` until the end of input (then set ``ended``)."""
    stream = sys.stdin.buffer
    while True:
        header = stream.read(8)
        message = stream.read(int.from_bytes(header, "little")) if len(header) == 8 else b""
        with arrived:
            if message:
                jobs.append(pickle.loads(message))
            else:
                ended.set()
            arrived.notify()
        if not message:
            return


def _serve() -> int:
    """Compile the jobs read from stdin, newest first, until the end of input or SIGTERM."""
    global _busy
    signal.signal(signal.SIGTERM, _on_terminate)
    jobs: list[dict] = []
    arrived, ended = threading.Condition(), threading.Event()
    threading.Thread(target=_read_jobs, args=(jobs, arrived, ended), daemon=True).start()
    seen: set[str] = set()
    while not _stop_requested:
        with arrived:
            if not jobs and not ended.is_set():
                while not jobs and not ended.is_set():
                    arrived.wait()
                arrived.wait(SETTLE_S)  # jobs come in bursts (a model's stencils): take the newest of the burst
            if ended.is_set():  # the process stopped the workers (or ended): nothing more is needed
                return 0
            message = jobs.pop()
        _busy = True
        try:
            _compile(message, seen)
        finally:
            _busy = False
    return 0


def _compile(message: dict, seen: set[str]) -> None:
    """Compile one stencil into gt4py's cache unless it is there, compiled elsewhere, or being compiled."""
    from orchestra.toolchain.gt4py_builds import stencil_build_lock

    start_time = time.perf_counter()
    try:
        settings = message["settings"]
        sys.path[:] = settings["sys_path"]
        from gt4py.cartesian import config as gt_config

        gt_config.cache_settings.update(settings["gt_cache"])
        from orchestra.stencils.frozen import FrozenStencil

        stencil = FrozenStencil.from_lowering_job(pickle.loads(message["job"]))
        builder = stencil.stencil_object.builder
        identity = f"{builder.module_path}"
        if identity in seen:
            return
        seen.add(identity)
        with stencil_build_lock(builder, wait=False) as holding:
            if not holding:
                print(f"skipped {stencil!r}: being compiled elsewhere", flush=True)
            elif builder.caching.is_cache_info_available_and_consistent(validate_hash=True):
                print(f"found {stencil!r} in gt4py's cache", flush=True)
            else:
                builder.build()
                print(f"compiled {stencil!r} in {time.perf_counter() - start_time:.1f} s", flush=True)
    except (Exception, SystemExit) as error:  # setuptools ends a failed compile with SystemExit
        print(f"compiling failed ({type(error).__name__}: {error}); its first call compiles it", flush=True)


if __name__ == "__main__":
    sys.exit(_serve())
