"""Python mode's stencils compile ahead in worker processes, and compute what serial first calls compute (issue 56).

:mod:`orchestra.stencils.compile_ahead`: once started, workers compile every
DaCe-backend FrozenStencil made into gt4py's cache before its first call; the
calls then load them and give results bitwise equal to stencils compiled by
their first calls with no worker; a stencil whose compilation fails in a
worker raises gt4py's own error on its first call; ``orchestrate`` in
``Python`` mode starts the workers with the config's count, and 0 starts none.
The per-stencil lock they rely on: ``tests/stencils/test_gt4py_build_lock.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from gt4py.cartesian import config as gt_config
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.errors import ConfigurationError
from orchestra.stencils import compile_ahead

SHAPE, ORIGIN, DOMAIN = (7, 6, 3), (1, 1, 0), (5, 4, 3)


def smooth(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = 0.5 * a + 0.125 * (a[1, 0, 0] + a[-1, 0, 0] + a[0, 1, 0] + a[0, -1, 0])


def shear(a: Field[np.float64], b: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a[1, 1, 0] * b - a[-1, 0, 0] / (1.0 + b[0, -1, 0] * b[0, -1, 0])


def self_offset(a: Field[np.float64], out: Field[np.float64]):  # gt4py refuses it only when it builds the IR
    with computation(PARALLEL), interval(...):
        a = a[1, 0, 0] + out


@pytest.fixture
def gt_cache(tmp_path, monkeypatch):
    """A fresh gt4py cache; no workers before or after the test."""
    def use(name: str) -> Path:
        monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path / name))
        return tmp_path / name

    compile_ahead.stop()
    yield use
    compile_ahead.stop()


def _stencils() -> list[FrozenStencil]:
    return [FrozenStencil(smooth, backend="dace:cpu", origin=ORIGIN, domain=DOMAIN),
            FrozenStencil(shear, backend="dace:cpu", origin=ORIGIN, domain=DOMAIN)]


def _run(stencils: list[FrozenStencil]) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    a, b = rng.random(SHAPE), rng.random(SHAPE) + 0.5
    out_smooth, out_shear = np.zeros(SHAPE), np.zeros(SHAPE)
    stencils[0](a, out_smooth)
    stencils[1](a, b, out_shear)
    return [out_smooth, out_shear]


def _compiled(stencil: FrozenStencil) -> bool:
    return stencil.stencil_object.builder.caching.is_cache_info_available_and_consistent(validate_hash=True)


def _wait_for(condition, timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not done after {timeout_s} s"
        time.sleep(0.5)


def test_workers_compile_ahead_and_first_calls_compute_what_serial_ones_do(gt_cache):
    gt_cache("serial")
    serial = _run(_stencils())  # no worker: each stencil compiles on its first call

    gt_cache("ahead")
    stencils = _stencils()
    assert not any(_compiled(stencil) for stencil in stencils)
    pool = compile_ahead.start(1)
    _wait_for(lambda: all(_compiled(stencil) for stencil in stencils))  # before any call
    # the worker reports a stencil once gt4py's cache holds it: wait for the report too
    # (stencils other test files of this process made may be compiled too)
    reported = lambda: all(f"compiled FrozenStencil({name}, " in pool.worker_output() for name in ("smooth", "shear"))  # noqa: E731
    _wait_for(reported, timeout_s=60.0)
    ahead = _run(stencils)
    for expected, got in zip(serial, ahead):
        assert np.array_equal(expected, got)  # bitwise


def test_a_stencil_failing_in_a_worker_raises_its_own_error_on_first_call(gt_cache):
    gt_cache("failing")
    stencil = FrozenStencil(self_offset, backend="dace:cpu", origin=ORIGIN, domain=DOMAIN)
    pool = compile_ahead.start(1)
    _wait_for(lambda: "compiling failed" in pool.worker_output())
    assert "Self-assignment with offset" in pool.worker_output()
    with pytest.raises(ValueError, match="Self-assignment with offset in I or J is illegal"):
        stencil(np.zeros(SHAPE), np.zeros(SHAPE))


class _Model:
    def __init__(self, config: DaceConfig) -> None:
        self.stencil = FrozenStencil(smooth, backend="dace:cpu", origin=ORIGIN, domain=DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, a, out):
        self.stencil(a, out)


def test_orchestrate_in_python_mode_starts_the_config_s_count_of_workers(gt_cache):
    gt_cache("none")
    _Model(DaceConfig(None, backend="dace:cpu", orchestration="Python", compile_processes=0))
    assert compile_ahead._pool is not None and compile_ahead._pool.limit == 0 and not compile_ahead._pool.workers
    compile_ahead.stop()
    _Model(DaceConfig(None, backend="dace:cpu", orchestration="Python", compile_processes=1))
    assert compile_ahead._pool.limit == 1 and len(compile_ahead._pool.jobs) == 1


def test_the_count_comes_from_the_environment_and_is_checked(monkeypatch):
    monkeypatch.setenv("ORCHESTRA_COMPILE_PROCESSES", "3")
    assert DaceConfig(None, backend="numpy", orchestration="Python").compile_processes == 3
    monkeypatch.setenv("ORCHESTRA_COMPILE_PROCESSES", "many")
    with pytest.raises(ConfigurationError, match="ORCHESTRA_COMPILE_PROCESSES='many' is not a number of processes"):
        DaceConfig(None, backend="numpy", orchestration="Python")
    monkeypatch.delenv("ORCHESTRA_COMPILE_PROCESSES")
    with pytest.raises(ConfigurationError, match="compile_processes"):
        DaceConfig(None, backend="numpy", orchestration="Python", compile_processes=-1)
    assert 0 <= compile_ahead.default_count() <= compile_ahead.DEFAULT_LIMIT
