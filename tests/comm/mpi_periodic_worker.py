"""MPI worker: halo updates on doubly periodic and channel domains, checked on every rank.

Run by tests/comm/test_mpi_periodic.py under mpirun::

    python tests/comm/mpi_periodic_worker.py --layouts "2,2;4,1" --checks ghosts,model

For each layout and each domain (``PeriodicTilePartitioner``, ``ChannelPartitioner``):

* ``ghosts``: every cell of every rank's arrays (halo and corners included),
  after one exchange of two scalars and a vector pair, equals the global field
  padded with ``numpy.pad`` (periodic, then the wall rule), for each wall rule;
  ``update``/``update_vector`` and ``start_fields``/``wait`` alike.
* ``model``: a few steps of a small numpy model with halo updates between
  steps; the gathered result is bitwise equal to the same model run on one
  rank (``MPI.COMM_SELF``, layout (1, 1)) and to the model on a padded global
  array.

A failure on any rank aborts the job; rank 0 prints ``OK <check> <domain> <layout>``.
"""

from __future__ import annotations

import argparse

import numpy as np

from orchestra.comm import (
    ChannelPartitioner,
    Communicator,
    PeriodicTilePartitioner,
    Walls,
    abort_on_exception,
)
from tests.comm.periodic_reference import (
    N_HALO,
    SCALAR_FILL,
    VECTOR_FILL,
    initial_fields,
    local,
    pad,
    run_global,
    step,
    window,
)

NX, NY, NZ = 12, 6, 2
DOMAINS = {"periodic": PeriodicTilePartitioner, "channel": ChannelPartitioner}
GHOST_WALLS = {
    "periodic": [None],
    "channel": [Walls(), Walls("mirror", "free_slip"), Walls("zero", "no_slip"), Walls("edge", "zero")],
}
MODEL_WALLS = {"periodic": [None], "channel": [Walls("mirror", "free_slip"), Walls("edge", "no_slip")]}


def ids(nz: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    shape = (NX, NY) + ((nz,) if nz else ())
    base = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
    return base, 2 * base + 0.5, -base - 0.25


def expected_fills(walls) -> tuple:
    walls = walls or Walls()
    return (SCALAR_FILL[walls.scalar], *VECTOR_FILL[walls.vector])


def check_ghosts(comm: Communicator, domain: str) -> None:
    p, rank, channel = comm.partitioner, comm.rank, domain == "channel"
    # The reference fields are known everywhere; check they are what the ranks hold, gathered.
    for field in ids() + ids(NZ):
        np.testing.assert_array_equal(comm.bcast(comm.gather(local(field, p, rank, 1), 1))[0], field)
    for h in (1, N_HALO):
        for walls in GHOST_WALLS[domain]:
            q, u, v = (local(f, p, rank, h) for f in ids())
            deep = local(ids(NZ)[0], p, rank, h)
            halo = comm.halo_updater(h, walls=walls)
            halo.start_fields([q, deep], [(u, v)])
            halo.wait()
            fills = expected_fills(walls)
            got = {"q": (q, ids()[0], fills[0]), "deep": (deep, ids(NZ)[0], fills[0]),
                   "u": (u, ids()[1], fills[1]), "v": (v, ids()[2], fills[2])}
            for name, (array, field, fill) in got.items():
                expected = window(pad(field, h, channel, fill), p, rank, (NX, NY), h)
                np.testing.assert_array_equal(array, expected, err_msg=f"{name} rank {rank} h={h} {walls}")
            # The blocking calls give the same arrays.
            q2, u2, v2 = (local(f, p, rank, h) for f in ids())
            halo.update(q2)
            halo.update_vector(u2, v2)
            for a, b in ((q, q2), (u, u2), (v, v2)):
                np.testing.assert_array_equal(a, b)


def run_model(comm: Communicator, walls, steps: int) -> tuple:
    """The model on ``comm``'s decomposition; the gathered ``q, u, v`` on rank 0."""
    p, h = comm.partitioner, N_HALO
    q, u, v = (local(f, p, comm.rank, h) for f in initial_fields(NX, NY))
    halo = comm.halo_updater(h, walls=walls)
    for _ in range(steps):
        halo.start_fields([q], [(u, v)])
        halo.wait()
        step(q, u, v, h)
    tile_q = comm.gather_tile(q, h)
    gathered_u, gathered_v = comm.gather(u, h), comm.gather(v, h)
    if comm.rank != 0:
        return None
    return tile_q, gathered_u[0], gathered_v[0]


def check_model(comm: Communicator, domain: str, steps: int) -> None:
    from mpi4py import MPI

    for walls in MODEL_WALLS[domain]:
        result = run_model(comm, walls, steps)
        if comm.rank != 0:
            continue
        one_rank = run_model(Communicator(MPI.COMM_SELF, DOMAINS[domain]((1, 1))), walls, steps)
        rules = expected_rules(walls)
        padded = run_global(steps, *initial_fields(NX, NY), domain == "channel", *rules)
        initial = initial_fields(NX, NY)
        for name, ours, single, reference, start in zip("quv", result, one_rank, padded, initial):
            assert ours.shape == (NX, NY), ours.shape
            assert np.array_equal(ours, single), f"{name}: {walls} differs from the 1-rank run"
            assert np.array_equal(ours, reference), f"{name}: {walls} differs from numpy.pad"
            assert not np.array_equal(ours, start)  # the model did something


def expected_rules(walls) -> tuple[str, str]:
    walls = walls or Walls()
    return walls.scalar, walls.vector


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layouts", required=True, help='e.g. "2,1;1,2"')
    parser.add_argument("--checks", default="ghosts,model")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    for text in args.layouts.split(";"):
        layout = tuple(int(x) for x in text.split(","))
        for domain, kind in DOMAINS.items():
            comm = Communicator.world(kind(layout))
            for check in args.checks.split(","):
                if check == "ghosts":
                    check_ghosts(comm, domain)
                else:
                    check_model(comm, domain, args.steps)
                comm.barrier()
                if comm.rank == 0:
                    print(f"OK {check} {domain} {text}", flush=True)


if __name__ == "__main__":
    with abort_on_exception():
        main()
