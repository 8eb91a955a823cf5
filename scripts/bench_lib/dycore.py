"""One rank's dynamical core set up for timing, and the timing loops (run under mpirun).

Ranks: 6 * layout**2 ranks run the cubed sphere with real halo exchanges.
A 1-rank job runs one cubed-sphere tile (``TilePartitioner((1, 1))``): the
same subdomain, stencils and generated code as a rank of the 6-rank layout-1
job (every such rank touches all four tile edges), but the halo update has
no neighbours and exchanges nothing. Its halos are filled once with the test
case's analytic initial state (the halo geometry is the neighbour tiles'
actual geometry) and then stay fixed.

Every timed repeat restores the initial state first (outside the timing), so
all variants and repeats integrate the same steps.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any, Callable, Optional

import numpy as np

from bench_lib.flops import count_build_flops

#: Benchmark variants: (gt4py backend, orchestrated).
VARIANTS: dict[str, tuple[str, bool]] = {
    "numpy": ("numpy", False),
    "gt_cpu_kfirst": ("gt:cpu_kfirst", False),
    "gt_cpu_ifirst": ("gt:cpu_ifirst", False),
    "dace_cpu": ("dace:cpu", False),
    "orchestrated": ("dace:cpu", True),
    # orchestrated without the CPU passes of the optimize stage (before/after comparison)
    "orchestrated_nopasses": ("dace:cpu", True),
    # orchestrated without declaring the maps' innermost loops omp simd (its before/after comparison)
    "orchestrated_nosimd": ("dace:cpu", True),
    # orchestrated with maps split at regions along the innermost index only (the outer split's comparison)
    "orchestrated_innersplit": ("dace:cpu", True),
    # orchestrated without fusion (the default before fusion was: fusion's before/after comparison)
    "orchestrated_unfused": ("dace:cpu", True),
    # the default passes plus row blocking of the fused maps (tile_fused_maps, opt-in)
    "orchestrated_fused": ("dace:cpu", True),
    # vertical merging without scratch planes (the planes' share)
    "orchestrated_merged": ("dace:cpu", True),
    # orchestrated with the dycore's intermediates plain arrays, not declared scratch (scratch's comparison)
    "orchestrated_noscratch": ("dace:cpu", True),
    # orchestrated with debug checks injected (``--debug-checks``; a separate build)
    "orchestrated_debug": ("dace:cpu", True),
    # orchestrated with 256-bit or 512-bit vectors preferred (ORCHESTRA_VECTOR_WIDTH; against the compiler's choice)
    "orchestrated_ymm": ("dace:cpu", True),
    "orchestrated_zmm": ("dace:cpu", True),
}

#: Variants built with another ``ORCHESTRA_VECTOR_WIDTH`` than the environment's.
VECTOR_WIDTHS = {"orchestrated_ymm": "256", "orchestrated_zmm": "512"}
#: The environment's, for every other variant built in the same process.
_VECTOR_WIDTH = os.environ.get("ORCHESTRA_VECTOR_WIDTH")

#: Variants that are 1-rank comparisons of orchestrated builds (not run on 6 ranks).
ONE_RANK_VARIANTS = ("orchestrated_nopasses", "orchestrated_nosimd", "orchestrated_innersplit", "orchestrated_unfused",
                     "orchestrated_fused", "orchestrated_merged", "orchestrated_noscratch", "orchestrated_debug",
                     "orchestrated_ymm", "orchestrated_zmm")


def cpu_passes(variant: str) -> Optional[tuple[str, ...]]:
    """The CPU passes a variant's build runs (None: orchestra's default list)."""
    from orchestra.passes.cpu import DEFAULT_CPU_PASSES, UNFUSED_CPU_PASSES

    if variant == "orchestrated_nopasses":
        return ()
    if variant == "orchestrated_nosimd":
        return tuple(name for name in DEFAULT_CPU_PASSES if name not in ("simd_innermost_loops", "split_region_maps_outer"))
    if variant == "orchestrated_innersplit":
        return tuple(name for name in DEFAULT_CPU_PASSES if name != "split_region_maps_outer")
    if variant == "orchestrated_unfused":
        return UNFUSED_CPU_PASSES
    if variant == "orchestrated_fused":
        return DEFAULT_CPU_PASSES + ("tile_fused_maps",)
    if variant == "orchestrated_merged":
        return ("merge_vertical_maps",) + UNFUSED_CPU_PASSES
    return None

#: Williamson case 2 (steady geostrophic flow): momentum, hyperdiffusion, all code paths.
TEST_CASE = 2
DT_SECONDS = 300.0


def communicator() -> Any:
    """The job's communicator: one tile on 1 rank, the cubed sphere on 6 * layout**2 ranks."""
    from mpi4py import MPI

    from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner

    size = MPI.COMM_WORLD.Get_size()
    if size == 1:
        return Communicator(MPI.COMM_WORLD, TilePartitioner((1, 1)))
    layout = math.isqrt(size // 6)
    if 6 * layout * layout != size:
        raise SystemExit(f"run the benchmark worker on 1 or 6 * layout**2 ranks, not {size}")
    return Communicator(MPI.COMM_WORLD, CubedSpherePartitioner(TilePartitioner((layout, layout))))


def build_model(
    variant: str, n: int, nz: int, comm: Any, cache_root: Optional[str], debug_checks: str = ""
) -> Any:
    """A :class:`driver.model.Model` with ``n x n x nz`` cells per rank for ``variant``.

    ``debug_checks`` (``ORCHESTRA_DEBUG`` syntax) applies to ``orchestrated_debug`` only;
    every other variant is built without checks, whatever the environment says.
    ``variant@BYTES`` builds ``variant`` with ``fusion_block_bytes=BYTES`` (row
    blocking's budget, for tuning it).
    """
    from orchestra import DaceConfig

    from driver.config import config_from_dict
    from driver.model import Model

    variant, _, block_bytes = variant.partition("@")
    backend, orchestrated = VARIANTS[variant]
    width = VECTOR_WIDTHS.get(variant, _VECTOR_WIDTH)  # read when the build is keyed and compiled
    if width is None:
        os.environ.pop("ORCHESTRA_VECTOR_WIDTH", None)
    else:
        os.environ["ORCHESTRA_VECTOR_WIDTH"] = width
    layout = comm.partitioner.layout[0]
    config = config_from_dict(
        {
            "resolution": n * layout, "layout": layout, "dt": DT_SECONDS, "days": DT_SECONDS / 86400,
            "test_case": TEST_CASE, "backend": backend, "nz": nz, "output": {"plot": False},
            "scratch_intermediates": not variant.endswith("_noscratch"),
        },
        source="benchmark",
        name=f"bench_{variant}_{n}",
    )
    mode = "BuildAndRun" if orchestrated else "Python"
    dace_config = DaceConfig(
        comm, backend=backend, orchestration=mode, cache_root=cache_root, exit_after_build=False,
        debug_checks=debug_checks if variant == "orchestrated_debug" else "", cpu_passes=cpu_passes(variant),
        fusion_block_bytes=int(block_bytes) if block_bytes else None,
    )
    model = Model(config, comm, dace_config)
    if comm.size == 1:
        fill_halos_analytically(model)
    return model


def fill_halos_analytically(model: Any) -> None:
    """Set ``h, u, v`` on every cell, halos included, from the test case (single-tile runs)."""
    from driver.geometry import dot

    geometry, case, state = model.geometry, model.test_case, model.state
    p = geometry.centres
    nz = state.h.shape[2]
    state.h[...] = ((case.height(p) - case.surface_height(p)) / nz)[..., None]
    wind = case.wind(p)
    state.u[...] = dot(wind, geometry.basis_i)[..., None]
    state.v[...] = dot(wind, geometry.basis_j)[..., None]


class StateSnapshot:
    """The prognostic fields at one moment, restorable in place (arrays keep their identity)."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.saved = {name: np.array(getattr(state, name), copy=True) for name in ("h", "u", "v")}

    def restore(self) -> None:
        for name, values in self.saved.items():
            np.copyto(np.asarray(getattr(self.state, name)), values)


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds per call over repeats: median, 10th and 90th percentile, min and max (slowest rank).

    ``cpu_median`` is the median CPU time of the process per call (slowest
    rank): on a shared machine it leaves out the time the process waited for
    a core.
    """

    median: float
    p10: float
    p90: float
    minimum: float
    maximum: float
    repeats: int
    cpu_median: float

    @classmethod
    def of(cls, samples: list[float], cpu_samples: list[float]) -> "Timing":
        values = np.array(samples)
        return cls(
            float(np.median(values)), float(np.percentile(values, 10)), float(np.percentile(values, 90)),
            float(values.min()), float(values.max()), len(samples), float(np.median(cpu_samples)),
        )


def time_calls(
    comm: Any, call: Callable[[], Any], calls: int, repeats: int, before: Optional[Callable[[], None]] = None
) -> Timing:
    """Time ``calls`` calls per repeat after a barrier; per-call seconds of the slowest rank."""
    samples, cpu = [], []
    for _ in range(repeats):
        if before is not None:
            before()
        comm.barrier()
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(calls):
            call()
        samples.append((time.perf_counter() - start) / calls)
        cpu.append((time.process_time() - cpu_start) / calls)
    slowest = np.max(np.array(comm.allgather(samples)), axis=0)
    slowest_cpu = np.max(np.array(comm.allgather(cpu)), axis=0)
    return Timing.of(list(slowest), list(slowest_cpu))


class HaloClock:
    """Accumulates the wall time this rank spends in halo updates (``start_fields`` + ``wait``).

    Installed as instance attributes on the model's halo updater, so both
    Python mode and orchestrated callbacks go through it.
    """

    def __init__(self, updater: Any) -> None:
        self.updater = updater
        self.seconds = 0.0
        self.calls = 0
        self._originals = {name: getattr(updater, name) for name in ("start_fields", "wait")}

    def _timed(self, function: Callable) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        return timed

    def __enter__(self) -> "HaloClock":
        for name, function in self._originals.items():
            setattr(self.updater, name, self._timed(function))
        return self

    def __exit__(self, *exc: Any) -> None:
        for name in self._originals:
            delattr(self.updater, name)


def orchestrated_program(model: Any) -> Any:
    """The dycore's OrchestratedProgram (after its first call)."""
    return model.dycore.__orchestra_programs__["__call__"]


def measure_size(variant: str, n: int, nz: int, comm: Any, args: Any) -> dict:
    """All figures of one variant at one per-rank size (collective)."""
    start = time.perf_counter()
    model = build_model(variant, n, nz, comm, args.cache_root, args.debug_checks)
    setup_seconds = time.perf_counter() - start
    snapshot = StateSnapshot(model.state)
    comm.barrier()
    start = time.perf_counter()
    model.dycore()  # builds (or loads) the orchestrated program; builds lazy dace stencils
    first_call = max(comm.allgather(time.perf_counter() - start))
    for _ in range(args.warmup):
        model.dycore()
    step = time_calls(comm, model.dycore, args.steps, args.repeats, before=snapshot.restore)
    row: dict[str, Any] = {
        "variant": variant,
        "ranks": comm.size,
        "n": n,
        "nz": nz,
        "setup_s": setup_seconds,
        "first_call_s": first_call,
        "step": dataclasses.asdict(step),
    }
    # Halo updates inside the step (a separate batch: the clock's own cost stays out of "step").
    snapshot.restore()
    with HaloClock(model.halo_updater) as clock:
        for _ in range(args.steps):
            model.dycore()
    row["halo_in_step_s"] = max(comm.allgather(clock.seconds / args.steps))
    row["halo_updates_per_step"] = clock.calls // (2 * args.steps)
    exchanger = model.dycore.stage_1.halo
    row["halo_update"] = dataclasses.asdict(time_calls(comm, exchanger.update, 20, args.repeats))
    if VARIANTS[variant][1]:
        row.update(orchestrated_figures(model, comm, args, snapshot))
    snapshot.restore()
    return row


def orchestrated_figures(model: Any, comm: Any, args: Any, snapshot: StateSnapshot) -> dict:
    """Raw compiled call, per-call overhead, build and load seconds, flops per step of the orchestrated dycore."""
    program = orchestrated_program(model)
    caller = program.fast_caller
    raw = time_calls(comm, caller.raw_call, args.steps, args.repeats, before=snapshot.restore)
    figures: dict[str, Any] = {
        "raw_call": dataclasses.asdict(raw),
        "built_here": program.built_here,
        "build_s": program.build_seconds if program.built_here else _manifest_build_seconds(program),
        "load_s": program.load_seconds,
        "marshal_count": caller.marshal_count,
    }
    if comm.rank == 0:  # one rank's subdomain; every rank runs the same program
        figures["flops"] = count_build_flops(build_folder(program)).as_dict()
    figures["overhead_s"] = _overhead(model, comm, args)
    figures["closure_read_s"] = time_calls(comm, lambda: caller._current_values((), {}), 20, args.repeats).median
    return figures


def _overhead(model: Any, comm: Any, args: Any) -> float:
    """Seconds per orchestrated call spent outside the library: the call with a no-op library.

    The loaded library's ``fast_call`` is shadowed by a function that does
    nothing, so timing ``model.dycore()`` measures exactly what orchestra's
    fast path adds to the raw compiled call (patched method, argument and
    closure reads, identity check), free of the kernels' run-to-run noise.
    """
    compiled = orchestrated_program(model).fast_caller._compiled
    compiled.fast_call = lambda *arguments: None
    try:
        return time_calls(comm, model.dycore, 200, args.repeats).median
    finally:
        del compiled.fast_call


def _manifest_build_seconds(program: Any) -> Optional[float]:
    """The build time recorded in the cache manifest of the library that was loaded."""
    import json
    from pathlib import Path

    manifest = build_folder(program) / "manifest.json"
    return json.loads(manifest.read_text()).get("build_seconds") if manifest.exists() else None


def build_folder(program: Any) -> "Path":
    """The cache entry (build folder) of a loaded orchestrated program."""
    from pathlib import Path

    return Path(program.fast_caller._compiled.filename).resolve().parent.parent
