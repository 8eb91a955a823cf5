"""Ending the whole MPI job when one rank fails.

A Python exception on one rank leaves the other ranks blocked in their next
collective or receive: the job hangs until a wall-clock limit. Both helpers
here print ``rank N: <traceback>`` (every line prefixed, so interleaved output
stays readable) and call ``MPI_Abort``, which ends every rank with a non-zero
exit code. Code that catches an exception itself and must end the job (a
callback of a compiled program, :mod:`orchestra.calls.callback_errors`) hands
it to :func:`report_and_abort`, so that it is reported the same way.

One message per job, not one per rank: when every rank fails the same way (a
bug in the model's set-up, a missing build each rank finds alone, Ctrl-C),
rank 0 reports at once and the other ranks wait :data:`_REPORT_GRACE_S`
before reporting, so rank 0's abort usually ends them first. A failure on
other ranks only is reported by them, that much later. An error orchestra
marks ``collective`` (raised on every rank by a collective step) is never
reported by the other ranks.

mpi4py is imported only when a helper is used without an explicit
communicator, so importing :mod:`orchestra.comm` does not initialize MPI.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from types import TracebackType
from typing import Any, Iterator, Optional

#: Exit code passed to ``MPI_Abort``.
ABORT_EXIT_CODE = 1


def _world() -> Any:
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _report_and_abort(
    mpi_comm: Any,
    exc_type: type[BaseException],
    exc: BaseException,
    tb: Optional[TracebackType],
    exit_code: int,
) -> None:
    rank = mpi_comm.Get_rank()
    sys.stdout.flush()
    if rank != 0:
        # If rank 0 fails too (often the same error), its report and abort come first.
        time.sleep(_REPORT_GRACE_S)
    if rank == 0 or not getattr(exc, "collective", False):
        sys.stderr.write(_report(rank, exc_type, exc, tb))
        sys.stderr.flush()
    mpi_comm.Abort(exit_code)


#: Seconds the other ranks give rank 0 to report and abort before they report.
_REPORT_GRACE_S = 2.0


def _report(rank: int, exc_type: type[BaseException], exc: BaseException, tb: Optional[TracebackType]) -> str:
    """One message for orchestra's own errors (they name the problem and the fix), a traceback otherwise.

    ``ORCHESTRA_TRACEBACK=1`` prints the traceback of orchestra's errors too.
    """
    from orchestra.cache.errors import CacheError
    from orchestra.errors import OrchestraError

    expected = isinstance(exc, (OrchestraError, CacheError)) and not os.environ.get("ORCHESTRA_TRACEBACK")
    if expected:
        prefix = "" if getattr(exc, "collective", False) else f"rank {rank}: "
        return f"{prefix}orchestra: {exc_type.__name__}: {exc}\n"
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    return "".join(f"rank {rank}: {line}\n" for line in text.rstrip("\n").split("\n"))


def _is_clean_exit(exc: BaseException) -> bool:
    return isinstance(exc, SystemExit) and exc.code in (None, 0)


@contextlib.contextmanager
def abort_on_exception(mpi_comm: Any = None, exit_code: int = ABORT_EXIT_CODE) -> Iterator[None]:
    """Abort the MPI job (``mpi_comm``, default COMM_WORLD) if the block raises.

    ``sys.exit(0)`` passes through; every other exception, KeyboardInterrupt
    included, is printed with the rank and ends all ranks::

        with abort_on_exception():
            main()
    """
    try:
        yield
    except BaseException as exc:
        if _is_clean_exit(exc):
            raise
        _report_and_abort(
            mpi_comm if mpi_comm is not None else _world(),
            type(exc),
            exc,
            exc.__traceback__,
            exit_code,
        )
        raise  # only reached if Abort returned (it does not)


def report_and_abort(error: BaseException, mpi_comm: Any = None, exit_code: int = ABORT_EXIT_CODE) -> None:
    """Report ``error`` as the helpers above do (rank 0 first, one message per job) and abort the job.

    For code that has caught the exception itself and cannot let it travel up
    to :func:`abort_on_exception` (other ranks may be blocked waiting for this
    one). Does not return.
    """
    comm = mpi_comm if mpi_comm is not None else _world()
    _report_and_abort(comm, type(error), error, error.__traceback__, exit_code)


def install_mpi_excepthook(mpi_comm: Any = None, exit_code: int = ABORT_EXIT_CODE) -> None:
    """Make an uncaught exception print ``rank N: <traceback>`` and abort the job."""
    comm = mpi_comm if mpi_comm is not None else _world()

    def hook(
        exc_type: type[BaseException], exc: BaseException, tb: Optional[TracebackType]
    ) -> None:
        _report_and_abort(comm, exc_type, exc, tb, exit_code)

    sys.excepthook = hook
