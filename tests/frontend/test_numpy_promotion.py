"""Mixed-precision operations: refused exactly where the compiled result can differ from NumPy's.

The decisions are checked against NumPy itself and DaCe's own ``result_type``
(no build); the idiom corpus builds the accepted idioms against ``Python``
mode bit for bit (``SinglePrecisionStep``) and the refused ones
(``SinglePrecisionWithCallback``, ``SinglePrecisionComparedWithInexactLiteral``).
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

import dace
import numpy as np
import pytest

from orchestra.errors import BuildError
from orchestra.frontend.numpy_promotion import _numpy_type, _operand, check_condition, differing_operation

_PYTHON_NUMBER = {np.float64: 0.7, np.int64: 3, np.bool_: True, np.complex128: 0.5j}


def _dace_result(first, second, operator):
    from dace.frontend.python.replacements.operators import result_type

    return _numpy_type(result_type([first, second], operator)[0])


@pytest.mark.parametrize("narrow", [dace.float32, dace.float16])
@pytest.mark.parametrize("other", [dace.float64, dace.int64, dace.bool_, dace.float32, dace.int32, dace.int8])
@pytest.mark.parametrize("operator", ["Add", "Mult", "Div"])
def test_arithmetic_with_a_scalar_is_refused_where_numpy_with_a_python_number_differs(narrow, other, operator):
    first, second = dace.data.Scalar(narrow), dace.data.Scalar(other)
    compiled = _dace_result(first, second, operator)
    ufunc = {"Add": np.add, "Mult": np.multiply, "Div": np.true_divide}[operator]
    other_type = _numpy_type(other)
    value = _PYTHON_NUMBER.get(other_type, other_type(3))  # a narrower scalar is a NumPy scalar in Python too
    in_numpy = ufunc(narrow.type(0.3), value).dtype.type
    refused = differing_operation(operator, _operand(first), _operand(second), compiled) is not None
    assert refused == (compiled is not in_numpy)


def test_literals_in_arithmetic_are_weak_in_dace_too():
    for value in (0.1, 3, 2.5):
        first = dace.data.Scalar(dace.float32)
        compiled = _dace_result(first, value, "Mult")
        assert compiled is np.float32 and (np.float32(0.3) * value).dtype.type is np.float32
        assert differing_operation("Mult", _operand(first), _operand(value), compiled) is None


@pytest.mark.parametrize("value, refused", [(0.1, True), (0.5, False), (3, False), (1e-3, True), (2.0 ** -20, False)])
def test_a_comparison_with_a_literal_is_refused_where_float32_rounds_it(value, refused):
    narrow = _operand(dace.data.Scalar(dace.float32))
    assert (differing_operation("Gt", narrow, _operand(value), np.bool_) is not None) == refused
    # the reason: NumPy compares in float32, C++ in double; they differ only for an inexact literal
    assert (float(np.float32(value)) != float(value)) == refused


def test_arrays_and_numpy_scalars_are_strong_in_both():
    narrow = _operand(dace.data.Scalar(dace.float32))
    array64 = _operand(dace.data.Array(dace.float64, (3,)))
    assert differing_operation("Mult", narrow, array64, np.float64) is None
    assert differing_operation("Gt", narrow, array64, np.bool_) is None
    assert differing_operation("Gt", narrow, _operand(np.float64(0.1)), np.bool_) is None
    assert differing_operation("Gt", narrow, _operand(dace.data.Scalar(dace.float64)), np.bool_) is not None


def _visitor(**descriptors):
    return SimpleNamespace(sdfg=SimpleNamespace(arrays=descriptors, symbols={}), variables={})


@pytest.mark.parametrize("condition, refused", [
    ("dt > 0.1", True), ("dt > 0.5", False), ("dt * 3.0 > x32", True), ("dt > x", True),
    ("dt * 2 > x32", False), ("x > 0.1", False), ("n > 2 and dt < 1.0", False),
])
def test_conditions_compiled_as_cpp(condition, refused):
    visitor = _visitor(dt=dace.data.Scalar(dace.float32), x32=dace.data.Scalar(dace.float32),
                       x=dace.data.Scalar(dace.float64), n=dace.data.Scalar(dace.int64))
    test = ast.parse(condition, mode="eval").body
    if refused:
        with pytest.raises(BuildError, match=r"mixed precision in the condition .*np\.float32\(x\)"):
            check_condition(visitor, test)
    else:
        check_condition(visitor, test)
