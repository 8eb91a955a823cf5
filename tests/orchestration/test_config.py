"""Modes and configuration errors (no builds)."""

import pytest

from orchestra import ConfigurationError, DaceConfig, DaCeOrchestration, orchestrate
from orchestra.passes.debug import DebugChecks


def test_mode_from_environment(monkeypatch):
    monkeypatch.setenv("FV3_DACEMODE", "BuildAndRun")
    assert DaCeOrchestration.from_environment() is DaCeOrchestration.BuildAndRun
    monkeypatch.delenv("FV3_DACEMODE")
    assert DaCeOrchestration.from_environment() is DaCeOrchestration.Python


def test_invalid_mode_lists_choices(monkeypatch):
    monkeypatch.setenv("FV3_DACEMODE", "build")
    with pytest.raises(ConfigurationError) as error:
        DaceConfig(None, backend="dace:cpu")
    message = str(error.value)
    assert "FV3_DACEMODE='build'" in message
    for mode in ("Python", "Build", "BuildAndRun", "Run"):
        assert mode in message


@pytest.mark.parametrize("backend", ["numpy", "gt:cpu_kfirst"])
def test_orchestration_needs_a_dace_backend(backend):
    with pytest.raises(ConfigurationError, match="needs a DaCe backend.*dace:cpu"):
        DaceConfig(None, backend=backend, orchestration=DaCeOrchestration.BuildAndRun)


def test_python_mode_accepts_any_backend_and_leaves_object_alone():
    config = DaceConfig(None, backend="numpy", orchestration="Python")

    class Model:
        def __call__(self):
            return 42

    model = Model()
    orchestrate(model, config)
    assert type(model) is Model and model() == 42


def test_unknown_debug_check_is_clear():
    with pytest.raises(ConfigurationError, match="unknown debug check.*nann.*valid checks are: nan"):
        DebugChecks.parse("nan,nann")


@pytest.mark.parametrize("value", ["soon", "nan", "inf", "-inf", "0", "-5"])
def test_bad_build_timeout(monkeypatch, value):
    monkeypatch.setenv("ORCHESTRA_BUILD_TIMEOUT", value)
    with pytest.raises(ConfigurationError, match="ORCHESTRA_BUILD_TIMEOUT"):
        DaceConfig(None, backend="dace:cpu", orchestration="Python")


def test_missing_method_is_clear():
    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun")
    with pytest.raises(AttributeError, match="has no method 'step'"):
        orchestrate(object(), config, method_to_orchestrate="step")
