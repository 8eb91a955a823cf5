"""Interface synchronization under real mpirun, bitwise against the geometric reference."""

from __future__ import annotations

from pathlib import Path

import pytest

import orchestra.comm as comm_package
from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).parent / "mpi_vector_interface_worker.py"

pytestmark = pytest.mark.mpi

CHECKS = ["reference", "split", "quantity"]


@pytest.mark.parametrize(
    "n_ranks,grid,layout,needs",
    [
        (6, "cube", 1, None),
        (24, "cube", 2, None),
        (9, "tile", 3, None),
        (1, "periodic", 1, "PeriodicTilePartitioner"),
        (4, "periodic", 2, "PeriodicTilePartitioner"),
        (4, "channel", 2, "ChannelPartitioner"),
    ],
    ids=[
        "cube-1x1-6ranks",
        "cube-2x2-24ranks",
        "tile-3x3-9ranks",
        "periodic-1x1-1rank",
        "periodic-2x2-4ranks",
        "channel-2x2-4ranks",
    ],
)
def test_synchronize_vector_interfaces_matches_reference(n_ranks, grid, layout, needs):
    if needs is not None and not hasattr(comm_package, needs):
        pytest.skip(f"orchestra.comm.{needs} does not exist yet")
    result = run_mpi(n_ranks, WORKER, "--grid", grid, "--layout", str(layout), timeout=120)
    for check in CHECKS:
        assert f"OK {check}" in result.stdout, result.stdout[-3000:]
