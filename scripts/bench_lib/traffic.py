"""The minimum bytes one model step must move, from a trace of its stencil calls.

One step is run in ``Python`` mode with every ``FrozenStencil`` call replaced
by a recorder (nothing is computed): for each call, the fields passed, their
access (gt4py's ``field_info``: read, write or both) and the cells touched.
A field read with offsets touches its domain grown by the stencil's read
extent; a written field touches the domain. 2-D fields count ``ni * nj``
cells, 3-D fields ``ni * nj * nk``; 8 bytes per cell. Two lower bounds:

``per_stencil``
    Every stencil reads each input once and writes each output once: the
    traffic of the schedule that runs stencils one after another, with perfect
    cache reuse *within* a stencil and none between stencils.

``per_stage``
    Everything between two halo updates (one Runge-Kutta stage, and the state
    copy before the first) is one fused computation: a field is read once if
    the stage reads it before writing it, and written once if a later stage
    (cyclically: the next step too) reads it before overwriting it. Tendencies,
    face fluxes, Laplacians and Cartesian winds then never reach memory.

``per_stage_written``
    As ``per_stage``, but every field a stage writes is written once: what a
    fused schedule must move when the intermediates are arrays of the model
    (attributes Python can read after the call), so their last values must
    reach memory even if no later stage reads them. orchestra's fusion keeps
    every write (it cannot know that Python never reads them), so this is the
    bound it can reach.

Halo exchanges (a few strips per field) are not counted.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any


@dataclasses.dataclass(frozen=True)
class Access:
    """One field passed to one stencil call."""

    array: int  # id() of the array object
    name: str
    read: bool
    write: bool
    read_cells: int
    write_cells: int


@dataclasses.dataclass
class Trace:
    """Stencil calls grouped into segments (a new segment at each halo update)."""

    segments: list[list[tuple[str, list[Access]]]] = dataclasses.field(default_factory=lambda: [[]])

    def new_segment(self) -> None:
        if self.segments[-1]:
            self.segments.append([])

    def record(self, stencil: Any, args: tuple, kwargs: dict) -> None:
        names = list(inspect.signature(stencil.definition).parameters)
        given = dict(zip(names, args), **kwargs)
        info = stencil.stencil_object.field_info
        accesses = []
        for name, value in given.items():
            field = info.get(name)
            if field is None or not hasattr(value, "shape"):
                continue  # scalar argument, or a field the stencil does not use
            access = str(field.access)
            read, write = "READ" in access, "WRITE" in access
            axes = "".join(field.axes)
            extent = field.boundary
            domain = stencil.domain
            write_cells = _cells(domain, axes, None)
            read_cells = _cells(domain, axes, extent)
            accesses.append(Access(id(value), name, read, write, read_cells, write_cells))
        self.segments[-1].append((stencil.name, accesses))


def _cells(domain: tuple[int, int, int], axes: str, extent: Any) -> int:
    cells = 1
    for axis_index, axis in enumerate("IJK"):
        if axis not in axes:
            continue
        size = domain[axis_index]
        if extent is not None:
            low, high = extent[axis_index]
            size += low + high
        cells *= size
    return cells


def trace_step(model: Any) -> Trace:
    """Record one ``model.dycore()`` call (Python mode) without computing anything."""
    from orchestra.stencils.frozen import FrozenStencil

    trace = Trace()
    original = FrozenStencil.__call__
    exchangers = {id(x): x for x in _exchangers(model.dycore)}.values()

    def recorder(self: Any, *args: Any, **kwargs: Any) -> None:
        trace.record(self, args, kwargs)

    FrozenStencil.__call__ = recorder  # type: ignore[method-assign]
    for exchanger in exchangers:
        exchanger.update = trace.new_segment
    try:
        model.dycore()
    finally:
        FrozenStencil.__call__ = original  # type: ignore[method-assign]
        for exchanger in exchangers:
            del exchanger.update
    return trace


def _exchangers(dycore: Any) -> list[Any]:
    stages = (dycore.stage_1, dycore.stage_2, dycore.stage_3)
    return [stage.halo for stage in stages] + [stage.depth_halo for stage in stages]


def per_stencil_bytes(trace: Trace) -> int:
    """Each stencil reads every input and writes every output once."""
    cells = 0
    for segment in trace.segments:
        for _, accesses in segment:
            for a in accesses:
                cells += a.read_cells * a.read + a.write_cells * a.write
    return 8 * cells


def per_stage_bytes(trace: Trace) -> int:
    """Each fused stage reads what it needs from before and writes what is needed after."""
    summaries = [_summarize(segment) for segment in trace.segments]
    cells = 0
    for index, summary in enumerate(summaries):
        for array, (first_is_read, read_cells, write_cells) in summary.items():
            if first_is_read:
                cells += read_cells
            if write_cells and _live_after(summaries, index, array):
                cells += write_cells
    return 8 * cells


def per_stage_written_bytes(trace: Trace) -> int:
    """Each fused stage reads what it needs from before and writes everything it writes once."""
    cells = 0
    for segment in trace.segments:
        for first_is_read, read_cells, write_cells in _summarize(segment).values():
            cells += read_cells * first_is_read + write_cells
    return 8 * cells


def _summarize(segment: list[tuple[str, list[Access]]]) -> dict[int, tuple[bool, int, int]]:
    """Per array: (first access reads it, cells read, cells written) within one segment."""
    summary: dict[int, tuple[bool, int, int]] = {}
    for _, accesses in segment:
        for a in accesses:
            first, read_cells, write_cells = summary.get(a.array, (a.read, 0, 0))
            summary[a.array] = (
                first,
                max(read_cells, a.read_cells if a.read else 0),
                max(write_cells, a.write_cells if a.write else 0),
            )
    return summary


def _live_after(summaries: list[dict], index: int, array: int) -> bool:
    """True if the next segment touching ``array`` (cyclically) reads it first."""
    count = len(summaries)
    for step in range(1, count + 1):
        later = summaries[(index + step) % count]
        if array in later:
            return later[array][0]
    return False


def step_traffic(model: Any) -> dict[str, Any]:
    """The three bounds for one step of ``model`` (a Python-mode model), with the call counts."""
    trace = trace_step(model)
    calls = [name for segment in trace.segments for name, _ in segment]
    return {
        "per_stencil_bytes": per_stencil_bytes(trace),
        "per_stage_bytes": per_stage_bytes(trace),
        "per_stage_written_bytes": per_stage_written_bytes(trace),
        "stencil_calls": len(calls),
        "segments": len(trace.segments),
    }
