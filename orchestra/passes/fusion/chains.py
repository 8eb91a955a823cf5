"""A control-flow region's blocks in program order, when they form one chain.

Both :mod:`.barriers` (which callbacks separate two kernels) and
:mod:`.gathering` (moving a kernel state down) reason about "the block after
this one", which is program order only where a region has no branches:
every block one edge in (but the first) and one edge out (but the last).
"""

from __future__ import annotations

from typing import Any, Optional


def block_chain(region: Any, plain_edges: bool = False) -> Optional[list[Any]]:
    """The blocks of ``region`` in order if they form one chain; None otherwise.

    ``plain_edges``: also None if an edge of the chain has a condition or
    assignments (a block may then not move across it). A region that is not
    a ``ControlFlowRegion`` (a conditional block, whose "blocks" are its
    branches) is not a chain.
    """
    from dace.sdfg.state import ControlFlowRegion

    if not isinstance(region, ControlFlowRegion) or region.number_of_nodes() == 0:
        return None
    chain, block, seen = [], region.start_block, set()
    while block is not None:
        if id(block) in seen:
            return None  # a cycle
        seen.add(id(block))
        chain.append(block)
        edges = list(region.out_edges(block))
        if len(edges) > 1 or len(list(region.in_edges(block))) > 1:
            return None
        if not edges:
            break
        if plain_edges and (not edges[0].data.is_unconditional() or edges[0].data.assignments):
            return None
        block = edges[0].dst
    return chain if len(chain) == region.number_of_nodes() else None
