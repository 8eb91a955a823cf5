"""Loops over ``zip``, ``enumerate``, ``reversed`` and slices of compile-time collections become indexed loops.

``for stencil, q in zip(self.stencils, self.quantities): stencil(q, ...)``
is plain Python, but DaCe unrolls such a loop only when it can evaluate the
whole iterator while parsing, and a collection holding arrays (or
``Quantity`` containers) is not a value to DaCe: it stands for program
arrays. The loop was refused ("Iterator zip is unsupported"), although
``for q in self.quantities`` (a collection alone) is unrolled; so was
``for stencil in self.stencils[1:]`` ("Invalid AST node type").

Here such a loop is written as the loop over positions Python performs::

    for __orchestra_position_12_1 in range(2):
        self.stencils[__orchestra_position_12_1](self.quantities[__orchestra_position_12_1], ...)

each loop variable replaced in the body by the element it is bound to (an
``enumerate`` count by the position plus its start). The body then indexes
compile-time collections with the loop variable, so :mod:`.loops` marks the
loop for unrolling, and every element is read through ``self`` like any
other folded value (keyed, compared on every call). The rewrite applies only
where it is certainly the same loop: each collection is an access path
(``self.x``, ``tracers``, ``self.table[1]``) to a list or tuple known when
parsing, or a slice of one whose bounds are literals or such paths, or a
list or tuple literal of such paths, arguments and constants
(``enumerate((u, v))``) whose names the function never rebinds; the
loop variables are plain names (nested tuples allowed), never assigned in
the body and read nowhere but in the bodies of loops that bind them; no
``break``, ``continue`` or ``else``. Everything else is left to DaCe as
written.
"""

from __future__ import annotations

import ast
import builtins
import copy
import numbers
from typing import Optional, Union

from orchestra.frontend.scope import (
    MISSING,
    NameSubstitution,
    ParseScope,
    breaks_or_continues,
    is_access_path,
    stored_names,
)

#: what one iteration binds: an expression (given the position's name), or a tuple of such
_Pattern = Union[ast.expr, list]


def index_collection_iterators(function: ast.FunctionDef, scope: ParseScope) -> int:
    """Rewrite ``function``'s loops over ``zip``/``enumerate``/``reversed`` of collections; returns how many."""
    rewriter = _Rewriter(function, scope)
    rewriter.visit(function)
    return rewriter.count


class _Rewriter(ast.NodeVisitor):
    def __init__(self, function: ast.FunctionDef, scope: ParseScope) -> None:
        self.function, self.scope, self.count = function, scope, 0
        self.stored = stored_names(function.body)
        self.elements: list = []

    def visit_For(self, node: ast.For) -> None:
        self.generic_visit(node)  # inner loops first: their collections must not read this loop's variables
        if node.orelse or breaks_or_continues(node):
            return
        position = f"__orchestra_position_{node.lineno}_{self.count + 1}"
        position_node = ast.Name(id=position, ctx=ast.Load())
        self.elements = []  # of every collection iterated, as far as iterated
        found = self._iteration(node.iter, position_node)
        if found is None:
            return
        length, pattern = found
        if all(isinstance(element, (numbers.Number, str)) for element in self.elements):
            return  # constants only: DaCe evaluates the iterator and unrolls the loop itself, with literals
        bindings: dict[str, ast.expr] = {}
        if not _bind(node.target, pattern, bindings) or not self._only_in_body(node, set(bindings)):
            return
        substitution = NameSubstitution(bindings)
        node.body = [substitution.visit(statement) for statement in node.body]
        node.target = ast.copy_location(ast.Name(id=position, ctx=ast.Store()), node.target)
        node.iter = ast.copy_location(
            ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[ast.Constant(length)], keywords=[]), node.iter)
        ast.fix_missing_locations(node)
        self.count += 1

    def _iteration(self, node: ast.expr, position: ast.Name) -> Optional[tuple[int, _Pattern]]:
        """(length, what one iteration binds) of ``zip``/``enumerate``/``reversed`` over collections, or a slice."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            return self._collection(node, position)  # for stencil in self.stencils[1:]
        if not isinstance(node, ast.Call) or node.keywords and not _only_start(node):
            return None
        kind = self._builtin(node.func)
        if kind is zip and node.args:
            parts = [self._part(arg, position) for arg in node.args]
            if any(part is None for part in parts):
                return None
            return min(length for length, _ in parts), [pattern for _, pattern in parts]
        if kind is enumerate and 1 <= len(node.args) + len(node.keywords) <= 2 and node.args:
            start = node.args[1] if len(node.args) == 2 else (node.keywords[0].value if node.keywords else None)
            if start is not None and not (isinstance(start, ast.Constant) and type(start.value) is int):
                return None
            inner = self._part(node.args[0], position)
            if inner is None:
                return None
            return inner[0], [_affine(start.value if start is not None else 0, 1, position), inner[1]]
        if kind is reversed and len(node.args) == 1:
            return self._collection(node.args[0], position, backwards=True)
        return None

    def _part(self, node: ast.expr, position: ast.Name) -> Optional[tuple[int, _Pattern]]:
        """One argument of ``zip``/``enumerate``: a collection (or a slice of one), or another such iterator."""
        return self._collection(node, position) or self._iteration(node, position)

    def _collection(self, node: ast.expr, position: ast.Name,
                    backwards: bool = False) -> Optional[tuple[int, _Pattern]]:
        """A list or tuple known when parsing, or a slice of one: (its length, its element at ``position``)."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return self._literal(node, position, backwards)
        sliced = isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)
        path = node.value if sliced else node
        value = self.scope.value_of(path)
        if value is MISSING or not isinstance(value, (list, tuple)):
            return None
        positions = range(len(value))
        if sliced:
            bounds = [self._integer(part) for part in (node.slice.lower, node.slice.upper, node.slice.step)]
            if MISSING in bounds:
                return None
            positions = positions[slice(*bounds)]
        if backwards:
            positions = positions[::-1]
        self.elements.extend(value[index] for index in positions)
        index = _affine(positions.start, positions.step, position)
        return len(positions), ast.Subscript(value=copy.deepcopy(path), slice=index, ctx=ast.Load())

    def _literal(self, node: Union[ast.List, ast.Tuple], position: ast.Name,
                 backwards: bool) -> Optional[tuple[int, _Pattern]]:
        """A list or tuple literal of access paths and constants (``(x, self.tmp)``), none rebound in the function."""
        elements = node.elts
        if not elements or not all(isinstance(e, ast.Constant) or is_access_path(e) for e in elements):
            return None
        if any(isinstance(e, ast.Name) and e.id in self.stored for element in elements for e in ast.walk(element)):
            return None  # a local the function rebinds: the literal's value at the loop's start may differ later
        self.elements.extend(e.value if isinstance(e, ast.Constant) else self.scope.value_of(e) for e in elements)
        start, step = (len(elements) - 1, -1) if backwards else (0, 1)
        return len(elements), ast.Subscript(value=copy.deepcopy(node), slice=_affine(start, step, position),
                                            ctx=ast.Load())

    def _integer(self, node: Optional[ast.expr]) -> object:
        """A slice bound: None, or an int known when parsing (a literal, ``-1``, ``self.n``); else MISSING."""
        if node is None:
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self._integer(node.operand)
            value = -value if type(value) is int else MISSING
        else:
            value = node.value if isinstance(node, ast.Constant) else self.scope.value_of(node)
        return value if type(value) is int or value is None else MISSING

    def _builtin(self, function: ast.expr) -> object:
        if not isinstance(function, ast.Name) or function.id in self.stored:
            return None
        value = self.scope.namespace.get(function.id, getattr(builtins, function.id, None))
        return value if value in (zip, enumerate, reversed) else None

    def _only_in_body(self, loop: ast.For, names: set[str]) -> bool:
        """The loop variables are assigned only by loops, and read only in the bodies of the loops binding them."""
        if names & stored_names(loop.body):
            return False
        rebinding = [other for other in ast.walk(self.function)
                     if isinstance(other, ast.For) and stored_names([other.target]) & names]
        allowed = {id(child) for other in rebinding for child in ast.walk(other)}
        return all(id(child) in allowed for child in ast.walk(self.function)
                   if isinstance(child, ast.Name) and child.id in names)


def _affine(start: int, step: int, position: ast.Name) -> ast.expr:
    """``start + step * position``, written as simply as it reads (``position``, ``2 - position``)."""
    scaled: ast.expr = copy.deepcopy(position)
    if abs(step) != 1:
        scaled = ast.BinOp(left=ast.Constant(abs(step)), op=ast.Mult(), right=scaled)
    if start == 0 and step > 0:
        return scaled
    if start == 0:
        return ast.UnaryOp(op=ast.USub(), operand=scaled)
    return ast.BinOp(left=ast.Constant(start), op=ast.Add() if step > 0 else ast.Sub(), right=scaled)


def _only_start(call: ast.Call) -> bool:
    return len(call.keywords) == 1 and call.keywords[0].arg == "start"


def _bind(target: ast.expr, pattern: _Pattern, bindings: dict[str, ast.expr]) -> bool:
    """Match a loop target against what one iteration binds; False where the shapes differ."""
    if isinstance(target, ast.Name) and not isinstance(pattern, list):
        if target.id in bindings:
            return False
        bindings[target.id] = pattern
        return True
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(pattern, list) and len(target.elts) == len(pattern):
        return all(_bind(element, part, bindings) for element, part in zip(target.elts, pattern))
    return False

