"""The build log names the callbacks that cut two kernels apart; read before the stencils, they merge.

A ``dace_inhibitor`` getter between two stencils is a state of its own, and
fusion never crosses one (:mod:`orchestra.passes.fusion.barriers`). The same
model with the getter read before its first stencil builds one kernel, its
intermediate handed over in planes; both are bitwise equal to ``Python`` mode.
"""

from __future__ import annotations

import dace
import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, Scratch, dace_inhibitor, orchestrate
from orchestra.passes.fusion.barriers import Barrier, callback_barriers
from tests.orchestration.test_scratch_arrays import laplacian

F = Field[np.float64]
SHAPE = (9, 8, 5)
DOMAIN = (7, 8, 5)


def damp(q: F, lap: F, out: F, strength: float):
    with computation(PARALLEL), interval(...):
        out = q - strength * lap


class Model:
    """``laplacian`` then ``damp``, with the getter ``strength()`` read between them or before both."""

    def __init__(self, config: DaceConfig, getter_first: bool) -> None:
        import gt4py.storage as gt_storage

        self.getter_first = getter_first
        self.tmp = Scratch(gt_storage.zeros(SHAPE, np.float64, backend=config.backend))
        self.laplacian = FrozenStencil(laplacian, backend=config.backend, origin=(1, 0, 0), domain=DOMAIN)
        self.damp = FrozenStencil(damp, backend=config.backend, origin=(1, 0, 0), domain=DOMAIN)
        self.calls = 0
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def strength(self) -> float:
        self.calls += 1
        return 0.125 + 0.001 * self.calls  # a run-time value: never folded into the build

    def __call__(self, q, out):
        if self.getter_first:
            strength: float = self.strength()
            self.laplacian(q, self.tmp)
            self.damp(q, self.tmp, out, strength)
        else:
            self.laplacian(q, self.tmp)
            strength: float = self.strength()
            self.damp(q, self.tmp, out, strength)


def _run(mode: str, getter_first: bool, cache, caplog) -> tuple[list[np.ndarray], Model]:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(5)
    q, out = (gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu") for _ in range(2))
    model = Model(DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache), getter_first)
    seen = []
    with caplog.at_level("INFO", logger="orchestra"):
        for _ in range(3):
            model(q, out)
            seen += [np.array(q), np.array(out)]
    return seen, model


@pytest.mark.parametrize("getter_first", [False, True], ids=["getter between", "getter first"])
def test_the_log_names_the_callback_between_two_kernels_and_reading_it_first_merges_them(
    tmp_path, caplog, getter_first
):
    reference, _ = _run("Python", getter_first, tmp_path, caplog)
    caplog.clear()
    orchestrated, model = _run("BuildAndRun", getter_first, tmp_path, caplog)
    for expected, got in zip(reference, orchestrated):
        assert np.array_equal(expected, got)
    entry = model.__dict__["__orchestra_programs__"]["__call__"].fast_caller.origin["entry"]
    sdfg = dace.SDFG.from_file(f"{entry}/program.sdfgz")
    planes = [name for name in sdfg.arrays if "self_tmp" in name and "_plane" in name]
    barriers = callback_barriers(sdfg)
    if getter_first:
        assert barriers == [] and planes, (barriers, sorted(sdfg.arrays))
        assert "fusion stopped at callbacks" not in caplog.text
    else:
        assert barriers == [Barrier("laplacian", ("self_strength",), "damp")] and not planes
        assert "fusion stopped at callbacks: 1x self_strength (laplacian | damp)" in caplog.text
