"""NumPy calls the compiled program cannot compute as NumPy does: refused at parse time, naming the fix.

In ``Python`` mode a model's ``np.exp(q)`` or ``np.sum(q)`` runs NumPy's
own code: its vectorized transcendental functions (exp, log, tanh, power,
arctan2... on this machine's AVX-512, not the C library's) and its pairwise
summation. DaCe compiles the same calls into loops over the C library's
``exp`` and sums in another order, so the orchestrated program differs from
``Python`` mode in the last bits (measured here: ``np.exp`` of 20 000
values, 944 differ; ``np.log`` 34; ``np.sum`` of 126 values, 1 ulp), and
nothing tells the model developer why a port validates in one mode and not
in the other. The same calls on values fixed when parsing (``np.exp(self.dt)``)
are evaluated by DaCe in Python and stay exact; ``np.max``, ``np.abs``,
``np.sqrt``, ``np.minimum``, ``np.where`` and arithmetic are exact (IEEE),
compiled or not.

:func:`refuse_inexact_numpy` refuses, for a function DaCe is about to parse:

- a NumPy transcendental function (:data:`TRANSCENDENTAL`) or an
  order-dependent reduction (:data:`REDUCTIONS`) called on a run-time value
  (an argument, a local variable, an array the model holds);
- the reduction methods ``.sum()``, ``.mean()``, ``.std()``, ``.var()``,
  ``.prod()``, ``.dot()`` and the ``@`` operator on such values;
- ``a ** b`` where ``a`` or ``b`` is an array, but for the exponents NumPy
  computes exactly (``2``, ``0.5``, ``-1``, ``1``, ``0``): NumPy's vectorized
  power (``**`` of numbers is the C library's ``pow`` in both modes).

The message names the line and the rewrite: ``math.exp`` for a number (the C
library's in both modes), a stencil (gt4py compiles the same C++ in both
modes) or a ``dace_inhibitor`` callback (NumPy in both modes) for arrays.
Array-ness is known for arguments (DaCe's descriptors), arrays the model
holds and expressions of them; a local bound to an array expression is not
followed (its ``**`` is not refused).
"""

from __future__ import annotations

import ast
import functools
from typing import Any, Iterable

import numpy

from orchestra.key.array_like import is_array_like
from orchestra.errors import BuildError
from orchestra.frontend.scope import MISSING, ParseScope, path_names

#: NumPy functions with their own vectorized implementations (not the C library's), by name.
TRANSCENDENTAL = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin",
                  "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
                  "power", "float_power", "cbrt", "hypot", "logaddexp", "logaddexp2")
#: NumPy reductions whose result depends on the order of the operations (NumPy: pairwise sums, BLAS).
REDUCTIONS = ("sum", "nansum", "mean", "nanmean", "average", "std", "nanstd", "var", "nanvar", "prod",
              "nanprod", "dot", "vdot", "inner", "matmul", "tensordot", "einsum", "trace")
#: Exponents NumPy computes exactly (x * x, sqrt, 1 / x...), as the compiled program does.
_EXACT_EXPONENTS = (0, 1, 2, -1, 0.5)
_METHODS = {"sum", "mean", "std", "var", "prod", "dot"}
_MATH_NAMES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh",
               "arccosh": "acosh", "arctanh": "atanh", "power": "pow", "float_power": "pow"}


@functools.lru_cache(maxsize=None)
def _numpy_functions() -> dict[int, tuple[str, str]]:
    """id of each refused NumPy callable -> (its name, "transcendental" or "reduction")."""
    table = {id(getattr(numpy, name)): (name, "transcendental") for name in TRANSCENDENTAL if hasattr(numpy, name)}
    table.update({id(getattr(numpy, name)): (name, "reduction") for name in REDUCTIONS if hasattr(numpy, name)})
    table[id(numpy.linalg.norm)] = ("linalg.norm", "reduction")
    return table


def refuse_inexact_numpy(function: ast.FunctionDef, scope: ParseScope, filename: str, arrays: Iterable[str]) -> None:
    """Raise :class:`~orchestra.errors.BuildError` at the first refused call in ``function``.

    ``arrays``: the names of the run-time arguments that are arrays.
    """
    _Checker(scope, filename, set(arrays)).visit(function)


class _Checker(ast.NodeVisitor):
    def __init__(self, scope: ParseScope, filename: str, arrays: set[str]) -> None:
        self.scope, self.filename, self.arrays = scope, filename, arrays
        self.functions = _numpy_functions()

    # ------------------------------------------------------------ what is computed at run time
    def _holds_array(self, value: Any) -> bool:
        return value is not MISSING and is_array_like(value) and bool(getattr(value, "shape", ()))

    def _runtime(self, node: ast.AST) -> bool:
        """Whether the program computes ``node`` at run time (it reads an argument, a local or a held array)."""
        if path_names(node) - self.scope.fixed:
            return True
        return any(self._holds_array(self.scope.value_of(part)) for part in ast.walk(node)
                   if isinstance(part, (ast.Name, ast.Attribute, ast.Subscript)))

    def _is_array(self, node: ast.AST) -> bool:
        """Whether ``node`` certainly evaluates to an array (not a number)."""
        if isinstance(node, ast.Name) and node.id in self.arrays:
            return True
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._holds_array(self.scope.value_of(node))
        if isinstance(node, ast.Subscript):
            sliced = any(isinstance(part, ast.Slice) for part in ast.walk(node.slice))
            return sliced and self._is_array(node.value)
        if isinstance(node, ast.BinOp):
            return self._is_array(node.left) or self._is_array(node.right)
        if isinstance(node, ast.UnaryOp):
            return self._is_array(node.operand)
        if isinstance(node, ast.Call):  # a NumPy function of an array gives an array
            module = getattr(self.scope.value_of(node.func), "__module__", None) or ""
            return module.startswith("numpy") and any(self._is_array(argument) for argument in node.args)
        return False

    # ------------------------------------------------------------ the checks
    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        operands = [*node.args, *(keyword.value for keyword in node.keywords)]
        value = self.scope.value_of(node.func)
        entry = None if value is MISSING else self.functions.get(id(value))
        if entry is not None and any(self._runtime(operand) for operand in operands):
            name, kind = entry
            if kind == "transcendental":
                self._refuse(node, f"NumPy computes {name} with its own vectorized code, the compiled program "
                             "with the C library's: they differ in the last bits, so the program would not "
                             "compute what Python mode computes",
                             f"for a number use math.{_MATH_NAMES.get(name, name)} (the C library's in both "
                             "modes); for arrays compute it in a stencil or in a dace_inhibitor callback")
            self._refuse(node, f"NumPy's {name} adds up in its own order (pairwise), the compiled program in "
                         "another: they differ in the last bits, so the program would not compute what Python "
                         "mode computes", "compute it in a dace_inhibitor callback (annotated `-> float` when "
                         "it returns a number) or in a stencil")
        if (isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS and value is MISSING
                and self._runtime(node.func.value)):
            self._refuse(node, f"`.{node.func.attr}()` of an array adds up in NumPy's order in Python mode and "
                         "in another in the compiled program: they differ in the last bits",
                         "compute it in a dace_inhibitor callback (annotated `-> float` when it returns a "
                         "number) or in a stencil")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult) and self._runtime(node):
            self._refuse(node, "`@` of arrays adds up in NumPy's (BLAS) order in Python mode and in another in "
                         "the compiled program: they differ in the last bits",
                         "compute it in a dace_inhibitor callback or in a stencil")
        exact_exponent = _literal(node.right) in _EXACT_EXPONENTS
        if (isinstance(node.op, ast.Pow) and not exact_exponent
                and (self._is_array(node.left) or self._is_array(node.right))):
            self._refuse(node, "`**` of an array is NumPy's vectorized power in Python mode and the C "
                         "library's pow in the compiled program: they differ in the last bits",
                         "compute it in a stencil (the same C++ in both modes), or in a dace_inhibitor callback; "
                         "`**` of numbers is exact")

    def _refuse(self, node: ast.expr, why: str, fix: str) -> None:
        raise BuildError(f"{self.filename}:{node.lineno}: `{ast.unparse(node)}`: {why}; {fix}")


def _literal(node: ast.AST) -> Any:
    """The value of a literal (``2``, ``-1``, ``0.5``), else None."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
