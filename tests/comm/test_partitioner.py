"""Partitioners without MPI: rank arithmetic, edges, neighbours, rotations, bad input."""

from __future__ import annotations

import itertools

import pytest

from orchestra.comm import (
    CubedSpherePartitioner,
    DecompositionError,
    Direction,
    IndexMap,
    Neighbour,
    TileEdges,
    TilePartitioner,
)

LAYOUTS = [(1, 1), (2, 2), (3, 3), (1, 3), (4, 4)]
SQUARE = [layout for layout in LAYOUTS if layout[0] == layout[1]]


def partitioners():
    for layout in LAYOUTS:
        yield TilePartitioner(layout)
    for layout in SQUARE:
        yield CubedSpherePartitioner(TilePartitioner(layout))


ALL = list(partitioners())


@pytest.mark.parametrize("p", ALL, ids=repr)
def test_rank_arithmetic_round_trips(p):
    assert p.total_ranks == p.n_tiles * p.layout[0] * p.layout[1]
    for rank in range(p.total_ranks):
        i, j = p.subtile_index(rank)
        assert p.rank_of(p.tile_index(rank), i, j) == rank
        assert rank == p.tile_index(rank) * p.ranks_per_tile + j * p.layout[0] + i


@pytest.mark.parametrize("p", ALL, ids=repr)
def test_tile_edges(p):
    for rank in range(p.total_ranks):
        i, j = p.subtile_index(rank)
        edges = p.tile_edges(rank)
        expected = TileEdges(i == 0, i == p.layout[0] - 1, j == 0, j == p.layout[1] - 1)
        assert edges == expected
        assert (
            p.on_tile_left(rank),
            p.on_tile_right(rank),
            p.on_tile_bottom(rank),
            p.on_tile_top(rank),
        ) == (edges.left, edges.right, edges.bottom, edges.top)


def test_tile_edges_examples():
    p = TilePartitioner((3, 3))
    assert p.tile_edges(0) == TileEdges(left=True, right=False, bottom=True, top=False)
    assert p.tile_edges(4) == TileEdges(False, False, False, False)
    assert p.tile_edges(8) == TileEdges(False, True, False, True)
    assert TilePartitioner((1, 1)).tile_edges(0) == TileEdges(True, True, True, True)


@pytest.mark.parametrize("p", ALL, ids=repr)
def test_subdomains_tile_the_tile_exactly(p):
    n = 12
    for tile in range(p.n_tiles):
        covered = set()
        for rank in range(tile * p.ranks_per_tile, (tile + 1) * p.ranks_per_tile):
            (i0, i1), (j0, j1) = p.subdomain_extent(rank, n, n)
            assert (i1 - i0, j1 - j0) == (n // p.layout[0], n // p.layout[1])
            cells = set(itertools.product(range(i0, i1), range(j0, j1)))
            assert not cells & covered
            covered |= cells
        assert covered == set(itertools.product(range(n), range(n)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_single_tile_neighbours(layout):
    p = TilePartitioner(layout)
    for rank in range(p.total_ranks):
        i, j = p.subtile_index(rank)
        for d, neighbour in p.neighbours(rank).items():
            ni, nj = i + d.di, j + d.dj
            inside = 0 <= ni < layout[0] and 0 <= nj < layout[1]
            assert neighbour == Neighbour(p.rank_of(0, ni, nj) if inside else None, 0)


def _rotate(direction, rotations):
    """The step ``direction`` (our frame) as seen in a frame turned ``rotations`` quarter turns."""
    return Direction(IndexMap.rotation(rotations).point(direction.di, direction.dj))


@pytest.mark.parametrize("p", ALL, ids=repr)
def test_neighbour_relation_is_symmetric_and_rotations_invert(p):
    for rank in range(p.total_ranks):
        for d, neighbour in p.neighbours(rank).items():
            if neighbour.rank is None:
                continue
            assert neighbour.rank != rank
            back = _rotate(d, neighbour.rotations)
            back = Direction((-back.di, -back.dj))
            assert p.neighbours(neighbour.rank)[back] == Neighbour(rank, (-neighbour.rotations) % 4)


@pytest.mark.parametrize("layout", SQUARE)
def test_cube_has_no_neighbour_only_at_cube_corners(layout):
    p = CubedSpherePartitioner(TilePartitioner(layout))
    missing = []
    for rank in range(p.total_ranks):
        edges = p.tile_edges(rank)
        for d, neighbour in p.neighbours(rank).items():
            if neighbour.rank is None:
                missing.append((rank, d))
                assert d.di and d.dj
                assert (edges.left if d.di < 0 else edges.right) and (
                    edges.bottom if d.dj < 0 else edges.top
                )
            elif d.di == 0 or d.dj == 0:
                # Edge neighbours: same tile inside, another tile across a tile edge.
                crosses = (
                    (d.di < 0 and edges.left)
                    or (d.di > 0 and edges.right)
                    or (d.dj < 0 and edges.bottom)
                    or (d.dj > 0 and edges.top)
                )
                assert (p.tile_index(neighbour.rank) != p.tile_index(rank)) == crosses
                assert crosses or neighbour.rotations == 0
    assert len(missing) == 24  # four corners on each of six tiles


def test_cube_examples():
    p = CubedSpherePartitioner(TilePartitioner((1, 1)))
    assert p.neighbours(0)[Direction.RIGHT] == Neighbour(1, 0)
    assert p.neighbours(0)[Direction.TOP] == Neighbour(2, 1)
    assert p.neighbours(0)[Direction.LEFT] == Neighbour(4, 3)
    assert p.neighbours(0)[Direction.BOTTOM] == Neighbour(5, 0)
    assert all(p.neighbours(0)[d].rank is None for d in Direction if d.di and d.dj)
    p2 = CubedSpherePartitioner(TilePartitioner((2, 2)))
    # Top-left rank of tile 0: its bottom-left square lies across the left edge, on tile 4.
    assert p2.subtile_index(2) == (0, 1)
    assert p2.neighbours(2)[Direction.BOTTOM_LEFT] == Neighbour(19, 3)
    assert p2.neighbours(2)[Direction.LEFT] == Neighbour(18, 3)
    assert p2.neighbours(2)[Direction.TOP_LEFT].rank is None


@pytest.mark.parametrize("layout", SQUARE)
def test_rotations_around_interior_vertices_compose_to_identity(layout):
    """Walk around every vertex shared by four subdomains: the quarter turns cancel."""
    p = CubedSpherePartitioner(TilePartitioner(layout))
    loop = [Direction.RIGHT, Direction.TOP, Direction.LEFT, Direction.BOTTOM]
    for start in range(p.total_ranks):
        if p.on_tile_right(start) and p.on_tile_top(start):
            continue  # its top-right vertex is a cube corner
        rank, turns = start, 0
        for step in loop:
            neighbour = p.neighbours(rank)[_rotate(step, turns)]
            rank, turns = neighbour.rank, (turns + neighbour.rotations) % 4
        assert (rank, turns) == (start, 0)


@pytest.mark.parametrize(
    "layout",
    [(0, 1), (2, 0), (-1, 2), (1.5, 2), (2,), (1, 2, 3), "22", (True, 2), None],
)
def test_bad_layouts(layout):
    with pytest.raises(DecompositionError):
        TilePartitioner(layout)


def test_cube_needs_square_layout():
    with pytest.raises(DecompositionError, match="square layout"):
        CubedSpherePartitioner(TilePartitioner((1, 3)))
    with pytest.raises(DecompositionError):
        CubedSpherePartitioner((2, 2))


@pytest.mark.parametrize("rank", [-1, 24, 2.0, "3", True, None])
def test_bad_ranks(rank):
    p = CubedSpherePartitioner(TilePartitioner((2, 2)))
    with pytest.raises(DecompositionError):
        p.tile_index(rank)
    with pytest.raises(ValueError):  # DecompositionError is a ValueError
        p.neighbours(rank)


def test_layout_must_divide_tile():
    with pytest.raises(
        DecompositionError, match=r"layout \(3, 3\) does not divide a tile of 10 x 10"
    ):
        TilePartitioner((3, 3)).subdomain_extent(0, 10, 10)
    with pytest.raises(DecompositionError, match="square"):
        CubedSpherePartitioner(TilePartitioner((2, 2))).subdomain_extent(0, 8, 10)
    assert TilePartitioner((1, 3)).subdomain_extent(2, 5, 9) == ((0, 5), (6, 9))


def test_partitioners_compare_by_layout():
    assert TilePartitioner((2, 2)) == TilePartitioner((2, 2)) != TilePartitioner((1, 2))
    assert CubedSpherePartitioner(TilePartitioner((2, 2))) != TilePartitioner((2, 2))
    assert (
        len(
            {
                CubedSpherePartitioner(TilePartitioner((3, 3))),
                CubedSpherePartitioner(TilePartitioner((3, 3))),
            }
        )
        == 1
    )
