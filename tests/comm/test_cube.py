"""Cube geometry and the tile connectivity derived from it."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra.comm.cube import (
    Edge,
    cell_centre_angles,
    crossing_map,
    cube_connectivity,
    edge_link,
    tile_frame,
    tile_points,
    tile_tangents,
)
from orchestra.comm.index_map import IndexMap


@pytest.mark.parametrize("tile", range(6))
def test_frames_are_right_handed_and_points_on_sphere(tile):
    c, e1, e2 = tile_frame(tile)
    np.testing.assert_array_equal(np.cross(e1, e2), c)
    a = cell_centre_angles(5)
    p = tile_points(tile, *np.meshgrid(a, a, indexing="ij"))
    assert p.shape == (5, 5, 3)
    np.testing.assert_allclose(np.linalg.norm(p, axis=-1), 1.0)
    np.testing.assert_allclose(tile_points(tile, 0.0, 0.0), c)


def test_tangents_are_normalized_derivatives():
    alpha, beta, eps = 0.3, -0.2, 1e-6
    e_alpha, e_beta = tile_tangents(3, alpha, beta)
    d_alpha = tile_points(3, alpha + eps, beta) - tile_points(3, alpha - eps, beta)
    d_beta = tile_points(3, alpha, beta + eps) - tile_points(3, alpha, beta - eps)
    np.testing.assert_allclose(e_alpha, d_alpha / np.linalg.norm(d_alpha), atol=1e-8)
    np.testing.assert_allclose(e_beta, d_beta / np.linalg.norm(d_beta), atol=1e-8)


def test_every_edge_has_one_partner_and_links_are_symmetric():
    links = cube_connectivity()
    assert len(links) == 24
    for link in links:
        back = edge_link(link.neighbour_tile, link.neighbour_edge)
        assert (back.neighbour_tile, back.neighbour_edge, back.reversed) == (
            link.tile,
            link.edge,
            link.reversed,
        )
        # Neighbouring tiles are never opposite faces.
        c, _, _ = tile_frame(link.tile)
        c_other, _, _ = tile_frame(link.neighbour_tile)
        assert np.dot(c, c_other) == 0
    for tile in range(6):
        assert len({edge_link(tile, e).neighbour_tile for e in Edge}) == 4


@pytest.mark.parametrize("n", [1, 4, 7])
def test_crossing_there_and_back_is_identity(n):
    for link in cube_connectivity():
        there = crossing_map(link.tile, link.edge, n)
        back = crossing_map(link.neighbour_tile, link.neighbour_edge, n)
        assert back.compose(there) == IndexMap.identity()
        assert (there.rotations + back.rotations) % 4 == 0


def _to_angle(x, n):
    return -np.pi / 4 + np.asarray(x, float) * (np.pi / 2) / n


@pytest.mark.parametrize("n", [3, 8])
def test_crossing_map_keeps_points_on_the_shared_edge(n):
    """A point on our edge, mapped to the neighbour's coordinates, is the same point on the sphere."""
    along = np.linspace(0.1, n - 0.1, 9)
    for link in cube_connectivity():
        x, y = {
            Edge.LEFT: (0 * along, along),
            Edge.RIGHT: (0 * along + n, along),
            Edge.BOTTOM: (along, 0 * along),
            Edge.TOP: (along, 0 * along + n),
        }[link.edge]
        mx, my = crossing_map(link.tile, link.edge, n).point(x, y)
        ours = tile_points(link.tile, _to_angle(x, n), _to_angle(y, n))
        theirs = tile_points(link.neighbour_tile, _to_angle(mx, n), _to_angle(my, n))
        np.testing.assert_allclose(ours, theirs, atol=1e-14)


def test_turning_around_a_cube_corner_leaves_a_quarter_turn():
    """Crossing the three edges around a cube vertex returns with 90 degrees of holonomy."""
    n = 4
    corners = {
        (0, 0): (Edge.LEFT, Edge.BOTTOM),
        (n, 0): (Edge.RIGHT, Edge.BOTTOM),
        (0, n): (Edge.LEFT, Edge.TOP),
        (n, n): (Edge.RIGHT, Edge.TOP),
    }
    seen = set()
    for tile in range(6):
        for (x, y), (first, _) in corners.items():
            total, here, point, edge = IndexMap.identity(), tile, (x, y), first
            tiles = []
            for _ in range(3):
                step = crossing_map(here, edge, n)
                link = edge_link(here, edge)
                total, point = step.compose(total), step.point(*point)
                here, tiles = link.neighbour_tile, tiles + [link.neighbour_tile]
                # Leave the next tile through its other edge at this vertex.
                edge = next(e for e in corners[tuple(point)] if e != link.neighbour_edge)
            assert here == tile and tuple(total.point(x, y)) == (x, y)
            assert total.rotations in (1, 3)
            seen.add(frozenset(tiles))
    assert len(seen) == 8  # the eight vertices of the cube
