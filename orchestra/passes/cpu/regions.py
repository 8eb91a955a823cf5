"""Split maps at horizontal-region boundaries: [map { if region... }] -> [one map per piece].

gt4py lowers ``with horizontal(region[...])`` to a nested SDFG inside the
stencil's horizontal map whose conditional blocks test the map indices
(``if __j >= 1 and __j < 2: ...``). When the region runs along the map's
innermost (contiguous) index, every point of the inner loop evaluates those
branches, and the compiler can neither hoist nor vectorize them: on the
shallow-water dycore the y-face fluxes took 2.7 times as long as the x-face
fluxes, which do the same work with their regions on the outer index.

:class:`SplitRegionMaps` cuts the innermost range of such a map at every
constant the region conditions compare that index with, so that on each
piece every comparison has one known value; the CPU pass
``split_region_maps_outer`` then does the same along the index outside it
(regions on ``i``: the innermost loop of a piece is vectorized only without
branches, see :mod:`.simd`). The map is copied once
per piece; in each copy's nested SDFG the branches that cannot run on that
piece are removed and those that always run become unconditional. The bulk
piece then has no branches left. Only control flow changes: the same statements
run on the same points in the same order of operations, so results are
bitwise identical (``tests/benchmarks/test_cpu_passes.py``).

Runs alone on any SDFG::

    SplitRegionMaps().apply_pass(sdfg, {})   # maps split, or None if nothing applied
"""

from __future__ import annotations

import ast
import contextlib
import copy
from typing import Any, Iterator, Optional

from dace.transformation import pass_pipeline as ppl

#: At most this many pieces per map (bounds the generated code's size).
MAX_PIECES = 8

_FLIPPED = {ast.GtE: ast.LtE, ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def _constant(node: ast.AST) -> Optional[int]:
    """The integer value of an expression of literals only (``25 + (-2)``), else None."""
    if any(isinstance(n, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<region bound>", "eval"), {"__builtins__": {}}, {})  # noqa: S307
    except Exception:  # noqa: BLE001 (not a constant expression)
        return None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def comparisons(node: ast.AST, symbol: str) -> list[tuple[ast.cmpop, int]]:
    """Every ``symbol <op> constant`` in ``node`` (``constant <op> symbol`` flipped)."""
    found = []
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Compare) or len(sub.ops) != 1:
            continue
        left, right, op = sub.left, sub.comparators[0], sub.ops[0]
        if isinstance(left, ast.Name) and left.id == symbol and _constant(right) is not None:
            found.append((op, _constant(right)))
        elif isinstance(right, ast.Name) and right.id == symbol and _constant(left) is not None:
            if type(op) in _FLIPPED:
                found.append((_FLIPPED[type(op)](), _constant(left)))
    return found


def _compare(op: ast.cmpop, low: int, high: int, c: int) -> Optional[bool]:
    """``x <op> c`` for every x in [low, high]: True, False, or None (depends on x)."""
    if isinstance(op, ast.GtE):
        return True if low >= c else False if high < c else None
    if isinstance(op, ast.Gt):
        return True if low > c else False if high <= c else None
    if isinstance(op, ast.Lt):
        return True if high < c else False if low >= c else None
    if isinstance(op, ast.LtE):
        return True if high <= c else False if low > c else None
    if isinstance(op, ast.Eq):
        return True if low == high == c else False if not low <= c <= high else None
    if isinstance(op, ast.NotEq):
        equal = _compare(ast.Eq(), low, high, c)
        return None if equal is None else not equal
    return None


def evaluate(node: ast.AST, symbol: str, low: int, high: int) -> Optional[bool]:
    """The value of condition ``node`` for every ``symbol`` in [low, high], or None if it varies.

    >>> evaluate(ast.parse("(j >= 1) and (j < 2)", mode="eval").body, "j", 2, 20)
    False
    >>> evaluate(ast.parse("(i == 0) and (j >= 1)", mode="eval").body, "j", 2, 20) is None
    True
    """
    if isinstance(node, ast.Expr):
        return evaluate(node.value, symbol, low, high)
    if isinstance(node, ast.BoolOp):
        values = [evaluate(v, symbol, low, high) for v in node.values]
        decisive = isinstance(node.op, ast.Or)  # True decides an Or, False an And
        if any(v is decisive for v in values):
            return decisive
        return (not decisive) if all(v is (not decisive) for v in values) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = evaluate(node.operand, symbol, low, high)
        return None if value is None else not value
    if isinstance(node, ast.Compare):
        found = comparisons(node, symbol)
        if len(found) == 1 and len(node.ops) == 1:
            return _compare(found[0][0], low, high, found[0][1])
    return None


def _condition(codeblock: Any) -> Optional[ast.AST]:
    code = getattr(codeblock, "code", None)
    return code[0] if isinstance(code, list) and len(code) == 1 else None


def _conditional_blocks(sdfg: Any) -> list[Any]:
    from dace.sdfg.state import ConditionalBlock

    return [block for block in sdfg.all_control_flow_blocks() if isinstance(block, ConditionalBlock)]


def cut_points(sdfg: Any, symbol: str) -> set[int]:
    """Where the value of some region condition in ``sdfg`` can change as ``symbol`` grows."""
    cuts: set[int] = set()
    for block in _conditional_blocks(sdfg):
        for codeblock, _ in block.branches:
            node = _condition(codeblock) if codeblock is not None else None
            for op, c in comparisons(node, symbol) if node is not None else ():
                if isinstance(op, (ast.GtE, ast.Lt)):
                    cuts.add(c)
                elif isinstance(op, (ast.Gt, ast.LtE)):
                    cuts.add(c + 1)
                else:
                    cuts.update((c, c + 1))
    return cuts


def _live_branches(block: Any, symbol: str, low: int, high: int) -> tuple[list[Any], bool]:
    """The branches of ``block`` that can run for ``symbol`` in [low, high], and whether the last always does."""
    live = []
    for codeblock, region in block.branches:
        node = _condition(codeblock) if codeblock is not None else None
        value = evaluate(node, symbol, low, high) if node is not None else None
        if value is False:
            continue
        live.append([codeblock, region])
        if value is True:
            return live, True  # later branches of an if/elif chain cannot run
    return live, False


@contextlib.contextmanager
def dead_branches_hidden(sdfg: Any, symbol: str, low: int, high: int) -> Iterator[None]:
    """While inside, ``sdfg``'s conditional blocks hold only the branches that can run for ``symbol`` in [low, high].

    A copy made inside and then specialized equals a copy of the whole
    ``sdfg`` specialized, without copying the branches that specializing
    drops (a block none of whose branches can run is copied without branches,
    and :func:`specialize` replaces it by an empty state as it would have).
    Restored on leaving.
    """
    hidden = []
    for block in _conditional_blocks(sdfg):
        live, _ = _live_branches(block, symbol, low, high)
        if len(live) != len(block.branches):
            hidden.append((block, block._branches))
            block._branches = live
    try:
        yield
    finally:
        for block, branches in reversed(hidden):
            block._branches = branches


def specialize(sdfg: Any, symbol: str, low: int, high: int) -> int:
    """Drop the branches of ``sdfg`` that cannot run for ``symbol`` in [low, high]; returns how many blocks changed.

    A branch that always runs there loses its condition, and the branches after it go; a block left
    without branches (or that had none) becomes an empty state.
    """
    from dace.properties import CodeBlock

    changed = 0
    for block in _conditional_blocks(sdfg):
        live, always = _live_branches(block, symbol, low, high)
        if live and not always and len(live) == len(block.branches):
            continue
        changed += 1
        if always:
            live[-1][0] = CodeBlock("True")
        if live:
            block._branches = live
        else:
            _replace_by_empty_state(block)
    return changed


def _replace_by_empty_state(block: Any) -> None:
    graph = block.parent_graph
    empty = graph.add_state(f"{block.label}_never")
    for edge in graph.in_edges(block):
        graph.add_edge(edge.src, empty, edge.data)
    for edge in graph.out_edges(block):
        graph.add_edge(empty, edge.dst, edge.data)
    was_start = graph.start_block is block
    graph.remove_node(block)
    if was_start:
        graph.start_block = graph.node_id(empty)


def _outputs_reach_access_nodes(state: Any, map_exit: Any) -> bool:
    """The map's outputs go to access nodes, directly or through one enclosing map exit."""
    from dace.sdfg import nodes

    for edge in state.out_edges(map_exit):
        if isinstance(edge.dst, nodes.AccessNode) or edge.dst_conn is None:
            continue
        if not isinstance(edge.dst, nodes.MapExit):
            return False
        outer = state.out_edges_by_connector(edge.dst, "OUT_" + edge.dst_conn[len("IN_"):])
        if not all(isinstance(e.dst, nodes.AccessNode) for e in outer):
            return False
    return True


class _Scope:
    """A candidate map's scope as it was before any split of its state: the exit, the nodes and edges in state order.

    Splitting only adds nodes and edges beside the scopes it copies, so a
    scope read once per state stays right for every piece of every map of the
    state; reading it from the state per copy (DaCe's scope subgraph) made the
    split quadratic in the size of a large state.
    """

    def __init__(self, state: Any, entry: Any, children: dict, order: "_StateOrder") -> None:
        from dace.sdfg import nodes

        members = {entry, *children[entry]}  # a candidate holds no inner map: its children are its whole scope
        self.entry = entry
        self.exit = next(node for node in children[entry] if isinstance(node, nodes.ExitNode))
        self.nodes = sorted(members, key=order.nodes.__getitem__)
        inner = [edge for node in self.nodes for edge in state.out_edges(node) if edge.dst in members]
        self.edges = sorted(inner, key=lambda edge: order.edges[id(edge)])


class _StateOrder:
    """Where each node and edge of a state stands in its order (as DaCe's ``nodes()`` and ``edges()`` list them)."""

    def __init__(self, state: Any) -> None:
        self.nodes = {node: index for index, node in enumerate(state.nodes())}
        self.edges = {id(edge): index for index, edge in enumerate(state.edges())}


def _copy_scope(state: Any, scope: _Scope) -> tuple[Any, list[Any]]:
    """A copy of the map scope beside the original, fed by the same edges; (entry, nested SDFGs)."""
    from dace.sdfg import nodes

    map_entry, map_exit = scope.entry, scope.exit
    new_map = copy.deepcopy(map_entry.map)
    new_entry, new_exit = nodes.MapEntry(new_map), nodes.MapExit(new_map)
    for old, new in ((map_entry, new_entry), (map_exit, new_exit)):
        new.in_connectors = copy.deepcopy(old.in_connectors)
        new.out_connectors = copy.deepcopy(old.out_connectors)
    copies = {map_entry: new_entry, map_exit: new_exit}
    for node in scope.nodes:
        if node not in copies:
            copies[node] = copy.deepcopy(node)
    for node in copies.values():
        state.add_node(node)
    for edge in scope.edges:
        state.add_edge(copies[edge.src], edge.src_conn, copies[edge.dst], edge.dst_conn, copy.deepcopy(edge.data))
    for edge in state.in_edges(map_entry):
        state.add_edge(edge.src, edge.src_conn, new_entry, edge.dst_conn, copy.deepcopy(edge.data))
    for edge in state.out_edges(map_exit):
        if isinstance(edge.dst, nodes.MapExit) and edge.dst_conn is not None:
            _add_outer_exit_path(state, new_exit, edge)
        else:
            state.add_edge(new_exit, edge.src_conn, edge.dst, edge.dst_conn, copy.deepcopy(edge.data))
    nested = [node for node in copies.values() if isinstance(node, nodes.NestedSDFG)]
    for node in nested:
        node.sdfg.parent, node.sdfg.parent_sdfg, node.sdfg.parent_nsdfg_node = state, state.sdfg, node
    return new_entry, nested


def _add_outer_exit_path(state: Any, new_exit: Any, edge: Any) -> None:
    """Route ``new_exit``'s output through its own connector of the enclosing map exit."""
    outer, base = edge.dst, edge.dst_conn[len("IN_"):]
    index = 1
    while f"IN_{base}_piece{index}" in outer.in_connectors:
        index += 1
    name = f"{base}_piece{index}"
    outer.add_in_connector("IN_" + name)
    outer.add_out_connector("OUT_" + name)
    state.add_edge(new_exit, edge.src_conn, outer, "IN_" + name, copy.deepcopy(edge.data))
    for out in list(state.out_edges_by_connector(outer, "OUT_" + base)):
        state.add_edge(outer, "OUT_" + name, out.dst, out.dst_conn, copy.deepcopy(out.data))


def _candidates(sdfg: Any, dimension: int) -> Iterator[tuple[Any, _Scope, Any, str, list[tuple[int, int]]]]:
    """(state, map scope, nested SDFG, nested symbol, pieces) of every map worth splitting along ``dimension``."""
    from dace.sdfg import nodes

    for state in [s for sd in sdfg.all_sdfgs_recursive() for s in sd.states()]:
        children, order = state.scope_children(), None
        for entry in [n for n in state.nodes() if isinstance(n, nodes.MapEntry)]:
            body = children[entry]
            nested = [n for n in body if isinstance(n, nodes.NestedSDFG)]
            if len(nested) != 1 or any(isinstance(n, nodes.MapEntry) for n in body):
                continue
            if len(entry.map.params) < -dimension:
                continue
            pieces = _pieces(entry, nested[0], dimension)
            if pieces is None:
                continue
            order = order or _StateOrder(state)
            scope = _Scope(state, entry, children, order)
            if _outputs_reach_access_nodes(state, scope.exit):
                yield state, scope, nested[0], pieces[0], pieces[1]


def _pieces(entry: Any, nested: Any, dimension: int) -> Optional[tuple[str, list[tuple[int, int]]]]:
    """The nested symbol of the map index ``dimension`` and the [low, high] pieces, or None."""
    param = entry.map.params[dimension]
    try:
        begin, end, step = (int(v) for v in entry.map.range[dimension])
    except TypeError:
        return None  # symbolic range
    symbols = [name for name, value in nested.symbol_mapping.items() if str(value) == param]
    if step != 1 or len(symbols) != 1:
        return None
    cuts = sorted(c for c in cut_points(nested.sdfg, symbols[0]) if begin < c <= end)
    if not cuts or len(cuts) + 1 > MAX_PIECES:
        return None
    bounds = [begin, *cuts, end + 1]
    return symbols[0], [(low, high - 1) for low, high in zip(bounds, bounds[1:])]


def split_region_maps(sdfg: Any, dimension: int = -1) -> int:
    """Split every suitable map of ``sdfg`` in place along its index ``dimension`` (-1: the innermost).

    See the module docstring; returns how many maps were split.
    """
    split = 0
    for state, scope, nested, symbol, pieces in list(_candidates(sdfg, dimension)):
        entry = scope.entry
        for low, high in pieces[1:]:
            with dead_branches_hidden(nested.sdfg, symbol, low, high):  # not copied only to be dropped
                new_entry, copies = _copy_scope(state, scope)
            new_entry.map.range[dimension] = (low, high, 1)
            for node in copies:
                specialize(node.sdfg, symbol, low, high)
        entry.map.range[dimension] = (pieces[0][0], pieces[0][1], 1)
        specialize(nested.sdfg, symbol, *pieces[0])
        split += 1
    if split:
        sdfg.reset_cfg_list()
    return split


class SplitRegionMaps(ppl.Pass):
    """DaCe pass: :func:`split_region_maps`. Modifies scopes, nodes, edges, states; no data."""

    CATEGORY = "orchestra"

    def modifies(self) -> ppl.Modifies:
        modified = ppl.Modifies
        return modified.Scopes | modified.AccessNodes | modified.Edges | modified.States | modified.Tasklets

    def should_reapply(self, modified: ppl.Modifies) -> bool:
        return False

    def apply_pass(self, sdfg: Any, pipeline_results: dict) -> Optional[int]:
        return split_region_maps(sdfg) or None
