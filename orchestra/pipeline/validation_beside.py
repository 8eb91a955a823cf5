"""The optimized program validated in a forked process while its code is generated.

DaCe's validation of the whole optimized program is the optimize stage's
last step: a read-only walk of every state, node and memlet (5-14 s of the
FV3-size benchmark at 40-120 stencils, growing with the program), on one
core, after which code generation, also one core, runs. The builder's other
cores idle through both.

:func:`validate_beside` forks the builder (Linux): the child validates the
program as optimize left it (its memory is a copy-on-write snapshot, so
code generation changing the parent's program does not reach it) and
reports one line through a pipe; the parent goes on generating code.
Before anything is compiled, :meth:`PendingValidation.verdict` waits for
the child and raises what validating in place would have raised, with the
same message (``optimizing <program> failed: <DaCe's message>``); an invalid
program is never compiled, and a code-generation error after an invalid
program reports the invalid program. Nothing the child does reaches the
parent but that line and, for an invalid program, DaCe's copy of it in
``_dacegraphs/`` (which the build moves into its staging folder, as
before): it never calls MPI, collects no garbage (a finalizer of the
parent's, such as a temporary folder's, must not run twice), and leaves
with ``os._exit`` (no atexit handler, no buffered output flushed twice).

Where no fork is possible (not Linux), or ``ORCHESTRA_VALIDATE_BESIDE=0``,
the program is validated in place, as before. A child that dies without
reporting (killed for want of memory), or sleeps without using the CPU for
:data:`STALLED_SECONDS` (validation never sleeps: a lock some other thread
held at the fork), is killed, and the build fails with a message saying so
and how to validate in place: the parent's program has been changed by code
generation by then (DaCe sets default storage types, and the changed program
no longer validates), so the build never skips the validation, never
validates the wrong program, and never hangs on it.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import sys
import time
from typing import Any, Optional

from orchestra.errors import BuildError

VARIABLE = "ORCHESTRA_VALIDATE_BESIDE"
#: A validating child asleep, its CPU time unchanged, this long is taken as stuck (validation never sleeps).
STALLED_SECONDS = 60.0
#: the first byte of the child's report
_VALID, _INVALID = b"V", b"I"
_REPORT_BYTES = 32768


class PendingValidation:
    """A program's validation under way in a child process (or already done in place).

    It owns the child and the pipe: a copy of it (``copy.deepcopy`` of an
    optimized program, compiled several times) is the same object, so one
    verdict is waited for once and every caller gets it; pickled, it is the
    verdict.
    """

    def __init__(self, name: str, pid: Optional[int] = None, reading: Optional[int] = None) -> None:
        self._name, self._pid, self._reading = name, pid, reading
        #: the validating child's process id (None: validated in place)
        self.child = pid
        self._failure: Optional[str] = None  # the verdict's message, once it is known and not valid

    def verdict(self) -> None:
        """Wait for the validation (once); raise :class:`BuildError` if the program is invalid, at every call."""
        if self._pid is not None:
            report, lost = self._report()
            self._pid = None
            if lost:  # the parent's program has changed since the fork (code generation): it cannot be validated here
                self._failure = (f"validating {self._name} in a forked process failed ({lost}); nothing was "
                                 f"compiled. Build again, or with {VARIABLE}=0 to validate the program in place")
            elif report[:1] != _VALID:
                self._failure = _invalid(self._name, report[1:].decode(errors="replace"))
        if self._failure is not None:
            raise BuildError(self._failure)

    def __deepcopy__(self, memo: dict) -> PendingValidation:
        return self

    def __copy__(self) -> PendingValidation:
        return self

    def __reduce__(self) -> tuple:
        try:
            self.verdict()
        except BuildError:
            pass
        return _decided, (self._name, self._failure)

    def abandon(self) -> None:
        """Stop the child without a verdict (the build failed for another reason)."""
        if self._pid is not None:
            _kill(self._pid)
            os.close(self._reading)
            self._pid = None
            self._failure = f"the validation of {self._name} was abandoned before its verdict"

    def __del__(self) -> None:
        try:
            self.abandon()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def _report(self) -> tuple[bytes, str]:
        """The child's report, or why there is none (it died, or sleeps without end)."""
        chunks: list[bytes] = []
        cpu, progressed = _cpu_state(self._pid)[0], time.monotonic()
        waiting = select.poll()  # not select(): a rank of a large job may hold descriptors above 1023
        waiting.register(self._reading, select.POLLIN)
        try:
            while True:
                if waiting.poll(1000):
                    chunk = os.read(self._reading, 1 << 16)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    continue
                now_cpu, state = _cpu_state(self._pid)
                if now_cpu != cpu or state != "S":
                    cpu, progressed = now_cpu, time.monotonic()
                elif time.monotonic() - progressed > STALLED_SECONDS:
                    _kill(self._pid)
                    return b"", f"it slept {STALLED_SECONDS:.0f} s without using the CPU, as on a lock held at the fork"
        finally:
            os.close(self._reading)
        status = _reap(self._pid)
        report = b"".join(chunks)
        if report:
            return report, ""
        if status is not None and os.WIFSIGNALED(status):
            return b"", f"the process was killed by signal {os.WTERMSIG(status)}, perhaps for want of memory"
        return b"", "the process ended without a report"


def _decided(name: str, failure: Optional[str]) -> PendingValidation:
    """A validation whose verdict is known (unpickled)."""
    validation = PendingValidation(name)
    validation._failure = failure
    return validation


def validate_in_place(sdfg: Any, name: str) -> None:
    """DaCe's validation of ``sdfg`` here; an invalid program is a :class:`BuildError` naming ``name``."""
    try:
        sdfg.validate()
    except Exception as error:
        raise BuildError(_invalid(name, str(error))) from error


def _invalid(name: str, message: str) -> str:
    """The build's message for an invalid optimized program, whichever process validated it."""
    return f"optimizing {name} failed: {message}"


def validate_beside(sdfg: Any, name: str) -> PendingValidation:
    """Validate ``sdfg`` in a forked child (module docstring); in place where that cannot be."""
    if not forking_allowed():
        validate_in_place(sdfg, name)
        return PendingValidation(name)
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: validate, report one line, leave without running anything of the parent's
        try:
            gc.disable()  # no finalizer of the parent's garbage (a temporary folder's) runs here
            os.close(reading)
            _validate_and_report(sdfg, writing)
        finally:
            os._exit(0)
    os.close(writing)
    return PendingValidation(name, pid, reading)


def _validate_and_report(sdfg: Any, writing: int) -> None:
    try:
        sdfg.validate()
        report = _VALID
    except Exception as error:  # noqa: BLE001 (reported to the parent, which raises; an interrupt reports nothing)
        report = _INVALID + (str(error).encode(errors="replace") or type(error).__name__.encode())
    view = memoryview(report[:_REPORT_BYTES])  # within the pipe's buffer: the child never waits for a reader
    while view:
        view = view[os.write(writing, view):]


def forking_allowed() -> bool:
    """Whether validation forks here (Linux, not switched off); a meaningless setting is a ConfigurationError."""
    value = os.environ.get(VARIABLE, "").strip()
    if value not in ("", "0", "1"):
        from orchestra.errors import ConfigurationError

        raise ConfigurationError(f"{VARIABLE}={value!r}: give 1 (validate the optimized program in a forked "
                                 "process beside code generation) or 0 (validate it in place), or unset it")
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
