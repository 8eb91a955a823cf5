"""Distributing builds over MPI ranks.

A rank's generated code depends on which tile edges its subdomain touches
(horizontal regions at tile edges and corners). Ranks are grouped into
*code-path classes* by those edges: 1 class for layout 1x1, 4 for 2x2, 9 for
3x3 and larger (4 corners, 4 edges, interior), 2 for 1x2 and 3 for 1xN with
N >= 3 (and likewise Nx1). The class is the same on every tile.

Builds are shared by *content*: every rank computes the cache key of its own
program; for each distinct key one rank builds it, preferring the lowest rank
of tile 0 (so the first ranks of the top tile compile and the class
representatives build concurrently); all other ranks wait without spinning,
then load the published build. Because the key holds every input that
changes the code, a build made at layout 3x3 is found again by every rank of
a 4x4 (or larger) job with the same per-rank domain: zero compiles.

Before anything is built, ranks check that every rank of one code-path class
computed the same key; a value folded in at parse time that differs between
ranks of one class (a decomposition-dependent scalar read through ``self``)
is reported with the differing inputs instead of silently running one rank's
constant on another.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
import traceback
from typing import Any, Callable, Optional

from orchestra.errors import BuildError, RankDisagreementError

log = logging.getLogger("orchestra")


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
class _Status:
    ok: bool
    message: str = ""


def _mpi_comm(communicator: Any) -> Any:
    for name in ("mpi_comm", "comm", "_comm"):
        comm = getattr(communicator, name, None)
        if comm is not None and hasattr(comm, "Ibarrier"):
            return comm
    raise TypeError(f"{communicator!r} does not expose an mpi4py communicator")


class BuildCoordinator:
    """Runs one build-or-load decision collectively over all ranks.

    With ``communicator=None`` (one process) it degenerates to a local call.
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

    def _wait_for_all(self, what: str) -> None:
        """A barrier that sleeps instead of spinning, with the build time limit."""
        if self.comm is None:
            return
        request = self.comm.Ibarrier()
        start = time.monotonic()
        delay = 0.001
        while not request.Test():
            if self.timeout_s is not None and time.monotonic() - start > self.timeout_s:
                message = (
                    f"orchestra: rank {self.rank}: {what} took longer than the build time limit "
                    f"of {self.timeout_s:.0f} s (ORCHESTRA_BUILD_TIMEOUT / DaceConfig.build_timeout_s); "
                    "ending the job"
                )
                print(message, file=sys.stderr, flush=True)
                self.comm.Abort(3)
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

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
            raise RankDisagreementError(
                f"ranks {rank} and {reference} have the same code path but different build inputs, so one "
                f"build would silently run the wrong constants on one of them ({len(disagreeing)} rank(s) "
                f"disagree). Differences (rank {rank} vs rank {reference}): {'; '.join(differences[:8])}. "
                "A value read through `self` is folded into the program at build time: pass values that "
                "differ between ranks as arrays or through a dace_inhibitor getter instead"
            )
        return [(rank, tile_, rank_key) for rank, tile_, rank_key, _ in records]

    def run(self, records: list[tuple[int, int, str]], key: str, build: Callable[[], None], label: str) -> bool:
        """Let the chosen builder of each key run ``build``; return True if this rank built.

        Every rank returns only once all builds succeeded; a failure on any
        builder raises :class:`BuildError` with that rank's message on every rank.
        """
        builders = choose_builders(records)
        builds_here = builders[key] == self.rank
        status = _Status(True)
        if builds_here:
            try:
                build()
            except Exception as error:  # reported to every rank below
                status = _Status(False, f"rank {self.rank}: {type(error).__name__}: {error}\n"
                                        + traceback.format_exc(limit=4))
        elif self.rank == min(rank for rank, _, _ in records if builders[key] != rank) and self.comm:
            log.info("%s: waiting for %d build(s) on rank(s) %s", label, len(builders),
                     sorted(set(builders.values())))
        self._wait_for_all(f"building {label}")
        statuses = self._allgather(status)
        failures = [s.message for s in statuses if not s.ok]
        if failures:
            raise BuildError(f"building {label} failed on {len(failures)} rank(s):\n{failures[0]}")
        return builds_here

    def barrier(self) -> None:
        self._wait_for_all("the build barrier")
