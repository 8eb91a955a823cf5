"""NumPy calls the compiled program would compute otherwise than NumPy: refused, naming the line and the fix.

The refused idioms (``tests/idioms/refused.py``) go through a whole build;
here the check alone, without one, on what it refuses and what it leaves
alone. The first test measures the premise on this machine: NumPy's exp and
sum are not the C library's exp and a sequential sum, bit for bit.
"""

from __future__ import annotations

import ast
import math
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from orchestra.errors import BuildError
from orchestra.frontend.numpy_calls import refuse_inexact_numpy
from orchestra.frontend.scope import ParseScope

MODEL = SimpleNamespace(dt=0.5, weights=np.linspace(0.0, 1.0, 24).reshape(2, 3, 4), n=3)


def _check(source: str, arrays=("q", "p")) -> None:
    function = ast.parse(textwrap.dedent(source)).body[0]
    namespace = {"self": MODEL, "np": np, "numpy": np, "math": math, "exp": np.exp}
    refuse_inexact_numpy(function, ParseScope(function, namespace, ("q", "p", "a")), "model.py", arrays)


def test_numpy_is_not_the_c_library_here():
    """What the check protects: on this machine NumPy's results differ from the compiled ones."""
    values = np.random.default_rng(0).uniform(-5.0, 5.0, 20000)
    assert any(np.exp(v) != math.exp(v) for v in values)  # C's exp is what Python's math calls
    total = 0.0
    for v in values:
        total += v
    assert np.sum(values) != total or np.sum(values[:1000]) != math.fsum(values[:1000])


@pytest.mark.parametrize("statement, said", [
    ("p[:] = np.exp(q)", r"`np\.exp\(q\)`: NumPy computes exp .*math\.exp"),
    ("p[:] = exp(q * 2.0)", r"`exp\(q \* 2\.0\)`: NumPy computes exp"),  # imported by name
    ("b = np.tanh(a)", r"`np\.tanh\(a\)`: .*math\.tanh"),  # a run-time number: NumPy's tanh too
    ("p[:] = np.arctan2(q, p)", r"`np\.arctan2\(q, p\)`: .*math\.atan2"),
    ("b = np.sum(q)", r"`np\.sum\(q\)`: NumPy's sum adds up in its own order"),
    ("b = numpy.mean(self.weights)", r"`numpy\.mean\(self\.weights\)`"),  # an array the model holds
    ("b = np.linalg.norm(q[:, 0, 0])", r"`np\.linalg\.norm\(q\[:, 0, 0\]\)`: NumPy's linalg\.norm"),
    ("b = q.sum()", r"`q\.sum\(\)`: `\.sum\(\)` of an array"),
    ("b = (q * p).mean()", r"`\(q \* p\)\.mean\(\)`: `\.mean\(\)` of an array"),
    ("b = q[:, 0, 0] @ p[:, 0, 0]", r"`q\[:, 0, 0\] @ p\[:, 0, 0\]`: `@` of arrays"),
    ("p[:] = q ** 3", r"`q \*\* 3`: `\*\*` of an array"),
    ("p[:] = np.abs(q) ** 1.5", r"`np\.abs\(q\) \*\* 1\.5`: `\*\*` of an array"),
    ("p[:] = self.weights ** a", r"`self\.weights \*\* a`: `\*\*` of an array"),
])
def test_numpy_calls_on_run_time_values_are_refused_naming_the_line(statement, said):
    with pytest.raises(BuildError, match=r"model\.py:3: " + said):
        _check(f"def f(self, q, p, a):\n    x = 1\n    {statement}\n")


@pytest.mark.parametrize("statement", [
    "b = np.exp(self.dt) + np.sum(np.arange(3.0))",  # fixed when parsing: DaCe evaluates it in Python
    "b = math.exp(a) + math.tanh(a)",  # the C library's in both modes
    "p[:] = np.sqrt(np.abs(q)) + np.minimum(q, p) + np.where(q > 0.0, q, p)",  # exact (IEEE)
    "b = np.max(q) + np.min(self.weights) + np.amax(p)",  # order does not matter
    "p[:] = q ** 2 + (q + 3.0) ** -1 + np.abs(q) ** 0.5",  # NumPy's exact fast paths
    "b = a ** 1.7 + self.dt ** a",  # numbers: the C library's pow in both modes
    "p[:] = np.cumsum(q, axis=2)",  # sequential in both
])
def test_exact_and_fixed_numpy_is_left_alone(statement):
    _check(f"def f(self, q, p, a):\n    x = 1\n    {statement}\n")
