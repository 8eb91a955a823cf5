"""A tiny orchestrated model for the debug-check tests, and its inputs.

Each sub-step calls three stencils in order (``divide``, ``update_thickness``,
``smooth``), so the expected kernel sequence is known. ``inputs(case)`` makes
a NaN (0/0 in ``divide``) or a negative thickness (in ``update_thickness``)
appear at :data:`BAD_POINT`, or nothing at all for ``case="clean"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

FloatField = Field[np.float64]

SHAPE = (8, 7, 3)
N_HALO = 1
N_STEPS = 2
DT = 0.1
BAD_POINT = (3, 2, 1)
TRACE_POINT = (4, 3, 1)
STENCIL_ORDER = ("divide", "update_thickness", "smooth")
#: The field each stencil writes.
WRITES = {"divide": "ratio", "update_thickness": "h", "smooth": "out"}
#: Every check at once; fires only on bad inputs.
ALL_CHECKS = f"nan;negative:fields=h,threshold=0;trace:point={','.join(map(str, TRACE_POINT))};progress"


def divide(num: FloatField, den: FloatField, ratio: FloatField):
    with computation(PARALLEL), interval(...):
        ratio = num / den


def update_thickness(h: FloatField, ratio: FloatField, dt: float):
    with computation(PARALLEL), interval(...):
        h = h - dt * ratio


def smooth(h: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = 0.25 * (h[1, 0, 0] + h[-1, 0, 0] + h[0, 1, 0] + h[0, -1, 0])


class ThicknessModel:
    """``__call__(num, den, h, ratio, out)`` runs ``N_STEPS`` sub-steps of three stencils."""

    def __init__(self, config: DaceConfig, shape: tuple[int, int, int] = SHAPE) -> None:
        origin = (N_HALO, N_HALO, 0)
        domain = (shape[0] - 2 * N_HALO, shape[1] - 2 * N_HALO, shape[2])
        self.divide = FrozenStencil(divide, backend=config.backend, origin=origin, domain=domain)
        self.update = FrozenStencil(update_thickness, backend=config.backend, origin=origin, domain=domain)
        self.smooth = FrozenStencil(smooth, backend=config.backend, origin=origin, domain=domain)
        self.n_steps = N_STEPS
        orchestrate(obj=self, config=config)

    def __call__(self, num: Any, den: Any, h: Any, ratio: Any, out: Any) -> None:
        for _ in range(self.n_steps):
            self.divide(num, den, ratio)
            self.update(h, ratio, DT)
            self.smooth(h, out)


def inputs(case: str, backend: str, shape: tuple[int, int, int] = SHAPE) -> dict[str, Any]:
    """Arrays for one call; ``case`` is "clean", "nan" or "negative"."""
    import gt4py.storage as gt_storage

    i, j, k = np.meshgrid(*(np.arange(n, dtype=np.float64) for n in shape), indexing="ij")
    num = 0.5 + 0.1 * np.sin(i + 2 * j) + 0.05 * k
    den = 1.0 + 0.01 * i * j + 0.1 * k
    h = 2.0 + 0.1 * np.cos(i - j)
    if case == "nan":
        num[BAD_POINT] = 0.0
        den[BAD_POINT] = 0.0
    elif case == "negative":
        num[BAD_POINT] = 50.0
    elif case != "clean":
        raise ValueError(f"unknown case {case!r}")
    arrays = {"num": num, "den": den, "h": h, "ratio": np.zeros(shape), "out": np.zeros(shape)}
    return {name: gt_storage.from_array(value, np.float64, backend=backend) for name, value in arrays.items()}


def run(model: ThicknessModel, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    model(arrays["num"], arrays["den"], arrays["h"], arrays["ratio"], arrays["out"])
    return {name: np.asarray(value).copy() for name, value in arrays.items()}
