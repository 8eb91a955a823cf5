"""Six MPI ranks build one plain gt4py stencil into one fresh ``GT_CACHE_ROOT`` at once (issue 56, item 2).

Before gt4py's builds held a per-stencil lock
(:mod:`orchestra.toolchain.gt4py_builds`), the ranks compiled into the same
folder and one imported another's half-copied extension (``ImportError:
..._pyext...so: file too short``, reproduced here before the fix). With
orchestra imported, one rank builds, the others wait and load: every rank
runs the stencil and all results equal numpy's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_plain_cache_worker.py")

pytestmark = pytest.mark.mpi


def test_six_ranks_build_one_plain_stencil_into_a_fresh_cache(tmp_path):
    process = run_mpi(6, WORKER, tmp_path, "with-orchestra", timeout=900, check=False,
                      environment={"GT_CACHE_ROOT": str(tmp_path / "gt_cache")})
    errors = {path.name: path.read_text()[-600:] for path in tmp_path.glob("rank*.error")}
    assert not errors, errors
    assert process.returncode == 0, process.stdout[-3000:]
    q = np.arange(8 * 8 * 3, dtype=float).reshape(8, 8, 3) ** 1.5
    expected = np.zeros((8, 8, 3))
    expected[1:7, 1:7] = q[2:8, 1:7] + q[0:6, 1:7] + q[1:7, 2:8] + q[1:7, 0:6] - 4.0 * q[1:7, 1:7]
    for rank in range(6):
        np.testing.assert_allclose(np.load(tmp_path / f"rank{rank}.npy"), expected, rtol=1e-14, atol=1e-9)
        assert np.array_equal(np.load(tmp_path / f"rank{rank}.npy"), np.load(tmp_path / "rank0.npy"))
