"""A called function's early ``return`` returns from it, not from the whole program.

DaCe 2 (2.0.0a10, still 2.0.0b1) parses a helper or a nested component's method into a region of
its caller and marks each ``return`` with a return block; when simplify
inlines the region, a return block that does not end the function's last
statement stays a return block, now of the *whole program*. So::

    def _coef(self, flip: bool):
        if flip:
            return 0.25          # taken at run time: the program ends here,
        return 0.5               # skipping everything after ``c = self._coef(flip)``

silently computed something else than ``Python`` mode (the caller's later
stencils never ran). A function's last top-level ``return`` is not affected.

:func:`single_exit` rewrites such a function (not the orchestrated method
itself, whose returns do end the program) so that its only ``return`` is its
last statement, with Python's meaning: the statements after an ``if`` that
may return move into the branches that do not, and each ``return value``
becomes an assignment to result variables returned at the end (a position
where every return gives the same access path, ``self.a``, returns that path
itself). A ``return`` inside a loop, a ``with`` or a ``try``, and functions
that return a value on some paths and fall off the end on others, are refused
with the file, the line and the rewrite to make.
"""

from __future__ import annotations

import ast
import copy
from typing import Optional

from orchestra.errors import BuildError
from orchestra.frontend.scope import is_access_path, own_returns, path_names, stored_names

RESULT = "__orchestra_result"


def single_exit(definition: ast.FunctionDef, filename: str) -> bool:
    """Rewrite ``definition`` in place so that its only ``return`` is its last statement; True if changed."""
    returns = own_returns(definition.body)
    body = definition.body
    if not returns or (len(returns) == 1 and body[-1] is returns[0]):
        return False
    for node in returns:
        _refuse_if_inside(definition, node, filename)
    arity = _arity(returns, definition, filename)
    shared = _shared_paths(returns, definition, arity)
    new_body, always = _single_exit(body, arity, shared)
    if arity is not None and not always:
        raise BuildError(
            f"{filename}:{definition.lineno}: {definition.name} returns a value on some paths and nothing on "
            "others; a compiled program needs a value on every path: end it with a return of the same kind"
        )
    if arity is not None:
        names = [copy.deepcopy(shared[i]) if shared[i] is not None else ast.Name(id=_result(i, arity), ctx=ast.Load())
                 for i in range(max(arity, 1))]
        value = names[0] if arity == 0 else ast.Tuple(elts=names, ctx=ast.Load())
        new_body.append(ast.copy_location(ast.Return(value=value), returns[-1]))
    definition.body = new_body or [ast.Pass()]
    return True


def _refuse_if_inside(definition: ast.FunctionDef, target: ast.Return, filename: str) -> None:
    """A ``return`` nested in a loop, ``with`` or ``try`` cannot be moved to the end."""
    for node in ast.walk(definition):
        if isinstance(node, (ast.For, ast.While, ast.With, ast.Try)) and any(
                child is target for child in ast.walk(node)):
            loop = isinstance(node, (ast.For, ast.While))
            kind = "a loop" if loop else "a with block" if isinstance(node, ast.With) else "a try block"
            fix = "Leave the loop with a flag and `break`" if loop else "Keep the value in a variable"
            raise BuildError(
                f"{filename}:{target.lineno}: {definition.name} returns from inside {kind}; DaCe would end the "
                f"whole orchestrated program there, not just this function. {fix}, and return once, as the "
                "function's last statement"
            )


def _arity(returns: list[ast.Return], definition: ast.FunctionDef, filename: str) -> Optional[int]:
    """None: no return gives a value; 0: one value each; n: tuples of n values each."""
    shapes = {None if node.value is None else len(node.value.elts) if isinstance(node.value, ast.Tuple) else 0
              for node in returns}
    if shapes == {None}:
        return None
    if len(shapes) > 1:
        raise BuildError(
            f"{filename}:{definition.lineno}: {definition.name} returns different numbers of values on different "
            "paths; a compiled program needs the same on every path"
        )
    (arity,) = shapes
    return arity


def _shared_paths(returns: list[ast.Return], definition: ast.FunctionDef,
                  arity: Optional[int]) -> list[Optional[ast.expr]]:
    """Per returned position, the access path every return gives there (None: values differ).

    ``if on: return self.a`` ... ``return self.a`` returns the same array on
    every path: the single exit returns that path itself (a result variable
    would be a view DaCe cannot assign twice), provided nothing in the
    function rebinds the path's names.
    """
    if arity is None:
        return []
    rebound = stored_names(definition.body)
    columns = zip(*[[node.value] if arity == 0 else node.value.elts for node in returns])
    shared: list[Optional[ast.expr]] = []
    for column in columns:
        first = column[0]
        same = all(ast.dump(value) == ast.dump(first) for value in column)
        shared.append(first if same and is_access_path(first) and not path_names(first) & rebound else None)
    return shared


def _result(index: int, arity: int) -> str:
    return RESULT if arity == 0 else f"{RESULT}_{index}"


def _assign_result(node: ast.Return, arity: Optional[int], shared: list[Optional[ast.expr]]) -> list[ast.stmt]:
    if arity is None:
        return []
    values = [node.value] if arity == 0 else node.value.elts
    return [ast.copy_location(ast.Assign(targets=[ast.Name(id=_result(i, arity), ctx=ast.Store())], value=value),
                              node)
            for i, value in enumerate(values) if shared[i] is None]


def _single_exit(body: list[ast.stmt], arity: Optional[int],
                 shared: list[Optional[ast.expr]]) -> tuple[list[ast.stmt], bool]:
    """The statements without any ``return``, and whether every path through them returned."""
    out: list[ast.stmt] = []
    for index, statement in enumerate(body):
        if isinstance(statement, ast.Return):
            return out + _assign_result(statement, arity, shared), True  # what follows never runs
        if isinstance(statement, ast.If) and own_returns([statement]):
            rest = body[index + 1:]
            then, then_returns = _single_exit(statement.body + copy.deepcopy(rest), arity, shared)
            orelse, else_returns = _single_exit(statement.orelse + copy.deepcopy(rest), arity, shared)
            branch = ast.If(test=statement.test, body=then or [ast.Pass()], orelse=orelse)
            out.append(ast.copy_location(branch, statement))
            return out, then_returns and else_returns
        out.append(statement)
    return out, False
