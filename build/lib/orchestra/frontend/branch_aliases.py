"""A local bound to one object or another in the branches of an ``if``: ``op = self.a`` / ``op = self.b``.

Model code picks a stencil, a component or an array by a condition and uses
it after the ``if``::

    if self._upwind:            # or a run-time flag
        op = self._upwind_flux
    else:
        op = self._centered_flux
    op(q, flux)

DaCe refuses both forms: a local holding a stencil ("the rhs may only be
data") and a local bound to one array or another at run time ("Cannot
reassign View"). In Python, after the ``if`` the local *is* the object one
branch bound. :func:`split_branch_aliases` moves the statements that follow
the ``if`` (in its block) into each branch, where the local is bound once and
renamed per branch (``op__orchestra_then``, ``op__orchestra_else``), so the
alias rewrite (:mod:`orchestra.frontend.aliases`) writes the object's path
where it is used. The meaning is Python's: each branch runs what followed the
``if`` with the object it bound. ``elif`` chains are the nested ``if`` of the
``else`` branch, split in turn. A default bound before an ``if`` without
``else`` (``op = self.a`` then ``if c: op = self.b``) becomes its ``else``,
and ``op = self.a if c else self.b`` an ``if`` statement. A parameter given
a default in an ``if`` at the function's top level (``if mass is None: mass
= self.default``; DaCe kept the folded ``None`` after the assignment) is
first written as such a default of a local (``mass__orchestra_argument =
mass``), so what follows runs with the default in the ``if`` and with the
argument as given in the ``else``. Locals bound and
used only in the copied statements are renamed per copy too, so a later
``if`` among them is split in its own copy.

Applied only when every path through the ``if`` binds the local to an access
path (a name followed by attributes and subscripts), the local is bound
nowhere else in the function and read only in the statements that follow,
not every bound value is a number (numbers DaCe reassigns itself), and no
branch leaves the block (``return``, ``break``, ``continue``, ``raise``).
"""

from __future__ import annotations

import ast
import copy
import numbers
from typing import Optional

from orchestra.frontend.scope import (
    MISSING,
    ParseScope,
    inner_blocks,
    is_access_path,
    name_uses,
    parameter_names,
    stored_names,
)

_SUFFIXES = ("__orchestra_then", "__orchestra_else")
_ARGUMENT = "__orchestra_argument"
_LEAVES = (ast.Return, ast.Break, ast.Continue, ast.Raise)


def split_branch_aliases(function: ast.FunctionDef, scope: ParseScope) -> int:
    """Rewrite ``function`` in place; returns how many ``if`` statements took their followers in."""
    _parameter_defaults_as_locals(function)
    splitter = _Splitter(function, scope)
    splitter.block(function.body)
    return splitter.count


def _parameter_defaults_as_locals(function: ast.FunctionDef) -> None:
    """``if mass is None: mass = self.d`` (top level) as ``m = mass`` / ``if mass is None: m = self.d``, ``m`` after.

    The parameter then stays what the caller gave, and the local is a
    default overridden by an ``if``, which the splitter takes apart. Only for
    a parameter bound nowhere but in that ``if``'s body, not read there, and
    read after it.
    """
    parameters = parameter_names(function)
    index = 0
    while index < len(function.body):
        statement, rest = function.body[index], function.body[index + 1:]
        index += 1
        if not isinstance(statement, ast.If) or statement.orelse:
            continue
        for name in parameters:
            paths = _bound_on_every_path(statement.body, name)
            if (paths is None or name_uses(function, name, (ast.Store, ast.Del)) != name_uses(statement, name, ast.Store)
                    or any(name_uses(node, name, ast.Load) for node in statement.body)
                    or not any(name_uses(node, name, ast.Load) for node in rest)):
                continue
            local = name + _ARGUMENT
            renamer = _Rename({name: local})
            statement.body[:] = [renamer.visit(node) for node in statement.body]
            function.body[index:] = [renamer.visit(node) for node in rest]
            rest = function.body[index:]
            alias = ast.Assign(targets=[ast.Name(id=local, ctx=ast.Store())], value=ast.Name(id=name, ctx=ast.Load()))
            function.body.insert(index - 1, ast.fix_missing_locations(ast.copy_location(alias, statement)))
            index += 1


def _alias_targets(statement: ast.stmt) -> dict[str, ast.expr]:
    """``{local: path}`` for ``local = path`` (one plain name, an access path value)."""
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and is_access_path(statement.value)):
        return {statement.targets[0].id: statement.value}
    return {}


def _bound_on_every_path(body: list[ast.stmt], name: str) -> Optional[list[ast.expr]]:
    """The paths ``name`` is bound to by top-level statements of ``body``, if every path binds it; else None."""
    for statement in body:
        path = _alias_targets(statement).get(name)
        if path is not None:
            return [path]
        if isinstance(statement, ast.If) and statement.orelse:
            then = _bound_on_every_path(statement.body, name)
            orelse = _bound_on_every_path(statement.orelse, name)
            if then is not None and orelse is not None:
                return then + orelse
    return None


def _default_into_else(body: list[ast.stmt], index: int) -> int:
    """``op = self.a`` ... ``if c: op = self.b`` becomes ``if c: op = self.b else: op = self.a``; 1 if moved.

    Only when the ``if`` has no ``else``, binds the local on every path of
    its body, and nothing between the two statements (the ``if`` included)
    reads the local or rebinds what the default's path reads.
    """
    statement = body[index]
    for earlier in range(index - 1, -1, -1):
        default = _alias_targets(body[earlier])
        if not default:
            continue
        (name, path), = default.items()
        if _bound_on_every_path(statement.body, name) is None:
            continue  # another local's binding
        between = body[earlier + 1:index + 1]
        stored = {child.id for node in between for child in ast.walk(node)
                  if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del))}
        reads = {child.id for child in ast.walk(path) if isinstance(child, ast.Name)}
        if any(name_uses(node, name, ast.Load) for node in between) or (stored - {name}) & reads:
            return 0
        if any(name_uses(node, name, (ast.Store, ast.Del)) for node in body[earlier + 1:index]):
            return 0
        statement.orelse = [body.pop(earlier)]
        return 1
    return 0


def _conditional_as_if(statement: ast.stmt) -> ast.stmt:
    """``op = self.a if c else self.b`` as ``if c: op = self.a`` / ``else: op = self.b``; else ``statement``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.IfExp)
            and is_access_path(statement.value.body) and is_access_path(statement.value.orelse)):
        return statement
    target, value = statement.targets[0], statement.value

    def bind(path: ast.expr) -> ast.stmt:
        return ast.copy_location(ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())], value=path), statement)

    return ast.fix_missing_locations(ast.copy_location(
        ast.If(test=value.test, body=[bind(value.body)], orelse=[bind(value.orelse)]), statement))


class _Splitter:
    def __init__(self, function: ast.FunctionDef, scope: ParseScope) -> None:
        self.function, self.scope, self.count = function, scope, 0

    def block(self, body: list[ast.stmt]) -> None:
        index = 0
        while index < len(body):
            statement = body[index] = _conditional_as_if(body[index])
            if isinstance(statement, ast.If) and not statement.orelse:
                index -= _default_into_else(body, index)
            if isinstance(statement, ast.If) and statement.orelse and self._split(body, index):
                continue  # the same if, now holding its followers: look inside it next
            for inner in inner_blocks(statement):
                self.block(inner)
            index += 1

    def _candidates(self, statement: ast.If, rest: list[ast.stmt]) -> list[str]:
        names = {child.id for child in ast.walk(statement)
                 if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)}
        chosen = []
        for name in sorted(names):
            paths = _bound_on_every_path([statement], name)
            if paths is None or not any(name_uses(node, name, ast.Load) for node in rest):
                continue
            if name_uses(self.function, name, (ast.Store, ast.Del)) != len(paths):
                continue  # bound elsewhere too: which binding a use sees is not this if's alone
            if name_uses(self.function, name, ast.Load) != sum(name_uses(node, name, ast.Load) for node in rest):
                continue  # read in the branches or before: not only an alias for what follows
            values = [self.scope.value_of(path) for path in paths]
            if all(value is not MISSING and isinstance(value, numbers.Number) for value in values):
                continue  # numbers: DaCe reassigns scalars itself
            chosen.append(name)
        return chosen

    def _split(self, body: list[ast.stmt], index: int) -> bool:
        statement, rest = body[index], body[index + 1:]
        if not rest or any(isinstance(node, _LEAVES) for node in ast.walk(statement)):
            return False  # a branch that leaves the block would skip what follows; keep Python's order as is
        names = self._candidates(statement, rest)
        if not names:
            return False
        # locals that live only in what follows are copied too: each copy gets its own name
        parameters = set(parameter_names(self.function))
        own = {name for name in stored_names(rest) - parameters if name_uses(self.function, name, ast.AST) ==
               sum(name_uses(node, name, ast.AST) for node in rest)}
        for branch, suffix in ((statement.body, _SUFFIXES[0]), (statement.orelse, _SUFFIXES[1])):
            branch.extend(copy.deepcopy(rest))
            renamer = _Rename({name: name + suffix for name in sorted(set(names) | own)})
            branch[:] = [renamer.visit(node) for node in branch]
        del body[index + 1:]
        self.count += 1
        return True


class _Rename(ast.NodeTransformer):
    """Renames loads and stores of the given locals."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        new = self.names.get(node.id)
        return node if new is None else ast.copy_location(ast.Name(id=new, ctx=node.ctx), node)
