"""A stencil followed by a vertical sweep it does not feed moves down to the stencil it feeds, bitwise.

:func:`orchestra.passes.fusion.gather_kernel_states` moves a state of maps
past control-flow blocks (here the loops of a ``FORWARD`` sweep) that
neither read what it writes nor write what it reads or writes, so it fuses
with the next state of maps; a sweep that reads what the stencil writes
keeps it in place. Results are compared with ``Python`` mode bit for bit.
"""

from __future__ import annotations

import dace
import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, Scratch, orchestrate
from tests.fusion.test_scratch_planes import accumulate as column_sum  # a FORWARD sweep: total = sum of p up to k

F = Field[np.float64]
SHAPE = (9, 8, 5)
DOMAIN = (7, 8, 5)


def to_cartesian(u: F, v: F, w: F):
    with computation(PARALLEL), interval(...):
        w = 0.5 * u + 0.25 * v


def combine(w: F, total: F, out: F):
    with computation(PARALLEL), interval(...):
        out = w[1, 0, 0] - w[-1, 0, 0] + 0.125 * total


class Model:
    """``to_cartesian``, then a sweep over ``p`` (``independent``) or over ``w``, then ``combine``."""

    def __init__(self, config: DaceConfig, independent: bool) -> None:
        import gt4py.storage as gt_storage

        backend = config.backend
        self.independent = independent
        self.w = Scratch(gt_storage.zeros(SHAPE, np.float64, backend=backend))
        self.total = Scratch(gt_storage.zeros(SHAPE, np.float64, backend=backend))
        self.to_cartesian = FrozenStencil(to_cartesian, backend=backend, origin=(0, 0, 0), domain=SHAPE)
        self.column_sum = FrozenStencil(column_sum, backend=backend, origin=(0, 0, 0), domain=SHAPE)
        self.combine = FrozenStencil(combine, backend=backend, origin=(1, 0, 0), domain=DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, u, v, p, out):
        self.to_cartesian(u, v, self.w)
        if self.independent:
            self.column_sum(p, self.total)
        else:
            self.column_sum(self.w, self.total)  # reads what to_cartesian wrote: the order stays
        self.combine(self.w, self.total, out)


def _run(mode: str, independent: bool, cache, caplog) -> tuple[list[np.ndarray], Model]:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(3)
    u, v, p, out = (gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu") for _ in range(4))
    model = Model(DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache), independent)
    seen = []
    with caplog.at_level("INFO", logger="orchestra"):
        for _ in range(3):
            model(u, v, p, out)
            u[...] = np.array(out)  # the next call's input depends on this call's output
            seen += [np.array(u), np.array(out)]
    return seen, model


@pytest.mark.parametrize("independent", [True, False], ids=["independent sweep", "dependent sweep"])
def test_a_stencil_moves_past_an_independent_sweep_and_fuses_bitwise(tmp_path, caplog, independent):
    reference, _ = _run("Python", independent, tmp_path, caplog)
    caplog.clear()
    orchestrated, model = _run("BuildAndRun", independent, tmp_path, caplog)
    for expected, got in zip(reference, orchestrated):
        assert np.array_equal(expected, got)
    entry = model.__dict__["__orchestra_programs__"]["__call__"].fast_caller.origin["entry"]
    sdfg = dace.SDFG.from_file(f"{entry}/program.sdfgz")
    w_planes = [name for name in sdfg.arrays if "self_w" in name and "_plane" in name]
    moved = "1 kernel state(s) moved down to the next kernel" in caplog.text
    assert moved is independent, caplog.text
    assert bool(w_planes) is independent, sorted(sdfg.arrays)  # fused: w handed over one level at a time
