"""Work done in a forked copy of the builder while the builder goes on (Linux).

Two read-only walks of the optimized program run this way, each on a core
the builder leaves idle: its validation during code generation
(:mod:`orchestra.pipeline.validation_beside`) and its saving, with its
signature, once code generation has fixed it
(:mod:`orchestra.pipeline.saved_program`).

:func:`fork_work` forks: the child's memory is a copy-on-write snapshot, so
whatever the builder then does to its program does not reach the child. The
child runs the work, reports one line through a pipe (done, or the error's
message) and leaves with ``os._exit``: it never calls MPI, collects no
garbage (a finalizer of the parent's, such as a temporary folder's, must not
run twice), runs no atexit handler and flushes no buffered output twice.
:meth:`ForkedChild.outcome` waits for the line. A child that dies without
reporting (killed for want of memory), or sleeps without using the CPU for
:data:`STALLED_SECONDS` (a lock some other thread held at the fork: the work
never sleeps), is killed and reported lost, never waited for without end.

Where no fork is possible (not Linux), or ``ORCHESTRA_VALIDATE_BESIDE=0``,
the callers do the work in place.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import sys
import time
from typing import Callable, Optional

VARIABLE = "ORCHESTRA_VALIDATE_BESIDE"
#: A child asleep, its CPU time unchanged, this long is taken as stuck (its work never sleeps).
STALLED_SECONDS = 60.0
#: the first byte of the child's report
_DONE, _FAILED = b"V", b"I"
_REPORT_BYTES = 32768


class ForkedChild:
    """A forked child doing one piece of work, and the pipe it reports on."""

    def __init__(self, pid: int, reading: int) -> None:
        #: the child's process id
        self.pid = pid
        self._reading: Optional[int] = reading

    def outcome(self) -> tuple[Optional[str], str]:
        """Wait for the child (once): (the work's error message or None, why no report came or "")."""
        if self._reading is None:
            raise RuntimeError(f"the outcome of child {self.pid} was taken already")
        try:
            report, lost = self._report()
        except BaseException:  # an interrupt while waiting: the child is not left running
            _kill(self.pid)
            raise
        if lost:
            return None, lost
        return (None if report[:1] == _DONE else report[1:].decode(errors="replace")), ""

    def kill(self) -> None:
        """Stop the child without waiting for its report."""
        if self._reading is not None:
            _kill(self.pid)
            os.close(self._reading)
            self._reading = None

    def _report(self) -> tuple[bytes, str]:
        """The child's report, or why there is none (it died, or sleeps without end)."""
        chunks: list[bytes] = []
        reading, self._reading = self._reading, None
        cpu, progressed = _cpu_state(self.pid)[0], time.monotonic()
        waiting = select.poll()  # not select(): a rank of a large job may hold descriptors above 1023
        waiting.register(reading, select.POLLIN)
        try:
            while True:
                if waiting.poll(1000):
                    chunk = os.read(reading, 1 << 16)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    continue
                now_cpu, state = _cpu_state(self.pid)
                if now_cpu != cpu or state != "S":
                    cpu, progressed = now_cpu, time.monotonic()
                elif time.monotonic() - progressed > STALLED_SECONDS:
                    _kill(self.pid)
                    return b"", f"it slept {STALLED_SECONDS:.0f} s without using the CPU, as on a lock held at the fork"
        finally:
            os.close(reading)
        status = _reap(self.pid)
        report = b"".join(chunks)
        if report:
            return report, ""
        if status is not None and os.WIFSIGNALED(status):
            return b"", f"the process was killed by signal {os.WTERMSIG(status)}, perhaps for want of memory"
        return b"", "the process ended without a report"


def fork_work(work: Callable[[], None]) -> ForkedChild:
    """Run ``work`` in a forked child (module docstring); its exception's message is the child's report."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: work, report one line, leave without running anything of the parent's
        try:
            gc.disable()  # no finalizer of the parent's garbage (a temporary folder's) runs here
            os.close(reading)
            _work_and_report(work, writing)
        finally:
            os._exit(0)
    os.close(writing)
    return ForkedChild(pid, reading)


def _work_and_report(work: Callable[[], None], writing: int) -> None:
    try:
        work()
        report = _DONE
    except Exception as error:  # noqa: BLE001 (reported to the parent, which raises; an interrupt reports nothing)
        report = _FAILED + (str(error).encode(errors="replace") or type(error).__name__.encode())
    view = memoryview(report[:_REPORT_BYTES])  # within the pipe's buffer: the child never waits for a reader
    while view:
        view = view[os.write(writing, view):]


def forking_allowed() -> bool:
    """Whether work is forked here (Linux, not switched off); a meaningless setting is a ConfigurationError."""
    value = os.environ.get(VARIABLE, "").strip()
    if value not in ("", "0", "1"):
        from orchestra.errors import ConfigurationError

        raise ConfigurationError(f"{VARIABLE}={value!r}: give 1 (validate and save the optimized program in "
                                 "forked processes beside code generation) or 0 (in place), or unset it")
    return sys.platform.startswith("linux") and value != "0"


def _cpu_state(pid: int) -> tuple[Optional[int], str]:
    """The child's user plus system time in clock ticks and its state letter (``S``: asleep); (None, "") once gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return int(fields[11]) + int(fields[12]), fields[0]  # utime, stime (fields 14, 15), state (field 3)
    except (OSError, ValueError, IndexError):
        return None, ""


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)


def _reap(pid: int) -> Optional[int]:
    """Wait for the child to end; its wait status (None if it was reaped already)."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None
