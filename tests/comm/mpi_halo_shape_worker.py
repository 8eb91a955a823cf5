"""Four ranks (2 x 2); rank 2 allocates its fields with one more vertical level than the others.

Modes: ``scalar`` (``halo.update(q)``), ``vector`` (``halo.update_vector(u, v)``),
``orchestrated`` (``halo.update(q)`` called from an orchestrated method, built in ``argv[2]``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from orchestra import DaceConfig, DaCeOrchestration, orchestrate
from orchestra.comm import Communicator, TilePartitioner, abort_on_exception

N, NZ, H = 6, 5, 2


class Model:
    def __init__(self, config: DaceConfig, halo) -> None:
        self.halo = halo
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        q[:] = q + 1.0
        self.halo.update(q)


def main(mode: str) -> None:
    comm = Communicator.world(TilePartitioner((2, 2)))
    halo = comm.halo_updater(H)
    nz = NZ + 1 if comm.rank == 2 else NZ
    q, u, v = (np.full((N + 2 * H, N + 2 * H, nz), float(comm.rank)) for _ in range(3))
    if mode == "scalar":
        halo.update(q)
    elif mode == "vector":
        halo.update_vector(u, v)
    else:  # no communicator in the config: rank 2 finds or builds its own program in the shared cache
        config = DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun,
                            cache_root=Path(sys.argv[2]))
        Model(config, halo)(q)
    print(f"rank {comm.rank} finished", flush=True)


if __name__ == "__main__":
    with abort_on_exception():
        main(sys.argv[1])
