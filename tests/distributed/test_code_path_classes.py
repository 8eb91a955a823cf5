"""Which ranks compile: code-path classes and builders for each layout (serial)."""

from __future__ import annotations

import pytest

from orchestra.comm import CubedSpherePartitioner, TilePartitioner
from orchestra.distributed.coordinator import CodePathClass, choose_builders, class_representatives, code_path_class

# layout -> (number of classes, compiling ranks on a single tile)
EXPECTED = {
    (1, 1): (1, [0]),
    (2, 2): (4, [0, 1, 2, 3]),
    (3, 3): (9, [0, 1, 2, 3, 4, 5, 6, 7, 8]),
    # 4x4: the first corner, edge and interior rank of each kind (rank = j * 4 + i)
    (4, 4): (9, [0, 1, 3, 4, 5, 7, 12, 13, 15]),
    (1, 2): (2, [0, 1]),
    (1, 3): (3, [0, 1, 2]),
    (3, 1): (3, [0, 1, 2]),
    (1, 5): (3, [0, 1, 4]),
    (5, 1): (3, [0, 1, 4]),
    (2, 3): (6, [0, 1, 2, 3, 4, 5]),
    (3, 2): (6, [0, 1, 2, 3, 4, 5]),
    (6, 6): (9, [0, 1, 5, 6, 7, 11, 30, 31, 35]),
}


@pytest.mark.parametrize("layout", sorted(EXPECTED), ids=lambda layout: f"{layout[0]}x{layout[1]}")
def test_single_tile_classes_and_compiling_ranks(layout):
    n_classes, compiling = EXPECTED[layout]
    partitioner = TilePartitioner(layout)
    representatives = class_representatives(partitioner)
    assert len(representatives) == n_classes
    assert sorted(representatives.values()) == compiling
    # every rank belongs to exactly one represented class
    classes = {code_path_class(partitioner, rank) for rank in range(partitioner.total_ranks)}
    assert classes == set(representatives)


@pytest.mark.parametrize("layout", [(1, 1), (2, 2), (3, 3), (4, 4)], ids=lambda layout: f"{layout[0]}x{layout[1]}")
def test_cubed_sphere_compiles_on_tile_zero_only(layout):
    n_classes, compiling = EXPECTED[layout]
    partitioner = CubedSpherePartitioner(TilePartitioner(layout))
    representatives = class_representatives(partitioner)
    assert len(representatives) == n_classes
    assert sorted(representatives.values()) == compiling  # ranks of tile 0
    # the same classes on every tile
    for tile in range(1, 6):
        offset = tile * partitioner.ranks_per_tile
        for rank in range(partitioner.ranks_per_tile):
            assert code_path_class(partitioner, offset + rank) == code_path_class(partitioner, rank)


def _records(partitioner, key_of):
    return [
        (rank, partitioner.tile_index(rank), key_of(code_path_class(partitioner, rank)))
        for rank in range(partitioner.total_ranks)
    ]


@pytest.mark.parametrize(
    "partitioner",
    [TilePartitioner((3, 3)), TilePartitioner((4, 4)), TilePartitioner((1, 3)), CubedSpherePartitioner(TilePartitioner((2, 2)))],
    ids=["tile-3x3", "tile-4x4", "tile-1x3", "cube-2x2"],
)
def test_one_builder_per_distinct_key_is_the_class_representative(partitioner):
    """An edge-dependent program: one key per class, built by the class's representative."""
    builders = choose_builders(_records(partitioner, lambda c: f"key-{c.name}"))
    representatives = class_representatives(partitioner)
    assert builders == {f"key-{c.name}": rank for c, rank in representatives.items()}


def test_code_without_edge_dependence_is_built_once():
    """Builds are shared by content: ranks of different classes with one key share one build."""
    partitioner = CubedSpherePartitioner(TilePartitioner((3, 3)))
    assert choose_builders(_records(partitioner, lambda c: "same-key")) == {"same-key": 0}


def test_builder_prefers_tile_zero_then_lowest_rank():
    records = [(0, 0, "a"), (1, 0, "b"), (7, 1, "c"), (5, 1, "c"), (9, 2, "b")]
    assert choose_builders(records) == {"a": 0, "b": 1, "c": 5}


def test_class_names():
    partitioner = TilePartitioner((3, 3))
    names = [code_path_class(partitioner, rank).name for rank in range(9)]
    assert names == [
        "bottom-left", "bottom", "bottom-right",
        "left", "interior", "right",
        "top-left", "top", "top-right",
    ]
    assert code_path_class(TilePartitioner((1, 1)), 0) == CodePathClass(True, True, True, True)
    assert code_path_class(TilePartitioner((1, 3)), 1).name == "left+right"
