"""Loops over zip/enumerate/reversed of compile-time collections become indexed loops, and only those.

The idiom corpus checks the orchestrated results bit for bit; here the
rewrite itself: what it produces, and the loops it must leave as written.
"""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from orchestra.frontend.iterators import index_collection_iterators
from orchestra.frontend.scope import ParseScope

MODEL = SimpleNamespace(arrays=[np.zeros(2), np.ones(2)], weights=(0.5, 0.25, 2.0), table={"a": np.zeros(2)},
                        stencils=(print, repr, len), count=2)


def _rewrite(source: str, runtime: tuple[str, ...] = ("x",)) -> tuple[int, str]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    count = index_collection_iterators(function, ParseScope(function, {"self": MODEL}, runtime))
    return count, ast.unparse(function)


def test_zip_enumerate_and_reversed_become_loops_over_positions():
    count, code = _rewrite("""
        def f(self, x):
            for i, (q, w) in enumerate(zip(self.arrays, self.weights), start=2):
                g(q, w * i)
            for q in reversed(self.stencils):
                q(x)
        """)
    assert count == 2
    assert "for __orchestra_position_3_1 in range(2):" in code  # zip stops at the shorter list
    assert "g(self.arrays[__orchestra_position_3_1], self.weights[__orchestra_position_3_1] * " \
           "(2 + __orchestra_position_3_1))" in code
    assert "for __orchestra_position_5_2 in range(3):" in code
    assert "self.stencils[2 - __orchestra_position_5_2](x)" in code


def test_literals_of_paths_and_arguments_are_indexed_too_unless_rebound():
    count, code = _rewrite("""
        def f(self, x):
            for i, q in enumerate((x, self.arrays[0])):
                g(q, i)
            for s, q in zip([self.stencils[0], self.stencils[1]], reversed((x, self.table["a"]))):
                s(q)
            y = x
            for q in enumerate((y, x)):
                y = g(q)
        """)
    assert count == 2  # the last: y is rebound in the function
    assert "g((x, self.arrays[0])[__orchestra_position_3_1], __orchestra_position_3_1)" in code
    assert ("[self.stencils[0], self.stencils[1]][__orchestra_position_5_2]((x, self.table['a'])"
            "[1 - __orchestra_position_5_2])") in code


def test_slices_of_collections_with_bounds_known_when_parsing():
    count, code = _rewrite("""
        def f(self, x):
            for s in self.stencils[1:]:
                s(x)
            for q, w in zip(self.arrays, self.weights[::-2]):
                g(q, w)
            for s in self.stencils[-self.count:]:
                s(x)
        """)
    assert count == 3
    assert "for __orchestra_position_3_1 in range(2):\n        self.stencils[1 + __orchestra_position_3_1](x)" in code
    assert "g(self.arrays[__orchestra_position_5_2], self.weights[2 - 2 * __orchestra_position_5_2])" in code
    assert "self.stencils[1 + __orchestra_position_7_3](x)" in code


@pytest.mark.parametrize("source", [
    # the loop variable is read after the loop (Python leaves it bound to the last element)
    "def f(self, x):\n    for q, w in zip(self.arrays, self.weights):\n        g(q, w)\n    g(q, 1.0)\n",
    # assigned in the body
    "def f(self, x):\n    for q, w in zip(self.arrays, self.weights):\n        w = w * 2.0\n        g(q, w)\n",
    # break: DaCe cannot unroll it, the loop stays as written
    "def f(self, x):\n    for q, w in zip(self.arrays, self.weights):\n        g(q, w)\n        break\n",
    # a run-time value, a dict (iterates keys), a range: not collections known when parsing
    "def f(self, x):\n    for q, w in zip(x, self.weights):\n        g(q, w)\n",
    "def f(self, x):\n    for i, key in enumerate(self.table):\n        g(key, i)\n",
    "def f(self, x):\n    for i, n in enumerate(range(3)):\n        g(n, i)\n",
    "def f(self, x):\n    for s in self.stencils[:x]:\n        s(x)\n",
    # constants only: DaCe evaluates the iterator and unrolls with literals (tracers[name] stays readable)
    "def f(self, x):\n    for i, w in enumerate(self.weights[1:]):\n        g(x, w * i)\n",
    "def f(self, x):\n    for w in self.weights:\n        g(w, 1.0)\n",  # DaCe unrolls a plain collection itself
    # the target does not match what one iteration yields
    "def f(self, x):\n    for pair in zip(self.arrays, self.weights):\n        g(pair)\n",
    # zip shadowed by a local
    "def f(self, x):\n    zip = h\n    for q, w in zip(self.arrays, self.weights):\n        g(q, w)\n",
])
def test_loops_that_are_not_certainly_the_same_are_left_as_written(source):
    count, code = _rewrite(source)
    assert count == 0
    assert code == ast.unparse(ast.parse(source).body[0])


def test_a_name_reused_by_two_loops_is_rewritten_in_both():
    count, code = _rewrite("""
        def f(self, x):
            for q, w in zip(self.arrays, self.weights):
                g(q, w)
            for q in self.arrays:
                g(q, 1.0)
        """)
    assert count == 1
    assert "for q in self.arrays:" in code  # a plain loop over a collection: DaCe unrolls it itself
