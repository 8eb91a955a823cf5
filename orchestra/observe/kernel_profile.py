"""The kernel profile of a run: time per kernel and stencil, bytes moved, fraction of bandwidth.

Switched on with ``ORCHESTRA_PROFILE=kernels`` (or
``DaceConfig(profile="kernels")``): orchestrated programs are built with a
timer on every kernel (:mod:`orchestra.passes.kernel_timers`; another cache
entry) and registered here when loaded. The library keeps its timings in
memory and writes them when it ends, so :func:`kernel_report` ends every
profiled program (call it once, at the end of the run, on every rank: it
gathers to rank 0), reads the reports and prints, per stencil and per kernel
(a kernel fusion merged is one entry named by all its stencils, ``a+b``: its
time cannot be split between them):
the time per program call (median over ranks), the bytes the kernel must move
(from the SDFG's memlets, :func:`~orchestra.passes.kernel_timers.kernel_traffic`),
the bandwidth that is, and its fraction of the bandwidth measured on this
node (a numpy copy of arrays far larger than the caches).
"""

from __future__ import annotations

import atexit
import collections
import inspect
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from orchestra.observe.timings import world_rank
from orchestra.passes.stencil_labels import JOIN

log = logging.getLogger("orchestra")

#: The environment switch; "kernels" is the one profile there is.
PROFILE_VARIABLE = "ORCHESTRA_PROFILE"
PROFILES = ("", "kernels")


def profile_from_environment() -> str:
    """``ORCHESTRA_PROFILE`` (checked by DaceConfig)."""
    return os.environ.get(PROFILE_VARIABLE, "").strip().lower()


class _Profiled:
    """One loaded profiled program: its fast caller, build folder and the model's stencils."""

    def __init__(self, label: str, caller: Any, folder: Path, sources: dict[str, str]) -> None:
        self.label, self.caller, self.folder, self.sources = label, caller, folder, sources


class _Ended:
    """Stands in for a profiled library that :func:`kernel_report` ended: calling it is an error."""

    _lastargs: tuple = ()

    def __init__(self, label: str) -> None:
        self.label = label

    def construct_arguments(self, **_keywords: Any) -> tuple:
        return ()

    def fast_call(self, *_args: Any) -> None:
        from orchestra.errors import OrchestraError

        raise OrchestraError(
            f"{self.label} was ended by orchestra.kernel_report (its library wrote its kernel profile); "
            "report at the end of the run, after the last call"
        )


_PROFILED: list[_Profiled] = []


def register(label: str, caller: Any, folder: Path, program: Any) -> None:
    """A profiled program was loaded: ``caller`` its FastCaller, ``program`` its DaceProgram (stencil sources)."""
    _PROFILED.append(_Profiled(label, caller, Path(folder), stencil_sources(program)))


def stencil_sources(program: Any) -> dict[str, str]:
    """``stencil name -> file:line`` of every stencil the program's call tree calls."""
    sources: dict[str, str] = {}
    pending = [getattr(program, "resolver", None)]
    while pending:
        closure = pending.pop()
        if closure is None:
            continue
        for _call, obj in closure.closure_sdfgs.values():
            definition = getattr(obj, "definition", None)
            name = getattr(obj, "name", None)
            if definition is not None and name:
                try:
                    where = f"{Path(inspect.getsourcefile(definition)).name}:{definition.__code__.co_firstlineno}"
                except (TypeError, OSError, AttributeError):
                    where = "?"
                sources.setdefault(name, where)
        pending.extend(child for _qualname, child in closure.nested_closures)
    return sources


def measured_bandwidth(megabytes: int = 256) -> float:
    """Bytes per second of a numpy copy (read + write) of arrays far larger than the caches; best of 5."""
    import numpy as np

    source = np.ones(megabytes * 2**20 // 16)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best


def _end_and_read(profiled: _Profiled) -> list[dict[str, Any]]:
    """End the program (its library writes its report) and return the report's events."""
    from orchestra.pipeline.generated_code import REPORT_FOLDER_VARIABLE

    with tempfile.TemporaryDirectory(prefix="orchestra_kernels_") as folder:
        previous = os.environ.get(REPORT_FOLDER_VARIABLE)
        os.environ[REPORT_FOLDER_VARIABLE] = folder
        compiled = profiled.caller.compiled_sdfg
        profiled.caller.compiled_sdfg = _Ended(profiled.label)
        try:
            compiled.finalize()
        finally:
            if previous is None:
                os.environ.pop(REPORT_FOLDER_VARIABLE, None)
            else:
                os.environ[REPORT_FOLDER_VARIABLE] = previous
        reports = sorted(Path(folder).glob("report-*.json"))
        if not reports:
            return []
        return json.loads(reports[-1].read_text()).get("traceEvents", [])


def summarize_events(events: list[dict[str, Any]], program_name: str) -> dict[str, Any]:
    """Seconds per program call: the program, each kernel (map label), each callback state."""
    calls = sum(1 for e in events if e["name"] == program_name or e["name"].startswith("SDFG "))
    per_kernel: dict[str, float] = collections.defaultdict(float)
    program = callbacks = 0.0
    for event in events:
        name, seconds = event["name"], event.get("dur", 0) * 1e-6
        if name == program_name or name.startswith("SDFG "):
            program += seconds
        elif name.startswith("State "):
            callbacks += seconds
        else:
            per_kernel[name.removeprefix("Map ")] += seconds
    per_call = max(calls, 1)
    return {
        "calls": calls,
        "program_s": program / per_call,
        "callbacks_s": callbacks / per_call,
        "kernels_s": {label: seconds / per_call for label, seconds in per_kernel.items()},
    }


def _local_profiles() -> list[dict[str, Any]]:
    import dace

    from orchestra.passes.kernel_timers import kernel_traffic

    profiles = []
    for profiled in _PROFILED:
        name = profiled.caller.compiled_sdfg.sdfg.name
        times = summarize_events(_end_and_read(profiled), name)
        traffic = kernel_traffic(dace.SDFG.from_file(str(profiled.folder / "program.sdfgz")))
        profiles.append({"program": profiled.label, "times": times, "traffic": traffic, "sources": profiled.sources})
    _PROFILED.clear()
    return profiles


def combine(profiles_by_rank: list[list[dict[str, Any]]], bandwidth: float) -> dict[str, Any]:
    """Per program: each kernel and each stencil with its median time over ranks, bytes and bandwidth."""
    combined: dict[str, Any] = {}
    by_program: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for profiles in profiles_by_rank:
        for profile in profiles:
            by_program[profile["program"]].append(profile)
    for label, profiles in by_program.items():
        traffic, sources = profiles[0]["traffic"], profiles[0]["sources"]
        kernels = {}
        for kernel, info in traffic.items():
            times = [p["times"]["kernels_s"].get(kernel, 0.0) for p in profiles]
            kernels[kernel] = _figures(info["stencil"], statistics.median(times), info["bytes"], bandwidth)
            kernels[kernel]["maps"] = info["instances"]
        stencils: dict[str, dict[str, Any]] = {}
        for kernel in kernels.values():
            entry = stencils.setdefault(kernel["stencil"], {"seconds": 0.0, "bytes": 0, "maps": 0})
            entry["seconds"] += kernel["seconds"]
            entry["bytes"] += kernel["bytes"]
            entry["maps"] += kernel["maps"]
        combined[label] = {
            "ranks": len(profiles),
            "calls": [p["times"]["calls"] for p in profiles],
            "program_s": statistics.median(p["times"]["program_s"] for p in profiles),
            "callbacks_s": statistics.median(p["times"]["callbacks_s"] for p in profiles),
            "bandwidth_bytes_per_s": bandwidth,
            "stencils": {
                name: _figures(name, e["seconds"], e["bytes"], bandwidth) | {"maps": e["maps"],
                                                                          "source": _source(name, sources)}
                for name, e in sorted(stencils.items(), key=lambda item: -item[1]["seconds"])
            },
            "kernels": dict(sorted(kernels.items(), key=lambda item: -item[1]["seconds"])),
        }
    return combined


def _source(stencil: str, sources: dict[str, str]) -> str:
    """Where a kernel's stencils are defined: ``file:line``, one per stencil of a fused kernel."""
    return " ".join(sources.get(name, "?") for name in stencil.split(JOIN))


def _figures(stencil: str, seconds: float, moved: int, bandwidth: float) -> dict[str, Any]:
    rate = moved / seconds if seconds > 0 else 0.0
    return {"stencil": stencil, "seconds": seconds, "bytes": moved, "bytes_per_s": rate,
            "fraction_of_bandwidth": rate / bandwidth if bandwidth else 0.0}


def format_profile(combined: dict[str, Any]) -> str:
    """The profile as a table per program, slowest stencil first."""
    if not combined:
        return "no profiled program was loaded (ORCHESTRA_PROFILE=kernels)"
    lines = []
    for label, entry in combined.items():
        kernels = sum(s["seconds"] for s in entry["stencils"].values())
        lines.append(
            f"{label}: {entry['ranks']} rank(s), {min(entry['calls'])} calls; per call (median over ranks): "
            f"program {entry['program_s'] * 1e3:.3f} ms, kernels {kernels * 1e3:.3f} ms, callbacks "
            f"{entry['callbacks_s'] * 1e3:.3f} ms; bandwidth measured {entry['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s"
        )
        lines.append(f"  {'stencil':<28}{'source':<26}{'maps':>6}{'ms/call':>10}{'MB/call':>10}{'GB/s':>8}{'of bw':>7}")
        for name, s in entry["stencils"].items():
            if len(name) > 27 or len(s["source"]) > 25:  # a fused kernel: its stencils and sources on lines of their own
                lines.append(f"  {name}")
                lines.append(f"    {s['source']}")
                name, source = "", ""
            else:
                source = s["source"]
            lines.append(
                f"  {name:<28}{source:<26}{s['maps']:>6}{s['seconds'] * 1e3:>10.3f}"
                f"{s['bytes'] / 1e6:>10.3f}{s['bytes_per_s'] / 1e9:>8.2f}{s['fraction_of_bandwidth']:>7.0%}"
            )
    return "\n".join(lines)


def kernel_report(communicator: Any = None, path: Optional[Path] = None) -> Optional[dict[str, Any]]:
    """End every profiled program of this process and report (collective over ``communicator``).

    Returns the combined profile on rank 0 (None elsewhere), logs the table
    there and writes it as JSON to ``path`` if given. The profiled programs
    cannot be called afterwards: call this at the end of a run. Without this
    call, the table of each process is printed when it exits (rank 0's under
    MPI; :envvar:`ORCHESTRA_PROFILE_JSON` names a file for its JSON).
    """
    if communicator is None:
        gathered: Optional[list] = [_local_profiles()]
    else:
        gathered = communicator.gather_results(_local_profiles)
    if gathered is None:  # not rank 0
        return None
    combined = combine(gathered, measured_bandwidth())
    log.info("orchestra kernel profile (ORCHESTRA_PROFILE=kernels):\n%s", format_profile(combined))
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(combined, indent=1))
    return combined


#: Where the profile printed at exit is also written as JSON (nothing is written unless it is set).
PROFILE_JSON_VARIABLE = "ORCHESTRA_PROFILE_JSON"


def _report_at_exit() -> None:
    """``ORCHESTRA_PROFILE=kernels`` in any script: the table at exit, no file unless asked.

    A profiled library writes its events when it ends; ended here, they go to
    a temporary folder (never ``report-*.json`` in the working directory),
    and the table of this process is printed (on rank 0 under MPI: the other
    ranks end theirs quietly; :func:`kernel_report` gathers all ranks).
    """
    if not _PROFILED:
        return
    try:
        profiles = _local_profiles()
        if world_rank() != 0:
            return
        combined = combine([profiles], measured_bandwidth())
        log.info("orchestra kernel profile of this process (ORCHESTRA_PROFILE=kernels; orchestra.kernel_report "
                 "gathers every rank):\n%s", format_profile(combined))
        target = os.environ.get(PROFILE_JSON_VARIABLE)
        if target:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_text(json.dumps(combined, indent=1))
    except Exception as error:  # at exit: say why there is no table, never a traceback
        log.warning("orchestra kernel profile: no report at exit (%s: %s)", type(error).__name__, error)


atexit.register(_report_at_exit)
