"""Scratch planes: a transient handed from one body of a merged vertical map to the next lives one level at a time.

After :mod:`.vertical`, two stencils ``A`` then ``B`` over the same levels are
one map over ``k`` whose iteration runs ``A``'s body, then ``B``'s. What
``A`` hands to ``B`` still goes through memory: ``A`` writes the whole
array, level by level, and ``B`` reads it back, level by level. When that
array is a *transient* (a scratch array the model declared,
:mod:`orchestra.stencils.scratch`, or one DaCe made), nothing outside the
program sees it, so each iteration ``k`` only needs the one level it writes
and reads: the pass connects ``A``'s body to ``B``'s through a buffer of one
level, reused by every iteration. The level
stays in cache between the two bodies instead of making a round trip to
memory; the statements, their order and their values are unchanged, so
results are bitwise identical.

Each OpenMP thread has its own buffer, allocated once when the library is
loaded (DaCe's ``CPU_ThreadLocal`` storage: an OpenMP ``threadprivate``
pointer), and the map over ``k`` stays the parallel level: a thread runs
whole levels, so it alone writes and reads its buffer. So the pass applies
only to a map of more than one level that runs on the threads, and makes
every map inside it sequential (as :mod:`orchestra.passes.cpu.openmp` would).
The library's init allocates the buffers of its own team; a thread of
another team (a call from another Python thread) allocates its own on first
use (:mod:`.plane_allocation`, in the generated code). Two earlier designs, measured (D41): a buffer per iteration on the
heap (glibc ``mmap``s each 300 KB allocation: 33 or 56 ms per step for the
same build), and one shared buffer with the levels in order (the threads
inside each level: 1.8-2x slower at 24 x 24 x 8, a parallel region per
level and map).

The buffer keeps the array's shape and indices: only its layout changes, a
stride of 0 along ``k`` (every level of the iteration maps onto the same
memory, and iteration ``k`` only touches level ``k``). So no memlet or index
inside the stencils is rewritten; nested SDFGs that take the array get the
same layout.

A transient is rewritten only if, in **every** state that uses it:

* it is written by exactly one merged map ``M`` of one parameter ``k``, run
  on the threads over more than one level (an
  access node after ``M``'s exit that nothing else reads) and read, only by
  ``M`` (access nodes before its entry that nothing writes; a state that
  writes it without reading it refuses it);
* every access inside ``M``, followed down to the statements
  (:func:`.planes.footprint`), is level ``k`` itself (plane offset 0);
* ``M``'s writes to it are not conditional (no dynamic or WCR memlet) and
  together cover what ``M`` reads of it, and every write precedes every read
  in the body's order.

So a value read in iteration ``k`` is always the one written earlier in the
same iteration: none flows between iterations, states or calls. Anything else
(a transient read by a later state, written in one map and read in another, a
halo read another iteration writes) is left as it is.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from orchestra.passes.fusion.planes import footprint, plane_of
from orchestra.passes.fusion.vertical import _reaches

log = logging.getLogger("orchestra")


class _Use:
    """One state's use of a transient: the merged map, the boundary edges writing and reading it, the outer nodes."""

    def __init__(self, state: Any, entry: Any, writes: list, sources: list, outer_nodes: list, dimension: int) -> None:
        #: the boundary edges writing the transient; per boundary edge reading it, (edge, the write it reads)
        self.state, self.entry, self.writes, self.sources = state, entry, writes, sources
        self.outer_nodes, self.dimension = outer_nodes, dimension


def shrink_scratch_planes(sdfg: Any) -> int:
    """Give every eligible transient of ``sdfg`` (top level) a one-level buffer per merged map; returns how many maps."""
    from dace import data as dace_data

    uses: dict[str, list[_Use]] = {}
    refused: set[str] = set()
    read_between_states = {str(s) for edge in sdfg.all_interstate_edges() for s in edge.data.free_symbols}
    for name, desc in sdfg.arrays.items():
        if not desc.transient or type(desc) is not dace_data.Array or name in read_between_states:
            refused.add(name)
    for state in sdfg.states():
        nodes_by_name: dict[str, list] = {}
        for node in state.data_nodes():
            if node.data not in refused:
                nodes_by_name.setdefault(node.data, []).append(node)
        for name, nodes_of in nodes_by_name.items():
            use = _use_in_state(state, name, nodes_of)
            if use is None:
                refused.add(name)
            else:
                uses.setdefault(name, []).append(use)
    shrunk = 0
    for name, found in uses.items():
        if name in refused or len({use.dimension for use in found}) != 1:
            continue
        plane = _add_plane(sdfg, name, found[0].dimension)
        for use in found:
            _rewrite(use, plane)
            shrunk += 1
        log.debug("%s: %s lives one level at a time in %d merged map(s)", sdfg.name, name, len(found))
    return shrunk


def _use_in_state(state: Any, name: str, access_nodes: list) -> Optional[_Use]:
    """The eligible pattern of ``name`` in ``state`` (see the module docstring), or None."""
    from dace.sdfg import nodes

    scopes = state.scope_dict()
    entries, writes, reads = set(), [], []
    for node in access_nodes:
        if scopes[node] is not None:
            return None
        if state.in_degree(node) and state.out_degree(node):
            return None  # written and read here: a copy or an alias, not a hand-over inside one map
        for edge in state.in_edges(node):
            if not isinstance(edge.src, nodes.MapExit) or edge.data.is_empty():
                return None
            entries.add(state.entry_node(edge.src))
            writes.extend(state.in_edges_by_connector(edge.src, "IN_" + edge.src_conn[4:]))
        for edge in state.out_edges(node):
            if not isinstance(edge.dst, nodes.MapEntry) or edge.data.is_empty():
                return None
            entries.add(edge.dst)
            reads.extend(state.out_edges_by_connector(edge.dst, "OUT_" + edge.dst_conn[3:]))
    if len(entries) != 1 or not writes or not reads:
        return None  # written here and not read (by a later state, or never): no hand-over inside the map
    (entry,) = entries
    if scopes[entry] is not None or len(entry.map.params) != 1 or not _parallel_levels(entry):
        return None
    dimension = _plane_dimension(state, entry, name, entry.map.params[0])
    sources = _sources(state, writes, reads) if dimension is not None else None
    if sources is None:
        return None
    return _Use(state, entry, writes, sources, access_nodes, dimension)


def _parallel_levels(entry: Any) -> bool:
    """The map runs its levels on the threads (each thread's buffer serves the levels it runs): several levels."""
    from dace import dtypes

    try:
        levels = int(entry.map.range.num_elements())
    except TypeError:
        return False
    return entry.map.schedule in (dtypes.ScheduleType.CPU_Multicore, dtypes.ScheduleType.Default) and levels > 1


def _plane_dimension(state: Any, entry: Any, name: str, param: str) -> Optional[int]:
    """The dimension along which every access of ``name`` in the map is level ``param`` itself; None if not so."""
    accesses = (footprint(state, entry, state.exit_node(entry)) or {}).get(name)
    if not accesses:
        return None
    planes = {plane_of(subset, param) if subset is not None else None for subset, _ in accesses}
    if len(planes) != 1:
        return None
    (plane,) = planes
    if plane is None or plane[1] != 0:
        return None
    return plane[0]


def _sources(state: Any, writes: list, reads: list) -> Optional[list[tuple[Any, Any]]]:
    """Per read, the last earlier write that covers it; None if a read has none or a write is conditional.

    Several rounds (write, read, write again, read) share the buffer: the
    merged body's order (every body before the next) keeps each read between
    the writes around it, as it was in memory.
    """
    for write in writes:
        if write.data.dynamic or write.data.wcr is not None or write.data.subset is None:
            return None
    sources = []
    for read in reads:
        earlier = [write for write in writes if _reaches(state, write.src, read.dst)]
        covering = [write for write in earlier
                    if read.data.subset is not None and write.data.subset.covers(read.data.subset)]
        if not covering:
            return None
        latest = [write for write in covering
                  if all(other is write or _reaches(state, other.src, write.src) for other in earlier)]
        sources.append((read, (latest or covering)[0]))
    return sources


def _add_plane(sdfg: Any, name: str, dimension: int) -> str:
    """A persistent one-level buffer shaped like ``name`` (stride 0 along ``dimension``); its name."""
    import copy

    from dace import dtypes, utils

    plane = copy.deepcopy(sdfg.arrays[name])
    plane.strides, plane.total_size = _plane_layout(plane.shape, dimension)
    plane.lifetime, plane.transient = dtypes.AllocationLifetime.Persistent, True
    plane.storage = dtypes.StorageType.CPU_ThreadLocal
    return sdfg.add_datadesc(utils.find_new_name(f"{name}_plane", sdfg.arrays.keys()), plane)


def _rewrite(use: _Use, new_name: str) -> None:
    """Route the hand-over through in-scope access nodes of the thread's buffer; the maps inside run sequentially."""
    from dace import dtypes
    from dace.sdfg import nodes

    state = use.state
    plane = state.sdfg.arrays[new_name]
    for node in state.scope_subgraph(use.entry, include_entry=False, include_exit=False).nodes():
        if isinstance(node, nodes.MapEntry):  # one thread runs a level: it alone reads and writes its buffer
            node.map.schedule = dtypes.ScheduleType.Sequential
    buffers = {}  # one access node per write: a read hangs off the write it reads (one memory: the buffer)
    for write in use.writes:
        _rename_tree(state, write, new_name, plane)
        buffers[write] = state.add_access(new_name)
        state.add_edge(write.src, write.src_conn, buffers[write], None, write.data)
    for read, write in use.sources:
        _rename_tree(state, read, new_name, plane)
        state.add_edge(buffers[write], None, read.dst, read.dst_conn, read.data)
        state.remove_edge(read)
    for write in use.writes:
        state.remove_edge(write)
    for node in use.outer_nodes:
        for edge in list(state.all_edges(node)):
            connector_node = edge.src if edge.dst is node else edge.dst
            state.remove_edge(edge)
            if edge.dst is node:
                connector_node.remove_in_connector("IN_" + edge.src_conn[4:])
                connector_node.remove_out_connector(edge.src_conn)
            else:
                connector_node.remove_in_connector(edge.dst_conn)
                connector_node.remove_out_connector("OUT_" + edge.dst_conn[3:])
        state.remove_node(node)


def _plane_layout(shape: Any, dimension: int) -> tuple[tuple, Any]:
    """Strides of a C-ordered array of ``shape`` without ``dimension`` (stride 0 there) and its size."""
    strides, step = [0] * len(shape), 1
    for axis in reversed(range(len(shape))):
        if axis == dimension:
            continue
        strides[axis] = step
        step = step * shape[axis]
    return tuple(strides), step


def _rename_tree(state: Any, edge: Any, new_name: str, plane: Any) -> None:
    """Every memlet of ``edge``'s tree names ``new_name``; nested SDFGs it reaches take the buffer's layout."""
    from dace.sdfg import nodes

    for tree_edge in state.memlet_tree(edge):
        tree_edge.data.data = new_name
        for node, connector in ((tree_edge.dst, tree_edge.dst_conn), (tree_edge.src, tree_edge.src_conn)):
            if isinstance(node, nodes.NestedSDFG) and connector is not None:
                _relayout(node.sdfg, connector, plane)


def _relayout(sdfg: Any, name: str, plane: Any) -> None:
    """``name`` in a nested SDFG (and in the SDFGs it nests) gets the buffer's strides and size."""
    from dace.sdfg import nodes

    inner = sdfg.arrays.get(name)
    if inner is None:
        return
    inner.strides, inner.total_size = plane.strides, plane.total_size
    for state in sdfg.states():
        for node in state.data_nodes():
            if node.data != name:
                continue
            for edge in state.all_edges(node):
                for tree_edge in state.memlet_tree(edge):
                    for other, connector in ((tree_edge.dst, tree_edge.dst_conn), (tree_edge.src, tree_edge.src_conn)):
                        if isinstance(other, nodes.NestedSDFG) and connector is not None:
                            _relayout(other.sdfg, connector, plane)
