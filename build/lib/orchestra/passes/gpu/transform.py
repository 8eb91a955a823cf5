"""The GPU pass: [optimized SDFG] -> [SDFG whose computations are CUDA kernels].

Steps, in order (:func:`to_gpu`)::

    # [side-effect tasklets] -> host callbacks: never wrapped into a kernel; the
    #     scalars they touch (DaCe's callback ordering token ``__pystate``, the
    #     values a callback returns) stay in host memory
    # [SDFG] -> [SDFG, GPU schedules]: DaCe's GPUTransformSDFG. Top-level maps
    #     become kernels; arrays already in device memory (cupy arrays, abstract
    #     arrays) stay where they are, with no copies; a host array passed in gets
    #     a device copy (copied in and out on every call: reported); transients
    #     move to device memory; free tasklets writing device data become
    #     one-thread kernels. Its own full simplify is replaced by orchestra's
    #     (with the skip list of the pipeline).
    # [vertical map { horizontal map }] -> [one 3-D map]: gt4py's layout of a
    #     PARALLEL computation; collapsed, the grid's x dimension runs along i,
    #     the contiguous dimension of dace:gpu storages (coalesced accesses)
    # check: no callback ended up inside a kernel

Order in the optimize stage (``orchestra.pipeline.stages.optimize``)::

    simplify -> expand library nodes -> simplify -> to_gpu -> memory policy
             -> debug checks -> validate

The memory policy runs after this pass because only here do transients get
their device storage (it then pools them); the debug checks run after both so
that they see the final kernels (``GPU_Device`` maps) and can add a device
synchronisation and error check after each.

Runs alone on any SDFG::

    result = to_gpu(sdfg)      # GpuResult(kernels=..., callbacks=..., copied_arrays=...)
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Iterable, Optional

from orchestra.errors import BuildError

log = logging.getLogger("orchestra")


@dataclasses.dataclass(frozen=True)
class GpuResult:
    """What :func:`to_gpu` did.

    Attributes:
        kernels: top-level GPU maps (one kernel launch each, per execution).
        callbacks: labels of the Python callbacks kept on the host.
        copied_arrays: host arrays passed to the program that are copied to and
            from the device on every call (pass device arrays to avoid it).
        collapsed: vertical/horizontal map pairs merged into one kernel map.
    """

    kernels: int
    callbacks: tuple[str, ...]
    copied_arrays: tuple[str, ...]
    collapsed: int


def to_gpu(sdfg: Any, simplify_skip: Optional[Iterable[str]] = None) -> GpuResult:
    """Turn ``sdfg`` (in place) into a program whose computations run on the GPU.

    Args:
        sdfg: a simplified SDFG with expanded library nodes.
        simplify_skip: simplify passes to skip afterwards (default:
            :data:`orchestra.passes.simplify.SIMPLIFY_SKIP`).
    """
    from dace.transformation.interstate import GPUTransformSDFG

    from orchestra.passes.simplify import simplify

    if simplify_skip is None:
        from orchestra.passes.simplify import SIMPLIFY_SKIP as simplify_skip

    callbacks = _callback_tasklets(sdfg)
    host_scalars = sorted(_host_scalars(sdfg, callbacks))
    host_arrays = sorted(
        name
        for name, desc in sdfg.arrays.items()
        if not desc.transient and _is_array(desc) and desc.storage not in _device_storages()
    )
    options = {
        "simplify": False,  # orchestra's simplify, with its skip list, runs below
        "sequential_innermaps": False,  # keep gt4py's nested device maps: they extend the grid
        "exclude_tasklets": ",".join(sorted({node.label for _, node in callbacks})),
        "host_data": host_scalars,
    }
    try:
        applied = sdfg.apply_transformations(GPUTransformSDFG, options=options, validate=False)
    except Exception as error:
        raise BuildError(f"DaCe's GPU transformation failed on {sdfg.name}: {error}") from error
    if not applied:
        raise BuildError(
            f"DaCe's GPU transformation does not apply to {sdfg.name} (consume scopes, or tasklets "
            "connected directly to each other at the top level)"
        )
    simplify(sdfg, simplify_skip)
    collapsed = _collapse_device_maps(sdfg)
    _check_callbacks_on_host(sdfg)
    copied = tuple(host_arrays)
    if copied:
        log.warning(
            "%s: host arrays %s are copied to the GPU and back on every call; pass device (cupy) "
            "arrays to avoid the copies",
            sdfg.name,
            ", ".join(copied),
        )
    return GpuResult(
        kernels=_count_kernels(sdfg),
        callbacks=tuple(node.label for _, node in callbacks),
        copied_arrays=copied,
        collapsed=collapsed,
    )


def _device_storages() -> tuple[Any, ...]:
    """Storage in device memory (``dace.dtypes.GPU_STORAGES`` lists only ``GPU_Shared``)."""
    from dace import dtypes

    return (dtypes.StorageType.GPU_Global, dtypes.StorageType.GPU_Shared)


def _is_array(desc: Any) -> bool:
    from dace import data

    return isinstance(desc, data.Array) and not isinstance(desc, data.View)


def _callback_tasklets(sdfg: Any) -> list[tuple[Any, Any]]:
    """(state, tasklet) for every tasklet with side effects (Python callbacks) in ``sdfg``."""
    from dace.sdfg import nodes

    return [
        (state, node)
        for node, state in sdfg.all_nodes_recursive()
        if isinstance(node, nodes.Tasklet) and node.side_effects
    ]


def _host_scalars(sdfg: Any, callbacks: list[tuple[Any, Any]]) -> set[str]:
    """Top-level scalars a callback reads or writes: they must stay in host memory."""
    from dace import data

    names = set()
    for state, node in callbacks:
        if state.sdfg is not sdfg:
            continue
        for edge in state.all_edges(node):
            name = edge.data.data
            if name and isinstance(sdfg.arrays.get(name), data.Scalar):
                names.add(name)
    return names


def _collapse_device_maps(sdfg: Any) -> int:
    """Merge each top-level GPU map with a GPU map directly inside it; returns how many."""
    from dace import dtypes
    from dace.sdfg import nodes
    from dace.sdfg.propagation import propagate_memlets_sdfg
    from dace.transformation.dataflow import MapCollapse

    collapsed = 0
    for state in sdfg.states():
        changed = True
        while changed:
            changed = False
            scope = state.scope_dict()
            for outer in state.nodes():
                if not (
                    isinstance(outer, nodes.MapEntry)
                    and scope[outer] is None
                    and outer.map.schedule == dtypes.ScheduleType.GPU_Device
                ):
                    continue
                inner = {edge.dst for edge in state.out_edges(outer)}
                if len(inner) != 1:
                    continue
                (inner,) = inner
                if not (isinstance(inner, nodes.MapEntry) and inner.map.schedule == dtypes.ScheduleType.GPU_Device):
                    continue
                try:
                    # No memlet propagation per collapse (DaCe's default propagates through the whole
                    # SDFG after each: 68 % of py-spy's samples of the dycore's GPU optimize stage); once at the end.
                    MapCollapse.apply_to(
                        sdfg, outer_map_entry=outer, inner_map_entry=inner, save=False, annotate=False
                    )
                except ValueError:  # not applicable (e.g. the inner range depends on the outer map)
                    continue
                collapsed += 1
                changed = True
                break
    if collapsed:
        propagate_memlets_sdfg(sdfg)
    return collapsed


def _check_callbacks_on_host(sdfg: Any) -> None:
    from dace.sdfg import scope

    for state, node in _callback_tasklets(sdfg):
        if scope.is_devicelevel_gpu(state.sdfg, state, node):
            raise BuildError(
                f"the Python callback {node.label!r} ({node.code.as_string.strip()[:60]}) ended up inside "
                f"a GPU kernel of {sdfg.name}; a callback must be called from the orchestrated method "
                "itself, not from inside a loop over array elements"
            )


def _count_kernels(sdfg: Any) -> int:
    from dace import dtypes
    from dace.sdfg import nodes

    count = 0
    for node, state in sdfg.all_nodes_recursive():
        if (
            isinstance(node, nodes.MapEntry)
            and node.map.schedule in dtypes.GPU_SCHEDULES
            and state.entry_node(node) is None
            and state.sdfg.parent_nsdfg_node is None
        ):
            count += 1
    return count
