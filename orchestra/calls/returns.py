"""What an orchestrated call returns: the objects ``Python`` mode returns, not DaCe's copies."""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Optional


class ReturnedObjects:
    """What the function returns when every ``return`` names parameters or ``self`` paths (``return fx, self.q``).

    Python returns those very objects; DaCe returns copies of arrays (and a
    one-element array for a number). When the source says what is returned,
    the call returns the objects themselves, read after the program ran:
    writing into them writes into the model's arrays, as in ``Python`` mode
    (:func:`orchestra.frontend.returns.returned_paths`).
    """

    def __init__(self, names: list[str], method_object: Any, expressions: list[Any], single: bool) -> None:
        self._names, self._method_object, self._expressions, self._single = names, method_object, expressions, single

    @classmethod
    def of(cls, function: Callable, method_object: Any) -> Optional["ReturnedObjects"]:
        import ast

        from orchestra.frontend.returns import returned_paths, returns_tuple

        paths = returned_paths(function) if isinstance(function, types.FunctionType) else None
        if paths is None:
            return None
        names = list(inspect.signature(function).parameters)
        expressions = [compile(ast.Expression(body=path), "<orchestra return>", "eval") for path in paths]
        return cls(names, method_object, expressions, single=not returns_tuple(function))

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        names = self._names[1:] if self._method_object is not None else self._names
        scope = dict(zip(names, args)) | kwargs
        if self._method_object is not None:
            scope[self._names[0]] = self._method_object
        values = tuple(eval(code, {}, scope) for code in self._expressions)  # noqa: S307 (parameter paths)
        return values[0] if self._single else values
