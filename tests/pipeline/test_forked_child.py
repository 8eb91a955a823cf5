"""Work done in a forked copy of the process (orchestra.pipeline.forked_child): its report, its failure, an interrupted wait."""

from __future__ import annotations

import os
import signal
import time

import pytest

from orchestra.pipeline.forked_child import fork_work


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_work_done_and_work_failed_are_reported_and_the_child_is_reaped(tmp_path):
    marker = tmp_path / "written by the child"
    done = fork_work(lambda: marker.write_text(str(os.getpid())))
    assert done.outcome() == (None, "")
    assert int(marker.read_text()) == done.pid != os.getpid() and _reaped(done.pid)

    def failing() -> None:
        raise ValueError("the disk is full")

    failed = fork_work(failing)
    assert failed.outcome() == ("the disk is full", "")
    with pytest.raises(RuntimeError, match="taken already"):
        failed.outcome()


def test_an_interrupted_wait_leaves_no_child_running():
    child = fork_work(lambda: time.sleep(60))

    def interrupt(signum, frame) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            child.outcome()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert _reaped(child.pid)  # killed and waited for, not left sleeping
    child.kill()  # nothing left to stop
