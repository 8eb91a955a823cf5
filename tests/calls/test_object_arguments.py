"""An orchestrated method may take a model state object and return a value, as in Python mode.

``model.advance(state, dt)`` with ``state`` a plain object holding arrays
and scalars (not declared with ``compiletime_type``): DaCe has no data
descriptor for it and refused the whole program ("Could not create a DaCe
data descriptor"); orchestra now folds such an argument in at parse time
(its arrays are read on every call; another object selects another program;
a scalar read through it that changes gets another program, as for
``self``). A returned value used to fail the parse audit (``__return`` was
not a keyed array). Results are compared bit for bit with ``Python`` mode.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate

FloatField = Field[np.float64]
SHAPE = (6, 5, 2)


def step(h: FloatField, u: FloatField, dt: float):
    with computation(PARALLEL), interval(...):
        h = h + dt * (u[1, 0, 0] - u[-1, 0, 0])


@dataclasses.dataclass
class State:
    h: Any
    u: Any
    weight: float = 1.0


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.step = FrozenStencil(step, backend=config.backend, origin=(1, 0, 0), domain=(4, 5, 2))
        orchestrate(obj=self, config=config, method_to_orchestrate="advance")

    @dace_inhibitor
    def norm(self, h) -> float:
        return float(np.abs(np.asarray(h)).sum())

    def advance(self, state, dt: float):
        self.step(state.h, state.u, dt * state.weight)
        total: float = self.norm(state.h)
        return total


def _state(seed: int) -> State:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(seed)
    return State(*(gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu") for _ in range(2)))


def _run(mode: str, cache) -> list[np.ndarray]:
    config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)
    model, first, second = Model(config), _state(1), _state(2)
    results = []
    for state, dt, weight in [(first, 0.1, 1.0), (first, 0.2, 1.0), (second, 0.1, 1.0), (first, 0.1, 0.5)]:
        state.weight = weight
        returned = model.advance(state, dt)
        results += [np.asarray(state.h).copy(), np.asarray(returned, dtype=np.float64).reshape(-1)]
    return results


def test_a_state_object_argument_and_a_return_value_match_python_mode(tmp_path):
    reference, orchestrated = _run("Python", tmp_path), _run("BuildAndRun", tmp_path)
    assert len(reference) == len(orchestrated) == 8
    for index, (expected, got) in enumerate(zip(reference, orchestrated)):
        assert np.array_equal(expected.view(np.uint8), got.view(np.uint8)), f"result {index}"
    assert not np.array_equal(reference[0], reference[2])  # each call advanced the state


class Probe:
    """Returns a value computed from an array it updates (no callback: the arguments are marshalled once)."""

    def __init__(self, config: DaceConfig) -> None:
        self.step = FrozenStencil(step, backend=config.backend, origin=(1, 0, 0), domain=(4, 5, 2))
        orchestrate(obj=self, config=config)

    def __call__(self, h, u):
        self.step(h, u, 0.5)
        return h[2, 2, 1] * 2.0


def test_a_value_returned_by_one_call_is_not_changed_by_the_next(tmp_path):
    """DaCe hands back the same return arrays on every call; each call's result must be the caller's own."""
    kept = {}
    for mode in ("Python", "BuildAndRun"):
        config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=tmp_path, exit_after_build=False)
        model, state = Probe(config), _state(3)
        returned = [model(state.h, state.u) for _ in range(3)]  # kept as returned, not copied
        kept[mode] = [float(np.asarray(value).reshape(-1)[0]) for value in returned]
    assert len(set(kept["Python"])) == 3  # the calls return different values
    assert kept["BuildAndRun"] == kept["Python"]
