"""Argument messages name what the user wrote and what differs (issue 54, item 7)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from orchestra import DaceConfig, DaCeOrchestration, StaleArgumentsError, orchestrate


@dataclasses.dataclass
class State:
    salt: np.ndarray


class Inner:
    def __init__(self, config: DaceConfig, state: State) -> None:
        self.state = state
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.state.salt[:] = self.state.salt + q


class Model:
    def __init__(self, config: DaceConfig, state: State) -> None:
        self.inner = Inner(config, state)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.inner(q)


@pytest.fixture()
def model(tmp_path):
    state = State(np.ones(3))
    model = Model(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun,
                             cache_root=tmp_path), state)
    model(np.ones(3))
    return model, state


def test_another_dtype_is_told_as_a_type_not_as_a_size(model):
    model, _ = model
    with pytest.raises(StaleArgumentsError, match=r"argument 'q' is an array of float32, but the program was built "
                                                  r"for float64: .*give float64 arrays"):
        model(np.ones(3, dtype=np.float32))


def test_a_nested_components_array_is_named_by_its_access_path(model):
    model, state = model
    state.salt = np.ones(4)
    with pytest.raises(StaleArgumentsError, match=r"^self\.state\.salt has shape \(4,\), but the program was built "
                                                  r"for shape \(3,\)"):
        model(np.ones(3))
