"""Distributing builds over MPI ranks.

A rank's generated code depends on which tile edges its subdomain touches
(horizontal regions at tile edges and corners). Ranks are grouped into
*code-path classes* by those edges: 1 class for layout 1x1, 4 for 2x2, 9 for
3x3 and larger (4 corners, 4 edges, interior), 2 for 1x2 and 3 for 1xN with
N >= 3 (and likewise Nx1). The class is the same on every tile.

Builds are shared by *content*: every rank computes the cache key of its own
program; for each distinct key one rank builds it, preferring the lowest rank
of tile 0 (so the first rank of each class on tile 0 compiles and the classes
build concurrently); all other ranks wait without spinning, then load the
published build. Because the key holds every input that changes the code, a
build made at layout 3x3 is found again by every rank of a 4x4 (or larger)
job with the same per-rank domain: zero compiles. A program whose code does
not depend on the edges has one key on every rank and is built once.

The workflow of :mod:`orchestra.pipeline.obtain`, one collective step at a time:

1. every rank computes its key (:meth:`BuildCoordinator.collectively`);
2. ranks of one code-path class must agree on it
   (:meth:`BuildCoordinator.check_agreement`): a value folded in at parse time
   that differs between them (a decomposition-dependent scalar read through
   ``self``) raises :class:`RankDisagreementError` naming it, on every rank;
3. the builder of each key sends its inputs to rank 0, which records the
   run's requests (:meth:`BuildCoordinator.gather_requests`);
4. the builder of each key looks it up and builds it on a miss (``Run`` mode:
   fails instead), under the key's file lock; the others wait in a sleeping
   collective (:meth:`BuildCoordinator.run`);
5. ``Build`` mode ends here, once every rank knows every build succeeded;
6. every rank looks up *its own* key (library checksum verified) and loads it.

**Communication that does not grow with the job.** When every rank agrees and
nothing fails, each step costs every rank a fixed number of collectives with
a fixed payload, whatever the number of ranks: an outcome is one ``MIN``
reduction of "the first failing rank" (8 bytes); the keys are one ``MIN``
reduction of the key board of :mod:`orchestra.distributed.key_agreement` (64 bytes per
code-path class + 128), from which every rank knows every rank's key and
every builder; the requests are one point-to-point message per builder to
rank 0; the wait for the builds *is* the outcome reduction, posted
non-blocking and polled with back-off (one collective instead of a barrier
and a reduction). Details (every rank's outcome, every rank's key, the
inputs of two disagreeing ranks) are gathered only when the reduction shows
a failure or a disagreement, and every rank sees the same reduction, so
every rank takes the same branch. :attr:`BuildCoordinator.traffic` lists
every call and its bytes.

A failure in any step on any rank raises on every rank with that rank's
message, so no rank is left in a collective. A build (or the wait for one)
longer than the build time limit ends the job with ``MPI_Abort``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

import numpy as np

from orchestra.cache.requests import Asked
from orchestra.errors import BuildError, ConfigurationError, MissingBuildError, OrchestraError, RankDisagreementError
from orchestra.distributed.key_agreement import (  # re-exported: the classes and builders are part of this module's API
    CodePathClass,
    KeyBoard,
    KeyTable,
    choose_builders,
    class_representatives,
    code_path_class,
)
from orchestra.distributed.metered import MeteredComm, Transfer

__all__ = [
    "BUILD_TIMEOUT_EXIT_CODE",
    "BuildCoordinator",
    "CodePathClass",
    "KeyTable",
    "Transfer",
    "choose_builders",
    "class_representatives",
    "code_path_class",
]

log = logging.getLogger("orchestra")

T = TypeVar("T")

#: Exit code of a job ended by the build time limit.
BUILD_TIMEOUT_EXIT_CODE = 3

#: Seconds between "still waiting" lines of a rank waiting for builds.
WAIT_REPORT_S = 60.0


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """How one rank's part of a collective step ended (small and picklable)."""

    rank: int
    ok: bool
    kind: str = ""  # the exception's class name
    message: str = ""
    trace: str = ""


#: Errors re-raised under their own class on every rank (the message says it all);
#: anything else becomes a BuildError carrying the failing rank's traceback.
_PASS_THROUGH = {cls.__name__: cls for cls in (MissingBuildError, RankDisagreementError, ConfigurationError)}


def _trace(error: BaseException) -> str:
    """The failing rank's traceback, for errors nobody expected (orchestra's own say it all)."""
    from orchestra.cache.errors import CacheError

    return "" if isinstance(error, (OrchestraError, CacheError)) else traceback.format_exc(limit=6)


def _failed(rank: int, error: BaseException) -> _Outcome:
    return _Outcome(rank, False, type(error).__name__, str(error), _trace(error))


def mpi_comm(communicator: Any) -> Any:
    """The mpi4py communicator an orchestra or NDSL-style communicator wraps (``mpi_comm``, ``comm`` or ``_comm``)."""
    for name in ("mpi_comm", "comm", "_comm"):
        comm = getattr(communicator, name, None)
        if comm is not None and hasattr(comm, "Ibarrier"):
            return comm
    raise TypeError(f"{communicator!r} does not expose an mpi4py communicator")


@dataclasses.dataclass(frozen=True)
class BuildRound:
    """What :meth:`BuildCoordinator.run` tells every rank: whether it was a builder, whether anyone built."""

    #: this rank was the chosen builder of its key (it built it, or found it under the lock)
    builder_here: bool
    #: some rank made a build in this round (none did when every build was found in the cache)
    built_anywhere: bool


class BuildCoordinator:
    """Runs the build-or-load decision collectively over all ranks.

    Every step that can fail on some ranks only (computing the key, building,
    loading) ends in a reduction of how it went, and a failure anywhere
    raises on *every* rank with the failing rank's message: no rank is left
    waiting in a collective for a rank that died. A build (or the wait for
    one) longer than ``timeout_s`` ends the job with ``MPI_Abort``.

    Every byte goes through :attr:`wire` (:class:`orchestra.distributed.metered.MeteredComm`),
    which lists each call and this rank's bytes in :attr:`traffic` (a few
    entries per first call of a program).

    With ``communicator=None`` (one process) every collective is a local call.
    """

    def __init__(self, communicator: Any, timeout_s: Optional[float] = None) -> None:
        self.communicator = communicator
        self.timeout_s = timeout_s
        self.comm = None if communicator is None else mpi_comm(communicator)
        self.wire = MeteredComm(self.comm)

    @property
    def rank(self) -> int:
        return self.wire.rank

    @property
    def size(self) -> int:
        return self.wire.size

    @property
    def traffic(self) -> list[Transfer]:
        """Every communication call of this coordinator on this rank, with its bytes."""
        return self.wire.traffic

    # ------------------------------------------------------------ failures
    def collectively(self, step: Callable[[], T], what: str) -> T:
        """Run ``step`` on every rank; if it raised on any rank, raise on all of them.

        The error raised names the first failing rank; on a failing rank it is
        chained to the local exception. In one process the exception passes as it is.
        """
        if self.comm is None:
            return step()  # one process: the exception as it is
        try:
            result = step()
        except Exception as error:  # reported to every rank below
            self._settle(_failed(self.rank, error), what, error)
            raise  # unreachable: _settle raises
        self._settle(_Outcome(self.rank, True), what)
        return result

    def _failing_mark(self, ok: bool) -> int:
        """This rank's term of "the lowest rank that failed": its rank if it failed, else the job's size."""
        return self.size if ok else self.rank

    def _first_failing(self, ok: bool) -> int:
        """The lowest rank whose part failed (``size`` if none did): one reduction of 8 bytes."""
        mine = np.array([self._failing_mark(ok)], dtype=np.int64)
        return int(self.wire.allreduce_min(mine, "outcome")[0])

    def _settle(
        self, outcome: _Outcome, what: str, local: Optional[BaseException] = None, first_failing: Optional[int] = None
    ) -> None:
        """Raise on every rank if any rank failed: one reduction, then the outcomes only if one did.

        ``first_failing``: the reduction, when the caller already made it.
        """
        if first_failing is None:
            first_failing = self._first_failing(outcome.ok)
        if first_failing < self.size:  # the same on every rank: all gather, all raise
            self._raise_failures(self.wire.allgather(outcome, "failure details"), what, local)

    @staticmethod
    def _raise_failures(outcomes: list[_Outcome], what: str, local: Optional[BaseException] = None) -> None:
        failures = [outcome for outcome in outcomes if not outcome.ok]
        if not failures:
            return
        first = failures[0]
        error_class = _PASS_THROUGH.get(first.kind)
        if error_class is not None:
            error: Exception = error_class(first.message)
        else:
            ranks = ", ".join(str(outcome.rank) for outcome in failures[:16])
            trace = f"\n{first.trace}" if first.trace else ""
            error = BuildError(
                f"{what} failed on {len(failures)} rank(s) ({ranks}); rank {first.rank}: "
                f"{first.kind}: {first.message}{trace}"
            )
        error.collective = True  # the same error on every rank: report it once (orchestra.comm.abort)
        raise error from local

    # ---------------------------------------------------------- time limit
    def _end_job_for_time(self, what: str) -> None:
        limit = f"{self.timeout_s:g} s"
        print(
            f"orchestra: rank {self.rank}: {what} took longer than the build time limit of {limit} "
            "(ORCHESTRA_BUILD_TIMEOUT / DaceConfig.build_timeout_s); ending the job",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        if self.comm is not None:
            self.comm.Abort(BUILD_TIMEOUT_EXIT_CODE)
        os._exit(BUILD_TIMEOUT_EXIT_CODE)

    @contextlib.contextmanager
    def _time_limit(self, what: str) -> Iterator[None]:
        """End the job if the block runs longer than the build time limit.

        A watchdog thread, because the block is a build (DaCe in Python, then a
        compiler subprocess) that cannot be interrupted from inside.
        """
        if self.timeout_s is None:
            yield
            return
        watchdog = threading.Timer(self.timeout_s, self._end_job_for_time, args=(what,))
        watchdog.daemon = True
        watchdog.start()
        try:
            yield
        finally:
            watchdog.cancel()

    def _poll(
        self,
        request: Any,
        what: str,
        report: Optional[str] = None,
        meanwhile: Sequence[Callable[[], None]] = (),
        meanwhile_after_s: float = 0.0,
    ) -> None:
        """Wait for ``request`` with back-off, ending the job past the build time limit.

        ``meanwhile``: work to do while waiting, one item at a time, starting
        ``meanwhile_after_s`` into the wait and checking ``request`` between
        items; what is left when it completes is dropped.
        """
        start = time.monotonic()
        next_report = WAIT_REPORT_S
        delay = 0.001
        pending = list(meanwhile)
        while not request.Test():
            elapsed = time.monotonic() - start
            if self.timeout_s is not None and elapsed > self.timeout_s:
                self._end_job_for_time(what)
            if report is not None and elapsed > next_report:
                log.info("%s (%.0f s so far)", report, elapsed)
                next_report += WAIT_REPORT_S
            if pending and elapsed >= meanwhile_after_s:
                pending.pop(0)()
                continue
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    # ------------------------------------------------------------ workflow
    def check_agreement(self, key: str, inputs: dict, code_path: Optional[CodePathClass], tile: int) -> KeyTable:
        """Agree on every rank's key; raise on every rank if ranks of one class disagree.

        One ``MIN`` reduction of the key board (64 bytes per code-path class +
        128); only if it shows a disagreement (or a key the board cannot hold)
        are the keys gathered, to name the differing ranks, or to list the
        keys of ranks without a class, which may differ legitimately.
        """
        board = KeyBoard(getattr(self.communicator, "partitioner", None), self.size)
        table = board.read(self.wire.allreduce_min(board.fill(self.rank, key, code_path, tile), "keys"))
        if table is not None:
            return table
        return self._agree_by_records(key, inputs, code_path, tile)

    def _agree_by_records(self, key: str, inputs: dict, code_path: Optional[CodePathClass], tile: int) -> KeyTable:
        """Gather every rank's (rank, tile, key, class); raise if ranks of one class disagree."""
        records = self.wire.allgather((self.rank, tile, key, code_path), "key records")
        by_class: dict[Any, tuple[int, str]] = {}
        disagreeing: list[tuple[int, int]] = []
        for rank, _tile, rank_key, rank_class in records:
            if rank_class is None:
                continue
            first = by_class.setdefault(rank_class, (rank, rank_key))
            if first[1] != rank_key:
                disagreeing.append((rank, first[0]))
        if disagreeing:
            self._raise_disagreement(disagreeing, inputs)
        return KeyTable.from_records([(rank, tile_, rank_key) for rank, tile_, rank_key, _ in records])

    def _raise_disagreement(self, disagreeing: list[tuple[int, int]], inputs: dict) -> None:
        """Raise :class:`RankDisagreementError` naming the first differing ranks' inputs, on every rank.

        Only the two ranks the message compares broadcast their inputs: an
        allgather of every rank's inputs (as before) moved the job's size
        times the inputs to every rank for the same message.
        """
        from orchestra.cache.manifest import describe_differences

        rank, reference = disagreeing[0]
        rank_inputs = self.wire.bcast(inputs if self.rank == rank else None, rank, "inputs")
        reference_inputs = self.wire.bcast(inputs if self.rank == reference else None, reference, "inputs")
        differences = describe_differences(rank_inputs, reference_inputs)
        differences.sort(key=lambda line: "scalars" not in line.split(":")[0])  # the usual culprit first, at any depth
        raise RankDisagreementError(
            f"ranks {rank} and {reference} have the same code path but different build inputs, so one "
            f"build would silently run the wrong constants on one of them ({len(disagreeing)} rank(s) "
            f"disagree). Differences (rank {rank} vs rank {reference}): {'; '.join(differences[:12])}. "
            "A value read through `self` is folded into the program at build time: pass values that "
            "differ between ranks as arrays or through a dace_inhibitor getter instead"
        )

    def gather_requests(self, table: KeyTable, inputs: dict, code_path: Optional[CodePathClass]) -> list[Asked]:
        """On rank 0, what this run asks for: one request per distinct key (elsewhere: empty).

        The builder of each key sends its key, inputs and code-path class to
        rank 0 (one message each; the other ranks send nothing); every
        request lists the ranks that share its key.
        """
        key = table.key_of(self.rank)
        mine = (key, inputs, code_path.name if code_path else "")
        if self.rank != 0:
            if table.builders[key] == self.rank:
                self.wire.send(mine, 0, "requests")
            return []
        items = [mine if rank == 0 else self.wire.receive(rank, "requests") for rank in table.builder_ranks]
        ranks = table.ranks_by_key()
        return [Asked(k, i, name, ranks[k]) for k, i, name in items]

    def run(
        self,
        table: KeyTable,
        key: str,
        build: Callable[[], Any],
        label: str,
        while_waiting: Sequence[Callable[[], None]] = (),
        while_waiting_after_s: float = 0.0,
        may_build: bool = True,
    ) -> BuildRound:
        """Let the chosen builder of each key run ``build``; say who ran it and whether a build was made.

        ``may_build``: False in ``Run`` mode, where the chosen ranks only look
        builds up (the waiting line says so).

        ``build`` returns something true if it made a build (not if it found
        one). Every rank returns only once all builds succeeded; a failure on any
        builder raises on every rank with that rank's message
        (:class:`MissingBuildError` as itself, anything else as :class:`BuildError`).
        The wait is the reduction of the outcomes, so it costs one collective;
        whether any builder made a build rides in the same 8 bytes.
        A rank that does not build works through ``while_waiting`` from
        ``while_waiting_after_s`` into its wait until the builds end
        (each item must not raise).
        """
        builds_here = table.builders[key] == self.rank
        made = False
        report = None
        outcome = _Outcome(self.rank, True)
        error: Optional[Exception] = None
        if builds_here:
            try:
                with self._time_limit(f"building {label}"):
                    made = bool(build())
            except Exception as caught:  # reported to every rank below
                if self.comm is None:
                    raise
                error = caught
                outcome = _failed(self.rank, caught)
        elif table.first_waiting() == self.rank:
            builder_ranks = table.builder_ranks
            doing = "to build or find" if may_build else "to find (Run mode: nothing is built)"
            report = (
                f"{label}: {self.size - len(builder_ranks)} rank(s) waiting for rank(s) {builder_ranks} "
                f"{doing} {len(table.builders)} program(s) in the cache"
            )
            log.info("%s", report)
        what = f"building {label}"
        meanwhile = () if builds_here else while_waiting
        # 2 * (first failing rank) + (0 if this rank made a build, else 1): the minimum carries both
        reduced = self.wire.min_when_done(
            2 * self._failing_mark(outcome.ok) + (0 if made else 1),
            "build outcome",
            lambda request: self._poll(request, what, report, meanwhile, while_waiting_after_s),
        )
        self._settle(outcome, what, error, reduced // 2)
        return BuildRound(builds_here, reduced % 2 == 0)

    def barrier(self) -> None:
        """Wait for every rank without spinning, with the build time limit."""
        self.wire.barrier_when_done("barrier", lambda request: self._poll(request, "the build barrier"))


def mpi_comm_or_none(communicator: Any) -> Any:
    """The mpi4py communicator ``communicator`` wraps; None for none (or for an object that wraps none)."""
    try:
        return None if communicator is None else mpi_comm(communicator)
    except TypeError:
        return None
