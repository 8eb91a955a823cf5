"""An offset read inside a horizontal region builds orchestrated and equals Python mode.

gt4py's orchestration wrapper ended such a field's range past the array (the
size ignores regions, the start does not), so the build failed on an array
exactly as large as Python mode needs (found by the random-program generator:
``tests/fusion/reproducers/random_program_13``).
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, PARALLEL, J, Field, computation, horizontal, interval, region

from orchestra import DaceConfig, FrozenStencil, orchestrate

FloatField = Field[np.float64]
SHAPE = (10, 9, 3)  # j: reads from 2 - 1 to 2 + 5 + 2 - 1 = 8, the last index


def edge_rows(f1: FloatField, f0: FloatField, scratch: FloatField):
    with computation(BACKWARD):
        with interval(-1, None):
            f0 = 0.5 * f1[-2, -1, 0] * f1 + 0.125 * f1[-1, 1, 0]
        with interval(0, -1):
            f0 = 0.5 * f0[0, 0, 1] + 0.25 * f1[1, -1, 0]
            with horizontal(region[:, J[0] + 1]):
                f0 = 0.25 * f1[-1, -2, 0] + 0.5 * f1[1, 0, 0]
    with computation(PARALLEL), interval(...):
        scratch = 0.5 * f1[1, 0, 0] + 0.25 * f1[1, 2, 0] - 0.25 * f1[-2, 0, 0]


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.stencil = FrozenStencil(edge_rows, backend=config.backend, origin=(2, 2, 0), domain=(6, 5, 3))
        orchestrate(obj=self, config=config)

    def __call__(self, f1, f0, scratch):
        self.stencil(f1, f0, scratch)


def _run(config: DaceConfig) -> list[np.ndarray]:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(5)
    fields = [gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend=config.backend) for _ in range(3)]
    Model(config)(*fields)
    return [np.asarray(field).copy() for field in fields]


def test_region_offset_read_on_a_tight_array_equals_python_mode(tmp_path):
    reference = _run(DaceConfig(None, backend="dace:cpu", orchestration="Python", cache_root=tmp_path))
    orchestrated = _run(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path))
    for expected, got in zip(reference, orchestrated):
        assert np.array_equal(expected.view(np.uint8), got.view(np.uint8))
