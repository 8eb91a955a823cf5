"""The pass that adds a check state after every kernel (see :mod:`orchestra.passes.debug`).

[optimized SDFG] -> [SDFG with check states]:

1. :func:`~orchestra.passes.debug.kernels.find_kernels` splits states so each
   kernel ends one, and lists kernels in program order with the fields they
   write;
2. after each kernel's state a new state ``orchestra_debug_k<N>`` holds one C++
   tasklet (``side_effects=True``) that reads every checked field through a
   memlet over the whole array and runs the checks on the written box;
   on GPU, a state with a device synchronization and error check comes first,
   and fields in device memory are copied into a host mirror (a persistent
   host transient, one per device array) that the tasklet reads;
3. the runtime the tasklets call is appended once to the program's global code.

Run after simplification: nothing removes the check states afterwards.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
from typing import Any, Optional

import numpy as np
from dace.transformation import pass_pipeline as ppl

from orchestra.passes.debug.selection import DEBUG_VARIABLE, DebugChecks
from orchestra.passes.debug.codegen import kernel_code, runtime_code, sync_code, trace_point
from orchestra.errors import ConfigurationError
from orchestra.passes.debug.kernels import Kernel, WrittenField, field_name, find_kernels, name_candidates


def _matches(field: WrittenField, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    names = name_candidates(field)

    def any_match(patterns: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in patterns)

    return any_match(include) and not any_match(exclude)


class InsertDebugChecks(ppl.Pass):
    """Insert the checks of a :class:`DebugChecks` selection after every kernel.

    ``apply_pass`` returns the list of :class:`Kernel` objects found, each
    with the state it ends and the fields it writes.
    """

    CATEGORY = "orchestra"

    def __init__(self, checks: DebugChecks, paths: Optional[dict[str, str]] = None) -> None:
        self.checks = checks
        #: program data name -> where the model holds the array (``state.tracers['qc']``)
        self.paths = dict(paths or {})
        self._mirrors: dict[tuple[int, str], str] = {}

    def modifies(self) -> ppl.Modifies:
        return ppl.Modifies.CFG | ppl.Modifies.Nodes | ppl.Modifies.Memlets | ppl.Modifies.Descriptors

    def should_reapply(self, modified: ppl.Modifies) -> bool:
        return False

    def apply_pass(self, sdfg: Any, pipeline_results: dict[str, Any]) -> Optional[list[Kernel]]:
        if not self.checks:
            return None
        self._mirrors = {}
        on_gpu = _uses_gpu(sdfg)
        kernels = find_kernels(sdfg)
        self._name_by_path(kernels)
        self._refuse_unmatched_patterns(sdfg.name, kernels)
        for _, group in itertools.groupby(kernels, key=lambda kernel: id(kernel.state)):
            self._add_check_state(sdfg.name, list(group), len(kernels), on_gpu)
        sdfg.append_global_code(runtime_code())
        return kernels

    def _name_by_path(self, kernels: list[Kernel]) -> None:
        """Show each field read through an object by its path (``state.tracers['qc']``), as the key names it."""
        by_shown = {field_name(data, {}): path for data, path in self.paths.items()}
        for kernel in kernels:
            for field in kernel.fields:
                path = by_shown.get(field.name)
                if path:
                    field.path = field.name = path

    def _refuse_unmatched_patterns(self, program: str, kernels: list[Kernel]) -> None:
        """A field pattern that matches no field a kernel writes is a mistake: say which names it could match."""
        fields = [field for kernel in kernels for field in kernel.fields]
        selected = [(kind, check.include) for kind, check in (("nan", self.checks.nan), ("negative", self.checks.negative),
                                                              ("trace", self.checks.trace)) if check]
        for kind, patterns in selected:
            for pattern in patterns:
                if pattern == "*":
                    continue  # every field, also none
                if not any(fnmatch.fnmatchcase(name, pattern) for field in fields for name in name_candidates(field)):
                    shown = sorted({field.name for field in fields})
                    raise ConfigurationError(
                        f"{DEBUG_VARIABLE}: the {kind} check's pattern {pattern!r} matches no field that {program} "
                        f"writes; the fields it writes are {', '.join(shown) or 'none'} (a field held in an object "
                        f"matches by its path, e.g. state.tracers['qc'], and by its last part, e.g. qc)")

    # ------------------------------------------------------------ per field
    def field_checks(self, field: WrittenField, desc: Any) -> dict[str, Any]:
        """What to do with one written field: ``finite``, ``below`` (threshold), ``trace`` (point)."""
        dtype = desc.dtype.type
        what: dict[str, Any] = {}
        checks = self.checks
        if checks.nan and np.issubdtype(dtype, np.floating) and _matches(field, checks.nan.include, checks.nan.exclude):
            what["finite"] = True
        numeric = np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)
        if checks.negative and numeric and _matches(field, checks.negative.fields, checks.negative.exclude):
            what["below"] = checks.negative.threshold
        if checks.trace and numeric and _matches(field, checks.trace.include, checks.trace.exclude):
            point = trace_point(checks.trace.point, desc)
            if point is not None:
                what["trace"] = point
        return what

    # ------------------------------------------------------------ per state
    def _add_check_state(self, program: str, group: list[Kernel], count: int, on_gpu: bool) -> None:
        """After the state ending ``group`` (usually one kernel): a GPU sync state, then a check state."""
        import dace

        sdfg, state = group[0].sdfg, group[0].state
        label = f"orchestra_debug_k{group[0].index}"
        plans = [(kernel, self._checked_fields(kernel, sdfg)) for kernel in group]
        if on_gpu:
            state = state.parent_graph.add_state_after(state, label=f"{label}_sync")
            state.add_tasklet(
                f"{label}_sync",
                inputs={},
                outputs={},
                code="\n".join(sync_code(program, kernel, count) for kernel in group),
                language=dace.dtypes.Language.CPP,
                side_effects=True,
            )
        if not self.checks.progress and not any(fields for _, fields in plans):
            return

        check_state = state.parent_graph.add_state_after(state, label=label)
        connectors: dict[str, str] = {}
        reads: dict[str, Any] = {}  # data -> union of the written subsets
        for _, fields in plans:
            for field, _ in fields:
                if field.data not in connectors:
                    connectors[field.data] = f"__dbg_in{len(connectors)}"
                    reads[field.data] = field.subset
                else:
                    reads[field.data] = dace.subsets.union(reads[field.data], field.subset) or _full(sdfg, field.data)
        sources = {data: self._host_view(sdfg, check_state, data, reads[data]) for data in connectors}
        code = "\n".join(
            kernel_code(
                program,
                kernel,
                count,
                [
                    (connectors[field.data], field.name, field.subset, sdfg.arrays[sources[field.data][1]], what)
                    for field, what in fields
                ],
                progress=self.checks.progress is not None,
            )
            for kernel, fields in plans
        )
        tasklet = check_state.add_tasklet(
            label,
            inputs={connectors[data]: dace.pointer(sdfg.arrays[data].dtype) for data in connectors},
            outputs={},
            code=code,
            language=dace.dtypes.Language.CPP,
            side_effects=True,
        )
        for data, connector in connectors.items():
            node, name = sources[data]
            check_state.add_edge(node, None, tasklet, connector, dace.Memlet.from_array(name, sdfg.arrays[name]))

    def _checked_fields(self, kernel: Kernel, sdfg: Any) -> list[tuple[WrittenField, dict[str, Any]]]:
        """The fields ``kernel`` writes that a selected check looks at, each with what to check."""
        fields = []
        for field in kernel.fields:
            what = self.field_checks(field, sdfg.arrays[field.data])
            if what:
                fields.append((field, what))
        return fields

    def _host_view(self, sdfg: Any, state: Any, data: str, subset: Any) -> tuple[Any, str]:
        """An access node the host can read ``data`` from: itself, or a host mirror of a GPU array.

        A mirror is a persistent host transient (one per GPU array), filled by a
        copy of the written region.
        """
        import dace
        from dace import dtypes

        desc = sdfg.arrays[data]
        node = state.add_access(data)
        if desc.storage not in _device_storages():
            return node, data
        key = (id(sdfg), data)
        if key not in self._mirrors:
            lifetime = dtypes.AllocationLifetime.SDFG if desc.free_symbols else dtypes.AllocationLifetime.Persistent
            self._mirrors[key], _ = sdfg.add_array(
                f"__dbg_host_{data}",
                desc.shape,
                desc.dtype,
                storage=dtypes.StorageType.CPU_Heap,
                transient=True,
                strides=desc.strides,
                total_size=desc.total_size,
                lifetime=lifetime,
                find_new_name=True,
            )
        name = self._mirrors[key]
        mirror = state.add_access(name)
        memlet = dace.Memlet(data=data, subset=copy.deepcopy(subset), other_subset=copy.deepcopy(subset))
        state.add_edge(node, None, mirror, None, memlet)
        return mirror, name


def _device_storages() -> tuple:
    from dace import dtypes

    return (dtypes.StorageType.GPU_Global, dtypes.StorageType.GPU_Shared)


def _full(sdfg: Any, data: str) -> Any:
    from dace import subsets

    return subsets.Range.from_array(sdfg.arrays[data])


def _uses_gpu(sdfg: Any) -> bool:
    from dace import dtypes
    from dace.sdfg import nodes

    for node, _ in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.MapEntry) and node.map.schedule in dtypes.GPU_SCHEDULES:
            return True
    return any(desc.storage in _device_storages() for _, _, desc in sdfg.arrays_recursive())


def insert_debug_checks(sdfg: Any, checks: DebugChecks, paths: Optional[dict[str, str]] = None) -> Optional[list]:
    """Insert the selected checks after every kernel of ``sdfg`` (in place).

    With no checks selected the SDFG is not touched at all, so the generated
    code is that of a normal build. Returns the instrumented kernels (see
    :class:`orchestra.passes.debug.kernels.Kernel`) or None when nothing was
    selected. ``paths``: where the model holds the arrays of the program (data name -> access path).
    """
    if not checks:
        return None
    return InsertDebugChecks(checks, paths).apply_pass(sdfg, {})
