"""The GPU path without compiling: abstract arrays, the GPU target, the GPU pass, memory policy.

Fast (no nvcc): programs are parsed and transformed, and where the generated
code matters it is generated (not compiled) and read.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from orchestra import ConfigurationError, DaceConfig
from orchestra.pipeline.abstract_arrays import AbstractArray, AbstractArrayError, abstract_device_storage
from orchestra.key.inputs import describe_array
from orchestra.examples.diffusion import DiffusionModel, initial_state
from orchestra.toolchain import CUDA_ARCH_VARIABLE, GpuTarget, _declare_gpu_helpers, dace_settings

SHAPE = (10, 9, 3)


def gpu_config(mode: str, cache_root: Path, **kwargs) -> DaceConfig:
    return DaceConfig(None, backend="dace:gpu", orchestration=mode, cache_root=cache_root,
                      exit_after_build=False, **kwargs)


# ------------------------------------------------------------------ abstract arrays
def test_abstract_storage_has_gt4py_gpu_layout_and_no_memory():
    import gt4py.storage as gt_storage
    from gt4py.storage.cartesian import utils as storage_utils

    original = storage_utils.allocate_gpu
    with abstract_device_storage():
        q = gt_storage.zeros(SHAPE, np.float64, backend="dace:gpu")
        filled = gt_storage.from_array(np.ones(SHAPE), np.float64, backend="dace:gpu")
        padded = gt_storage.empty(SHAPE, np.float64, backend="gt:gpu", aligned_index=(3, 3, 0))
        on_cpu = gt_storage.zeros(SHAPE, np.float64, backend="dace:cpu")
    assert storage_utils.allocate_gpu is original  # restored on exit
    nx, ny, _ = SHAPE
    # dace:gpu lays i out contiguously, then j, then k (no padding: alignment 1)
    assert isinstance(q, AbstractArray) and q.strides == (8, 8 * nx, 8 * nx * ny)
    assert isinstance(filled, AbstractArray) and filled.strides == q.strides
    assert isinstance(padded, AbstractArray) and padded.strides[1] % 128 == 0  # gt:gpu pads i
    assert isinstance(on_cpu, np.ndarray)  # CPU backends are untouched
    assert q.__cuda_array_interface__["data"] == (0, False)
    assert describe_array(q) == {"dtype": "<f8", "shape": list(SHAPE), "storage": "gpu",
                                 "strides": [1, nx, nx * ny]}


def test_abstract_array_descriptor_slicing_and_values():
    import dace

    array = AbstractArray(SHAPE, np.float64, strides=(8, 80, 720))
    desc = dace.data.create_datadescriptor(array)
    assert desc.storage == dace.StorageType.GPU_Global
    assert tuple(desc.strides) == (1, 10, 90) and tuple(desc.shape) == SHAPE
    view = array[1:-1, :, 0]
    assert view.shape == (8, 9) and view.strides == (8, 80)
    array[...] = 1.0  # writes are dropped
    with pytest.raises(AbstractArrayError, match="no values"):
        np.asarray(array)
    with pytest.raises(AbstractArrayError):
        array[0, 0, 0]


# ------------------------------------------------------------------ GPU target
def test_gpu_target_is_validated_and_normalized(monkeypatch):
    monkeypatch.delenv(CUDA_ARCH_VARIABLE, raising=False)
    assert GpuTarget.from_config("90").cuda_arch == "90"
    assert GpuTarget.from_config("sm_80, 90").cuda_arch == "80,90"
    assert GpuTarget.from_config(90).cuda_arch == "90"
    with pytest.raises(ConfigurationError, match="cuda_arch.*ORCHESTRA_CUDA_ARCH"):
        GpuTarget.from_config(None)
    with pytest.raises(ConfigurationError, match="native"):
        GpuTarget.from_config("native")
    monkeypatch.setenv(CUDA_ARCH_VARIABLE, "80")
    assert GpuTarget.from_config(None).cuda_arch == "80"
    key = GpuTarget.from_config("90").as_key()
    assert key["dace_settings"]["compiler.cuda.cuda_arch"] == "90"
    assert key["dace_settings"]["compiler.cuda.backend"] == "cuda"  # never 'auto' (a device probe)
    assert "-march=native" not in key["dace_settings"]["compiler.cpu.args"]


def test_gpu_settings_are_scoped():
    from dace.config import Config

    before = Config.get("compiler", "cuda", "cuda_arch"), Config.get("compiler", "cpu", "args")
    with dace_settings(gpu=GpuTarget("86")):
        assert Config.get("compiler", "cuda", "cuda_arch") == "86"
        assert Config.get("compiler", "cuda", "backend") == "cuda"
    assert (Config.get("compiler", "cuda", "cuda_arch"), Config.get("compiler", "cpu", "args")) == before


def test_missing_cuda_arch_is_a_clear_error_before_parsing(tmp_path, monkeypatch):
    monkeypatch.delenv(CUDA_ARCH_VARIABLE, raising=False)
    with abstract_device_storage():
        model = DiffusionModel(gpu_config("Build", tmp_path), SHAPE)
        q, total = initial_state(SHAPE, "dace:gpu")
    with pytest.raises(ConfigurationError, match=r'DaceConfig\(cuda_arch="90"\)'):
        model(q, total)
    assert not any(tmp_path.rglob("*.cu"))


def test_run_mode_refuses_abstract_arrays(tmp_path):
    with abstract_device_storage():
        model = DiffusionModel(gpu_config("Run", tmp_path, cuda_arch="90"), SHAPE)
        q, total = initial_state(SHAPE, "dace:gpu")
    with pytest.raises(ConfigurationError, match="abstract arrays"):
        model(q, total)


# ------------------------------------------------------------------ the GPU pass
@pytest.fixture(scope="module")
def example_sdfg():
    """The example model parsed for dace:gpu from abstract arrays, simplified and expanded."""
    from orchestra.passes.simplify import SIMPLIFY_SKIP, simplify
    from orchestra.pipeline.stages import parse

    config = gpu_config("Build", Path("/nonexistent-cache"), cuda_arch="90")
    with abstract_device_storage():
        model = DiffusionModel(config, SHAPE)
        q, total = initial_state(SHAPE, config.backend)
    program = model.__orchestra_programs__["__call__"]
    with dace_settings(gpu=GpuTarget("90")):
        sdfg = parse(program.dace_program((q, total)), (q, total), {}).sdfg
        simplify(sdfg, SIMPLIFY_SKIP)
        sdfg.expand_library_nodes()
        simplify(sdfg, SIMPLIFY_SKIP)
    return sdfg


def test_to_gpu_makes_kernels_and_keeps_callbacks_on_the_host(example_sdfg):
    from dace import StorageType, dtypes
    from dace.sdfg import nodes, scope

    from orchestra.passes.gpu import to_gpu

    sdfg = example_sdfg
    with dace_settings(gpu=GpuTarget("90")):
        result = to_gpu(sdfg)
        sdfg.validate()
    # laplacian, apply_tendency, fix_boundaries, and column_integral's two intervals
    assert result.kernels == 5
    assert result.collapsed == 3  # the three PARALLEL stencils: (k) x (j, i) -> one (k, j, i) map
    assert len(result.callbacks) == 2 and result.copied_arrays == ()
    assert not any(name.startswith("gpu_") for name in sdfg.arrays)  # device arguments: no copies
    for node, state in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.MapEntry) and state.entry_node(node) is None and state.sdfg is sdfg:
            assert node.map.schedule == dtypes.ScheduleType.GPU_Device, node
        if isinstance(node, nodes.Tasklet) and node.side_effects:
            assert not scope.is_devicelevel_gpu(state.sdfg, state, node), node
    # the callback ordering token and the callback's return value stay in host memory
    assert sdfg.arrays["__pystate"].storage != StorageType.GPU_Global
    assert sdfg.arrays["coefficient"].storage != StorageType.GPU_Global


def test_memory_policy_on_gpu_persistent_or_pooled_never_both():
    """Static transients: allocated once. Per-call ones: from the stream-ordered pool.

    A pooled *persistent* array would also be freed inside the program body by
    DaCe 2.0.0a10 (use after free on the second call): the generated code must
    not free any state-held array in the body.
    """
    import dace

    from orchestra.passes.gpu import to_gpu
    from orchestra.passes.memory import apply_memory_policy

    n = dace.symbol("N")

    @dace.program
    def two_temporaries(a: dace.float64[n], b: dace.float64[n], c: dace.float64[8]):
        tmp = a * 2.0  # size depends on N: per call
        fixed = c + 1.0  # static size: persistent
        b[:] = tmp + 1.0
        c[:] = fixed * 2.0

    with dace_settings(gpu=GpuTarget("90")):
        sdfg = two_temporaries.to_sdfg(simplify=True)
        result = to_gpu(sdfg)
        apply_memory_policy(sdfg, pool=True)
        code = {co.title: co.code for co in sdfg.generate_code()}["Frame"]
    assert result.copied_arrays == ("a", "b", "c")  # host arguments: copied in and out
    persistent, pooled = sdfg.arrays["fixed"], sdfg.arrays["tmp"]
    assert persistent.lifetime == dace.AllocationLifetime.Persistent and not persistent.pool
    assert pooled.lifetime == dace.AllocationLifetime.Scope and pooled.pool
    name = sdfg.name
    body = code[code.index(f"__program_{name}_internal("): code.index(f"DACE_EXPORTED void __program_{name}(")]
    init = code[code.index(f"__dace_init_{name}("): code.index(f"__dace_exit_{name}(")]
    assert re.search(r"cudaMallocAsync\(\(void\*\*\)&tmp,", body) and re.search(r"cudaFreeAsync\(tmp,", body)
    assert re.search(r"cudaMalloc\(\(void\*\*\)&__state->__0_fixed,", init)
    assert "Free" not in body.replace("cudaFreeAsync(tmp,", "").replace("cudaFreeAsync(gpu_a,", "").replace(
        "cudaFreeAsync(gpu_b,", "")


def test_gt4py_gpu_bindings_declare_dace_helpers():
    """gt4py drops DaCe's forward declarations; DaCe 2.0 calls a helper before defining it."""
    code = (
        "struct prog_state_t {\n    dace::cuda::Context *gpu_context;\n};\n"
        "int __dace_init_cuda(prog_state_t *__state) {\n    __dace_gpu_drain_error(__state);\n}\n"
        "void __dace_gpu_drain_error(prog_state_t *__state) {\n}\n"
    )
    fixed = _declare_gpu_helpers(code)
    declaration = "void __dace_gpu_drain_error(prog_state_t *__state);"
    assert fixed.index(declaration) < fixed.index("int __dace_init_cuda")
    assert _declare_gpu_helpers(fixed) == fixed  # declared once


@pytest.mark.parametrize("module", ["orchestra.pipeline.abstract_arrays", "orchestra.toolchain"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
