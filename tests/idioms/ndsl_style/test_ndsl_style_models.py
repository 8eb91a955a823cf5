"""Multi-component models written the way NDSL models are, orchestrated unmodified, bitwise equal to Python mode.

Each model is built once per mode on the NDSL-like layer in
``infrastructure.py`` and called twice (the second call takes the fast
path); every quantity it can change, and what it returns, must be equal bit
for bit, and its Python callbacks must have run as often.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import numpy as np
import pytest

from orchestra import DaceConfig
from tests.idioms.ndsl_style.acoustics import AcousticLoop, Checkpointer, DycoreState
from tests.idioms.ndsl_style.infrastructure import GridIndexing, Quantity, QuantityFactory, StencilFactory
from tests.idioms.ndsl_style.tracer_advection import TracerAdvection
from tests.idioms.ndsl_style.transport import FiniteVolumeTransport
from tests.idioms.ndsl_style.winds import DGridToCGrid, WindState

GRID = GridIndexing(nx=6, ny=5, nz=3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ndsl_style_cache")


def _factories(mode: str, cache: Path) -> tuple[StencilFactory, QuantityFactory]:
    config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)
    return StencilFactory(config, GRID), QuantityFactory(config, GRID)


def _grid_data(quantities: QuantityFactory, grid: GridIndexing = GRID) -> SimpleNamespace:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(99)
    area = rng.uniform(0.8, 1.2, grid.shape[:2])
    return SimpleNamespace(area=gt_storage.from_array(area, backend=quantities.backend),
                           rarea=gt_storage.from_array(1.0 / area, backend=quantities.backend))


def tracer_case(stencils: StencilFactory, quantities: QuantityFactory, grid: GridIndexing = GRID) -> tuple:
    """(tracer advection, its tracers, the other arguments of a call): the case of the test, also benchmarked
    (``scripts/bench_ndsl_style.py``)."""
    grid_data = _grid_data(quantities, grid)
    tracers = {"qvapor": quantities.random(11, 0.0, 1.0), "qliquid": quantities.random(12, 0.0, 1.0)}
    transport = FiniteVolumeTransport(stencils, quantities, grid_data, nord=1, damp_c=0.06)
    advection = TracerAdvection(stencils, quantities, transport, grid_data, tracers)
    dp1 = quantities.random(13, 1.0, 2.0)
    mfx, mfy = quantities.random(14, -0.1, 0.1), quantities.random(15, -0.1, 0.1)
    cx, cy = quantities.random(16, -1.3, 1.3), quantities.random(17, -0.6, 0.6)
    return advection, tracers, (dp1, mfx, mfy, cx, cy)


def _bytes(value) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(getattr(value, "data", value))).copy().view(np.uint8)


def _assert_equal(expected: list, got: list, what: str) -> None:
    assert len(expected) == len(got)
    for index, (want, have) in enumerate(zip(expected, got)):
        assert np.array_equal(want, have), f"{what}: value {index} differs from Python mode"


def _transport_run(mode: str, cache: Path, damp_c: float) -> list:
    stencils, quantities = _factories(mode, cache)
    transport = FiniteVolumeTransport(stencils, quantities, _grid_data(quantities), nord=1, damp_c=damp_c)
    q, mass = quantities.random(1), quantities.random(2, 0.5, 1.5)
    crx, cry = quantities.random(3, -0.4, 0.4), quantities.random(4, -0.4, 0.4)
    xaf, yaf = quantities.random(5), quantities.random(6)
    mfx, mfy = quantities.random(7), quantities.random(8)
    fx, fy = quantities.zeros(), quantities.zeros()
    results = []
    for _ in range(2):
        if damp_c > 0.0:
            transport(q, crx, cry, xaf, yaf, fx, fy, x_mass_flux=mfx, y_mass_flux=mfy, mass=mass)
        else:
            transport(q, crx, cry, xaf, yaf, fx, fy)
        results += [_bytes(fx), _bytes(fy)]
    return results


@pytest.mark.parametrize("damp_c", [0.0, 0.06], ids=["without_damping", "with_damping"])
def test_finite_volume_transport(damp_c, cache):
    expected = _transport_run("Python", cache, damp_c)
    _assert_equal(expected, _transport_run("BuildAndRun", cache, damp_c), f"transport (damp_c={damp_c})")


def _tracer_run(mode: str, cache: Path) -> tuple[list, int]:
    advection, tracers, arguments = tracer_case(*_factories(mode, cache))
    results = []
    for _ in range(2):
        advection(tracers, *arguments)
        results += [_bytes(q) for q in tracers.values()] + [_bytes(a) for a in arguments]
    return results, advection._tracers_halo_updater.updates


def test_tracer_advection(cache):
    expected, updates = _tracer_run("Python", cache)
    got, orchestrated_updates = _tracer_run("BuildAndRun", cache)
    _assert_equal(expected, got, "tracer advection")
    assert updates == orchestrated_updates >= 3  # two sub-steps on the first call: a run-time loop count


def _winds_run(mode: str, cache: Path) -> list:
    import gt4py.storage as gt_storage

    stencils, quantities = _factories(mode, cache)
    weights = np.random.default_rng(21).uniform(0.5, 1.5, GRID.shape[:2])
    edge_w = Quantity(gt_storage.from_array(weights, backend=quantities.backend), ("x", "y"), (0, 0), GRID.shape[:2])
    component = DGridToCGrid(stencils, quantities, edge_w)
    state = WindState(u=quantities.random(22), v=quantities.random(23))
    results = []
    for seed in (24, 25):
        uc, vc = component(state, quantities.random(seed))
        results += [_bytes(uc), _bytes(vc), _bytes(state.u), _bytes(state.v)]
    return results


def test_quantity_containers_with_a_per_field_origin(cache):
    _assert_equal(_winds_run("Python", cache), _winds_run("BuildAndRun", cache), "D- to C-grid winds")


def _acoustic_run(mode: str, cache: Path, checkpointer: Optional[Checkpointer]) -> tuple[list, list]:
    stencils, quantities = _factories(mode, cache)
    state = DycoreState.random(quantities, 31)
    loop = AcousticLoop(stencils, quantities, state, n_split=3, checkpointer=checkpointer)
    results = []
    for timestep in (0.3, 0.2):
        loop(state, timestep)
        results += [_bytes(getattr(state, field.name)) for field in dataclasses.fields(state)]
    updaters = loop._halo_updaters
    counts = [updaters.delp__pt.updates, updaters.u__v.updates, updaters.w.updates, updaters.heat.updates,
              updaters.interface_u__v.interfaces, updaters.delp__pt.pending]
    return results, counts


@pytest.mark.parametrize("checkpointing", [False, True], ids=["no_checkpointer", "checkpointer"])
def test_acoustic_loop_with_shared_compiletime_names_and_halo_updater_holders(checkpointing, cache, caplog):
    """dyn_core's idioms: one compile-time list for methods of different signatures, updaters on a
    dataclass and on dicts with start/wait/update/interface, dace_nounroll, float getters, returned quantities."""
    reference = Checkpointer() if checkpointing else None
    expected, expected_counts = _acoustic_run("Python", cache, reference)
    orchestrated = Checkpointer() if checkpointing else None
    with caplog.at_level(logging.INFO, logger="orchestra"):
        got, counts = _acoustic_run("BuildAndRun", cache, orchestrated)
    _assert_equal(expected, got, "acoustic loop")
    assert all(np.isfinite(value.view(np.float64)).all() for value in expected)
    assert counts == expected_counts == [2 * 4, 2 * 3, 2 * 3, 2, 2, 0]
    if checkpointing:
        assert orchestrated.records == reference.records and len(reference.records) == 2 * 3 * 3
        assert [tag for tag, _ in reference.records[:3]] == ["C_SW-In", "C_SW-Out", "D_SW-In"]
    ignored = [r.getMessage() for r in caplog.records if "are not parameters of it" in r.getMessage()]
    # the two methods without ``tag`` say so once each, at info level; _checkpoint_csw has it
    assert sorted(line.split(":")[0] for line in ignored) == ["AcousticLoop.__call__", "AcousticLoop._checkpoint_dsw_in"]
    assert all("dace_compiletime_args ['tag'] are not parameters of it" in line for line in ignored)


@pytest.mark.mpi
def test_acoustic_loop_on_the_cube_through_orchestras_halo_updater_and_interface_synchronization(tmp_path):
    """6 ranks: staggered D-grid winds exchanged by HaloUpdater(domain=...), the last sub-step's
    interface() by Communicator.synchronize_vector_interfaces; orchestrated equal to Python mode."""
    from tests.mpi_launcher import run_mpi

    worker = Path(__file__).parent / "mpi_acoustics_worker.py"
    result = run_mpi(6, worker, str(tmp_path / "cache"), timeout=900)
    assert sum(line.startswith("OK acoustics rank=") for line in result.stdout.splitlines()) == 6, result.stdout[-3000:]
