"""Orchestrated code refuses the stencil arguments Python mode refuses, with one clear message.

Before the check (:mod:`orchestra.stencils.arguments`) a float64 array passed
for a ``Field[np.float32]`` and an int64 array for a float64 field were
computed on orchestrated (Python mode raises ``TypeError``), and an array too
small for origin + domain + offsets failed in DaCe with a memlet error naming
internal maps. Each case here is refused in both modes; the orchestrated
refusal is a :class:`StencilArgumentError` raised while parsing (nothing is
built) that names the stencil and the parameter. Arrays exactly large
enough, 2-D (IJ) and 1-D (K) fields are not refused and compute what Python
mode computes.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.errors import StencilArgumentError

Float = Field[np.float64]
Float32 = Field[np.float32]
FloatIJ = Field[gtscript.IJ, np.float64]
FloatK = Field[gtscript.K, np.float64]


def difference(x: Float, y: Float):
    with computation(PARALLEL), interval(...):
        y = x[1, 0, 0] - x[-1, 0, 0]


def axpy(x: Float32, y: Float32, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


def weighted(x: Float, area: FloatIJ, profile: FloatK, y: Float):
    with computation(PARALLEL), interval(...):
        y = x * area[0, 1] + profile


class Model:
    """Calls one stencil, chosen by name; ``scalar`` is what ``axpy`` gets for ``a``."""

    def __init__(self, config: DaceConfig, which: str, scalar=0.5) -> None:
        self.which, self.scalar = which, scalar
        self.difference = FrozenStencil(difference, backend=config.backend, origin=(1, 0, 0), domain=(6, 7, 4))
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=(8, 7, 4))
        self.weighted = FrozenStencil(weighted, backend=config.backend, origin=(0, 0, 0), domain=(8, 6, 4))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, area, profile):
        if self.which == "difference":
            self.difference(x, y)
        elif self.which == "axpy":
            self.axpy(x, y, self.scalar)
        else:
            self.weighted(x, area, profile, y)


def _storage(shape, dtype=np.float64, seed=0):
    import gt4py.storage as gt_storage

    values = np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)
    return gt_storage.from_array(values, dtype=dtype, backend="dace:cpu")


def _arguments(x_shape=(8, 7, 4), x_dtype=np.float64, y_dtype=np.float64):
    return [_storage(x_shape, x_dtype, 1), _storage((8, 7, 4), y_dtype, 2), _storage((8, 7), seed=3), _storage((4,), seed=4)]


def _line_of(text: str) -> int:
    lines, first = inspect.getsourcelines(Model.__call__)
    return first + next(index for index, line in enumerate(lines) if text in line)


def _config(mode: str, cache) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)


REFUSED = {
    # case: (stencil, arguments, scalar, words the orchestrated message must contain)
    "float64 for float32": ("axpy", dict(x_dtype=np.float64, y_dtype=np.float32), 0.5, ["'axpy'", "'x'", "float32", "float64"]),
    "int64 for float64": ("difference", dict(x_dtype=np.int64), 0.5, ["'difference'", "'x'", "int64"]),
    "too small along I": ("difference", dict(x_shape=(7, 7, 4)), 0.5, ["'x'", "(7, 7, 4)", "at least (8, 7, 4)"]),
    "too small along K": ("difference", dict(x_shape=(8, 7, 3)), 0.5, ["'x'", "at least (8, 7, 4)"]),
    "2-D for 3-D": ("difference", dict(x_shape=(8, 7)), 0.5, ["'x'", "3 dimensions", "has 2"]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_orchestrated_refuses_what_python_mode_refuses(case, tmp_path):
    which, shapes, scalar, words = REFUSED[case]
    with pytest.raises((TypeError, ValueError, IndexError)):
        Model(_config("Python", tmp_path), which, scalar)(*_arguments(**shapes))
    with pytest.raises(StencilArgumentError) as refused:
        Model(_config("BuildAndRun", tmp_path), which, scalar)(*_arguments(**shapes))
    message = str(refused.value)
    call_line = _line_of(f"self.{which}(")  # the stencil call in Model.__call__
    assert message.startswith("parsing ") and f"__call__ failed at {__file__}:{call_line}: stencil " in message
    for word in words:
        assert word in message, message
    assert "dace_inhibitor" not in message  # the generic hint for unreadable code is left out
    assert not list(tmp_path.glob("Model.__call__/*/COMPLETE"))  # nothing was published


@pytest.mark.parametrize("which", ["difference", "weighted"])
def test_exactly_large_enough_and_lower_dimensional_fields_run(which, tmp_path):
    results = []
    for mode in ("Python", "BuildAndRun"):
        arguments = _arguments()
        Model(_config(mode, tmp_path), which)(*arguments)
        results.append(np.asarray(arguments[1]).copy())
    assert np.array_equal(results[0].view(np.uint8), results[1].view(np.uint8))
    assert not np.array_equal(results[0], np.asarray(_arguments()[1]))  # the stencil wrote y


def test_a_stencil_of_another_backend_is_refused_with_the_fix(tmp_path):
    from orchestra import ConfigurationError

    class Mixed:
        def __init__(self, config: DaceConfig) -> None:
            self.difference = FrozenStencil(difference, backend="numpy", origin=(1, 0, 0), domain=(6, 7, 4))
            orchestrate(obj=self, config=config)

        def __call__(self, x, y):
            self.difference(x, y)

    with pytest.raises(ConfigurationError, match=r"'difference' is built for backend 'numpy'.*backend=config\.backend"):
        Mixed(_config("BuildAndRun", tmp_path))(*_arguments()[:2])


class Unbound:
    """Calls ``axpy(x: Field, y: Field, a: float)`` with arguments that do not bind to its parameters."""

    def __init__(self, config: DaceConfig, case: str) -> None:
        self.case = case
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=(8, 7, 4))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self.case == "no scalar":
            self.axpy(x, y)
        elif self.case == "no field":
            self.axpy(x, a=0.5)
        elif self.case == "two missing":
            self.axpy(x)
        elif self.case == "unknown keyword":
            self.axpy(x, y, 0.5, alpha=0.5)


UNBOUND = {
    "no scalar": "missing 1 required positional argument: 'a'",
    "no field": "missing 1 required positional argument: 'y'",
    "two missing": "missing 2 required positional arguments: 'y' and 'a'",
    "unknown keyword": "got an unexpected keyword argument 'alpha'",
}


@pytest.mark.parametrize("case", sorted(UNBOUND))
def test_a_call_python_mode_cannot_bind_is_refused_in_its_words(case, tmp_path):
    # a forgotten scalar ended in "optimizing ... failed: 'a'" (a KeyError in DaCe's optional_arrays pass)
    arrays = lambda: [_storage((8, 7, 4), np.float32, 1), _storage((8, 7, 4), np.float32, 2)]  # noqa: E731
    with pytest.raises(TypeError) as python_mode:
        Unbound(_config("Python", tmp_path), case)(*arrays())
    assert UNBOUND[case] in str(python_mode.value)
    with pytest.raises(StencilArgumentError) as refused:
        Unbound(_config("BuildAndRun", tmp_path), case)(*arrays())
    lines, first = inspect.getsourcelines(Unbound.__call__)
    call_line = first + next(index for index, line in enumerate(lines) if f'"{case}"' in line) + 1
    message = str(refused.value)
    assert message.startswith("parsing ") and message.endswith(
        f"Unbound___call__ failed at {__file__}:{call_line}: stencil 'axpy' (origin (0, 0, 0), domain (8, 7, 4)): "
        f"{UNBOUND[case]}; call it as axpy(x, y, a) (Python mode refuses this call too)"), message
    assert not list(tmp_path.glob("Unbound.__call__/*/COMPLETE"))  # nothing was published
