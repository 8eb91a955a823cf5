"""Split builds (``DaceConfig.split_depth``): an edit rebuilds only the component that holds it.

``Model.__call__`` runs two orchestrated components, a stencil of its own and
some Python between them. With ``split_depth=1`` the model's call runs its
Python body and each component is a program of its own: results equal
``Python`` mode bit for bit, the cache holds the components' programs and no
program of the model, and changing one component's folded weight (an edit of
that component) rebuilds that component alone. A stencil called from a body
that runs as Python is a one-stencil program of its own
(:mod:`orchestra.stencils.python_body`). ``split_depth=2`` runs the
components' bodies too, each stencil call through that program.
``split_at=("Target",)`` splits by class name: only the calls on the way to a
``Target`` run as Python; ``split_at=("edited",)`` lets the cache name the classes.
"""

from __future__ import annotations

import importlib
import logging
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

split_builds_module = importlib.import_module("orchestra.pipeline.split_builds")

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


def _run(cache: Path, mode: str = "BuildAndRun", split_depth: int = 1, first_weight: float = 0.25,
         model_class: Optional[type] = None, **settings) -> list[np.ndarray]:
    """Two calls of ``model_class`` (``Model``) made with ``first_weight``, on the same two random arrays."""
    config = DaceConfig(backend="dace:cpu", orchestration=mode, cache_root=cache, split_depth=split_depth, **settings)
    model = (model_class or Model)(config, first_weight)
    rng = np.random.default_rng(3)
    arrays = [rng.random(SHAPE) for _ in range(2)]
    for _ in range(2):
        model(*arrays)
    return arrays


def _built(caplog) -> list[str]:
    return [r.getMessage().split(": building")[0].split("] ")[-1] for r in caplog.records
            if ": building (key" in r.getMessage()]


def test_a_split_build_is_a_program_per_component_and_an_edit_rebuilds_one(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(split_builds_module, "_SPLIT_LOGGED", set())  # logged once per program name and process
    expected = _run(tmp_path / "python", mode="Python")
    with caplog.at_level(logging.INFO, logger="orchestra"):
        split = _run(tmp_path / "cache")
    for got, want in zip(split, expected):
        np.testing.assert_array_equal(got, want)
    # two weights: two programs; the model's own stencil, called from its Python body: a program of its own
    assert _built(caplog) == ["Smooth.__call__", "Smooth.__call__", "StencilCall_axpy.__call__"]
    assert any("Model.__call__: split build (split_depth 1): runs its Python body at depth 0" in r.getMessage()
               for r in caplog.records)
    programs = sorted(path.name for path in (tmp_path / "cache").iterdir() if not path.name.startswith("."))
    assert programs == ["Smooth.__call__", "StencilCall_axpy.__call__"]  # no program of the model itself
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
    # nothing orchestrated below depth 2: every stencil call runs the one-stencil program (weights are arguments)
    assert _built(caplog) == ["StencilCall_axpy.__call__"]


# --------------------------------------------------------------- split_at: by class name
class Target(Smooth):
    """A Smooth under another name: the component being edited."""


class Left:
    def __init__(self, config: DaceConfig, weight: float) -> None:
        self.parts = [Target(config, weight)]  # held in a list: found all the same
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.parts[0](x, y)
        self.axpy(x, y, 0.5)


class Right:
    def __init__(self, config: DaceConfig) -> None:
        self.smooth = Smooth(config, 0.125)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.smooth(y, x)
        self.smooth(x, y)


class Tree:
    def __init__(self, config: DaceConfig, weight: float) -> None:
        self.left, self.right = Left(config, weight), Right(config)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.left(x, y)
        self.right(x, y)


def _run_tree(cache: Path, mode: str = "BuildAndRun", weight: float = 0.25) -> list[np.ndarray]:
    return _run(cache, mode, split_depth=0, first_weight=weight, model_class=Tree, split_at=("Target",))


def test_split_at_builds_the_named_component_alone_and_its_siblings_whole(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(split_builds_module, "_SPLIT_LOGGED", set())
    expected = _run_tree(tmp_path / "python", mode="Python")
    with caplog.at_level(logging.INFO, logger="orchestra"):
        split = _run_tree(tmp_path / "cache")
    for got, want in zip(split, expected):
        np.testing.assert_array_equal(got, want)
    # Tree and Left hold a Target: Python bodies; Target is a program; Right is one program with its Smooth
    assert sorted(_built(caplog)) == ["Right.__call__", "StencilCall_axpy.__call__", "Target.__call__"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("Tree.__call__: split build (split_at Target): runs its Python body, as it holds left.parts[0]"
               in message for message in messages), messages
    assert any("Left.__call__: split build (split_at Target): runs its Python body, as it holds parts[0]"
               in message for message in messages)

    caplog.clear()
    expected = _run_tree(tmp_path / "python", mode="Python", weight=0.375)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        edited = _run_tree(tmp_path / "cache", weight=0.375)  # an edit of the named component
    for got, want in zip(edited, expected):
        np.testing.assert_array_equal(got, want)
    assert _built(caplog) == ["Target.__call__"]  # Right's program was found


class OwnerTree:
    """A Tree whose right component holds the model it belongs to (a parent reference, as some models keep)."""

    def __init__(self, config: DaceConfig, weight: float) -> None:
        self.left, self.right = Left(config, weight), Right(config)
        self.right.owner = self  # through it, Right reaches Left's Target: not a component Right calls
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.left(x, y)
        self.right(x, y)


def test_split_at_does_not_walk_back_up_through_a_parent_reference(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(split_builds_module, "_SPLIT_LOGGED", set())
    expected = _run(tmp_path / "python", mode="Python", split_depth=0, model_class=OwnerTree)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        got = _run(tmp_path / "cache", split_depth=0, model_class=OwnerTree, split_at=("Target",))
    for array, want in zip(got, expected):
        np.testing.assert_array_equal(array, want)
    # Right stays one program: the walk from it does not enter the model whose body is running
    assert sorted(_built(caplog)) == ["Right.__call__", "StencilCall_axpy.__call__", "Target.__call__"]
    assert not any(r.getMessage().startswith("Right.__call__: split build") for r in caplog.records)


def test_split_at_names_classes_and_is_refused_in_build_mode(tmp_path, monkeypatch):
    from orchestra.errors import ConfigurationError

    monkeypatch.setenv("ORCHESTRA_SPLIT_AT", " Hyperdiffusion, FluxComputation ,")
    assert DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path).split_at == (
        "Hyperdiffusion", "FluxComputation",
    )
    assert DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path,
                      split_at="Target").split_at == ("Target",)
    with pytest.raises(ConfigurationError, match="must name classes of orchestrated components"):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, split_at=("Tree.__call__",))
    with pytest.raises(ConfigurationError, match="needs FV3_DACEMODE=BuildAndRun or Run"):
        DaceConfig(backend="dace:cpu", orchestration="Build", cache_root=tmp_path)


# --------------------------------------------------------------- split_at edited: the classes the edit is in
def test_split_at_edited_rebuilds_the_edited_component_and_nothing_when_the_whole_build_exists(
    tmp_path, caplog, monkeypatch
):
    """A whole build first; after an edit of the Target's weight only the components running its code split off."""

    def run(weight: float) -> tuple[list[np.ndarray], list[str], list[str]]:
        monkeypatch.setattr(split_builds_module, "_SPLIT_LOGGED", set())
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="orchestra"):
            got = _run(tmp_path / "cache", split_depth=0, first_weight=weight, model_class=Tree, split_at=("edited",))
        expected = _run(tmp_path / "python", mode="Python", split_depth=0, first_weight=weight, model_class=Tree)
        for array, want in zip(got, expected):
            np.testing.assert_array_equal(array, want)
        return got, sorted(_built(caplog)), [r.getMessage() for r in caplog.records]

    _, built, messages = run(0.25)  # nothing to compare with: one program
    assert built == ["Tree.__call__"]
    assert any("Tree.__call__: split_at edited: one program, as there is no earlier build" in m for m in messages)
    assert re.fullmatch(r"built 1 of 1 program \(Tree.__call__\), found 0 in the cache: parse [\d.]+ s, "
                        r"optimize [\d.]+ s, compile [\d.]+ s; loaded in [\d.]+ s", _first_call(messages))

    _, built, messages = run(0.375)  # the edit is in Target, which runs Smooth.__call__ as Right's Smooth does
    assert built == ["Smooth.__call__", "StencilCall_axpy.__call__", "Target.__call__"]  # Left calls axpy itself
    assert any("Tree.__call__: split build (split_at edited) at Smooth,Target: no build of its key, and the "
               "earlier build" in m and "differs only inside them" in m for m in messages), messages
    assert any("Left.__call__: split build (split_at Smooth,Target): runs its Python body, as it holds parts[0]"
               in m for m in messages), messages
    # one line for the whole first call, naming what was built, in the order of the calls
    assert re.fullmatch(r"built 3 of 3 programs \(Target.__call__, StencilCall_axpy.__call__, Smooth.__call__\), "
                        r"found 0 in the cache: parse [\d.]+ s, optimize [\d.]+ s, compile [\d.]+ s; "
                        r"loaded in [\d.]+ s", _first_call(messages)), _first_call(messages)

    _, built, messages = run(0.5)  # another edit of the same component: Right's Smooth is found
    assert built == ["Target.__call__"]
    assert not any("ORCHESTRA_SPLIT_AT" in m for m in messages)  # the hint is for whole builds only
    assert re.fullmatch(r"built 1 of 3 programs \(Target.__call__\), found 2 in the cache: parse [\d.]+ s, "
                        r"optimize [\d.]+ s, compile [\d.]+ s; loaded in [\d.]+ s", _first_call(messages))

    _, built, messages = run(0.25)  # the edits undone: the whole program is found again
    assert built == []
    assert any("Tree.__call__: split_at edited: one program, as its build was found" in m for m in messages)
    assert any("Tree.__call__: loaded from cache" in m for m in messages)
    assert re.fullmatch(r"built 0 of 1 program, found 1 in the cache; loaded in [\d.]+ s", _first_call(messages))


def test_a_whole_rebuild_for_an_edit_inside_a_component_hints_at_split_at_edited(tmp_path, caplog):
    def messages_of(weight: float, **settings) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="orchestra"):
            _run(tmp_path / "cache", split_depth=0, first_weight=weight, model_class=Tree, **settings)
        return [r.getMessage() for r in caplog.records]

    assert not any("ORCHESTRA_SPLIT_AT" in m for m in messages_of(0.25))  # a first build: nothing to compare
    (hint,) = [m for m in messages_of(0.375) if "ORCHESTRA_SPLIT_AT" in m]  # the edit is inside Target
    assert hint.startswith("Tree.__call__: the whole program was rebuilt for a change inside Smooth, Target "
                           "(against the earlier build "), hint
    assert "with ORCHESTRA_SPLIT_AT=edited (DaceConfig(split_at=('edited',))) such an edit rebuilds Smooth, " \
           "Target alone" in hint
    assert not any("ORCHESTRA_SPLIT_AT" in m for m in messages_of(0.25))  # found: nothing rebuilt
    # a change outside every component (the stencils' domain, in the whole program's arguments): no hint
    global SHAPE
    shape, SHAPE = SHAPE, (7, 5, 3)
    try:
        assert not any("ORCHESTRA_SPLIT_AT" in m for m in messages_of(0.25))
    finally:
        SHAPE = shape


def _first_call(messages: list[str]) -> str:
    """The one first-call summary of the model's call (orchestra.observe.first_call_report), after its duration."""
    lines = [m for m in messages if m.startswith("Tree.__call__: first call ")]
    assert len(lines) == 1, messages
    return lines[0].split(" s: ", 1)[1]


def _inputs(**changes) -> dict:
    """Key inputs of a program whose call tree holds a component A (with a helper) and a component B."""
    inputs = {
        "arguments": {"x": "f8[6,5,3]"},
        "source": {"m.Root.__call__": "r0", "m.A.__call__": "a0", "m.B.__call__": "b0", "m.helper": "h0",
                   "m.only_through_globals": "g0", "m.g": "s0"},
        "call_tree": {
            "A.__call__": {"function": "m.A.__call__", "scalars": {"self.w": 1.0}, "callees": {}},
            "A.__call__/helper": {"function": "m.helper", "scalars": {}, "callees": {"S(f)": {"gt_id": "1"}}},
            "B.__call__": {"function": "m.B.__call__", "scalars": {},
                           "callees": {"S(g)": {"stencil": "m.g", "gt_id": "2"}}},
            "plain": {"function": "m.plain", "scalars": {"k": 1}, "callees": {}},
        },
    }
    for path, value in changes.items():
        *parents, last = path.split(":")
        target = inputs
        for part in parents:
            target = target[part]
        target[last] = value
    return inputs


@pytest.mark.parametrize("changes, expected", [
    ({"call_tree:A.__call__:scalars": {"self.w": 2.0}}, {"A"}),  # the component's own node
    ({"call_tree:A.__call__/helper:callees": {"S(f)": {"gt_id": "9"}}}, {"A"}),  # a stencil below a helper
    ({"source:m.helper": "h1"}, {"A"}),  # a function the component's node tree runs
    ({"source:m.B.__call__": "b1", "call_tree:A.__call__:scalars": {}}, {"A", "B"}),  # two components
    ({"call_tree:A.__call__/new": {"function": "m.new", "scalars": {}, "callees": {}}}, {"A"}),  # a new call
    ({"call_tree:plain:scalars": {"k": 2}}, None),  # a node in no component
    ({"source:m.Root.__call__": "r1"}, None),  # the program's own body
    ({"source:m.only_through_globals": "g1"}, None),  # reached through globals, not a node
    ({"source:m.g": "s1"}, {"B"}),  # the definition of a stencil B calls (keyed as a global: self.g names it)
    ({"arguments": {"x": "f4[6,5,3]"}}, None),  # anything outside the call tree
])
def test_edited_classes_names_the_components_holding_every_difference(changes, expected):
    from orchestra.pipeline.split_builds import edited_classes

    classes = {"m.A.__call__": {"A"}, "m.B.__call__": {"B"}}
    found = edited_classes(_inputs(**changes), _inputs(), classes)
    assert found == (None if expected is None else frozenset(expected))


# --------------------------------------------------------------- stencils called from a Python body
class AliasingModel:
    def __init__(self, config: DaceConfig, first_weight: float) -> None:
        self.smooth = Smooth(config, first_weight)
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.axpy(y, y, 0.5)  # one array for both fields (y = y + 0.5 * y), as gt4py allows
        self.smooth(x, y)
        self.axpy(x, y, 0.25)  # the same stencil with distinct arrays: another program


def test_a_stencil_called_from_a_python_body_with_one_array_for_two_fields_computes_what_gt4py_does(
    tmp_path, caplog
):
    expected = _run(tmp_path / "python", mode="Python", model_class=AliasingModel)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        got = _run(tmp_path / "cache", model_class=AliasingModel)  # an orchestrated program refuses aliases
    for array, want in zip(got, expected):
        np.testing.assert_array_equal(array, want)
    assert sorted(_built(caplog)) == ["Smooth.__call__", "StencilCall_axpy.__call__", "StencilCall_axpy.__call__"]


class KeywordModel:
    def __init__(self, config: DaceConfig, first_weight: float) -> None:
        self.smooth = Smooth(config, first_weight)
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.shifted = FrozenStencil(axpy, backend=config.backend, origin=(1, 1, 0), domain=(4, 3, 3))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.axpy(a=0.75, y=y, x=x)  # keywords, in another order than the definition's
        self.smooth(x, y)
        self.shifted(y, x, 0.5)  # the same definition at another origin and domain: another program


def test_a_stencil_called_from_a_python_body_is_a_program_of_its_own_and_outside_one_a_gt4py_stencil(
    tmp_path, caplog
):
    from orchestra.stencils.python_body import body_program

    expected = _run(tmp_path / "python", mode="Python", model_class=KeywordModel)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        got = _run(tmp_path / "cache", model_class=KeywordModel)
    for array, want in zip(got, expected):
        np.testing.assert_array_equal(array, want)
    assert sorted(_built(caplog)) == ["Smooth.__call__", "StencilCall_axpy.__call__", "StencilCall_axpy.__call__"]

    config = DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path / "cache")
    stencil = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
    assert body_program(stencil) is None  # no split body running: gt4py's stencil, as always
    x, y = np.ones(SHAPE), np.zeros(SHAPE)
    stencil(x, y, 2.0)
    np.testing.assert_array_equal(y, 2.0)


def test_the_edited_split_compares_with_the_earlier_build_that_differs_inside_the_fewest_components():
    """An older build closer by its number of differences, but different outside the components, is passed over."""
    from types import SimpleNamespace

    from orchestra.distributed.coordinator import BuildCoordinator
    from orchestra.pipeline.split_builds import agreed_edited_split, edit_hint

    def build(key: str, inputs: dict) -> SimpleNamespace:
        return SimpleNamespace(key=key, manifest=SimpleNamespace(inputs=inputs))

    older_orchestra = {**_inputs(), "versions": {"orchestra": "old"}}
    current = {**_inputs(**{"call_tree:A.__call__:scalars": {"self.w": 2.0}}), "versions": {"orchestra": "new"}}
    one_edit_away = {**_inputs(), "versions": {"orchestra": "new"}}
    two_edits_away = {**_inputs(**{"source:m.B.__call__": "b1"}), "versions": {"orchestra": "new"}}
    earlier = [build("older", older_orchestra), build("two", two_edits_away), build("one", one_edit_away)]

    class Store:
        def lookup(self, key, label):
            return SimpleNamespace(entry=None)

        def closest(self, label, inputs, other_than=None):
            return [(entry, []) for entry in earlier]  # in this order: the older build first

    class Root:  # holds orchestrated A and B objects, as a model holds its components
        pass

    root, keyed = Root(), SimpleNamespace(key="k", label="Root.__call__", inputs=current)
    for name, function in (("a", "A"), ("b", "B")):
        component = type(function, (), {})()
        program = SimpleNamespace(function=SimpleNamespace(__module__="m", __qualname__=f"{function}.__call__"))
        component.__dict__["__orchestra_programs__"] = {"__call__": program}
        setattr(root, name, component)
    names, reason = agreed_edited_split(keyed, Store(), BuildCoordinator(None), root)
    assert names == ("A",) and reason == "the earlier build one differs only inside them"
    # a whole rebuild's hint names the same component and build, not the closest one
    assert edit_hint(keyed, Store(), root).startswith(
        "the whole program was rebuilt for a change inside A (against the earlier build one); ")

    earlier[:] = [build("older", older_orchestra)]  # nothing splittable left: one program
    names, reason = agreed_edited_split(keyed, Store(), BuildCoordinator(None), root)
    assert names == () and "differs from every earlier build outside its components (the closest: older)" in reason
    assert edit_hint(keyed, Store(), root) is None


# ------------------------------------------- split parts as permissive as a whole build
def shift_add(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


class Relax:
    """Run on whole arrays and on views of them in one step, and once with one array for both arguments."""

    def __init__(self, config: DaceConfig, weight: float) -> None:
        self.add = FrozenStencil(shift_add, backend=config.backend, origin=(0, 0, 0), domain=(2, 2, SHAPE[2]))
        self.weight = weight
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.add(x, y, self.weight)


class UsesRelaxThreeWays:
    def __init__(self, config: DaceConfig, weight: float) -> None:
        self.relax = Relax(config, weight)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.relax(x, y)  # whole arrays
        self.relax(x[1:, 1:, :], y[:-1, :-1, :])  # views: another layout of the same component
        self.relax(y, y)  # one array for both arguments


@pytest.mark.parametrize("settings", [{"split_depth": 1}, {"split_depth": 0, "split_at": ("Relax",)}],
                         ids=["split_depth", "split_at"])
def test_a_split_part_takes_other_layouts_and_one_array_twice_as_a_whole_build_does(settings, tmp_path):
    expected = _run(tmp_path, "Python", model_class=UsesRelaxThreeWays, **settings)
    whole = _run(tmp_path / "whole", "BuildAndRun", split_depth=0, model_class=UsesRelaxThreeWays)
    split = _run(tmp_path / "split", "BuildAndRun", model_class=UsesRelaxThreeWays, **settings)
    for want, got_whole, got_split in zip(expected, whole, split):
        assert np.array_equal(want, got_whole) and np.array_equal(want, got_split)


def test_a_run_under_a_split_setting_advises_what_that_setting_allows(tmp_path):
    from orchestra import MissingBuildError

    with pytest.raises(MissingBuildError, match=r"same split setting and FV3_DACEMODE=BuildAndRun"):
        _run(tmp_path, "Run", model_class=UsesRelaxThreeWays)


def test_a_run_missing_a_split_part_leaves_the_callers_arrays_as_they_were(tmp_path):
    """Build the model split, then give the second component a new weight: Run misses it after the first ran."""
    from orchestra import MissingBuildError

    _run(tmp_path, "BuildAndRun", split_depth=1)
    config = DaceConfig(backend="dace:cpu", orchestration="Run", cache_root=tmp_path, split_depth=1)
    model = Model(config, 0.25)
    model.second.weight = 0.375  # the second part has no build now; the first part and the model's stencil do
    rng = np.random.default_rng(3)
    arrays = [rng.random(SHAPE) for _ in range(2)]
    before = [array.copy() for array in arrays]
    with pytest.raises(MissingBuildError, match=r"Nothing of this call was kept"):
        model(*arrays)
    for was, now in zip(before, arrays):
        assert np.array_equal(was, now)
