"""Processes of the building rank lower stencils beside its parse, and the program stays the same.

:func:`orchestra.pipeline.lowering_processes.lowering_processes` starts Python
processes that lower a share of a build's stencils into gt4py's cache. Here
they do it with no parse running (so what they lowered is certain), a build
then finds every stencil lowered and generates the code a cold build
generates; stopping them while they start ends them at once; a stencil they
could not make again is left to the builder. How many by default follows
from the cores the node's ranks leave idle (the MPI side is in
``tests/distributed/test_mpi_node_share.py``).
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from gt4py.cartesian import config as gt_config
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.pipeline import lowering_processes as processes_module
from orchestra.distributed.helper_processes import default_process_count
from orchestra.pipeline.lowering_processes import lowering_processes
from tests.mpi_launcher import REPO_ROOT

FloatField = Field[np.float64]
SHAPE = (6, 6, 3)
DOMAIN = (5, 5, 3)
WEIGHTS = ((0.1, 0.2), (0.3, 0.4))


def blend(a: FloatField, b: FloatField, out: FloatField):
    from __externals__ import W

    with computation(PARALLEL), interval(...):
        out = W * a + (1.0 - W) * b[1, 0, 0]


def _stencil(weight: float) -> FrozenStencil:
    return FrozenStencil(blend, backend="dace:cpu", origin=(0, 0, 0), domain=DOMAIN, externals={"W": weight})


class Stage:
    def __init__(self, config: DaceConfig, weights: tuple) -> None:
        self.stencils = [_stencil(weight) for weight in weights]
        orchestrate(obj=self, config=config)

    def __call__(self, a, b, out):
        self.stencils[0](a, b, out)
        self.stencils[1](out, b, a)


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.first = Stage(config, WEIGHTS[0])
        self.second = Stage(config, WEIGHTS[1])
        orchestrate(obj=self, config=config)

    def __call__(self, a, b, out):
        self.first(a, b, out)
        self.second(a, b, out)

    def stencils(self) -> tuple:
        return (*self.first.stencils, *self.second.stencils)


def _expected(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """What Model computes, in numpy."""
    ni, nj, _ = DOMAIN
    for first, second in WEIGHTS:
        out[:ni, :nj] = first * a[:ni, :nj] + (1.0 - first) * b[1:ni + 1, :nj]
        a[:ni, :nj] = second * out[:ni, :nj] + (1.0 - second) * b[1:ni + 1, :nj]


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.random(SHAPE) for _ in range(3)]


def _gt_cache(monkeypatch, folder: Path) -> None:
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(folder))


def _build_and_run(cache_root: Path, caplog) -> tuple[list[np.ndarray], str]:
    """Build ``Model`` with no process of its own; its arrays after one call and the parse's log line."""
    caplog.clear()
    model = Model(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache_root,
                             build_processes=0))
    arrays = _inputs()
    with caplog.at_level(logging.INFO, logger="orchestra"):
        model(*arrays)
    parsed = [record.getMessage() for record in caplog.records if "parsed in" in record.getMessage()]
    assert len(parsed) == 1, parsed
    return arrays, parsed[0]


def _generated_code(cache_root: Path) -> dict[str, str]:
    """The generated C++, gt4py's address-named symbols (``__k_140711570045648``) normalized."""
    return {
        path.name: re.sub(r"_\d{9,}", "_<id>", path.read_text())
        for path in sorted(cache_root.glob("Model.__call__/*/src/cpu/*.cpp"))
    }


def test_processes_lower_the_stencils_and_the_build_that_finds_them_is_a_cold_builds_program(
    tmp_path, monkeypatch, caplog
):
    _gt_cache(monkeypatch, tmp_path / "gt_lowered")
    stencils = Model(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun",
                                cache_root=tmp_path / "unused")).stencils()
    assert not any(stencil.is_lowered() for stencil in stencils)
    with lowering_processes(stencils, 2) as helpers:
        # 4 groups (one content id each): the builder would take one, so 2 processes, sharing all 4
        assert [process.stencils for process in helpers.processes] == [2, 2]
        assert helpers.summary() == "2 processes lowering beside the builder (4 stencils to lower)"
        deadline = time.monotonic() + 300
        while not all(stencil.is_lowered() for stencil in stencils):
            assert time.monotonic() < deadline, "the processes did not lower the stencils within 300 s"
            assert all(process.popen.poll() in (None, 0) for process in helpers.processes)
            time.sleep(0.5)
    assert helpers.processes == []  # stopped and waited for

    found, found_line = _build_and_run(tmp_path / "found", caplog)
    assert "stencils: 4 of 4 found lowered, 0 lowered here" in found_line

    _gt_cache(monkeypatch, tmp_path / "gt_cold")
    cold, cold_line = _build_and_run(tmp_path / "cold", caplog)
    assert "stencils: 0 of 4 found lowered, 4 lowered here" in cold_line

    expected = _inputs()
    _expected(*expected)
    for got_found, got_cold, want in zip(found, cold, expected):
        np.testing.assert_array_equal(got_found, got_cold)
        np.testing.assert_allclose(got_found, want, rtol=1e-14)
    found_code, cold_code = _generated_code(tmp_path / "found"), _generated_code(tmp_path / "cold")
    assert found_code and found_code == cold_code


def test_a_build_with_processes_says_so_and_computes_the_same(tmp_path, monkeypatch, caplog):
    _gt_cache(monkeypatch, tmp_path / "gt")
    model = Model(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path / "cache",
                             build_processes=1))
    arrays = _inputs()
    with caplog.at_level(logging.INFO, logger="orchestra"):
        model(*arrays)
    assert any("1 process lowering beside the builder (4 stencils to lower)" in record.getMessage()
               for record in caplog.records)
    expected = _inputs()
    _expected(*expected)
    for got, want in zip(arrays, expected):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    assert all(stencil.is_lowered() for stencil in model.stencils())


def test_processes_stopped_while_they_start_end_at_once(tmp_path, monkeypatch):
    _gt_cache(monkeypatch, tmp_path / "gt")
    stencils = tuple(_stencil(weight) for weight in (0.5, 0.6, 0.7))
    start = time.monotonic()
    with lowering_processes(stencils, 2) as helpers:
        started = list(helpers.processes)
        assert len(started) == 2
    assert time.monotonic() - start < 15  # not the minutes of lowering 3 stencils on 2 cores
    assert all(process.popen.returncode in (0, -15) for process in started)  # exited, or ended by SIGTERM


def test_a_stencil_other_processes_cannot_make_again_is_left_to_the_builder(tmp_path, monkeypatch, caplog):
    _gt_cache(monkeypatch, tmp_path / "gt")

    def local_blend(a: FloatField, b: FloatField, out: FloatField):  # a local function does not pickle
        with computation(PARALLEL), interval(...):
            out = a + b

    local = FrozenStencil(local_blend, backend="dace:cpu", origin=(0, 0, 0), domain=DOMAIN)
    with caplog.at_level(logging.DEBUG, logger="orchestra"):
        assert processes_module._job(local) is None
    assert any("lowered by the builder only" in record.getMessage() for record in caplog.records)
    assert processes_module._job(_stencil(0.9)) is not None
    with lowering_processes((local, local), 2) as helpers:
        assert helpers.processes == []  # nothing another process could lower


_PRINT_ID = """
import sys
{imports}
from tests.pipeline.test_lowering_processes import _stencil
print("ID", _stencil(0.25).build_identity()["gt_id"])
"""


def test_a_stencil_has_one_gt4py_id_whichever_of_gt4py_and_orchestra_is_imported_first(monkeypatch):
    """gt4py hashes its C++ flags variable as read at import; orchestra adds flags to it (a process's
    lowering processes import orchestra first, a model may import gt4py first)."""
    monkeypatch.delenv("GT4PY_EXTRA_COMPILE_ARGS", raising=False)
    ids = set()
    for imports in ("import gt4py.cartesian.config\nimport orchestra", "import orchestra\nimport gt4py.cartesian.config"):
        result = subprocess.run([sys.executable, "-c", _PRINT_ID.format(imports=imports)], cwd=REPO_ROOT,
                                capture_output=True, text=True, timeout=120, check=True)
        ids.update(re.findall(r"^ID (\w+)$", result.stdout, re.MULTILINE))
    assert len(ids) == 1, ids


@pytest.mark.parametrize(
    "cores, ranks, builders, expected",
    [(2, 1, 1, 1), (2, 2, 1, 0), (2, 6, 1, 0), (16, 6, 1, 10), (128, 6, 4, 30), (8, 1, 0, 7), (1, 1, 1, 0)],
)
def test_the_default_is_the_idle_cores_shared_among_the_nodes_builders(cores, ranks, builders, expected):
    assert default_process_count(cores, ranks, builders) == expected


def test_processes_that_cannot_start_leave_the_build_to_the_builder(tmp_path, monkeypatch, caplog):
    _gt_cache(monkeypatch, tmp_path / "gt")
    stencils = tuple(_stencil(weight) for weight in (0.5, 0.6, 0.7))

    def unpicklable(gpu):
        raise TypeError("cannot pickle this")

    monkeypatch.setattr(processes_module, "helper_settings", unpicklable)
    with caplog.at_level(logging.DEBUG, logger="orchestra"), lowering_processes(stencils, 2) as helpers:
        assert helpers.processes == [] and helpers.summary() == ""
    assert any("not started (TypeError: cannot pickle this)" in record.getMessage() for record in caplog.records)
