"""Loops over compile-time collections: ``for n in range(self.nmax): self.stencils[n](...)``.

A list (or tuple, or dict) of stencils, components or arrays held by the
model is known when the program is parsed, but an element chosen by a loop
variable is not: DaCe refuses ``self.stencils[n]`` ("Try dace.unroll").
NDSL's answer is a global DaCe setting that unrolls *every* loop (and model
code then opts its long loops out with ``nounroll``). orchestra unrolls only
the loops that need it: a loop whose body indexes such a collection with the
loop variable (at any depth of the body, also through arithmetic: ``[n + 1]``)
gets ``dace.unroll`` around its iterator; every other loop stays a loop.

DaCe then unrolls it when its iterator is known at parse time (``range(self.nmax)``,
a list, ``zip``/``enumerate`` of collections); the bound and each element
called are read through ``self`` like any other folded value, so they are
keyed and compared on every call. A loop with ``break``, ``continue`` or
``else`` is left alone (DaCe cannot unroll it). Loops nest: an inner loop
indexing ``self.stencils[n][m]`` is marked too, and unrolled once the outer
one is.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from orchestra.errors import BuildError
from orchestra.frontend.scope import MISSING, ParseScope, breaks_or_continues, path_names

#: the name the rewritten iterator calls ``dace.unroll`` by (added to the parse's globals)
UNROLL = "__orchestra_unroll__"

_COLLECTIONS = (list, tuple, dict)


def unroll_collection_loops(function: ast.FunctionDef, scope: ParseScope, filename: str = "") -> int:
    """Mark the loops of ``function`` that index a compile-time collection; returns how many.

    Raises :class:`~orchestra.errors.BuildError` for such a loop whose range
    reads a value not known when the program is parsed (a run-time argument,
    a local variable): DaCe could not unroll it, and the message says how
    to make the bound a parse-time value.
    """
    marker = _Marker(scope, filename)
    marker.visit(function)
    return marker.marked


class _Marker(ast.NodeVisitor):
    def __init__(self, scope: ParseScope, filename: str) -> None:
        self.scope, self.filename, self.marked = scope, filename, 0
        self.enclosing: list[set[str]] = []  # targets of the loops around the one visited

    def visit_For(self, node: ast.For) -> None:
        targets = {child.id for child in ast.walk(node.target) if isinstance(child, ast.Name)}
        self.enclosing.append(targets)
        try:
            self.generic_visit(node)
        finally:
            self.enclosing.pop()
        if node.orelse or breaks_or_continues(node) or self._explicit(node.iter):
            return
        indexed = [child for statement in node.body for child in ast.walk(statement)
                   if self._indexes_collection(child, targets)]
        if not indexed:
            return
        self._require_known_range(node, indexed[0])
        node.iter = ast.copy_location(
            ast.Call(func=ast.Name(id=UNROLL, ctx=ast.Load()), args=[node.iter], keywords=[]), node.iter
        )
        self.marked += 1

    def _require_known_range(self, loop: ast.For, indexed: ast.Subscript) -> None:
        known = self.scope.fixed.union(*self.enclosing)
        unknown = sorted(name for name in path_names(loop.iter)
                         if name not in known and not hasattr(builtins, name))
        if unknown:
            raise BuildError(
                f"{self.filename}:{loop.lineno}: the loop indexes {ast.unparse(indexed.value)} (a list or dict "
                f"known when the program is parsed) with its loop variable, so it must be unrolled, but its "
                f"range reads the run-time value(s) {', '.join(unknown)}, known only when the program runs; "
                "make the bound a value the model holds (self.n, set in __init__) or a literal, or loop over "
                "the collection itself (for stencil in self.stencils: ...)"
            )

    def _explicit(self, iterator: ast.expr) -> bool:
        """Already ``dace.unroll(...)``, ``dace.nounroll(...)`` or a map: the model decided."""
        import dace
        from dace.frontend.python.interface import nounroll, unroll

        if not isinstance(iterator, ast.Call):
            return False
        if isinstance(iterator.func, ast.Name) and iterator.func.id == UNROLL:
            return True
        function = self.scope.value_of(iterator.func)
        return function is not MISSING and any(function is known for known in (unroll, nounroll, dace.map))

    def _indexes_collection(self, node: ast.AST, targets: set[str]) -> bool:
        if not isinstance(node, ast.Subscript) or not (path_names(node.slice) & targets):
            return False
        if isinstance(node.value, (ast.List, ast.Tuple)):
            return True  # a literal (``(u, v)[n]``, from a loop over it): its elements are known when parsing
        return isinstance(self._known_prefix(node.value), _COLLECTIONS)

    def _known_prefix(self, node: ast.AST) -> Any:
        """The value of the longest prefix of ``node`` known at parse time (``self.s`` of ``self.s[n]``)."""
        while True:
            value = self.scope.value_of(node)
            if value is not MISSING or not isinstance(node, (ast.Attribute, ast.Subscript)):
                return value
            node = node.value

