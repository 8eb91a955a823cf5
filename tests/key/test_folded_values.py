"""A value folded into the program that changes between calls gets the program for the new value.

DaCe folds what a program reads through ``self`` (a factor, a loop count, a
flag, an element of a list or dict) and module constants into the generated
code, at every depth of the call tree. Before :mod:`orchestra.key.folded_values`
only the first call's values were keyed and nothing compared them again: a
model that changed ``self.a`` after its first call kept running the program
built for the old value while ``Python`` mode used the new one. Each call
here changes one folded value (one of them in a nested component, one a
module constant) or replaces a stencil or component ``self`` holds, and must compute bit for bit what ``Python`` mode computes;
``Run`` mode refuses a value it has no build for, naming it.
"""

from __future__ import annotations

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, MissingBuildError, orchestrate

FloatField = Field[np.float64]
SHAPE = (5, 4, 2)
OFFSET = 0.5  # a module constant the program folds in


def axpy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


def axmy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = a * x - y


class Inner:
    def __init__(self, config: DaceConfig) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.scale, self.config = 2.0, config
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.axpy(x, y, self.scale)


class Outer:
    def __init__(self, config: DaceConfig) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.inner = Inner(config)
        self.a, self.n, self.flag = 0.5, 1, True
        self.coefficients = [0.25, 0.125]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for _ in range(self.n):
            self.axpy(x, y, self.a)
        if self.flag:
            self.axpy(x, y, self.coefficients[1])
        self.axpy(x, y, OFFSET)
        self.inner(x, y)


def _set_offset(value: float) -> None:
    global OFFSET
    OFFSET = value


def _replace_stencil(model: "Outer") -> None:
    model.axpy = FrozenStencil(axmy, backend="dace:cpu", origin=(0, 0, 0), domain=SHAPE)


def _replace_component(model: "Outer") -> None:
    model.inner = Inner(model.inner.config)  # another object, the same code and values


#: One change before each call (the first call runs as constructed), and whether it needs a new build.
CHANGES = [
    ("as built", lambda m: None),
    ("self.a", lambda m: setattr(m, "a", 0.125)),
    ("self.n", lambda m: setattr(m, "n", 3)),
    # (the coefficient first: with the flag False, the branch reading it is gone from the program)
    ("self.coefficients[1]", lambda m: m.coefficients.__setitem__(1, 4.0)),
    ("self.flag", lambda m: setattr(m, "flag", False)),
    ("Inner.__call__: self.scale", lambda m: setattr(m.inner, "scale", -1.0)),
    ("OFFSET", lambda m: _set_offset(0.75)),
    ("back to the first values", lambda m: (m.__dict__.update(a=0.5, n=1, flag=True), m.coefficients.__setitem__(1, 0.125),
                                            setattr(m.inner, "scale", 2.0), _set_offset(0.5))),
    ("self.axpy", _replace_stencil),
    ("self.inner", _replace_component),
]
#: Calls after which no new program is built: the values of the first call again, an equal component.
REUSED = ("back to the first values", "self.inner")


def _config(mode: str, cache) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)


def _fields():
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(7)
    return [gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu") for _ in range(2)]


def _run(config: DaceConfig) -> list[np.ndarray]:
    _set_offset(0.5)
    model, (x, y) = Outer(config), _fields()
    results = []
    for _name, change in CHANGES:
        change(model)
        model(x, y)
        results.append(np.asarray(y).copy())
    return results


def test_every_call_computes_with_the_current_folded_values(tmp_path, caplog):
    reference = _run(_config("Python", tmp_path))
    with caplog.at_level("INFO", logger="orchestra"):
        orchestrated = _run(_config("BuildAndRun", tmp_path))
    for (name, _), expected, got in zip(CHANGES, reference, orchestrated):
        assert np.array_equal(expected.view(np.uint8), got.view(np.uint8)), f"after changing {name}"
    for name, _ in CHANGES[1:]:
        if name not in REUSED[:1]:
            assert f"{name} was " in caplog.text, name  # the log names what changed
    # one build per distinct program; going back to the first values reuses the first one
    builds = list(tmp_path.glob("Outer.__call__/*/COMPLETE"))
    assert len(builds) == len(CHANGES) - len(REUSED)


def test_run_mode_refuses_a_value_it_has_no_build_for(tmp_path):
    _set_offset(0.5)
    x, y = _fields()
    Outer(_config("BuildAndRun", tmp_path))(x, y)  # builds for the values as constructed
    model = Outer(_config("Run", tmp_path))
    model(x, y)  # loads that build
    model.a = 0.25
    with pytest.raises(MissingBuildError, match=r"self\.a"):
        model(x, y)


def test_the_guard_lists_each_folded_value_once(tmp_path):
    from orchestra.key.folded_values import FoldedValues

    _set_offset(0.5)
    model, (x, y) = Outer(_config("BuildAndRun", tmp_path)), _fields()
    model(x, y)
    program = model.__dict__["__orchestra_programs__"]["__call__"]
    values = FoldedValues.of(program.dace_program())
    names = [value.name for value in values.values]
    expected = {"self.a", "self.n", "self.flag", "self.coefficients[1]", "OFFSET", "Inner.__call__: self.scale"}
    assert expected <= set(names), names  # (DaCe also lists the whole list, and literals it folded)
    assert len(names) == len(set(names)), names
    assert values.changed() is None
    model.inner.scale = float("nan")
    assert "Inner.__call__: self.scale was 2.0" in values.changed()
    frozen_nan = FoldedValues([type(values.values[0])("", "x", ({}, {"x": float("nan")}), float("nan"))])
    assert frozen_nan.changed() is None  # NaN stays NaN: no rebuild on every call


STENCIL: FrozenStencil | None = None  # a module global an orchestrated function calls


def test_a_function_calling_a_replaced_global_stencil_runs_the_new_one(tmp_path):
    from orchestra import orchestrate_function

    global STENCIL
    results = []
    for mode in ("Python", "BuildAndRun"):
        STENCIL = FrozenStencil(axpy, backend="dace:cpu", origin=(0, 0, 0), domain=SHAPE)

        def step(x, y):
            STENCIL(x, y, 0.5)

        program, (x, y) = orchestrate_function(_config(mode, tmp_path))(step), _fields()
        program(x, y)
        STENCIL = FrozenStencil(axmy, backend="dace:cpu", origin=(0, 0, 0), domain=SHAPE)
        program(x, y)
        results.append(np.asarray(y).copy())
    assert np.array_equal(results[0].view(np.uint8), results[1].view(np.uint8))


def test_items_of_a_constant_tuple_are_checked_through_the_tuple_and_still_each_noticed():
    """``for name in NAMES`` folds one value per item: one identity test per tuple, item by item once replaced."""
    from orchestra.key.folded_values import FoldedValue, FoldedValues

    module = {"NAMES": ("qv", "qc", "qr"), "LEVELS": [1, 2]}
    values = FoldedValues([FoldedValue("", expression, (module, {}), built) for expression, built in (
        ("NAMES[0]", "qv"), ("NAMES[2]", "qr"), ("NAMES[-1]", "qr"), ("LEVELS[1]", 2))])
    assert values.changed() is None
    module["NAMES"] = ("qv", "qc", "qr")  # another tuple, the same items: nothing changed
    assert values.changed() is None
    module["NAMES"] = ("qv", "qc", "qi")
    assert values.changed() == "NAMES[2] was 'qr' when built, is 'qi' now"
    module["NAMES"] = ("qv", "qc", "qr")
    module["LEVELS"][1] = 3  # a list changes in place: read item by item, always
    assert values.changed() == "LEVELS[1] was 2 when built, is 3 now"
    module["LEVELS"][1] = 2
    del module["NAMES"]
    assert "NAMES[0] can no longer be read" in values.changed()


def test_plain_accesses_are_read_live_without_eval():
    from orchestra.key.expression_reader import expression_reader

    class Model:
        def __init__(self) -> None:
            self.tracers = {"qv": 1.0}

    model, module = Model(), {"NAMES": ("a", "b")}
    tracer = expression_reader("self.tracers['qv']", module, {"self": model})
    last = expression_reader("NAMES[-1]", module, {})
    assert (tracer(), last()) == (1.0, "b")
    model.tracers["qv"], module["NAMES"] = 2.0, ("c",)
    assert (tracer(), last()) == (2.0, "c")
    assert "eval" not in tracer.func.__code__.co_names  # a compiled function of the fixed objects
    call = expression_reader("len(NAMES)", module, {})  # anything else: evaluated, still read live
    assert call() == 1
