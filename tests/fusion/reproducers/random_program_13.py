"""Random program 13 (tests/fusion/random_programs.py)."""

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, I, J, computation, horizontal, interval, region

from orchestra import FrozenStencil, dace_inhibitor, orchestrate

FloatField = Field[np.float64]
HALO = 2


def stencil_0(f1: FloatField, scratch: FloatField, f0: FloatField, f2: FloatField, c: float):
    with computation(PARALLEL), interval(0, 1):
        f2 = 0.2222222222222222 * f1[0, -1, 0] * scratch * c + 0.3333333333333333 * scratch[1, 1, 0] + 0.4444444444444444 * f0[0, 0, 0]
    with computation(PARALLEL), interval(1, None):
        tmp = 0.375 * scratch[1, 0, 0] + 0.375 * f0[0, 1, 0] * f0
        f2 = 0.5 * (0.5 * (0.125 * f0[-1, 0, 0] * c + 0.375 * scratch[1, -1, 0] + 0.375 * f1[1, 0, 0]) + 0.5 * tmp[1, 0, 0]) + 0.5 * scratch[0, 0, -1]


def stencil_1(f1: FloatField, f0: FloatField, scratch: FloatField):
    with computation(BACKWARD):
        with interval(-1, None):
            f0 = 0.5 * f1[-2, -1, 0] * f1 + 0.125 * f1[-1, 1, 0]
        with interval(0, -1):
            f0 = 0.5 * f0[0, 0, 1] + 0.5 * (-0.25 * f1[2, -1, 0] + 0.25 * f1[1, -1, 0])
            with horizontal(region[:, J[0] + 1]):
                f0 = 0.4444444444444444 * f1[-1, 0, 0] * f1 + -0.2222222222222222 * f1[-1, -2, 0] + 0.3333333333333333 * f1[1, 0, 0]
    with computation(PARALLEL), interval(...):
        scratch = 0.5 * f1[1, 0, 0] + 0.25 * f1[1, 2, 0] + -0.25 * f1[-2, 0, 0]


def stencil_2(f1: FloatField, scratch: FloatField, f3: FloatField, f0: FloatField, f2: FloatField):
    with computation(BACKWARD):
        with interval(-1, None):
            f0 = 0.25 * f1[-1, 0, 0] + -0.25 * scratch[-1, 0, 0] + 0.125 * f3[2, 0, 0]
        with interval(0, -1):
            f0 = 0.5 * f0[0, 0, 1] + 0.5 * (-0.25 * scratch[1, 1, 0] * f1 + 0.125 * f3[-2, 0, 0] * scratch + 0.5 * f3[1, 0, 0] * f3)
    with computation(PARALLEL), interval(...):
        f2 = 0.25 * f1[-2, 0, 0]


def stencil_3(f1: FloatField, f0: FloatField, scratch: FloatField):
    with computation(PARALLEL), interval(...):
        f0 = 0.25 * f1[0, -1, 0] + 0.5 * f1[-2, -1, 0]
        scratch = 0.5 * f0 + -0.25 * f1[-2, -1, 0]


class RandomProgram:
    def __init__(self, config, shape):
        import gt4py.storage as gt_storage

        backend = config.backend
        self.stencil_0 = FrozenStencil(stencil_0, backend=backend, origin=(2, 2, 0), domain=(6, 5, 3))
        self.stencil_1 = FrozenStencil(stencil_1, backend=backend, origin=(2, 2, 0), domain=(6, 5, 3))
        self.stencil_2 = FrozenStencil(stencil_2, backend=backend, origin=(2, 2, 0), domain=(6, 5, 3))
        self.stencil_3 = FrozenStencil(stencil_3, backend=backend, origin=(2, 2, 0), domain=(6, 5, 3))
        self.scratch = gt_storage.zeros(shape, np.float64, backend=backend)
        self.factor = 0.75
        self.exchanges = 0
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def exchange(self, q):
        h = HALO
        q[:h, :, :] = q[-2 * h : -h, :, :]
        q[-h:, :, :] = q[h : 2 * h, :, :]
        q[:, :h, :] = q[:, -2 * h : -h, :]
        q[:, -h:, :] = q[:, h : 2 * h, :]
        self.exchanges += 1

    @dace_inhibitor
    def coefficient(self) -> float:
        self.factor = -0.5 * self.factor
        return self.factor

    def __call__(self, f0, f1, f2, f3):
        c: float = self.coefficient()
        self.stencil_0(f1, self.scratch, f0, f2, c)
        self.stencil_1(f1, f0, self.scratch)
        self.stencil_2(f1, self.scratch, f3, f0, f2)
        c: float = self.coefficient()
        self.stencil_3(f1, f0, self.scratch)
