"""Locals the frontend writes out: bound in every branch of an ``if`` and used after it; a local list of paths.

The idiom corpus runs each form orchestrated against Python mode
(``StencilChosenInBranches``, ``ArrayChosenAtRunTime``, ``LocalListOfStencils``);
here the rewrites themselves, without a build: what they move, and what they leave.
"""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from orchestra.frontend.aliases import replace_aliases
from orchestra.frontend.branch_aliases import split_branch_aliases
from orchestra.frontend.scope import ParseScope

MODEL = SimpleNamespace(a=object(), b=object(), c=object(), flag=True, dt=0.5, dt2=0.25)


def _rewrite(source: str) -> tuple[int, str]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    count = split_branch_aliases(function, ParseScope(function, {"self": MODEL}, ("q", "p", "flip")))
    replace_aliases(function)
    return count, ast.unparse(function)


def test_the_statements_after_the_if_move_into_each_branch_with_its_object():
    count, code = _rewrite("""
        def f(self, q, p, flip):
            if flip:
                op = self.a
            elif self.flag:
                op = self.b
            else:
                op = self.c
            op(q, p)
            p[:] = 0.0
        """)
    assert count == 2  # the if, then the elif (the if of its else branch)
    assert code == textwrap.dedent("""\
        def f(self, q, p, flip):
            if flip:
                self.a(q, p)
                p[:] = 0.0
            elif self.flag:
                self.b(q, p)
                p[:] = 0.0
            else:
                self.c(q, p)
                p[:] = 0.0""")


def test_arrays_chosen_at_run_time_are_used_where_they_are_chosen():
    count, code = _rewrite("""
        def f(self, q, p, flip):
            if flip:
                src = q
            else:
                src = self.a
            self.b(src, p)
        """)
    assert count == 1 and "self.b(q, p)" in code and "self.b(self.a, p)" in code and "src" not in code


def test_a_default_bound_before_an_if_without_else_becomes_its_else():
    count, code = _rewrite("""
        def f(self, q, p, flip):
            op = self.a
            g = self.c
            if flip:
                op = self.b
            op(q, p)
            g(p, q)
        """)
    assert count == 1
    assert code == textwrap.dedent("""\
        def f(self, q, p, flip):
            if flip:
                self.b(q, p)
                self.c(p, q)
            else:
                self.a(q, p)
                self.c(p, q)""")


def test_a_parameter_given_a_default_in_an_if_takes_what_follows_into_both_branches():
    count, code = _rewrite("""
        def f(self, q, p, flip):
            if p is None:
                p = self.a
            self.b(q, p)
        """)
    assert count == 1
    assert code == textwrap.dedent("""\
        def f(self, q, p, flip):
            if p is None:
                self.b(q, self.a)
            else:
                self.b(q, p)""")


@pytest.mark.parametrize("source", [
    # the default is read before the if
    "def f(self, q, p, flip):\n    op = self.a\n    op(q, p)\n    if flip:\n        op = self.b\n    op(q, p)\n",
    # no else: not every path binds it
    "def f(self, q, p, flip):\n    if flip:\n        op = self.b\n    q[:] = 1.0\n",
    # read inside a branch too
    "def f(self, q, p, flip):\n    if flip:\n        op = self.a\n        op(q, p)\n    else:\n        op = self.b\n    op(q, p)\n",
    # numbers: DaCe reassigns scalars itself
    "def f(self, q, p, flip):\n    if flip:\n        dt = self.dt\n    else:\n        dt = self.dt2\n    self.a(q, p, dt)\n",
    # a branch that returns: what follows runs on the other path only
    "def f(self, q, p, flip):\n    if flip:\n        op = self.a\n        return\n    else:\n        op = self.b\n    op(q, p)\n",
    # bound by a call, not an access path
    "def f(self, q, p, flip):\n    if flip:\n        op = self.a()\n    else:\n        op = self.b\n    op(q, p)\n",
])
def test_other_bindings_are_left_to_dace(source):
    count, _ = _rewrite(source)
    assert count == 0


def test_a_local_list_of_paths_is_replaced_by_the_literal_where_only_its_elements_are_read():
    function = ast.parse(textwrap.dedent("""
        def f(self, q, p):
            ops = [self.a, self.b]
            for op in ops:
                op(q, p)
            ops[0](p, q)
            for i, op in enumerate(ops):
                op(q, p)
            kept = [self.a, q]
            kept.append(p)
            for op in kept:
                op(q, p)
        """)).body[0]
    replace_aliases(function)
    code = ast.unparse(function)
    assert "for op in [self.a, self.b]:" in code and "[self.a, self.b][0](p, q)" in code
    assert "enumerate([self.a, self.b])" in code
    assert "kept = [self.a, q]" in code and "for op in kept:" in code  # appended to: the list itself is used


def test_two_parameter_defaults_each_take_what_follows():
    count, code = _rewrite("""
        def f(self, q, p, flip):
            if q is None:
                q = self.a
            if p is None:
                p = self.b
            self.c(q, p)
        """)
    assert count == 3  # the first if, then the second in each of its copies
    calls = sorted(line.strip() for line in code.splitlines() if line.strip().startswith("self.c("))
    assert calls == ["self.c(q, p)", "self.c(q, self.b)", "self.c(self.a, p)", "self.c(self.a, self.b)"]
