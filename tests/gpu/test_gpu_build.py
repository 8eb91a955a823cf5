"""A dace:gpu build on a machine without a GPU: the generated CUDA compiles (needs nvcc only).

This is what a model developer does on a login node: run the job with
``FV3_DACEMODE=Build`` and the model's state allocated as abstract device
arrays; the library is built with nvcc for ``cuda_arch`` and published in the
cache, and no device is touched (nothing is allocated on it, nothing loaded).
"""

import json

import numpy as np
import pytest

from orchestra import DaceConfig
from orchestra.pipeline.abstract_arrays import AbstractArray, abstract_device_storage, builds_without_device
from orchestra.examples.diffusion import DiffusionModel, initial_state

from tests.gpu.gpu_env import BUILD_CUDA_ARCH, requires_nvcc

SHAPE = (10, 9, 3)

pytestmark = requires_nvcc


def build(cache_root):
    config = DaceConfig(None, backend="dace:gpu", orchestration="Build", cache_root=cache_root,
                        exit_after_build=False, cuda_arch=BUILD_CUDA_ARCH)
    assert builds_without_device(config)
    with abstract_device_storage(builds_without_device(config)):
        model = DiffusionModel(config, SHAPE)
        q, total = initial_state(SHAPE, config.backend)
        assert isinstance(q, AbstractArray) and isinstance(model.diffusion.lap, AbstractArray)
        assert model(q, total) is None  # Build mode: builds, never runs
    return model.__orchestra_programs__["__call__"]


@pytest.fixture(scope="module")
def gpu_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu_cache")
    program = build(root)
    (manifest_path,) = root.rglob("manifest.json")
    return root, program, manifest_path.parent, json.loads(manifest_path.read_text())


def test_library_with_cuda_kernels_is_built_without_a_gpu(gpu_build):
    root, program, folder, manifest = gpu_build
    assert program.built_here and program.fast_caller is None  # built, not loaded
    library = folder / manifest["library"]
    assert library.is_file() and (folder / "COMPLETE").exists()
    cuda_sources = list((folder / "src").rglob("*.cu"))
    assert len(cuda_sources) == 1 and "__global__" in cuda_sources[0].read_text()
    # the kernels were compiled for the configured architecture, into the library
    commands = json.loads((folder / "build" / "compile_commands.json").read_text())
    (cu_command,) = [c["command"] for c in commands if c["file"].endswith(".cu")]
    arch = BUILD_CUDA_ARCH.split(",")[0]
    assert f"arch=compute_{arch}" in cu_command and "nvcc" in cu_command
    assert b".nv_fatbin" in library.read_bytes()
    print(f"GPU build: {program.build_seconds:.1f} s, {library.stat().st_size // 1024} KiB, {cu_command.split()[0]}")


def test_manifest_records_the_gpu_target(gpu_build):
    _, _, _, manifest = gpu_build
    inputs = manifest["inputs"]
    assert inputs["backend"] == "dace:gpu"
    assert inputs["pipeline"]["cuda_arch"] == BUILD_CUDA_ARCH
    gpu = inputs["pipeline"]["gpu"]
    assert gpu["dace_settings"]["compiler.cuda.cuda_arch"] == BUILD_CUDA_ARCH
    assert gpu["nvcc"].startswith("Cuda compilation tools")
    assert inputs["toolchain"]["host_isa"] is None  # no -march=native: a login node builds for compute nodes
    for name in ("q", "total"):
        assert inputs["arguments"][name]["storage"] == "gpu"
    closure_arrays = inputs["closure_arrays"]  # the nested component's temporary, read through self
    assert closure_arrays and all(array["storage"] == "gpu" for array in closure_arrays.values())


def test_a_second_build_job_reuses_the_build(gpu_build):
    root, _, _, _ = gpu_build
    program = build(root)
    assert not program.built_here
    assert len(list(root.rglob("COMPLETE"))) == 1
