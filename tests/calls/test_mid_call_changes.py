"""A callback that changes what the model holds while the compiled program runs is reported, once.

The compiled program reads scalars as built and arrays as marshalled at the
call's start; ``Python`` mode reads them live. Each model below has a
callback that changes a value code after it reads: the orchestrated results
differ from ``Python`` mode, and the log says which value and how to fix it.
"""

from __future__ import annotations

import numpy as np
import pytest

from orchestra import DaceConfig, dace_inhibitor, orchestrate
from tests.idioms import stencils as st
from tests.idioms.corpus import _array, fields, stencil


def _config(mode: str, cache) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)


class SetsScalar:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.dt, self.steps = 1.0, 0
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _update_dt(self):
        self.steps += 1
        self.dt = 0.5 * self.steps

    def __call__(self, x, y):
        self._update_dt()
        self._axpy(x, y, self.dt)


class ReplacesArray:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.tmp, self.swaps = _array(50), 0
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _swap(self):
        self.swaps += 1
        self.tmp = _array(50 + self.swaps)

    def __call__(self, x, y):
        self._axpy(x, self.tmp, 0.5)
        self._swap()
        self._axpy(self.tmp, y, 0.5)


class ChangesNothing:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.dt, self.calls = 0.25, []
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _count(self):
        self.calls.append(1)  # model state the program does not read

    def __call__(self, x, y):
        self._count()
        self._axpy(x, y, self.dt)


def _run(model_class, mode: str, cache) -> np.ndarray:
    model, arrays = model_class(_config(mode, cache)), fields()
    for _ in range(2):
        model(arrays.x, arrays.y)
    return np.asarray(arrays.y).copy()


@pytest.mark.parametrize("model_class, said", [
    (SetsScalar, "self.dt was 1.0 when built, is 0.5 now: it changed while the compiled program ran"),
    (ReplacesArray, "self.tmp was replaced while the compiled program ran"),
])
def test_a_value_a_callback_changes_mid_call_is_reported_once(model_class, said, tmp_path, caplog):
    expected = _run(model_class, "Python", tmp_path)
    with caplog.at_level("INFO", logger="orchestra"):
        got = _run(model_class, "BuildAndRun", tmp_path)
    assert not np.array_equal(expected, got)  # what the warning is about: it differs from Python mode
    warnings = [record for record in caplog.records if "while the compiled program ran" in record.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING", [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert message.startswith(f"{model_class.__name__}.__call__: ") and said in message
    assert "Python mode" in message and ("from the callback" in message or "Write into the array" in message)


def test_a_callback_that_changes_nothing_the_program_reads_is_not_reported(tmp_path, caplog):
    expected = _run(ChangesNothing, "Python", tmp_path)
    with caplog.at_level("INFO", logger="orchestra"):
        got = _run(ChangesNothing, "BuildAndRun", tmp_path)
    assert np.array_equal(expected, got)
    assert "while the compiled program ran" not in caplog.text
