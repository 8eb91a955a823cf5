"""Scalar arithmetic with Python's meaning, or refused: ``//``, ``%``, ``round(x)``, the values of ``and``/``or``.

DaCe compiles a scalar expression into C++ with C's operators, which differ
from Python's where the model's code would never notice in ``Python`` mode:
``n // 2`` and ``n % 2`` of a negative integer truncate toward zero
(Python floors: ``-3 // 2 == -2``, ``-3 % 2 == 1``), ``a % 2.0`` of floats
did not compile, ``round(2.5)`` rounds half away from zero (Python: to
even, ``2``), and ``a or 0.5`` is a ``bool`` (Python: ``0.5`` when ``a`` is
zero). Each gave silently different results, or a compiler error.

Here, before DaCe parses a function, ``a // b`` and ``a % b`` that read a
value known only at run time (outside indices and ``range`` bounds, which
DaCe evaluates symbolically, with Python's meaning) are written
``numpy.floor_divide(a, b)`` and ``numpy.mod(a, b)``, which DaCe compiles
with its ``py_floor`` and ``py_mod`` (Python's meaning; DaCe 2.0.0b1 has
them for operands of two types, ``int64_t`` and a literal ``int``, too).
``round(x)`` and the
value (not only the truth) of ``x or y`` / ``x and y`` of run-time values
where an operand is certainly a number, not a bool (``a or 0.5``), have no
compiled form with Python's meaning in DaCe: they are refused, naming the
line and the rewrite. A chained comparison (``0.0 < x < 1.0``, which DaCe's frontend does not
implement) is written as the ``and`` of its pairs when its middle operands
are names, paths or constants, which reading twice does not change.
Expressions of values fixed when parsing
(``self.n // 2``, ``round(self.dt)``) are left to DaCe, which evaluates them
in Python.
"""

from __future__ import annotations

import ast
import copy
import numbers
from typing import Any

import numpy

from orchestra.errors import BuildError
from orchestra.frontend.scope import ParseScope, is_access_path, path_names

#: the name the rewritten expressions call NumPy by (added to the parse's globals)
NUMPY = "__orchestra_numpy__"

_UFUNCS = {ast.FloorDiv: "floor_divide", ast.Mod: "mod"}


def python_arithmetic(function: ast.FunctionDef, scope: ParseScope, filename: str) -> int:
    """Rewrite ``function`` in place; returns how many expressions were rewritten.

    The rewritten expressions call NumPy as :data:`NUMPY`, which
    :mod:`orchestra.frontend.hook` adds to every parse's globals and modules.
    Raises :class:`~orchestra.errors.BuildError` for ``round(x)`` and the
    value of ``and``/``or`` of run-time values.
    """
    rewriter = _Rewriter(scope, _truth_tested(function), filename)
    rewriter.visit(function)
    return rewriter.count


def _truth_tested(function: ast.FunctionDef) -> set[int]:
    """ids of the ``and``/``or`` expressions whose truth alone is used (``if``, ``while``, ``not``...)."""
    tested: set[int] = set()
    pending = [node.test for node in ast.walk(function) if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert))]
    pending += [node.operand for node in ast.walk(function)
                if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.BoolOp):
            tested.add(id(node))
            pending.extend(node.values)
    return tested


class _Rewriter(ast.NodeTransformer):
    def __init__(self, scope: ParseScope, tested: set[int], filename: str) -> None:
        self.scope, self.tested, self.filename, self.count = scope, tested, filename, 0

    def _runtime(self, node: ast.AST) -> bool:
        """Whether ``node`` reads a value not fixed when parsing (an argument, a local variable)."""
        return bool(path_names(node) - self.scope.fixed)

    def _call(self, function: str, args: list[ast.expr], like: ast.AST) -> ast.expr:
        self.count += 1
        callee = ast.Attribute(value=ast.Name(id=NUMPY, ctx=ast.Load()), attr=function, ctx=ast.Load())
        return ast.copy_location(ast.Call(func=callee, args=args, keywords=[]), like)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node.value = self.visit(node.value)  # an index or slice is symbolic: DaCe floors there already
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        ufunc = _UFUNCS.get(type(node.op))
        if ufunc is None or not self._runtime(node):
            return node
        return self._call(ufunc, [node.left, node.right], node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        ufunc = _UFUNCS.get(type(node.op))
        if ufunc is None or not isinstance(node.target, ast.Name) or not self._runtime(node):
            return node
        value = self._call(ufunc, [ast.Name(id=node.target.id, ctx=ast.Load()), node.value], node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=value), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id == "range" and "range" not in self.scope.namespace:
            return node  # loop bounds are symbolic, as indices are
        self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id == "round" and "round" not in self.scope.namespace
                and len(node.args) == 1 and not node.keywords and self._runtime(node.args[0])):
            self._refuse(node, "round() of a run-time value compiles to C's round (half away from zero: "
                         "round(2.5) == 3, Python gives 2)", "write the rounding meant: math.floor(x + 0.5) "
                         "for half up, or compute it in a dace_inhibitor callback returning int")
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        """``a < b < c`` (DaCe: NotImplementedError) as ``a < b and b < c``, when ``b`` can be read twice."""
        self.generic_visit(node)
        if len(node.ops) < 2 or not all(is_access_path(middle) or isinstance(middle, ast.Constant)
                                        for middle in node.comparators[:-1]):
            return node
        operands = [node.left, *node.comparators]
        pairs = [ast.Compare(left=copy.deepcopy(operands[i]), ops=[op], comparators=[copy.deepcopy(operands[i + 1])])
                 for i, op in enumerate(node.ops)]
        self.count += 1
        combined = ast.copy_location(ast.BoolOp(op=ast.And(), values=pairs), node)
        self.tested.add(id(combined))  # a chain of comparisons is a bool: its value is its truth
        return ast.fix_missing_locations(combined)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if id(node) not in self.tested and self._runtime(node) and any(map(self._not_bool, node.values)):
            operator_ = "or" if isinstance(node.op, ast.Or) else "and"
            self._refuse(node, f"the value of `{operator_}` of run-time values compiles to a bool (Python gives "
                         "one of the operands: 0.0 or 0.5 == 0.5)", "use it only as a condition, or write the "
                         "value with an if statement")
        return node

    def _not_bool(self, node: ast.expr) -> bool:
        """Certainly a number, not a bool (``0.5``, ``dt * 2``, ``self.default_dt``): ``or`` would give it."""
        if isinstance(node, ast.Constant):
            value = node.value
        elif isinstance(node, ast.BinOp):
            return True
        else:
            value = self.scope.value_of(node)
        return isinstance(value, numbers.Number) and not isinstance(value, (bool, numpy.bool_))

    def _refuse(self, node: ast.expr, why: str, fix: str) -> None:
        raise BuildError(f"{self.filename}:{node.lineno}: `{ast.unparse(node)}`: {why}; {fix}")

