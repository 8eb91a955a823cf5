"""Ranks fail with the same error; the job must report it once (see test_mpi_abort_report.py).

Modes: ``all``/``one``: every rank, or rank 1 only, fails one collective step
with an orchestra error. ``alone``: every rank raises that error outside any
collective (as ranks obtaining programs alone in a split body do).
``bug``: every rank raises the same plain exception (a bug in the model's set-up).
"""

import sys

from mpi4py import MPI

from orchestra.comm.abort import abort_on_exception
from orchestra.distributed.coordinator import BuildCoordinator
from orchestra.errors import MissingBuildError


class World:
    comm = MPI.COMM_WORLD


def fail() -> None:
    if sys.argv[1] in ("all", "alone") or MPI.COMM_WORLD.Get_rank() == 1:
        raise MissingBuildError("no usable build of Model.__call__: build it first with FV3_DACEMODE=Build")


with abort_on_exception():
    if sys.argv[1] == "alone":
        fail()
    elif sys.argv[1] == "bug":
        raise KeyError("no such field in the model's state: 'vorticity'")
    else:
        BuildCoordinator(World()).collectively(fail, "loading Model.__call__")
