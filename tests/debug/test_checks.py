"""Real builds with checks: reports, exit status, progress order, trace values, unchanged results.

Two builds of the test model are shared by the module (one without checks,
one with every check); a failing check ends its process, so those runs
happen in a subprocess (``tests/debug/worker.py``) that loads the same build.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from orchestra import DaceConfig
from orchestra.passes.debug import DEBUG_EXIT_CODE, DebugChecks
from tests.debug.programs import (
    ALL_CHECKS,
    BAD_POINT,
    DT,
    N_STEPS,
    STENCIL_ORDER,
    TRACE_POINT,
    WRITES,
    ThicknessModel,
    inputs,
    run,
)
from tests.mpi_launcher import REPO_ROOT, run_mpi

BACKEND = "dace:cpu"


def _config(cache_root, checks: str) -> DaceConfig:
    return DaceConfig(
        None, backend=BACKEND, orchestration="BuildAndRun", cache_root=cache_root,
        debug_checks=DebugChecks.parse(checks),
    )


@pytest.fixture(scope="module")
def checked_model(cache_root):
    """The model built with every check (the build lands in ``cache_root``)."""
    model = ThicknessModel(_config(cache_root, ALL_CHECKS))
    run(model, inputs("clean", BACKEND))  # builds and loads
    return model


def _worker(cache_root, checks: str, case: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "tests.debug.worker", str(cache_root), checks, case],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


def _report(stderr: str) -> dict[str, str]:
    """The fields of the one failure report in ``stderr``."""
    assert stderr.count("CHECK FAILED") == 1, stderr[-4000:]
    report = stderr[stderr.index("[orchestra debug] CHECK FAILED") :]
    fields = {"check": report.splitlines()[0].split("CHECK FAILED: ")[1]}
    for line in report.splitlines()[1:]:
        key, _, value = line.strip().partition(":")
        if key in ("program", "kernel", "state", "field", "index", "value"):
            fields[key] = value.strip()
    return fields


def test_nan_from_a_division_by_zero(cache_root, checked_model):
    result = _worker(cache_root, ALL_CHECKS, "nan")
    assert result.returncode == DEBUG_EXIT_CODE, result.stderr[-4000:]
    report = _report(result.stderr)
    assert report["check"] == "NaN/Inf"
    assert "ThicknessModel___call__" in report["program"]
    assert re.match(r"k1/3 divide__\w+ \(stencil divide\), execution #1$", report["kernel"]), report
    assert report["field"] == "ratio"
    assert report["index"] == str(BAD_POINT)
    assert report["value"].lower() == "nan"
    assert "1 of 90 written points are NaN or Inf" in result.stderr
    assert "finished" not in result.stdout
    # Python's own buffered output written before the failure is not lost
    assert "calling the model" in result.stdout


def test_negative_thickness(cache_root, checked_model):
    result = _worker(cache_root, ALL_CHECKS, "negative")
    assert result.returncode == DEBUG_EXIT_CODE, result.stderr[-4000:]
    report = _report(result.stderr)
    assert report["check"] == "value below threshold"
    assert re.match(r"k2/3 update_thickness__\w+ \(stencil update_thickness\), execution #2$", report["kernel"])
    assert report["field"] == "h"
    assert report["index"] == str(BAD_POINT)
    h0 = 2.0 + 0.1 * np.cos(BAD_POINT[0] - BAD_POINT[1])
    assert float(report["value"]) == h0 - DT * (50.0 / (1.0 + 0.01 * BAD_POINT[0] * BAD_POINT[1] + 0.1 * BAD_POINT[2]))
    assert "below the threshold 0" in result.stderr


def test_clean_run_with_every_check_finishes(cache_root, checked_model):
    result = _worker(cache_root, ALL_CHECKS, "clean")
    assert result.returncode == 0, result.stderr[-4000:]
    assert "finished" in result.stdout and "CHECK FAILED" not in result.stderr


def test_progress_lists_kernels_in_execution_order(checked_model, capfd):
    capfd.readouterr()
    run(checked_model, inputs("clean", BACKEND))
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if "[orchestra progress]" in line]
    stencils = [re.search(r"\(stencil (\w+)\)$", line).group(1) for line in lines]
    assert stencils == list(STENCIL_ORDER) * N_STEPS
    numbers = [int(re.search(r" #(\d+) ", line).group(1)) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + len(lines)))  # one sequence number per kernel run
    assert all("ThicknessModel___call__" in line for line in lines)
    assert [re.search(r" k(\d)/3 ", line).group(1) for line in lines] == ["1", "2", "3"] * N_STEPS


def test_trace_follows_a_point_like_python_mode(checked_model, capfd):
    capfd.readouterr()
    run(checked_model, inputs("clean", BACKEND))
    err = capfd.readouterr().err
    traced = [
        (m.group(1), m.group(2), float(m.group(4)))
        for m in re.finditer(r"\[orchestra trace\] .*\(stencil (\w+)\) (\w+)\(([\d, ]+)\) = (\S+)", err)
    ]
    assert all(f"({', '.join(map(str, TRACE_POINT))})" in line for line in err.splitlines() if "trace]" in line)
    # Python mode, stencil by stencil (numpy backend), recording the point after each call
    python_model = ThicknessModel(DaceConfig(None, backend="numpy", orchestration="Python"))
    arrays = inputs("clean", "numpy")
    expected = []
    calls = {
        "divide": lambda: python_model.divide(arrays["num"], arrays["den"], arrays["ratio"]),
        "update_thickness": lambda: python_model.update(arrays["h"], arrays["ratio"], DT),
        "smooth": lambda: python_model.smooth(arrays["h"], arrays["out"]),
    }
    for _ in range(N_STEPS):
        for stencil in STENCIL_ORDER:
            calls[stencil]()
            field = WRITES[stencil]
            expected.append((stencil, field, float(np.asarray(arrays[field])[TRACE_POINT])))
    assert traced == expected


def test_results_unchanged_when_no_check_fires(cache_root, checked_model, capfd):
    plain = ThicknessModel(_config(cache_root, ""))
    reference = run(plain, inputs("clean", BACKEND))
    assert "[orchestra" not in capfd.readouterr().err.replace("[orchestra] ", "")
    checked = run(checked_model, inputs("clean", BACKEND))
    for name in reference:
        assert np.array_equal(checked[name], reference[name]), name
        assert checked[name].tobytes() == reference[name].tobytes(), name
    # a debug build is a separate cache entry
    entries = [path for path in cache_root.rglob("COMPLETE")]
    assert len(entries) >= 2


@pytest.mark.mpi
def test_failing_check_ends_the_mpi_job(cache_root, checked_model):
    start = time.monotonic()
    result = run_mpi(
        2, REPO_ROOT / "tests" / "debug" / "worker.py", str(cache_root), ALL_CHECKS, "nan", "--mpi",
        timeout=120, check=False,
    )
    elapsed = time.monotonic() - start
    assert result.returncode == DEBUG_EXIT_CODE, result.stdout[-4000:]  # MPI_Abort(86) via mpi4py
    assert "CHECK FAILED: NaN/Inf" in result.stdout, result.stdout[-4000:]
    assert "rank 0: finished" not in result.stdout and "rank 1: finished" not in result.stdout
    assert elapsed < 90, f"the job took {elapsed:.0f} s to end"
