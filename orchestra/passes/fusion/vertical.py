"""Vertical merging: consecutive maps over the same ``k`` range become one map.

[map k { body1 }] -> A -> [map k { body2 }]   ==>   [map k { body1 -> A' -> body2 }]

gt4py's ``dace:cpu`` stencils are each a vertical map over ``k`` around a
horizontal map; two ``PARALLEL`` stencils in a row over the same levels are two
passes over memory. Merged, iteration ``k`` runs both bodies on level ``k``
while the level's data is still in cache, and a step opens one parallel region
instead of one per stencil.

A pair ``M1 -> M2`` is merged when all of these hold (anything else stays as it
is):

* both are maps of one parameter with the same range and schedule, in the
  same scope of one state, and ``M2`` reads something ``M1`` writes through
  an access node between them (nothing else lies on any path from ``M1`` to
  ``M2``);
* the plane condition of :mod:`.planes` holds for every container either writes;
* an access node between them whose container ``M2`` writes has no reader
  besides ``M2`` (that reader would see ``M2``'s values after merging).

The merged body keeps ``M1``'s body before ``M2``'s: every sink of ``M1``'s
body gets an ordering edge to every source of ``M2``'s, so ``M2`` reads what
``M1`` wrote in this iteration and a read in ``M1`` of something ``M2``
overwrites still happens first. Data ``M1`` hands to ``M2`` is read in place
(the scope's memlets are pointers into the same arrays). Every container
keeps its full shape and every write still reaches memory (nothing is
removed), so the merged program computes the same values in the same order per
point: results are bitwise identical (``tests/fusion``).
"""

from __future__ import annotations

import logging
from typing import Any, Iterator, Optional

from orchestra.passes.fusion.planes import footprint, planes_agree
from orchestra.passes.stencil_labels import stencils_of_kernel

log = logging.getLogger("orchestra")


def merge_vertical_maps(sdfg: Any) -> int:
    """Merge consecutive single-parameter maps everywhere in ``sdfg`` (in place); returns merges done."""
    from dace.sdfg import nodes

    merged = 0
    for state in list(sdfg.states()):
        footprints = _Footprints(state)
        while True:
            pair = next(_mergeable_pairs(state, footprints), None)
            if pair is None:
                break
            joined = footprints.joined(*pair)
            _merge(state, *pair)
            footprints.merged(*pair, joined)
            merged += 1
    for state in sdfg.states():
        for node in state.nodes():
            if isinstance(node, nodes.NestedSDFG):
                merged += merge_vertical_maps(node.sdfg)
    return merged


class _Footprints:
    """The footprints of one state's maps (:func:`.planes.footprint`), each also renamed into another map's
    parameter, remembered until a merge changes the map.

    A merged map's footprint is the union of the two bodies' footprints, the
    second renamed into the first's parameter: the merged body is the two
    bodies, and the accesses of each reach the same statements as before. So
    it is joined rather than walked again over a body that grows with every
    merge (which made a long chain of merges quadratic).
    """

    def __init__(self, state: Any) -> None:
        self.state = state
        self._own: dict = {}
        self._renamed: dict = {}

    def of(self, entry: Any) -> Optional[dict]:
        """``entry``'s map's footprint (None: one the plane condition cannot reason about)."""
        if entry not in self._own:
            self._own[entry] = footprint(self.state, entry, self.state.exit_node(entry))
        return self._own[entry]

    def renamed(self, entry: Any, param: str) -> Optional[dict]:
        """``entry``'s footprint with its map's parameter renamed to ``param``."""
        if (entry, param) not in self._renamed:
            own = self.of(entry)
            self._renamed[entry, param] = None if own is None else _renamed(own, entry.map.params[0], param)
        return self._renamed[entry, param]

    def joined(self, first_entry: Any, second_entry: Any) -> dict:
        """The footprint of the map merging ``second_entry``'s into ``first_entry``'s (class docstring)."""
        joined = {name: list(items) for name, items in self.of(first_entry).items()}
        for name, items in self.renamed(second_entry, first_entry.map.params[0]).items():
            joined.setdefault(name, []).extend(items)
        return joined

    def merged(self, first_entry: Any, second_entry: Any, joined: dict) -> None:
        """``second_entry``'s map was merged into ``first_entry``'s, whose footprint is now ``joined``."""
        self._own.pop(second_entry, None)
        self._own[first_entry] = joined
        for key in [key for key in self._renamed if key[0] is first_entry or key[0] is second_entry]:
            del self._renamed[key]


def _mergeable_pairs(state: Any, footprints: _Footprints) -> Iterator[tuple[Any, Any]]:
    from dace.sdfg import nodes

    scopes = state.scope_dict()
    for first_exit in state.nodes():
        if not isinstance(first_exit, nodes.MapExit) or len(first_exit.map.params) != 1:
            continue
        first_entry = state.entry_node(first_exit)
        for entry in _followers(state, first_exit):
            if scopes[entry] is scopes[first_entry] and _why_not(state, first_entry, entry, footprints) is None:
                yield first_entry, entry


def _followers(state: Any, first_exit: Any) -> list[Any]:
    """The map entries that read, through one access node, something the map of ``first_exit`` wrote."""
    from dace.sdfg import nodes

    found = [
        out.dst
        for edge in state.out_edges(first_exit)
        if isinstance(edge.dst, nodes.AccessNode)
        for out in state.out_edges(edge.dst)
        if isinstance(out.dst, nodes.MapEntry)
    ]
    return list(dict.fromkeys(found))


def _why_not(state: Any, first_entry: Any, second_entry: Any, footprints: Optional[_Footprints] = None) -> Optional[str]:
    """None if the two maps may be merged, else the reason they may not (``footprints``: the state's, remembered)."""
    from dace import data

    first, second = first_entry.map, second_entry.map
    if len(second.params) != 1 or first.range != second.range or first.schedule != second.schedule:
        return "different iteration spaces or schedules"
    intermediates = _intermediates(state, state.exit_node(first_entry), second_entry)
    if intermediates is None:
        return "another node lies between the maps"
    footprints = _Footprints(state) if footprints is None else footprints
    first_accesses, second_accesses = footprints.of(first_entry), footprints.of(second_entry)
    if first_accesses is None or second_accesses is None:
        return "a memlet the plane condition cannot reason about"
    broken = planes_agree(first_accesses, footprints.renamed(second_entry, first.params[0]), first.params[0])
    if broken is not None:
        return f"{broken} is accessed outside one plane"
    written_by_second = {name for name, items in second_accesses.items() if any(w for _, w in items)}
    for node in intermediates:
        if node.data in written_by_second and any(e.dst is not second_entry for e in state.out_edges(node)):
            return f"{node.data} is read elsewhere between the maps"
        if isinstance(node.desc(state.sdfg), data.View):
            return f"{node.data} is a view"
    return None


def _intermediates(state: Any, first_exit: Any, second_entry: Any) -> Optional[list[Any]]:
    """Access nodes written by the first map and read by the second; None if any other path joins them."""
    from dace.sdfg import nodes

    found = []
    for edge in state.out_edges(first_exit):
        node = edge.dst
        if not isinstance(node, nodes.AccessNode):
            if _reaches(state, node, second_entry):
                return None
            continue
        for out in state.out_edges(node):
            if out.dst is second_entry:
                if node not in found:
                    found.append(node)
            elif _reaches(state, out.dst, second_entry):
                return None
    if not found or any(state.in_degree(node) != 1 for node in found):
        return None
    for edge in state.in_edges(second_entry):
        if edge.src not in found and _reaches(state, first_exit, edge.src):
            return None
    return found


def _reaches(state: Any, begin: Any, end: Any) -> bool:
    stack, seen = [begin], set()
    while stack:
        node = stack.pop()
        if node is end:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edge.dst for edge in state.out_edges(node))
    return False


def _renamed(accesses: dict, old: str, new: str) -> dict:
    import copy

    from dace import symbolic

    if old == new:
        return accesses
    renamed = {}
    for name, items in accesses.items():
        renamed[name] = []
        for subset, is_write in items:
            if subset is not None and old in {str(symbol) for symbol in subset.free_symbols}:
                subset = copy.deepcopy(subset)
                symbolic.safe_replace({old: new}, subset.replace)
            renamed[name].append((subset, is_write))
    return renamed


def _merge(state: Any, first_entry: Any, second_entry: Any) -> None:
    """Move ``second``'s body into ``first``'s scope, data through inner access nodes, in order."""
    from dace.transformation.dataflow import map_fusion_helper

    first_exit, second_exit = state.exit_node(first_entry), state.exit_node(second_entry)
    map_fusion_helper.rename_map_parameters(first_entry.map, second_entry.map, second_entry, state)
    first_sinks = [edge.src for edge in state.in_edges(first_exit)]
    second_sources = [edge.dst for edge in state.out_edges(second_entry)]
    _read_before_scope(state, first_exit, second_entry)
    _move_inputs(state, second_entry, first_entry)
    _move_outputs(state, second_exit, first_exit)
    state.remove_node(second_entry)
    state.remove_node(second_exit)
    _order(state, first_sinks, second_sources)
    log.debug("%s: merged %s into %s", state.label, second_entry.map.label, first_entry.map.label)


def _read_before_scope(state: Any, first_exit: Any, second_entry: Any) -> None:
    """``second`` reads what ``first`` wrote through a new access node before the merged scope.

    Inside the scope each body reads and writes memory in place (CPU maps pass
    pointers), as an in-place update ``q = q + 1`` does; the ordering edges of
    :func:`_order` make ``first``'s writes happen before ``second``'s reads.
    An access node inside the scope would be lowered to a copy.
    """
    for outer in list(state.out_edges(first_exit)):
        node = outer.dst
        for reader in [e for e in state.out_edges(node) if e.dst is second_entry]:
            state.add_edge(state.add_access(node.data), None, second_entry, reader.dst_conn, reader.data)
            state.remove_edge(reader)


def _move_inputs(state: Any, from_entry: Any, to_entry: Any) -> None:
    for outer in list(state.in_edges(from_entry)):
        if outer.data.is_empty():
            state.add_edge(outer.src, outer.src_conn, to_entry, None, outer.data)
            continue
        name = free_connector(to_entry, outer.dst_conn[3:])
        to_entry.add_in_connector("IN_" + name)
        to_entry.add_out_connector("OUT_" + name)
        state.add_edge(outer.src, outer.src_conn, to_entry, "IN_" + name, outer.data)
        for inner in list(state.out_edges_by_connector(from_entry, "OUT_" + outer.dst_conn[3:])):
            state.add_edge(to_entry, "OUT_" + name, inner.dst, inner.dst_conn, inner.data)
    for inner in list(state.out_edges(from_entry)):
        if inner.src_conn is None:
            state.add_edge(to_entry, None, inner.dst, inner.dst_conn, inner.data)
    for edge in list(state.all_edges(from_entry)):
        state.remove_edge(edge)


def _move_outputs(state: Any, from_exit: Any, to_exit: Any) -> None:
    for outer in list(state.out_edges(from_exit)):
        if outer.data.is_empty():
            state.add_edge(to_exit, None, outer.dst, outer.dst_conn, outer.data)
            continue
        name = free_connector(to_exit, outer.src_conn[4:])
        to_exit.add_in_connector("IN_" + name)
        to_exit.add_out_connector("OUT_" + name)
        state.add_edge(to_exit, "OUT_" + name, outer.dst, outer.dst_conn, outer.data)
        for inner in list(state.in_edges_by_connector(from_exit, "IN_" + outer.src_conn[4:])):
            state.add_edge(inner.src, inner.src_conn, to_exit, "IN_" + name, inner.data)
    for inner in list(state.in_edges(from_exit)):
        if inner.dst_conn is None:
            state.add_edge(inner.src, inner.src_conn, to_exit, None, inner.data)
    for edge in list(state.all_edges(from_exit)):
        state.remove_edge(edge)


def free_connector(node: Any, wanted: str) -> str:
    """``wanted``, or ``wanted_N`` if ``node`` already has an ``IN_``/``OUT_`` connector of that name."""
    name, suffix = wanted, 0
    while "IN_" + name in node.in_connectors or "OUT_" + name in node.out_connectors:
        suffix += 1
        name = f"{wanted}_{suffix}"
    return name


def _order(state: Any, first_sinks: list, second_sources: list) -> None:
    """Every node that ended ``first``'s body runs before every node that began ``second``'s."""
    import dace

    for sink in dict.fromkeys(first_sinks):
        for source in dict.fromkeys(second_sources):
            if source is not sink and not _reaches(state, sink, source):
                state.add_nedge(sink, source, dace.Memlet())


def describe_fusion(sdfg: Any) -> dict[str, list]:
    """What fused and what did not, in an optimized SDFG (for profiles and logs).

    ``fused``: per vertical map, the stencils whose maps it runs, in order
    (:func:`~orchestra.passes.stencil_labels.stencils_of_kernel`; a map of
    no stencil by its label); ``not_fused``: per
    pair of vertical maps joined by an access node that stayed apart, their
    labels and the reason.
    """
    from dace.sdfg import nodes

    fused, not_fused = [], []
    for state in sdfg.states():
        children = state.scope_children()
        top_level = set(children[None])
        for entry in children[None]:
            if isinstance(entry, nodes.MapEntry) and len(entry.map.params) == 1:
                fused.append(stencils_of_kernel(state, entry) or [entry.map.label])
        for first_exit in state.nodes():
            if not isinstance(first_exit, nodes.MapExit):
                continue
            first_entry = state.entry_node(first_exit)
            if first_entry not in top_level:
                continue
            for second_entry in _followers(state, first_exit):
                if len(first_entry.map.params) != 1:
                    reason = "not a single-parameter map"
                else:
                    reason = _why_not(state, first_entry, second_entry) or "mergeable (fusion was not selected)"
                not_fused.append({"first": first_entry.map.label, "second": second_entry.map.label, "why": reason})
    return {"fused": fused, "not_fused": not_fused}
