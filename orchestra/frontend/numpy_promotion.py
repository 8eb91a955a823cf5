"""Mixed-precision arithmetic and comparisons in a model's code: NumPy's result, or refused.

``Python`` mode runs the orchestrated method's own code with NumPy 2, where a
Python ``float`` or ``int`` is *weak* (NEP 50): ``dt * f`` with ``dt`` a
``np.float32`` and ``f`` a Python float is computed in float32 (``f`` rounded
to float32 first), and ``dt > 0.1`` compares in float32 too. DaCe gives a
float64 value a program holds in a scalar (an argument, a callback's result,
a local variable) the type ``double``, and C++ compares ``float`` with
``double`` literals in double precision. A float32 model's glue code then
computes other numbers compiled than in ``Python`` mode, silently: another
rounding, or another branch taken.

Where DaCe's frontend types an operation (``result_type`` for dataflow, the
conditions of ``if``/``while`` it writes as C++ directly) this module checks
the pairs that can differ and refuses them with one message at the model's
line, saying which cast makes both modes agree (``np.float32(f)`` to compute
in float32 as NumPy does, ``np.float64(dt)`` for float64):

* arithmetic of a float16/float32 operand with a scalar (not a literal, not an
  array) that makes DaCe's result wider than NumPy's with a Python number;
* a comparison of a float16/float32 operand with a float64 scalar, or with a
  float literal the narrow type cannot hold exactly (``0.1``; ``0.5`` is fine);
* in a condition DaCe writes as C++, arithmetic of such an operand with a
  float64 scalar or an inexact float literal (C++ computes it in double).

Literals in dataflow arithmetic are already weak in DaCe (``dt * 0.1`` is
float32), arrays are strong in both (``a32 * b64`` is float64), and models
in float64 never meet any of this. A float64 scalar that ``Python`` mode holds
as ``np.float64`` (strong) is refused too: which one it holds is known only
at run time.
"""

from __future__ import annotations

import ast
import contextlib
import numbers
from typing import Any, Iterator, Optional

import numpy as np

from orchestra.errors import BuildError

_NARROW = (np.float16, np.float32)
#: the types DaCe gives a Python number it holds at run time (a narrower type is a NumPy scalar, strong in NumPy)
_PYTHON_NUMBER_TYPES = (np.float64, np.int64, np.bool_, np.complex128)
_COMPARISONS = {"Eq", "NotEq", "Lt", "LtE", "Gt", "GtE"}
_FIX = ("cast one side so that both modes compute alike: np.float32(x) computes in float32, as NumPy does with a "
        "Python number, np.float64(x) in float64 (docs/orchestration.md, \"Mixed precision\")")


class _Operand:
    """What the check needs of one operand: its numpy scalar type and where its value lives."""

    def __init__(self, kind: Optional[type], where: str, value: Any = None) -> None:
        self.kind = kind  #: numpy scalar type (np.float32, ...), None if unknown
        self.where = where  #: "array", "scalar" (a run-time scalar or symbol), "literal" or "unknown"
        self.value = value  #: a literal's value

    @property
    def narrow(self) -> bool:
        return self.kind in _NARROW

    def describe(self) -> str:
        if self.where == "literal":
            return f"the literal {self.value!r}"
        name = np.dtype(self.kind).name if self.kind is not None else "unknown"
        return f"a {name} {'array' if self.where == 'array' else 'scalar'}"


def _numpy_type(dtype: Any) -> Optional[type]:
    try:
        return np.dtype(getattr(dtype, "type", dtype)).type
    except TypeError:
        return None


def _operand(argument: Any) -> _Operand:
    """Describe one argument of DaCe's ``result_type`` (a descriptor, a number, a symbol or a type)."""
    from dace import data, dtypes, symbolic

    if isinstance(argument, (data.Array, data.Stream)):
        return _Operand(_numpy_type(argument.dtype), "array")
    if isinstance(argument, data.Scalar):
        return _Operand(_numpy_type(argument.dtype), "scalar")
    if isinstance(argument, (numbers.Number, np.bool_)):
        return _Operand(type(argument) if isinstance(argument, np.generic) else None, "literal", argument)
    if symbolic.issymbolic(argument):
        return _Operand(_numpy_type(symbolic.symtype(argument)), "scalar")
    if isinstance(argument, dtypes.typeclass):
        return _Operand(_numpy_type(argument), "scalar")
    return _Operand(None, "unknown")


def _exact_in(kind: type, value: Any) -> bool:
    """Whether the narrow float type ``kind`` holds the literal ``value`` exactly (then a comparison agrees)."""
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return True  # C++ converts the integer to the float type, as NumPy does with a Python int
    if isinstance(value, numbers.Real):
        with np.errstate(over="ignore"):
            return float(kind(value)) == float(value)
    return False


def _weak_result(narrow: type, other: _Operand) -> type:
    """NumPy 2's result type of the narrow type with ``other`` held as a Python number."""
    example = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}.get(np.dtype(other.kind).kind, 0.0)
    return np.result_type(narrow, example).type


def differing_operation(operator: Optional[str], first: _Operand, second: _Operand,
                        dace_result: Optional[type], in_cpp: bool = False) -> Optional[str]:
    """Why ``first <operator> second`` can compute other numbers compiled than in NumPy; None where it cannot.

    ``dace_result``: the type DaCe gives the result (None in a C++ condition,
    where C++'s promotion applies); ``in_cpp``: the operation is written as C++
    (a condition), not typed by DaCe's frontend.
    """
    for narrow, other in ((first, second), (second, first)):
        if not narrow.narrow or other.narrow or other.where == "array" or other.where == "unknown":
            continue
        if other.where == "literal":
            reason = _literal_reason(operator, narrow, other, in_cpp)
            if reason is not None:
                return reason
            continue
        if other.kind not in _PYTHON_NUMBER_TYPES:
            continue  # not a Python number in Python mode either: NumPy promotes as DaCe does
        if operator in _COMPARISONS or in_cpp:
            if np.dtype(other.kind).kind in "fc" and np.dtype(other.kind).itemsize > np.dtype(narrow.kind).itemsize:
                return (f"{narrow.describe()} meets {other.describe()}: NumPy rounds a Python float to "
                        f"{np.dtype(narrow.kind).name} first, the compiled program computes in double precision")
            continue
        weak = _weak_result(narrow.kind, other)
        if dace_result is not None and weak in _NARROW and dace_result is not weak:
            return (f"{narrow.describe()} meets {other.describe()}: NumPy computes a Python number with it in "
                    f"{np.dtype(weak).name}, the compiled program in {np.dtype(dace_result).name}")
    return None


def _literal_reason(operator: Optional[str], narrow: _Operand, literal: _Operand, in_cpp: bool) -> Optional[str]:
    """Why a narrow operand with a literal can differ: a comparison with a literal the narrow type cannot
    hold, or (in C++, where a float literal is a double) arithmetic with a float literal."""
    if isinstance(literal.value, np.generic):
        return None  # strong in NumPy too: its promotion is C++'s
    name = np.dtype(narrow.kind).name
    if operator in _COMPARISONS and not _exact_in(narrow.kind, literal.value):
        return (f"{narrow.describe()} is compared with {literal.describe()}, which {name} cannot hold exactly: "
                f"NumPy rounds it to {name} first, the compiled program compares in double precision")
    if in_cpp and operator not in _COMPARISONS and isinstance(literal.value, float):
        return (f"{narrow.describe()} meets {literal.describe()} in a condition compiled as C++, where a float "
                f"literal is a double: NumPy computes in {name}, the compiled program in double precision")
    return None


def _refuse(reason: str, what: str) -> BuildError:
    return BuildError(f"{what}: {reason}, so the two modes can differ; {_FIX}")


def _checked_result_type(original: Any) -> Any:
    def result_type(arguments: Any, operator: Optional[str] = None) -> Any:
        restype, casting = original(arguments, operator)
        if len(arguments) == 2 and not isinstance(restype, (list, tuple)):
            first, second = _operand(arguments[0]), _operand(arguments[1])
            reason = differing_operation(operator, first, second, _numpy_type(restype))
            if reason is not None:
                raise _refuse(reason, f"mixed precision in {operator or 'an operation'}")
        return restype, casting

    return result_type


class _ConditionTypes:
    """Types of the names in a condition DaCe writes as C++, from the visitor that parses it."""

    def __init__(self, visitor: Any) -> None:
        self.visitor = visitor

    def operand(self, node: ast.expr) -> _Operand:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return _Operand(None, "literal", node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.operand(node.operand)
            if inner.where == "literal":
                return _Operand(None, "literal", -inner.value if isinstance(node.op, ast.USub) else inner.value)
            return inner
        if isinstance(node, ast.Name):
            return self._named(node.id)
        if isinstance(node, ast.BinOp):
            left, right = self.operand(node.left), self.operand(node.right)
            kinds = [operand.kind for operand in (left, right) if operand.kind is not None]
            if len(kinds) == 2 and left.where != "literal" and right.where != "literal":
                return _Operand(np.promote_types(*kinds).type, "scalar")
            return left if left.where != "literal" else right
        return _Operand(None, "unknown")

    def _named(self, name: str) -> _Operand:
        from dace import data

        sdfg = self.visitor.sdfg
        name = self.visitor.variables.get(name, name)
        if name in sdfg.arrays:
            descriptor = sdfg.arrays[name]
            return _Operand(_numpy_type(descriptor.dtype), "scalar" if isinstance(descriptor, data.Scalar) else "array")
        if name in sdfg.symbols:
            return _Operand(_numpy_type(sdfg.symbols[name]), "scalar")
        return _Operand(None, "unknown")


def check_condition(visitor: Any, test: ast.expr) -> None:
    """Refuse a condition DaCe writes as C++ whose comparisons or arithmetic differ from NumPy's (module doc)."""
    types = _ConditionTypes(visitor)
    for node in ast.walk(test):
        pairs: list[tuple[Optional[str], ast.expr, ast.expr]] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            pairs = [(type(op).__name__, left, right) for op, left, right in zip(node.ops, operands, operands[1:])]
        elif isinstance(node, ast.BinOp):
            pairs = [(None, node.left, node.right)]
        for operator, left, right in pairs:
            reason = differing_operation(operator, types.operand(left), types.operand(right), None, in_cpp=True)
            if reason is not None:
                raise _refuse(reason, f"mixed precision in the condition `{ast.unparse(test)}`")


def _checked_test(original: Any) -> Any:
    def _visit_test(self: Any, node: ast.expr) -> Any:
        if self._is_test_simple(node):  # written as C++ as it stands; a complex test goes through result_type
            check_condition(self, node)
        return original(self, node)

    return _visit_test


@contextlib.contextmanager
def numpy_promotion_checked() -> Iterator[None]:
    """Within the block, DaCe's frontend refuses operations whose compiled result can differ from NumPy's."""
    from dace.frontend.python import newast
    from dace.frontend.python.replacements import operators

    from orchestra.toolchain.stand_in import standing_in

    with standing_in(operators, {"result_type": _checked_result_type(operators.result_type)}), \
            standing_in(newast.ProgramVisitor, {"_visit_test": _checked_test(newast.ProgramVisitor._visit_test)}):
        yield
