"""An array element read into a name is a copy, as in Python: ``a = q[1, 1, 0]`` keeps its value.

In Python ``a = q[1, 1, 0]`` of a NumPy array is a number: writing into
``q`` afterwards (a stencil, ``q[...] = ...``) does not change ``a``. DaCe
made ``a`` a view of the element, read where ``a`` is used, so a stencil
writing ``q`` in between changed ``a`` (a probe: silently different from
``Python`` mode). Tuple assignments with element targets
(``q[0, 0, 0], q[1, 1, 1] = q[1, 1, 1], q[0, 0, 0]``) were assigned one after
another, the second reading what the first wrote.

:func:`copy_element_reads` writes ``a = q[i, j, k]`` (one index per dimension
of an array whose dimensions are known: an argument, or an array the model
holds; ``a`` bound once in the function) as ``a: <scalar of q's dtype> =
q[i, j, k]``, which DaCe compiles into a copy. :func:`split_tuple_assignments`
evaluates the right-hand side of a tuple assignment with a subscript or
attribute target into temporaries before assigning any target, as Python
does (a row ``q[1]`` stays a view, as in Python).
"""

from __future__ import annotations

import ast
from typing import Any, Optional

from orchestra.key.array_like import array_layout
from orchestra.frontend.callbacks import scalar_annotation
from orchestra.frontend.scope import MISSING, ParseScope, inner_blocks, name_uses, replace_statements

_TEMPORARY = "__orchestra_value"


def split_tuple_assignments(function: ast.FunctionDef) -> int:
    """``T1, T2 = E1, E2`` (a target not a plain name) as ``t1 = E1; t2 = E2; T1 = t1; T2 = t2``; how many."""
    count = 0

    def split(statement: ast.stmt) -> Optional[list[ast.stmt]]:
        nonlocal count
        if not _splittable(statement):
            return None
        count += 1
        names = [f"{_TEMPORARY}_{statement.lineno}_{count}_{i}" for i in range(len(statement.value.elts))]
        first = [ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=v)
                 for n, v in zip(names, statement.value.elts)]
        then = [ast.Assign(targets=[t], value=ast.Name(id=n, ctx=ast.Load()))
                for n, t in zip(names, statement.targets[0].elts)]
        return [ast.fix_missing_locations(ast.copy_location(node, statement)) for node in first + then]

    return replace_statements(function.body, split)


def _splittable(statement: ast.stmt) -> bool:
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return False
    target, value = statement.targets[0], statement.value
    return (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts)
            and not any(isinstance(node, ast.Starred) for node in target.elts + value.elts)
            and not all(isinstance(node, ast.Name) for node in target.elts))


def copy_element_reads(function: ast.FunctionDef, scope: ParseScope, argtypes: dict[str, Any]) -> int:
    """Rewrite ``name = array[i, j, k]`` as an annotated scalar assignment (a copy); returns how many."""
    count = 0

    def block(body: list[ast.stmt]) -> None:
        nonlocal count
        for index, statement in enumerate(body):
            for inner in inner_blocks(statement):
                block(inner)
            descriptor = _element_read(statement, scope, argtypes)
            if descriptor is None or name_uses(function, statement.targets[0].id, (ast.Store, ast.Del)) != 1:
                continue  # bound again somewhere: left as written
            body[index] = ast.copy_location(ast.AnnAssign(
                target=statement.targets[0], annotation=scalar_annotation(scope, descriptor),
                value=statement.value, simple=1), statement)
            ast.fix_missing_locations(body[index])
            count += 1

    block(function.body)
    return count


def _element_read(statement: ast.stmt, scope: ParseScope, argtypes: dict[str, Any]) -> Any:
    """The scalar descriptor of ``name = array[i, j, k]`` reading one element of a known array; else None."""
    import dace

    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Subscript)):
        return None
    subscript = statement.value
    indices = subscript.slice.elts if isinstance(subscript.slice, ast.Tuple) else [subscript.slice]
    if any(isinstance(index, (ast.Slice, ast.Starred)) or (isinstance(index, ast.Constant) and index.value in
                                                           (None, Ellipsis)) for index in indices):
        return None
    base = subscript.value
    if isinstance(base, ast.Name) and base.id in argtypes:
        descriptor = argtypes[base.id]
        if not isinstance(descriptor, dace.data.Array) or len(descriptor.shape) != len(indices):
            return None
        return dace.data.Scalar(descriptor.dtype)
    value = scope.value_of(base)
    layout = array_layout(value) if value is not MISSING else None
    if layout is None or len(layout.shape) != len(indices):
        return None
    try:
        return dace.data.Scalar(dace.dtypes.typeclass(layout.dtype.type))
    except Exception:  # a dtype DaCe has no scalar for: left as written
        return None
