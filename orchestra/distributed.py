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
2. keys are allgathered; ranks of one code-path class must agree
   (:meth:`BuildCoordinator.check_agreement`): a value folded in at parse time
   that differs between them (a decomposition-dependent scalar read through
   ``self``) raises :class:`RankDisagreementError` naming it, on every rank;
3. the builder of each key looks it up and builds it on a miss (``Run`` mode:
   fails instead), under the key's file lock; the others wait in a sleeping
   barrier (:meth:`BuildCoordinator.run`);
4. ``Build`` mode ends here, once every rank knows every build succeeded;
5. every rank looks up *its own* key (library checksum verified) and loads it.

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
from typing import Any, Callable, Iterator, Optional, TypeVar

from orchestra.cache.requests import Asked
from orchestra.errors import BuildError, ConfigurationError, MissingBuildError, OrchestraError, RankDisagreementError

log = logging.getLogger("orchestra")

T = TypeVar("T")

#: Exit code of a job ended by the build time limit.
BUILD_TIMEOUT_EXIT_CODE = 3

#: Seconds between "still waiting" lines of a rank waiting for builds.
WAIT_REPORT_S = 60.0


@dataclasses.dataclass(frozen=True, order=True)
class CodePathClass:
    """Which tile edges a rank's subdomain touches."""

    left: bool
    right: bool
    bottom: bool
    top: bool

    @property
    def name(self) -> str:
        horizontal = "left" if self.left else ("right" if self.right else "")
        if self.left and self.right:
            horizontal = "left+right"
        vertical = "bottom" if self.bottom else ("top" if self.top else "")
        if self.bottom and self.top:
            vertical = "bottom+top"
        parts = [part for part in (vertical, horizontal) if part]
        return "-".join(parts) if parts else "interior"

    def as_key(self) -> dict[str, bool]:
        return dataclasses.asdict(self)


def code_path_class(partitioner: Any, rank: int) -> CodePathClass:
    """The code-path class of ``rank`` under ``partitioner``."""
    edges = partitioner.tile_edges(rank)
    return CodePathClass(bool(edges.left), bool(edges.right), bool(edges.bottom), bool(edges.top))


def class_representatives(partitioner: Any) -> dict[CodePathClass, int]:
    """The lowest rank of tile 0 in each code-path class."""
    representatives: dict[CodePathClass, int] = {}
    for rank in range(partitioner.total_ranks):
        if partitioner.tile_index(rank) != 0:
            continue
        representatives.setdefault(code_path_class(partitioner, rank), rank)
    return representatives


def choose_builders(records: list[tuple[int, int, str]]) -> dict[str, int]:
    """For each distinct key, the rank that builds it.

    ``records`` holds (rank, tile, key) of every rank; the builder of a key is
    its lowest rank on tile 0, or its lowest rank at all if no rank of tile 0
    has it.
    """
    builders: dict[str, int] = {}
    for rank, tile, key in sorted(records, key=lambda record: (record[1] != 0, record[0])):
        builders.setdefault(key, rank)
    return builders


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


def _mpi_comm(communicator: Any) -> Any:
    for name in ("mpi_comm", "comm", "_comm"):
        comm = getattr(communicator, name, None)
        if comm is not None and hasattr(comm, "Ibarrier"):
            return comm
    raise TypeError(f"{communicator!r} does not expose an mpi4py communicator")


class BuildCoordinator:
    """Runs the build-or-load decision collectively over all ranks.

    Every step that can fail on some ranks only (computing the key, building,
    loading) ends in an ``allgather`` of how it went, and a failure anywhere
    raises on *every* rank with the failing rank's message: no rank is left
    waiting in a collective for a rank that died. A build (or the wait for
    one) longer than ``timeout_s`` ends the job with ``MPI_Abort``.

    With ``communicator=None`` (one process) every collective is a local call.
    """

    def __init__(self, communicator: Any, timeout_s: Optional[float] = None) -> None:
        self.communicator = communicator
        self.timeout_s = timeout_s
        self.comm = None if communicator is None else _mpi_comm(communicator)

    @property
    def rank(self) -> int:
        return 0 if self.comm is None else self.comm.Get_rank()

    def _allgather(self, value: Any) -> list[Any]:
        return [value] if self.comm is None else self.comm.allgather(value)

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
            outcome = _Outcome(self.rank, False, type(error).__name__, str(error), _trace(error))
            self._raise_failures(self._allgather(outcome), what, error)
            raise  # unreachable: _raise_failures raises
        self._raise_failures(self._allgather(_Outcome(self.rank, True)), what)
        return result

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

    def _wait_for_all(self, what: str, report: Optional[str] = None) -> None:
        """A barrier that sleeps instead of spinning, with the build time limit.

        ``report``: log this line now and then while waiting (one rank only).
        """
        if self.comm is None:
            return
        request = self.comm.Ibarrier()
        start = time.monotonic()
        next_report = WAIT_REPORT_S
        delay = 0.001
        while not request.Test():
            elapsed = time.monotonic() - start
            if self.timeout_s is not None and elapsed > self.timeout_s:
                self._end_job_for_time(what)
            if report is not None and elapsed > next_report:
                log.info("%s (%.0f s so far)", report, elapsed)
                next_report += WAIT_REPORT_S
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    # ------------------------------------------------------------ workflow
    def check_agreement(
        self, key: str, inputs: dict, code_path: Optional[CodePathClass], tile: int
    ) -> list[tuple[int, int, str]]:
        """Allgather keys; raise on every rank if ranks of one class disagree."""
        records = self._allgather((self.rank, tile, key, code_path))
        by_class: dict[Any, tuple[int, str]] = {}
        disagreeing: list[tuple[int, int]] = []
        for rank, _tile, rank_key, rank_class in records:
            if rank_class is None:
                continue
            first = by_class.setdefault(rank_class, (rank, rank_key))
            if first[1] != rank_key:
                disagreeing.append((rank, first[0]))
        if disagreeing:
            all_inputs = self._allgather(inputs)
            from orchestra.cache.manifest import describe_differences

            rank, reference = disagreeing[0]
            differences = describe_differences(all_inputs[rank], all_inputs[reference])
            differences.sort(key=lambda line: "scalars" not in line.split(":")[0])  # the usual culprit first, at any depth
            raise RankDisagreementError(
                f"ranks {rank} and {reference} have the same code path but different build inputs, so one "
                f"build would silently run the wrong constants on one of them ({len(disagreeing)} rank(s) "
                f"disagree). Differences (rank {rank} vs rank {reference}): {'; '.join(differences[:12])}. "
                "A value read through `self` is folded into the program at build time: pass values that "
                "differ between ranks as arrays or through a dace_inhibitor getter instead"
            )
        return [(rank, tile_, rank_key) for rank, tile_, rank_key, _ in records]

    def gather_requests(
        self, records: list[tuple[int, int, str]], inputs: dict, code_path: Optional[CodePathClass]
    ) -> list[Asked]:
        """On rank 0, what this run asks for: one request per distinct key (elsewhere: empty).

        The builder of each key sends its inputs and code-path class to rank 0
        (collective); every request lists the ranks that share its key.
        """
        builders = choose_builders(records)
        key = next(rank_key for rank, _, rank_key in records if rank == self.rank)
        mine = (key, inputs, code_path.name if code_path else "") if builders[key] == self.rank else None
        gathered = [mine] if self.comm is None else self.comm.gather(mine, root=0)
        if self.rank != 0:
            return []
        ranks: dict[str, list[int]] = {}
        for rank, _, rank_key in records:
            ranks.setdefault(rank_key, []).append(rank)
        return [Asked(k, i, name, sorted(ranks[k])) for k, i, name in (item for item in gathered if item)]

    def run(self, records: list[tuple[int, int, str]], key: str, build: Callable[[], None], label: str) -> bool:
        """Let the chosen builder of each key run ``build``; return True if this rank built.

        Every rank returns only once all builds succeeded; a failure on any
        builder raises on every rank with that rank's message
        (:class:`MissingBuildError` as itself, anything else as :class:`BuildError`).
        """
        builders = choose_builders(records)
        builder_ranks = sorted(set(builders.values()))
        builds_here = builders[key] == self.rank
        waiting = [rank for rank, _, _ in records if rank not in builder_ranks]
        report = None
        outcome = _Outcome(self.rank, True)
        error: Optional[Exception] = None
        if builds_here:
            try:
                with self._time_limit(f"building {label}"):
                    build()
            except Exception as caught:  # reported to every rank below
                if self.comm is None:
                    raise
                error = caught
                outcome = _Outcome(self.rank, False, type(caught).__name__, str(caught), _trace(caught))
        elif waiting and self.rank == waiting[0]:
            report = f"{label}: {len(waiting)} rank(s) waiting for {len(builders)} build(s) on rank(s) {builder_ranks}"
            log.info("%s", report)
        self._wait_for_all(f"building {label}", report)
        self._raise_failures(self._allgather(outcome), f"building {label}", error)
        return builds_here

    def barrier(self) -> None:
        self._wait_for_all("the build barrier")
