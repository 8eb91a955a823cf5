"""Split builds (``DaceConfig.split_depth``): an edit rebuilds only the component that holds it.

``Model.__call__`` runs two orchestrated components, a stencil of its own and
some Python between them. With ``split_depth=1`` the model's call runs its
Python body and each component is a program of its own: results equal
``Python`` mode bit for bit, the cache holds the components' programs and no
program of the model, and changing one component's folded weight (an edit of
that component) rebuilds that component alone. ``split_depth=2`` runs the
components' bodies too, stencil by stencil.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

orchestrate_module = importlib.import_module("orchestra.orchestrate")  # the package's `orchestrate` is the function

FloatField = Field[np.float64]
SHAPE = (6, 5, 3)


def axpy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


class Smooth:
    def __init__(self, config: DaceConfig, weight: float) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.weight = weight
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.axpy(x, y, self.weight)
        self.axpy(y, x, self.weight * 0.5)


class Model:
    def __init__(self, config: DaceConfig, first_weight: float) -> None:
        self.first, self.second = Smooth(config, first_weight), Smooth(config, 0.125)
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.first(x, y)
        y *= 0.5  # Python between the components: runs as Python in a split build
        self.second(y, x)
        self.axpy(x, y, 0.75)


def _run(cache: Path, mode: str = "BuildAndRun", split_depth: int = 1, first_weight: float = 0.25) -> list[np.ndarray]:
    config = DaceConfig(backend="dace:cpu", orchestration=mode, cache_root=cache, split_depth=split_depth)
    model = Model(config, first_weight)
    rng = np.random.default_rng(3)
    arrays = [rng.random(SHAPE) for _ in range(2)]
    for _ in range(2):
        model(*arrays)
    return arrays


def _built(caplog) -> list[str]:
    return [r.getMessage().split(": building")[0].split("] ")[-1] for r in caplog.records
            if ": building (key" in r.getMessage()]


def test_a_split_build_is_a_program_per_component_and_an_edit_rebuilds_one(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(orchestrate_module, "_SPLIT_LOGGED", set())  # logged once per program name and process
    expected = _run(tmp_path / "python", mode="Python")
    with caplog.at_level(logging.INFO, logger="orchestra"):
        split = _run(tmp_path / "cache")
    for got, want in zip(split, expected):
        np.testing.assert_array_equal(got, want)
    assert _built(caplog) == ["Smooth.__call__", "Smooth.__call__"]  # two weights: two programs
    assert any("Model.__call__: split build (split_depth 1): runs its Python body at depth 0" in r.getMessage()
               for r in caplog.records)
    programs = sorted(path.name for path in (tmp_path / "cache").iterdir() if not path.name.startswith("."))
    assert programs == ["Smooth.__call__"]  # no program of the model itself
    assert len([p for p in (tmp_path / "cache" / "Smooth.__call__").iterdir() if p.is_dir()]) == 2

    caplog.clear()
    expected = _run(tmp_path / "python", mode="Python", first_weight=0.375)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        edited = _run(tmp_path / "cache", first_weight=0.375)  # the first component changed
    for got, want in zip(edited, expected):
        np.testing.assert_array_equal(got, want)
    assert _built(caplog) == ["Smooth.__call__"]  # the second component's program was found


def test_a_deeper_split_runs_the_components_python_bodies_too(tmp_path, caplog):
    expected = _run(tmp_path / "python", mode="Python")
    with caplog.at_level(logging.INFO, logger="orchestra"):
        deeper = _run(tmp_path / "cache", split_depth=2)
    for got, want in zip(deeper, expected):
        np.testing.assert_array_equal(got, want)
    assert _built(caplog) == []  # nothing orchestrated below depth 2: stencil by stencil
