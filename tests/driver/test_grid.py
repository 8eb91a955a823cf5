"""Geometry of the cubed-sphere grid (serial: every rank's grid is built in this process)."""

import numpy as np
import pytest

from orchestra.comm import CubedSpherePartitioner, TilePartitioner, tile_points

from driver.constants import RADIUS
from driver.geometry import cross, dot, norm
from driver.grid import GridGeometry, Subdomain


def grids(n_tile: int, layout: int, n_halo: int = 3) -> list[GridGeometry]:
    partitioner = CubedSpherePartitioner(TilePartitioner((layout, layout)))
    return [
        GridGeometry.build(Subdomain.of_rank(partitioner, rank, n_tile, n_halo))
        for rank in range(partitioner.total_ranks)
    ]


@pytest.mark.parametrize("n_tile, layout", [(12, 1), (24, 2), (48, 1), (30, 3)])
def test_total_area_is_the_sphere(n_tile, layout):
    total = sum(g.compute(g.area).sum() for g in grids(n_tile, layout))
    assert abs(total / (4 * np.pi * RADIUS**2) - 1) < 1e-14


def test_corners_match_the_cube_module():
    """Compute-domain corners are orchestra.comm.cube's gnomonic points."""
    (g,) = [g for g in grids(12, 1) if g.subdomain.tile == 3]
    angles = np.linspace(-np.pi / 4, np.pi / 4, 13)
    expected = tile_points(3, *np.meshgrid(angles, angles, indexing="ij"))
    h = g.subdomain.n_halo
    assert np.allclose(g.corners[h : h + 13, h : h + 13], expected, rtol=0, atol=1e-15)


def test_metric_terms_are_sane():
    for g in grids(24, 1):
        c = g.subdomain.compute
        area = g.compute(g.area)
        # equiangular cells: smallest/largest area ratio is about 0.73 at C24
        assert 0.70 < area.min() / area.max() < 0.76
        assert np.allclose(norm(g.centres), 1.0, atol=1e-15)
        for basis in (g.basis_i, g.basis_j):
            assert np.allclose(norm(basis), 1.0, atol=1e-14)
            assert np.abs(dot(basis, g.centres)).max() < 1e-14  # tangent at the centre
        assert np.abs(dot(g.basis_i, g.basis_j)).max() < 1e-14
        # right-handed: e_i x e_j points outward
        assert (dot(cross(g.basis_i, g.basis_j), g.centres) > 0.99).all()
        # face normals: unit, perpendicular to the face's end points, pointing towards +i / +j
        for normal, length, step in ((g.x_normal, g.x_length, g.basis_i), (g.y_normal, g.y_length, g.basis_j)):
            assert np.allclose(norm(normal[c]), 1.0, atol=1e-14)
            assert (length[c] > 0).all()
            assert (dot(normal[c], step[c]) > 0.7).all()
        # a cell's outward normals times lengths sum to a radial vector (closed cell on the sphere)
        h = g.subdomain.n_halo
        i, j = np.meshgrid(np.arange(h, h + 24), np.arange(h, h + 24), indexing="ij")
        total = (
            g.x_normal[i + 1, j] * g.x_length[i + 1, j, None] - g.x_normal[i, j] * g.x_length[i, j, None]
            + g.y_normal[i, j + 1] * g.y_length[i, j + 1, None] - g.y_normal[i, j] * g.y_length[i, j, None]
        )
        tangential = total - dot(total, g.centres[i, j])[..., None] * g.centres[i, j]
        assert norm(tangential).max() < 1e-3 * np.sqrt(area.max())


def test_halo_geometry_is_the_neighbours_geometry():
    """Every halo cell (outside the corner squares) is the owning rank's cell, bit for bit."""
    layout, n_tile = 2, 12
    partitioner = CubedSpherePartitioner(TilePartitioner((layout, layout)))
    all_grids = grids(n_tile, layout)
    by_tile = {}
    for g in all_grids:
        s = g.subdomain
        tile_centres = by_tile.setdefault(s.tile, np.full((n_tile, n_tile, 3), np.nan))
        tile_centres[s.i_start : s.i_start + s.nx, s.j_start : s.j_start + s.ny] = g.compute(g.centres)
    checked = 0
    for g in all_grids:
        s, h = g.subdomain, g.subdomain.n_halo
        for a in range(s.nx + 2 * h):
            for b in range(s.ny + 2 * h):
                i, j = s.i_start + a - h, s.j_start + b - h
                location = partitioner.locate(s.tile, i, j, (n_tile, n_tile))
                if location is None:
                    assert not g.real_cell[a, b]
                    continue
                ni, nj = location.index_map.cell(i, j)
                assert np.array_equal(g.centres[a, b], by_tile[location.tile][ni, nj])
                checked += 1
    assert checked > 0


def test_kink_weights_only_on_tile_edges():
    for g in grids(12, 2):
        s, h = g.subdomain, g.subdomain.n_halo
        edge_faces = np.zeros(g.area.shape, bool)
        if s.edges.left:
            edge_faces[h, h : h + s.ny] = True
        if s.edges.right:
            edge_faces[h + s.nx, h : h + s.ny] = True
        assert np.all(g.x_kink_west[~edge_faces] == 0) and np.all(g.x_kink_east[~edge_faces] == 0)
        if s.edges.left or s.edges.right:
            assert np.abs(g.x_kink_west[edge_faces]).min() > 0


def test_cube_corner_faces_join_the_two_edge_halo_cells():
    """At a cube corner the faces bordering the corner square get the A-B centre distance."""
    (g,) = [g for g in grids(12, 1) if g.subdomain.tile == 0]
    h = g.subdomain.n_halo
    a, b = g.centres[h - 1, h], g.centres[h, h - 1]  # west-halo and south-halo cells at the corner
    distance = RADIUS * 2 * np.arcsin(0.5 * norm(a - b))
    assert g.y_weight[h - 1, h] == pytest.approx(g.y_length[h - 1, h] / distance, rel=1e-14)
    assert g.x_weight[h, h - 1] == pytest.approx(g.x_length[h, h - 1] / distance, rel=1e-14)
    assert g.x_weight[h - 1, h - 1] == 0 and g.y_weight[h - 1, h - 1] == 0  # corner square
    assert np.array_equal(g.corners[h - 1, h], g.corners[h, h - 1])  # the same point on the cube edge
