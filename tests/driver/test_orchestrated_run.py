"""The driver orchestrated (BuildAndRun, dace:cpu) equals Python mode (numpy) bitwise, on 6 ranks;
then a model developer edits a stencil three components deep, and ``Run`` refuses the stale build.

The driver runs from a copy of ``driver/`` (``workers/driver_from.py``), so
the test can edit it. The edit costs no build: ``Run`` mode never compiles.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from tests.mpi_launcher import REPO_ROOT, run_mpi

pytestmark = pytest.mark.mpi

WORKER = Path(__file__).with_name("workers") / "driver_from.py"
CONFIG = """
resolution: 12
layout: 1
dt: 1800
days: 0.125
test_case: 6
backend: {backend}
hyperdiffusion: true
output:
  directory: {directory}
  netcdf_interval_hours: 0
  restart_interval_hours: 0
  plot: false
"""
#: The hyperdiffusion stencil (DynamicalCore -> RungeKuttaStage -> Tendencies -> Hyperdiffusion), and an edit.
STENCIL_FILE = Path("driver") / "stencils" / "diffusion.py"
ORIGINAL = "tendency = tendency - strength * da_min * da_min * del4"
EDITED = "tendency = tendency - 50.0 * strength * da_min * da_min * del4"
NESTED_PATH = "RungeKuttaStage.__call__/Tendencies.__call__/Hyperdiffusion.__call__"


def run(source: Path, tmp_path: Path, name: str, backend: str, mode: str, monkeypatch, check: bool = True):
    """Run the driver of ``source`` on 6 ranks; the completed process."""
    config = tmp_path / f"{name}.yaml"
    config.write_text(CONFIG.format(backend=backend, directory=tmp_path / name))
    monkeypatch.setenv("FV3_DACEMODE", mode)
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "orchestra_cache"))
    return run_mpi(6, WORKER, source, config, timeout=1500, check=check)


def final_fields(result, directory: Path) -> dict:
    assert "mass +0.000e+00" in result.stdout, result.stdout[-2000:]
    (final,) = sorted(directory.glob("*_step000006.nc"))
    with xr.open_dataset(final) as data:
        return {field: data[field].values.copy() for field in ("h", "u", "v")}


def test_orchestrated_run_equals_python_mode_bitwise_and_a_nested_edit_is_refused(tmp_path, monkeypatch):
    # Rossby-Haurwitz wave (case 6), 6 steps of 30 min at C12: every component runs
    # (momentum, hyperdiffusion, regions at tile edges, halo callbacks, the
    # decomposition-dependent scalar read through a getter).
    source = tmp_path / "src"
    shutil.copytree(REPO_ROOT / "driver", source / "driver", ignore=shutil.ignore_patterns("__pycache__"))
    python_mode = final_fields(run(source, tmp_path, "python", "numpy", "Python", monkeypatch), tmp_path / "python")
    monkeypatch.setenv("ORCHESTRA_TIMINGS", "1")  # the same build, timed: the report gathers all ranks
    built = run(source, tmp_path, "orchestrated", "dace:cpu", "BuildAndRun", monkeypatch)
    monkeypatch.delenv("ORCHESTRA_TIMINGS")
    orchestrated = final_fields(built, tmp_path / "orchestrated")
    assert built.stdout.count("orchestra timings (ORCHESTRA_TIMINGS)") == 1, built.stdout[-3000:]  # rank 0 only
    timings = json.loads((tmp_path / "orchestrated" / "orchestrated_timings.json").read_text())
    dycore = timings["summary"]["DynamicalCore.__call__"]
    assert dycore["ranks"] == 6 and dycore["calls"] == 6 * 5  # 6 steps per rank, the first built or loaded
    assert dycore["parts"]["library"]["min"] > 0 and any(p.startswith("callback ") for p in dycore["parts"])
    for field in ("h", "u", "v"):
        assert np.array_equal(orchestrated[field], python_mode[field]), field
    # the run moved the state: the comparison is not between two initial conditions
    assert not np.array_equal(python_mode["h"], np.zeros_like(python_mode["h"]))

    # The reported bug: an edited nested stencil silently ran from the old build.
    stencil = source / STENCIL_FILE
    text = stencil.read_text()
    assert text.count(ORIGINAL) == 1
    stencil.write_text(text.replace(ORIGINAL, EDITED))
    edited = run(source, tmp_path, "edited", "dace:cpu", "Run", monkeypatch, check=False)
    output = edited.stdout
    assert edited.returncode != 0, output[-3000:]
    assert "loaded from cache" not in output and "built in" not in output, output[-3000:]
    assert output.count("found no usable build") == 1, output[-3000:]  # reported once, not per rank
    refusal = output[output.index("found no usable build"):]
    # the closest build differs in the nested stencil: said in words, with the component's call path, first
    cause = refusal.splitlines()[2]
    assert "the code of stencil" in cause and "hyperdiffusion_tendency" in cause, refusal[:2000]
    assert f"(called in {NESTED_PATH})" in cause, refusal[:2000]
