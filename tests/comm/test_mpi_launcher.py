"""The tests' MPI launcher: a job past its timeout is killed, and first says where each rank was."""

import subprocess
import time
from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi


@pytest.mark.mpi
def test_a_hanging_job_is_killed_after_printing_every_ranks_stack():
    start = time.monotonic()
    result = run_mpi(2, Path(__file__).parent / "mpi_hang_worker.py", timeout=20, check=False)
    assert result.returncode < 0
    assert time.monotonic() - start < 60
    assert result.stdout.count("waiting") == 2, result.stdout[-3000:]
    assert result.stdout.count("in wait_forever") == 2, result.stdout[-3000:]
    assert "running then:" in result.stdout and "mpi_hang_worker.py" in result.stdout
    time.sleep(1)  # the ranks run under Open MPI's daemon, not in mpirun's process group: none may be left
    left = subprocess.run(["pgrep", "-f", "mpi_hang_worker.py"], capture_output=True, text=True).stdout
    assert not left.split(), f"ranks left running: {left}"
