"""Attributes of a run-time array argument DaCe would read as the whole array: refused, naming the line and fix.

The refused idiom ``QuantityFieldOfArgument`` goes through a whole build; here
the check alone. The first test measures the premise: DaCe's frontend
resolves an attribute its descriptor lacks as the array itself.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from orchestra.errors import BuildError
from orchestra.frontend.array_attributes import refuse_array_attributes


def _check(statement: str) -> None:
    function = ast.parse(textwrap.dedent(f"def f(self, q, p, a):\n    x = 1\n    {statement}\n")).body[0]
    refuse_array_attributes(function, "model.py", ("q", "p"))


def test_dace_has_no_such_attributes_on_an_array_descriptor():
    import dace

    descriptor = dace.data.Array(dace.float64, (3, 4))
    assert all(not hasattr(descriptor, name) for name in ("field", "ndim", "nbytes", "extent", "origin"))
    assert descriptor.strides == (4, 1)  # in elements; NumPy's are in bytes


@pytest.mark.parametrize("statement, attribute", [
    ("q.field[:] = 1.0", "field"),
    ("n = q.ndim", "ndim"),
    ("s = q.strides[0]", "strides"),
    ("e = q.extent[0] + a", "extent"),
    ("p[:] = q.view[:]", "view"),  # NDSL's bounded view, not NumPy's view()
])
def test_attributes_dace_misreads_are_refused_naming_the_line(statement, attribute):
    with pytest.raises(BuildError, match=rf"model\.py:3: `q\.{attribute}`: q is a run-time array argument.*"
                                         "dace_compiletime_args"):
        _check(statement)


@pytest.mark.parametrize("statement", [
    "b = np.zeros(q.shape, dtype=q.dtype) + q.T + q.size",
    "q.data[:] = 0.0",  # a container's whole array, as DaCe reads it
    "p[:] = q.copy() + q.view(np.float64) + q.astype(np.float64)",  # NumPy's methods, called
    "b = self.q.field",  # not an argument: read through self, in Python
    "q = self.tmp\n    b = q.field",  # rebound: no longer the argument
    "b = a.real",  # a number
])
def test_numpy_attributes_and_other_objects_are_left_alone(statement):
    _check(statement)
