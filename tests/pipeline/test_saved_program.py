"""The built program and its signature saved by a forked child during code generation (orchestra.pipeline.saved_program).

Real DaCe programs compiled by orchestra's compile stage: the saved program
is the text DaCe saves and loads back; the child saves the program as code
generation leaves it (the parent's program after the build, compared as
text); a failing save fails the build saying what failed; with
``ORCHESTRA_VALIDATE_BESIDE=0`` the program is saved in place.
"""

from __future__ import annotations

import gzip
import os

import dace
import numpy as np
import pytest

from orchestra.errors import BuildError
from orchestra.pipeline import saved_program, stages
from orchestra.pipeline.forked_child import VARIABLE
from orchestra.pipeline.saved_program import PROGRAM_FILE, SIGNATURE_FILE, PendingSave, save_sdfg


@dace.program
def _axpy(x: dace.float64[20], y: dace.float64[20], a: dace.float64):
    for i in dace.map[0:20]:
        y[i] = a * x[i] + y[i]


@dace.program
def _with_transient(x: dace.float64[20], y: dace.float64[20]):
    tmp = np.ndarray([20], dtype=np.float64)  # storage left to code generation (Default until then)
    for i in dace.map[0:20]:
        tmp[i] = x[i] * 2.0
    for i in dace.map[0:20]:
        y[i] = tmp[i] + np.exp(x[i])


def test_the_saved_program_is_the_text_dace_saves_and_loads_back(tmp_path):
    sdfg = _axpy.to_sdfg()
    sdfg.save(str(tmp_path / "dace.sdfgz"), hash=False, compress=True)
    save_sdfg(sdfg, tmp_path / "orchestra.sdfgz")
    ours = gzip.decompress((tmp_path / "orchestra.sdfgz").read_bytes())
    assert ours == gzip.decompress((tmp_path / "dace.sdfgz").read_bytes())
    loaded = dace.SDFG.from_file(str(tmp_path / "orchestra.sdfgz"))
    x, y = np.arange(20.0), np.ones(20)
    loaded(x=x, y=y, a=2.0)
    assert np.array_equal(y, 2.0 * np.arange(20.0) + 1.0)


def _recording_saves(monkeypatch, tmp_path) -> list:
    """Where each save ran: the process ids, read back from files the saving process writes."""
    real = saved_program.save_program
    record = tmp_path / "saved_by"

    def save_program(sdfg, folder) -> None:
        with open(record, "a") as file:
            file.write(f"{os.getpid()}\n")
        real(sdfg, folder)

    monkeypatch.setattr(saved_program, "save_program", save_program)
    return [record]


def test_a_forked_child_saves_the_program_as_code_generation_leaves_it(tmp_path, monkeypatch):
    from dace import serialize

    record = _recording_saves(monkeypatch, tmp_path)[0]
    sdfg = _with_transient.to_sdfg()
    before = serialize.dumps(sdfg.to_json(hash=False))
    compiled = stages.compile_program(stages.OptimizedProgram(sdfg, {}, 0.0), tmp_path / "build")
    after = serialize.dumps(sdfg.to_json(hash=False))  # the parent's program, changed by code generation
    assert after != before  # (so the comparison below can fail)
    saved = gzip.decompress((compiled.folder / PROGRAM_FILE).read_bytes()).decode()
    assert saved == after
    assert [int(pid) for pid in record.read_text().split()] != [os.getpid()]  # once, by another process
    assert len(record.read_text().split()) == 1
    loaded = stages.load(compiled.folder).compiled_sdfg
    x, y = np.linspace(0.0, 1.0, 20).copy(), np.zeros(20)
    loaded(x=x, y=y)
    assert np.array_equal(y, x * 2.0 + np.exp(x))
    assert (compiled.folder / SIGNATURE_FILE).is_file()


def test_without_forking_the_program_is_saved_in_place(tmp_path, monkeypatch):
    monkeypatch.setenv(VARIABLE, "0")
    record = _recording_saves(monkeypatch, tmp_path)[0]
    compiled = stages.compile_program(stages.OptimizedProgram(_axpy.to_sdfg(), {}, 0.0), tmp_path / "build")
    assert record.read_text().split() == [str(os.getpid())]
    assert (compiled.folder / PROGRAM_FILE).is_file() and (compiled.folder / SIGNATURE_FILE).is_file()


@pytest.mark.parametrize("fork", ["1", "0"])
def test_a_failing_save_fails_the_build_saying_what_failed(tmp_path, monkeypatch, fork):
    monkeypatch.setenv(VARIABLE, fork)

    def save_program(sdfg, folder) -> None:
        raise OSError(f"no space left on the device holding {folder}")

    monkeypatch.setattr(saved_program, "save_program", save_program)
    with pytest.raises(BuildError, match="saving the program and its signature in .* failed: no space left"):
        stages.compile_program(stages.OptimizedProgram(_axpy.to_sdfg(), {}, 0.0), tmp_path / "build")


def test_a_save_code_generation_never_started_is_done_when_waited_for(tmp_path):
    sdfg = _axpy.to_sdfg()
    pending = PendingSave(sdfg, tmp_path)
    pending.wait()
    assert dace.SDFG.from_file(str(tmp_path / PROGRAM_FILE)).name == sdfg.name
    pending.abandon()  # nothing left to stop


def test_a_save_whose_process_is_killed_fails_the_build_saying_how_to_save_in_place(tmp_path, monkeypatch):
    import signal

    def save_program(sdfg, folder) -> None:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would

    monkeypatch.setattr(saved_program, "save_program", save_program)
    with pytest.raises(BuildError, match=f"killed by signal {int(signal.SIGKILL)}.*{VARIABLE}=0 to save in place"):
        stages.compile_program(stages.OptimizedProgram(_axpy.to_sdfg(), {}, 0.0), tmp_path / "build")
