"""Record one call of an orchestrated program, replay it in another process, bit for bit.

A small model (two stencils, a halo-exchange-like callback that changes an
array in place, a callback returning a float) is recorded on its second
call (``DaceConfig.record``, as ``ORCHESTRA_RECORD`` sets it). The model is
then gone: ``python -m orchestra.cli replay DIR --check`` runs in a separate
process, calls the library with the recorded arrays and replayed callbacks,
and must find every array equal to the recording; the recorded ``after``
arrays must equal what ``Python`` mode computes for the same two calls.
Recording must not change the model's results. A damaged recording (a
truncated file, an edited manifest, a missing build) is refused with one
error line and exit status 2; a replay whose result differs exits 1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate
from orchestra.observe.replay.recording import MANIFEST_NAME, sha256

FloatField = Field[np.float64]
SHAPE = (8, 7, 3)
CALLS = 3  # the second is recorded


def diffuse(q: FloatField, out: FloatField, k: float):
    with computation(PARALLEL), interval(...):
        out = q + k * (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q)


def scale(q: FloatField, out: FloatField, f: float):
    with computation(PARALLEL), interval(...):
        q = out * f


class Halo:
    """A periodic halo exchange (in place) and a getter whose value changes every call."""

    def __init__(self) -> None:
        self.calls = 0

    @dace_inhibitor
    def exchange(self, q):
        self.calls += 1
        a = np.asarray(q)
        a[0, :, :] = a[-2, :, :]
        a[-1, :, :] = a[1, :, :]
        a[:, 0, :] = a[:, -2, :]
        a[:, -1, :] = a[:, 1, :]

    @dace_inhibitor
    def factor(self) -> float:
        return 1.0 - 0.01 * self.calls


class Model:
    def __init__(self, config: DaceConfig) -> None:
        domain = (SHAPE[0] - 2, SHAPE[1] - 2, SHAPE[2])
        self.diffuse = FrozenStencil(diffuse, backend=config.backend, origin=(1, 1, 0), domain=domain)
        self.scale = FrozenStencil(scale, backend=config.backend, origin=(1, 1, 0), domain=domain)
        self.halo = Halo()
        self.tmp = np.zeros(SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self, q, k: float):
        self.halo.exchange(q)
        self.diffuse(q, self.tmp, k)
        f: float = self.halo.factor()
        self.scale(q, self.tmp, f)


def _run(mode: str, cache: Path, record: Path | None = None, calls: int = CALLS) -> list[tuple[np.ndarray, np.ndarray]]:
    """(q, tmp) after each call."""
    config = DaceConfig(backend="dace:cpu", orchestration=mode, cache_root=cache, record=record)
    model = Model(config)
    q = np.random.default_rng(7).random(SHAPE)
    states = []
    for _ in range(calls):
        model(q, 0.1)
        states.append((q.copy(), model.tmp.copy()))
    return states


def _replay(folder: Path, *options: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "orchestra.cli", "replay", str(folder), *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(recording folder, cache root, results with recording, results without, Python mode results)."""
    cache = tmp_path_factory.mktemp("cache")
    records = tmp_path_factory.mktemp("records")
    plain = _run("BuildAndRun", cache)
    with_recording = _run("BuildAndRun", cache, record=records)
    python = _run("Python", cache, calls=2)
    return records / "Model.__call__", cache, with_recording, plain, python


def test_recording_is_complete_and_atomic(recorded):
    folder, _cache, *_ = recorded
    assert sorted(p.name for p in folder.parent.iterdir()) == ["Model.__call__"]  # no temporary folder left
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["format"] == 1 and manifest["program"] == "Model.__call__" and manifest["call"] == 2
    assert Path(manifest["build"]["entry"]).is_dir() and manifest["build"]["library"].endswith(".so")
    assert set(manifest["versions"]) >= {"orchestra", "dace", "gt4py"}
    kinds = {a["name"]: a["kind"] for a in manifest["arguments"]}
    assert kinds["q"] == "array" and kinds["k"] == "scalar"
    assert sorted(n for n, kind in kinds.items() if kind == "callback") == ["self_halo_exchange", "self_halo_factor"]
    exchange, factor = manifest["callbacks"]
    assert exchange["callback"] == "self_halo_exchange" and "array:q" in exchange["changed"]
    assert factor["returned"] == {"kind": "number", "dtype": "float64", "python": "float", "value": 1.0 - 0.01 * 2}
    for relative, digest in manifest["files"].items():
        assert sha256(folder / relative) == digest


def test_recording_leaves_results_bitwise_unchanged(recorded):
    _folder, _cache, with_recording, plain, _python = recorded
    for (q, tmp), (q_ref, tmp_ref) in zip(with_recording, plain):
        assert _bits_equal(q, q_ref) and _bits_equal(tmp, tmp_ref)


def test_recorded_call_equals_python_mode(recorded):
    folder, _cache, _with, _plain, python = recorded
    (q1, tmp1), (q2, tmp2) = python
    assert _bits_equal(np.load(folder / "before/q.npy"), q1)
    assert _bits_equal(np.load(folder / "before/__g_self_tmp.npy"), tmp1)
    assert _bits_equal(np.load(folder / "after/q.npy"), q2)
    assert _bits_equal(np.load(folder / "after/__g_self_tmp.npy"), tmp2)


def test_replay_in_another_process_matches_bit_for_bit(recorded):
    folder, *_ = recorded
    done = _replay(folder, "--check", "--repeat", "5")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 call(s)" in done.stdout and "bit for bit" in done.stdout


def _damaged_copy(folder: Path, target: Path) -> Path:
    copy = target / folder.name
    shutil.copytree(folder, copy)
    return copy


def _refused(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orchestra: error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_a_truncated_array_is_refused(recorded, tmp_path):
    copy = _damaged_copy(recorded[0], tmp_path)
    path = copy / "after/q.npy"
    path.write_bytes(path.read_bytes()[:100])
    _refused(_replay(copy, "--check"), "after/q.npy", "sha256")


def test_a_missing_file_is_refused(recorded, tmp_path):
    copy = _damaged_copy(recorded[0], tmp_path)
    (copy / "before/q.npy").unlink()
    _refused(_replay(copy), "before/q.npy", "missing")


def test_an_edited_manifest_is_refused(recorded, tmp_path):
    copy = _damaged_copy(recorded[0], tmp_path)
    manifest = json.loads((copy / MANIFEST_NAME).read_text())
    manifest["format"] = 99
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    _refused(_replay(copy), "format version 99")
    manifest["format"] = 1
    next(a for a in manifest["arguments"] if a["name"] == "q")["shape"] = [8, 7, 4]
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    _refused(_replay(copy), "q.npy", "edited")
    del manifest["build"]
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    _refused(_replay(copy), "build")


def test_a_missing_build_is_refused(recorded, tmp_path):
    _refused(_replay(recorded[0], "--root", str(tmp_path)), "not usable in the cache", "--root")


def test_a_different_result_exits_1(recorded, tmp_path):
    copy = _damaged_copy(recorded[0], tmp_path)
    after = np.load(copy / "after/q.npy")
    after[3, 2, 1] += 1.0
    np.save(copy / "after/q.npy", after)
    manifest = json.loads((copy / MANIFEST_NAME).read_text())
    manifest["files"]["after/q.npy"] = sha256(copy / "after/q.npy")
    (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    done = _replay(copy, "--check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "q: 1 of 168 elements differ, first at [3, 2, 1]" in done.stdout


def test_a_second_recording_keeps_the_first(recorded, tmp_path):
    _folder, cache, *_ = recorded
    records = tmp_path / "records"
    _run("BuildAndRun", cache, record=records)
    first = records / "Model.__call__"
    manifest = (first / MANIFEST_NAME).read_bytes()
    _run("BuildAndRun", cache, record=records)
    assert (first / MANIFEST_NAME).read_bytes() == manifest  # not replaced
    second = records / "Model.__call__.2"
    assert json.loads((second / MANIFEST_NAME).read_text())["program"] == "Model.__call__"
    assert _replay(second, "--check").returncode == 0
