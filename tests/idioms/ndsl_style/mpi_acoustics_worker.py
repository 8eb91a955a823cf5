"""Worker: the NDSL-style acoustic loop on the cube, 6 ranks, through orchestra's own communication.

The layer's halo updaters are orchestra's ``HaloUpdater`` (``domain=`` for the
D-grid winds: u on y interfaces, v on x interfaces) and its ``interface()`` is
``Communicator.synchronize_vector_interfaces``: what an NDSL user's layer on
orchestra's public API calls. Each rank runs the loop in ``Python`` mode and
orchestrated (one shared build) and compares every field bit for bit, halos
included, and the number of exchanges.
Usage: mpirun -n 6 python mpi_acoustics_worker.py CACHE_DIR
"""

import dataclasses
import sys

import numpy as np

from orchestra import DaceConfig
from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner
from tests.idioms.ndsl_style.acoustics import AcousticLoop, DycoreState
from tests.idioms.ndsl_style.infrastructure import HALO, GridIndexing, QuantityFactory, StencilFactory

GRID = GridIndexing(nx=6, ny=6, nz=3)


def run(mode: str, communicator: Communicator, cache: str) -> tuple[list, list]:
    config = DaceConfig(communicator, backend="dace:cpu", orchestration=mode, cache_root=cache)
    stencils, quantities = StencilFactory(config, GRID), QuantityFactory(config, GRID)
    state = DycoreState.random(quantities, 31 + communicator.rank)
    loop = AcousticLoop(stencils, quantities, state, n_split=2,
                        updater_of=lambda: communicator.halo_updater(HALO, domain=(GRID.nx, GRID.ny)),
                        comm=communicator)
    for timestep in (0.3, 0.2):
        loop(state, timestep)
    fields = [np.asarray(getattr(state, f.name).data).copy() for f in dataclasses.fields(state)]
    updaters = loop._halo_updaters
    counts = [updaters.delp__pt.updates, updaters.u__v.updates, updaters.interface_u__v.interfaces]
    return fields, counts


def main() -> None:
    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    with communicator.abort_on_exception():
        expected, expected_counts = run("Python", communicator, sys.argv[1])
        got, counts = run("BuildAndRun", communicator, sys.argv[1])
        names = [f.name for f in dataclasses.fields(DycoreState)]
        for name, want, have in zip(names, expected, got):
            assert np.isfinite(want).all(), f"rank {communicator.rank}: {name} is not finite"
            assert np.array_equal(want, have), f"rank {communicator.rank}: {name} differs from Python mode"
        assert counts == expected_counts == [2 * 3, 2 * 2, 2], (counts, expected_counts)
        print(f"OK acoustics rank={communicator.rank}", flush=True)


if __name__ == "__main__":
    main()
