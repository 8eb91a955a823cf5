"""A parameter annotated ``float`` given an integer runs the program of the float Python mode computes with."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.calls.arguments import CallBinder, settle_float
from orchestra.errors import ConfigurationError
from tests.idioms import stencils as st


def step(q, dt: float, n: int, label="x"):
    return q, dt, n, label


def test_integers_become_floats_only_where_float_is_declared():
    binder = CallBinder(step, is_method=False)
    args, kwargs = binder.complete((1, 60, 3), {})
    assert args == (1, 60.0, 3, "x") and type(args[1]) is float and type(args[2]) is int
    args, kwargs = binder.complete((1,), {"dt": np.int32(2), "n": 4})
    assert type(args[1] if not kwargs else kwargs["dt"]) is float
    assert binder.complete((1, True, 3), {})[0][1] is True  # a bool is not converted
    assert binder.complete((1, 0.5, 3), {})[0][1] == 0.5


def test_an_integer_no_float_holds_is_refused():
    with pytest.raises(ConfigurationError, match=r"M.__call__: argument dt is declared float .* 2\*\*53"):
        settle_float(2**60 + 1, "dt", "M.__call__")
    assert settle_float(2**53, "dt", "M") == float(2**53)


class _Scaled:
    def __init__(self, config):
        self.scale = FrozenStencil(st.scale, backend=config.backend, origin=st.ORIGIN, domain=st.DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, q, factor: float):
        self.scale(q, factor * 1.0)  # Python mode: gt4py refuses an int for a float stencil parameter


def test_an_int_and_its_float_are_one_program_and_compute_what_python_mode_does(tmp_path):
    def run(mode: str, factors: tuple) -> tuple:
        config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=tmp_path, exit_after_build=False)
        model, q = _Scaled(config), np.linspace(0.0, 1.0, int(np.prod(st.SHAPE))).reshape(st.SHAPE)
        for factor in factors:
            model(q, factor)
        return model, q

    _, expected = run("Python", (3, 3.0))
    model, got = run("BuildAndRun", (3, 3.0))
    assert np.array_equal(expected, got)
    program = model.__orchestra_programs__["__call__"]
    assert len(program._callers) == 1  # 3 and 3.0: one program, one build
    _, again = run("Run", (3,))  # a Run job calling with the int finds the float build
    assert np.array_equal(run("Python", (3,))[1], again)
