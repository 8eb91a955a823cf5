"""State fusion that would lose a write-after-read order is refused (a guard around DaCe's ``StateFusion``).

DaCe 2's (2.0.0a10, still 2.0.0b1) ``StateFusion`` (simplify's ``FuseStates``) merges two states
when their dataflow is one connected component and every read in the first
state has *some* path to *some* write of the same array in the second, not a
path to the writes that overlap it. So::

    a = x[1, 1, 1]; b = x[2, 2, 2]        # read in the first state
    x[1, 1, 1] = b * 2.0; x[2, 2, 2] = a * 3.0   # written in the second

was fused into one state in which nothing orders the read of ``x[2, 2, 2]``
(for ``b``) before its write (from ``a``): the generated code wrote first,
and ``b`` read the new value (a probe: silently different from ``Python``
mode; reproduced with DaCe alone on the function above, correct with
``FuseStates`` skipped).

:func:`ordered_state_fusion` adds, for the span of a ``with`` block, one more
condition to ``StateFusion.can_be_applied``: for every read of an array in
the first state and every write into the same array in the second whose
subsets may overlap, the writing node must be reachable from the reading one
through the fused graph (the first state's descendants, then the second
state's descendants of the access nodes DaCe connects them by: same data,
sources of the second state). Otherwise the two states stay apart, in order.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional

_lock = threading.Lock()
_depth = 0


@contextlib.contextmanager
def ordered_state_fusion() -> Iterator[None]:
    """Within the block, ``StateFusion`` refuses fusions that would leave a write-after-read unordered."""
    global _depth
    from dace.transformation.interstate.state_fusion import StateFusion

    with _lock:
        if _depth == 0:
            original = StateFusion.can_be_applied
            StateFusion.__orchestra_original_can_be_applied__ = original

            def can_be_applied(self: Any, graph: Any, expr_index: int, sdfg: Any, permissive: bool = False) -> bool:
                if not original(self, graph, expr_index, sdfg, permissive):
                    return False
                return not unordered_write_after_read(self.first_state, self.second_state)

            StateFusion.can_be_applied = can_be_applied
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                StateFusion.can_be_applied = StateFusion.__orchestra_original_can_be_applied__


def unordered_write_after_read(first: Any, second: Any) -> bool:
    """Whether some write in ``second`` may overlap a read in ``first`` without a path ordering them."""
    from dace.sdfg import nodes

    writes: dict[str, list] = {}
    for node in second.data_nodes():
        for edge in second.in_edges(node):
            if not edge.data.is_empty():
                writes.setdefault(node.data, []).append((edge, _subset(edge.data, node.data)))
    if not writes:
        return False
    for node in first.data_nodes():
        if node.data not in writes:
            continue
        for edge in first.out_edges(node):
            if edge.data.is_empty():
                continue
            read = _subset(edge.data, node.data)
            conflicting = [w for w, written in writes[node.data] if _may_overlap(read, written)]
            if not conflicting:
                continue
            reached = _reached_in_second(first, second, edge.dst, nodes)
            if any(w.src not in reached for w in conflicting):  # the writing node itself must come after
                return True
    return False


def _reached_in_second(first: Any, second: Any, start: Any, nodes: Any) -> set:
    """Nodes of ``second`` reachable from ``start`` (in ``first``) once the two states are fused."""
    import networkx as nx

    downstream = nx.descendants(first._nx, start) | {start}
    names = {node.data for node in downstream if isinstance(node, nodes.AccessNode)}
    sources = [node for node in second.source_nodes() if isinstance(node, nodes.AccessNode) and node.data in names]
    reached: set = set()
    for source in sources:
        reached |= nx.descendants(second._nx, source) | {source}
    return reached


def _subset(memlet: Any, data: str) -> Optional[Any]:
    """The subset of ``data`` a memlet touches (None: unknown, taken as all of it)."""
    if memlet.data == data:
        return memlet.subset
    return memlet.other_subset


def _may_overlap(first: Optional[Any], second: Optional[Any]) -> bool:
    from dace import subsets

    if first is None or second is None:
        return True
    try:
        return subsets.intersects(first, second) is not False
    except Exception:  # subsets DaCe cannot compare: assume they overlap
        return True
