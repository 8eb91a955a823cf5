"""One OpenMP parallel level: [parallel map { parallel map }] -> [parallel map { loop }].

gt4py's ``dace:cpu`` stencils are a vertical map (over k) around a horizontal
map (over i, j), both ``CPU_Multicore``: every stencil opens a parallel region
per k-level inside a parallel region. With OpenMP's default of one active
level the inner regions run on one thread, but each still costs a fork and a
join: about 400 of them per step of the shallow-water dycore, a fifth of its
time at 24 x 24 x 8 per rank on one thread.

:func:`single_parallel_level` keeps the outermost map of each nest that has
more than one iteration parallel and makes every map nested inside it
(directly, or inside a nested SDFG) a sequential loop. A parallel map with a
single iteration (a vertical map with ``nz = 1``) becomes sequential itself,
so the map below it keeps the threads. Only schedules change; every point
computes the same statements, so results are bitwise identical.

Runs alone on any SDFG::

    SingleParallelLevel().apply_pass(sdfg, {})   # maps changed, or None
"""

from __future__ import annotations

from typing import Any, Optional

from dace.transformation import pass_pipeline as ppl


def _iterations(map_: Any) -> Optional[int]:
    try:
        return int(map_.range.num_elements())
    except TypeError:
        return None  # symbolic


def single_parallel_level(sdfg: Any) -> int:
    """Make parallel maps nested in parallel maps sequential (in place); returns how many changed."""
    return sum(_visit_sdfg(sdfg, inside_parallel=False))


def _visit_sdfg(sdfg: Any, inside_parallel: bool) -> list[int]:
    changes = []
    for state in sdfg.states():
        changes += _visit_scope(state, state.scope_children(), None, inside_parallel)
    return changes


def _visit_scope(state: Any, children: dict, scope: Any, inside_parallel: bool) -> list[int]:
    import dace
    from dace.sdfg import nodes

    changes = []
    for node in children[scope]:
        if isinstance(node, nodes.NestedSDFG):
            changes += _visit_sdfg(node.sdfg, inside_parallel)
        if not isinstance(node, nodes.MapEntry):
            continue
        parallel_here = inside_parallel
        if node.map.schedule == dace.ScheduleType.CPU_Multicore:
            if inside_parallel or _iterations(node.map) == 1:
                node.map.schedule = dace.ScheduleType.Sequential
                changes.append(1)
            else:
                parallel_here = True
        changes += _visit_scope(state, children, node, parallel_here)
    return changes


class SingleParallelLevel(ppl.Pass):
    """DaCe pass: :func:`single_parallel_level`. Modifies map schedules only."""

    CATEGORY = "orchestra"

    def modifies(self) -> ppl.Modifies:
        return ppl.Modifies.Scopes

    def should_reapply(self, modified: ppl.Modifies) -> bool:
        return False

    def apply_pass(self, sdfg: Any, pipeline_results: dict) -> Optional[int]:
        return single_parallel_level(sdfg) or None
