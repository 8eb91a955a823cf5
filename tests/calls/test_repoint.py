"""Arrays replaced between calls are repointed in the marshalled arguments, not marshalled again (issue 54, item 8)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from orchestra import DaceConfig, DaCeOrchestration, StaleArgumentsError, dace_inhibitor, orchestrate

SHAPE = (6, 5)


@dataclasses.dataclass
class State:
    u: np.ndarray
    u_old: np.ndarray
    h: np.ndarray
    tracers: dict


class Leapfrog:
    """Two time levels swapped after every step, a fresh tracer array now and then, callbacks on both."""

    def __init__(self, config: DaceConfig, state: State) -> None:
        self.state = state
        self.seen: list[bool] = []
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def fill(self, q):
        q[0, :] = q[-1, :]

    @dace_inhibitor
    def check_identity(self, h):
        self.seen.append(h is self.state.h)  # the callback gets the model's own array object

    def __call__(self, h, dt: float):
        self.state.u[:] = self.state.u_old + dt * (self.state.u - h)
        self.fill(self.state.u)
        self.state.tracers["q"][:] = self.state.tracers["q"] * 0.5 + self.state.u
        h[:] = h + 0.25 * self.state.u
        self.check_identity(h)


def new_state(seed: int) -> State:
    random = np.random.default_rng(seed)
    return State(*(random.random(SHAPE) for _ in range(3)), {"q": random.random(SHAPE)})


def step(model: Leapfrog, number: int) -> None:
    state = model.state
    model(state.h, 0.1 + 0.01 * number)  # a varying time step: a scalar changed on every call
    state.u, state.u_old = state.u_old, state.u
    if number % 3 == 2:
        state.tracers["q"] = state.tracers["q"].copy()  # a fresh array of the same layout
    if number % 4 == 3:
        state.h = state.h.copy()


def test_swapped_and_fresh_arrays_compute_what_python_mode_computes_without_marshalling_again(tmp_path):
    reference = Leapfrog(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.Python), new_state(1))
    config = DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=tmp_path)
    model = Leapfrog(config, new_state(1))
    for number in range(12):
        step(reference, number)
        step(model, number)
    for name in ("u", "u_old", "h"):
        assert np.array_equal(getattr(model.state, name), getattr(reference.state, name)), name
    assert np.array_equal(model.state.tracers["q"], reference.state.tracers["q"])
    caller = model.__orchestra_programs__["__call__"].fast_caller
    assert caller.marshal_count == 1 and caller.repoint_count == 11
    assert model.seen == [True] * 12


def test_an_array_that_now_shares_memory_is_still_refused(tmp_path):
    config = DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=tmp_path)
    model = Leapfrog(config, new_state(2))
    model(model.state.h, 0.1)
    model.state.u_old = model.state.u  # one array under two names
    with pytest.raises(StaleArgumentsError, match="share memory"):
        model(model.state.h, 0.1)
    model.state.u_old = model.state.u[::-1, :]  # a view of another layout: marshalled afresh, refused there too
    with pytest.raises(StaleArgumentsError, match="share memory"):
        model(model.state.h, 0.1)


def test_another_layout_is_marshalled_afresh(tmp_path):
    config = DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=tmp_path)
    model = Leapfrog(config, new_state(3))
    model(model.state.h, 0.1)
    caller = model.__orchestra_programs__["__call__"].fast_caller
    model.state.u_old = np.asfortranarray(model.state.u_old)  # same shape, other strides
    with pytest.raises(StaleArgumentsError):
        model(model.state.h, 0.1)
    assert caller.repoint_count == 0


def test_scalars_of_other_types_compute_what_python_mode_computes(tmp_path):
    reference = Leapfrog(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.Python), new_state(4))
    config = DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=tmp_path)
    model = Leapfrog(config, new_state(4))
    for dt in (0.1, 0.2, np.float32(0.3), 1, 0.4):  # floats repointed; numpy float32 and int: as a full call takes them
        reference(reference.state.h, dt)
        model(model.state.h, dt)
        if dt == 0.2:
            caller = model.__orchestra_programs__["__call__"].fast_caller
            assert (caller.marshal_count, caller.repoint_count) == (1, 1)
    assert np.array_equal(model.state.u, reference.state.u) and np.array_equal(model.state.h, reference.state.h)
