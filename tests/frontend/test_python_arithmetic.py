"""Scalar arithmetic keeps Python's meaning: what the rewrite writes, what it refuses, what it leaves.

The idiom corpus runs `//` and `%` of negative run-time values orchestrated
against Python mode; here the rewrite itself, without a build.
"""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from orchestra.errors import BuildError
from orchestra.frontend.python_arithmetic import NUMPY, python_arithmetic
from orchestra.frontend.scope import ParseScope

MODEL = SimpleNamespace(n=-3, dt=0.5, flag=True)


def _rewrite(source: str) -> str:
    function = ast.parse(textwrap.dedent(source)).body[0]
    python_arithmetic(function, ParseScope(function, {"self": MODEL}, ("n", "a")), "model.py")
    return ast.unparse(function)


def test_run_time_floor_division_and_modulo_call_numpy():
    code = _rewrite("""
        def f(self, n, a):
            k = n // 2 + a % 2.0
            k //= 3
            m = self.n // 2 + self.n % 2
            q[n // 2, 0] = q[n % 3, 1]
            for i in range(n // 2):
                pass
        """)
    assert f"k = {NUMPY}.floor_divide(n, 2) + {NUMPY}.mod(a, 2.0)" in code
    assert f"k = {NUMPY}.floor_divide(k, 3)" in code
    assert "m = self.n // 2 + self.n % 2" in code  # fixed when parsing: DaCe evaluates it in Python
    assert "q[n // 2, 0] = q[n % 3, 1]" in code and "range(n // 2)" in code  # symbolic: DaCe floors


@pytest.mark.parametrize("statement, said", [
    ("b = round(a)", "`round(a)`: round() of a run-time value compiles to C's round"),
    ("b = a or 0.5", "`a or 0.5`: the value of `or` of run-time values compiles to a bool"),
    ("b = a and self.dt", "`a and self.dt`: the value of `and`"),
])
def test_what_compiles_with_another_meaning_is_refused_naming_the_line(statement, said):
    with pytest.raises(BuildError, match=r"model\.py:3: " + said.replace("(", r"\(").replace(")", r"\)")):
        _rewrite(f"def f(self, n, a):\n    x = 1\n    {statement}\n")


@pytest.mark.parametrize("statement", [
    "b = self.flag and n > 1",  # operands that are bools: the value is a bool in Python too
    "if a or n:\n        pass",  # only its truth is used
    "b = round(self.dt)",  # fixed when parsing
    "b = not (a and 0.5)",
])
def test_bools_truth_tests_and_fixed_values_are_left_alone(statement):
    source = f"def f(self, n, a):\n    {statement}\n"
    assert _rewrite(source) == ast.unparse(ast.parse(source).body[0])


def test_a_chained_comparison_is_the_and_of_its_pairs_when_the_middle_reads_nothing_twice():
    code = _rewrite("""
        def f(self, n, a):
            if 0.0 < a <= self.dt < 1.0:
                pass
            ok = -1 < n < 3
            kept = 0 < g(a) < 1
        """)
    assert "if 0.0 < a and a <= self.dt and (self.dt < 1.0):" in code
    assert "ok = -1 < n and n < 3" in code
    assert "kept = 0 < g(a) < 1" in code  # a call in the middle: Python calls it once
