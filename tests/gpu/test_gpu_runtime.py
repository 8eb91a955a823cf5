"""Orchestrated dace:gpu programs on a GPU: results, the login-node workflow, memory, reallocated arrays.

Skipped (with the reason) unless an NVIDIA GPU, cupy and nvcc are present;
``scripts/gpu_check.sh`` runs them. Tolerance: GPU results are compared with
``rtol = atol = 1e-12`` (values are O(1)). nvcc contracts ``a * b + c`` into
fused multiply-adds while the CPU builds use ``-ffp-contract=off``, so the
GPU and CPU results differ in the last bits; orchestrated and stencil-by-
stencil GPU runs are held to the same tolerance (their kernels are compiled
separately).
"""

import ctypes

import numpy as np
import pytest

from orchestra import DaceConfig, FrozenStencil, orchestrate_function
from orchestra.pipeline.abstract_arrays import abstract_device_storage, builds_without_device
from orchestra.comm.array_module import to_host
from orchestra.examples.diffusion import DiffusionModel, apply_tendency, initial_state
from orchestra.key.array_like import array_layout

from tests.gpu.gpu_env import device_cuda_arch, requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

SHAPE = (18, 17, 6)
RTOL = ATOL = 1e-12


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("gpu_runtime_cache")


def config(mode, cache_root, backend="dace:gpu", **kwargs):
    if "gpu" in backend:
        kwargs.setdefault("cuda_arch", device_cuda_arch())
    return DaceConfig(None, backend=backend, orchestration=mode, cache_root=cache_root, **kwargs)


def synchronize():
    import cupy

    cupy.cuda.Device().synchronize()


def run(model, backend, calls=2):
    q, total = initial_state(SHAPE, backend)
    for _ in range(calls):
        model(q, total)
    synchronize()
    return to_host(q), to_host(total)


def assert_close(actual, expected, what):
    difference = float(np.max(np.abs(actual - expected)))
    print(f"{what}: max |difference| = {difference:.3e}")
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("fix_boundaries", [True, False], ids=["regions", "no-regions"])
def test_orchestrated_gpu_matches_stencil_by_stencil_gpu_and_cpu(cache_root, fix_boundaries):
    cpu = DiffusionModel(config("Python", cache_root, backend="dace:cpu"), SHAPE, fix_boundaries=fix_boundaries)
    stencils = DiffusionModel(config("Python", cache_root), SHAPE, fix_boundaries=fix_boundaries)
    orchestrated = DiffusionModel(config("BuildAndRun", cache_root), SHAPE, fix_boundaries=fix_boundaries)
    q_cpu, total_cpu = run(cpu, "dace:cpu")
    q_gpu, total_gpu = run(stencils, "dace:gpu")
    q, total = run(orchestrated, "dace:gpu")
    assert orchestrated.halo.calls == stencils.halo.calls == 2 * 3  # the callback ran on device arrays
    assert_close(q, q_gpu, "orchestrated GPU vs stencil-by-stencil GPU (q)")
    assert_close(total, total_gpu, "orchestrated GPU vs stencil-by-stencil GPU (total)")
    assert_close(q, q_cpu, "orchestrated GPU vs CPU (q)")
    assert_close(total, total_cpu, "orchestrated GPU vs CPU (total)")
    assert np.any(q[1, 1:-1, :] == 1.0) == fix_boundaries


def test_build_without_device_then_run_on_the_gpu(tmp_path):
    """The login-node workflow: abstract arrays give the key that cupy arrays give."""
    builder_config = config("Build", tmp_path, exit_after_build=False)
    with abstract_device_storage(builds_without_device(builder_config)):
        builder = DiffusionModel(builder_config, SHAPE)
        q, total = initial_state(SHAPE, builder_config.backend)
        builder(q, total)
    assert builder.__orchestra_programs__["__call__"].built_here
    runner = DiffusionModel(config("Run", tmp_path), SHAPE)  # real cupy arrays now
    q, total = run(runner, "dace:gpu")
    assert not runner.__orchestra_programs__["__call__"].built_here
    q_cpu, total_cpu = run(DiffusionModel(config("Python", tmp_path, backend="dace:cpu"), SHAPE), "dace:cpu")
    assert_close(q, q_cpu, "Run-mode GPU (built without a device) vs CPU")
    assert_close(total, total_cpu, "Run-mode GPU (built without a device) vs CPU (total)")


def test_persistent_device_transient_survives_repeated_calls(cache_root):
    """A transient allocated once on the device is valid on every call (see the memory policy)."""
    import cupy

    origin, domain = (1, 1, 0), (SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2])
    tendency = FrozenStencil(apply_tendency, backend="dace:gpu", origin=origin, domain=domain)

    def step(q, lap):
        doubled = lap * 2.0  # a device transient of static size: persistent
        tendency(q, doubled, 0.25)

    orchestrated = orchestrate_function(config("BuildAndRun", cache_root))(step)
    q, lap = initial_state(SHAPE, "dace:gpu")
    lap[...] = cupy.asarray(np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE) % 7)
    expected = to_host(q).copy()
    for _ in range(4):
        orchestrated(q, lap)
        expected[1:-1, 1:-1, :] += 0.25 * (2.0 * to_host(lap)[1:-1, 1:-1, :])
    synchronize()
    assert_close(to_host(q), expected, "four calls through a persistent device transient")


def test_reallocated_device_arrays_reach_the_library(cache_root):
    """Fresh device arrays of the same layout are repointed (orchestra.calls.repoint), not run on freed memory."""
    import cupy

    model = DiffusionModel(config("BuildAndRun", cache_root), SHAPE)
    reference = DiffusionModel(config("Python", cache_root, backend="dace:cpu"), SHAPE)
    q, total = initial_state(SHAPE, "dace:gpu")
    q_ref, total_ref = initial_state(SHAPE, "dace:cpu")
    model(q, total)
    reference(q_ref, total_ref)
    caller = model.__orchestra_programs__["__call__"].fast_caller
    assert caller.marshal_count == 1
    q2, total2 = initial_state(SHAPE, "dace:gpu")
    q2[...] = q
    del q, total
    cupy.get_default_memory_pool().free_all_blocks()  # let the old pointers be reused
    model(q2, total2)
    reference(q_ref, total_ref)
    synchronize()
    assert (caller.marshal_count, caller.repoint_count) == (1, 1)
    pointers = {argument.value for argument in caller.compiled_sdfg._lastargs[0] if isinstance(argument, ctypes.c_void_p)}
    assert {array_layout(q2).pointer, array_layout(total2).pointer} <= pointers
    assert_close(to_host(q2), q_ref, "after reallocation (q)")
    assert_close(to_host(total2), total_ref, "after reallocation (total)")
