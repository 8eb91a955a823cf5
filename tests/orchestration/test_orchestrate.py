"""Orchestrated programs give the same numbers as Python mode (real DaCe + gt4py builds)."""

from pathlib import Path

import numpy as np
import pytest

from orchestra import (
    DaceConfig,
    FrozenStencil,
    MissingBuildError,
    StaleArgumentsError,
    orchestrate_function,
)
from orchestra.examples.diffusion import DiffusionModel, apply_tendency, initial_state

BACKEND = "dace:cpu"
SHAPE = (12, 10, 3)


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("orchestra_cache")


def config(mode: str, cache_root: Path, **kwargs) -> DaceConfig:
    return DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=cache_root, **kwargs)


def run(model, shape=SHAPE, calls=2):
    q, total = initial_state(shape, BACKEND)
    for _ in range(calls):
        model(q, total)
    return np.asarray(q).copy(), np.asarray(total).copy()


@pytest.mark.parametrize("fix_boundaries", [True, False], ids=["regions", "no-regions"])
def test_orchestrated_equals_python_mode_bitwise(cache_root, fix_boundaries):
    """Sub-steps, compile-time branch, nested component, temporaries, callbacks, regions."""
    reference_model = DiffusionModel(config("Python", cache_root), SHAPE, fix_boundaries=fix_boundaries)
    orchestrated_model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE, fix_boundaries=fix_boundaries)
    q_ref, total_ref = run(reference_model)
    q, total = run(orchestrated_model)
    assert type(orchestrated_model).__orchestra_patched__
    assert np.array_equal(q, q_ref) and np.array_equal(total, total_ref)
    # the array-mutating callback ran once per sub-step in both modes
    assert orchestrated_model.halo.calls == reference_model.halo.calls == 2 * 3
    # the branch matters: boundary values are present only when the flag is on
    assert np.any(q[1, 1:-1, :] == 1.0) == fix_boundaries


def test_scalar_callback_value_is_used_at_run_time(cache_root):
    model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE)
    reference = DiffusionModel(config("Python", cache_root), SHAPE)
    model._coefficient = reference._coefficient = 0.05  # read through a callback: no rebuild
    q, _ = run(model)
    q_ref, _ = run(reference)
    assert np.array_equal(q, q_ref)
    assert model.__orchestra_programs__["__call__"].built_here is False  # reused the build


def test_array_reallocation_between_calls(cache_root):
    model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE)
    reference = DiffusionModel(config("Python", cache_root), SHAPE)
    q, total = initial_state(SHAPE, BACKEND)
    q_ref, total_ref = initial_state(SHAPE, BACKEND)
    model(q, total)
    reference(q_ref, total_ref)
    caller = model.__orchestra_programs__["__call__"].fast_caller
    assert caller.marshal_count == 1
    model(q, total)
    reference(q_ref, total_ref)
    assert caller.marshal_count == 1  # same arrays: no re-marshalling
    # new argument arrays and a new array behind `self` (the nested component's temporary)
    q2, total2 = initial_state(SHAPE, BACKEND)
    q2[...] = np.asarray(q)
    import gt4py.storage as gt_storage

    model.diffusion.lap = gt_storage.zeros(SHAPE, np.float64, backend=BACKEND)
    del q, total
    model(q2, total2)
    reference(q_ref, total_ref)
    assert (caller.marshal_count, caller.repoint_count) == (1, 1)  # same layouts: the new pointers written in
    assert np.array_equal(np.asarray(q2), np.asarray(q_ref))
    assert np.array_equal(np.asarray(total2), np.asarray(total_ref))
    assert np.array_equal(np.asarray(model.diffusion.lap), np.asarray(reference.diffusion.lap))


def test_closure_arrays_read_without_recompiling(cache_root):
    """The fast path's closure getters return exactly what DaCe's getters return, compiled once."""
    model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE)
    run(model, calls=1)
    program = model.__orchestra_programs__["__call__"]
    dace_getters = list(program.dace_program().closure_arg_mapping.values())
    fast_getters = program.fast_caller._closure_getters
    assert len(fast_getters) == len(dace_getters) > 0
    for fast, original in zip(fast_getters, dace_getters):
        assert fast is not original  # replaced: DaCe's getter re-copies globals and re-compiles per call
        assert fast() is original()
    model.diffusion.lap = np.zeros_like(model.diffusion.lap)  # a replaced array is seen at call time
    assert any(fast() is model.diffusion.lap for fast in fast_getters)


def test_resized_array_is_a_clear_error(cache_root):
    model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE)
    run(model, calls=1)
    bigger = (SHAPE[0] + 2, SHAPE[1], SHAPE[2])
    q, total = initial_state(bigger, BACKEND)
    with pytest.raises(StaleArgumentsError, match="argument 'q' has shape .*rebuild"):
        model(q, total)


def test_run_mode_without_build_fails_clearly_and_never_compiles(tmp_path):
    empty = tmp_path / "empty_cache"
    model = DiffusionModel(config("Run", empty), (9, 9, 2))
    q, total = initial_state((9, 9, 2), BACKEND)
    with pytest.raises(MissingBuildError) as error:
        model(q, total)
    message = str(error.value)
    assert str(empty) in message and "FV3_DACEMODE=Build" in message
    assert not list(empty.rglob("*.so")) and not list(empty.rglob("*.cpp"))


def test_build_mode_returns_or_exits(tmp_path):
    shape = (9, 8, 2)
    root = tmp_path / "cache"
    model = DiffusionModel(config("Build", root, exit_after_build=False), shape)
    q, total = initial_state(shape, BACKEND)
    before = np.asarray(q).copy()
    assert model(q, total) is None
    assert np.array_equal(np.asarray(q), before)  # Build mode does not run
    assert len(list(root.rglob("COMPLETE"))) == 1
    # the build is then usable in Run mode, with no compile
    runner = DiffusionModel(config("Run", root), shape)
    runner(q, total)
    assert not np.array_equal(np.asarray(q), before)
    assert runner.__orchestra_programs__["__call__"].built_here is False
    # and Build mode with the default exits cleanly
    exiting = DiffusionModel(config("Build", root), shape)
    with pytest.raises(SystemExit) as exit_info:
        exiting(q, total)
    assert exit_info.value.code == 0


def test_stale_folded_scalar_refused_in_run_mode(cache_root):
    model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE)
    run(model, calls=1)
    stale = DiffusionModel(config("Run", cache_root), SHAPE)
    stale.boundary_value = 2.0  # folded in at parse time: a different program
    q, total = initial_state(SHAPE, BACKEND)
    with pytest.raises(MissingBuildError, match=r"self\.boundary_value was 1\.0 when built, is 2\.0 now"):
        stale(q, total)


def test_orchestrate_function_with_compiletime_argument(cache_root):
    origin, domain = (1, 1, 0), (SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2])
    tendency = FrozenStencil(apply_tendency, backend=BACKEND, origin=origin, domain=domain)

    def twice(q, lap, n_times):
        for _ in range(n_times):
            tendency(q, lap, 0.5)

    orchestrated = orchestrate_function(config("BuildAndRun", cache_root), dace_compiletime_args=["n_times"])(twice)
    q, lap = initial_state(SHAPE, BACKEND)
    lap[...] = 1.0
    q_ref = np.asarray(q).copy()
    for _ in range(3):
        q_ref[1:-1, 1:-1, :] += 0.5 * 1.0
    orchestrated(q, lap, 3)
    assert np.array_equal(np.asarray(q), q_ref)


def test_verbose_build_saves_every_stage_and_a_memory_report(tmp_path):
    import json

    root = tmp_path / "cache"
    model = DiffusionModel(config("BuildAndRun", root, verbose=True), (7, 7, 2))
    run(model, shape=(7, 7, 2), calls=1)
    (entry,) = [marker.parent for marker in root.rglob("COMPLETE")]
    assert (entry / "signature.sdfgz").exists()  # loaders read the calling interface only
    stages = sorted(path.name for path in (entry / "stages").iterdir())
    assert stages == ["0_parsed.sdfgz", "1_simplified.sdfgz", "2_expanded.sdfgz", "3_optimized.sdfgz"]
    report = json.loads((entry / "memory_report.json").read_text())
    # the three 7x7x2 float64 arrays (q, total, the component's temporary) are arguments
    # counted once: a nested SDFG's arguments are its caller's arrays (counted at every depth before)
    assert report["Default"]["argument"] == 3 * 7 * 7 * 2 * 8
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["inputs"]["pipeline"]["simplify_skip"] == ["LiftTrivialIf", "ScalarToSymbolPromotion"]


def test_stencils_differing_only_in_externals_both_enter_the_key(cache_root):
    from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

    from orchestra.key.inputs import collect_build_inputs
    from orchestra.orchestrate import OrchestratedProgram

    def scaled(q: Field[float]):
        from __externals__ import factor

        with computation(PARALLEL), interval(...):
            q = q * factor

    origin, domain = (1, 1, 0), (SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2])
    first = FrozenStencil(scaled, backend=BACKEND, origin=origin, domain=domain, externals={"factor": 2.0})
    second = FrozenStencil(scaled, backend=BACKEND, origin=origin, domain=domain, externals={"factor": 3.0})

    def both(q):
        first(q)
        second(q)

    program = OrchestratedProgram(both, config("BuildAndRun", cache_root))
    q, _ = initial_state(SHAPE, BACKEND)
    inputs = collect_build_inputs(program.dace_program((q,)), both, (q,), {}, backend=BACKEND, pipeline={})
    gt_ids = {identity["gt_id"] for identity in inputs["nested"].values()}
    assert len(gt_ids) == 2
