"""A helper called inside a stencil's or component's arguments is called on its own line first.

``self._axpy(x, self._target(), 0.5)`` is plain Python: ``_target`` runs,
then the stencil. DaCe parses it, but its closure resolution does not look
inside the arguments of a call to a stencil or component, so the call tree
the cache key is made of missed ``_target`` and whatever it calls, and the
parse audit refused the build as a hole in the key. Here each such call is
assigned to a new local on the line before the statement (Python evaluates
it there too: before the outer call, after the plainer arguments, which
have no effects), and the argument reads the local::

    __orchestra_argument_12_0 = self._target()
    self._axpy(x, __orchestra_argument_12_0, 0.5)

Only calls of the model's Python functions (helpers, methods, components)
inside the arguments of a call to something DaCe parses itself (a stencil,
a component) are moved; numpy, math and builtins stay where they are.
"""

from __future__ import annotations

import ast
import types
from typing import Any, Iterator

from orchestra.frontend.scope import MISSING, ParseScope, inner_blocks

#: Modules whose functions DaCe compiles in place (no parse of their source).
_LIBRARIES = frozenset({"builtins", "numpy", "math", "dace", "cupy"})

_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)


def hoist_calls_from_arguments(function: ast.FunctionDef, scope: ParseScope) -> bool:
    """Rewrite ``function`` in place; True if any call was moved."""
    changed = False
    for block in _blocks(function.body):
        index = 0
        while index < len(block):
            statement = block[index]
            hoisted = _hoist(statement, scope) if isinstance(statement, _SIMPLE) else []
            block[index:index] = hoisted
            index += len(hoisted) + 1
            changed = changed or bool(hoisted)
    return changed


def _blocks(body: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    yield body
    for statement in body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in inner_blocks(statement):
                yield from _blocks(inner)


def _hoist(statement: ast.stmt, scope: ParseScope) -> list[ast.stmt]:
    """Assignments of the model calls inside convertible calls' arguments; the statement reads them."""
    moved: dict[int, str] = {}
    inside_moved: set[int] = set()  # a moved call's own arguments move with it
    assignments: list[ast.stmt] = []
    for outer in [node for node in ast.walk(statement) if isinstance(node, ast.Call)]:
        if id(outer) in inside_moved or not _parsed_by_dace(scope.value_of(outer.func)):
            continue
        for argument in list(outer.args) + [keyword.value for keyword in outer.keywords]:
            for inner in _outermost_model_calls(argument, scope):
                name = f"__orchestra_argument_{statement.lineno}_{len(assignments)}"
                moved[id(inner)] = name
                inside_moved.update(id(node) for node in ast.walk(inner))
                assignments.append(ast.copy_location(
                    ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=inner), statement))
    if moved:
        _ReadMoved(moved).visit(statement)
    return assignments


def _outermost_model_calls(node: ast.AST, scope: ParseScope) -> Iterator[ast.Call]:
    """Model calls Python evaluates whenever ``node`` is: not in a branch of ``a if c else b``,
    after the first operand of ``and``/``or``, in a lambda or a comprehension."""
    if isinstance(node, ast.Call) and _model_function(scope.value_of(node.func)):
        yield node  # its own arguments move with it
        return
    if isinstance(node, ast.IfExp):
        children: list[ast.AST] = [node.test]
    elif isinstance(node, ast.BoolOp):
        children = node.values[:1]
    elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        children = []
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _outermost_model_calls(child, scope)


class _ReadMoved(ast.NodeTransformer):
    def __init__(self, moved: dict[int, str]) -> None:
        self.moved = moved

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = self.moved.get(id(node))
        if name is not None:
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _parsed_by_dace(value: Any) -> bool:
    return value is not MISSING and hasattr(value, "__sdfg__")


def _model_function(value: Any) -> bool:
    if value is MISSING:
        return False
    if hasattr(value, "__sdfg__"):
        return True
    function = value.__func__ if isinstance(value, types.MethodType) else value
    return isinstance(function, types.FunctionType) and \
        (function.__module__ or "").partition(".")[0] not in _LIBRARIES
