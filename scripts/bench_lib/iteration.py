"""How many times a scope of an SDFG runs: iteration domains enumerated with numpy.

An :class:`IterationDomain` stands for the executions of one place in an
SDFG (a state inside maps, loops, nested SDFGs and branches). It holds one
row per distinct value of the symbols something below still reads (a map
parameter a horizontal-region condition tests, a loop variable a nested
SDFG receives), each row with a weight: how many executions it stands for.
A map parameter nothing below reads is not enumerated, it only multiplies
the weights. Conditions on symbols (``(__i >= 1) and (__i < 2)``) then
select rows exactly, and :meth:`IterationDomain.executions` is the sum of
the weights.

Expressions (sympy from map ranges and symbol mappings, Python from
conditions and loop statements) are evaluated by :func:`evaluate` over
these rows at once. A name with no value raises :class:`UnknownSymbol`:
the caller decides whether that is an error (a map range) or a
data-dependent branch (a condition on an array element).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import operator
from typing import Any, Callable, Mapping, Union

import numpy as np

#: A symbol's value: one for all rows, or one per row.
Value = Union[int, float, bool, np.ndarray]

#: Rows an iteration domain may enumerate before the count gives up (memory).
MAX_ROWS = 20_000_000


class UnknownSymbol(KeyError):
    """An expression reads a name that has no value here (a data container, an unset symbol)."""


def _reduce(function: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    return lambda *args: functools.reduce(function, args)


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitAnd: np.logical_and, ast.BitOr: np.logical_or,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "Min": _reduce(np.minimum), "min": _reduce(np.minimum), "Max": _reduce(np.maximum), "max": _reduce(np.maximum),
    "int_floor": operator.floordiv, "int_ceil": lambda a, b: -((-a) // b), "Mod": operator.mod, "Abs": abs,
    "abs": abs, "Eq": operator.eq, "Ne": operator.ne, "int": lambda a: a, "And": _reduce(np.logical_and),
    "Or": _reduce(np.logical_or), "Not": np.logical_not,
}


@functools.lru_cache(maxsize=None)
def _parse(text: str) -> ast.expr:
    return ast.parse(text.strip(), mode="eval").body


def evaluate(expression: Any, env: Mapping[str, Value]) -> Value:
    """``expression`` (a string or a sympy expression) with the names in ``env``; arrays evaluate per row."""
    return _value(_parse(str(expression)), env)


def _value(node: ast.expr, env: Mapping[str, Value]) -> Value:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise UnknownSymbol(node.id)
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value(node.left, env), _value(node.right, env))
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, env)
        if isinstance(node.op, (ast.Not, ast.Invert)):
            return np.logical_not(operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BoolOp):
        combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        return functools.reduce(combine, (_value(v, env) for v in node.values))
    if isinstance(node, ast.Compare):
        result, left = True, _value(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _value(right_node, env)
            result, left = np.logical_and(result, _COMPARE[type(op)](left, right)), right
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        return _FUNCTIONS[node.func.id](*(_value(a, env) for a in node.args))
    raise UnknownSymbol(ast.unparse(node))


@dataclasses.dataclass(frozen=True)
class IterationDomain:
    """Weighted rows of symbol values; ``weights.sum()`` executions in all."""

    weights: np.ndarray
    columns: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    scalars: Mapping[str, Value] = dataclasses.field(default_factory=dict)

    @classmethod
    def once(cls, scalars: Mapping[str, Value]) -> "IterationDomain":
        """One execution, with these symbols known."""
        return cls(np.ones(1, dtype=np.int64), {}, dict(scalars))

    @property
    def env(self) -> dict[str, Value]:
        return {**self.scalars, **self.columns}

    def executions(self) -> int:
        return int(self.weights.sum())

    def evaluate(self, expression: Any) -> Value:
        return evaluate(expression, self.env)

    def per_row(self, value: Value) -> np.ndarray:
        return np.broadcast_to(np.asarray(value), self.weights.shape)

    def repeat(self, name: str, begin: Value, end: Value, step: Value, enumerate_it: bool) -> "IterationDomain":
        """Every row once per value of ``name`` in ``begin..end`` (inclusive, by ``step``).

        Enumerated (one row per value) if something below reads ``name``, else
        only a weight: the rows stay as they are.
        """
        begin, end, step = (self.per_row(v).astype(np.int64) for v in (begin, end, step))
        sizes = np.maximum((end - begin) // step + 1, 0)
        if not enumerate_it:
            return dataclasses.replace(self, weights=self.weights * sizes)
        total = int(sizes.sum())
        if total > MAX_ROWS:
            raise MemoryError(f"enumerating {name} would need {total} rows (more than {MAX_ROWS})")
        starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
        values = np.repeat(begin, sizes) + np.repeat(step, sizes) * (np.arange(total) - starts)
        columns = {k: np.repeat(v, sizes) for k, v in self.columns.items()} | {name: values}
        scalars = {k: v for k, v in self.scalars.items() if k != name}
        return IterationDomain(np.repeat(self.weights, sizes), columns, scalars)

    def where(self, mask: Value) -> "IterationDomain":
        """The rows where ``mask`` holds."""
        keep = self.per_row(mask).astype(bool)
        return IterationDomain(self.weights[keep], {k: v[keep] for k, v in self.columns.items()}, self.scalars)

    def bind(self, values: Mapping[str, Value]) -> "IterationDomain":
        """The same rows seeing only ``values`` (entering a nested SDFG through its symbol mapping)."""
        columns = {k: self.per_row(v) for k, v in values.items() if np.ndim(v) > 0}
        scalars = {k: v for k, v in values.items() if np.ndim(v) == 0}
        return IterationDomain(self.weights, columns, scalars)

    def assign(self, values: Mapping[str, Value]) -> "IterationDomain":
        """The same rows with ``values`` added to what they see (an interstate assignment)."""
        return self.bind(self.env | dict(values))
