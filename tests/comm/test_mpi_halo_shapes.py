"""Arrays of another shape on one rank: one message naming the ranks and the shapes, no MPI error, no hang."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_halo_shape_worker.py")


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["scalar", "vector", "orchestrated"])
def test_a_rank_with_another_number_of_levels_is_named_once(mode, tmp_path):
    result = run_mpi(4, WORKER, mode, str(tmp_path / "cache"), timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "MPI_ERR" not in output and "finished" not in output, output[-3000:]
    assert output.count("DecompositionError") == 1, output[-3000:]
    assert "rank 0: orchestra: DecompositionError: halo update on rank 0: rank 2 sent" in output, output[-3000:]
    assert "(10, 10, 5) float64" in output and "how rank 2" in output, output[-3000:]
