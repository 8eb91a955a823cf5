"""The dynamical core orchestrated (one compiled program per step) against the same stencils run one by one.

Both runs use the ``dace:cpu`` backend, so the stencils are the same generated
code and the compiler flags are orchestra's (no fast-math, ``-ffp-contract=off``
on both sides): the prognostic fields must agree bit for bit. Slow on first use
(every stencil compiled for ``Python`` mode, and one orchestrated build); both
builds are cached (``$GT_CACHE_ROOT``, ``.orchestra_cache``) for later runs.
"""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from tests.mpi_launcher import run_mpi

pytestmark = pytest.mark.mpi

CONFIG = """
resolution: 12
layout: 1
dt: 1800
days: {days}
nz: 2
test_case: 6
backend: dace:cpu
output:
  directory: {directory}
  plot: false
"""


def run(tmp_path: Path, name: str, mode: str, monkeypatch) -> dict:
    directory = tmp_path / name
    config = tmp_path / f"{name}.yaml"
    config.write_text(CONFIG.format(days=3 * 1800 / 86400, directory=directory))
    monkeypatch.setenv("FV3_DACEMODE", mode)
    result = run_mpi(6, "-m", "driver", str(config), timeout=3000)
    assert f"orchestration {mode}" in result.stdout
    with xr.open_dataset(directory / f"{name}_step000003.nc") as data:
        return {field: data[field].values.copy() for field in ("h", "u", "v")}


def test_orchestrated_step_matches_python_mode(tmp_path, monkeypatch):
    python = run(tmp_path, "python", "Python", monkeypatch)
    orchestrated = run(tmp_path, "orchestrated", "BuildAndRun", monkeypatch)
    for field in ("h", "u", "v"):
        difference = np.abs(python[field] - orchestrated[field]).max()
        assert np.array_equal(python[field], orchestrated[field]), f"{field} differs by up to {difference}"
