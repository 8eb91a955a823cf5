"""The callback halo exchanger called from an orchestrated program (6 ranks, real MPI)."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

pytestmark = pytest.mark.mpi


def test_orchestrated_program_with_callback_halo_matches_python_mode(tmp_path):
    worker = Path(__file__).parent / "mpi_orchestrated_halo_worker.py"
    result = run_mpi(6, worker, str(tmp_path / "cache"), timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("OK orchestrated-halo")]
    assert len(lines) == 6, result.stdout[-3000:]
    # one code path on a 1x1 cube: exactly one rank (rank 0, tile 0) compiled
    assert sum(line.endswith("built=1") for line in lines) == 1
    assert "OK orchestrated-halo rank=0 built=1" in result.stdout


def test_halo_updater_called_as_written_in_orchestrated_code_matches_python_mode(tmp_path):
    """update, start/wait, update_vector, start_vector/wait_vector on arrays given as arguments, at depth 3."""
    worker = Path(__file__).parent / "mpi_halo_as_written_worker.py"
    result = run_mpi(6, worker, str(tmp_path / "cache"), timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("OK halo-as-written")]
    assert len(lines) == 6, result.stdout[-3000:]
    assert sum(line.endswith("built=1") for line in lines) == 1


def test_callback_exchanger_on_a_dict_and_interface_as_ndsl_wrapped_updaters_use_them():
    result = run_mpi(6, Path(__file__).parent / "mpi_callback_exchanger_worker.py", timeout=120)
    assert sum(line.startswith("OK exchanger") for line in result.stdout.splitlines()) == 6, result.stdout[-3000:]
