"""Halo updates of interface-staggered fields under real mpirun (tiny domains).

Each job checks every point of every rank's arrays, bitwise, against the
single-process geometric reference (see ``mpi_staggered_worker.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).parent / "mpi_staggered_worker.py"
CHECKS = ["scalar", "vector", "split", "indexed", "partial"]

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize(
    "n_ranks,grid,layout,nx,halo",
    [
        (6, "cube", 1, 4, 3),
        (24, "cube", 2, 3, 2),
        (4, "periodic", 2, 3, 2),
        (4, "channel", 2, 3, 2),
    ],
    ids=["cube-1x1-6ranks", "cube-2x2-24ranks", "periodic-2x2-4ranks", "channel-2x2-4ranks"],
)
def test_staggered_halo_updates_match_the_geometric_reference(n_ranks, grid, layout, nx, halo):
    args = ["--grid", grid, "--layout", str(layout), "--nx", str(nx), "--halo", str(halo)]
    result = run_mpi(n_ranks, WORKER, *args, timeout=120)
    for check in CHECKS:
        assert f"OK {check}" in result.stdout, result.stdout[-3000:]
