"""Random call sequences: every orchestrated call computes what Python mode computes, or refuses.

A generator draws calls of small orchestrated programs with array and scalar
parameters (defaults, keyword-only ones, ``None``): arguments omitted, given
by position or keyword, scalars of every Python and numpy type, arrays
swapped, replaced by copies, by strided views or passed twice. After every
call the orchestrated arrays must equal Python mode's bitwise, or the call
must raise :class:`StaleArgumentsError` for one of the documented reasons
(aliasing, another array layout), leaving the arrays untouched.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from orchestra import DaceConfig, FrozenStencil, StaleArgumentsError, orchestrate_function
from orchestra.examples.diffusion import apply_tendency, laplacian

BACKEND = "dace:cpu"
SHAPE = (8, 7, 2)
ORIGIN, DOMAIN = (1, 1, 0), (SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2])
SCALARS = [
    lambda r: r.uniform(-1, 1),
    lambda r: r.randint(-3, 3),
    lambda r: bool(r.getrandbits(1)),
    lambda r: np.float64(r.uniform(-1, 1)),
    lambda r: np.float32(r.uniform(-1, 1)),
    lambda r: np.int32(r.randint(-3, 3)),
]


def make_programs(config: DaceConfig):
    """The same two functions, orchestrated under ``config`` (unchanged in Python mode)."""
    tendency = FrozenStencil(apply_tendency, backend=BACKEND, origin=ORIGIN, domain=DOMAIN)
    smooth = FrozenStencil(laplacian, backend=BACKEND, origin=ORIGIN, domain=DOMAIN)

    def step(q, lap, factor=0.5, extra=None, *, flag=True):
        smooth(q, lap)
        if flag:
            tendency(q, lap, factor)
        if extra is not None:
            tendency(q, lap, extra)

    def repeat(q, lap, times=2, scale=1.0):
        for _ in range(times):
            tendency(q, lap, scale)

    return orchestrate_function(config)(step), orchestrate_function(config)(repeat)


def initial(rng: np.random.Generator):
    from gt4py import storage

    arrays = [storage.zeros(SHAPE, np.float64, backend=BACKEND) for _ in range(2)]
    for array in arrays:
        array[...] = rng.uniform(-1, 1, SHAPE)
    return arrays


def draw_call(r: random.Random, name: str):
    """(array roles, positional scalars, keywords): roles name which arrays go where."""
    roles = r.choice(["qa", "qa", "qa", "aq", "copy", "view", "alias"])
    scalars, keywords = [], {}
    if name == "step":
        optional = [("factor", SCALARS), ("extra", SCALARS + [lambda _: None])]
        if r.random() < 0.5:
            keywords["flag"] = bool(r.getrandbits(1))
    else:
        optional = [("times", [lambda r: r.randint(0, 3)]), ("scale", SCALARS)]
    positional = True
    for parameter, makers in optional:
        how = r.choice(["omit", "position", "keyword"])
        if how == "omit":
            positional = False
        elif how == "position" and positional:
            scalars.append(r.choice(makers)(r))
        else:
            positional = False
            keywords[parameter] = r.choice(makers)(r)
    return roles, scalars, keywords


def strides_of(arrays) -> list:
    return [tuple(array.strides) for array in arrays]


def built_layout(program, arrays, scalars, keywords):
    """Strides of the arrays the program serving this call was built with (None: this call builds one)."""
    from orchestra.calls.arguments import folded_identity

    args, kwargs = program._binder.complete((*arrays, *scalars), keywords)
    if program._program is None:
        return None
    folded = folded_identity(program._constant, program._program.argnames, args, kwargs)
    obtained = program._callers.get(folded)  # [(folded values, caller, args, kwargs)], newest first
    return None if not obtained else strides_of(obtained[0][2][:2])


def arrays_for(roles: str, q, a, spare):
    """The two array arguments of a call, and whether a refusal is allowed."""
    if roles == "aq":
        return (a, q), None
    if roles == "copy":  # a new object with the same layout: re-marshalled, same numbers
        spare[...] = a
        return (q, spare), None
    if roles == "view":  # the same shape, other strides
        return (q, np.asfortranarray(a)), "layout"
    if roles == "alias":
        return (q, q), "aliasing"
    return (q, a), None


@pytest.mark.parametrize("seed", range(8))
def test_random_call_sequences_match_python_mode(tmp_path_factory, seed):
    cache = tmp_path_factory.getbasetemp() / "call_patterns_cache"
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    orchestrated = dict(zip(["step", "repeat"], make_programs(DaceConfig(
        None, backend=BACKEND, orchestration="BuildAndRun", cache_root=Path(cache)))))
    reference = dict(zip(["step", "repeat"], make_programs(DaceConfig(None, backend=BACKEND, orchestration="Python"))))
    assert not hasattr(reference["step"], "fast_caller")  # Python mode: the plain functions
    state = {mode: initial(np.random.default_rng(seed)) for mode in ("orchestrated", "python")}
    spares = {mode: initial(rng)[0] for mode in state}
    matched = refused = invalid = 0
    for call in range(40):
        name = r.choice(["step", "repeat"])
        roles, scalars, keywords = draw_call(r, name)
        results = {}
        for mode, programs in (("python", reference), ("orchestrated", orchestrated)):
            q, a = state[mode]
            arrays, may_refuse = arrays_for(roles, q, a, spares[mode])
            if mode == "orchestrated":  # a program is built for the layout of the call that obtained it
                layout = built_layout(programs[name], arrays, scalars, keywords)
                if layout is not None and layout != strides_of(arrays):
                    may_refuse = may_refuse or "layout"
            try:
                programs[name](*arrays, *scalars, **keywords)
                results[mode] = None
            except StaleArgumentsError as error:
                results[mode] = error
            except TypeError as error:  # gt4py refuses some scalar types stencil by stencil
                assert mode == "python", f"orchestrated raised {error!r}"
                results[mode] = error
                break
            if roles == "copy" and results[mode] is None:
                a[...] = spares[mode]  # the copy was the array argument: carry its values back
        what = f"seed {seed} call {call}: {name}{(roles, scalars, keywords)}"
        if isinstance(results["python"], TypeError):
            invalid += 1  # not a valid call in Python mode: nothing to compare
            continue
        if results["orchestrated"] is not None:
            assert may_refuse, f"{what} refused without a documented reason: {results['orchestrated']}"
            expected = {"aliasing": "share memory", "layout": "strides"}[may_refuse]
            assert expected in str(results["orchestrated"]) or "share memory" in str(results["orchestrated"])
            refused += 1
            for mine, theirs in zip(state["orchestrated"], state["python"]):  # Python mode went ahead
                theirs[...] = mine
            continue
        for mine, theirs in zip(state["orchestrated"], state["python"]):
            assert np.array_equal(np.asarray(mine), np.asarray(theirs)), f"{what} differs from Python mode"
        matched += 1
    assert matched >= 20, f"only {matched} calls compared ({refused} refused, {invalid} invalid in Python mode)"


def test_omitted_default_is_not_frozen_into_the_program(tmp_path):
    """The reported case: model() then model(3.0) computed with 2.0 twice."""
    config = DaceConfig(None, backend=BACKEND, orchestration="BuildAndRun", cache_root=tmp_path)
    step, _ = make_programs(config)
    q, a = initial(np.random.default_rng(0))
    q_ref, a_ref = np.asarray(q).copy(), np.asarray(a).copy()
    python_step, _ = make_programs(DaceConfig(None, backend=BACKEND, orchestration="Python"))
    for call in [(), (3.0,), (), (0.25, 1.5), (0.25, None)]:
        step(q, a, *call)
        python_step(q_ref, a_ref, *call)
        assert np.array_equal(np.asarray(q), q_ref), f"after step{call}"


def test_scalar_of_a_lossy_type_is_refused_with_a_scalar_message():
    from orchestra.calls.fast_path import _check_scalar

    _check_scalar("dt", np.float32(0.5), np.dtype(np.float64))  # lossless: accepted
    _check_scalar("n", True, np.dtype(np.int64))
    with pytest.raises(StaleArgumentsError, match=r"argument 'dt' is a float32 scalar .* float64"):
        _check_scalar("dt", np.float64(0.1), np.dtype(np.float32))
    with pytest.raises(StaleArgumentsError, match=r"argument 'n' is a int64 scalar .* float"):
        _check_scalar("n", 2.5, np.dtype(np.int64))
    with pytest.raises(StaleArgumentsError, match=r"argument 'dt' is a scalar .* pass a number"):
        _check_scalar("dt", np.ones(1), np.dtype(np.float64))


def test_variadic_parameters_are_refused_when_orchestrated(tmp_path):
    from orchestra import ConfigurationError

    config = DaceConfig(None, backend=BACKEND, orchestration="BuildAndRun", cache_root=tmp_path)
    with pytest.raises(ConfigurationError, match=r"takes \*rest, \*\*options: .* every parameter named"):
        orchestrate_function(config)(lambda q, *rest, **options: None)
