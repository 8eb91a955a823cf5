"""Calls of a base class's method: ``super().__call__(q)``, ``Base.step(self, q)``.

A component that extends another calls the base's version of a method from
its own; DaCe refuses both spellings (``super()`` is a call it cannot parse,
and ``Base.step(self, q)`` passes the model object as an argument, which it
takes for data). In Python both are the base's function bound to the same
object. :func:`bind_base_calls` writes each such call as a call of that
bound method, held under a new global name (``__orchestra_base_12_1(q)``),
which DaCe parses as it parses ``self.helper(q)``: the base's function with
the object's attributes as its closure, keyed like any other callee.

``super()`` without arguments is resolved as Python resolves it: from the
class that defines the function being parsed, along the object's MRO. Only
calls whose object is fixed for the call (``self``, or another path to an
object the function reaches) are rewritten; anything else stays as written.
"""

from __future__ import annotations

import ast
import re
import types
from typing import Any, Optional

from orchestra.frontend.scope import MISSING, ParseScope

_PREFIX = "__orchestra_base"


def bind_base_calls(function: ast.FunctionDef, scope: ParseScope, parsed: Any) -> int:
    """Rewrite ``function`` in place (``parsed``: the Python function it is the source of); returns how many."""
    binder = _Binder(function, scope, parsed)
    binder.visit(function)
    return binder.count


def _defining_class(instance: Any, parsed: Any) -> Optional[type]:
    """The class in ``instance``'s MRO whose namespace holds ``parsed`` (the function DaCe parses)."""
    code = getattr(getattr(parsed, "__func__", parsed), "__code__", None)  # orchestra may parse a copy
    for cls in type(instance).__mro__:
        for value in vars(cls).values():
            if code is not None and getattr(getattr(value, "__func__", value), "__code__", None) is code:
                return cls
    return None


class _Binder(ast.NodeTransformer):
    def __init__(self, function: ast.FunctionDef, scope: ParseScope, parsed: Any) -> None:
        self.scope, self.parsed, self.count = scope, parsed, 0
        arguments = function.args.posonlyargs + function.args.args
        self.first = arguments[0].arg if arguments else None

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        bound = self._from_super(node) or self._from_base(node)
        if bound is None:
            return node
        method, arguments = bound
        self.count += 1
        # named by the method, never by a source line (a build's key must not change with a comment)
        name = f"{_PREFIX}_{re.sub(r'[^0-9A-Za-z_]', '_', method.__func__.__qualname__)}_{self.count}"
        self.scope.namespace[name] = method
        return ast.copy_location(
            ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=arguments, keywords=node.keywords), node)

    def _from_super(self, node: ast.Call) -> Optional[tuple[Any, list[ast.expr]]]:
        """``super().m(...)`` (no arguments to ``super``) in a method whose first parameter is fixed."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"
                and not func.value.args and not func.value.keywords and self.first is not None
                and "super" not in self.scope.namespace):
            return None
        instance = self.scope.value_of(ast.Name(id=self.first, ctx=ast.Load()))
        owner = _defining_class(instance, self.parsed) if instance is not MISSING else None
        if owner is None:
            return None
        method = getattr(super(owner, instance), func.attr, None)
        return (method, list(node.args)) if isinstance(method, types.MethodType) else None

    def _from_base(self, node: ast.Call) -> Optional[tuple[Any, list[ast.expr]]]:
        """``Base.m(obj, ...)``: a function of a class in ``obj``'s MRO, called with a fixed ``obj`` first."""
        if not isinstance(node.func, ast.Attribute) or not node.args or isinstance(node.args[0], ast.Starred):
            return None
        function = self.scope.value_of(node.func)
        owner = self.scope.value_of(node.func.value)
        instance = self.scope.value_of(node.args[0])
        if (function is MISSING or instance is MISSING or not isinstance(function, types.FunctionType)
                or not isinstance(owner, type) or owner not in type(instance).__mro__):
            return None
        return types.MethodType(function, instance), list(node.args[1:])
