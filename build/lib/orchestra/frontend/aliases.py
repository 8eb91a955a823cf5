"""Local aliases of objects: ``g = self.grid`` then ``g.area`` reads ``self.grid.area``.

DaCe parses only data (arrays, scalars) as local variables and refuses
``st = self.stencil``, ``h = self.halo_updater`` or ``g = self.grid``
("the rhs may only be data"). In Python such a local is another name for
the object the path reaches; orchestrated code never rebinds the attributes
of the model while it runs, so the path can be written where the local is
used, and the assignment dropped.

A local is replaced only when that is certainly the same value: it is bound
exactly once in the function, by this statement, to an access path (names,
attributes, subscripts by constants, names and arithmetic); it is used only
in the statements that follow in the same block (at any depth below them);
and none of the names the path reads, nor the path itself or any prefix of
it, is assigned in those statements. Anything else is left to DaCe as it is.
Tuple assignments of paths (``a, b = self.x, self.y``) count as one
assignment per name. A local bound to a list or tuple literal of paths and
constants (``ops = [self.a, self.b]``, ``w = (0.5, dt)``) is replaced by the
literal, which DaCe iterates and indexes (it refused the local: "returns 2
values but 1 provided").
"""

from __future__ import annotations

import ast
from typing import Optional

from orchestra.frontend.scope import (
    NameSubstitution,
    inner_blocks,
    is_access_path,
    name_uses,
    path_names,
    stored_names,
)


def replace_aliases(function: ast.FunctionDef) -> int:
    """Rewrite ``function`` in place; returns how many aliases were replaced."""
    bound = _binding_counts(function)
    return _Block(function, bound).run(function.body)


def _binding_counts(function: ast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            counts[node.arg] = counts.get(node.arg, 0) + 1
    return counts


def _pairs(statement: ast.stmt) -> Optional[list[tuple[str, ast.expr]]]:
    """(local, path) pairs a statement binds, if it binds only paths to plain names."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if isinstance(target, ast.Name) and _is_literal_of_paths(value):
        return [(target.id, value)]  # ops = [self.a, self.b]: the literal where ``ops`` is read
    if isinstance(target, ast.Name):
        pairs = [(target, value)]
    elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        pairs = list(zip(target.elts, value.elts))
    else:
        return None
    if not all(isinstance(name, ast.Name) and is_access_path(path) for name, path in pairs):
        return None
    names = [name.id for name, _ in pairs]
    if len(set(names)) != len(names) or set(names) & set().union(*(path_names(p) for _, p in pairs)):
        return None  # a, b = b, a or x = x.y: not an alias
    return [(name.id, path) for name, path in pairs]


def _is_literal_of_paths(value: ast.expr) -> bool:
    """A list or tuple literal of access paths and constants (``[self.a, self.b]``, ``(0.5, dt)``)."""
    return isinstance(value, (ast.List, ast.Tuple)) and bool(value.elts) and all(
        isinstance(element, ast.Constant) or is_access_path(element) for element in value.elts)


_READERS = {"zip", "enumerate", "reversed", "len"}


def _only_read(name: str, rest: list[ast.stmt]) -> bool:
    """Whether every use of ``name`` reads an element: ``for x in name``, ``name[i]``, ``zip(name, ...)``."""
    allowed: set[int] = set()
    for node in (child for statement in rest for child in ast.walk(statement)):
        if isinstance(node, (ast.For, ast.comprehension)):
            allowed.add(id(node.iter))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            allowed.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _READERS:
            allowed.update(id(argument) for argument in node.args)
    return all(id(node) in allowed for statement in rest for node in ast.walk(statement)
               if isinstance(node, ast.Name) and node.id == name)


def _stored_paths(nodes: list[ast.stmt]) -> list[str]:
    """Attribute and subscript targets assigned in ``nodes``, as source text."""
    paths = []
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, (ast.Attribute, ast.Subscript)) and isinstance(child.ctx, (ast.Store, ast.Del)):
                paths.append(ast.unparse(child))
    return paths


class _Block:
    def __init__(self, function: ast.FunctionDef, bound: dict[str, int]) -> None:
        self.function, self.bound, self.replaced = function, bound, 0

    def run(self, body: list[ast.stmt]) -> int:
        self._rewrite(body)
        return self.replaced

    def _rewrite(self, body: list[ast.stmt]) -> None:
        index = 0
        while index < len(body):
            statement = body[index]
            pairs = _pairs(statement)
            if pairs and all(self._replaceable(name, path, body, index) for name, path in pairs):
                rest = body[index + 1 :]
                for name, path in pairs:
                    substitute = NameSubstitution({name: path})
                    rest = [substitute.visit(node) for node in rest]
                    self.replaced += 1
                body[index:] = rest
                continue
            for inner in inner_blocks(statement):
                self._rewrite(inner)
            index += 1

    def _replaceable(self, name: str, path: ast.expr, body: list[ast.stmt], index: int) -> bool:
        if self.bound.get(name, 0) != 1:
            return False
        rest = body[index + 1 :]
        uses_here = sum(name_uses(node, name) for node in rest)
        if uses_here != name_uses(self.function, name):
            return False  # also read outside the statements that follow
        if stored_names(rest) & path_names(path):
            return False
        if isinstance(path, (ast.List, ast.Tuple)) and not _only_read(name, rest):
            return False  # ops.append(...), ops[0] = ..., helper(ops): the list itself is used
        paths = path.elts if isinstance(path, (ast.List, ast.Tuple)) else [path]
        return not any(_rebinds(rest, ast.unparse(element)) for element in paths if is_access_path(element))


def _rebinds(rest: list[ast.stmt], text: str) -> bool:
    """Whether ``rest`` assigns the path itself or a prefix of it (writing into an element is not rebinding)."""
    for stored in _stored_paths(rest):
        if stored == text or text.startswith(stored + ".") or text.startswith(stored + "["):
            return True
    return False

