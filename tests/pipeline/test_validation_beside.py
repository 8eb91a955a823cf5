"""The optimized program validated in a forked child while the builder goes on (orchestra.pipeline.validation_beside).

Real DaCe validation of real SDFGs: a valid one passes, an invalid one (no
state) raises the message validating in place raises; the child validates
the program as it was at the fork, whatever the parent does to it after; a
child that is killed or sleeps without end fails the build saying so (a busy
one is waited for); with ``ORCHESTRA_VALIDATE_BESIDE=0`` nothing is forked. A whole build whose
optimized program is invalid fails with that message and compiles nothing.
"""

from __future__ import annotations

import os
import time

import dace
import pytest

from orchestra.errors import BuildError
from orchestra.pipeline import forked_child
from orchestra.pipeline.validation_beside import validate_beside, validate_in_place


def _valid_sdfg() -> dace.SDFG:
    @dace.program
    def double(a: dace.float64[8], b: dace.float64[8]):
        b[:] = 2.0 * a

    return double.to_sdfg(simplify=False)


def _no_child_left(pending) -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(pending.child, os.WNOHANG)  # reaped: not even a zombie is left


def test_a_valid_program_passes_and_the_child_is_reaped():
    pending = validate_beside(_valid_sdfg(), "double")
    assert pending.child is not None
    pending.verdict()
    _no_child_left(pending)
    pending.verdict()  # a second verdict is the first one's


def test_an_invalid_program_raises_what_validating_in_place_raises():
    with pytest.raises(BuildError) as in_place:
        validate_in_place(dace.SDFG("no_states"), "no_states")
    pending = validate_beside(dace.SDFG("no_states"), "no_states")
    with pytest.raises(BuildError) as beside:
        pending.verdict()
    assert str(beside.value) == str(in_place.value)
    assert str(beside.value).startswith("optimizing no_states failed: ") and "at least one state" in str(beside.value)


def test_the_child_validates_the_program_as_it_was_at_the_fork():
    sdfg = _valid_sdfg()
    pending = validate_beside(sdfg, "double")
    for state in list(sdfg.states()):  # the parent's code generation may change its program meanwhile
        sdfg.remove_node(state)
    pending.verdict()  # the snapshot was valid
    with pytest.raises(BuildError):
        validate_in_place(sdfg, "double")


class _Program:
    """Stands in for an SDFG: ``validate`` misbehaves in the child only, and counts calls in this process."""

    def __init__(self, in_child) -> None:
        self.parent, self.in_child, self.validated_here = os.getpid(), in_child, 0

    def validate(self) -> None:
        if os.getpid() != self.parent:
            self.in_child()
        else:
            self.validated_here += 1


def test_a_stalled_child_is_killed_and_the_build_fails_saying_how_to_validate_in_place(monkeypatch):
    monkeypatch.setattr(forked_child, "STALLED_SECONDS", 2.0)
    program = _Program(lambda: time.sleep(600))  # asleep: its CPU time stops, as on a lock held at the fork
    start = time.monotonic()
    pending = validate_beside(program, "stalled")
    assert pending.child is not None
    with pytest.raises(BuildError, match=r"validating stalled in a forked process failed \(it slept 2 s without "
                                         r"using the CPU.*ORCHESTRA_VALIDATE_BESIDE=0"):
        pending.verdict()
    assert time.monotonic() - start < 30 and program.validated_here == 0
    _no_child_left(pending)


def test_a_busy_child_is_waited_for_however_long_it_takes(monkeypatch):
    monkeypatch.setattr(forked_child, "STALLED_SECONDS", 1.0)

    def busy() -> None:
        end = time.monotonic() + 3.0
        while time.monotonic() < end:  # using the CPU: not stuck, however long
            pass

    validate_beside(_Program(busy), "busy").verdict()


def test_a_child_killed_without_a_report_fails_the_build_saying_so():
    program = _Program(lambda: os.kill(os.getpid(), 9))
    with pytest.raises(BuildError, match=r"validating killed in a forked process failed \(the process was killed "
                                         r"by signal 9"):
        validate_beside(program, "killed").verdict()
    assert program.validated_here == 0


def test_an_error_whose_message_reads_like_the_valid_report_is_still_an_error():
    def raising() -> None:
        raise ValueError("V")

    with pytest.raises(BuildError, match="optimizing odd failed: V$"):
        validate_beside(_Program(raising), "odd").verdict()


def test_switched_off_nothing_is_forked(monkeypatch):
    monkeypatch.setenv(forked_child.VARIABLE, "0")
    program = _Program(lambda: None)
    pending = validate_beside(program, "here")
    assert pending.child is None and program.validated_here == 1
    with pytest.raises(BuildError, match="optimizing no_states failed"):
        validate_beside(dace.SDFG("no_states"), "no_states")


def test_a_meaningless_setting_is_one_clear_error(monkeypatch):
    from orchestra.errors import ConfigurationError

    monkeypatch.setenv(forked_child.VARIABLE, "sometimes")
    with pytest.raises(ConfigurationError, match="ORCHESTRA_VALIDATE_BESIDE='sometimes': give 1 .* or 0"):
        validate_beside(_valid_sdfg(), "double")


def test_copies_share_one_verdict_and_a_pickled_validation_is_its_verdict():
    """An optimized program deep-copied to be compiled twice: one child, one pipe, closed once."""
    import copy
    import pickle

    pending = validate_beside(dace.SDFG("no_states"), "broken")
    assert copy.deepcopy(pending) is pending and copy.copy(pending) is pending
    for _ in range(2):
        with pytest.raises(BuildError, match="optimizing broken failed"):
            copy.deepcopy(pending).verdict()
    restored = pickle.loads(pickle.dumps(validate_beside(dace.SDFG("no_states"), "again")))
    assert restored.child is None
    with pytest.raises(BuildError, match="optimizing again failed: .*at least one state"):
        restored.verdict()
    pickle.loads(pickle.dumps(validate_beside(_valid_sdfg(), "double"))).verdict()


def test_a_pipe_above_descriptor_1023_is_waited_on(monkeypatch):
    """A rank of a large MPI job holds many descriptors: select() would refuse the pipe's number."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = 1500
    if soft <= high + 1:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    real_pipe = os.pipe

    def high_pipe() -> tuple[int, int]:
        reading, writing = real_pipe()
        os.dup2(reading, high)
        os.close(reading)
        return high, writing

    monkeypatch.setattr(os, "pipe", high_pipe)
    pending = validate_beside(dace.SDFG("no_states"), "high")
    with pytest.raises(BuildError, match="optimizing high failed"):
        pending.verdict()
    with pytest.raises(OSError):
        os.fstat(high)  # closed once, by the verdict


def test_an_abandoned_validation_leaves_no_child():
    pending = validate_beside(_valid_sdfg(), "double")
    pending.abandon()
    _no_child_left(pending)
    with pytest.raises(BuildError, match="abandoned before its verdict"):  # never taken for valid
        pending.verdict()


def test_a_build_whose_optimized_program_is_invalid_fails_with_the_message_and_compiles_nothing(tmp_path, monkeypatch):
    from orchestra.pipeline import stages
    from orchestra.pipeline.build import _dace_debug_files_into

    user, staging = tmp_path / "user", tmp_path / "staging"
    user.mkdir()
    monkeypatch.chdir(user)  # DaCe's copy of the invalid program, written by the child, leaves the user's folder
    with pytest.raises(BuildError, match="optimizing broken failed: .*at least one state") as failed:
        with _dace_debug_files_into(staging):  # as a build: the optimize stage forks inside it
            pending = validate_beside(dace.SDFG("no_states"), "broken")
            stages.compile_program(stages.OptimizedProgram(_valid_sdfg(), {}, 0.0, validation=pending), staging)
    assert not list(staging.glob("build/lib*.so"))
    assert "dace_debug/invalid.sdfgz" in str(failed.value) and list(user.iterdir()) == []
    # a valid program beside compiles
    optimized = stages.OptimizedProgram(_valid_sdfg(), {}, 0.0, validation=validate_beside(_valid_sdfg(), "double"))
    assert stages.compile_program(optimized, tmp_path / "good").library.is_file()
