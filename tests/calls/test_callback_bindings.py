"""Every callback call site runs with the objects Python mode passes there (issue 54).

One program carries the matrix: the same callback expression
(``self.halo.fill``, one ``Halo`` shared by every level) at depths 0-3 of
nested orchestrated components, before and after each nested call, with
arguments fixed at build time (2-D, 3-D, a view, a dict-held array, a list
element in an unrolled loop) and given at run time, in a loop with a run-time
count and in a run-time branch. Each fill counts its calls into the array it
is given, so a fill run on another site's array, twice, or never shows as a
difference. Orchestrated (whole and split builds, ``BuildAndRun`` then
``Run`` from the cache) every array equals ``Python`` mode's bit for bit,
also after the model binds a new array to an attribute a callback reads.
The binding audit itself is checked by taking a site out of its record
and by offering the program a callable that calls another array.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from orchestra import BuildError, DaceConfig, DaCeOrchestration, dace_inhibitor, orchestrate
from orchestra.pipeline.callback_bindings import Binding, binding_of, bind_callbacks
from orchestra.pipeline.stages import parse
from orchestra.toolchain import dace_settings

BACKEND = "dace:cpu"


class Halo:
    """A halo fill that counts: a call on the wrong array, a call too many or too few changes the numbers."""

    def __init__(self) -> None:
        self.calls = 0

    @dace_inhibitor
    def fill(self, q):
        self.calls += 1
        corner = (0,) * q.ndim
        q[corner] = q[corner] + self.calls
        q[(-1,) * q.ndim] = 2.0 * q[corner]


class Level:
    """A component at ``depth``; below it another Level, down to depth 0."""

    def __init__(self, config: DaceConfig, halo: Halo, depth: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.halo, self.depth = halo, depth
        self.flat = rng.uniform(size=(5, 4))
        self.cube = rng.uniform(size=(5, 4, 3))
        self.big = rng.uniform(size=(7, 6, 3))
        self.view = self.big[1:-1, 1:-1, :]
        self.fields = {"eta": rng.uniform(size=(5, 4)), "temp": rng.uniform(size=(5, 4, 3))}
        self.looped = rng.uniform(size=(5, 4))
        self.branch = rng.uniform(size=(5, 4, 3))
        self.pair = [rng.uniform(size=(5, 4)), rng.uniform(size=(5, 4))]
        self.child = Level(config, halo, depth - 1, seed + 1) if depth > 0 else None
        orchestrate(obj=self, config=config)

    def __call__(self, q, n: int, flag: bool):
        self.halo.fill(self.flat)
        self.halo.fill(self.fields["eta"])
        if self.child is not None:
            self.child(q, n, flag)
        self.halo.fill(self.cube)
        self.halo.fill(self.view)
        self.halo.fill(q)
        self.halo.fill(self.fields["temp"])
        for _ in range(n):
            self.halo.fill(self.looped)
        if flag:
            self.halo.fill(self.branch)
        for field in self.pair:
            self.halo.fill(field)


def arrays_of(level: Level) -> dict[str, np.ndarray]:
    """Every array of every level, by access path."""
    found, path = {}, "model"
    while level is not None:
        for name in ("flat", "cube", "big", "looped", "branch"):
            found[f"{path}.{name}"] = np.array(getattr(level, name))
        for key, value in level.fields.items():
            found[f"{path}.fields[{key!r}]"] = np.array(value)
        for index, value in enumerate(level.pair):
            found[f"{path}.pair[{index}]"] = np.array(value)
        level, path = level.child, f"{path}.child"
    return found


def run(mode: DaCeOrchestration, cache: Path, split_depth: int = 0) -> dict[str, np.ndarray]:
    config = DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=cache, split_depth=split_depth)
    halo = Halo()
    model = Level(config, halo, depth=3, seed=7)
    q = np.random.default_rng(3).uniform(size=(5, 4, 3))
    model(q, 2, True)
    model(q, 0, False)
    model.child.child.cube = np.full((5, 4, 3), 0.25)  # a new array bound where a callback reads it
    model.fields["eta"] = np.full((5, 4), 0.5)
    model(q, 3, True)
    return {**arrays_of(model), "q": q, "calls": np.array(halo.calls)}


@pytest.fixture(scope="module")
def python_mode() -> dict[str, np.ndarray]:
    return run(DaCeOrchestration.Python, Path("unused"))


def assert_bitwise(expected: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> None:
    assert expected.keys() == got.keys()
    different = [path for path in expected if not np.array_equal(expected[path], got[path])]
    assert not different, f"arrays that differ from Python mode: {different}"


def test_every_site_whole_program_then_run_mode_from_the_cache(python_mode, tmp_path):
    assert_bitwise(python_mode, run(DaCeOrchestration.BuildAndRun, tmp_path))
    assert_bitwise(python_mode, run(DaCeOrchestration.Run, tmp_path))  # loaded: bound by the resolver's names


@pytest.mark.parametrize("split_depth", [1, 2])
def test_every_site_in_split_builds(python_mode, tmp_path, split_depth):
    assert_bitwise(python_mode, run(DaCeOrchestration.BuildAndRun, tmp_path, split_depth))


# ---------------------------------------------------------------- the audit, by identity


def test_a_binding_is_the_function_its_object_and_the_captured_objects():
    halo, other = Halo(), Halo()
    a, b = np.zeros(3), np.zeros(3)
    same = Binding(Halo.fill, halo, (), (a,))
    assert same.same_as(Binding(Halo.fill, halo, (), (a,)))
    assert not same.same_as(Binding(Halo.fill, other, (), (a,)))  # another object
    assert not same.same_as(Binding(Halo.fill, halo, (), (b,)))  # another array, equal values
    assert not same.same_as(Binding(Halo.fill, halo, (), ()))
    assert binding_of(halo.fill).same_as(Binding(Halo.fill, halo, (), ()))


class Outer:
    """The reproducer of issue 54: the nested fill, then the caller's, of the same expression."""

    def __init__(self, config: DaceConfig) -> None:
        self.halo, self.a = Halo(), np.arange(4.0)
        self.inner = Inner(config, self.halo)
        orchestrate(obj=self, config=config)

    def __call__(self):
        self.inner()
        self.halo.fill(self.a)


class Inner:
    def __init__(self, config: DaceConfig, halo: Halo) -> None:
        self.halo, self.b = halo, np.arange(4.0)
        orchestrate(obj=self, config=config)

    def __call__(self):
        self.halo.fill(self.b)


@pytest.fixture()
def parsed_reproducer(tmp_path):
    model = Outer(DaceConfig(None, backend=BACKEND, orchestration=DaCeOrchestration.BuildAndRun, cache_root=tmp_path))
    program = model.__orchestra_programs__["__call__"].dace_program(())
    with dace_settings():
        sdfg = parse(program, (), {}).sdfg
    return model, program, sdfg


def test_the_nested_and_the_callers_fill_get_symbols_bound_to_their_own_arrays(parsed_reproducer):
    model, program, sdfg = parsed_reproducer
    bound = {}
    for symbol in (name for name, kind in sdfg.symbols.items() if "callback" in type(kind).__name__):
        callable_ = program.resolver.callbacks[sdfg.callback_mapping.get(symbol, symbol)][1]
        bound[symbol] = binding_of(callable_).constants
    assert sorted(id(c[0]) for c in bound.values()) == sorted([id(model.a), id(model.inner.b)])


def test_a_site_missing_from_the_record_is_refused(parsed_reproducer):
    _, program, sdfg = parsed_reproducer
    tampered = copy.deepcopy(sdfg)
    for nested in tampered.all_sdfgs_recursive():
        nested.__dict__.pop("_orchestra_callback_sites", None)
    with pytest.raises(BuildError, match="did not see the frontend create that call"):
        bind_callbacks(tampered, program.resolver, "Outer.__call__")


def test_a_binding_no_closure_callable_matches_is_refused(parsed_reproducer):
    _, program, sdfg = parsed_reproducer
    resolver = copy.copy(program.resolver)
    resolver.callbacks = {name: (expr, Halo().fill, nested) for name, (expr, _, nested) in resolver.callbacks.items()}
    with pytest.raises(BuildError, match=r"self\.halo\.fill\(\.\.\.\) at .*test_callback_bindings\.py:\d+ with 1 "
                                         r"argument\(s\) fixed at build time has no callable"):
        bind_callbacks(sdfg, resolver, "Outer.__call__")


# ------------------------------------------- a component called twice reads its own array, not its caller's


class Leaf:
    def __init__(self, config: DaceConfig, halo: Halo) -> None:
        self.halo, self.b = halo, np.arange(4.0) + 10.0
        orchestrate(obj=self, config=config)

    def __call__(self):
        self.halo.fill(self.b)


class Caller:
    """Its own ``self.b`` (written by the program) and a component with a ``self.b`` of its own, called twice."""

    def __init__(self, config: DaceConfig) -> None:
        self.halo, self.b = Halo(), np.zeros(4)
        self.leaf = Leaf(config, self.halo)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.b[:] = 2.0 * q
        self.leaf()
        self.leaf()


def test_a_component_called_twice_keeps_its_array_apart_from_the_callers_of_the_same_name(tmp_path):
    results = {}
    for mode in (DaCeOrchestration.Python, DaCeOrchestration.BuildAndRun):
        model = Caller(DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=tmp_path))
        model(np.arange(4.0))
        results[mode] = (model.b.copy(), model.leaf.b.copy())
    python, orchestrated = results[DaCeOrchestration.Python], results[DaCeOrchestration.BuildAndRun]
    assert np.array_equal(python[0], orchestrated[0]) and np.array_equal(python[1], orchestrated[1]), results
