"""What a *kernel* is for the debug checks, and how each one gets a state of its own.

A kernel is a unit of computation at the top scope of a state of the
program's SDFG (states inside loops and branches of it included):

* a map scope that is not inside another map (after simplification a gt4py
  stencil with parallel computations is inlined as one map per computation,
  labelled ``<stencil>__v_map_<id>`` or ``<stencil>__h_map_<id>``; a map
  fusion merged runs several stencils and is named by all of them,
  ``divide+smooth``: :mod:`orchestra.passes.stencil_labels`), or
* a nested SDFG that is not inside a map and holds one stencil (a gt4py
  stencil with sequential ``FORWARD``/``BACKWARD`` loops stays nested: the
  whole stencil is one kernel, checked once after it). A nested SDFG that
  holds several stencils (orchestrated code DaCe could not inline) is not a
  kernel itself: its own states are searched the same way.

Copies between arrays and tasklets outside maps are not kernels.

The fields a kernel writes are the arrays on the access nodes right after it
(writes through views are not followed), together with the written region
(the bounding box of the propagated memlets). A field is a non-transient
array (an argument or an array read through ``self``) or a transient array
named in the orchestrated code; DaCe's own temporaries (``__tmp*``...) are not
fields. A field's *name* is its SDFG data name with DaCe's ``__g_`` prefix
removed (``self.lap`` becomes ``self_lap``); inside a nested SDFG it is the
name of the outer array.

States holding several kernels are split (``state_fission``) so that each
kernel ends a state and its check can follow it in program order.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Any, Iterator, Optional

from orchestra.passes.stencil_labels import JOIN, kernel_name, stencil_of_map, stencils_of_kernel

_NUMERIC_SUFFIX = re.compile(r"_\d{6,}$")


@dataclasses.dataclass
class WrittenField:
    """One array a kernel writes: ``data`` in the kernel's SDFG, shown as ``name``."""

    data: str
    name: str
    subset: Any  # dace.subsets.Range of the written region
    #: where the model holds it (``state.tracers['qc']``, ``self.lap``), when it is read through an object
    path: str = ""


@dataclasses.dataclass
class Kernel:
    """One kernel, numbered in program order (``index`` from 1)."""

    index: int
    label: str
    stencil: str
    state_label: str
    sdfg: Any
    state: Any  # the state holding the kernel after splitting
    node: Any  # MapEntry or NestedSDFG
    fields: list[WrittenField] = dataclasses.field(default_factory=list)
    on_gpu: bool = False

    def describe(self) -> str:
        if not self.stencil:
            return f"k{self.index} {self.label}"
        fused = JOIN in self.stencil  # a map fusion merged: every stencil it runs, in order
        return f"k{self.index} {self.label} ({'fused stencils' if fused else 'stencil'} {self.stencil})"


def kernel_label(node: Any) -> str:
    """A node's label without gt4py's object-id suffix (stable across processes)."""
    from dace.sdfg import nodes

    label = node.map.label if isinstance(node, nodes.MapEntry) else node.label
    return _NUMERIC_SUFFIX.sub("", label)


def stencils_in(sdfg: Any) -> set[str]:
    """Names of the gt4py stencils whose maps occur anywhere in ``sdfg``."""
    from dace.sdfg import nodes

    found = set()
    for node, _ in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.MapEntry):
            stencil = stencil_of_map(node.map.label)
            if stencil:
                found.add(stencil)
    return found


def nested_stencil(node: Any) -> Optional[str]:
    """The stencil a nested SDFG holds, "" if it holds no stencil, None if several."""
    found = stencils_in(node.sdfg)
    if len(found) > 1:
        return None
    if found:
        return found.pop()
    name = node.sdfg.name
    return name[len("frozen_") :] if name.startswith("frozen_") else ""


def ordered_states(region: Any) -> Iterator[Any]:
    """The states of a control-flow region (recursively, not into nested SDFGs), in program order."""
    from dace.sdfg.state import ConditionalBlock, SDFGState
    from dace.sdfg.utils import dfs_topological_sort

    if isinstance(region, ConditionalBlock):
        for _, body in region.branches:
            yield from ordered_states(body)
        return
    blocks = list(dfs_topological_sort(region)) if region.number_of_nodes() else []
    blocks += [block for block in region.nodes() if block not in blocks]
    for block in blocks:
        if isinstance(block, SDFGState):
            yield block
        else:
            yield from ordered_states(block)


def top_level_units(state: Any) -> list[Any]:
    """Map entries and nested SDFGs at the top scope of ``state``, in dataflow order."""
    from dace.sdfg import nodes
    from dace.sdfg.utils import dfs_topological_sort

    scope = state.scope_dict()
    return [
        node
        for node in dfs_topological_sort(state)
        if scope[node] is None and isinstance(node, (nodes.MapEntry, nodes.NestedSDFG))
    ]


def separate_units(state: Any) -> list[tuple[Any, list[Any]]]:
    """Split ``state`` so each top-level unit ends a state; returns (state, units) in order.

    Uses DaCe's ``state_fission``, which moves a unit and everything it depends
    on into a new state before ``state``. When units cannot be separated (a
    unit's output feeds another through a view, say) they share a state and
    their checks follow that state together.
    """
    from dace.sdfg.state import StateSubgraphView
    from dace.transformation.helpers import state_fission

    units = top_level_units(state)
    if len(units) <= 1:
        return [(state, units)]
    groups = []
    placed: set = set()
    for number, unit in enumerate(units[:-1]):
        if unit in placed:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = state_fission(
                StateSubgraphView(state, [unit]), label=f"{state.label}_k{number}", allow_isolated_nodes=False
            )
        moved = [other for other in units if other not in placed and other in first.nodes()]
        placed.update(moved)
        groups.append((first, moved))
    remaining = [unit for unit in units if unit not in placed]
    if remaining:
        groups.append((state, remaining))
    return groups


def written_fields(sdfg: Any, state: Any, node: Any, outer_names: dict[str, str]) -> list[WrittenField]:
    """The fields ``node`` (a map entry or nested SDFG) writes, merged per array."""
    from dace import subsets
    from dace.sdfg import nodes

    exit_node = state.exit_node(node) if isinstance(node, nodes.MapEntry) else node
    found: dict[str, Any] = {}
    for edge in state.out_edges(exit_node):
        target = edge.dst
        if not isinstance(target, nodes.AccessNode) or edge.data.is_empty():
            continue
        desc = sdfg.arrays[target.data]
        if not _is_field(target.data, desc):
            continue
        memlet = edge.data
        if memlet.data == target.data and memlet.subset is not None:
            subset = memlet.subset
        elif memlet.other_subset is not None:
            subset = memlet.other_subset
        else:
            subset = subsets.Range.from_array(desc)
        if not isinstance(subset, subsets.Range) or subset.dims() != len(desc.shape):
            subset = subsets.Range.from_array(desc)
        previous = found.get(target.data)
        if previous is not None:
            merged = subsets.union(previous, subset)
            subset = merged if isinstance(merged, subsets.Range) else subsets.Range.from_array(desc)
        found[target.data] = subset
    return [WrittenField(name, field_name(name, outer_names), subset) for name, subset in found.items()]


def _is_field(name: str, desc: Any) -> bool:
    from dace import data

    if not isinstance(desc, data.Array) or isinstance(desc, data.View):
        return False
    return not desc.transient or not name.startswith("__")


def field_name(data: str, outer_names: dict[str, str]) -> str:
    """The name a user sees (and patterns match): the outer name, DaCe's prefixes removed.

    DaCe names an array read through ``self`` ``__g_self_<attribute>``, and
    its GPU transformation names device copies ``gpu_<name>``.

    >>> field_name("__g_self_lap", {})
    'self_lap'
    >>> field_name("gpu___g_self_lap", {})
    'self_lap'
    """
    name = outer_names.get(data, data)
    for prefix in ("gpu_", "__g_"):
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
    return name


def name_candidates(field: WrittenField) -> tuple[str, ...]:
    """Names a pattern is matched against: the shown name, the data name, without ``self_``, the path and its leaf.

    A field held as ``state.tracers['qc']`` matches ``qc``, ``q*`` and
    ``state.tracers['qc']``; one held as ``self.lap`` matches ``lap``.
    """
    names = [field.name, field.data]
    if field.name.startswith("self_"):
        names.append(field.name[len("self_") :])
    if field.path:
        names += [field.path, path_leaf(field.path)]
    return tuple(dict.fromkeys(names))


def path_leaf(path: str) -> str:
    """The last step of an access path: ``qc`` of ``state.tracers['qc']``, ``lap`` of ``self.lap``.

    >>> path_leaf("state.tracers['qc']"), path_leaf("self.grid.area"), path_leaf("self.stencils[1]")
    ('qc', 'area', '1')
    """
    match = re.search(r"\[\s*['\"]?([^\]'\"]+)['\"]?\s*\]$|\.(\w+)$", path)
    return (match.group(1) or match.group(2)) if match else path


def is_gpu_node(node: Any) -> bool:
    from dace import dtypes
    from dace.sdfg import nodes

    if isinstance(node, nodes.MapEntry):
        return node.map.schedule in dtypes.GPU_SCHEDULES
    if isinstance(node, nodes.NestedSDFG):
        return any(
            isinstance(inner, nodes.MapEntry) and inner.map.schedule in dtypes.GPU_SCHEDULES
            for inner, _ in node.sdfg.all_nodes_recursive()
        )
    return False


def find_kernels(sdfg: Any, outer_names: Optional[dict[str, str]] = None, first_index: int = 1) -> list[Kernel]:
    """Split states and list the kernels of ``sdfg`` in program order (the SDFG is modified)."""
    from dace.sdfg import nodes

    outer_names = outer_names or {}
    kernels: list[Kernel] = []
    for state in list(ordered_states(sdfg)):
        state_label = state.label
        for holder, units in separate_units(state):
            for unit in units:
                index = first_index + len(kernels)
                if isinstance(unit, nodes.NestedSDFG):
                    stencil = nested_stencil(unit)
                    if stencil is None:  # several stencils inside: look for kernels in it
                        inner_names = {
                            inner: field_name(edge.data.data, outer_names)
                            for edge in holder.all_edges(unit)
                            if not edge.data.is_empty()
                            for inner in [edge.dst_conn if edge.dst is unit else edge.src_conn]
                            if inner
                        }
                        kernels += find_kernels(unit.sdfg, inner_names, index)
                        continue
                else:
                    stencil = kernel_name(stencils_of_kernel(holder, unit))
                kernels.append(
                    Kernel(
                        index=index,
                        label=kernel_label(unit),
                        stencil=stencil,
                        state_label=state_label,
                        sdfg=sdfg,
                        state=holder,
                        node=unit,
                        fields=written_fields(sdfg, holder, unit, outer_names),
                        on_gpu=is_gpu_node(unit),
                    )
                )
    return kernels
