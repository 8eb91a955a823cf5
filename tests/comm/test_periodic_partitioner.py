"""Periodic and channel partitioners without MPI: neighbours, locate, plans, bad input."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from orchestra.comm import (
    ChannelPartitioner,
    CubedSpherePartitioner,
    DecompositionError,
    Direction,
    IndexMap,
    Neighbour,
    PeriodicTilePartitioner,
    TileEdges,
    TilePartitioner,
    periodic,
    walls,
)
from orchestra.comm.halo_plan import plan_halo

from .periodic_reference import SENTINEL, local, pad, window

LAYOUTS = [(1, 1), (2, 1), (1, 2), (2, 2), (3, 3), (2, 3), (4, 1), (3, 2)]
KINDS = [PeriodicTilePartitioner, ChannelPartitioner]


@pytest.mark.parametrize("module", [periodic, walls], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_neighbours_wrap_along_periodic_axes(kind, layout):
    p = kind(layout)
    channel = kind is ChannelPartitioner
    for rank in range(p.total_ranks):
        i, j = p.subtile_index(rank)
        for d, neighbour in p.neighbours(rank).items():
            if channel and not 0 <= j + d.dj < layout[1]:
                assert neighbour == Neighbour(None, 0), (rank, d)
            else:
                expected = p.rank_of(0, (i + d.di) % layout[0], (j + d.dj) % layout[1])
                assert neighbour == Neighbour(expected, 0), (rank, d)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_neighbour_relation_is_symmetric(kind, layout):
    p = kind(layout)
    for rank in range(p.total_ranks):
        for d, neighbour in p.neighbours(rank).items():
            if neighbour.rank is not None:
                back = Direction((-d.di, -d.dj))
                assert p.neighbours(neighbour.rank)[back] == Neighbour(rank, 0)


def test_self_and_repeated_neighbours():
    one = PeriodicTilePartitioner((1, 1)).neighbours(0)
    assert set(one) == set(Direction) and all(n == Neighbour(0, 0) for n in one.values())
    two = PeriodicTilePartitioner((2, 3)).neighbours(0)
    assert two[Direction.LEFT] == two[Direction.RIGHT] == Neighbour(1, 0)
    assert two[Direction.BOTTOM] == Neighbour(4, 0) and two[Direction.TOP] == Neighbour(2, 0)
    channel = ChannelPartitioner((1, 1)).neighbours(0)
    assert channel[Direction.LEFT] == channel[Direction.RIGHT] == Neighbour(0, 0)
    assert all(channel[d].rank is None for d in Direction if d.dj)


def test_locate_wraps_by_whole_tiles():
    p, n = PeriodicTilePartitioner((2, 2)), (4, 6)
    location = p.locate(0, -1, 7, n)
    assert location.tile == 0 and location.index_map == IndexMap.rotation(0, offset=(4, -6))
    assert location.index_map.cell(-1, 7) == (3, 1)
    assert p.locate(0, 9, -13, n).index_map.cell(9, -13) == (1, 5)  # two periods each way
    assert p.locate(0, 2, 3, n).index_map == IndexMap.identity()
    c = ChannelPartitioner((2, 2))
    assert c.locate(0, -1, 0, n).index_map.cell(-1, 0) == (3, 0)
    assert c.locate(0, 4, 5, n).index_map.cell(4, 5) == (0, 5)
    assert c.locate(0, 0, -1, n) is None and c.locate(0, -1, 6, n) is None
    for q in (p, c):
        with pytest.raises(DecompositionError, match="only tile 0"):
            q.locate(1, 0, 0, n)


def test_wall_edges():
    c = ChannelPartitioner((2, 3))
    assert [c.wall_edges(r).bottom for r in range(6)] == [True, True, False, False, False, False]
    assert [c.wall_edges(r).top for r in range(6)] == [False, False, False, False, True, True]
    assert not any(c.wall_edges(r).left or c.wall_edges(r).right for r in range(6))
    assert ChannelPartitioner((3, 1)).wall_edges(1) == TileEdges(False, False, True, True)
    assert PeriodicTilePartitioner((2, 2)).wall_edges(3) == TileEdges(False, False, False, False)
    with pytest.raises(DecompositionError, match="outside"):
        c.wall_edges(6)


def test_not_tile_partitioners_and_not_cube_tiles():
    for kind in KINDS:
        p = kind((2, 2))
        assert not isinstance(p, TilePartitioner)
        with pytest.raises(DecompositionError, match="needs a TilePartitioner"):
            CubedSpherePartitioner(p)


def test_equality_hash_repr():
    assert PeriodicTilePartitioner((2, 2)) == PeriodicTilePartitioner([2, 2])
    assert PeriodicTilePartitioner((2, 2)) != PeriodicTilePartitioner((2, 1))
    assert PeriodicTilePartitioner((2, 2)) != TilePartitioner((2, 2))
    assert ChannelPartitioner((2, 2)) != PeriodicTilePartitioner((2, 2))
    assert len({ChannelPartitioner((3, 1)), ChannelPartitioner((3, 1)), TilePartitioner((3, 1))}) == 2
    assert repr(PeriodicTilePartitioner((2, 3))) == "PeriodicTilePartitioner(layout=(2, 3))"
    assert repr(ChannelPartitioner((4, 1))) == "ChannelPartitioner(layout=(4, 1))"
    assert eval(repr(ChannelPartitioner((4, 1)))) == ChannelPartitioner((4, 1))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", [(0, 1), (2, 0), (1.5, 2), (2,), (True, 2), None])
def test_bad_layouts(kind, layout):
    with pytest.raises(DecompositionError):
        kind(layout)


@pytest.mark.parametrize("kind", KINDS)
def test_layout_must_divide_the_domain(kind):
    with pytest.raises(DecompositionError, match=r"layout \(3, 2\) does not divide a tile of 10 x 6"):
        kind((3, 2)).subdomain_extent(0, 10, 6)
    with pytest.raises(DecompositionError, match=r"7 % 2 = 1"):
        kind((1, 2)).subdomain_shape(4, 7)
    assert kind((3, 2)).subdomain_extent(5, 12, 6) == ((8, 12), (3, 6))


@pytest.mark.parametrize("kind", KINDS)
def test_halo_wider_than_a_subdomain_is_refused(kind):
    with pytest.raises(DecompositionError, match="smaller than n_halo=3"):
        plan_halo(kind((2, 2)), 0, 4, 2, 3)


def test_single_rank_plan_sends_every_side_to_itself():
    plan = plan_halo(PeriodicTilePartitioner((1, 1)), 0, 4, 3, 2)
    assert {t.direction for t in plan.receives} == set(Direction)
    assert {(t.source_rank, t.target_rank) for t in plan.receives + plan.sends} == {(0, 0)}
    assert sorted(t.direction.index for t in plan.sends) == list(range(8))
    left = next(t for t in plan.receives if t.direction is Direction.LEFT)
    assert left.source == (slice(4, 6), slice(2, 5)) and left.target == (slice(0, 2), slice(2, 5))
    channel = plan_halo(ChannelPartitioner((1, 1)), 0, 4, 3, 2)
    assert {t.direction for t in channel.receives} == {Direction.LEFT, Direction.RIGHT}


def apply_plans(p, arrays, nx, ny, h):
    """Apply every rank's receives in one process, reading the other ranks' arrays."""
    for rank in range(p.total_ranks):
        for t in plan_halo(p, rank, nx, ny, h).receives:
            assert t.rotations == 0
            arrays[rank][t.target] = arrays[t.source_rank][t.source]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("h", [1, 2, 3])
def test_plans_fill_every_ghost_cell_like_a_periodic_pad(kind, layout, h):
    nx, ny = 3, 4
    n_tile = (nx * layout[0], ny * layout[1])
    p = kind(layout)
    field = np.arange(np.prod(n_tile), dtype=float).reshape(n_tile) + 1
    arrays = [local(field, p, rank, h) for rank in range(p.total_ranks)]
    apply_plans(p, arrays, nx, ny, h)
    expected = pad(field, h, kind is ChannelPartitioner, None)
    for rank, a in enumerate(arrays):
        np.testing.assert_array_equal(a, window(expected, p, rank, n_tile, h), err_msg=f"rank {rank}")
    if kind is ChannelPartitioner:  # the untouched rows beyond the walls, corners included
        walled = [a for r, a in enumerate(arrays) if p.wall_edges(r).bottom]
        assert all((a[:, :h] == SENTINEL).all() and (a[:, h:-h] != SENTINEL).all() for a in walled)
