"""Vector interface synchronization called from an orchestrated program (6 ranks, real MPI)."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

pytestmark = pytest.mark.mpi


def test_synchronize_vector_interfaces_in_orchestrated_code_matches_python_mode(tmp_path):
    worker = Path(__file__).parent / "mpi_orchestrated_interface_worker.py"
    result = run_mpi(6, worker, str(tmp_path / "cache"), timeout=600)
    lines = [
        line for line in result.stdout.splitlines() if line.startswith("OK orchestrated-interface")
    ]
    assert len(lines) == 6, result.stdout[-3000:]
    assert sum(line.endswith("built=1") for line in lines) == 1
