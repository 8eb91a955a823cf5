"""Worker: orchestra's own halo updater called as the docs write it, from orchestrated code at depth.

Every documented form of :class:`orchestra.comm.HaloUpdater` on arrays given
as arguments: ``update(q, h)``, ``start(q)``/``wait()`` around a stencil,
``update_vector(u, v)``, ``start_vector``/``wait_vector``, a nested component
updating the array it was given, an array read only after ``wait()``, and a
Quantity-like container (``.data``). Each rank runs the model in ``Python`` mode
(numpy backend) and orchestrated (dace:cpu, one shared build) and checks every
array bit for bit, halos included.
Usage: mpirun -n 6 python mpi_halo_as_written_worker.py CACHE_DIR
"""

import sys

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner
from tests.comm.mpi_orchestrated_halo_worker import scale

NX, NZ, N_HALO = 6, 2, 2
FloatField = Field[np.float64]


def neighbour_sum(q2: FloatField, u: FloatField, v: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = q2[-2, 0, 0] + q2[1, 0, 0] + q2[0, -1, 0] + q2[0, 2, 0] + u[-1, 0, 0] - v[0, 1, 0]


class Container:
    """A Quantity-like container: DaCe reads it through its array protocol, the halo updater through ``.data``."""

    def __init__(self, data):
        self.data = data

    def __descriptor__(self):
        import dace

        return dace.data.create_datadescriptor(self.data)

    @property
    def __array_interface__(self):
        return self.data.__array_interface__

    @property
    def shape(self):
        return self.data.shape


def _stencil(config, definition):
    return FrozenStencil(definition, backend=config.backend, origin=(N_HALO, N_HALO, 0), domain=(NX, NX, NZ))


class Inner:
    """A nested component that updates the halo of the array it is given."""

    def __init__(self, config, halo):
        self.halo = halo
        self.scale = _stencil(config, scale)
        orchestrate(obj=self, config=config)

    def __call__(self, q, q2):
        self.scale(q, q2)
        self.halo.update(q2)


class Middle:
    def __init__(self, config, halo):
        self.inner = Inner(config, halo)
        orchestrate(obj=self, config=config)

    def __call__(self, q, q2):
        self.inner(q, q2)


class Model:
    def __init__(self, config, communicator):
        self.halo = communicator.halo_updater(N_HALO)
        self.middle = Middle(config, self.halo)
        self.neighbour_sum = _stencil(config, neighbour_sum)
        orchestrate(obj=self, config=config)

    def __call__(self, q, q2, u, v, out, h, c):
        self.middle(q, q2)                       # depth 3: update(q2)
        self.halo.start(q)                       # start/wait around a stencil
        self.neighbour_sum(q2, u, v, out)
        self.halo.wait()
        self.neighbour_sum(q, u, v, h)           # reads the halo wait() filled, nothing else orders it
        self.halo.update(out, h)                 # two scalars in one exchange
        self.halo.update_vector(u, v)
        self.halo.start_vector(q2, out)          # (q2, out) exchanged as a vector pair
        self.halo.wait_vector()
        self.halo.update(c)                      # a Quantity-like container
        self.neighbour_sum(c, u, v, q)


def run(mode, backend, communicator, cache_root):
    import gt4py.storage as gt_storage

    config = DaceConfig(communicator, backend=backend, orchestration=mode, cache_root=cache_root)
    model = Model(config, communicator)
    rng = np.random.default_rng(communicator.rank)
    shape = (NX + 2 * N_HALO, NX + 2 * N_HALO, NZ)
    arrays = [gt_storage.from_array(rng.random(shape), np.float64, backend=backend) for _ in range(6)]
    container = Container(gt_storage.from_array(rng.random(shape), np.float64, backend=backend))
    for _ in range(2):
        model(*arrays, container)
    return model, [np.asarray(a).copy() for a in (*arrays, container.data)]


def main() -> None:
    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    with communicator.abort_on_exception():
        _, expected = run("Python", "numpy", communicator, sys.argv[1])
        model, got = run("BuildAndRun", "dace:cpu", communicator, sys.argv[1])
        for name, want, have in zip(("q", "q2", "u", "v", "out", "h", "c"), expected, got):
            assert np.array_equal(want, have), (
                f"rank {communicator.rank}: {name} differs from Python mode "
                f"({int((want != have).sum())} values, halo included)"
            )
        built = model.__orchestra_programs__["__call__"].built_here
        print(f"OK halo-as-written rank={communicator.rank} built={int(built)}", flush=True)


if __name__ == "__main__":
    main()
