"""A chain of stencils between two callbacks, for the fusion tests.

``ChainModel`` runs, between two callbacks, a chain of ``PARALLEL`` stencils
over all levels that the plane condition allows to merge (a Laplacian read
with horizontal offsets and updated in place, a stencil on an extended
domain), one that reads the level above of a field the chain writes (must
stay separate: merged, iteration ``k`` would read level ``k + 1`` before
iteration ``k + 1`` wrote it), and a ``FORWARD`` sweep (no vertical map at
all).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate

FloatField = Field[np.float64]
HALO = 2
SHAPE = (12, 11, 5)


def laplacian(q: FloatField, lap: FloatField):
    with computation(PARALLEL), interval(...):
        lap = q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q


def update(q: FloatField, lap: FloatField, c: float):
    with computation(PARALLEL), interval(...):
        q = q + c * lap


def smooth(q: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = 0.5 * q + 0.125 * (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0])


def above(out: FloatField, lap: FloatField):
    with computation(PARALLEL), interval(...):
        lap = out - 0.25 * out[0, 0, 1]


def column(lap: FloatField, total: FloatField):
    with computation(FORWARD):
        with interval(0, 1):
            total = lap
        with interval(1, None):
            total = total[0, 0, -1] + lap


class ChainModel:
    """laplacian -> update -> smooth (extended domain) | above (reads k + 1) | column (FORWARD)."""

    def __init__(self, config: DaceConfig) -> None:
        nx, ny, nz = SHAPE[0] - 2 * HALO, SHAPE[1] - 2 * HALO, SHAPE[2] - 1  # above reads k + 1
        origin, domain = (HALO, HALO, 0), (nx, ny, nz)
        wide_origin, wide_domain = (HALO - 1, HALO - 1, 0), (nx + 2, ny + 2, nz)
        backend = config.backend
        self.laplacian = FrozenStencil(laplacian, backend=backend, origin=origin, domain=domain)
        self.update = FrozenStencil(update, backend=backend, origin=origin, domain=domain)
        self.smooth = FrozenStencil(smooth, backend=backend, origin=wide_origin, domain=wide_domain)
        self.above = FrozenStencil(above, backend=backend, origin=origin, domain=domain)
        self.column = FrozenStencil(column, backend=backend, origin=origin, domain=domain)
        self.factor = 0.1
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def coefficient(self) -> float:
        self.factor = 0.9 * self.factor
        return self.factor

    def __call__(self, q, lap, out, total):
        c: float = self.coefficient()
        self.laplacian(q, lap)
        self.update(q, lap, c)
        self.smooth(q, out)
        self.above(out, lap)
        self.column(lap, total)


def chain_fields(backend: str) -> list:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(11)
    return [gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend=backend) for _ in range(4)]


def run_chain(config: DaceConfig) -> list[np.ndarray]:
    model = ChainModel(config)
    fields = chain_fields(config.backend)
    for _ in range(2):
        model(*fields)
    return [np.asarray(field).copy() for field in fields]


def expanded_chain(cache: Path):
    """The model's SDFG after the optimize stage's simplification, before any CPU pass."""
    from orchestra.pipeline.stages import OptimizeOptions, ParsedProgram, optimize, parse
    from orchestra.toolchain import dace_settings

    model = ChainModel(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache))
    args = tuple(chain_fields("dace:cpu"))
    with dace_settings():
        program = model.__orchestra_programs__["__call__"].dace_program(args)
        parsed = parse(program, args, {})
        return optimize(ParsedProgram(parsed.sdfg, 0.0), OptimizeOptions(cpu_passes=())).sdfg
