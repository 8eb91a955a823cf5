"""Periodic and channel halo updates under real mpirun at 1, 2, 4 and 9 ranks (tiny domains).

Each job checks every ghost cell against a padded global field and runs a
small model whose gathered result must be bitwise equal to the same model on
one rank (see ``mpi_periodic_worker.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).parent / "mpi_periodic_worker.py"

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize(
    "n_ranks,layouts",
    [(1, ["1,1"]), (2, ["2,1", "1,2"]), (4, ["2,2", "4,1"]), (9, ["3,3"])],
    ids=["1rank", "2ranks", "4ranks", "9ranks"],
)
def test_periodic_and_channel_halos_and_model_match_one_rank(n_ranks, layouts):
    result = run_mpi(n_ranks, WORKER, "--layouts", ";".join(layouts), timeout=60)
    for layout in layouts:
        for domain in ("periodic", "channel"):
            for check in ("ghosts", "model"):
                assert f"OK {check} {domain} {layout}" in result.stdout, result.stdout[-3000:]
