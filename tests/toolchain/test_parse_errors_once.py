"""orchestra's errors raised while DaCe parses are said once (:mod:`orchestra.toolchain.parse_errors_once`).

A float32 array given to a stencil two components deep printed DaCe's
"Exception ... raised while parsing DaCe program" at each of two levels, then
raised the StencilArgumentError: the same message three times.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.errors import ConfigurationError, StencilArgumentError
from orchestra.toolchain.parse_errors_once import errors_said_once, frontend_print


def scale(q: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        q = 2.0 * q


class Physics:
    def __init__(self, config: DaceConfig) -> None:
        self.scale = FrozenStencil(scale, backend=config.backend, origin=(0, 0, 0), domain=(4, 3, 2))
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.scale(q)


class Step:
    def __init__(self, config: DaceConfig) -> None:
        self.physics = Physics(config)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.physics(q)


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.step = Step(config)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.step(q)


def test_an_error_two_components_deep_is_said_once_at_its_statement(tmp_path, capfd):
    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path)
    with pytest.raises(StencilArgumentError) as refused:
        Model(config)(np.ones((4, 3, 2), dtype=np.float32))
    said = "field 'q' is declared IxJxK field of float64 but the array passed has dtype float32"
    assert said in str(refused.value)
    lines, first = inspect.getsourcelines(Physics.__call__)
    assert f"failed at {__file__}:{first + 1}: stencil 'scale'" in str(refused.value)  # the stencil call
    out, err = capfd.readouterr()
    assert (out + err).count(said) == 0, out + err
    assert "raised while parsing DaCe program" not in out + err


def parse_dace_program(error: Exception) -> None:
    """Prints as DaCe's function of this name does, while handling ``error``."""
    try:
        raise error
    except Exception:
        frontend_print("Exception raised while parsing DaCe program")


def test_only_prints_about_orchestra_errors_in_the_parser_are_left_out(capsys):
    parse_dace_program(ConfigurationError("ours"))
    parse_dace_program(ValueError("DaCe's"))
    try:
        raise ConfigurationError("ours")
    except ConfigurationError:
        frontend_print("printed elsewhere")
    assert capsys.readouterr().out.splitlines() == ["Exception raised while parsing DaCe program", "printed elsewhere"]


def test_the_frontend_print_is_there_only_inside_the_block():
    from dace.frontend.python import newast

    with errors_said_once():
        with errors_said_once():
            assert newast.print is frontend_print
        assert newast.print is frontend_print
    assert "print" not in vars(newast)
