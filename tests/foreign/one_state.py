"""A user's model whose components all receive one state object (none declared compile-time).

Run: ``python one_state.py OUT.npz``.
"""
import dataclasses
import sys

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

F = Field[np.float64]
SHAPE = (10, 9, 4)


def tendency(h: F, u: F, dh: F):
    with computation(PARALLEL), interval(...):
        dh = 0.5 * (u[1, 0, 0] - u[-1, 0, 0]) * h


def apply(h: F, dh: F, dt: float):
    with computation(PARALLEL), interval(...):
        h = h - dt * dh


def damp(q: F, rate: float):
    with computation(PARALLEL), interval(...):
        q = q * (1.0 - rate)


@dataclasses.dataclass
class State:
    h: np.ndarray
    u: np.ndarray
    dh: np.ndarray
    tracers: dict


class Dynamics:
    def __init__(self, config):
        kw = dict(backend=config.backend, origin=(1, 0, 0), domain=(SHAPE[0] - 2, SHAPE[1], SHAPE[2]))
        self.tendency = FrozenStencil(tendency, **kw)
        self.apply = FrozenStencil(apply, **kw)
        orchestrate(obj=self, config=config)

    def __call__(self, state, dt: float):
        self.tendency(state.h, state.u, state.dh)
        self.apply(state.h, state.dh, dt)


class Damping:
    def __init__(self, config, rates: dict):
        self.damp = FrozenStencil(damp, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.rates = rates
        orchestrate(obj=self, config=config)

    def __call__(self, state):
        for name, q in state.tracers.items():
            self.damp(q, self.rates[name])


class Model:
    def __init__(self, config):
        self.dynamics = Dynamics(config)
        self.damping = Damping(config, {"q1": 0.01, "q2": 0.02})
        orchestrate(obj=self, config=config)

    def __call__(self, state, dt: float):
        self.dynamics(state, dt)
        self.damping(state)


def main(out: str, steps: int = 3) -> None:
    rng = np.random.default_rng(4)
    state = State(h=1.0 + rng.random(SHAPE), u=rng.uniform(-1, 1, SHAPE), dh=np.zeros(SHAPE),
                  tracers={"q1": rng.random(SHAPE), "q2": rng.random(SHAPE)})
    model = Model(DaceConfig(None, backend="dace:cpu"))
    for _ in range(steps):
        model(state, 0.1)
    np.savez(out, h=state.h, dh=state.dh, **state.tracers)


if __name__ == "__main__":
    main(sys.argv[1])
