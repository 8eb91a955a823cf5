"""Python processes beside a rank that prepare its stencils in gt4py's cache: how many, and how they start.

Two kinds of helper use this: processes lowering a build's stencils beside
the building rank's parse (:mod:`orchestra.pipeline.lowering_processes`) and
processes compiling a ``Python``-mode model's stencils ahead of their first
call (:mod:`orchestra.stencils.compile_ahead`). Both:

* run on the cores this rank may use that the node's ranks leave idle
  (:func:`default_process_count`);
* start as ``python -m <module>`` with the rank's environment less the MPI
  launcher's variables (they are no ranks of the job), orchestra importable,
  one OpenMP thread (:func:`helper_environment`);
* get each stencil as a pickle of what makes it (:func:`pickled_job`), and
  the rank's ``sys.path`` and gt4py cache settings (:func:`helper_settings`).
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Mapping, Optional

from orchestra.distributed.threads import allowed_cores

log = logging.getLogger("orchestra")

#: Environment prefixes of the MPI launcher, not passed to helpers (they are not ranks of the job).
_LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "MPI_LOCAL", "SLURM_STEP")
_KEPT = ("OMPI_ALLOW_RUN_AS_ROOT",)

#: Launcher variables giving the number of the job's ranks on this node (Open MPI, MPICH/Hydra, PMI, Slurm).
LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE")


def default_process_count(cores: int, ranks_on_node: int, builders_on_node: int) -> int:
    """The cores ``ranks_on_node`` ranks leave idle, shared among the node's ``builders_on_node`` builders.

    >>> default_process_count(cores=2, ranks_on_node=1, builders_on_node=1)
    1
    >>> default_process_count(cores=2, ranks_on_node=6, builders_on_node=1)
    0
    >>> default_process_count(cores=128, ranks_on_node=6, builders_on_node=4)
    30
    """
    return max(0, cores - ranks_on_node) // max(1, builders_on_node)


def usable_cores() -> int:
    """How many cores this process may run on (its affinity: a rank bound to one core has one)."""
    return len(allowed_cores())


def ranks_on_node_from_launcher(environ: Mapping[str, str] = os.environ) -> int:
    """The job's ranks on this node as the MPI launcher states it, without communicating (1 when none says).

    Ranks bound to cores of their own count only as many as share this
    rank's cores (the launcher spreads them evenly).

    >>> ranks_on_node_from_launcher({"OMPI_COMM_WORLD_LOCAL_SIZE": "6"}) >= 1
    True
    >>> ranks_on_node_from_launcher({})
    1
    """
    for name in LOCAL_SIZE_VARIABLES:
        text = environ.get(name, "").strip()
        if text.isdigit() and int(text) > 0:
            ranks, node_cores = int(text), os.cpu_count() or 1
            mine = usable_cores()
            if mine < node_cores:  # bound: the ranks whose cores are this rank's
                return max(1, -(-ranks * mine // node_cores))
            return ranks
    return 1


def helper_environment() -> dict[str, str]:
    """This rank's environment without the MPI launcher's variables, orchestra importable, one thread."""
    environment = {
        name: value for name, value in os.environ.items()
        if name.startswith(_KEPT) or not name.startswith(_LAUNCHER_PREFIXES)
    }
    package_parent = str(Path(__file__).resolve().parents[2])
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, environment.get("PYTHONPATH")]))
    environment["OMP_NUM_THREADS"] = "1"
    return environment


def helper_settings(gpu: Any = None) -> dict[str, Any]:
    """What a helper takes over from this rank: ``sys.path``, gt4py's cache settings, the GPU target."""
    from gt4py.cartesian import config as gt_config

    return {"sys_path": list(sys.path), "gt_cache": dict(gt_config.cache_settings), "gpu": gpu}


def pickled_job(stencil: Any, **extra: Any) -> Optional[bytes]:
    """The pickled job making ``stencil`` again (its ``lowering_job()`` and ``extra``); None when a helper could not.

    A definition in ``__main__`` (a helper has another ``__main__``) or one
    that does not pickle is left to the rank itself.
    """
    try:
        job = stencil.lowering_job()
        if getattr(job["definition"], "__module__", "__main__") == "__main__":
            return None
        return pickle.dumps({**job, **extra})
    except Exception as error:
        log.debug("%r is left to this process: its job does not pickle (%s)", stencil, error)
        return None
