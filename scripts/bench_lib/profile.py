"""Kernel profile of the orchestrated step from DaCe's timer instrumentation.

The optimized SDFG of the loaded build (``program.sdfgz`` in its cache
entry) is copied with ``InstrumentationType.Timer`` on every outermost map
(one per stencil call or vertical-sweep level), on every state that only
calls back into Python (halo updates, the ``min_area`` getter) and on the
whole program; it is compiled into a scratch folder and called through a
:class:`~orchestra.calls.fast_path.FastCaller` with the model's own arguments.
Times are per step, summed per stencil (a fused kernel under all its stencils, ``a+b``).
"""

from __future__ import annotations

import collections
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_lib.dycore import StateSnapshot, build_folder, orchestrated_program


def instrument(sdfg: Any) -> dict[str, int]:
    """Put timers on ``sdfg`` (in place): the product's pass, see :mod:`orchestra.passes.kernel_timers`."""
    from orchestra.passes.kernel_timers import add_kernel_timers

    counts = add_kernel_timers(sdfg)
    return {"maps": counts["kernels"], "callback_states": counts["callback_states"]}


def profile_orchestrated(model: Any, steps: int, snapshot: StateSnapshot) -> dict[str, Any]:
    """Compile an instrumented copy of the model's orchestrated step, run ``steps`` steps, summarize."""
    import dace

    from orchestra.calls.fast_path import FastCaller
    from orchestra.pipeline.stages import REPORT_FOLDER_VARIABLE, OptimizedProgram, compile_program, load
    from orchestra.toolchain import dace_settings

    program = orchestrated_program(model)
    sdfg = dace.SDFG.from_file(str(build_folder(program) / "program.sdfgz"))
    counts = instrument(sdfg)
    from orchestra.passes.cpu import DEFAULT_CPU_PASSES

    passes = program.config.cpu_passes if program.config.cpu_passes is not None else DEFAULT_CPU_PASSES
    simd = "simd_innermost_loops" in passes  # as the build compiled its code
    with tempfile.TemporaryDirectory(prefix="orchestra_profile_") as scratch:
        folder = Path(scratch)
        start = time.perf_counter()
        with dace_settings(), dace.config.temporary_config():
            dace.Config.set("instrumentation", "report_each_invocation", value=False)
            compile_program(OptimizedProgram(sdfg, {}, 0.0, simd), folder)
        compile_seconds = time.perf_counter() - start
        loaded = load(folder)
        caller = FastCaller(program.dace_program(), loaded.compiled_sdfg)
        caller((), {})  # marshal once, warm up
        snapshot.restore()
        start = time.perf_counter()
        for _ in range(steps):
            caller((), {})
        wall = (time.perf_counter() - start) / steps
        # the report goes where ORCHESTRA_KERNEL_REPORT_DIR says when the library saves it (at finalize)
        (folder / "perf").mkdir(exist_ok=True)
        os.environ[REPORT_FOLDER_VARIABLE] = str(folder / "perf")
        loaded.compiled_sdfg.finalize()  # writes the report
        reports = sorted((folder / "perf").glob("report-*.json"))
        if not reports:
            raise RuntimeError(f"the instrumented program wrote no report into {folder / 'perf'}")
        events = json.loads(reports[-1].read_text())["traceEvents"]
    snapshot.restore()
    from orchestra.passes.kernel_timers import kernel_traffic

    traffic = kernel_traffic(sdfg)
    summary = summarize(events, steps + 1, sdfg.name, {label: kernel["stencil"] for label, kernel in traffic.items()})
    moved: dict[str, int] = collections.defaultdict(int)
    for kernel in traffic.values():
        moved[kernel["stencil"]] += kernel["bytes"]
    summary["per_stencil_bytes"] = dict(moved)  # what each kernel (fused: all its stencils) moves per step
    from bench_lib.flops import count_flops

    operations: dict[str, int] = collections.defaultdict(int)
    for label, count in count_flops(sdfg).per_kernel.items():
        operations[traffic[label]["stencil"] if label in traffic else label.split("__")[0]] += count
    summary["per_stencil_flops"] = dict(operations)  # floating-point operations per step, per kernel
    # The same callbacks called from Python: the difference is the cost of calling back from C.
    summary["python_halo_update_s"] = _seconds_per_call(model.dycore.stage_1.halo.update)
    summary["python_min_area_s"] = _seconds_per_call(model.grid_info.min_area)
    from orchestra.passes.fusion.tiling import describe_blocking
    from orchestra.passes.fusion.vertical import describe_fusion

    optimized = dace.SDFG.from_file(str(build_folder(program) / "program.sdfgz"))
    return summary | {
        "fusion": describe_fusion(optimized) | {"blocking": describe_blocking(optimized)},
        "instrumented": counts, "compile_s": compile_seconds, "instrumented_step_s": wall, "steps": steps + 1,
    }


def _seconds_per_call(call: Any, calls: int = 200) -> float:
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        samples.append((time.perf_counter() - start) / calls)
    return sorted(samples)[2]


def summarize(events: list[dict], calls: int, program_name: str, stencils: dict[str, str]) -> dict[str, Any]:
    """Seconds per step: whole program, per stencil, callbacks.

    ``stencils``: the stencils of each kernel by map label (``a+b`` for a fused kernel,
    :func:`orchestra.passes.kernel_timers.kernel_traffic`); other maps go by their label's prefix.
    """
    per_label: dict[str, float] = collections.defaultdict(float)
    per_stencil: dict[str, float] = collections.defaultdict(float)
    maps_per_stencil: dict[str, int] = collections.defaultdict(int)
    total = callbacks = 0.0
    callback_calls = 0
    for event in events:
        name, seconds = event["name"], event.get("dur", 0) * 1e-6 / calls
        per_label[name] += seconds
        if name.startswith("SDFG ") or name == program_name:
            total += seconds
        elif name.startswith("State "):
            callbacks += seconds
            callback_calls += 1
        else:
            label = name.replace("Map ", "")
            stencil = stencils.get(label) or label.split("__")[0]
            per_stencil[stencil] += seconds
            maps_per_stencil[stencil] += 1
    kernels = sum(per_stencil.values())
    return {
        "program_s": total,
        "kernels_s": kernels,
        "callbacks_s": callbacks,
        "callbacks_per_step": callback_calls // calls,
        "rest_s": total - kernels - callbacks,
        "per_stencil_s": dict(sorted(per_stencil.items(), key=lambda kv: -kv[1])),
        "map_executions_per_step": {k: v // calls for k, v in maps_per_stencil.items()},
    }
