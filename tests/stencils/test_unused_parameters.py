"""A stencil parameter the stencil never reads still connects when orchestrated.

gt4py leaves such parameters out of the stencil's SDFG (a scalar never read;
a field read only in a horizontal region that lies outside the domain) while
keeping them in its signature; orchestrated, DaCe could not connect the
call's argument and the build failed (found by the random-program generator).
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, I, Field, computation, horizontal, interval, region

from orchestra import DaceConfig, FrozenStencil, orchestrate

FloatField = Field[np.float64]
SHAPE = (8, 7, 3)


def ignores(a: FloatField, b: FloatField, far: FloatField, c: float, unused: float):
    with computation(PARALLEL), interval(...):
        b = 2.0 * a + c
        with horizontal(region[I[0] - 2, :]):  # outside the domain: far is never read
            b = far


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.stencil = FrozenStencil(ignores, backend=config.backend, origin=(1, 1, 0), domain=(6, 5, 3))
        orchestrate(obj=self, config=config)

    def __call__(self, a, b, far):
        self.stencil(a, b, far, 0.5, 3.0)


def _run(config: DaceConfig) -> np.ndarray:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(3)
    a, b, far = (gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend=config.backend) for _ in range(3))
    Model(config)(a, b, far)
    return np.asarray(b).copy()


def test_unread_parameters_build_and_compute_what_python_mode_computes(tmp_path):
    reference = _run(DaceConfig(None, backend="dace:cpu", orchestration="Python", cache_root=tmp_path))
    orchestrated = _run(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path))
    assert np.array_equal(reference.view(np.uint8), orchestrated.view(np.uint8))
    assert not np.array_equal(reference[1:7, 1:6], np.zeros((6, 5, 3)))
