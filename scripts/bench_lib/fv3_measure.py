"""One phase of ``scripts/bench_fv3_build.py``, run in a fresh process: import the model, call it once, time it.

:func:`run_phase` imports the generated module from a folder, builds the
model (``AcousticDynamics``) on a random state, calls it once (the first
call: a build, or a load from the cache, or, in ``Python`` mode, stencil by
stencil) and once more (a warm call), saves the state after the first call
for the bitwise checks, and returns what it measured:

* the stage times orchestra's log lines give (``parsed in``, ``optimized
  in``, ``compiled in``, ``loaded from cache ... in``) and the first-call line;
* the stage times of the manifests of the builds made (``stage_seconds``);
* how many of the compiled C++ files were reused from earlier builds;
* the time spent making the stencils' SDFGs inside the parse
  (``FrozenStencil.__sdfg__``: gt4py's lowering, or reading it from gt4py's
  cache), and the parse's tally of stencils found lowered and lowered here.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

MODULE = "fv3_bench_model"
TIMESTEP = 60.0

_STAGE = re.compile(r": (parsed|optimized|compiled) in ([0-9.]+) s")
_LOADED = re.compile(r"loaded from cache .* in ([0-9.]+) s")
_TALLY = re.compile(r"stencils: (\d+) of (\d+) found lowered, (\d+) lowered here")
_REUSED = re.compile(r"(\d+) of (\d+) file\(s\) reused")


class _Recorder(logging.Handler):
    """Collects orchestra's stage lines of one process."""

    def __init__(self) -> None:
        """Nothing collected yet."""
        super().__init__()
        self.stages = {"parsed": 0.0, "optimized": 0.0, "compiled": 0.0}
        self.loaded = 0.0
        self.builds = 0
        self.tally = [0, 0, 0]
        self.files = [0, 0]  # compiled files reused from earlier builds, compiled files
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for stage, seconds in _STAGE.findall(message):
            self.stages[stage] += float(seconds)
            self.builds += stage == "parsed"
        for seconds in _LOADED.findall(message):
            self.loaded += float(seconds)
        for found, total, lowered in _TALLY.findall(message):
            self.tally = [a + int(b) for a, b in zip(self.tally, (found, total, lowered))]
        for reused, files in _REUSED.findall(message):
            self.files = [self.files[0] + int(reused), self.files[1] + int(files)]
        if any(word in message for word in ("parsed in", "first call", "built in")):
            self.lines.append(message)


@contextlib.contextmanager
def timed_stencil_sdfgs() -> Iterator[dict[str, float]]:
    """Time spent in ``FrozenStencil.__sdfg__`` (gt4py's SDFG of each stencil, lowered or read) while inside."""
    from orchestra.stencils.frozen import FrozenStencil

    spent = {"seconds": 0.0, "calls": 0}
    original = FrozenStencil.__sdfg__

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent["seconds"] += time.perf_counter() - start
            spent["calls"] += 1

    FrozenStencil.__sdfg__ = timed
    try:
        yield spent
    finally:
        FrozenStencil.__sdfg__ = original


def _manifest_stamps(cache: Path) -> dict[Path, int]:
    """Every manifest in ``cache`` with its modification time (ns): what a phase found before it ran."""
    return {path: path.stat().st_mtime_ns for path in cache.rglob("manifest.json")} if cache.is_dir() else {}


def _manifests_written(cache: Path, before: dict[Path, int]) -> list[dict]:
    """The manifests published in ``cache`` since ``before`` was taken (new files or rewritten ones).

    Compared with the snapshot, not with the clock: a build published less
    than a second before the next phase starts is not counted twice.
    """
    import json

    return [json.loads(path.read_text()) for path, stamp in sorted(_manifest_stamps(cache).items())
            if before.get(path) != stamp]


def _stage_seconds(manifests: list[dict]) -> dict[str, float]:
    """The manifests' ``stage_seconds``, summed per stage."""
    total: dict[str, float] = {}
    for manifest in manifests:
        for stage, seconds in manifest.get("stage_seconds", {}).items():
            total[stage] = total.get(stage, 0.0) + seconds
    return total


def run_phase(folder: Path, cache: Path, mode: str, outputs: Path) -> dict[str, Any]:
    """Import the model in ``folder``, call it once in ``mode`` (``BuildAndRun`` or ``Python``), measure."""
    recorder = _Recorder()
    logger = logging.getLogger("orchestra")
    logger.addHandler(recorder)
    logger.setLevel(logging.INFO)
    manifests_before = _manifest_stamps(cache)
    sys.path.insert(0, str(folder))
    start = time.perf_counter()
    model_module = importlib.import_module(MODULE)
    from orchestra import DaceConfig

    config = DaceConfig(backend="dace:cpu", orchestration=mode, cache_root=cache)
    state, grid = model_module.State.random(0), model_module.Grid(1)
    model = model_module.AcousticDynamics(config, grid, state)
    set_up = time.perf_counter() - start
    with timed_stencil_sdfgs() as sdfgs:
        start = time.perf_counter()
        model(state, TIMESTEP)
        first_call = time.perf_counter() - start
    np.savez(outputs, **{name: getattr(state, name) for name in model_module.STATE_FIELDS})
    start = time.perf_counter()
    model(state, TIMESTEP)
    second_call = time.perf_counter() - start
    manifests = _manifests_written(cache, manifests_before) if mode != "Python" else []
    found, total, lowered = recorder.tally
    return {
        "mode": mode, "set_up_s": set_up, "first_call_s": first_call, "second_call_s": second_call,
        "lowering_s": sdfgs["seconds"], "stencil_sdfgs": sdfgs["calls"],
        "stencils_found_lowered": found, "stencils_parsed": total, "stencils_lowered_here": lowered,
        "files_reused": recorder.files[0], "files_compiled": recorder.files[1],
        "parse_s": recorder.stages["parsed"], "optimize_s": recorder.stages["optimized"],
        "compile_s": recorder.stages["compiled"], "load_s": recorder.loaded, "builds": recorder.builds,
        "manifest_stage_seconds": _stage_seconds(manifests), "manifests": len(manifests),
        "finite": bool(all(np.isfinite(getattr(state, n)).all() for n in model_module.STATE_FIELDS)),
        "log": recorder.lines[-6:], "orchestra_path": str(Path(sys.modules["orchestra"].__file__).parent),
    }


def bitwise_equal(first: Path, second: Path) -> dict[str, Any]:
    """Whether two saved states hold the same bytes, field by field (and which fields differ, by how much)."""
    with np.load(first) as a, np.load(second) as b:
        differing = {name: float(np.nanmax(np.abs(a[name] - b[name]))) for name in a.files
                     if a[name].tobytes() != b[name].tobytes()}
        return {"equal": not differing and sorted(a.files) == sorted(b.files), "fields": len(a.files),
                "differing": differing}
