"""The key board and key table of orchestra.distributed.key_agreement, serially: every rank's board, reduced as MPI would."""

from __future__ import annotations

import hashlib
from typing import Callable, Optional

import numpy as np
import pytest

from orchestra.comm import CubedSpherePartitioner, TilePartitioner
from orchestra.distributed.key_agreement import (
    KeyBoard,
    KeyTable,
    choose_builders,
    class_representatives,
    code_path_class,
    key_text,
    key_words,
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def agree(
    partitioner, size: int, key_of: Callable[[int], str], with_class: bool = True, tile_of=None
) -> Optional[KeyTable]:
    """What every rank reads after the MIN reduction of all ranks' boards (None: gather details)."""
    board = KeyBoard(partitioner, size)
    boards = []
    for rank in range(size):
        code_path = code_path_class(partitioner, rank) if with_class else None
        tile = tile_of(rank) if tile_of else (partitioner.tile_index(rank) if partitioner else 0)
        boards.append(board.fill(rank, key_of(rank), code_path, tile))
    return board.read(np.minimum.reduce(boards))


def records(partitioner, key_of) -> list[tuple[int, int, str]]:
    return [(rank, partitioner.tile_index(rank), key_of(rank)) for rank in range(partitioner.total_ranks)]


PARTITIONERS = {
    "tile-1x1": TilePartitioner((1, 1)),
    "tile-3x3": TilePartitioner((3, 3)),
    "tile-4x4": TilePartitioner((4, 4)),
    "tile-1x3": TilePartitioner((1, 3)),
    "cube-1x1": CubedSpherePartitioner(TilePartitioner((1, 1))),
    "cube-2x2": CubedSpherePartitioner(TilePartitioner((2, 2))),
    "cube-3x3": CubedSpherePartitioner(TilePartitioner((3, 3))),
}

# how a program's key depends on the class: on every edge, on none, on the left edge only
KEY_RULES = {
    "per-class": lambda c: sha(c.name),
    "shared": lambda c: sha("same"),
    "left-only": lambda c: sha(f"left={c.left}"),
}


def test_key_words_round_trip_and_reject_what_they_cannot_hold():
    key = sha("x")
    words = key_words(key)
    assert words.dtype == np.uint64 and words.shape == (4,)
    assert key_text(words) == key
    assert key_words(key.upper()) is None  # one text per digest: lowercase only
    assert key_words(key[:-1]) is None
    assert key_words(key + "0") is None
    assert key_words("g" * 64) is None
    assert key_words(None) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", sorted(KEY_RULES))
@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_agreeing_classes_give_every_key_and_the_same_builders_as_the_records(name, rule):
    partitioner = PARTITIONERS[name]
    key_of = lambda rank: KEY_RULES[rule](code_path_class(partitioner, rank))  # noqa: E731
    table = agree(partitioner, partitioner.total_ranks, key_of)
    assert table is not None
    assert [table.key_of(rank) for rank in range(partitioner.total_ranks)] == list(
        map(key_of, range(partitioner.total_ranks))
    )
    assert table.builders == choose_builders(records(partitioner, key_of))
    expected = KeyTable.from_records(records(partitioner, key_of))
    assert table.ranks_by_key() == expected.ranks_by_key()
    assert table.first_waiting() == expected.first_waiting()


def test_per_class_builders_are_the_class_representatives():
    partitioner = PARTITIONERS["cube-2x2"]
    table = agree(partitioner, 24, lambda rank: sha(code_path_class(partitioner, rank).name))
    assert table.builder_ranks == sorted(class_representatives(partitioner).values()) == [0, 1, 2, 3]
    assert table.first_waiting() == 4


@pytest.mark.parametrize("name, odd", [("tile-4x4", 10), ("cube-1x1", 5), ("cube-2x2", 23), ("cube-3x3", 53)])
def test_one_rank_differing_in_its_class_is_a_disagreement(name, odd):
    partitioner = PARTITIONERS[name]
    size = partitioner.total_ranks
    key_of = lambda rank: sha("odd" if rank == odd else code_path_class(partitioner, rank).name)  # noqa: E731
    assert agree(partitioner, size, key_of) is None


def test_each_class_alone_differing_is_seen():
    partitioner = PARTITIONERS["cube-3x3"]
    for odd in (0, 4, 53):  # corner of tile 0, interior, last rank
        key_of = lambda rank: sha(f"{code_path_class(partitioner, rank).name}{rank == odd}")  # noqa: E731
        assert agree(partitioner, partitioner.total_ranks, key_of) is None


def test_differing_in_one_word_only_is_a_disagreement():
    partitioner = PARTITIONERS["cube-1x1"]
    base = sha("a")
    for position in (0, 17, 40, 63):  # one hex digit in each of the 4 words
        changed = base[:position] + ("0" if base[position] != "0" else "1") + base[position + 1 :]
        assert agree(partitioner, 6, lambda rank: changed if rank == 3 else base) is None


def test_without_classes_one_shared_key_agrees_and_different_keys_need_details():
    table = agree(None, 5, lambda rank: sha("same"), with_class=False)
    assert table is not None and table.builders == {sha("same"): 0}
    assert table.ranks_by_key() == {sha("same"): [0, 1, 2, 3, 4]}
    assert agree(None, 5, lambda rank: sha(str(rank % 2)), with_class=False) is None


def test_without_classes_the_builder_is_the_lowest_rank_of_tile_zero():
    table = agree(None, 4, lambda rank: sha("same"), with_class=False, tile_of=lambda rank: 0 if rank >= 2 else 1)
    assert table.builders == {sha("same"): 2}
    table = agree(None, 3, lambda rank: sha("same"), with_class=False, tile_of=lambda rank: 1)
    assert table.builders == {sha("same"): 0}


def test_a_partitioner_with_ranks_passing_no_class_is_the_classless_case():
    partitioner = PARTITIONERS["tile-3x3"]
    table = agree(partitioner, 9, lambda rank: sha("same"), with_class=False)
    assert table is not None and table.builders == {sha("same"): 0}


def test_what_the_board_cannot_hold_sends_every_rank_to_the_details():
    partitioner = PARTITIONERS["tile-3x3"]
    good = lambda rank: sha(code_path_class(partitioner, rank).name)  # noqa: E731
    # a key that is not 64 lowercase hex digits on one rank
    assert agree(partitioner, 9, lambda rank: "not-a-sha256" if rank == 5 else good(rank)) is None
    assert agree(partitioner, 9, lambda rank: good(rank).upper() if rank == 5 else good(rank)) is None
    # a class that is not the partitioner's class of the rank
    board = KeyBoard(partitioner, 9)
    boards = [board.fill(rank, good(rank), code_path_class(partitioner, rank), 0) for rank in range(9)]
    boards[4] = board.fill(4, good(4), code_path_class(partitioner, 0), 0)
    assert board.read(np.minimum.reduce(boards)) is None
    # a tile that is not the partitioner's tile of the rank
    boards[4] = board.fill(4, good(4), code_path_class(partitioner, 4), 1)
    assert board.read(np.minimum.reduce(boards)) is None
    # a mix of ranks with and without a class
    boards[4] = board.fill(4, good(4), None, 0)
    assert board.read(np.minimum.reduce(boards)) is None


def test_a_partitioner_for_another_size_is_ignored():
    board = KeyBoard(TilePartitioner((2, 2)), 3)
    assert board.partitioner is None and board.shape == (2, 8)


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_the_board_does_not_grow_with_the_job(name):
    partitioner = PARTITIONERS[name]
    board = KeyBoard(partitioner, partitioner.total_ranks)
    n_classes = len(class_representatives(partitioner))
    assert board.fill(0, sha("a"), code_path_class(partitioner, 0), 0).nbytes == 64 * n_classes + 128


def test_an_empty_slot_reads_as_empty_not_as_a_key():
    partitioner = PARTITIONERS["tile-1x3"]
    board = KeyBoard(partitioner, 3)
    boards = [board.fill(rank, sha("k"), code_path_class(partitioner, rank), 0) for rank in (0, 1)]
    assert board.read(np.minimum.reduce(boards)) is None  # rank 2's class has nobody: not agreed
