"""A job ended by an orchestra error prints its message once, without a traceback per rank."""

from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_collective_error_worker.py")
MESSAGE = "orchestra: MissingBuildError: no usable build of Model.__call__: build it first"


@pytest.mark.mpi
@pytest.mark.parametrize("failing", ["all", "one"])
def test_a_collective_error_is_reported_once(failing):
    result = run_mpi(3, WORKER, failing, timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert output.count(MESSAGE) == 1, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
