"""Communicator.gather_results: results on rank 0; a rank that fails makes rank 0 raise, and nobody waits."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_gather_results_worker.py")


@pytest.mark.mpi
def test_results_gather_and_a_failed_rank_raises_on_root_without_a_hang():
    output = run_mpi(3, WORKER, timeout=120).stdout
    assert "rank 0 gathered [0, 10, 20]" in output
    assert "rank 1 gathered None" in output and "rank 2 gathered None" in output
    assert "rank 0 raised RuntimeError: rank 1: ValueError: no report on this rank" in output
    assert "rank 1 raised ValueError: no report on this rank" in output
    assert "rank 2 returned None" in output
