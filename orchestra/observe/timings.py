"""Where each call of an orchestrated program goes: the library, each callback, orchestra itself.

Switched on with ``ORCHESTRA_TIMINGS=1`` (or ``DaceConfig(timings=True)``);
off, a call pays one attribute test per phase. On, every call of every
orchestrated program this process calls from Python is split into:

* ``bind``: completing the arguments (defaults made explicit);
* ``check``: comparing the values folded into the program (``self.n``,
  module constants) with their values now;
* ``marshal``: gathering the arrays read through ``self`` and comparing
  them with the marshalled ones (re-marshalling when one moved);
* ``library``: inside the compiled library, callbacks excluded;
* one part per callback, named by its expression (``self.halo.update``):
  the Python it runs (a halo exchange, a scalar getter);
* ``return``: handing back the objects Python mode returns.

On a GPU (``dace:gpu``) the library only launches kernels; they run behind
the host and would be waited for in the next callback that touches device
memory (a halo exchange), whose time would then hold them. With timings on,
the clock therefore synchronizes the device before each callback and at the
end of the library call: ``library`` is the kernels' time, and a callback's
part is its own work. The synchronisations take away the overlap of host
and device, so a timed step is slower than an untimed one.

``bind``, ``check``, ``marshal`` and ``return`` are orchestra's overhead.
Each part is measured on its own; ``total`` is measured around the whole
call, so the parts add up to it up to the few attribute reads between
them. A call that builds or loads a program (the first, or one after a
folded value changed) is kept apart.

:func:`timing_report` (all ranks of a communicator call it: it gathers)
makes one table on rank 0 with min / median / max over every call of every
rank, logs it and returns it; ``path`` also writes the figures as JSON.
At exit, a process with timings on that made no report logs its own table
(rank 0 only).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Optional

log = logging.getLogger("orchestra")

#: The environment switch: unset, empty or "0" is off.
TIMINGS_VARIABLE = "ORCHESTRA_TIMINGS"

#: orchestra's own parts of a call, in call order.
OVERHEAD_PARTS = ("bind", "check", "marshal", "return")


def timings_from_environment() -> bool:
    """Whether ``ORCHESTRA_TIMINGS`` asks for timings."""
    return os.environ.get(TIMINGS_VARIABLE, "").strip().lower() not in ("", "0", "false", "no", "off")


class ProgramClock:
    """The per-call timings of one orchestrated program in this process."""

    def __init__(self, label: str, synchronize: Optional[Callable[[], None]] = None) -> None:
        """``synchronize``: waits for the device (GPU programs), else None."""
        self.label = label
        self._synchronize = synchronize
        self.obtaining_calls: list[float] = []  #: seconds of each call that built or loaded a program
        self.calls: list[dict[str, float]] = []  #: one dict of part -> seconds per later call
        self._parts: dict[str, float] = {}
        self._start = self._last = 0.0
        self._callbacks = 0.0
        _CLOCKS.append(self)

    # ------------------------------------------------------------ one call
    def start(self) -> None:
        self._parts = {}
        self._callbacks = 0.0
        self._start = self._last = time.perf_counter()

    def lap(self, part: str) -> None:
        """The time since the previous lap (or the start) belongs to ``part``."""
        now = time.perf_counter()
        self._parts[part] = self._parts.get(part, 0.0) + now - self._last
        self._last = now

    def lap_library(self) -> None:
        """The library call returned: its time (after the device finished its work) is ``library``."""
        if self._synchronize is not None:
            self._synchronize()
        self.lap("library")

    def skip(self) -> None:
        """The time since the previous lap belongs to no part (a build, a load)."""
        self._last = time.perf_counter()

    def stop(self, obtained: bool) -> None:
        """End the call; ``obtained``: it built or loaded a program (kept apart from the others)."""
        total = time.perf_counter() - self._start
        if obtained:
            self.obtaining_calls.append(total)
            return
        parts = self._parts
        if "library" in parts:  # callbacks run inside the library call
            parts["library"] -= self._callbacks
        parts["total"] = total
        self.calls.append(parts)

    def timed_callback(self, name: str, function: Callable) -> Callable:
        """``function`` adding its run time to part ``callback name`` of the current call."""

        synchronize = self._synchronize

        def timed(*args: Any, **kwargs: Any) -> Any:
            if synchronize is not None:  # kernels queued before the callback count as library
                synchronize()
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                self._callbacks += elapsed
                key = f"callback {name}"
                self._parts[key] = self._parts.get(key, 0.0) + elapsed

        timed.__wrapped__ = function  # type: ignore[attr-defined]
        return timed

    def as_record(self) -> dict[str, Any]:
        return {"program": self.label, "obtaining_calls": self.obtaining_calls, "calls": self.calls}


#: Every clock of this process, in creation order.
_CLOCKS: list[ProgramClock] = []
_REPORTED = False


def local_records() -> list[dict[str, Any]]:
    """This process's timings: one record per program (``program``, ``obtaining_calls``, ``calls``)."""
    return [clock.as_record() for clock in _CLOCKS]


def _stats(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def summarize(records_by_rank: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Min / median / max of each part over all calls of all ranks, per program."""
    programs: dict[str, dict[str, Any]] = {}
    for rank, records in enumerate(records_by_rank):
        for record in records:
            if not record["calls"] and not record["obtaining_calls"]:
                continue  # a component only called from inside another program
            entry = programs.setdefault(record["program"], {"ranks": set(), "obtaining_calls": [], "parts": {}})
            entry["ranks"].add(rank)
            entry["obtaining_calls"].extend(record["obtaining_calls"])
            for call in record["calls"]:
                for part, seconds in call.items():
                    entry["parts"].setdefault(part, []).append(seconds)
    summary = {}
    for label, entry in programs.items():
        parts = entry["parts"]
        calls = len(parts.get("total", []))
        overhead = [sum(p) for p in zip(*(parts[name] for name in OVERHEAD_PARTS if name in parts))]
        summary[label] = {
            "ranks": len(entry["ranks"]),
            "calls": calls,
            "obtaining_calls": _stats(entry["obtaining_calls"]) if entry["obtaining_calls"] else None,
            "parts": {name: _stats(values) for name, values in sorted(parts.items()) if len(values) == calls},
            "overhead": _stats(overhead) if overhead and len(overhead) == calls else None,
        }
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    """The report as a short table, milliseconds."""
    if not summary:
        return "no orchestrated program was called"
    lines = []
    for label, entry in summary.items():
        first = entry["obtaining_calls"]
        first_text = f"; calls that built or loaded: slowest {first['max']:.2f} s, not counted below" if first else ""
        lines.append(f"{label}: {entry['calls']} calls on {entry['ranks']} rank(s){first_text}")
        if not entry["calls"]:
            continue
        lines.append(f"  {'ms per call':<40}{'min':>10}{'median':>10}{'max':>10}")
        rows = [("total", entry["parts"]["total"]), ("library (callbacks excluded)", entry["parts"].get("library"))]
        rows += [(name, stats) for name, stats in entry["parts"].items() if name.startswith("callback ")]
        rows += [("orchestra overhead", entry["overhead"])]
        rows += [(f"  {name}", entry["parts"].get(name)) for name in OVERHEAD_PARTS]
        for name, stats in rows:
            if stats is not None:
                lines.append(
                    f"  {name:<40}{stats['min'] * 1e3:>10.3f}{stats['median'] * 1e3:>10.3f}{stats['max'] * 1e3:>10.3f}"
                )
    return "\n".join(lines)


def timing_report(communicator: Any = None, path: Optional[Path] = None) -> Optional[dict[str, Any]]:
    """The timing table over all ranks of ``communicator`` (collective), on rank 0; None elsewhere.

    Logs the table on rank 0, writes it as JSON to ``path`` if given (rank 0),
    and returns the summary there. Without a communicator: this process only.
    """
    global _REPORTED
    _REPORTED = True
    gathered = [local_records()] if communicator is None else communicator.gather_results(local_records)
    if gathered is None:  # not rank 0
        return None
    summary = summarize(gathered)
    log.info("orchestra timings (ORCHESTRA_TIMINGS):\n%s", format_summary(summary))
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"summary": summary, "ranks": gathered}, indent=1))
    return summary


def _report_at_exit() -> None:
    if _REPORTED or not any(clock.calls or clock.obtaining_calls for clock in _CLOCKS):
        return
    if world_rank() == 0:
        log.info("orchestra timings of rank 0 (call orchestra.timing_report for all ranks):\n%s",
                 format_summary(summarize([local_records()])))


def world_rank() -> int:
    """This process's rank in MPI's world (0 without mpi4py imported): who prints a report at exit."""
    import sys

    mpi = sys.modules.get("mpi4py.MPI")
    return int(mpi.COMM_WORLD.rank) if mpi is not None else 0


atexit.register(_report_at_exit)


def synchronize_device() -> None:
    """Wait for every kernel and copy queued on the current GPU (cupy)."""
    import cupy

    cupy.cuda.Device().synchronize()
