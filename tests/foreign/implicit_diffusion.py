"""A user's implicit vertical diffusion: a tridiagonal solve per column (Thomas algorithm), explicit in between.

Run: ``python implicit_diffusion.py OUT.npz``.
"""
import sys

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

F = Field[np.float64]
SHAPE = (8, 7, 9)


def thomas(q: F, kappa: F, c_prime: F, d_prime: F, dt: float):
    with computation(FORWARD):
        with interval(0, 1):
            b = 1.0 + dt * kappa
            c_prime = -dt * kappa / b
            d_prime = q / b
        with interval(1, -1):
            a = -dt * kappa
            b = 1.0 + 2.0 * dt * kappa
            c = -dt * kappa
            m = b - a * c_prime[0, 0, -1]
            c_prime = c / m
            d_prime = (q - a * d_prime[0, 0, -1]) / m
        with interval(-1, None):
            a = -dt * kappa
            b = 1.0 + dt * kappa
            d_prime = (q - a * d_prime[0, 0, -1]) / (b - a * c_prime[0, 0, -1])
    with computation(BACKWARD):
        with interval(-1, None):
            q = d_prime
        with interval(0, -1):
            q = d_prime - c_prime * q[0, 0, 1]


def relax(q: F, target: F, rate: float):
    with computation(PARALLEL), interval(...):
        q = q + rate * (target - q)


class ImplicitDiffusion:
    def __init__(self, config, iterations: int):
        kw = dict(backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.solve = FrozenStencil(thomas, **kw)
        self.relax = FrozenStencil(relax, **kw)
        self.iterations = iterations
        self.c_prime, self.d_prime = np.zeros(SHAPE), np.zeros(SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, q, kappa, target, dt: float):
        for _ in range(self.iterations):
            self.solve(q, kappa, self.c_prime, self.d_prime, dt)
            self.relax(q, target, 0.1)


def main(out: str, steps: int = 3) -> None:
    rng = np.random.default_rng(3)
    q, kappa, target = rng.random(SHAPE), 0.5 * rng.random(SHAPE), rng.random(SHAPE)
    model = ImplicitDiffusion(DaceConfig(None, backend="dace:cpu"), iterations=2)
    for _ in range(steps):
        model(q, kappa, target, 0.25)
    np.savez(out, q=q)


if __name__ == "__main__":
    main(sys.argv[1])
