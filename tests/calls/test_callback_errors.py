"""An exception in a callback ends the orchestrated call with it, and an MPI job with its one message (issue 54).

ctypes cannot pass an exception through the compiled program: it used to
print ``Exception ignored on calling ctypes callback function`` and carry on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orchestra import DaceConfig, DaCeOrchestration
from tests.calls.callback_error_model import MESSAGE, run
from tests.mpi_launcher import run_mpi


def config(mode: DaCeOrchestration, cache: Path) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache)


def test_the_callbacks_exception_is_raised_from_the_orchestrated_call(tmp_path):
    with pytest.raises(ValueError, match=MESSAGE) as python_mode:
        run(config(DaCeOrchestration.Python, tmp_path), failing=True)
    with pytest.raises(ValueError, match=MESSAGE) as orchestrated:
        run(config(DaCeOrchestration.BuildAndRun, tmp_path), failing=True)
    assert type(orchestrated.value) is type(python_mode.value)
    notes = " ".join(getattr(orchestrated.value, "__notes__", []))
    assert "raised in the callback self.halo.update" in notes


def test_later_callbacks_of_the_failed_call_do_not_run_and_the_next_call_is_clean(tmp_path):
    from tests.calls.callback_error_model import Halo, Model

    halo = Halo(failing=True)
    model = Model(config(DaCeOrchestration.BuildAndRun, tmp_path), halo)
    q = np.ones(4)
    with pytest.raises(ValueError, match=MESSAGE):
        model(q)
    assert halo.after == 0  # Python mode stops at the raise: the later callback never runs
    halo.failing = False
    model(q)  # the error does not stay pending into the next call
    assert halo.after == 1


def failed_job_output(tmp_path: Path, n_ranks: int, failing: str) -> str:
    """The output of the MPI worker whose callback raises on rank ``failing`` (or ``all``); the job must fail."""
    worker = Path(__file__).with_name("mpi_callback_error_worker.py")
    result = run_mpi(n_ranks, worker, str(tmp_path / "cache"), failing, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "Exception ignored" not in output, output[-3000:]
    return output


@pytest.mark.mpi
def test_a_callback_raising_on_one_of_six_ranks_ends_the_job_with_its_message(tmp_path):
    output = failed_job_output(tmp_path, 6, "4")
    assert output.count(MESSAGE) == 1, output[-3000:]
    assert f"rank 4: ValueError: {MESSAGE}" in output and "rank 4 finished" not in output, output[-3000:]


@pytest.mark.mpi
def test_a_callback_raising_on_every_rank_ends_the_job_with_one_message(tmp_path):
    """Rank 0 reports at once, the others wait before reporting (orchestra.comm.abort): one traceback, not four."""
    output = failed_job_output(tmp_path, 4, "all")
    assert output.count(MESSAGE) == 1, output[-3000:]
    assert output.count("Traceback (most recent call last)") == 1, output[-3000:]
    assert f"rank 0: ValueError: {MESSAGE}" in output and "finished" not in output, output[-3000:]
