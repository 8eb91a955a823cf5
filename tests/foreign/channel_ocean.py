"""A user's channel ocean model (periodic in x, walls in y), written from the docs: issue 54's kind.

A dataclass state with a 2-D free surface and 3-D fields, numpy halo fills
under ``dace_inhibitor`` called with the model's own arrays at three depths
(the same ``self.bc.fill`` in a component and in its caller, after the
nested call), a sub-step loop, ``Scratch`` arrays, one component reused for
several fields, tracers in a dict, a plain gt4py stencil with a region at a
wall called with ``origin=``/``domain=``.

Run: ``python channel_ocean.py OUT.npz``.
"""
import dataclasses
import sys

import gt4py.storage as gs
import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, J, computation, horizontal, interval, region

from orchestra import DaceConfig, FrozenStencil, Scratch, dace_inhibitor, orchestrate

NX, NY, NZ, H = 12, 8, 3, 2
SHAPE = (NX + 2 * H, NY + 2 * H, NZ)
BACKEND = "dace:cpu"


def laplacian(q: Field[float], lap: Field[float]):
    with computation(PARALLEL), interval(...):
        lap = q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q


def step(q: Field[float], lap: Field[float], k: float):
    with computation(PARALLEL), interval(...):
        q = q + k * lap


def wall_drag(u: Field[float], rate: float):
    with computation(PARALLEL), interval(...):
        with horizontal(region[:, J[0]], region[:, J[-1]]):
            u = u * (1.0 - rate)


def heat_content(t: Field[float], heat: Field[float]):
    with computation(FORWARD):
        with interval(0, 1):
            heat = t
        with interval(1, None):
            heat = heat[0, 0, -1] + t


@dataclasses.dataclass
class State:
    eta: np.ndarray
    u: np.ndarray
    v: np.ndarray
    tracers: dict


class Boundaries:
    @dace_inhibitor
    def fill(self, q):
        q[:H] = q[-2 * H:-H]  # periodic in x
        q[-H:] = q[H:2 * H]
        q[:, :H] = q[:, H:H + 1]  # walls in y: zero gradient
        q[:, -H:] = q[:, -H - 1:-H]


class Diffusion:
    """Reused for every field it mixes; its own fill of its own work array at the deepest level."""

    def __init__(self, config, bc, k):
        self.bc, self.k = bc, k
        self.lap = Scratch(gs.zeros(SHAPE, dtype=float, backend=BACKEND))
        self.flux = gs.zeros(SHAPE, dtype=float, backend=BACKEND)
        self.laplacian = FrozenStencil(laplacian, backend=BACKEND, origin=(H, H, 0), domain=(NX, NY, NZ))
        self.step = FrozenStencil(step, backend=BACKEND, origin=(H, H, 0), domain=(NX, NY, NZ))
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.laplacian(q, self.lap)
        self.step(q, self.lap, self.k)
        self.flux[:] = self.flux + q
        self.bc.fill(self.flux)


class Tracers:
    def __init__(self, config, bc):
        self.bc = bc
        self.mix = Diffusion(config, bc, 0.05)
        self.heat = gs.zeros(SHAPE, dtype=float, backend=BACKEND)
        self.budget = np.zeros(SHAPE)
        self.column = FrozenStencil(heat_content, backend=BACKEND, origin=(H, H, 0), domain=(NX, NY, NZ))
        orchestrate(obj=self, config=config)

    def __call__(self, state):
        self.mix(state.tracers["temp"])
        self.bc.fill(state.tracers["temp"])
        self.mix(state.tracers["salt"])
        self.bc.fill(state.tracers["salt"])
        self.column(state.tracers["temp"], self.heat)
        self.budget[:] = self.budget + self.heat
        self.bc.fill(self.budget)


class Ocean:
    def __init__(self, config, state):
        self.state, self.bc = state, Boundaries()
        self.tracers = Tracers(config, self.bc)
        self.momentum = Diffusion(config, self.bc, 0.1)
        self.drag = gtscript.stencil(backend=BACKEND, definition=wall_drag)
        self.work = np.zeros(SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, n_sub: int):
        for _ in range(n_sub):
            self.momentum(self.state.u)
            self.bc.fill(self.state.u)
            self.momentum(self.state.v)
            self.bc.fill(self.state.v)
            self.drag(self.state.u, 0.02, origin=(H, H, 0), domain=(NX, NY, NZ))
        self.state.eta[:] = self.state.eta + 0.01 * (self.state.u[:, :, 0] - self.state.v[:, :, 0])
        self.bc.fill(self.state.eta)
        self.tracers(self.state)
        self.work[:] = self.work + self.tracers.heat
        self.bc.fill(self.work)


def main(out: str, steps: int = 20) -> None:
    rng = np.random.default_rng(1)
    field = lambda: gs.from_array(rng.uniform(size=SHAPE), backend=BACKEND)  # noqa: E731
    state = State(rng.uniform(size=SHAPE[:2]), field(), field(), {"temp": field(), "salt": field()})
    model = Ocean(DaceConfig(None, backend=BACKEND), state)  # FV3_DACEMODE decides the mode
    for _ in range(steps):
        model(3)
    np.savez(out, eta=state.eta, u=state.u, v=state.v, heat=model.tracers.heat, budget=model.tracers.budget,
             work=model.work, flux=model.momentum.flux, tracer_flux=model.tracers.mix.flux, **state.tracers)


if __name__ == "__main__":
    main(sys.argv[1])
