"""Row blocking: the maps inside one fused vertical map run block by block, skewed.

[map k { A[i] ; B[i] ; C[i] }]  ==>  [map k { for b: A[rows of b - dA] ; B[rows of b - dB] ; C[rows of b - dC] }]

After vertical merging (:mod:`.vertical`), iteration ``k`` of a fused map runs
each stencil's horizontal map over the whole level, one after the other: at
192 x 192 a level of one field is 0.3 MB and a fused iteration touches a dozen
fields, so what one stencil wrote has left L2 when the next reads it. Row
blocking runs the horizontal maps (the *units*) over blocks of ``B`` rows of
their outermost parameter (for gt4py's ``dace:cpu`` layout ``i``, whose rows
are contiguous lines of ``j``): block ``b`` runs every unit in turn, unit
``u`` on rows ``[b*B - d_u, b*B + B - d_u)`` of its own range. The *skew*
``d_u`` delays a unit by as many rows as it reads ahead of what earlier units
produced, so each point is still computed exactly once, by the same
statements, from the same input values (no overcompute, no tile edges).

Legality (classic loop shifting / alignment): for every container a unit
writes, every access of every unit to it must be the single row ``p + c`` of
the unit's parameter ``p`` (offset ``c``, one array dimension for all accesses;
followed to the statements by :func:`.planes.footprint`). Then for units
``u`` before ``v`` touching a container that one of them writes, block ``b``
has run ``u`` on every row ``v``'s accesses need (flow), before ``v``
overwrites a row ``u`` still reads (anti), and before ``v`` writes a row
``u`` writes (output) iff ``d_v >= d_u + c_v - c_u`` for every pair of their
offsets. Each unit is a map (its points are independent), so splitting its
range into blocks is free. Horizontal regions are unaffected (points keep
their absolute index, a block edge is not a region edge), and so are
extended domains (a unit's own range is split, not clipped).

A fused map is left as it is if its body holds anything but horizontal
maps, if a unit's range is not known, if a written container is accessed in
a way the offsets cannot describe (a whole range of rows, a write-conflict
resolution, a view), or if one block would hold every row (small levels
already fit in cache). Nothing is removed and every write reaches memory:
results are bitwise identical to ``Python`` mode (``tests/fusion``).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any, Optional

from orchestra.passes.fusion.planes import footprint, plane_of
from orchestra.passes.fusion.vertical import free_connector

log = logging.getLogger("orchestra")

#: Bytes of the fused map's rows (all containers, skew included) one block may hold:
#: half of a 1 MiB L2 per core, the cache the consumer of a row should find it in.
BLOCK_BUDGET_BYTES = 512 * 1024
#: Fewest rows per block: a block's set-up must stay small against its work.
MIN_BLOCK_ROWS = 4


@dataclass(frozen=True)
class Unit:
    """One horizontal map inside a fused map: its entry, blocked parameter range and skew."""

    entry: Any
    begin: int
    end: int  # inclusive, as DaCe ranges are
    skew: int


@dataclass(frozen=True)
class BlockPlan:
    """How one fused map is blocked (see :func:`plan_blocks`)."""

    units: tuple[Unit, ...]
    rows: int  # B, rows per block
    first_block: int
    last_block: int


def tile_fused_maps(sdfg: Any, budget: Optional[int] = None) -> int:
    """Block the horizontal maps of every fused vertical map in ``sdfg`` (in place); returns maps blocked.

    ``budget``: bytes of rows one block may hold (default :data:`BLOCK_BUDGET_BYTES`).
    """
    budget = BLOCK_BUDGET_BYTES if budget is None else budget
    from dace.sdfg import nodes

    blocked = 0
    for state in list(sdfg.states()):
        children = state.scope_children()
        for entry in list(children[None]):
            if isinstance(entry, nodes.MapEntry) and len(entry.map.params) == 1:
                plan = plan_blocks(state, entry, children, budget)
                if isinstance(plan, BlockPlan):
                    _apply(state, entry, plan, f"__tile_b{blocked}")
                    blocked += 1
    for state in sdfg.states():
        for node in state.nodes():
            if isinstance(node, nodes.NestedSDFG):
                blocked += tile_fused_maps(node.sdfg, budget)
    return blocked


def plan_blocks(
    state: Any, outer: Any, children: Optional[dict] = None, budget: int = BLOCK_BUDGET_BYTES
) -> BlockPlan | str:
    """The block plan of the vertical map ``outer``, or why it is not blocked."""
    from dace.sdfg import nodes
    from dace.sdfg.utils import dfs_topological_sort

    children = state.scope_children() if children is None else children
    body = children[outer]
    outer_exit = state.exit_node(outer)
    entries = [node for node in body if isinstance(node, nodes.MapEntry)]
    exits = {state.exit_node(entry) for entry in entries}
    if len(entries) < 2:
        return "fewer than two horizontal maps"
    if any(node not in exits and node is not outer_exit and node not in entries for node in body):
        return "the body holds more than horizontal maps"
    order = [node for node in dfs_topological_sort(state, [outer]) if node in set(entries)]
    offsets, ranges = [], []
    for entry in order:
        begin, end, step = entry.map.range[0]
        try:
            begin, end, step = int(begin), int(end), int(step)
        except TypeError:
            return f"{entry.map.label}'s range is symbolic"
        if step != 1:
            return f"{entry.map.label} has a step"
        accesses = footprint(state, entry, state.exit_node(entry))
        if accesses is None:
            return f"{entry.map.label} has a dynamic range"
        offsets.append(accesses)
        ranges.append((begin, end))
    rows = _row_offsets(order, offsets)
    if isinstance(rows, str):
        return rows
    skews = _skews(rows)
    span = max(skews) - min(skews) + _reach(rows)
    block_rows = max(MIN_BLOCK_ROWS, budget // max(1, _bytes_per_row(state, offsets)) - span)
    first = min((begin + skew) // block_rows for (begin, _), skew in zip(ranges, skews))
    last = max((end + skew) // block_rows for (_, end), skew in zip(ranges, skews))
    if first == last:
        return "one block holds every row"
    units = tuple(Unit(entry, begin, end, skew) for entry, (begin, end), skew in zip(order, ranges, skews))
    return BlockPlan(units, block_rows, first, last)


#: Per unit: container -> [(row offset, is_write)].
RowOffsets = list[dict[str, list[tuple[int, bool]]]]


def _row_offsets(order: list, accesses: list[dict]) -> RowOffsets | str:
    """Each unit's row offsets for the containers the units write; a reason if one is not a single row."""
    written = {name for per_unit in accesses for name, items in per_unit.items() if any(w for _, w in items)}
    dimensions: dict[str, int] = {}
    rows: RowOffsets = []
    for entry, per_unit in zip(order, accesses):
        param = entry.map.params[0]
        found: dict[str, list[tuple[int, bool]]] = {}
        for name, items in per_unit.items():
            if name not in written:
                continue
            for subset, is_write in items:
                plane = plane_of(subset, param) if subset is not None else None
                if plane is None or not _is_int(plane[1]):
                    return f"{name} is not accessed one row at a time in {entry.map.label}"
                if dimensions.setdefault(name, plane[0]) != plane[0]:
                    return f"{name} is blocked along two dimensions"
                found.setdefault(name, []).append((int(plane[1]), is_write))
        rows.append(found)
    return rows


def _is_int(value: Any) -> bool:
    try:
        int(value)
    except TypeError:
        return False
    return True


def _skews(rows: RowOffsets) -> list[int]:
    """The smallest skews with ``d_v >= d_u + c_v - c_u`` for every dependent access pair (u before v)."""
    skews: list[int] = []
    for v, later in enumerate(rows):
        bound: Optional[int] = None
        for u, earlier in enumerate(rows[:v]):
            for name, items in later.items():
                for c_u, write_u in earlier.get(name, ()):
                    for c_v, write_v in items:
                        if write_u or write_v:
                            need = skews[u] + c_v - c_u
                            bound = need if bound is None else max(bound, need)
        skews.append(0 if bound is None else bound)
    return skews


def _reach(rows: RowOffsets) -> int:
    """How many rows apart the accesses of one unit's row lie (the stencil's extent along the rows)."""
    offsets = [c for per_unit in rows for items in per_unit.values() for c, _ in items]
    return max(offsets) - min(offsets) + 1 if offsets else 1


def _bytes_per_row(state: Any, accesses: list[dict]) -> int:
    """Bytes one row of every container the fused map touches occupies, on one level."""
    arrays = state.sdfg.arrays
    names = {name for per_unit in accesses for name in per_unit}
    total = 0
    for name in names:
        desc = arrays[name]
        elements = 1
        for size in desc.shape[1:]:
            elements *= int(size) if _is_int(size) else 1
        levels = int(desc.shape[-1]) if len(desc.shape) == 3 and _is_int(desc.shape[-1]) else 1
        total += desc.dtype.bytes * max(1, elements // levels)
    return total


def _apply(state: Any, outer: Any, plan: BlockPlan, param: str) -> None:
    """Put a sequential map over blocks around the units and give each unit its block's rows."""
    import dace
    import sympy

    block = dace.symbolic.symbol(param)
    outer_exit = state.exit_node(outer)
    inner_entry, inner_exit = state.add_map(
        f"{outer.map.label}_blocks", {param: f"{plan.first_block}:{plan.last_block + 1}"},
        schedule=dace.ScheduleType.Sequential,
    )
    _reroute_inputs(state, outer, inner_entry)
    _reroute_outputs(state, outer_exit, inner_exit)
    for unit in plan.units:
        start = block * plan.rows - unit.skew
        unit.entry.map.range[0] = (
            sympy.Max(unit.begin, start), sympy.Min(unit.end, start + plan.rows - 1), 1,
        )
    log.debug("%s: %d units in blocks of %d rows", outer.map.label, len(plan.units), plan.rows)


def _reroute_inputs(state: Any, outer: Any, inner: Any) -> None:
    import dace

    state.add_nedge(outer, inner, dace.Memlet())
    for edge in list(state.out_edges(outer)):
        if edge.dst is inner:
            continue
        if edge.data.is_empty():
            state.add_edge(inner, None, edge.dst, edge.dst_conn, dace.Memlet())
        else:
            name = free_connector(inner, edge.data.data)
            inner.add_in_connector("IN_" + name)
            inner.add_out_connector("OUT_" + name)
            state.add_edge(outer, edge.src_conn, inner, "IN_" + name, copy.deepcopy(edge.data))
            state.add_edge(inner, "OUT_" + name, edge.dst, edge.dst_conn, copy.deepcopy(edge.data))
        state.remove_edge(edge)


def _reroute_outputs(state: Any, outer_exit: Any, inner_exit: Any) -> None:
    import dace

    state.add_nedge(inner_exit, outer_exit, dace.Memlet())
    for edge in list(state.in_edges(outer_exit)):
        if edge.src is inner_exit:
            continue
        if edge.data.is_empty():
            state.add_edge(edge.src, edge.src_conn, inner_exit, None, dace.Memlet())
        else:
            name = free_connector(inner_exit, edge.data.data)
            inner_exit.add_in_connector("IN_" + name)
            inner_exit.add_out_connector("OUT_" + name)
            state.add_edge(edge.src, edge.src_conn, inner_exit, "IN_" + name, copy.deepcopy(edge.data))
            state.add_edge(inner_exit, "OUT_" + name, outer_exit, edge.dst_conn, copy.deepcopy(edge.data))
        state.remove_edge(edge)


def _is_outermost(node: Any, children: dict, outer: Any, blocks: list) -> bool:
    """True if ``node`` is a map directly in ``outer`` or directly in its block map."""
    return node in children[outer] or any(node in children[block] for block in blocks)


def describe_blocking(sdfg: Any) -> list[dict[str, Any]]:
    """Per vertical map with horizontal maps inside (top level of each state): blocked or why not.

    Each entry: ``kernel`` (the stencils whose maps it runs, in order),
    ``blocked`` (bool), and ``rows`` (per block) or ``why`` (the reason
    :func:`plan_blocks` gives with the default budget).
    """
    from dace.sdfg import nodes
    from dace.sdfg.utils import dfs_topological_sort

    found = []
    for state in sdfg.states():
        children = state.scope_children()
        for entry in children[None]:
            if not isinstance(entry, nodes.MapEntry) or len(entry.map.params) != 1:
                continue
            body = set(state.scope_subgraph(entry, include_entry=False, include_exit=False).nodes())
            inner = [n for n in dfs_topological_sort(state, [entry]) if n in body and isinstance(n, nodes.MapEntry)]
            blocks = [n for n in inner if n.map.label.endswith("_blocks")]
            names = [n.map.label.split("__")[0] for n in inner if n not in blocks and _is_outermost(n, children, entry, blocks)]
            kernel = [name for i, name in enumerate(names) if i == 0 or names[i - 1] != name]
            if blocks:
                begin, end, _ = blocks[0].map.range[0]
                found.append({"kernel": kernel, "blocked": True, "blocks": int(end) - int(begin) + 1})
            elif inner:
                plan = plan_blocks(state, entry, children)
                why = plan if isinstance(plan, str) else "blocking was not selected"
                found.append({"kernel": kernel, "blocked": False, "why": why})
    return found
