"""Model calls inside a stencil's arguments move to their own line: the rewrite itself, without a build.

The idiom corpus (``HelperInsideArguments``) runs it orchestrated against
Python mode.
"""

from __future__ import annotations

import ast
import math
import textwrap

import numpy as np

from orchestra.frontend.call_arguments import hoist_calls_from_arguments
from orchestra.frontend.scope import ParseScope


class _Stencil:
    def __sdfg__(self, *args, **kwargs):  # what marks an object DaCe parses itself
        raise NotImplementedError

    def __call__(self, *args):
        return None


class _Model:
    def __init__(self):
        self.stencil = _Stencil()

    def helper(self, q):
        return q

    def weight(self) -> float:
        return 0.5


def _rewrite(source: str) -> str:
    function = ast.parse(textwrap.dedent(source)).body[0]
    hoist_calls_from_arguments(function, ParseScope(function, {"self": _Model(), "np": np, "math": math}, ("q",)))
    return ast.unparse(function)


def test_model_calls_in_arguments_are_made_first_in_order():
    code = _rewrite("""
        def f(self, q):
            self.stencil(q, self.helper(self.helper(q)), self.weight() * 2.0)
        """)
    assert code.splitlines()[1:] == [
        "    __orchestra_argument_3_0 = self.helper(self.helper(q))",  # moved whole, once
        "    __orchestra_argument_3_1 = self.weight()",
        "    self.stencil(q, __orchestra_argument_3_0, __orchestra_argument_3_1 * 2.0)",
    ]


def test_library_calls_conditional_calls_and_calls_outside_convertible_calls_stay():
    source = """
        def f(self, q):
            self.stencil(q, np.sqrt(2.0), abs(-1.0), math.exp(0.5))
            self.stencil(q, self.helper(q) if q else self.weight(), True or self.weight())
            a = self.helper(q)
            if self.weight() > 0:
                self.helper(self.helper(q))
        """
    assert _rewrite(source) == ast.unparse(ast.parse(textwrap.dedent(source)).body[0])
