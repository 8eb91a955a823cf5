"""OpenMP threads of a rank's CPU programs: its share of the node's cores.

An orchestrated CPU program runs its loops with OpenMP. Unless told
otherwise, OpenMP starts as many threads as the process may use cores, so
``mpirun -n 6`` on a 2-core machine (or 64 unbound ranks on a 64-core node)
runs 12 (or 4096) threads on 2 (or 64) cores; idle OpenMP threads spin, and
a step takes 10-300 times longer (measured on the dycore here, 6 ranks on 2
cores: 1.2-1.4 s per step instead of 4-5 ms; docs/performance_log.md, "Threads").
``OMP_NUM_THREADS=1`` with one rank per core is the fix every HPC user learns
once.

At the job's first orchestrated call, :func:`settle_threads` counts, for each
rank, the ranks of its node whose allowed cores overlap its own
(:func:`core_share`: one node-local split and allgather, whatever the job's
size) and then:

* ``OMP_NUM_THREADS`` (or ``OMP_THREAD_LIMIT``) set: it is obeyed; if it is
  more than the share of a rank of rank 0's node (so that the node's ranks
  ask for more threads than it has cores), rank 0 says so once, with the fix;
* neither set: each rank's programs run ``cores // sharing`` threads (at
  least 1), set in the OpenMP runtime the programs link
  (``omp_set_num_threads``, when the first CPU program is loaded:
  :func:`apply_threads`); rank 0 says so once when that is fewer than
  OpenMP's default. A rank alone on its cores keeps OpenMP's default.

``torchrun`` does the same for its workers (one thread each, with a note)
for the same reason.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
from typing import Any, Mapping, Optional

log = logging.getLogger("orchestra")

#: Variables that, when set, mean the user chose the thread count.
_CHOSEN_BY = ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT")


@dataclasses.dataclass(frozen=True)
class CoreShare:
    """One rank's view of its node: the cores it may run on, and the ranks (itself included) using them too."""

    cores: int
    sharing: int

    @property
    def threads(self) -> int:
        """Threads per rank that keep the sharing ranks within the cores (at least 1).

        >>> CoreShare(cores=2, sharing=6).threads, CoreShare(cores=128, sharing=6).threads
        (1, 21)
        """
        return max(1, self.cores // max(1, self.sharing))


@dataclasses.dataclass(frozen=True)
class ThreadPlan:
    """What :func:`settle_threads` decided: the threads to set (None: leave OpenMP alone) and what to say."""

    threads: Optional[int]
    message: Optional[str]
    warning: bool = False


#: The decision of this process (made once, at the first orchestrated call), and whether it is applied.
_PLAN: Optional[ThreadPlan] = None
_APPLIED = False


def allowed_cores() -> frozenset[int]:
    """The cores this process may run on (its affinity mask); all of them where there is no mask."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return frozenset(range(os.cpu_count() or 1))


def core_share(comm: Any, mine: Optional[frozenset[int]] = None) -> CoreShare:
    """Collectively over ``comm`` (None: a single process): this rank's cores and the node's ranks sharing them.

    The ranks of a node are those of ``comm.Split_type(COMM_TYPE_SHARED)``
    (the real node, not the pretend nodes of ``ORCHESTRA_RANKS_PER_NODE``);
    a rank shares with those whose allowed cores overlap its own.
    """
    mine = allowed_cores() if mine is None else mine
    if comm is None or comm.Get_size() == 1:
        return CoreShare(len(mine), 1)
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        masks = node.allgather(sorted(mine))
    finally:
        node.Free()
    return CoreShare(len(mine), sum(1 for mask in masks if mine.intersection(mask)))


def requested_threads(environ: Mapping[str, str]) -> Optional[int]:
    """The thread count the user chose (``OMP_NUM_THREADS``'s first level, else ``OMP_THREAD_LIMIT``), or None.

    >>> requested_threads({"OMP_NUM_THREADS": "4,2"}), requested_threads({}), requested_threads({"OMP_NUM_THREADS": ""})
    (4, None, None)
    """
    for name in _CHOSEN_BY:
        text = environ.get(name, "").split(",")[0].strip()
        if text.isdigit() and int(text) > 0:
            return int(text)
    return None


def plan_threads(share: CoreShare, environ: Mapping[str, str], load: Optional[float] = None) -> ThreadPlan:
    """The threads to set for ``share`` and what rank 0 should say (pure: no MPI, no OpenMP).

    ``load``: the node's load average; a lone process that keeps OpenMP's
    default on a node other processes keep busy is told so (its threads
    compete with them: 2-6x slower steps were measured on a busy node).

    >>> plan_threads(CoreShare(cores=8, sharing=1), {}, load=7.5).message.split(":")[0]
    'OpenMP'
    >>> plan_threads(CoreShare(cores=8, sharing=1), {}, load=0.5).message is None
    True
    """
    chosen = requested_threads(environ)
    ranks = f"{share.sharing} rank(s) share this node's {share.cores} core(s)"
    if chosen is not None:
        if chosen <= share.threads:  # one thread per rank is all a rank can do about too many ranks
            return ThreadPlan(None, None)
        return ThreadPlan(None, (
            f"OpenMP: {ranks} and each asks for {chosen} thread(s) (OMP_NUM_THREADS): {chosen * share.sharing} "
            f"threads on {share.cores} core(s); idle OpenMP threads spin, and steps can take 10-100 times longer: "
            f"set OMP_NUM_THREADS={share.threads}, or run fewer ranks per node"
        ), warning=True)
    if share.threads >= share.cores:  # OpenMP's own default is this rank's share already
        others = (load or 0.0) - 1.0  # the load this process does not make itself
        if share.cores > 1 and others >= share.cores / 2:
            return ThreadPlan(None, (
                f"OpenMP: this process runs {share.cores} thread(s) (OpenMP's default; OMP_NUM_THREADS is unset), "
                f"but other processes keep the node busy (load average {load:.1f} on {share.cores} core(s)); "
                "threads competing for cores can make steps several times slower: set OMP_NUM_THREADS to the "
                "cores this job may use"))
        return ThreadPlan(None, None)
    return ThreadPlan(share.threads, (
        f"OpenMP: {ranks}: each rank's programs run {share.threads} thread(s) (OMP_NUM_THREADS is unset; "
        "set it to choose)"
    ))


def settle_threads(comm: Any, rank: int, environ: Mapping[str, str] = os.environ) -> None:
    """Once per process, collectively over ``comm``: decide the programs' OpenMP threads; rank 0 reports."""
    global _PLAN
    if _PLAN is not None:
        return
    share = core_share(comm)
    load = os.getloadavg()[0] if share.sharing == 1 and hasattr(os, "getloadavg") else None
    _PLAN = plan_threads(share, environ, load)
    if _PLAN.message is not None and rank == 0:
        (log.warning if _PLAN.warning else log.info)("%s", _PLAN.message)


def apply_threads(compiled_sdfg: Any) -> None:
    """Set the decided thread count in the OpenMP runtime ``compiled_sdfg`` (a loaded CPU program) links; once."""
    global _APPLIED
    if _APPLIED or _PLAN is None or _PLAN.threads is None:
        return
    setter = _openmp_function(compiled_sdfg, "omp_set_num_threads")
    if setter is not None:
        setter(ctypes.c_int(_PLAN.threads))
        _APPLIED = True


def openmp_threads(compiled_sdfg: Any) -> Optional[int]:
    """The threads the next parallel region of ``compiled_sdfg`` would start (None: it links no OpenMP)."""
    getter = _openmp_function(compiled_sdfg, "omp_get_max_threads")
    return None if getter is None else int(getter())


def _openmp_function(compiled_sdfg: Any, name: str) -> Optional[Any]:
    """``name`` from the OpenMP runtime the program's library links (found through the library itself)."""
    try:
        return compiled_sdfg._lib.get_symbol(name, restype=ctypes.c_int)
    except (AttributeError, KeyError, ReferenceError):
        return None
