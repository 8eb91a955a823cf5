"""Halo updates, gathers and failure handling under real mpirun (tiny domains)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

HERE = Path(__file__).parent
HALO_WORKER = HERE / "mpi_halo_worker.py"
ABORT_WORKER = HERE / "mpi_abort_worker.py"

pytestmark = pytest.mark.mpi


def _assert_ok(result, checks):
    for check in checks:
        assert f"OK {check}" in result.stdout, result.stdout[-3000:]


@pytest.mark.parametrize(
    "n_ranks,grid,layout,checks",
    [
        (6, "cube", 1, ["gather", "scalar", "vector", "split", "staged", "layouts"]),
        (24, "cube", 2, ["gather", "scalar", "vector", "split"]),
        (9, "tile", 3, ["gather", "scalar", "vector", "split"]),
    ],
    ids=["cube-1x1-6ranks", "cube-2x2-24ranks", "tile-3x3-9ranks"],
)
def test_halo_update_matches_gathered_field_and_geometry(n_ranks, grid, layout, checks):
    args = ["--grid", grid, "--layout", str(layout), "--nx", "6", "--checks", ",".join(checks)]
    _assert_ok(run_mpi(n_ranks, HALO_WORKER, *args, timeout=120), checks)


def test_callback_exchanger_with_state_object_and_misuse_errors():
    result = run_mpi(
        6, HALO_WORKER, "--grid", "cube", "--layout", "1", "--checks", "callback,errors", timeout=60
    )
    _assert_ok(result, ["callback", "errors"])


@pytest.mark.parametrize("mode,failing_rank", [("raise", 2), ("excepthook", 1)])
def test_exception_on_one_rank_ends_the_job(mode, failing_rank):
    start = time.monotonic()
    result = run_mpi(4, ABORT_WORKER, mode, timeout=60, check=False)
    elapsed = time.monotonic() - start
    assert result.returncode not in (0, -9), result.stdout[-3000:]
    assert elapsed < 30, f"abort took {elapsed:.1f} s"
    assert f"rank {failing_rank}: Traceback" in result.stdout, result.stdout[-3000:]
    assert "deliberate" in result.stdout
    assert "unreachable" not in result.stdout


def test_wrong_number_of_ranks_is_a_clear_error():
    result = run_mpi(2, ABORT_WORKER, "size", timeout=60)
    assert "OK size" in result.stdout
