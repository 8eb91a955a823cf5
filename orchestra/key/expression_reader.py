"""Reading a DaCe closure expression (``self.grid.rarea``, ``NAMES[2]``) again, cheaply, on every call.

DaCe names what a program read from Python by an expression in the
program's namespace. orchestra reads these again on every call (the folded
values, :mod:`orchestra.key.folded_values`; the closure arrays,
:mod:`orchestra.calls.fast_path`), so each read must cost a fraction of a
microsecond: ``eval`` of a compiled expression with a locals dict costs
about 1 us, 50 of them a call's whole budget.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from typing import Any, Callable, Optional

ATTRIBUTE_CHAIN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
#: the nodes of a plain access: names, attributes, subscripts by constants (``self.tracers['qv']``, ``q[-1]``)
_ACCESS_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple, ast.Load,
                 ast.UnaryOp, ast.USub)


def expression_reader(expression: str, globals_: dict, locals_: dict) -> Callable[[], Any]:
    """A function reading ``expression`` now, as ``eval(expression, globals_, locals_)`` would.

    The objects ``locals_`` holds are fixed for the program (``self``, closure
    cells): they are bound once. A module global is looked up on each read
    (a module constant, read live). An attribute chain is read by
    ``operator.attrgetter`` (about 0.1 us); another plain access (subscripts
    by constants) by a function compiled once (about 0.15 us); anything else
    is compiled once and evaluated.

    >>> class Model: tracers = {"qv": 1.0}
    >>> expression_reader("self.tracers['qv']", {}, {"self": Model()})()
    1.0
    """
    root, _, rest = expression.partition(".")
    if ATTRIBUTE_CHAIN.fullmatch(expression) and root in locals_:
        obj = locals_[root]
        return (lambda: obj) if not rest else functools.partial(operator.attrgetter(rest), obj)
    if ATTRIBUTE_CHAIN.fullmatch(expression) and root in globals_:
        if not rest:
            return lambda: globals_[root]
        chain = operator.attrgetter(rest)
        return lambda: chain(globals_[root])
    names = _access_names(expression)
    if names is not None:
        bound = sorted(name for name in names if name in locals_)
        function = eval(compile(f"lambda {', '.join(bound)}: ({expression})", f"<orchestra {expression}>", "eval"),
                        globals_)  # noqa: S307 (DaCe's own expression, as a function of the fixed objects)
        return functools.partial(function, *(locals_[name] for name in bound))
    code = compile(expression, f"<orchestra {expression}>", "eval")
    return lambda: eval(code, globals_, locals_)  # noqa: S307 (DaCe's own expression)


def _access_names(expression: str) -> Optional[set[str]]:
    """The names a plain access expression reads; None for anything else (calls, operators, comprehensions)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return None
    nodes = list(ast.walk(tree))
    if not all(isinstance(node, _ACCESS_NODES) for node in nodes):
        return None
    return {node.id for node in nodes if isinstance(node, ast.Name)}


def subscript_of(expression: str) -> Optional[tuple[str, Any]]:
    """``(base, index)`` for ``base[constant]`` with ``base`` a plain access, else None.

    >>> subscript_of("NAMES[3]"), subscript_of("self.n")
    (('NAMES', 3), None)
    """
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.Subscript) or not isinstance(tree.slice, ast.Constant):
        return None
    base = ast.unparse(tree.value)
    return (base, tree.slice.value) if _access_names(base) is not None else None
