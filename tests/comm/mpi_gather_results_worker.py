"""Worker: Communicator.gather_results when every rank succeeds, and when rank 1 fails."""

from mpi4py import MPI

from orchestra.comm import Communicator, TilePartitioner

comm = Communicator(MPI.COMM_WORLD, TilePartitioner((1, MPI.COMM_WORLD.size)))
print(f"rank {comm.rank} gathered {comm.gather_results(lambda: comm.rank * 10)}", flush=True)


def fails_on_rank_1() -> int:
    if comm.rank == 1:
        raise ValueError("no report on this rank")
    return comm.rank


try:
    print(f"rank {comm.rank} returned {comm.gather_results(fails_on_rank_1)}", flush=True)
except Exception as error:
    print(f"rank {comm.rank} raised {type(error).__name__}: {error}", flush=True)
