"""A callback's arguments read when it is called, as Python reads them, not when the program was parsed.

DaCe evaluates each argument of a callback call it can evaluate while
parsing (``self.halo.fill(self.a)``: ``self.a``) and keeps the *object* in
the callback, which then takes no argument. A model that later binds a new
array (``model.a = np.zeros(...)``) then has its compiled program fill the
old one: Python mode fills the new one (issue 54).

Inside :func:`live_callback_arguments` (part of
:func:`orchestra.frontend.hook.source_rewrites`), DaCe's ``flatten_callback``
still decides which arguments are fixed, but each such argument, other than
a literal, is re-read from its expression in the namespace DaCe evaluated it
in (the parsed function's globals, ``self`` included) each time the callback
runs: the object Python mode would pass at that moment.
"""

from __future__ import annotations

import ast
import contextlib
import copy
from typing import Any, Callable, Iterator


@contextlib.contextmanager
def live_callback_arguments() -> Iterator[None]:
    """Within the block, callbacks DaCe makes re-read their build-time arguments at each call."""
    from dace.frontend.python import preprocessing

    original = preprocessing.flatten_callback
    preprocessing.flatten_callback = _live(original)
    try:
        yield
    finally:
        preprocessing.flatten_callback = original


def _live(original: Callable) -> Callable:
    def flatten_callback(func: Callable, node: ast.Call, global_vars: dict[str, Any]) -> Callable:
        callback = original(func, node, global_vars)
        instructions = flattened(callback).get("instructions")
        if not isinstance(instructions, list) or not instructions:
            return callback
        written = list(node.args) + [keyword.value for keyword in node.keywords]
        for index, (position, unflatten, count, constant) in enumerate(instructions):
            if not constant or index >= len(written) or isinstance(written[index], ast.Constant):
                continue
            instructions[index] = (position, _reader(written[index], global_vars), count, constant)
        return callback

    return flatten_callback


def flattened(callback: Any) -> dict[str, Any]:
    """What DaCe's ``flatten_callback`` wrapper holds (``func``, ``keywords``, ``instructions``); {} for another callable.

    The wrapper keeps the callable and each argument's instruction in its
    closure; orchestra reads them to bind callbacks by identity
    (:mod:`orchestra.pipeline.callback_bindings`), name them, check scratch
    arrays given to them, and re-read their fixed arguments (here).
    """
    from dace.frontend.python import preprocessing

    code, cells = getattr(callback, "__code__", None), getattr(callback, "__closure__", None)
    if code is None or not cells or code.co_filename != preprocessing.__file__:
        return {}
    found = dict(zip(code.co_freevars, (cell.cell_contents for cell in cells)))
    return found if "func" in found else {}


def _reader(expression: ast.expr, namespace: dict[str, Any]) -> Callable[..., Any]:
    tree = ast.Expression(body=copy.deepcopy(expression))
    ast.fix_missing_locations(tree)
    code = compile(tree, "<callback argument>", "eval")

    def read(*_: Any) -> Any:
        return eval(code, namespace)

    return read
