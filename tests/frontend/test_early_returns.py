"""A called function's early returns, rewritten into one exit: same results in Python, clear refusals.

The idiom corpus (``EarlyReturnsInCallees``) runs such helpers orchestrated
against Python mode; here the rewrite itself, without a build: each rewritten
function, executed by Python, returns what the original returns for every
input, and keeps only its last statement as a ``return``.
"""

from __future__ import annotations

import ast
import itertools
import textwrap

import pytest

from orchestra.errors import BuildError
from orchestra.frontend.early_returns import single_exit

FUNCTIONS = {
    "guard_clause": """
        def f(a, b, out):
            if not a:
                return
            out.append(1)
            if b:
                out.append(2)
                return
            out.append(3)
        """,
    "value_or_default": """
        def f(a, b, out):
            if a:
                return 0.25
            out.append(b)
            return 0.5
        """,
    "tail_if_else_and_elif": """
        def f(a, b, out):
            if a and b:
                return 1, 2
            elif a:
                out.append('a')
                return 3, 4
            else:
                return 5, 6
        """,
    "nested_partial_return": """
        def f(a, b, out):
            if a:
                if b:
                    return 7
                out.append('a, not b')
            out.append('after')
            return 8
        """,
}


def _compile(definition: ast.FunctionDef):
    namespace: dict = {}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[definition], type_ignores=[])), "<f>", "exec"),
         namespace)
    return namespace["f"]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_one_exit_computes_what_the_original_computes(name):
    original = ast.parse(textwrap.dedent(FUNCTIONS[name])).body[0]
    rewritten = ast.parse(textwrap.dedent(FUNCTIONS[name])).body[0]
    assert single_exit(rewritten, "model.py")
    returns = [node for node in ast.walk(rewritten) if isinstance(node, ast.Return)]
    assert len(returns) <= 1 and (not returns or rewritten.body[-1] is returns[0]), ast.unparse(rewritten)
    before, after = _compile(original), _compile(rewritten)
    for a, b in itertools.product((False, True), repeat=2):
        out_before, out_after = [], []
        assert before(a, b, out_before) == after(a, b, out_after), (a, b, ast.unparse(rewritten))
        assert out_before == out_after, (a, b)


def test_a_path_every_return_gives_is_returned_itself():
    """``return self.a`` on every path: no result variable (DaCe cannot assign a view twice)."""
    definition = ast.parse(textwrap.dedent("""
        def f(self, on, y):
            if not on:
                return self.a, y
            y = y + 1
            return self.a, y
        """)).body[0]
    assert single_exit(definition, "model.py")
    code = ast.unparse(definition)
    assert code.rstrip().endswith("return (self.a, __orchestra_result_1)"), code  # y is rebound: a variable
    assert "__orchestra_result_0" not in code


def test_a_single_final_return_is_left_alone():
    definition = ast.parse("def f(a):\n    b = a + 1\n    return b\n").body[0]
    assert not single_exit(definition, "model.py")


@pytest.mark.parametrize("source, message", [
    ("def f(n):\n    for i in range(n):\n        if i > 2:\n            return i\n    return 0\n",
     r"model\.py:4: f returns from inside a loop; .*`break`"),
    ("def f(a):\n    if a:\n        return 1\n    a = 2\n",
     r"model\.py:1: f returns a value on some paths and nothing on others"),
    ("def f(a):\n    if a:\n        return 1, 2\n    return 3\n",
     r"model\.py:1: f returns different numbers of values on different paths"),
])
def test_returns_that_cannot_be_moved_are_refused_naming_the_line(source, message):
    with pytest.raises(BuildError, match=message):
        single_exit(ast.parse(source).body[0], "model.py")
