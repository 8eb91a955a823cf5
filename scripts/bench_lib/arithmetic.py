"""Floating-point operations in one execution of a piece of tasklet code.

Weights, one flop each (reported per kind, since they do not cost the same):

``add_sub``, ``mul``, ``div``
    ``+ - * /`` (also ``//``, ``%`` and augmented assignments). ``x ** n``
    with a constant n in 2..4 is n - 1 multiplications.
``min_max_abs``
    ``min``, ``max`` (n - 1 for n arguments), ``abs``, ``fabs``: one compare
    or mask on the data path.
``math``
    each call of a math function (``sqrt``, ``exp``, ``log``, ``pow``, the
    trigonometric ones) and any other power: counted as 1 although one costs
    a sequence of instructions (a square root or a division occupies a
    unit for several cycles: ``div`` and ``math`` are kept apart for that).

Not counted: operations on constants alone (``double(7.0) / double(12.0)``:
the compiler folds them), unary minus (a sign flip), comparisons and boolean
operators, casts (``double(0.5)``), copies, calls of unknown functions
(callbacks into Python: :class:`TaskletCost` lists their names).

Branches inside the code (``if``, ``a if c else b``) count the test and the
costlier side; ``bounded`` says how many had sides of different cost (the
count is then an upper bound).
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
from typing import Optional

KINDS = ("add_sub", "mul", "div", "min_max_abs", "math")
_BINARY_KIND = {ast.Add: "add_sub", ast.Sub: "add_sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "div",
                ast.Mod: "div"}
_MIN_MAX_ABS = {"min", "max", "abs", "fabs", "fmin", "fmax", "Min", "Max", "Abs", "minimum", "maximum"}
_MATH = {"sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "power", "sin", "cos", "tan",
         "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "hypot", "erf", "floor", "ceil", "round", "trunc"}
_CASTS = {"double", "float", "int", "bool", "float64", "float32", "int32", "int64", "float_", "type"}

Ops = collections.Counter  # kind -> operations


@dataclasses.dataclass(frozen=True)
class TaskletCost:
    """Operations of one execution of a piece of code; ``bounded``: data-dependent branches at their costliest."""

    ops: Ops
    bounded: int = 0
    unknown_calls: frozenset = frozenset()


def total(ops: Ops) -> int:
    """All operations, whatever their kind."""
    return sum(ops.values())


def _call_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ast.unparse(func))


def _constant(node: ast.AST) -> bool:
    """Whether ``node`` is a number, or arithmetic and casts on numbers alone."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    if isinstance(node, ast.Call):
        return _call_name(node.func) in _CASTS and all(_constant(a) for a in node.args)
    return False


def _cost(node: ast.AST) -> TaskletCost:
    """Operations in ``node`` (an ``ast`` tree of tasklet code)."""
    ops, bounded, unknown = Ops(), 0, set()

    def add(cost: TaskletCost) -> None:
        nonlocal bounded
        ops.update(cost.ops)
        bounded += cost.bounded
        unknown.update(cost.unknown_calls)

    if isinstance(node, (ast.If, ast.IfExp)):
        body = _cost_all(node.body if isinstance(node.body, list) else [node.body])
        orelse = _cost_all(node.orelse if isinstance(node.orelse, list) else [node.orelse])
        add(_cost(node.test))
        add(max(body, orelse, key=lambda c: total(c.ops)))
        differ = total(body.ops) != total(orelse.ops)  # equal costs: the count is exact
        return TaskletCost(ops, bounded + differ, frozenset(unknown))
    if _constant(node):
        return TaskletCost(ops)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        exponent = node.right.value if isinstance(node.right, ast.Constant) else None
        if exponent in (2, 3, 4, 2.0, 3.0, 4.0):
            ops["mul"] += int(exponent) - 1
        else:
            ops["math"] += 1
    elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINARY_KIND:
        ops[_BINARY_KIND[type(node.op)]] += 1
    elif isinstance(node, ast.Call):
        name = _call_name(node.func)
        if name in _MIN_MAX_ABS:
            ops["min_max_abs"] += max(len(node.args) - 1, 1)
        elif name in _MATH:
            ops["math"] += 1
        elif name not in _CASTS:
            unknown.add(name)
        for argument in node.args:
            add(_cost(argument))
        return TaskletCost(ops, bounded, frozenset(unknown))
    for child in ast.iter_child_nodes(node):
        add(_cost(child))
    return TaskletCost(ops, bounded, frozenset(unknown))


def _cost_all(statements: list) -> TaskletCost:
    return _cost(ast.Module(body=[s if isinstance(s, ast.stmt) else ast.Expr(s) for s in statements], type_ignores=[]))


@functools.lru_cache(maxsize=None)
def code_cost(code: str, python: bool = True) -> Optional[TaskletCost]:
    """Operations of one execution of tasklet code; None if the code cannot be read.

    C++ tasklets are read as Python once their semicolons and declarations
    are dropped (``out = a * b + c;``); anything else is not counted.
    """
    if not python:
        code = "\n".join(line.strip().rstrip(";").removeprefix("auto ").removeprefix("double ")
                         for line in code.splitlines())
    try:
        return _cost(ast.parse(code))
    except SyntaxError:
        return None
