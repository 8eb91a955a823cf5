"""Floating-point operations per step, counted from the optimized SDFG of a build.

Every tasklet that writes floating-point data counts the arithmetic in its
code, times the number of times it runs: the product of the enclosing map
ranges and loop trip counts, through nested SDFGs (their symbols taken from
the symbol mappings, the sizes from the SDFG's constants: orchestrated
builds fix the domain at parse time). One call of the SDFG is one step.

Operations are weighted and sorted into kinds (``add_sub``, ``mul``, ``div``,
``min_max_abs``, ``math``) as :mod:`bench_lib.arithmetic` documents: 1 per
``+ - * /``, per ``min``/``max``/``abs`` and per math function call
(``sqrt`` included, though it costs more); none for casts, comparisons,
sign flips and operations on constants alone (the compiler folds those).

Branches. A condition on symbols alone (gt4py's horizontal regions:
``(__i >= 1) and (__i < 2)``) is evaluated over the iteration space, so a
region costs only where it runs (:mod:`bench_lib.iteration`). A condition
that reads data (an ``if`` on a field value, in a tasklet or as a
conditional block) cannot be decided here: its costliest branch is counted,
as if always taken, and ``upper_bound_branches`` says how many such places
there are (0 for the dycore). The count is then an upper bound, so a compute
bound drawn from it is never too small.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Any, Mapping, Optional

from bench_lib.arithmetic import KINDS, Ops, TaskletCost, code_cost, total
from bench_lib.iteration import IterationDomain, UnknownSymbol


class FlopCountError(RuntimeError):
    """The SDFG has a construct whose execution count cannot be read (a while loop, a consume scope)."""


@dataclasses.dataclass(frozen=True)
class FlopCount:
    """Floating-point operations per call of an SDFG, by kind."""

    by_kind: Mapping[str, int]
    tasklets: int
    executions: int
    upper_bound_branches: int
    not_counted: tuple[str, ...]
    #: operations per kernel: the label of each outermost map (or nested SDFG) of the program's
    #: own states, as the kernel profile's timers name them; "" for tasklets outside any
    per_kernel: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @property
    def flops(self) -> int:
        """All operations, whatever their kind."""
        return sum(self.by_kind.values())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the benchmark's ``flops`` entry)."""
        return {"flops": self.flops, **dataclasses.asdict(self), "not_counted": list(self.not_counted)}


class _Walk:
    """One pass over an SDFG, summing ``operations x executions`` into ``ops``."""

    def __init__(self, kernel: Optional[str] = None) -> None:
        self.ops, self.tasklets, self.executions, self.bounded = Ops(), 0, 0, 0
        self.not_counted: set[str] = set()
        self.kernel = kernel  # the outermost map (or nested SDFG) being walked, None outside any
        self.per_kernel: collections.Counter[str] = collections.Counter()

    def merge(self, other: "_Walk") -> None:
        self.ops.update(other.ops)
        self.tasklets += other.tasklets
        self.executions += other.executions
        self.bounded += other.bounded
        self.not_counted |= other.not_counted
        self.per_kernel.update(other.per_kernel)

    def _in_kernel(self, label: str, walk: Any) -> None:
        """Run ``walk()`` with ``label`` as the kernel, unless already inside one."""
        if self.kernel is not None:
            walk()
            return
        self.kernel = label
        try:
            walk()
        finally:
            self.kernel = None

    def region(self, cfg: Any, domain: IterationDomain) -> None:
        import networkx as nx
        from dace.sdfg.state import ConditionalBlock, ControlFlowRegion, LoopRegion, SDFGState

        graph = cfg.nx
        if not nx.is_directed_acyclic_graph(graph):
            raise FlopCountError(f"{cfg.label}: a loop in a state machine (run ControlFlowRaising first)")
        assigned: dict[str, Any] = {}
        for block in nx.topological_sort(graph):
            here = domain.assign(assigned) if assigned else domain
            if isinstance(block, LoopRegion):
                self.loop(block, here)
            elif isinstance(block, ConditionalBlock):
                self.conditional(block, here)
            elif isinstance(block, SDFGState):
                self.state(block, here)
            elif isinstance(block, ControlFlowRegion):
                self.region(block, here)
            for edge in cfg.out_edges(block):
                if not edge.data.is_unconditional():
                    self.bounded += 1  # both sides of a conditional edge are counted
                for name, value in edge.data.assignments.items():
                    try:
                        assigned[name] = here.evaluate(value)
                    except (UnknownSymbol, SyntaxError):
                        assigned.pop(name, None)

    def loop(self, loop: Any, domain: IterationDomain) -> None:
        from dace.transformation.passes.analysis import loop_analysis as la

        bounds = (la.get_init_assignment(loop), la.get_loop_end(loop), la.get_loop_stride(loop))
        if not loop.loop_variable or any(b is None for b in bounds):
            raise FlopCountError(f"loop {loop.label}: no readable range ({loop.loop_condition.as_string})")
        read_below = set().union(*(b.used_symbols(all_symbols=True) for b in loop.nodes()))
        values = [domain.evaluate(b) for b in bounds]
        self.region(loop, domain.repeat(loop.loop_variable, *values, loop.loop_variable in read_below))

    def conditional(self, block: Any, domain: IterationDomain) -> None:
        remaining, exact = domain, []
        try:
            for condition, body in block.branches:
                if condition is None:
                    exact.append((body, remaining))
                    continue
                mask = remaining.evaluate(condition.as_string)
                exact.append((body, remaining.where(mask)))
                remaining = remaining.where(~remaining.per_row(mask).astype(bool))
        except UnknownSymbol:  # a condition on data: the costliest branch, on every row
            branches = []
            for _, body in block.branches:
                branches.append(_Walk(self.kernel))
                branches[-1].region(body, domain)
            self.merge(max(branches, key=lambda w: total(w.ops)))
            self.bounded += 1
            return
        for body, rows in exact:
            if rows.executions():
                self.region(body, rows)

    def state(self, state: Any, domain: IterationDomain) -> None:
        self.scope(state, state.scope_children(), None, domain)

    def scope(self, state: Any, children: dict, entry: Any, domain: IterationDomain) -> None:
        from dace.sdfg import nodes

        for node in children[entry]:
            if isinstance(node, nodes.MapEntry):
                read_below = _symbols_read_below(children, node)
                inner = domain
                for name, (begin, end, step) in zip(node.map.params, node.map.range.ranges):
                    inner = inner.repeat(name, inner.evaluate(begin), inner.evaluate(end), inner.evaluate(step),
                                         name in read_below)
                self._in_kernel(node.map.label, lambda: self.scope(state, children, node, inner))
            elif isinstance(node, nodes.EntryNode):
                raise FlopCountError(f"{node.label}: a {type(node).__name__} has no fixed execution count")
            elif isinstance(node, nodes.Tasklet):
                self.tasklet(state, node, domain)
            elif isinstance(node, nodes.NestedSDFG):
                self._in_kernel(node.label, lambda: self.nested(node, domain))
            elif isinstance(node, nodes.LibraryNode):
                self.not_counted.add(f"library node {node.label}")

    def nested(self, node: Any, domain: IterationDomain) -> None:
        values = dict(node.sdfg.constants)
        for inner, outer in node.symbol_mapping.items():
            try:
                values[inner] = domain.evaluate(outer)
            except UnknownSymbol:
                pass
        self.region(node.sdfg, domain.bind(values))

    def tasklet(self, state: Any, node: Any, domain: IterationDomain) -> None:
        import dace

        writes = [e for e in state.out_edges(node) if e.data.data is not None]
        if not any(state.sdfg.arrays[e.data.data].dtype in (dace.float64, dace.float32) for e in writes):
            return
        cost = code_cost(node.code.as_string, node.code.language == dace.Language.Python)
        if cost is None:
            self.not_counted.add(f"unreadable tasklet {node.label}")
            return
        ops = Ops(cost.ops)
        for edge in writes:  # write-conflict resolution: ``lambda a, b: a + b`` per element written
            if edge.data.wcr is not None:
                ops.update((code_cost(edge.data.wcr) or TaskletCost(Ops())).ops)
        runs = domain.executions()
        for kind, count in ops.items():
            self.ops[kind] += count * runs
        self.per_kernel[self.kernel or ""] += sum(ops.values()) * runs
        self.tasklets += 1
        self.executions += runs
        self.bounded += cost.bounded
        self.not_counted |= {f"call {name}" for name in cost.unknown_calls}


def _symbols_read_below(children: dict, entry: Any) -> set[str]:
    """Symbols that maps, tasklets and nested SDFGs inside the scope of ``entry`` read."""
    from dace.sdfg import nodes

    found: set[str] = set()
    for node in children[entry]:
        if isinstance(node, nodes.MapEntry):
            found |= set(map(str, node.map.range.free_symbols)) | _symbols_read_below(children, node)
        elif isinstance(node, (nodes.NestedSDFG, nodes.Tasklet)):
            found |= set(map(str, node.free_symbols))
    return found


def count_flops(sdfg: Any, symbols: Optional[Mapping[str, int]] = None) -> FlopCount:
    """Floating-point operations of one call of ``sdfg`` (free symbols from ``symbols``)."""
    import networkx as nx
    from dace.transformation.passes.simplification.control_flow_raising import ControlFlowRaising

    if any(not nx.is_directed_acyclic_graph(r.nx) for r in sdfg.all_control_flow_regions(recursive=True)):
        sdfg = type(sdfg).from_json(sdfg.to_json())  # a copy: raising the loops changes the graph
        for nested in sdfg.all_sdfgs_recursive():
            ControlFlowRaising().apply_pass(nested, {})
    walk = _Walk()
    walk.region(sdfg, IterationDomain.once({**dict(sdfg.constants), **dict(symbols or {})}))
    return FlopCount(
        by_kind={kind: int(walk.ops.get(kind, 0)) for kind in KINDS}, tasklets=walk.tasklets,
        executions=walk.executions, upper_bound_branches=walk.bounded, not_counted=tuple(sorted(walk.not_counted)),
        per_kernel={label: int(count) for label, count in walk.per_kernel.items()},
    )


def count_build_flops(folder: Path) -> FlopCount:
    """Floating-point operations per call of the optimized SDFG in a build folder (``program.sdfgz``)."""
    import dace

    return count_flops(dace.SDFG.from_file(str(Path(folder) / "program.sdfgz")))
