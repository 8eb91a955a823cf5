"""Arrays a component returns are its caller's arrays, not copies: ``d, y2 = self.csw(y, x)``.

In Python, ``return self.delpc, fx`` hands back the component's own array and
the caller's argument: writing into ``d`` writes into ``self.csw.delpc``.
DaCe copies the return values of a nested program into new arrays, so a
caller that wrote into what it got back changed a copy, and the program
computed something else than ``Python`` mode, silently.

:func:`returned_paths` finds, from a function's source, what each returned
value *is* when every ``return`` gives, at that position, the same parameter
or the same ``self.<path>`` (neither rebound in the function).
:func:`expose_returned_aliases` then rewrites a caller's
``a, b = component(...)`` into the call followed by ``a, b = <paths>``
(``self.csw.delpc``, the argument expression), which the alias rewrite
turns into uses of those arrays. Anything else (a computed value, returns
that differ) keeps DaCe's copy: for numbers a copy is what Python means.
A callback (a decorated function, run in Python during the call) returning
``self.<path>`` is exposed only when that path holds an array: a number it
returns (``self.calls += 1; return self.calls``) is its value at that moment,
not the value the program folded in when it was parsed.
The top-level program uses the same analysis to return the very objects
``Python`` mode returns (:class:`orchestra.orchestrate.OrchestratedProgram`).
"""

from __future__ import annotations

import ast
import copy
import inspect
import types
from typing import Any, Optional

from orchestra.key.array_like import is_array_like
from orchestra.key.call_tree import orchestrated_call
from orchestra.frontend.callbacks import callback_function
from orchestra.frontend.scope import (
    MISSING,
    NameSubstitution,
    ParseScope,
    definition_of,
    is_access_path,
    own_returns,
    parameter_names,
    replace_statements,
    root_name,
    stored_names,
)


def returned_paths(function: types.FunctionType) -> Optional[tuple[ast.expr, ...]]:
    """What ``function`` returns, position by position, as parameter or ``self`` paths; None if not that."""
    definition = definition_of(function)
    if definition is None:
        return None
    returns = own_returns(definition.body)
    if not returns or any(node.value is None for node in returns):
        return None
    shapes = [node.value.elts if isinstance(node.value, ast.Tuple) else [node.value] for node in returns]
    if len({len(shape) for shape in shapes}) != 1:
        return None
    parameters = set(parameter_names(definition))
    rebound = stored_names(definition.body)
    paths = []
    for position in zip(*shapes):
        texts = {ast.unparse(node) for node in position}
        node = position[0]
        root = root_name(node)
        if len(texts) != 1 or not is_access_path(node) or root not in parameters or root in rebound:
            return None
        paths.append(node)
    return tuple(paths)


def returns_tuple(function: types.FunctionType) -> bool:
    """Whether ``function``'s returns give tuples (``return a, b``) rather than one value."""
    definition = definition_of(function)
    return definition is not None and any(isinstance(node.value, ast.Tuple) for node in own_returns(definition.body))


def _callee_function(callee: Any, func: ast.expr) -> Optional[tuple[types.FunctionType, Optional[ast.expr]]]:
    """The Python function a call runs and the expression of its ``self`` (None for a free function)."""
    program = orchestrated_call(callee)
    if program is not None:  # an orchestrated component called as ``self.inner(...)``
        return program.function, func
    if hasattr(callee, "dace_program") and isinstance(getattr(callee, "function", None), types.FunctionType):
        owner = func.value if isinstance(func, ast.Attribute) else None
        if getattr(callee, "method_object", None) is not None:
            return (callee.function, owner) if owner is not None else None
        return callee.function, None
    if isinstance(callee, types.MethodType) and isinstance(callee.__func__, types.FunctionType):
        return (callee.__func__, func.value) if isinstance(func, ast.Attribute) else None
    if isinstance(callee, types.FunctionType):
        return callee, None
    return None


def _caller_paths(call: ast.Call, function: types.FunctionType, owner: Optional[ast.expr]) -> Optional[list[ast.expr]]:
    """The returned paths written in the caller's terms (arguments and the component's path)."""
    paths = returned_paths(function)
    if paths is None or any(isinstance(arg, ast.Starred) for arg in call.args) or any(
            keyword.arg is None for keyword in call.keywords):
        return None
    signature = inspect.signature(function)
    names = list(signature.parameters)
    if owner is not None:
        names = names[1:]
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    try:
        bound = signature.bind(*call.args, **{keyword.arg: keyword.value for keyword in call.keywords})
    except TypeError:
        return None
    replacements: dict[str, ast.expr] = dict(bound.arguments)
    if owner is not None:
        replacements[next(iter(inspect.signature(function).parameters))] = owner
    result = []
    for path in paths:
        root = root_name(path)
        replacement = replacements.get(root)
        if replacement is None or not is_access_path(replacement):
            return None  # a default or an expression: DaCe's copy
        result.append(NameSubstitution({root: replacement}).visit(copy.deepcopy(path)))
    return result


def expose_returned_aliases(function: ast.FunctionDef, scope: ParseScope) -> int:
    """Rewrite ``a, b = component(...)`` where what comes back are arrays the caller can name."""
    return replace_statements(function.body, lambda statement: _rewrite(statement, scope))


def _rewrite(statement: ast.stmt, scope: ParseScope) -> Optional[list[ast.stmt]]:
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 or not isinstance(statement.value, ast.Call):
        return None
    call, target = statement.value, statement.targets[0]
    callee = scope.value_of(call.func)
    found = _callee_function(callee, call.func) if callee is not MISSING else None
    if found is None:
        return None
    paths = _caller_paths(call, *found)
    if paths is None:
        return None
    values = [scope.value_of(path) for path in paths]
    if callback_function(callee) is not None and any(v is not MISSING and not is_array_like(v) for v in values):
        return None  # a callback runs in Python during the call: a number it returns is its value then
    if isinstance(target, ast.Tuple):
        if len(target.elts) != len(paths) or not all(isinstance(name, ast.Name) for name in target.elts):
            return None
        value: ast.expr = ast.Tuple(elts=paths, ctx=ast.Load())
    elif isinstance(target, ast.Name):
        value = paths[0] if len(paths) == 1 else ast.Tuple(elts=paths, ctx=ast.Load())
        if len(paths) != 1:
            return None  # the tuple itself is the value: DaCe's copy
    else:
        return None
    run = ast.copy_location(ast.Expr(value=call), statement)
    bind = ast.copy_location(ast.Assign(targets=[target], value=value), statement)
    return [ast.fix_missing_locations(run), ast.fix_missing_locations(bind)]
