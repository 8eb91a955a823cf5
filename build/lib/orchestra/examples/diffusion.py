"""An example model with everything orchestration has to handle.

``DiffusionModel.__call__`` runs a sub-step loop; each sub-step exchanges a
(periodic, stand-in) halo through a callback that mutates arrays, reads a
coefficient through a callback returning a scalar, calls a nested
orchestrated component (``Diffusion``: two stencils and a temporary), and,
behind a compile-time flag, applies boundary values with horizontal regions.
A vertical sweep (``FORWARD``) integrates the column at the end.

Run it (``Python`` mode unless ``FV3_DACEMODE`` says otherwise)::

    python -m orchestra.examples.diffusion
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from gt4py.cartesian.gtscript import (
    FORWARD,
    PARALLEL,
    Field,
    I,
    J,
    computation,
    horizontal,
    interval,
    region,
)

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate

FloatField = Field[np.float64]


def laplacian(q: FloatField, lap: FloatField):
    with computation(PARALLEL), interval(...):
        flux_x = q[1, 0, 0] - q[0, 0, 0]  # a temporary, kept inside the stencil
        flux_y = q[0, 1, 0] - q[0, 0, 0]
        lap = flux_x - (q[0, 0, 0] - q[-1, 0, 0]) + flux_y - (q[0, 0, 0] - q[0, -1, 0])


def apply_tendency(q: FloatField, lap: FloatField, coefficient: float):
    with computation(PARALLEL), interval(...):
        q = q + coefficient * lap


def fix_boundaries(q: FloatField, value: float):
    with computation(PARALLEL), interval(...):
        with horizontal(region[I[0], :], region[I[-1], :]):
            q = value
        with horizontal(region[:, J[0]], region[:, J[-1]]):
            q = 0.5 * (q + value)


def column_integral(q: FloatField, total: FloatField):
    with computation(FORWARD):
        with interval(0, 1):
            total = q
        with interval(1, None):
            total = total[0, 0, -1] + q


class PeriodicHalo:
    """A stand-in halo exchange: copies periodic boundaries in numpy (a callback)."""

    def __init__(self, n_halo: int) -> None:
        self.n_halo = n_halo
        self.calls = 0

    @dace_inhibitor
    def update(self, q: Any) -> None:
        h = self.n_halo
        q[:h, :, :] = q[-2 * h : -h, :, :]
        q[-h:, :, :] = q[h : 2 * h, :, :]
        q[:, :h, :] = q[:, -2 * h : -h, :]
        q[:, -h:, :] = q[:, h : 2 * h, :]
        self.calls += 1


class Diffusion:
    """One explicit diffusion step: a nested orchestrated component."""

    def __init__(self, config: DaceConfig, shape: tuple[int, int, int], n_halo: int) -> None:
        nx, ny, nz = shape[0] - 2 * n_halo, shape[1] - 2 * n_halo, shape[2]
        origin, domain = (n_halo, n_halo, 0), (nx, ny, nz)
        self.laplacian = FrozenStencil(laplacian, backend=config.backend, origin=origin, domain=domain)
        self.apply = FrozenStencil(apply_tendency, backend=config.backend, origin=origin, domain=domain)
        import gt4py.storage as gt_storage

        self.lap = gt_storage.zeros(shape, np.float64, backend=config.backend)
        orchestrate(obj=self, config=config)

    def __call__(self, q: Any, coefficient: float) -> None:
        self.laplacian(q, self.lap)
        self.apply(q, self.lap, coefficient)


class DiffusionModel:
    """The example model; ``__call__(q, total)`` advances ``n_substeps`` sub-steps."""

    def __init__(
        self,
        config: DaceConfig,
        shape: tuple[int, int, int] = (16, 16, 4),
        n_halo: int = 1,
        n_substeps: int = 3,
        fix_boundaries: bool = True,
        coefficient: float = 0.1,
    ) -> None:
        nx, ny, nz = shape[0] - 2 * n_halo, shape[1] - 2 * n_halo, shape[2]
        origin, domain = (n_halo, n_halo, 0), (nx, ny, nz)
        self.n_substeps = n_substeps
        self.apply_boundary_values = fix_boundaries
        self.boundary_value = 1.0
        self._coefficient = coefficient
        self.halo = PeriodicHalo(n_halo)
        self.diffusion = Diffusion(config, shape, n_halo)
        self.fix_boundaries = FrozenStencil(_fix_boundaries, backend=config.backend, origin=origin, domain=domain)
        self.column_integral = FrozenStencil(column_integral, backend=config.backend, origin=origin, domain=domain)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def coefficient(self) -> float:
        return self._coefficient

    def __call__(self, q: Any, total: Any) -> None:
        for _ in range(self.n_substeps):
            self.halo.update(q)
            coefficient: float = self.coefficient()
            self.diffusion(q, coefficient)
            if self.apply_boundary_values:
                self.fix_boundaries(q, self.boundary_value)
        self.column_integral(q, total)


_fix_boundaries = fix_boundaries


def initial_state(shape: tuple[int, int, int], backend: str) -> tuple[Any, Any]:
    """A smooth, non-symmetric initial field and an output array."""
    import gt4py.storage as gt_storage

    i, j, k = np.meshgrid(*(np.arange(n, dtype=np.float64) for n in shape), indexing="ij")
    values = np.sin(0.3 * i) * np.cos(0.2 * j) + 0.1 * k + 0.01 * i * j
    q = gt_storage.from_array(values, np.float64, backend=backend)
    total = gt_storage.zeros(shape, np.float64, backend=backend)
    return q, total


def main() -> None:
    config = DaceConfig(None, backend="dace:cpu")
    shape = (34, 34, 8)
    model = DiffusionModel(config, shape)
    q, total = initial_state(shape, config.backend)
    start = time.perf_counter()
    model(q, total)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(20):
        model(q, total)
    per_call = (time.perf_counter() - start) / 20
    print(f"mode {config.orchestration.value}: first call {first:.2f} s, then {per_call * 1e3:.3f} ms per call")
    print(f"checksum {float(np.asarray(total).sum()):.12e}")


if __name__ == "__main__":
    main()
