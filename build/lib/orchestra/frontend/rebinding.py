"""A name bound again is a new variable, as in Python: ``x = x * 2.0`` does not write into the caller's ``x``.

DaCe compiles ``name = expression`` where ``name`` already stands for an
array as a copy *into* that array. For an array argument that is the
caller's array: ``def __call__(self, x, y): x = x * 2.0`` doubled the
caller's ``x`` (a probe: the caller's array changed, silently; in Python the
local ``x`` is a new array and the caller's is untouched).

:func:`rename_rebound_names` gives every rebinding at the top level of the
function a new name (``x__orchestra_2``), used by the statements after it,
exactly as Python's scoping reads them (static single assignment over
straight-line code); later updates (``x += 1``, assignments inside a block)
update the new variable.
:func:`refuse_rebound_arguments`, run after the other rewrites, refuses an
array argument still assigned inside a block (an ``if`` whose branches the
branch rewrite could not take apart, a loop, a ``with``), where the name a
later statement reads depends on the path taken. In-place updates
(``x[:] = ...``, ``x += ...``) are not rebindings and stay as written.
"""

from __future__ import annotations

import ast
from typing import Iterable

from orchestra.errors import BuildError
from orchestra.frontend.scope import NameSubstitution, parameter_names, stored_names

_SUFFIX = "__orchestra_"


def rename_rebound_names(function: ast.FunctionDef) -> int:
    """Rewrite ``function`` in place; returns how many rebindings got a new name."""
    bound = set(parameter_names(function))
    current: dict[str, str] = {}
    versions: dict[str, int] = {}
    count = 0
    for index, statement in enumerate(function.body):
        targets, nested = _top_level_targets(statement), _bound_inside_blocks(statement)  # the names as written
        if current:  # earlier rebindings: this statement reads and updates (x += 1, blocks) the new variables
            statement = function.body[index] = _Reads(current).visit(statement)
            _Stores(current).visit(statement)
        for name in targets:
            if name in bound:
                versions[name] = versions.get(name, 1) + 1
                new = f"{name}{_SUFFIX}{versions[name]}"
                _Stores({current.get(name, name): new}).visit(statement)
                current[name] = new
                count += 1
            else:
                bound.add(name)
        bound |= nested
    return count


def refuse_rebound_arguments(function: ast.FunctionDef, filename: str, arrays: Iterable[str]) -> None:
    """Raise :class:`~orchestra.errors.BuildError` where an array argument is still assigned after the rewrites.

    Run after the other rewrites: a top-level rebinding was renamed, and a
    parameter given a default in an ``if`` (:mod:`.branch_aliases`) no longer
    assigns the parameter; what is left is a rebinding inside a block.
    """
    arrays = set(arrays)
    in_place = {id(node.target) for node in ast.walk(function) if isinstance(node, ast.AugAssign)}  # q += ...
    for node in ast.walk(function):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in arrays
                and id(node) not in in_place):
            raise BuildError(
                f"{filename}:{node.lineno}: the array argument `{node.id}` is assigned again inside a block; "
                f"the compiled program would write into the caller's array (Python binds a new local). Give "
                f"the new value its own name (`{node.id}_new = ...`), or write into the array on purpose "
                f"(`{node.id}[:] = ...`)"
            )


def _top_level_targets(statement: ast.stmt) -> list[str]:
    """Plain names a top-level ``name = ...`` (or ``a, b = ...``, ``name: T = ...``) binds."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return []
    names = []
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append(node.id)
    return names


def _bound_inside_blocks(statement: ast.stmt) -> set[str]:
    """Names a compound statement (``if``, loop, ``with``, ``try``) binds in its body."""
    compound = isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try))
    return stored_names([statement]) if compound else set()


class _Reads(NameSubstitution):
    """Reads of renamed names (loads only; stores of the same statement are handled after)."""

    def __init__(self, names: dict[str, str]) -> None:
        super().__init__({old: ast.Name(id=new, ctx=ast.Load()) for old, new in names.items()})


class _Stores(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Store) and node.id in self.names:
            node.id = self.names[node.id]
        return node
