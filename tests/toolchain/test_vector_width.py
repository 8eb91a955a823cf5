"""``ORCHESTRA_VECTOR_WIDTH``: the vector width CPU builds prefer, in their flags and their key."""

from __future__ import annotations

import pytest

from orchestra.errors import ConfigurationError
from orchestra.toolchain import (
    CPU_ARGS_PATH, DEFAULT_VECTOR_WIDTH, VECTOR_WIDTH_VARIABLE, GpuTarget, dace_settings, host_args, is_x86,
)


def _cpu_args_in_dace() -> str:
    from dace.config import Config

    return Config.get(*CPU_ARGS_PATH)


@pytest.mark.skipif(not is_x86(), reason="-mprefer-vector-width is an x86 flag; elsewhere no flag is added")
@pytest.mark.parametrize("value, flag", [
    ("256", "-mprefer-vector-width=256"),
    ("512", "-mprefer-vector-width=512"),
    (" 128 ", "-mprefer-vector-width=128"),
])
def test_the_width_is_a_flag_of_cpu_builds_and_of_their_key(monkeypatch, value, flag):
    monkeypatch.setenv(VECTOR_WIDTH_VARIABLE, value)
    assert flag in host_args("dace:cpu")  # the key's "cpu_args" (orchestra.key.inputs)
    before = _cpu_args_in_dace()
    with dace_settings():
        assert flag in _cpu_args_in_dace().split()
    assert _cpu_args_in_dace() == before


@pytest.mark.parametrize("value", ["compiler", "", None])
def test_by_default_the_compiler_chooses(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(VECTOR_WIDTH_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VECTOR_WIDTH_VARIABLE, value)
    assert DEFAULT_VECTOR_WIDTH == "compiler"
    assert not any(arg.startswith("-mprefer-vector-width") for arg in host_args("dace:cpu"))
    with dace_settings():
        assert "-mprefer-vector-width" not in _cpu_args_in_dace()


def test_gpu_builds_keep_their_host_flags(monkeypatch):
    monkeypatch.setenv(VECTOR_WIDTH_VARIABLE, "512")
    assert not any(arg.startswith("-mprefer-vector-width") for arg in host_args("dace:gpu"))
    with dace_settings(gpu=GpuTarget.from_config("sm_90")):
        assert "-mprefer-vector-width" not in _cpu_args_in_dace()


def test_another_value_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setenv(VECTOR_WIDTH_VARIABLE, "wide")
    with pytest.raises(ConfigurationError) as error:
        host_args("dace:cpu")
    message = str(error.value)
    assert VECTOR_WIDTH_VARIABLE in message and "'wide'" in message and "256" in message and "compiler" in message
