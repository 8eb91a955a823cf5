"""Which build key each rank has and who builds it, agreed with a payload that does not grow with the job.

Contract (nothing here communicates; :class:`orchestra.distributed.coordinator.BuildCoordinator` does):

* **Code-path classes** (:class:`CodePathClass`, :func:`code_path_class`,
  :func:`class_representatives`): which tile edges a rank touches; the class
  is the same on every tile, and every class has a representative (its lowest
  rank) on tile 0.
* **The key board** (:class:`KeyBoard`): a ``uint64`` array of shape
  ``(classes + 2, 8)`` that every rank fills (:meth:`KeyBoard.fill`) and that
  one elementwise ``MIN`` reduction over all ranks combines. Row ``c`` is the
  slot of class ``c`` (classes sorted); the next row is the slot of ranks
  without a class; the last row is a header (word 0: the lowest rank on
  tile 0, so that a job without classes keeps the builder rule of
  :func:`choose_builders` exactly, for 64 bytes). A rank writes its key into its own slot as the 4 big-endian words
  of the sha256 digest followed by their bitwise complements, and the largest
  ``uint64`` everywhere else. After the ``MIN``, a slot holds the smallest
  words of its writers and, through the complements, the largest: the writers
  agree iff both are equal, a slot nobody wrote reads smallest = all ones,
  largest = 0, and a rank that cannot use the board (a key that is not 64
  lowercase hex digits, a class that is not the partitioner's class of the
  rank) writes zeros in the classless slot, which reads as a disagreement.
  :meth:`KeyBoard.read` turns the reduced board into a :class:`KeyTable` when
  every rank has a class and every class's ranks agree, or when no rank has a
  class and all share one key; otherwise it returns None and the caller must
  find out who differs by gathering details (:meth:`KeyTable.from_records`).
* **The key table** (:class:`KeyTable`): the key of any rank and the builder
  of each distinct key (its lowest rank on tile 0, else its lowest rank:
  :func:`choose_builders`), without a list as long as the job. With classes,
  the builder of a key is the smallest representative among the classes that
  have it, so every rank knows every builder without further communication.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable, Optional

import numpy as np

#: uint64 words of a sha256 digest, and of one slot (the words, then their complements).
KEY_WORDS = 4
SLOT_WORDS = 2 * KEY_WORDS

_ALL_ONES = np.iinfo(np.uint64).max
_KEY_PATTERN = re.compile(r"[0-9a-f]{64}")


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


def choose_builders(records: Iterable[tuple[int, int, str]]) -> dict[str, int]:
    """For each distinct key, the rank that builds it.

    ``records`` holds (rank, tile, key) of every rank; the builder of a key is
    its lowest rank on tile 0, or its lowest rank at all if no rank of tile 0
    has it.
    """
    builders: dict[str, int] = {}
    for rank, tile, key in sorted(records, key=lambda record: (record[1] != 0, record[0])):
        builders.setdefault(key, rank)
    return builders


def key_words(key: str) -> Optional[np.ndarray]:
    """The 4 uint64 words of a sha256 hex key (big-endian), or None if ``key`` is not 64 lowercase hex digits.

    Lowercase only, so that words and key text correspond one to one.
    """
    if not isinstance(key, str) or not _KEY_PATTERN.fullmatch(key):
        return None
    return np.frombuffer(bytes.fromhex(key), dtype=">u8").astype(np.uint64)


def key_text(words: np.ndarray) -> str:
    """The hex key of 4 uint64 words (inverse of :func:`key_words`)."""
    return "".join(f"{int(word):016x}" for word in words)


@dataclasses.dataclass(frozen=True)
class KeyTable:
    """The key of every rank of a job and the builder of each distinct key.

    ``key_of`` answers for any rank from what every rank already knows (the
    class's key, one shared key, or the gathered records), so the table
    holds nothing per rank of the job; :meth:`ranks_by_key` walks all ranks
    and is meant for rank 0's request record only.
    """

    size: int
    builders: dict[str, int]
    key_of: Callable[[int], str]

    @classmethod
    def shared(cls, key: str, size: int, builder: int = 0) -> KeyTable:
        """Every rank has ``key``; ``builder`` builds it."""
        return cls(size, {key: builder}, lambda rank: key)

    @classmethod
    def by_class(
        cls, partitioner: Any, representatives: dict[CodePathClass, int], class_keys: dict[CodePathClass, str]
    ) -> KeyTable:
        """Every rank has its class's key; a key's builder is the smallest representative of a class having it."""
        builders: dict[str, int] = {}
        for code_path, rank in sorted(representatives.items(), key=lambda item: item[1]):
            builders.setdefault(class_keys[code_path], rank)
        return cls(
            partitioner.total_ranks, builders, lambda rank: class_keys[code_path_class(partitioner, rank)]
        )

    @classmethod
    def from_records(cls, records: list[tuple[int, int, str]]) -> KeyTable:
        """From (rank, tile, key) of every rank, as gathered when the ranks did not agree on the board."""
        keys = {rank: key for rank, _tile, key in records}
        return cls(len(records), choose_builders(records), keys.__getitem__)

    @property
    def builder_ranks(self) -> list[int]:
        """The ranks that build, ascending (one per distinct key)."""
        return sorted(set(self.builders.values()))

    def builds(self, rank: int) -> bool:
        """Whether ``rank`` builds its key."""
        return self.builders[self.key_of(rank)] == rank

    def first_waiting(self) -> Optional[int]:
        """The lowest rank that builds nothing (None if every rank builds)."""
        builders = set(self.builders.values())
        return next((rank for rank in range(self.size) if rank not in builders), None)

    def ranks_by_key(self) -> dict[str, list[int]]:
        """The ranks of each key, ascending (walks every rank: for rank 0's request record)."""
        ranks: dict[str, list[int]] = {}
        for rank in range(self.size):
            ranks.setdefault(self.key_of(rank), []).append(rank)
        return ranks


class KeyBoard:
    """The agreement buffer of one job: the slots of its code-path classes, the classless slot, a header.

    ``partitioner`` None (or one that does not cover ``size`` ranks) means
    no classes: every rank must then pass ``code_path=None``.
    """

    def __init__(self, partitioner: Optional[Any], size: int) -> None:
        if partitioner is not None and partitioner.total_ranks != size:
            partitioner = None
        self.partitioner = partitioner
        self.size = size
        self.representatives = {} if partitioner is None else class_representatives(partitioner)
        self.classes = sorted(self.representatives)
        self.classless = len(self.classes)
        self.header = self.classless + 1

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.classes) + 2, SLOT_WORDS)

    def _slot(self, rank: int, code_path: Optional[CodePathClass], tile: int) -> Optional[int]:
        """The row ``rank`` writes its key into; None if it cannot use the board."""
        if code_path is None:
            return self.classless
        partitioner = self.partitioner
        if partitioner is None or code_path != code_path_class(partitioner, rank):
            return None
        if tile != partitioner.tile_index(rank):
            return None
        return self.classes.index(code_path)

    def fill(self, rank: int, key: str, code_path: Optional[CodePathClass], tile: int) -> np.ndarray:
        """This rank's board, to be combined over all ranks with an elementwise MIN."""
        board = np.full(self.shape, _ALL_ONES, dtype=np.uint64)
        if tile == 0:
            board[self.header, 0] = rank
        words = key_words(key)
        slot = self._slot(rank, code_path, tile)
        if words is None or slot is None:
            board[self.classless] = 0  # reads as a disagreement: everyone gathers details
            return board
        board[slot, :KEY_WORDS] = words
        board[slot, KEY_WORDS:] = ~words
        return board

    def read(self, reduced: np.ndarray) -> Optional[KeyTable]:
        """The key table if the reduced board shows agreement, else None (gather details)."""
        smallest = reduced[:, :KEY_WORDS]
        largest = ~reduced[:, KEY_WORDS:]
        empty = (smallest == _ALL_ONES).all(axis=1) & (largest == 0).all(axis=1)
        agreed = (smallest == largest).all(axis=1)  # never true of an empty slot
        classes, classless = slice(0, self.classless), self.classless
        if agreed[classes].all() and empty[classless] and self.classes:
            class_keys = {code_path: key_text(smallest[row]) for row, code_path in enumerate(self.classes)}
            return KeyTable.by_class(self.partitioner, self.representatives, class_keys)
        if empty[classes].all() and agreed[classless]:
            first_on_tile0 = int(reduced[self.header, 0])
            builder = first_on_tile0 if first_on_tile0 < self.size else 0
            return KeyTable.shared(key_text(smallest[classless]), self.size, builder)
        return None
