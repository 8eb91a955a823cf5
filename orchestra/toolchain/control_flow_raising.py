"""DaCe's control-flow raising in code generation, skipped for programs in which it can raise nothing.

DaCe's ``generate_code`` first runs ``ControlFlowRaising`` on the whole
program: for every SDFG it lifts implicit early exits into return blocks,
state-machine loops into loop regions (``LoopLifting``, a pattern match over
every region), cycles into unstructured regions and branching into
conditional blocks. orchestra's programs come from DaCe's Python frontend,
which writes loops and branches as loop regions and conditional blocks
already: on the FV3-size benchmark the pass raised nothing, and skipping it
took code generation from 28.2 to 26.6 s at 40 stencils and from 93.8 to
82.5 s at 120, the same code (``scripts/codegen_variants.py``).

:func:`raising_only_where_possible` installs, for the duration of a ``with``
block, a stand-in for the pass's ``apply_pass`` that first checks what
every one of the pass's steps looks for and, where none of it is there,
returns what the pass returns when it raises nothing (None); anything else
runs DaCe's pass. Nothing can be raised when, in every control-flow region
of every SDFG (conditional blocks aside, whose branches are regions of their
own): the region has no cycle (no loop to lift, nothing unstructured), no
block has more than one edge out and at most one sink is not a return block
(no branch to lift), and, at an SDFG's top level, every edge out is
unconditional (no implicit early exit). The stand-in is installed only over
the pass it was written for (recognised by the steps its ``apply_pass``
calls); another DaCe's is left alone.
"""

from __future__ import annotations

import threading
from typing import Any, ContextManager

from orchestra.toolchain.stand_in import standing_in_once

#: What DaCe's ``ControlFlowRaising.apply_pass`` calls: the steps :func:`nothing_to_raise` checks for.
_STEPS = frozenset({"_lift_returns", "LoopLifting", "_lift_unstructured", "_lift_conditionals"})

_lock = threading.RLock()


def _region_raises_nothing(region: Any, is_sdfg: bool) -> bool:
    import networkx as nx
    from dace.sdfg.state import ReturnBlock

    blocks = region.nodes()
    if any(region.out_degree(block) > 1 for block in blocks):
        return False
    sinks = region.sink_nodes()
    if len([sink for sink in sinks if not isinstance(sink, ReturnBlock)] or sinks) > 1:
        return False
    if not nx.is_directed_acyclic_graph(region.nx):
        return False
    if is_sdfg and any(not edge.data.is_unconditional() for edge in region.edges()):
        return False
    region.start_block  # noqa: B018 (DaCe's pass reads it, and fails where there is none, as in an empty region)
    return True


def nothing_to_raise(sdfg: Any) -> bool:
    """Whether DaCe's ``ControlFlowRaising`` provably raises nothing in ``sdfg`` and the SDFGs nested in it."""
    from dace.sdfg import SDFG
    from dace.sdfg.state import ConditionalBlock, UnstructuredControlFlow

    for region in sdfg.all_control_flow_regions(recursive=True):
        if isinstance(region, UnstructuredControlFlow):
            return False
        if isinstance(region, ConditionalBlock):
            continue  # no edges of its own; its branches are regions checked here too
        if not _region_raises_nothing(region, isinstance(region, SDFG)):
            return False
    return True


def recognizes(apply_pass: Any) -> bool:
    """Whether ``apply_pass`` is the ``ControlFlowRaising.apply_pass`` :func:`nothing_to_raise` was written for."""
    code = getattr(apply_pass, "__code__", None)
    return code is not None and _STEPS <= set(code.co_names)


def raising_only_where_possible() -> ContextManager[None]:
    """Within the block, DaCe's ``ControlFlowRaising`` runs only on programs in which it may raise something."""
    from dace.transformation.passes.simplification.control_flow_raising import ControlFlowRaising

    def make(original: Any) -> Any:
        def apply_pass(self: Any, top_sdfg: Any, pipeline_results: Any) -> Any:
            if nothing_to_raise(top_sdfg):
                return None  # what DaCe's pass returns when it raised nothing
            return original(self, top_sdfg, pipeline_results)

        return apply_pass

    # one code generation at a time replaces the pass's method; a nested use leaves it be
    return standing_in_once(_lock, ControlFlowRaising, "apply_pass", recognizes, make)
