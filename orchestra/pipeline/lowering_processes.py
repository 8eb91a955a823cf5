"""Processes of the building rank lower the build's stencils while it parses.

Most of a cold build is gt4py lowering each stencil into its SDFG, one
stencil after another on the building rank (docs/performance_log.md, "Build").
Ranks that wait for the build already take a share
(:mod:`orchestra.pipeline.lower_ahead`); a rank that builds alone, a
single-process run or a job with fewer ranks than the node has cores, leaves
cores idle. :func:`lowering_processes` starts that many Python processes
beside the builder, each made to lower a share of the stencils not yet in
gt4py's cache, into that cache, while the builder parses as before:

* the builder walks the program's stencils in call order; the processes
  walk them from the end (process ``w`` of ``n`` takes every ``n``-th group
  of stencils sharing gt4py's content id), so the two meet once instead of
  queueing on the same stencil;
* a stencil lowered by a process is found in gt4py's cache by the builder's
  parse; one being lowered holds its lock (:func:`orchestra.stencils.stencil_cache.stencil_lock`)
  until done; nothing else passes between them, so the parse, and the
  program, are what they would be without the processes;
* a process gets each stencil as a pickle of what makes it
  (:meth:`orchestra.stencils.frozen.FrozenStencil.lowering_job`: definition,
  externals, backend, origin, domain, and the builder's gt4py id of it); a
  stencil whose definition lives in ``__main__`` or does not pickle is left
  to the builder, as is one a process fails to lower or makes with another
  gt4py id than the builder's (a process would lower another stencil);
* when the parse ends (or fails), the builder sends each process SIGTERM: one
  between stencils (or still starting) exits at once, one lowering a stencil
  finishes it first; the builder waits, so none is left writing into gt4py's
  cache.

The processes run ``python -m orchestra.pipeline.lowering_processes`` with the
builder's ``sys.path``, gt4py's cache settings and orchestra's DaCe settings,
and without the MPI launcher's variables (they are no MPI ranks).

How many: ``DaceConfig.build_processes`` (``ORCHESTRA_BUILD_PROCESSES``), or by
default the cores this rank may run on that the node's ranks leave idle,
shared among the node's building ranks (:func:`default_process_count`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from orchestra.pipeline.lower_ahead import stencil_groups
from orchestra.distributed.helper_processes import (
    helper_environment,
    helper_settings,
    pickled_job,
)

log = logging.getLogger("orchestra")

#: Seconds the builder waits for a process to finish its current stencil before ending it.
STOP_WAIT_S = 120.0


def node_share(mpi_comm: Any, builders: list[int]) -> tuple[int, int]:
    """(ranks on this rank's node, how many of ``builders`` are among them), without communicating.

    The node's communicator must exist already (:func:`orchestra.distributed.staging.nodes.node_communicator`,
    collective on its first use).
    """
    from mpi4py import MPI

    from orchestra.distributed.staging.nodes import node_communicator

    node = node_communicator(mpi_comm)
    on_node = MPI.Group.Translate_ranks(mpi_comm.Get_group(), builders, node.Get_group())
    return node.Get_size(), sum(1 for rank in on_node if rank != MPI.UNDEFINED)


@dataclasses.dataclass
class _Process:
    popen: subprocess.Popen
    files: Any  #: the folder of its input and its output
    stencils: int


class LoweringProcesses:
    """The processes lowering one build's stencils; :meth:`stop` ends them."""

    def __init__(self, processes: list[_Process], to_lower: int) -> None:
        self.processes = processes
        self.to_lower = to_lower

    def summary(self) -> str:
        """E.g. "2 processes lowering beside the builder (40 stencils to lower)"; "" when none ran."""
        if not self.processes:
            return ""
        count = len(self.processes)
        processes = f"{count} process{'es' if count > 1 else ''}"
        return f"{processes} lowering beside the builder ({self.to_lower} stencils to lower)"

    def stop(self) -> None:
        """Ask each process to stop (after its current stencil, at once if between stencils) and wait for it."""
        for process in self.processes:
            with contextlib.suppress(OSError):
                process.popen.terminate()
        deadline = time.monotonic() + STOP_WAIT_S
        for process in self.processes:
            try:
                process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("a stencil-lowering process (pid %d) did not stop within %.0f s; ending it",
                            process.popen.pid, STOP_WAIT_S)
                process.popen.kill()
                process.popen.wait()
            output = Path(process.files.name) / "output.txt"
            if process.popen.returncode not in (0, -signal.SIGTERM) and output.exists():
                log.debug("stencil-lowering process %d ended with %s:\n%s", process.popen.pid,
                          process.popen.returncode, output.read_text(errors="replace")[-2000:])
            process.files.cleanup()
        self.processes = []


@contextlib.contextmanager
def lowering_processes(callees: tuple, count: int, gpu: Any = None) -> Iterator[LoweringProcesses]:
    """Within the block, up to ``count`` processes lower the stencils of ``callees`` not yet lowered."""
    started = LoweringProcesses([], 0)
    try:
        if count > 0:
            try:
                _start(started, callees, count, gpu)
            except Exception as error:  # a helper that cannot start must not stop the build
                log.debug("stencil-lowering processes not started (%s: %s)", type(error).__name__, error)
        yield started
    finally:
        started.stop()


def _start(started: LoweringProcesses, callees: tuple, count: int, gpu: Any) -> None:
    """Start the processes into ``started`` (those started stay there if a later one fails)."""
    groups = []
    for group in reversed(stencil_groups(callees)):
        jobs = [job for job in (_job(stencil) for stencil in group if not _lowered(stencil)) if job is not None]
        if jobs:
            groups.append(jobs)
    if len(groups) < 2:  # the builder reaches a lone stencil before a process has started
        return
    count = min(count, len(groups) - 1)  # the builder lowers at least one group itself
    settings = helper_settings(gpu)
    environment = helper_environment()
    started.to_lower = sum(len(group) for group in groups)
    for index in range(count):
        jobs = [job for group in groups[index::count] for job in group]
        files = tempfile.TemporaryDirectory(prefix="orchestra_lowering_")
        folder = Path(files.name)
        (folder / "input.pickle").write_bytes(pickle.dumps({**settings, "jobs": jobs}))
        try:
            with open(folder / "output.txt", "wb") as output:
                popen = subprocess.Popen(
                    [sys.executable, "-m", "orchestra.pipeline.lowering_processes", str(folder / "input.pickle")],
                    stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, env=environment,
                )
        except OSError as error:  # no process: the builder lowers these itself
            log.debug("could not start a stencil-lowering process (%s)", error)
            files.cleanup()
            continue
        started.processes.append(_Process(popen, files, len(jobs)))


def _lowered(stencil: Any) -> bool:
    try:
        return bool(stencil.is_lowered())
    except Exception:  # the builder finds out what is wrong with it
        return True


def _job(stencil: Any) -> Optional[bytes]:
    """The pickled lowering job of ``stencil`` with the builder's gt4py id; None when a process could not make it."""
    try:
        gt_id = stencil.build_identity()["gt_id"]
    except Exception as error:
        log.debug("%r is lowered by the builder only: no gt4py id (%s)", stencil, error)
        return None
    job = pickled_job(stencil, gt_id=gt_id)
    if job is None:
        log.debug("%r is lowered by the builder only: another process could not make it again", stencil)
    return job


# --- the process's side ---------------------------------------------------------------------------

_busy = False  #: lowering a stencil now: a stop request waits for it
_stop_requested = False


def _on_terminate(signum: int, frame: Any) -> None:
    global _stop_requested
    if not _busy:
        os._exit(0)  # between stencils (or still starting): nothing half-written
    _stop_requested = True


def _serve(input_path: str) -> int:
    global _busy
    signal.signal(signal.SIGTERM, _on_terminate)
    settings = pickle.loads(Path(input_path).read_bytes())
    sys.path[:] = settings["sys_path"]
    from gt4py.cartesian import config as gt_config

    gt_config.cache_settings.update(settings["gt_cache"])
    from orchestra.pipeline.garbage_collection import fewer_collections
    from orchestra.stencils.frozen import FrozenStencil
    from orchestra.toolchain import dace_settings

    done = {"lower_ahead": 0, "restate_ahead": 0}
    with dace_settings(gpu=settings["gpu"]), fewer_collections():
        stencils = []
        for pickled in settings["jobs"]:
            try:  # making the stencil (importing its module) writes nothing: a stop may end it at once
                job = pickle.loads(pickled)
                stencil = FrozenStencil.from_lowering_job(job)
                made = stencil.build_identity()["gt_id"]
            except Exception as error:  # the builder lowers it and reports what is wrong
                print(f"lowering failed: {type(error).__name__}: {error}", flush=True)
                continue
            if made != job["gt_id"]:  # another stencil here: lowering it would not help the builder
                print(f"skipped {stencil!r}: gt4py's id here is {made}, the builder's {job['gt_id']}", flush=True)
                continue
            stencils.append(stencil)
        # every stencil lowered first (the builder waits for those), then restated (it reads them if they are there)
        for step in ("lower_ahead", "restate_ahead"):
            for stencil in stencils:
                try:
                    _busy = True  # writing into gt4py's cache: a stop waits for the stencil
                    done[step] += bool(getattr(stencil, step)())
                except Exception as error:  # the builder lowers it and reports what is wrong
                    print(f"{step} failed: {type(error).__name__}: {error}", flush=True)
                finally:
                    _busy = False
                if _stop_requested:
                    break
            if _stop_requested:
                break
    print(f"lowered {done['lower_ahead']} and restated {done['restate_ahead']} of {len(settings['jobs'])} stencils",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1]))
