"""MPI worker: interface synchronization against the single-process geometric reference.

Run by tests/comm/test_mpi_vector_interface.py under mpirun::

    python tests/comm/mpi_vector_interface_worker.py --grid cube --layout 2 --nx 2

Rank 0 builds every rank's local pair (x on [i cell, j interface], y on
[i interface, j cell]; the two copies of each shared point differ) and the
reference result (``interface_reference.py``), scatters the pairs, every rank
synchronizes over MPI, rank 0 gathers them and compares bitwise, halos
included. A failure on any rank aborts the job (non-zero exit); rank 0 prints
``OK <check>`` after each check.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

import numpy as np

import orchestra.comm as comm_package
from orchestra.comm import (
    Communicator,
    CubedSpherePartitioner,
    TilePartitioner,
    abort_on_exception,
)
from tests.comm.interface_reference import Geometry, local_pair, reference_synchronize

#: (n_halo, nz, dtype) of the pairs each check synchronizes
CASES = [(1, 0, np.float64), (3, 2, np.float32), (0, 3, np.float64)]


class QuantityLike:
    """An NDSL-like container: the array in ``.data``, the compute-domain start in ``.origin``."""

    def __init__(self, data: np.ndarray, n_halo: int) -> None:
        self.data, self.origin = data, (n_halo, n_halo, 0)


def make_geometry(grid: str, layout: int, nx: int, n_halo: int) -> Geometry:
    if grid == "cube":
        partitioner = CubedSpherePartitioner(TilePartitioner((layout, layout)))
        return Geometry(partitioner, nx, nx, n_halo, sphere=True)
    if grid == "tile":
        return Geometry(TilePartitioner((layout, layout)), nx, nx + 1, n_halo)
    cls = {"periodic": "PeriodicTilePartitioner", "channel": "ChannelPartitioner"}[grid]
    partitioner = getattr(comm_package, cls)((layout, layout))
    return Geometry(partitioner, nx, nx + 1, n_halo, periodic=(True, grid == "periodic"))


def scattered(comm: Communicator, g: Geometry, nz: int, dtype: Any) -> tuple[Any, list]:
    """This rank's pair (scattered from rank 0) and, on rank 0, the expected pairs of all ranks."""
    fields = expected = None
    if comm.rank == 0:
        fields = [local_pair(g, r, nz, dtype) for r in range(comm.size)]
        expected = reference_synchronize(g, fields)
    return comm.mpi_comm.scatter(fields, root=0), expected


def compare(comm: Communicator, pair: Any, expected: Any, what: str) -> None:
    gathered = comm.mpi_comm.gather(pair, root=0)
    if comm.rank != 0:
        return
    for rank, ((x, y), (ex, ey)) in enumerate(zip(gathered, expected)):
        if not (np.array_equal(x, ex) and np.array_equal(y, ey)):
            raise AssertionError(f"{what}: rank {rank} differs from the reference")


def check_reference(comm: Communicator, make: Callable[[int], Geometry]) -> None:
    """Blocking synchronization equals the reference, for several halos, depths and dtypes."""
    for n_halo, nz, dtype in CASES:
        g = make(n_halo)
        (x, y), expected = scattered(comm, g, nz, dtype)
        comm.synchronize_vector_interfaces(x, y, n_halo=n_halo)
        compare(comm, (x, y), expected, f"blocking n_halo={n_halo} nz={nz}")
    assert comm._interfaces is not None  # one duplicated communicator, made on the first call


def check_split(comm: Communicator, make: Callable[[int], Geometry]) -> None:
    """start/wait with two pairs in flight, waited in reverse order, equals the reference."""
    (n1, nz1, t1), (n2, nz2, t2) = CASES[:2]
    first, expected_first = scattered(comm, make(n1), nz1, t1)
    second, expected_second = scattered(comm, make(n2), nz2, t2)
    request_first = comm.start_synchronize_vector_interfaces(*first, n_halo=n1)
    request_second = comm.start_synchronize_vector_interfaces(*second, n_halo=n2)
    request_second.wait()
    request_first.wait()
    compare(comm, first, expected_first, "split, first pair")
    compare(comm, second, expected_second, "split, second pair")


def check_quantity(comm: Communicator, make: Callable[[int], Geometry]) -> None:
    """Quantity-like objects: unwrapped, n_halo from their origin."""
    n_halo, nz, dtype = CASES[1]
    (x, y), expected = scattered(comm, make(n_halo), nz, dtype)
    comm.synchronize_vector_interfaces(QuantityLike(x, n_halo), QuantityLike(y, n_halo))
    compare(comm, (x, y), expected, "quantity-like")


CHECKS = {"reference": check_reference, "split": check_split, "quantity": check_quantity}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", choices=["cube", "tile", "periodic", "channel"], required=True)
    parser.add_argument("--layout", type=int, required=True)
    parser.add_argument("--nx", type=int, default=2)
    parser.add_argument("--checks", default=",".join(CHECKS))
    args = parser.parse_args()

    def make(n_halo: int) -> Geometry:
        return make_geometry(args.grid, args.layout, args.nx, n_halo)

    comm = Communicator.world(make(0).partitioner)
    for name in args.checks.split(","):
        CHECKS[name](comm, make)
        comm.barrier()
        if comm.rank == 0:
            print(f"OK {name}", flush=True)


if __name__ == "__main__":
    with abort_on_exception():
        main()
