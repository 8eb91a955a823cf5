"""A job ended by an orchestra error prints its message once, without a traceback per rank."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_collective_error_worker.py")
MESSAGE = "orchestra: MissingBuildError: no usable build of Model.__call__: build it first"


@pytest.mark.mpi
@pytest.mark.parametrize("failing", ["all", "one", "alone"])
def test_an_error_of_every_rank_is_reported_once(failing):
    result = run_mpi(3, WORKER, failing, timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert output.count(MESSAGE) == 1, output[-3000:]
    assert "Traceback" not in output, output[-3000:]


@pytest.mark.mpi
def test_the_same_exception_on_every_rank_is_one_traceback_from_rank_0():
    result = run_mpi(3, WORKER, "bug", timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert output.count("KeyError: \"no such field in the model's state: 'vorticity'\"") == 1, output[-3000:]
    assert output.count("Traceback") == 1 and "rank 0: Traceback" in output, output[-3000:]
