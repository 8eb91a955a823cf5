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


@pytest.mark.parametrize("value", ["bogus", "verbose", "10"])
def test_bad_log_level_is_refused_when_the_config_is_made(monkeypatch, value):
    monkeypatch.setenv("ORCHESTRA_LOG_LEVEL", value)
    with pytest.raises(ConfigurationError, match=f"ORCHESTRA_LOG_LEVEL='{value}' is not a log level; choose one of: DEBUG"):
        DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun")
    monkeypatch.setenv("ORCHESTRA_LOG_LEVEL", "debug")
    DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun")


def test_a_cache_root_that_is_a_file_is_refused_when_the_config_is_made(tmp_path):
    (tmp_path / "afile").write_text("not a folder")
    for root in (tmp_path / "afile", tmp_path / "afile" / "cache"):
        with pytest.raises(ConfigurationError, match=f"{tmp_path / 'afile'} is a file; set ORCHESTRA_CACHE_DIR"):
            DaceConfig(None, backend="dace:cpu", orchestration="Run", cache_root=root)
    DaceConfig(None, backend="dace:cpu", orchestration="Run", cache_root=tmp_path / "not" / "yet" / "there")


@pytest.mark.parametrize("value", ["two", "1.5"])
def test_a_split_depth_that_is_not_a_number_is_refused(monkeypatch, value):
    monkeypatch.setenv("ORCHESTRA_SPLIT_DEPTH", value)
    with pytest.raises(ConfigurationError, match=f"ORCHESTRA_SPLIT_DEPTH='{value}' is not a depth"):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun")


def test_a_negative_split_depth_and_a_split_build_in_build_mode_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="split_depth .* must be 0 .* got -1"):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, split_depth=-1)
    with pytest.raises(ConfigurationError, match="needs FV3_DACEMODE=BuildAndRun or Run"):
        DaceConfig(backend="dace:cpu", orchestration="Build", cache_root=tmp_path, split_depth=1)


@pytest.mark.parametrize("value", ["many", "1.5"])
def test_a_number_of_build_processes_that_is_not_a_number_is_refused(monkeypatch, value):
    monkeypatch.setenv("ORCHESTRA_BUILD_PROCESSES", value)
    with pytest.raises(ConfigurationError, match=f"ORCHESTRA_BUILD_PROCESSES='{value}' is not a number of processes"):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun")
    monkeypatch.setenv("ORCHESTRA_BUILD_PROCESSES", " 3 ")
    assert DaceConfig(backend="dace:cpu", orchestration="BuildAndRun").build_processes == 3


@pytest.mark.parametrize("value", [-1, True, 2.0, "2"])
def test_build_processes_must_be_none_or_a_count(tmp_path, monkeypatch, value):
    with pytest.raises(ConfigurationError, match=r"DaceConfig.build_processes \(or ORCHESTRA_BUILD_PROCESSES\) must be"):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, build_processes=value)
    monkeypatch.delenv("ORCHESTRA_BUILD_PROCESSES", raising=False)
    assert DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path).build_processes is None


@pytest.mark.parametrize("variable, value, message", [
    ("ORCHESTRA_VALIDATE_BESIDE", "maybe", "ORCHESTRA_VALIDATE_BESIDE='maybe': give 1"),
    ("ORCHESTRA_COMPILE_UNITS", "many", "ORCHESTRA_COMPILE_UNITS='many' is not a number"),
])
def test_settings_read_at_compile_time_are_refused_when_the_model_is_configured(tmp_path, monkeypatch, variable,
                                                                                 value, message):
    """Not after a parse and optimize that take minutes at FV3's size."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=message):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path)
    for mode in ("Python", "Run"):  # nothing compiled: not read
        DaceConfig(backend="dace:cpu", orchestration=mode, cache_root=tmp_path)
