"""A user's column physics: saturation adjustment with branches and exp, a sedimentation sweep down the column.

Run: ``python column_physics.py OUT.npz``.
"""
import sys

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, computation, exp, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

F = Field[np.float64]
SHAPE = (9, 8, 7)


def saturation(t: F, qv: F, qc: F, threshold: float):
    with computation(PARALLEL), interval(...):
        qsat = 0.01 * exp(0.06 * (t - 273.0))
        if qv > qsat:
            excess = qv - qsat
            qv = qsat
            qc = qc + excess
            t = t + 2.5 * excess
        elif qc > threshold:
            evaporated = min(qc, qsat - qv)
            qv = qv + evaporated
            qc = qc - evaporated


def sedimentation(qc: F, flux: F, fall: float):
    with computation(BACKWARD):
        with interval(-1, None):
            flux = fall * qc
            qc = qc - flux
        with interval(0, -1):
            flux = fall * qc
            qc = qc - flux + flux[0, 0, 1]


def column_total(qc: F, total: F):
    with computation(FORWARD):
        with interval(0, 1):
            total = qc
        with interval(1, None):
            total = total[0, 0, -1] + qc


class Microphysics:
    def __init__(self, config, fall: float):
        kw = dict(backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.saturation = FrozenStencil(saturation, **kw)
        self.sedimentation = FrozenStencil(sedimentation, **kw)
        self.total = FrozenStencil(column_total, **kw)
        self.fall = fall
        self.flux = np.zeros(SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, t, qv, qc, total):
        self.saturation(t, qv, qc, 1e-4)
        if self.fall > 0.0:  # decided when the program is built
            self.sedimentation(qc, self.flux, self.fall)
        self.total(qc, total)


def main(out: str, steps: int = 3) -> None:
    rng = np.random.default_rng(2)
    t = 260.0 + 40.0 * rng.random(SHAPE)
    qv, qc, total = 0.02 * rng.random(SHAPE), 0.001 * rng.random(SHAPE), np.zeros(SHAPE)
    model = Microphysics(DaceConfig(None, backend="dace:cpu"), fall=0.3)
    for _ in range(steps):
        model(t, qv, qc, total)
    np.savez(out, t=t, qv=qv, qc=qc, total=total)


if __name__ == "__main__":
    main(sys.argv[1])
