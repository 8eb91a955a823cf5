"""Where fusion stopped at a callback: two kernels with only callbacks between them.

Fusion merges maps within one state; a callback (a halo update, a
``dace_inhibitor`` getter, any Python the program calls) is a state of its
own, so the kernel before it and the kernel after it stay two passes over
memory. A callback that reads no field the first kernel writes (a scalar
getter such as ``da_min: float = self.grid_info.min_area()``) can often be
called earlier, before the first stencil, and the two kernels then merge:
the dycore's stage gained 1.12-1.15x from that one move
(``docs/performance_log.md``). orchestra cannot move it itself: a callback is
opaque Python and may read any array.

:func:`callback_barriers` lists, in an optimized SDFG, each run of callback
states that separates two kernel states of the same control-flow region;
the build log prints them (:func:`describe_barriers`) so the model's author
sees which callbacks cut which kernels.
"""

from __future__ import annotations

import collections
import re
from typing import Any, Iterator, NamedTuple

from orchestra.passes.fusion.chains import block_chain
from orchestra.passes.stencil_labels import stencils_of_kernel


class Barrier(NamedTuple):
    """Callbacks (by name, in order) between two kernels: ``before`` the last stencil of the first, ``after`` the first of the second."""

    before: str
    callbacks: tuple[str, ...]
    after: str


_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")
_UNIQUE_SUFFIX = re.compile(r"_\d+$")


def callback_name(tasklet: Any) -> str:
    """The Python callable a callback tasklet calls, as the frontend named it (``self_halo_update``)."""
    match = _CALLED.search(tasklet.code.as_string)
    return _UNIQUE_SUFFIX.sub("", match.group(1)) if match else tasklet.label


def callback_barriers(sdfg: Any) -> list[Barrier]:
    """Each run of callback-only states between two kernel states, in every control-flow region of ``sdfg``."""
    barriers = []
    for region in sdfg.all_control_flow_regions():
        previous_kernel, pending = None, []
        for kind, value in _blocks_in_order(region):
            if kind == "kernel":
                if previous_kernel is not None and pending:
                    barriers.append(Barrier(previous_kernel[1], tuple(pending), value[0]))
                previous_kernel, pending = value, []
            elif kind == "callbacks":
                pending.extend(value)
            else:  # a loop or a state mixing both: the kernels on its two sides are not adjacent (empty states are skipped)
                previous_kernel, pending = None, []
    return barriers


def describe_barriers(barriers: list[Barrier]) -> str:
    """For the build log: ``"fusion stopped at callbacks: 3x self_halo_update (copy_state | wind_to_cartesian)"``.

    >>> describe_barriers([Barrier("a", ("cb",), "b"), Barrier("a", ("cb",), "b"), Barrier("c", ("x", "y"), "d")])
    'fusion stopped at callbacks: 2x cb (a | b), 1x x, y (c | d)'
    >>> describe_barriers([])
    ''
    """
    if not barriers:
        return ""
    counts = collections.Counter(barriers)
    return "fusion stopped at callbacks: " + ", ".join(
        f"{count}x {', '.join(barrier.callbacks)} ({barrier.before} | {barrier.after})"
        for barrier, count in counts.items()
    )


def _blocks_in_order(region: Any) -> Iterator[tuple[str, Any]]:
    """The region's blocks in program order: ("kernel", (its first stencil, its last)), ("callbacks", names), ("other", None)."""
    from dace.sdfg.state import SDFGState

    chain = block_chain(region)
    if chain is None:  # branches: adjacency is not program order
        return
    for block in chain:
        if not isinstance(block, SDFGState):
            yield "other", None
            continue
        kernels, callbacks = _state_contents(block)
        if kernels and not callbacks:
            yield "kernel", (kernels[0][0], kernels[-1][-1])
        elif callbacks and not kernels:
            yield "callbacks", callbacks
        elif kernels or callbacks:
            yield "other", None


def _state_contents(state: Any) -> tuple[list[list[str]], list[str]]:
    """The stencils of each kernel (top-level maps, in dataflow order) and the callback names of one state."""
    from dace.sdfg import nodes
    from dace.sdfg.utils import dfs_topological_sort

    kernels, callbacks = [], []
    for node in dfs_topological_sort(state):
        if isinstance(node, nodes.MapEntry) and state.entry_node(node) is None:
            kernels.append(stencils_of_kernel(state, node) or [node.map.label])
        elif isinstance(node, nodes.Tasklet) and node.side_effects and state.entry_node(node) is None:
            callbacks.append(callback_name(node))
    return kernels, callbacks
