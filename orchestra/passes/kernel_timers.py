"""Timers on every kernel of a program, and what each kernel must move.

A *kernel* here is an outermost map of the optimized SDFG: one stencil call
(or one part of it, where horizontal regions split a stencil's map), or
several stencils a fusion pass merged into one map. With
``ORCHESTRA_PROFILE=kernels`` the optimize stage ends with
:func:`add_kernel_timers`: DaCe's timer instrumentation on each kernel, on
each state that only calls back into Python (halo exchanges, scalar
getters) and on the whole program. It is another program, with its own
cache entry (``OptimizeOptions.kernel_timers`` is part of the key).

:func:`kernel_traffic` describes each kernel from the SDFG alone: the
stencils it runs (from the labels of its maps,
:mod:`orchestra.passes.stencil_labels`) and the bytes it must move, counted like the
benchmark's per-stencil traffic model (``scripts/bench_lib/traffic.py``):
each array the kernel reads, once over the region it reads (domain grown
by the stencil's extent), and each array it writes, once over the region it
writes; scalar arguments are not counted. The report (:mod:`orchestra.observe.kernel_profile`) divides those bytes by
the measured time.
"""

from __future__ import annotations

from typing import Any

from orchestra.passes.stencil_labels import kernel_name, stencils_of_kernel


def _outermost_maps(state: Any) -> list[Any]:
    from dace.sdfg import nodes

    return [n for n in state.nodes() if isinstance(n, nodes.MapEntry) and state.entry_node(n) is None]


def add_kernel_timers(sdfg: Any) -> dict[str, int]:
    """Put timers on ``sdfg`` (in place); returns how many kernels and callback states got one."""
    import dace
    from dace.sdfg import nodes

    timer = dace.InstrumentationType.Timer
    sdfg.instrument = timer
    counts = {"kernels": 0, "callback_states": 0}
    for state in sdfg.states():
        maps = _outermost_maps(state)
        for entry in maps:
            entry.map.instrument = timer
            counts["kernels"] += 1
        callbacks = [n for n in state.nodes() if isinstance(n, nodes.Tasklet) and n.label.startswith("callback")]
        if callbacks and not maps:
            state.instrument = timer
            counts["callback_states"] += 1
    return counts


def kernel_traffic(sdfg: Any) -> dict[str, dict[str, Any]]:
    """Per kernel (map label): its stencil (``a+b`` for a map fusion merged: every stencil it
    runs, in order; ``stencils`` lists them), how many maps of the program carry the label,
    and the bytes they must move in one call of the program.

    A merged map moves what enters and leaves it: data one of its stencils
    hands to the next inside it is not counted again (it stays in cache, or
    in a scratch plane that never reaches memory).

    Maps of one label in one state that write the same arrays are one stencil
    call split at its horizontal regions: for each array they read (and each
    they write), the bounding box of what they access is counted once. Other
    calls of the stencil (other outputs, other states) add their own. A map
    inside a loop (the levels of a vertical sweep, a loop of the model's
    Python) is counted once per iteration, as its timer is: the levels of a
    FORWARD sweep add up to the whole column. A loop whose trip count is not
    a number when the program is built counts once (a lower bound).
    """
    from dace import subsets
    from dace.data import Scalar
    from dace.sdfg import nodes

    kernels: dict[str, dict[str, Any]] = {}
    for state in sdfg.states():
        arrays = state.sdfg.arrays
        boxes: dict[tuple, Any] = {}  # (label, arrays the call writes, array, written) -> accessed box
        for entry in _outermost_maps(state):
            label = entry.map.label
            kernel = kernels.setdefault(label, {"stencil": "", "stencils": [], "instances": 0, "bytes": 0})
            kernel["instances"] += 1
            for name in stencils_of_kernel(state, entry) or [label.split("__")[0]]:
                if name not in kernel["stencils"]:  # a label merged differently elsewhere: every stencil named
                    kernel["stencils"].append(name)
            kernel["stencil"] = kernel_name(kernel["stencils"])
            accesses = []
            for edge in [*state.in_edges(entry), *state.out_edges(state.exit_node(entry))]:
                access = edge.src if edge.dst is entry else edge.dst
                if not edge.data.is_empty() and isinstance(access, nodes.AccessNode):
                    accesses.append((access.data, edge.dst is not entry, edge.data.subset))
            call = (label, frozenset(data for data, written, _ in accesses if written))
            for data, written, subset in accesses:
                key = (*call, data, written)
                boxes[key] = subset if key not in boxes else subsets.union(boxes[key], subset)
        repeats = _iterations_around(state)
        for (label, _outputs, data, _written), box in boxes.items():
            if not isinstance(arrays[data], Scalar):  # a scalar argument lives in a register
                kernels[label]["bytes"] += int(box.num_elements()) * arrays[data].dtype.bytes * repeats
    return kernels


def _iterations_around(state: Any) -> int:
    """How often ``state`` runs per program call: the product of the trip counts of the loops around it."""
    from dace.sdfg.state import LoopRegion
    from dace.transformation.passes.analysis import loop_analysis

    count, region = 1, state.parent_graph
    while region is not None:
        if isinstance(region, LoopRegion):
            try:
                start, end = loop_analysis.get_init_assignment(region), loop_analysis.get_loop_end(region)
                stride = loop_analysis.get_loop_stride(region)
                trips = int((end - start) / stride) + 1 if None not in (start, end, stride) else 1
            except (TypeError, ValueError, ZeroDivisionError):
                trips = 1  # symbolic bounds: counted once
            count *= max(trips, 1)
        region = getattr(region, "parent_graph", None)
    return count
