"""A component called from several places is parsed once per argument description.

One ``Shared`` object is called by two stages and by the model itself with
the same arrays, and with arrays of another shape; another object of the
same class is called too. With :mod:`orchestra.pipeline.parse_reuse` the
three calls with the same arrays share one parse (the last, the function's
last site, takes the pristine parse itself); the call with other shapes and
the other object are parsed on their own. The program must be the one a build without
reuse makes (the generated C++ compared text for text) and compute what
``Python`` mode computes, bit for bit.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.key.argument_descriptions import Undescribable
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
        self.shared(wide_x, wide_y)
        self.other(x, y)
        self.shared(x, y)  # the last of Shared.__call__'s 5 sites: gets the pristine parse, no copy


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
    handed_over, never_used, copies = [], [], []
    exit_table, copied = parse_reuse.ParseReuse.__exit__, parse_reuse._copied

    def record_exit(table, *exc):
        handed_over.append(table.handed_over)
        never_used.append(len(table._table))
        return exit_table(table, *exc)

    def counted_copy(sdfg):
        copies.append(type(sdfg).__name__)
        return copied(sdfg)

    monkeypatch.setattr(parse_reuse.ParseReuse, "__exit__", record_exit)
    monkeypatch.setattr(parse_reuse, "_copied", counted_copy)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        reused = _run("BuildAndRun", tmp_path / "reused")
    assert handed_over == [1]  # the last site of self.shared took the pristine parse
    # sites are counted per object (self.shared: 4; self.other, of the same class: 1, so never copied);
    # only the wide-array parse was kept for nothing: nothing before the parse can tell it apart
    assert never_used == [1]
    assert copies == ["SDFG"] * 3  # self.shared's pristine parse, the copy for its second site, the wide one
    for got, want in zip(reused, expected):
        np.testing.assert_array_equal(got, want)
    parsed_lines = [r.getMessage() for r in caplog.records if "parsed in" in r.getMessage()]
    assert len(parsed_lines) == 1, parsed_lines
    # Stage x2, Shared x3 (first call; other shapes; the other object); Shared reused twice
    assert "5 component parse(s), 2 reused (Shared.__call__ x2)" in parsed_lines[0]

    monkeypatch.setattr(parse_reuse, "_copied", copied)
    monkeypatch.setattr(build, "repeated_components", lambda closure: {})  # copy nothing: reuse off
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
        with pytest.raises(Undescribable):
            parse_reuse.describe_argument(value)


class _Owner:
    """What ParseReuse reads of an orchestrated program: a label, a function, a DaCe program."""

    def __init__(self) -> None:
        self.label, self.function = "Shared.__call__", Shared.__call__
        self._program = type("Program", (), {})()

    def dace_program(self):
        return self._program


def test_the_last_foreseen_site_gets_the_pristine_parse_and_a_later_one_parses_again(monkeypatch):
    owner, parses, copies = _Owner(), [], []

    def parse():
        parses.append([f"sdfg {len(parses)}"])  # a mutable stand-in for an SDFG
        return parses[-1]

    def counted_deepcopy(value):
        copies.append(list(value))
        return list(value)

    monkeypatch.setattr(parse_reuse, "_copied", counted_deepcopy)
    sites = {id(owner): 3}
    with parse_reuse.ParseReuse(sites) as reuse:
        got = [reuse.sdfg_of(owner, parse, (), {}) for _ in range(3)]
        assert len(parses) == 1 and got[0] is parses[0]
        assert got[1] == got[0] and got[1] is not got[0]
        assert got[2] == got[0] and got[2] is not got[0] and got[2] is not got[1]
        assert len(copies) == 2  # the pristine copy, and the second site's; the third gets the pristine one
        assert reuse.handed_over == 1
        got[2].append("changed by its caller")
        fourth = reuse.sdfg_of(owner, parse, (), {})  # a site the call tree did not foresee
        assert len(parses) == 2 and fourth is parses[1] and fourth == ["sdfg 1"]
    assert reuse.summary() == "2 component parse(s), 2 reused (Shared.__call__ x2)"


class _Closure:
    """What repeated_components reads of a resolved closure: callees by call, and one child closure per site."""

    def __init__(self, *sites: tuple[str, Any, "_Closure"]) -> None:
        self.closure_sdfgs = {f"c{index}": (call, obj) for index, (call, obj, _child) in enumerate(sites)}
        self.nested_closures = [(call, child) for call, _obj, child in sites]


def test_sites_are_counted_per_object_and_once_below_a_reused_parse():
    inner, outer, twin_a, twin_b = _Owner(), _Owner(), _Owner(), _Owner()

    def outer_body():  # outer calls inner twice
        return _Closure(("inner(x)", inner, _Closure()), ("inner(y)", inner, _Closure()))

    top = _Closure(
        ("outer(a)", outer, outer_body()),
        ("outer(b)", outer, outer_body()),  # reuses outer's parse: nothing below it is parsed again
        ("twin_a(a)", twin_a, _Closure()),  # two objects of one class, one site each: nothing to copy
        ("twin_b(a)", twin_b, _Closure()),
    )
    assert parse_reuse.repeated_components(top) == {id(outer): 2, id(inner): 2}
    assert parse_reuse.repeated_components(None) is None
