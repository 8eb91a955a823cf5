"""Worker: an orchestrated program calls the callback halo exchanger between two stencils.

Every rank runs the program orchestrated (dace:cpu, one shared build) and in
Python mode (numpy backend) and checks that all results are bitwise equal.
Usage: mpirun -n 6 python mpi_orchestrated_halo_worker.py CACHE_DIR
"""

import sys

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.comm import CallbackHaloExchanger, Communicator, CubedSpherePartitioner, TilePartitioner

NX, NZ, N_HALO = 6, 2, 1
FloatField = Field[np.float64]


def scale(q: FloatField, q2: FloatField):
    with computation(PARALLEL), interval(...):
        q2 = 2.0 * q + 1.0


def neighbour_sum(q2: FloatField, u: FloatField, v: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = q2[-1, 0, 0] + q2[1, 0, 0] + q2[0, -1, 0] + q2[0, 1, 0] + u[-1, 0, 0] - v[0, 1, 0]


class State:
    def __init__(self, backend: str, rank: int) -> None:
        import gt4py.storage as gt_storage

        shape = (NX + 2 * N_HALO, NX + 2 * N_HALO, NZ)
        rng = np.random.default_rng(rank)
        self.q = gt_storage.from_array(rng.random(shape), np.float64, backend=backend)
        self.u = gt_storage.from_array(rng.random(shape), np.float64, backend=backend)
        self.v = gt_storage.from_array(rng.random(shape), np.float64, backend=backend)
        self.q2 = gt_storage.zeros(shape, np.float64, backend=backend)
        self.out = gt_storage.zeros(shape, np.float64, backend=backend)


class Program:
    def __init__(self, config: DaceConfig, communicator: Communicator) -> None:
        self.state = State(config.backend, communicator.rank)
        self.halo = CallbackHaloExchanger(
            self.state, scalar_names=("q2",), vector_pairs=(("u", "v"),), updater=communicator.halo_updater(N_HALO)
        )
        origin, domain = (N_HALO, N_HALO, 0), (NX, NX, NZ)
        self.scale = FrozenStencil(scale, backend=config.backend, origin=origin, domain=domain)
        self.neighbour_sum = FrozenStencil(neighbour_sum, backend=config.backend, origin=origin, domain=domain)
        orchestrate(obj=self, config=config)

    def __call__(self):
        self.scale(self.state.q, self.state.q2)
        self.halo.update()
        self.neighbour_sum(self.state.q2, self.state.u, self.state.v, self.state.out)


def main() -> None:
    cache_root = sys.argv[1]
    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    with communicator.abort_on_exception():
        reference = Program(DaceConfig(communicator, backend="numpy", orchestration="Python"), communicator)
        orchestrated = Program(
            DaceConfig(communicator, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache_root),
            communicator,
        )
        for _ in range(2):
            reference()
            orchestrated()
        for name in ("q2", "u", "v", "out"):
            expected, got = np.asarray(getattr(reference.state, name)), np.asarray(getattr(orchestrated.state, name))
            interior = (slice(N_HALO, -N_HALO), slice(N_HALO, -N_HALO))
            assert np.array_equal(got[interior], expected[interior]), f"rank {communicator.rank}: {name} differs"
        # the halo exchange really happened inside the compiled program (edges, not cube corners)
        q2 = np.asarray(orchestrated.state.q2)
        assert np.array_equal(q2[0, N_HALO:-N_HALO], np.asarray(reference.state.q2)[0, N_HALO:-N_HALO])
        assert np.all(q2[0, N_HALO:-N_HALO] >= 1.0)
        built = orchestrated.__orchestra_programs__["__call__"].built_here
        print(f"OK orchestrated-halo rank={communicator.rank} built={int(built)}", flush=True)


if __name__ == "__main__":
    main()
