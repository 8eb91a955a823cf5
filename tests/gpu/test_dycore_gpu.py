"""The driver's dynamical core on ``dace:gpu``, on 6 ranks.

* Build (needs nvcc only, runs wherever the suite runs): a ``FV3_DACEMODE=Build``
  job allocates the model as abstract device arrays, builds one library of CUDA
  kernels with the halo exchanges as host callbacks, and ends without reading a
  value (no snapshot, no diagnostics).
* Run (needs a GPU): the orchestrated GPU run against Python mode with numpy;
  nvcc contracts multiply-adds, so the two agree to round-off, not bitwise.
  ``scripts/gpu_dycore.sh`` does the same at larger sizes, and times it.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from tests.driver.test_orchestrated_run import CONFIG as DRIVER_CONFIG, WORKER
from tests.gpu.gpu_env import BUILD_CUDA_ARCH, requires_gpu, requires_nvcc
from tests.mpi_launcher import REPO_ROOT, run_mpi

pytestmark = pytest.mark.mpi

#: The driver test's run (case 6 at C12: momentum, hyperdiffusion, tile-edge regions, halo callbacks), 2 layers.
CONFIG = DRIVER_CONFIG.replace("hyperdiffusion: true", "nz: 2\nhyperdiffusion: true")


def run(tmp_path: Path, name: str, backend: str, mode: str, monkeypatch, cuda_arch: str = BUILD_CUDA_ARCH):
    config = tmp_path / f"{name}.yaml"
    config.write_text(CONFIG.format(backend=backend, directory=tmp_path / name))
    monkeypatch.setenv("FV3_DACEMODE", mode)
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "orchestra_cache"))
    monkeypatch.setenv("ORCHESTRA_CUDA_ARCH", cuda_arch)
    return run_mpi(6, WORKER, REPO_ROOT, config, timeout=1500)


@requires_nvcc
def test_dycore_builds_for_the_gpu_on_a_machine_without_one(tmp_path, monkeypatch):
    result = run(tmp_path, "build", "dace:gpu", "Build", monkeypatch)
    assert "build ready" in result.stdout, result.stdout[-3000:]
    # nothing ran: the job computed no diagnostics and wrote no snapshot
    assert "relative change" not in result.stdout
    assert not list((tmp_path / "build").glob("*.nc"))
    (manifest_path,) = (tmp_path / "orchestra_cache").rglob("manifest.json")
    manifest = json.loads(manifest_path.read_text())
    inputs = manifest["inputs"]
    assert inputs["backend"] == "dace:gpu" and inputs["pipeline"]["on_gpu"]
    assert inputs["pipeline"]["cuda_arch"] == BUILD_CUDA_ARCH.split(",")[0] or "," in BUILD_CUDA_ARCH
    # every array the step touches lives on the device; the halo exchanges stay host callbacks
    assert {a["storage"] for a in inputs["closure_arrays"].values()} == {"gpu"}
    assert any("halo" in name for name in inputs["callbacks"])
    (cuda_source,) = (manifest_path.parent / "src").rglob("*.cu")
    assert cuda_source.read_text().count("__global__") >= 20  # one kernel per stencil computation, or so
    assert b".nv_fatbin" in (manifest_path.parent / manifest["library"]).read_bytes()


def fields_at(directory: Path, step: int) -> dict:
    (path,) = sorted(directory.glob(f"*_step{step:06d}.nc"))
    with xr.open_dataset(path) as data:
        return {field: data[field].values.copy() for field in ("h", "u", "v")}


@requires_gpu
def test_dycore_on_the_gpu_matches_python_mode(tmp_path, monkeypatch):
    from tests.gpu.gpu_env import device_cuda_arch

    run(tmp_path, "python", "numpy", "Python", monkeypatch)
    gpu = run(tmp_path, "gpu", "dace:gpu", "BuildAndRun", monkeypatch, cuda_arch=device_cuda_arch())
    assert "relative change: mass" in gpu.stdout, gpu.stdout[-3000:]
    expected, actual = fields_at(tmp_path / "python", 6), fields_at(tmp_path / "gpu", 6)
    for field in ("h", "u", "v"):
        scale = np.max(np.abs(expected[field]))
        assert np.max(np.abs(actual[field] - expected[field])) <= 1e-12 * scale, field
    # six steps moved the state: the comparison is not between two initial conditions
    initial = fields_at(tmp_path / "python", 0)
    assert np.max(np.abs(expected["u"] - initial["u"])) > 1e-6 * np.max(np.abs(initial["u"]))
