"""DaCe's ``deduplicate`` in time linear in its input instead of quadratic.

DaCe removes repeated items from a list with
``type(items)(sorted(set(items), key=items.index))``: each distinct item is
looked up again in the whole list, so a list of ``n`` items costs ``n`` times
``n``. Code generation asks it for the predecessors and successors of every
node of a state while sorting the state's nodes (``Graph.predecessors``, called
by ``dfs_topological_sort``), and a map exit in one of the dycore's merged
kernel states has hundreds of in-edges: 13.5% of the dycore's code generation
was this function (profiled).

:func:`linear_deduplication` installs, for the duration of a ``with`` block,
``type(items)(dict.fromkeys(items))`` in its place (as ``dace.dtypes.deduplicate``
and as the name ``dace.sdfg.graph`` imported). The result is the same list:
both keep one item of each class of equal items, the first one met (a set and
a dict both keep the first of equal keys added), in the order of first
occurrence (``items.index`` finds the first equal item, its identity checked
first as dict lookups do); both refuse unhashable items alike. Installed only
over the function it was written for (recognised by a hash of its source).
"""

from __future__ import annotations

from typing import Any, Callable

from orchestra.toolchain.stand_in import WhileAnyInside, replaced_where_recognized, source_digest

#: sha256 of the source of DaCe 2.0.0b1's ``dace.dtypes.deduplicate``.
_WRITTEN_FOR = "7f6f5d59164b2c4c852e24a5d03a189376a14aaaa6f75b21cff24bb97bc161ec"


def deduplicate(iterable: Any) -> Any:
    """``iterable``'s items without repeats, the first of each in the order met, in a collection of its type."""
    return type(iterable)(dict.fromkeys(iterable))


def recognizes(function: Any) -> bool:
    """Whether ``function`` is the ``deduplicate`` :func:`deduplicate` was proven against."""
    return source_digest(function) == _WRITTEN_FOR


def _installed() -> Callable[[], None]:
    from dace import dtypes
    from dace.sdfg import graph

    return replaced_where_recognized((dtypes, graph), "deduplicate", recognizes, deduplicate)


#: Within the block (and any block of another thread overlapping it), DaCe's ``deduplicate`` is
#: :func:`deduplicate` (module docstring).
linear_deduplication = WhileAnyInside(_installed)
