"""Every rank fails one collective step with the same orchestra error (see test_mpi_abort_report.py)."""

import sys

from mpi4py import MPI

from orchestra.comm.abort import abort_on_exception
from orchestra.distributed import BuildCoordinator
from orchestra.errors import MissingBuildError


class World:
    comm = MPI.COMM_WORLD


def fail() -> None:
    if sys.argv[1] == "all" or MPI.COMM_WORLD.Get_rank() == 1:
        raise MissingBuildError("no usable build of Model.__call__: build it first with FV3_DACEMODE=Build")


with abort_on_exception():
    BuildCoordinator(World()).collectively(fail, "loading Model.__call__")
