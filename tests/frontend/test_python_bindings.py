"""Python's binding rules where DaCe had its own: a name bound again, an element read, a tuple assignment.

Each rewrite is checked here without a build; the idiom corpus runs the same
code orchestrated against Python mode bit for bit (``RebindsArgument``,
``ElementReadAcrossStencil``, ``SwapsElements``).
"""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import dace
import numpy as np
import pytest

from orchestra.errors import BuildError
from orchestra.frontend.element_reads import copy_element_reads, split_tuple_assignments
from orchestra.frontend.rebinding import refuse_rebound_arguments, rename_rebound_names
from orchestra.frontend.scope import ParseScope

ARGTYPES = {"q": dace.data.Array(dace.float64, (4, 5, 3)), "p": dace.data.Array(dace.float32, (4,)),
            "a": dace.data.Scalar(dace.float64)}
MODEL = SimpleNamespace(tmp=np.zeros((2, 3)), n=2)


def _function(source: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(source)).body[0]


def test_a_name_bound_again_at_the_top_level_is_a_new_variable():
    function = _function("""
        def f(self, q, p, a):
            q = q * 2.0
            p[:] = q[0, 0, 0]
            q = q + a
            if a > 0.0:
                q = q * 3.0
            q += 1.0
            self.s(q, p)
        """)
    assert rename_rebound_names(function) == 2
    code = ast.unparse(function)
    assert "q__orchestra_2 = q * 2.0" in code and "p[:] = q__orchestra_2[0, 0, 0]" in code
    assert "q__orchestra_3 = q__orchestra_2 + a" in code
    assert "q__orchestra_3 = q__orchestra_3 * 3.0" in code  # inside the block: the current variable
    assert "q__orchestra_3 += 1.0" in code  # updated in place: the current variable, not the caller's array
    assert "self.s(q__orchestra_3, p)" in code


def test_an_array_argument_still_assigned_inside_a_block_is_refused():
    function = _function("def f(self, q, p, a):\n    for i in range(2):\n        q = q * 2.0\n    p[:] = q[0]\n")
    assert rename_rebound_names(function) == 0
    with pytest.raises(BuildError, match=r"model\.py:3: the array argument `q` is assigned again inside a block.*"
                                         r"q_new = "):
        refuse_rebound_arguments(function, "model.py", ("q", "p"))


def test_in_place_updates_and_scalars_are_left_alone():
    function = _function("def f(self, q, p, a):\n    q += 1.0\n    q[0] = a\n    for i in range(3):\n"
                         "        a = a * 2.0\n    p[:] = a\n")
    assert rename_rebound_names(function) == 0
    refuse_rebound_arguments(function, "model.py", ("q", "p"))


def test_an_element_read_into_a_name_is_a_scalar_copy_of_the_arrays_type():
    function = _function("""
        def f(self, q, p, a):
            e = q[1, 2, 0]
            r = q[1]
            s = p[a]
            t = self.tmp[1, 1]
            u = q[1, 2, 0]
            u = u * 2.0
        """)
    scope = ParseScope(function, {"self": MODEL}, tuple(ARGTYPES))
    assert copy_element_reads(function, scope, ARGTYPES) == 3
    code = ast.unparse(function)
    assert "e: __orchestra_scalar_float64__ = q[1, 2, 0]" in code
    assert "r = q[1]" in code  # a row: a view, as in Python
    assert "s: __orchestra_scalar_float32__ = p[a]" in code
    assert "t: __orchestra_scalar_float64__ = self.tmp[1, 1]" in code
    assert "u = q[1, 2, 0]" in code  # bound twice: left as written
    assert scope.namespace["__orchestra_scalar_float32__"].dtype == dace.float32


def test_a_tuple_assignment_with_element_targets_reads_everything_first():
    function = _function("def f(self, q, p, a):\n    q[0, 0, 0], q[1, 1, 1] = q[1, 1, 1], q[0, 0, 0]\n"
                         "    a, b = b, a\n")
    assert split_tuple_assignments(function) == 1
    lines = ast.unparse(function).splitlines()[1:]
    assert [line.split(" = ")[1] for line in lines[:4]] == ["q[1, 1, 1]", "q[0, 0, 0]", "__orchestra_value_2_1_0",
                                                            "__orchestra_value_2_1_1"]
    assert lines[4].strip() == "a, b = (b, a)"  # plain names: DaCe evaluates the right-hand side first itself
