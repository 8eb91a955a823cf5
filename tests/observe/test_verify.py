"""``ORCHESTRA_VERIFY``: each orchestrated call also runs in Python mode; the first difference is named (issue 54)."""

from __future__ import annotations

import numpy as np
import pytest

import orchestra.pipeline.callback_bindings as callback_bindings
from orchestra import ConfigurationError, DaceConfig, DaCeOrchestration, VerificationError, dace_inhibitor, orchestrate
from orchestra.observe.verify import reachable_arrays, verify_calls_from_environment


class Halo:
    @dace_inhibitor
    def fill(self, q):
        q[0] = q[-2]


class Inner:
    def __init__(self, config: DaceConfig, halo: Halo) -> None:
        self.halo, self.b = halo, np.arange(4.0)
        self.fields = {"eta": np.arange(6.0).reshape(2, 3)}
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.halo.fill(self.b)
        self.fields["eta"][:] = self.fields["eta"] + q[0]


class Outer:
    def __init__(self, config: DaceConfig) -> None:
        self.halo, self.a = Halo(), np.arange(4.0)
        self.inner = Inner(config, self.halo)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.inner(q)
        self.halo.fill(self.a)
        q[:] = q * 0.5 + self.a


def config(tmp_path, verify) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=tmp_path,
                      verify=verify)


def test_a_correct_model_is_verified_and_ends_with_the_orchestrated_results(tmp_path):
    reference = Outer(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.Python))
    model = Outer(config(tmp_path, verify=0))
    q_reference, q = np.arange(4.0), np.arange(4.0)
    for _ in range(3):
        reference(q_reference)
        model(q)
    assert model.__orchestra_programs__["__call__"]._verify.verified == 3
    assert np.array_equal(q, q_reference) and np.array_equal(model.inner.fields["eta"], reference.inner.fields["eta"])


def test_the_first_difference_is_named_by_access_path_index_and_values(tmp_path, monkeypatch):
    # the defect of issue 54 put back: callbacks bound by DaCe's names, the nested fill runs the caller's
    monkeypatch.setattr(callback_bindings, "bind_callbacks", lambda sdfg, resolver, label: None)
    model = Outer(config(tmp_path, verify=0))
    with pytest.raises(VerificationError) as raised:
        model(np.arange(4.0))
    message = str(raised.value)
    assert ("call 1 of Outer.__call__ differs from Python mode: self.inner.b[0] is 0.0 orchestrated and 2.0 in Python "
            "mode (1 of 4 values differ)") in message
    # narrowed down to the callback call and the argument it was bound to, named where Python mode called it
    assert ("callback call 1, Halo.fill (called at test_verify.py:26 in Python mode) ran with (self.halo, self.a) "
            "orchestrated and with (self.halo, self.inner.b) in Python mode") in message
    assert np.array_equal(model.a, [2.0, 1.0, 2.0, 3.0])  # the model holds the orchestrated results


class Counting:
    """A callback whose effect depends on how often it ran: verification sees it, narrowing names it."""

    def __init__(self, config: DaceConfig) -> None:
        self.calls, self.q = 0, np.zeros(3)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def stamp(self, q):
        self.calls += 1
        q[0] = self.calls

    def __call__(self):
        self.q[1] = self.q[1] + 1.0
        self.stamp(self.q)
        self.q[2] = self.q[0] * 2.0


def test_a_callback_that_acts_differently_when_called_again_is_named(tmp_path):
    model = Counting(config(tmp_path, verify=0))
    with pytest.raises(VerificationError) as raised:
        model()
    message = str(raised.value)
    assert "self.q[0] is 2.0 orchestrated and 1.0 in Python mode" in message
    assert ("callback call 1, Counting.stamp (called at test_verify.py:87 in Python mode) left self.q different though "
            "it was called alike: the callback acts differently when called again") in message


def test_only_the_first_calls_are_verified_when_asked(tmp_path):
    model = Outer(config(tmp_path, verify=2))
    for _ in range(4):
        model(np.arange(4.0))
    verifier = model.__orchestra_programs__["__call__"]._verify
    assert (verifier.verified, verifier.calls) == (2, 2)


class Scaled:
    """A scalar argument: Python's float on one call, a NumPy scalar (immutable, but with an array interface) on another."""

    def __init__(self, config: DaceConfig) -> None:
        self.a = np.arange(4.0)
        orchestrate(obj=self, config=config)

    def __call__(self, q, dt: float):
        q[:] = q * dt + self.a


def test_numpy_scalar_arguments_are_values_not_arrays(tmp_path):
    # ORCHESTRA_VERIFY put every value with an array interface back as an array: np.float32(0.1) crashed
    # ('numpy.float32' object does not support item assignment)
    reference = Scaled(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.Python))
    model = Scaled(config(tmp_path, verify=0))
    for dt in (0.25, np.float32(0.1), np.float64(0.5)):
        q_reference, q = np.arange(4.0), np.arange(4.0)
        reference(q_reference, dt)
        model(q, dt)
        assert np.array_equal(q, q_reference), dt
    assert model.__orchestra_programs__["__call__"]._verify.verified == 3
    assert set(reachable_arrays(model, ["q", "dt"], (np.zeros(2), np.float32(0.1)), {})) == {"self.a", "q"}


def test_arrays_are_found_through_the_object_and_the_arguments():
    import dataclasses

    @dataclasses.dataclass
    class State:
        eta: np.ndarray
        tracers: dict

    from orchestra import Scratch

    model = Outer(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.Python))
    model.work = Scratch(np.zeros(3))  # the program's own: Python mode writes it, the program never does
    state = State(np.zeros(3), {"qv": np.ones(2)})
    found = reachable_arrays(model, ["state", "q"], (state, np.zeros(1)), {})
    assert {"self.a", "self.inner.b", "self.inner.fields['eta']", "state.eta", "state.tracers['qv']", "q"} <= set(found)
    assert "self.inner.halo" not in found and "self.work" not in found


@pytest.mark.parametrize("value, expected", [("", None), ("0", None), ("1", 0)])
def test_the_setting(monkeypatch, value, expected):
    monkeypatch.setenv("ORCHESTRA_VERIFY", value)
    monkeypatch.delenv("ORCHESTRA_VERIFY_CALLS", raising=False)
    assert verify_calls_from_environment() == expected
    monkeypatch.setenv("ORCHESTRA_VERIFY", "yes please")
    with pytest.raises(ConfigurationError, match="ORCHESTRA_VERIFY='yes please'"):
        verify_calls_from_environment()
    monkeypatch.setenv("ORCHESTRA_VERIFY", "1")
    monkeypatch.setenv("ORCHESTRA_VERIFY_CALLS", "5")
    assert verify_calls_from_environment() == 5


def test_the_departures_the_traces_tell_apart():
    from orchestra.observe.callback_trace import CallbackEvent, CallbackTrace, first_departure

    def trace(*events, final=None):
        found = CallbackTrace({}, {}, [CallbackEvent(*event) for event in events])
        found.final = final or {"self.u": 1}
        return found

    first = ("Halo.fill", "model.py:5", ("self.u",), "None", {"self.u": 1}, {"self.u": 2})
    second = ("Halo.fill", "model.py:9", ("self.v",), "None", {"self.u": 2}, {"self.u": 2})
    computed_otherwise = ("Halo.fill", "", ("self.v",), "None", {"self.u": 7}, {"self.u": 7})
    assert first_departure(trace(first, second), trace(first, computed_otherwise)) == (
        "the arrays self.u differ on entry to callback call 2, Halo.fill (called at model.py:9 in Python mode), after "
        "callback call 1, Halo.fill (called at model.py:5 in Python mode): the compiled code in between computed them "
        "differently")
    assert "the program made 1 callback call(s), Python mode 2" in first_departure(trace(first, second), trace(first))
    other = ("Halo.exchange",) + first[1:]
    assert "callback call 1 is Halo.exchange orchestrated and Halo.fill" in first_departure(trace(first), trace(other))
    assert first_departure(trace(first), trace(first, final={"self.u": 3})) == (
        "the arrays self.u first differ after the last callback call 1, Halo.fill (called at model.py:5 in Python mode)")
    assert first_departure(trace(), trace(final={"self.u": 3})) == (
        "the arrays self.u first differ in compiled code (no traced callback ran)")
