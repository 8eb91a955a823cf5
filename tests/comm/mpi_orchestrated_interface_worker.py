"""Worker: orchestrated code synchronizes vector interfaces between two stencils.

The model writes an interface-staggered pair (x on [i cell, j interface], y on
[i interface, j cell]) with a stencil, calls ``comm.synchronize_vector_interfaces``
as written (twice), and reads the synchronized edges with a second stencil.
(``start_synchronize_vector_interfaces`` returns a Python object, which compiled
code cannot hold: the split form is for Python code.) Each rank runs it in ``Python``
mode (numpy backend) and orchestrated (dace:cpu, one shared build) and checks
every array bit for bit, halos included, and that the edges were synchronized.
Usage: mpirun -n 6 python mpi_orchestrated_interface_worker.py CACHE_DIR
"""

import sys

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner
from orchestra.comm.vector_interface import plan_interfaces

NX, NZ, N_HALO = 4, 2, 1
FloatField = Field[np.float64]


def perturb(a: FloatField, offset: float):
    with computation(PARALLEL), interval(...):
        a = a + offset


def edge_sum(x: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = x[0, 0, 0] + 2.0 * x[0, 1, 0]


def _stencil(config, definition, domain):
    return FrozenStencil(
        definition, backend=config.backend, origin=(N_HALO, N_HALO, 0), domain=domain
    )


class Model:
    def __init__(self, config, communicator):
        self.comm = communicator
        self.perturb_x = _stencil(config, perturb, (NX, NX + 1, NZ))
        self.perturb_y = _stencil(config, perturb, (NX + 1, NX, NZ))
        self.edge_sum = _stencil(config, edge_sum, (NX, NX, NZ))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, out, offset: float):
        self.perturb_x(x, offset)
        self.perturb_y(y, 2.0 * offset)
        self.comm.synchronize_vector_interfaces(x, y, N_HALO)
        self.edge_sum(x, out)  # reads x's north edge, just synchronized
        self.perturb_x(x, offset)
        self.comm.synchronize_vector_interfaces(x, y, N_HALO)


def run(mode, backend, communicator, cache_root):
    import gt4py.storage as gt_storage

    config = DaceConfig(communicator, backend=backend, orchestration=mode, cache_root=cache_root)
    model = Model(config, communicator)
    rng = np.random.default_rng(communicator.rank)
    shapes = [
        (NX + 2 * N_HALO, NX + 1 + 2 * N_HALO, NZ),
        (NX + 1 + 2 * N_HALO, NX + 2 * N_HALO, NZ),
    ]
    x, y = (gt_storage.from_array(rng.random(s), np.float64, backend=backend) for s in shapes)
    out = gt_storage.zeros((NX + 2 * N_HALO, NX + 2 * N_HALO, NZ), np.float64, backend=backend)
    for step in range(2):
        model(x, y, out, 0.25 * (communicator.rank + 1) + step)
    return model, [np.asarray(a).copy() for a in (x, y, out)]


def main() -> None:
    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    with communicator.abort_on_exception():
        _, expected = run("Python", "numpy", communicator, sys.argv[1])
        model, got = run("BuildAndRun", "dace:cpu", communicator, sys.argv[1])
        for name, want, have in zip(("x", "y", "out"), expected, got):
            assert np.array_equal(want, have), (
                f"rank {communicator.rank}: {name} differs from Python mode "
                f"({int((want != have).sum())} values, halo included)"
            )
        # The synchronization happened: each edge this rank receives equals its sender's edge.
        pairs = communicator.allgather((got[0], got[1]))
        plan = plan_interfaces(communicator.partitioner, communicator.rank, NX, NX, N_HALO)
        assert len(plan.receives) == 2, plan
        for t in plan.receives:
            block = pairs[t.source_rank][t.source_component][t.source]
            block = block[::-1] if t.reversed else block
            edge = pairs[communicator.rank][t.target_component][t.target]
            assert np.array_equal(edge, -block if t.negate else block), (communicator.rank, t)
        built = model.__orchestra_programs__["__call__"].built_here
        print(f"OK orchestrated-interface rank={communicator.rank} built={int(built)}", flush=True)


if __name__ == "__main__":
    main()
