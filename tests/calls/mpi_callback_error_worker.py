"""Ranks exchanging with their neighbours in a callback; the callback of rank ``argv[2]`` raises (``all``: of every rank)."""

import sys
from pathlib import Path

from mpi4py import MPI

from orchestra import DaceConfig, DaCeOrchestration
from tests.calls.callback_error_model import run

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def exchange(q):  # blocks until the neighbours take part: a rank that fails leaves them waiting
    q[0] = comm.sendrecv(float(q[1]), dest=(rank + 1) % size, source=(rank - 1) % size)


# no communicator: each rank finds the one build in the shared cache (built once, under its lock)
config = DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=Path(sys.argv[1]))
run(config, failing=sys.argv[2] == "all" or rank == int(sys.argv[2]), exchange=exchange)
print(f"rank {rank} finished", flush=True)
