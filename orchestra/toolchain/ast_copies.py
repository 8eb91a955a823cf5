"""Deep copies of Python syntax trees without ``copy``'s generic reconstruction.

Every tasklet, condition and assignment of an SDFG holds its code as Python
``ast`` nodes (``dace.properties.CodeBlock``), and DaCe deep-copies SDFGs
often: the region split copies a map's nested SDFG once per piece, inlining
and code generation copy nested SDFGs. ``copy.deepcopy`` copies an ``ast``
node the generic way (``__reduce_ex__``, a new empty node, then a deep copy
of its attribute dictionary); of 258 nested SDFGs copied by the dycore's
region split, 60,000 of the objects copied so were ``ast`` nodes, half the
time of the copies.

:func:`direct_ast_copies` registers, for the duration of a ``with`` block, a
copier for every ``ast`` node class with ``copy``'s table of copiers (as it
has for lists and dicts) that does the same directly: a new node of the same
class whose attributes are the originals' deep copies in the same ``memo``
(shared subtrees stay shared, as with the generic path), strings, numbers and
None taken as they are (``deepcopy`` returns those themselves). The copies
are the ones the generic path makes, attribute for attribute.
"""

from __future__ import annotations

import ast
import copy
import functools
from typing import Callable

from orchestra.toolchain.stand_in import WhileAnyInside

#: Attribute values ``copy.deepcopy`` returns as they are (exact classes).
_ATOMIC = frozenset({str, int, float, bool, complex, bytes, type(None)})


def copy_node(node: ast.AST, memo: dict) -> ast.AST:
    """A deep copy of ``node`` in ``memo``, as ``copy.deepcopy`` makes it (module docstring)."""
    cls = node.__class__
    new = cls.__new__(cls)
    memo[id(node)] = new
    attributes = new.__dict__
    deepcopy = copy.deepcopy
    for name, value in node.__dict__.items():
        attributes[name] = value if value.__class__ in _ATOMIC else deepcopy(value, memo)
    return new


@functools.lru_cache(maxsize=1)
def node_classes() -> tuple[type, ...]:
    """Every class of syntax-tree node (subclasses of ``ast.AST``, at any depth), as first asked: the ``ast``
    module's (a class defined later is copied the generic way, which gives the same copy)."""
    found: dict[type, None] = {}
    todo = [ast.AST]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found[sub] = None
                todo.append(sub)
    return tuple(found)


def _registered() -> Callable[[], None]:
    table = copy._deepcopy_dispatch  # type: ignore[attr-defined]
    before = {cls: table.get(cls) for cls in node_classes()}
    table.update(dict.fromkeys(before, copy_node))

    def undo() -> None:
        for cls, copier in before.items():
            if copier is None:
                table.pop(cls, None)
            else:
                table[cls] = copier

    return undo


#: Within the block (and any block of another thread overlapping it), ``ast`` nodes deep-copy directly.
direct_ast_copies = WhileAnyInside(_registered)
