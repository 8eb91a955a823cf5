"""A user's doubly periodic transport model: upwind advection of tracers held in a dict, sub-cycled.

Run: ``python periodic_transport.py OUT.npz`` (``FV3_DACEMODE`` picks the mode).
"""
import sys

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate

F = Field[np.float64]
NX, NY, NZ, HALO = 14, 12, 5, 1


def upwind_x(q: F, u: F, out: F, courant: float):
    with computation(PARALLEL), interval(...):
        flux_east = u * q if u > 0.0 else u * q[1, 0, 0]
        flux_west = u[-1, 0, 0] * q[-1, 0, 0] if u[-1, 0, 0] > 0.0 else u[-1, 0, 0] * q
        out = q - courant * (flux_east - flux_west)


def copy_into(source: F, target: F):
    with computation(PARALLEL), interval(...):
        target = source


class PeriodicHalo:
    """Fills the halo columns from the opposite edge (in Python: a callback)."""

    def __init__(self):
        self.fills = 0

    @dace_inhibitor
    def fill(self, q):
        q[:HALO] = q[-2 * HALO:-HALO]
        q[-HALO:] = q[HALO:2 * HALO]
        self.fills += 1


class Transport:
    def __init__(self, config, substeps: int):
        interior = dict(backend=config.backend, origin=(HALO, 0, 0), domain=(NX - 2 * HALO, NY, NZ))
        self.upwind = FrozenStencil(upwind_x, **interior)
        self.copy = FrozenStencil(copy_into, **interior)
        self.halo = PeriodicHalo()
        self.substeps = substeps
        self.work = np.zeros((NX, NY, NZ))
        orchestrate(obj=self, config=config)

    def __call__(self, tracers, u, dt: float):
        courant = dt / self.substeps
        for _ in range(self.substeps):
            for q in tracers.values():
                self.halo.fill(q)
                self.upwind(q, u, self.work, courant)
                self.copy(self.work, q)


def main(out: str, steps: int = 3) -> None:
    rng = np.random.default_rng(1)
    tracers = {name: rng.random((NX, NY, NZ)) for name in ("qv", "qc", "qr")}
    u = rng.uniform(-0.8, 0.8, (NX, NY, NZ))
    model = Transport(DaceConfig(None, backend="dace:cpu"), substeps=2)
    for _ in range(steps):
        model(tracers, u, 1)  # an int time step, as a user writes it
    np.savez(out, fills=model.halo.fills, **tracers)


if __name__ == "__main__":
    main(sys.argv[1])
