"""MPI worker: a failure on one rank must end the whole job, never hang it.

Modes:
  raise       rank 2 raises inside ``Communicator.abort_on_exception``; the others wait in a barrier.
  excepthook  rank 1 raises an uncaught exception after ``install_mpi_excepthook``.
  size        a partitioner for the wrong number of ranks is a clear DecompositionError.
"""

from __future__ import annotations

import sys

from mpi4py import MPI

from orchestra.comm import (
    Communicator,
    CubedSpherePartitioner,
    DecompositionError,
    TilePartitioner,
    install_mpi_excepthook,
)


def main(mode: str) -> None:
    rank = MPI.COMM_WORLD.Get_rank()
    if mode == "raise":
        comm = Communicator.world(TilePartitioner((2, 2)))
        with comm.abort_on_exception():
            if rank == 2:
                raise RuntimeError("deliberate failure on one rank")
            comm.barrier()  # the other ranks would wait here forever without the abort
        print("unreachable: barrier passed", flush=True)
    elif mode == "excepthook":
        install_mpi_excepthook()
        if rank == 1:
            raise ValueError("deliberate uncaught failure")
        MPI.COMM_WORLD.Barrier()
        print("unreachable: barrier passed", flush=True)
    elif mode == "size":
        try:
            Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
        except DecompositionError as error:
            assert "needs 6 ranks" in str(error) and f"has {MPI.COMM_WORLD.Get_size()}" in str(
                error
            ), error
            MPI.COMM_WORLD.Barrier()
            if rank == 0:
                print(f"OK size: {error}", flush=True)
        else:
            sys.exit("no error for a wrong number of ranks")


if __name__ == "__main__":
    main(sys.argv[1])
