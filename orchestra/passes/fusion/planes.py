"""When may two consecutive maps over one index run as one map? The plane condition.

Two maps ``M1`` then ``M2`` over the same range of one parameter ``k`` (for gt4py
stencils: the vertical maps of two ``PARALLEL`` computations) compute the same
as one map whose iteration ``k`` runs ``M1``'s body and then ``M2``'s body, if
no iteration of one body touches what another iteration of the other body
writes. That holds when, for every container either map writes, every access
of both bodies (followed from the map's boundary down to the statements, see
:func:`footprint`) lies in one plane ``k + c`` of one
dimension, with the same dimension and the same ``c`` for every access. Then
iteration ``k`` of either body touches plane ``k + c`` of that container only,
and no other iteration touches it; inside iteration ``k``, ``M1``'s body still
runs first (the fused scope orders it, see :mod:`.vertical`). Containers that
neither map writes may be read anywhere.

What the condition refuses, and why each is a real hazard:

* an offset read along ``k`` (``q[0, 0, -1]``) of a field either map writes:
  iteration ``k`` would read a plane another iteration has not yet written;
* a written container without a ``k`` dimension (a 2-D field, a scalar): every
  iteration would write the same memory;
* write-conflict resolution (accumulations), views, and memlets without a
  subset: their footprint is not a plain plane.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

#: (dimension, offset): the plane ``index[dimension] == k + offset``.
Plane = tuple[int, Any]


def _names(expression: Any) -> set[str]:
    return {str(symbol) for symbol in getattr(expression, "free_symbols", ())}


def plane_of(subset: Any, param: str) -> Optional[Plane]:
    """The plane ``subset`` lies in along the map parameter ``param``, or None if it is not one plane.

    One dimension must be the single point ``param + c`` (``c`` free of
    ``param``); no other dimension may depend on ``param``.
    """
    from dace import subsets

    if not isinstance(subset, subsets.Range):
        return None  # also an unknown footprint (None)
    try:
        ranges = tuple(tuple(dimension) for dimension in subset.ranges)
        hash(ranges)
    except TypeError:  # an entry sympy cannot hash: asked afresh
        return _plane_of_ranges.__wrapped__(tuple(subset.ranges), param)
    return _plane_of_ranges(ranges, param)


@functools.lru_cache(maxsize=1 << 16)
def _plane_of_ranges(ranges: tuple, param: str) -> Optional[Plane]:
    """:func:`plane_of` of a range's (begin, end, step) per dimension: remembered, as the fusion passes ask
    it of the same few index expressions for every pair of maps they consider."""
    from dace import symbolic

    found: Optional[Plane] = None
    for dimension, (begin, end, step) in enumerate(ranges):
        begin, end, step = (symbolic.pystr_to_symbolic(x) if isinstance(x, str) else x for x in (begin, end, step))
        if not any(param in _names(x) for x in (begin, end, step)):
            continue
        (symbol,) = [s for s in begin.free_symbols if str(s) == param] or [None]
        if found is not None or symbol is None or param in _names(step):
            return None
        offset = symbolic.simplify(begin - symbol)
        if param in _names(offset) or symbolic.simplify(end - begin) != 0:
            return None
        found = (dimension, offset)
    return found


def footprint(state: Any, entry: Any, exit_: Any) -> Optional[dict[str, list[tuple[Any, bool]]]]:
    """Per container: (subset, is_write) of every access one iteration of the map makes.

    The memlets at the map's boundary over-approximate (a nested SDFG's memlet
    spans from its base pointer to the largest index read, ``0:k+1`` for a
    read of level ``k``), so each is followed down to the statements that
    access the data, through inner maps and nested SDFGs, and translated back
    to the map's frame (nested symbols through the symbol mapping; a nested
    SDFG addresses the container as its caller does, DaCe 2's contract, so
    its indices need no other translation). An access
    the plane condition cannot reason about has the subset None; the whole
    result is None for a dynamic map range.
    """
    accesses: dict[str, list[tuple[Any, bool]]] = {}
    if any(not connector.startswith("IN_") for connector in entry.in_connectors):
        return None  # a dynamic map range
    boundary = [(edge, False) for edge in state.out_edges(entry)] + [(edge, True) for edge in state.in_edges(exit_)]
    for edge, is_write in boundary:
        if edge.data.is_empty():
            continue
        found = _leaf_subsets(state, edge, is_write, [])
        accesses.setdefault(edge.data.data, []).extend((subset, is_write) for subset in found)
    return accesses


#: How an index in a nested SDFG becomes one in the map's frame: per level
#: (innermost first), the nested SDFG's symbol mapping.
Frames = list[dict]


def _leaf_subsets(state: Any, edge: Any, is_write: bool, frames: Frames) -> list[Any]:
    """The subsets (None: unknown) of every statement the memlet tree of ``edge`` reaches."""
    from dace import data as dace_data
    from dace.sdfg import nodes

    subsets_found: list[Any] = []
    for leaf in state.memlet_tree(edge).leaves():
        memlet = leaf.data
        if memlet.is_empty():
            continue
        subset = (memlet.dst_subset if is_write else memlet.src_subset) or memlet.subset
        node, connector = (leaf.src, leaf.src_conn) if is_write else (leaf.dst, leaf.dst_conn)
        if memlet.wcr is not None or isinstance(state.sdfg.arrays[memlet.data], dace_data.View) or subset is None:
            subsets_found.append(None)
        elif isinstance(node, nodes.NestedSDFG):
            if _addresses_the_container(state.sdfg.arrays[memlet.data], node, connector):
                subsets_found.extend(_nested_subsets(node, connector, [node.symbol_mapping] + frames))
            else:  # a window of the container (DaCe 1.x's nested SDFGs): its indices are not the caller's
                subsets_found.append(None)
        else:
            subsets_found.append(_to_map_frame(subset, frames))
    return subsets_found


def _addresses_the_container(outer: Any, nsdfg: Any, connector: Optional[str]) -> bool:
    """True if the nested SDFG's ``connector`` is the caller's container itself (its indices are the caller's).

    Under DaCe 2.0's nested-SDFG contract it is; a connector describing a
    window of the container (DaCe 1.x, kept by SDFGs not converted with
    ``dace.sdfg.dealias.convert_legacy_nested_sdfgs``) indexes from the
    window's origin, and reading its indices as the caller's would put an
    access in the wrong plane.
    """
    inner = nsdfg.sdfg.arrays.get(connector)
    return inner is not None and inner.is_equivalent(outer, symbol_mapping=nsdfg.symbol_mapping)


def _nested_subsets(nsdfg: Any, name: str, frames: Frames) -> list[Any]:
    """Every access to ``name`` inside the nested SDFG, in the map's frame."""
    from dace import data as dace_data
    from dace.sdfg import nodes

    sdfg = nsdfg.sdfg
    if isinstance(sdfg.arrays.get(name), dace_data.View) or _read_between_states(sdfg, name):
        return [None]
    found: list[Any] = []
    for inner_state in sdfg.states():
        for node in inner_state.data_nodes():
            if node.data != name:
                continue
            for edge, is_write in [(e, True) for e in inner_state.in_edges(node)] + [
                (e, False) for e in inner_state.out_edges(node)
            ]:
                if edge.data.is_empty():
                    continue
                if isinstance(edge.src if is_write else edge.dst, nodes.AccessNode):
                    found.append(None)  # a copy between containers: not followed
                else:
                    found.extend(_leaf_subsets(inner_state, edge, is_write, frames))
    return found


def _read_between_states(sdfg: Any, name: str) -> bool:
    """True if a condition or assignment between states reads ``name`` (no memlet shows it)."""
    for edge in sdfg.all_interstate_edges():
        if name in edge.data.free_symbols:
            return True
    return False


def _to_map_frame(subset: Any, frames: Frames) -> Optional[Any]:
    import copy

    from dace import symbolic

    subset = copy.deepcopy(subset)
    for mapping in frames:
        used = {str(symbol) for symbol in subset.free_symbols}
        changed = {k: str(v) for k, v in mapping.items() if k in used and str(v) != k}
        if changed:  # substituting only what changes: sympy's subs dominates the pass's time
            symbolic.safe_replace(changed, subset.replace)
    return subset


def planes_agree(first: dict, second: dict, param: Any) -> Optional[str]:
    """None if the two maps' accesses satisfy the plane condition, else the container that breaks it."""
    merged: dict[str, list[tuple[Any, bool]]] = {}
    for accesses in (first, second):
        for name, items in accesses.items():
            merged.setdefault(name, []).extend(items)
    for name, items in merged.items():
        if not any(is_write for _, is_write in items):
            continue
        planes = {plane_of(subset, param) for subset, _ in items}
        if None in planes or len(planes) != 1:
            return name
    return None
