"""A component called from several places is parsed once per argument description.

One ``Shared`` object is called by two stages and by the model itself with
the same arrays, then with arrays of another shape; another object of the
same class is called too. With :mod:`orchestra.pipeline.parse_reuse` the
first three calls share one parse; the call with other shapes and the other
object are parsed on their own. The program must be the one a build without
reuse makes (the generated C++ compared text for text) and compute what
``Python`` mode computes, bit for bit.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.pipeline import build, parse_reuse

FloatField = Field[np.float64]
SHAPE = (5, 4, 2)
WIDE = (7, 6, 2)  # other strides: another argument description


def axpy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


class Shared:
    def __init__(self, config: DaceConfig, scale: float) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.scale = scale
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.axpy(x, y, self.scale)


class Stage:
    def __init__(self, config: DaceConfig, shared: Shared, weight: float) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.shared, self.weight = shared, weight
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.shared(x, y)
        self.axpy(y, x, self.weight)


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.shared = Shared(config, 0.5)
        self.stage_a = Stage(config, self.shared, 0.25)
        self.stage_b = Stage(config, self.shared, 0.125)
        self.other = Shared(config, 0.75)  # the same code, another object
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, wide_x, wide_y):
        self.stage_a(x, y)
        self.stage_b(x, y)
        self.shared(x, y)
        self.shared(wide_x, wide_y)
        self.other(x, y)


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.random(shape) for shape in (SHAPE, SHAPE, WIDE, WIDE)]


def _run(mode: str, cache_root: Path) -> list[np.ndarray]:
    model = Model(DaceConfig(backend="dace:cpu", orchestration=mode, cache_root=cache_root))
    arrays = _inputs()
    for _ in range(2):
        model(*arrays)
    return arrays


def _generated_code(cache_root: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(cache_root.glob("Model.__call__/*/src/cpu/*.cpp"))}


def test_a_component_called_from_several_places_is_parsed_once(tmp_path, caplog, monkeypatch):
    expected = _run("Python", tmp_path / "python")
    with caplog.at_level(logging.INFO, logger="orchestra"):
        reused = _run("BuildAndRun", tmp_path / "reused")
    for got, want in zip(reused, expected):
        np.testing.assert_array_equal(got, want)
    parsed_lines = [r.getMessage() for r in caplog.records if "parsed in" in r.getMessage()]
    assert len(parsed_lines) == 1, parsed_lines
    # Stage x2, Shared x3 (first call; other shapes; the other object); Shared reused twice
    assert "5 component parse(s), 2 reused (Shared.__call__ x2)" in parsed_lines[0]

    monkeypatch.setattr(build, "repeated_functions", lambda call_tree: set())  # copy nothing: reuse off
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="orchestra"):
        unreused = _run("BuildAndRun", tmp_path / "unreused")
    assert any("7 component parse(s), 0 reused" in r.getMessage() for r in caplog.records)
    for got, want in zip(unreused, expected):
        np.testing.assert_array_equal(got, want)
    with_reuse, without = _generated_code(tmp_path / "reused"), _generated_code(tmp_path / "unreused")
    assert with_reuse and with_reuse == without


@pytest.mark.parametrize(
    "value, described",
    [(np.float64(0.1), True), (0.1, True), (True, True), (None, True), ("x", False), (object(), False)],
)
def test_only_exactly_described_arguments_are_reused(value, described):
    if described:
        assert parse_reuse.describe_argument(value) == parse_reuse.describe_argument(value)
        assert parse_reuse.describe_argument(0.1) != parse_reuse.describe_argument(np.nextafter(0.1, 1.0))
        assert parse_reuse.describe_argument(1) != parse_reuse.describe_argument(1.0)
    else:
        with pytest.raises(parse_reuse._Undescribable):
            parse_reuse.describe_argument(value)
