"""Move a kernel state down, past blocks independent of it, to the kernel state it precedes.

A stencil with a vertical sweep (``computation(FORWARD)``) lowers to loops
over ``k``: control-flow blocks of their own. When such a sweep follows a
stencil it does not depend on, the sweep separates two kernels that could
fuse: in the dycore, ``wind_to_cartesian`` (writes ``vx, vy, vz``), then the
sweep of ``bernoulli_function`` (sums ``h`` over the levels), then the stage's
kernel (reads ``vx, vy, vz``).

:func:`gather_kernel_states` moves a state holding only maps (no callback,
no other node outside a map) below the blocks that follow it, when each of
them neither reads nor writes a container the state writes, writes nothing
the state reads, assigns no symbol the state uses and runs no callback, and
when the block after them is again a state of maps. The two states then fuse
(DaCe's ``StateFusion``, kept from reordering a write after a read:
:mod:`orchestra.passes.fusion_hazards`), and :func:`~.vertical.merge_vertical_maps`
may merge their maps. Only the order of independent work changes: every
value is computed by the same operations from the same operands, so results
stay bitwise identical.

Only chains are changed: every block moved past has one edge in and one
out, all unconditional and without assignments (a region with branches is
left as it is), and is a state or a loop holding only states and loops.
"""

from __future__ import annotations

import logging
from typing import Any

from orchestra.passes.fusion.chains import block_chain

log = logging.getLogger("orchestra")


def gather_kernel_states(sdfg: Any) -> int:
    """Move kernel states down to the next kernel state where the blocks between are independent; returns how many moved."""
    moved = 0
    for region in list(sdfg.all_control_flow_regions()):
        while _one_move(region):
            moved += 1
    if moved:
        from dace.transformation.interstate.state_fusion import StateFusion

        from orchestra.passes.fusion_hazards import ordered_state_fusion

        with ordered_state_fusion():
            sdfg.apply_transformations_repeated([StateFusion], validate=False)
        log.debug("%s: %d kernel state(s) moved down to the next kernel", sdfg.name, moved)
    return moved


def _one_move(region: Any) -> bool:
    """Move one kernel state of ``region`` down past independent blocks; whether one moved."""
    chain = block_chain(region, plain_edges=True)
    if chain is None or len(chain) < 3:
        return False
    for index, block in enumerate(chain):
        if not _is_kernel_state(block):
            continue
        reads, writes = _state_sets(block)
        symbols = set(map(str, block.free_symbols))
        passed = index + 1
        while passed < len(chain) and not _is_kernel_state(chain[passed]) and _independent(
            chain[passed], reads, writes, symbols
        ):
            passed += 1
        if passed == index + 1 or passed == len(chain) or not _is_kernel_state(chain[passed]):
            continue
        _reorder(region, chain, index, passed)
        return True
    return False


def _is_kernel_state(block: Any) -> bool:
    """A state whose every node lies in a top-level map scope or is an access node; at least one map."""
    from dace.sdfg import nodes
    from dace.sdfg.state import SDFGState

    if not isinstance(block, SDFGState):
        return False
    has_map = False
    for node in block.nodes():
        if isinstance(node, nodes.MapEntry) and block.entry_node(node) is None:
            has_map = True
        elif isinstance(node, nodes.AccessNode):
            continue
        elif block.entry_node(node) is None and not isinstance(node, nodes.MapExit):
            return False
        if _calls_back(node):
            return False
    return has_map


def _calls_back(node: Any) -> bool:
    """Whether ``node`` is, or is a nested SDFG holding, a tasklet with side effects (a callback)."""
    from dace.sdfg import nodes

    if isinstance(node, nodes.NestedSDFG):
        return any(_calls_back(inner) for inner, _ in node.sdfg.all_nodes_recursive())
    return isinstance(node, nodes.Tasklet) and node.side_effects


def _state_sets(state: Any) -> tuple[set[str], set[str]]:
    """The containers a state reads and writes (every access node of the state, in scopes too)."""
    reads, writes = set(), set()
    for node in state.data_nodes():
        if state.in_degree(node) > 0:
            writes.add(node.data)
        if state.out_degree(node) > 0:
            reads.add(node.data)
    return reads, writes


def _independent(block: Any, reads: set[str], writes: set[str], symbols: set[str]) -> bool:
    """Whether ``block`` may run before a state reading ``reads``, writing ``writes``, using ``symbols``."""
    from dace.sdfg.state import LoopRegion, SDFGState

    if not isinstance(block, (SDFGState, LoopRegion)):
        return False  # a branch: its conditions are not interstate edges this check reads
    if isinstance(block, LoopRegion):
        inner = list(block.all_control_flow_blocks())
        if not all(isinstance(each, (SDFGState, LoopRegion)) for each in inner):
            return False
        if set(map(str, block.free_symbols)) & writes:
            return False  # e.g. a loop bound read from what the state writes
    states = [block] if isinstance(block, SDFGState) else [each for each in inner if isinstance(each, SDFGState)]
    for state in states:
        if any(_calls_back(node) for node in state.nodes()):
            return False
        block_reads, block_writes = _state_sets(state)
        if block_reads & writes or block_writes & (reads | writes):
            return False
    if isinstance(block, LoopRegion):
        assigned = {str(block.loop_variable)} if getattr(block, "loop_variable", None) else set()
        for edge in block.all_interstate_edges():
            assigned.update(edge.data.assignments)
            if edge.data.read_symbols() & writes:  # a condition or assignment reading what the state writes
                return False
        if assigned & symbols:
            return False
    return True


def _reorder(region: Any, chain: list[Any], index: int, passed: int) -> None:
    """``chain[index]`` moves to just before ``chain[passed]``; the blocks between move up by one."""
    from dace.sdfg import InterstateEdge

    new_order = chain[:index] + chain[index + 1:passed] + [chain[index]] + chain[passed:]
    for edge in list(region.edges()):
        region.remove_edge(edge)
    for first, second in zip(new_order, new_order[1:]):
        region.add_edge(first, second, InterstateEdge())
    if index == 0:
        region.start_block = region.node_id(new_order[0])
