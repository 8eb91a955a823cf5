"""orchestra's inference of trivially given symbols returns what DaCe's sympy-based one returns, or defers to it.

:mod:`orchestra.frontend.symbol_inference` replaces, during a parse, DaCe's
``infer_symbols_from_datadescriptor`` for calls whose every size and stride
symbol is plainly given by an integer of the argument. The result must be
DaCe's own, item for item, in the same order and of the same types (the
nested SDFG's symbol mapping, hence the program, depends on it); every other
case must reach DaCe's function unchanged.
"""

from __future__ import annotations

import dace
import numpy as np
import pytest
import sympy

import dace.frontend.python.parser as dace_parser
from orchestra.frontend.symbol_inference import fast_symbol_inference, trivial_solution


def _stencil_like_sdfg(fields=("a", "b", "out"), shape=None) -> dace.SDFG:
    """An SDFG whose arrays have a size and a stride symbol per axis, as gt4py's frozen stencils have."""
    sdfg = dace.SDFG("stencil_like")
    for field in fields:
        sizes = shape or tuple(dace.symbol(f"__{field}_{axis}_size") for axis in "IJK")
        strides = tuple(dace.symbol(f"__{field}_{axis}_stride") for axis in "IJK")
        sdfg.add_array(field, sizes, dace.float64, strides=strides)
    return sdfg


def _dace_inference(sdfg, args):
    return dace_parser.infer_symbols_from_datadescriptor(sdfg, args, None)


def _same(fast: dict, slow: dict) -> None:
    assert list(fast.items()) == list(slow.items())
    assert all(type(fast[name]) is type(slow[name]) for name in fast)


@pytest.mark.parametrize("as_numpy", [False, True])
def test_plainly_given_sizes_and_strides_are_dace_s_solution_in_dace_s_order(as_numpy):
    sdfg = _stencil_like_sdfg()
    shapes = {"a": (12, 10, 4), "b": (12, 10, 4), "out": (9, 7, 5)}
    if as_numpy:  # strides in bytes, divided by the item size
        args = {name: np.zeros(shape) for name, shape in shapes.items()}
        args["b"] = np.zeros((4, 10, 12)).transpose(2, 1, 0)  # other strides than a's
    else:
        args = {name: dace.data.Array(dace.float64, shape) for name, shape in shapes.items()}
    fast = trivial_solution(sdfg, args)
    assert fast is not None and len(fast) == 18
    _same(fast, _dace_inference(sdfg, args))


def test_numbers_in_the_sdfg_and_arguments_that_are_not_arrays_need_no_symbol():
    sdfg = _stencil_like_sdfg(fields=("a",), shape=(12, 10, 4))
    args = {"a": dace.data.Array(dace.float64, (12, 10, 4)), "scale": 2.0, "unknown": np.zeros(3)}
    fast = trivial_solution(sdfg, args)
    _same(fast, _dace_inference(sdfg, args))
    assert set(fast) == {"__a_I_stride", "__a_J_stride", "__a_K_stride"}


def test_whatever_is_not_plain_goes_to_dace():
    n = dace.symbol("N")
    expression = dace.SDFG("expression")
    expression.add_array("a", (n + 1, 4), dace.float64)
    assert trivial_solution(expression, {"a": dace.data.Array(dace.float64, (8, 4))}) is None

    sdfg = _stencil_like_sdfg(fields=("a",))
    array = dace.data.Array(dace.float64, (12, 10, 4))
    assert trivial_solution(sdfg, {"a": array, "__a_I_size": 12}) is None  # a symbol passed as an argument
    symbolic = dace.data.Array(dace.float64, (dace.symbol("M"), 10, 4))
    assert trivial_solution(sdfg, {"a": symbolic}) is None  # a symbolic given size

    shared = dace.SDFG("shared")  # one symbol for two arrays of different sizes: DaCe raises, so must we
    size = dace.symbol("S")
    shared.add_array("x", (size,), dace.float64)
    shared.add_array("y", (size,), dace.float64)
    conflicting = {"x": dace.data.Array(dace.float64, (5,)), "y": dace.data.Array(dace.float64, (6,))}
    assert trivial_solution(shared, conflicting) is None
    with fast_symbol_inference(), pytest.raises(ValueError, match="infer"):
        dace_parser.infer_symbols_from_datadescriptor(shared, conflicting)


def test_the_inference_is_installed_only_within_the_block():
    original = dace_parser.infer_symbols_from_datadescriptor
    sdfg = _stencil_like_sdfg(fields=("a",))
    args = {"a": dace.data.Array(dace.float64, (12, 10, 4))}
    with fast_symbol_inference():
        installed = dace_parser.infer_symbols_from_datadescriptor
        assert installed is not original
        _same(installed(sdfg, args), original(sdfg, args, None))
        n = dace.symbol("N")
        expression = dace.SDFG("expression")
        expression.add_array("a", (n + 1,), dace.float64)
        assert installed(expression, {"a": dace.data.Array(dace.float64, (8,))}) == {"N": sympy.Integer(7)}
    assert dace_parser.infer_symbols_from_datadescriptor is original


def test_every_call_of_a_real_parse_gets_dace_s_answer(tmp_path, monkeypatch):
    """A model of gt4py stencils and components parsed with both inferences compared on every call."""
    from gt4py.cartesian import config as gt_config

    import orchestra.frontend.symbol_inference as inference
    from orchestra import DaceConfig
    from tests.pipeline.test_lowering_processes import Model, _expected, _inputs

    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path / "gt"))
    dace_original = dace_parser.infer_symbols_from_datadescriptor
    answered = trivial_solution
    checked = []

    def compared(sdfg, args):
        fast = answered(sdfg, args)
        if fast is not None:
            _same(fast, dace_original(sdfg, args, None))
            checked.append(sdfg.name)
        return fast

    monkeypatch.setattr(inference, "trivial_solution", compared)
    model = Model(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path / "cache",
                             build_processes=0))
    arrays, expected = _inputs(), _inputs()
    model(*arrays)
    _expected(*expected)
    for got, want in zip(arrays, expected):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    assert sum(name.startswith("frozen_") for name in checked) == 4, checked  # every stencil call, answered alike
