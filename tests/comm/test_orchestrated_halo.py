"""Halo exchanges called from orchestrated programs, and the callback exchanger (6 ranks, real MPI)."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

pytestmark = pytest.mark.mpi

HERE = Path(__file__).parent


def _ok_lines(worker: str, prefix: str, *args: str, timeout: float = 600) -> list[str]:
    """Run ``worker`` on 6 ranks; the ``OK <prefix>`` line of every rank (one per rank, or the test fails)."""
    result = run_mpi(6, HERE / worker, *args, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith(f"OK {prefix}")]
    assert len(lines) == 6, result.stdout[-3000:]
    return lines


def test_orchestrated_program_with_callback_halo_matches_python_mode(tmp_path):
    lines = _ok_lines("mpi_orchestrated_halo_worker.py", "orchestrated-halo", str(tmp_path / "cache"))
    # one code path on a 1x1 cube: exactly one rank (rank 0, tile 0) compiled
    assert sum(line.endswith("built=1") for line in lines) == 1
    assert "OK orchestrated-halo rank=0 built=1" in lines


def test_halo_updater_called_as_written_in_orchestrated_code_matches_python_mode(tmp_path):
    """update, start/wait, update_vector, start_vector/wait_vector on arrays given as arguments, at depth 3."""
    lines = _ok_lines("mpi_halo_as_written_worker.py", "halo-as-written", str(tmp_path / "cache"))
    assert sum(line.endswith("built=1") for line in lines) == 1


def test_callback_exchanger_on_a_dict_and_interface_as_ndsl_wrapped_updaters_use_them():
    _ok_lines("mpi_callback_exchanger_worker.py", "exchanger", timeout=120)
