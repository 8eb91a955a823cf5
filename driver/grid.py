"""Per-rank geometry of the gnomonic equiangular cubed sphere, halos included.

Every geometric quantity is derived from cell-corner points on the sphere
(radius :data:`~driver.constants.RADIUS`), with the tile frames of
:mod:`orchestra.comm.cube`. Halo cells are the neighbour tile's actual cells
("kinked" halos): a point beyond one tile edge is computed in the neighbour
tile's frame turned into this tile's index orientation, so halo geometry is
the neighbour's geometry, bit for bit. Corner squares beyond two tile edges
(at a cube corner) have no cells; they get finite placeholder geometry and
zero face weights, and the model never reads them.

Equiangular coordinates are indexed by integer "half indices" ``m``: corner
``I`` has ``m = 2 I``, the centre of cell ``i`` has ``m = 2 i + 1``, and the
angle is ``(m - n) pi / (4 n)`` for a tile of ``n`` cells. The mirror image
of ``m`` (``2n - m``) then gives exactly the negated angle, which keeps
neighbouring tiles' points bit-identical.

Array conventions: ``[i, j]`` (plus a trailing axis of 3 for vectors), with
``n_halo`` ghost layers; face arrays are indexed like cells, the x-face
``[i, j]`` is the west face of cell ``[i, j]`` and the y-face its south face.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from orchestra.calls.callbacks import dace_inhibitor
from orchestra.comm import Partitioner, TileEdges, tile_frame

from driver.constants import RADIUS
from driver.geometry import arc_angle, cross, dot, gnomonic_points, normalize, triangle_area

SQRT_HALF = np.sqrt(0.5)


@dataclasses.dataclass(frozen=True)
class Subdomain:
    """One rank's compute domain: tile, position and size in cells, halo width, tile edges."""

    tile: int
    n_tile: int
    n_halo: int
    i_start: int
    j_start: int
    nx: int
    ny: int
    edges: TileEdges

    @classmethod
    def of_rank(cls, partitioner: Partitioner, rank: int, n_tile: int, n_halo: int) -> "Subdomain":
        """The subdomain of ``rank`` for tiles of ``n_tile x n_tile`` cells."""
        (i0, i1), (j0, j1) = partitioner.subdomain_extent(rank, n_tile, n_tile)
        return cls(
            tile=partitioner.tile_index(rank),
            n_tile=n_tile,
            n_halo=n_halo,
            i_start=i0,
            j_start=j0,
            nx=i1 - i0,
            ny=j1 - j0,
            edges=partitioner.tile_edges(rank),
        )

    @property
    def shape(self) -> tuple[int, int]:
        """Horizontal shape of local arrays, halos included."""
        return self.nx + 2 * self.n_halo, self.ny + 2 * self.n_halo

    @property
    def compute(self) -> tuple[slice, slice]:
        """Index of the compute domain in local arrays."""
        h = self.n_halo
        return slice(h, h + self.nx), slice(h, h + self.ny)


def _tangent_of_angle(m: np.ndarray, n: int) -> np.ndarray:
    """``tan((m - n) pi / (4 n))``: odd in the angle bit for bit, and exactly +-1 on tile edges.

    On a tile edge a point is also a neighbour tile's point, where the same
    coordinate is the frame's centre component (exactly 1): ``tan(pi/4)``
    rounds to 0.9999999999999999, so it is replaced by 1.
    """
    angle = (m - n) * (np.pi / (4 * n))
    tangent = np.copysign(np.tan(np.abs(angle)), angle)
    return np.where(np.abs(m - n) == n, np.sign(m - n).astype(float), tangent)


def extended_frame_points(
    tile: int, mi: np.ndarray, mj: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points at half indices ``(mi, mj)`` of ``tile``'s extended index space, with their frame axes.

    Returns ``(points, axis1, axis2)``, each ``(..., 3)``: the point and the
    axes (along increasing i and j) of the tile frame it was computed in. A
    point beyond one tile edge is folded onto the neighbour tile (frame turned
    by a quarter turn about the edge); beyond two edges it is folded twice.
    """
    centre, axis1, axis2 = tile_frame(tile)
    two_n = 2 * n
    fold_i = np.where(mi < 0, -1, np.where(mi > two_n, 1, 0))
    fold_j = np.where(mj < 0, -1, np.where(mj > two_n, 1, 0))
    points = np.empty(mi.shape + (3,))
    axes1 = np.empty_like(points)
    axes2 = np.empty_like(points)
    for fi in (-1, 0, 1):
        for fj in (-1, 0, 1):
            mask = (fold_i == fi) & (fold_j == fj)
            if not mask.any():
                continue
            c, a1, a2 = centre, axis1, axis2
            m1, m2 = mi[mask], mj[mask]
            if fi == 1:  # east neighbour: its centre is our axis1
                c, a1, m1 = a1, -c, m1 - two_n
            elif fi == -1:
                c, a1, m1 = -a1, c, m1 + two_n
            if fj == 1:
                c, a2, m2 = a2, -c, m2 - two_n
            elif fj == -1:
                c, a2, m2 = -a2, c, m2 + two_n
            points[mask] = gnomonic_points(c, a1, a2, _tangent_of_angle(m1, n), _tangent_of_angle(m2, n))
            axes1[mask] = a1
            axes2[mask] = a2
    return points, axes1, axes2


def _unit_tangent(axis: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Unit tangent at ``point`` of the coordinate line along ``axis``: ``axis - (axis.p) p``."""
    return normalize(axis - dot(axis, point)[..., None] * point)


def orthonormal_basis(t1: np.ndarray, t2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An orthonormal pair near unit tangents ``t1, t2``, symmetric in how it treats them.

    ``s = unit(t1 + t2)``, ``d = unit(t1 - t2)``, ``e1 = (s + d)/sqrt 2``,
    ``e2 = (s - d)/sqrt 2``: turning ``(t1, t2)`` by a quarter turn, e.g. to
    ``(t2, -t1)``, turns ``(e1, e2)`` to exactly ``(e2, -e1)``.
    """
    s = normalize(t1 + t2)
    d = normalize(t1 - t2)
    return (s + d) * SQRT_HALF, (s - d) * SQRT_HALF


def _face_weight(
    length: np.ndarray, left: np.ndarray, right: np.ndarray, real: np.ndarray, radius: float
) -> np.ndarray:
    """``length / distance(left, right)`` where both cells are real, else 0."""
    distance = np.where(real, radius * arc_angle(left, right), 1.0)
    return np.where(real, length / distance, 0.0)


@dataclasses.dataclass
class GridGeometry:
    """Geometry of one rank's cells, faces and corners (numpy arrays, metres).

    Attributes (horizontal shape ``(nx + 2h, ny + 2h)`` unless noted):
        corners: ``(nx + 2h + 1, ny + 2h + 1, 3)`` unit vectors of cell corners.
        centres: unit vectors of cell centres (equiangular midpoints).
        area: cell areas (spherical quadrilaterals).
        basis_i, basis_j: orthonormal tangent vectors at centres, close to
            increasing i and j: (u, v) are the wind's components along them.
        x_length, x_normal, x_tangent: the west face of each cell, its unit
            normal (pointing to +i) and tangent (pointing to +j).
        y_length, y_normal, y_tangent: the south face, normal to +j, tangent to +i.
        x_weight, y_weight: ``length / centre distance`` across each face
            (Laplacian weights); zero where a neighbour cell does not exist.
        x_kink_west, x_kink_east, y_kink_south, y_kink_north: on faces on a
            tile edge, the weights of the along-edge differences of the two
            sides' cells that move the two-cell average from the midpoint of
            the centres' chord to the face midpoint (see :meth:`_kink_weights`);
            zero elsewhere.
        real_cell: False in corner squares (beyond two tile edges).
    """

    subdomain: Subdomain
    radius: float
    corners: np.ndarray
    centres: np.ndarray
    area: np.ndarray
    basis_i: np.ndarray
    basis_j: np.ndarray
    x_length: np.ndarray
    x_normal: np.ndarray
    x_tangent: np.ndarray
    x_weight: np.ndarray
    y_length: np.ndarray
    y_normal: np.ndarray
    y_tangent: np.ndarray
    y_weight: np.ndarray
    x_kink_west: np.ndarray
    x_kink_east: np.ndarray
    y_kink_south: np.ndarray
    y_kink_north: np.ndarray
    real_cell: np.ndarray

    @classmethod
    def build(cls, subdomain: Subdomain, radius: float = RADIUS) -> "GridGeometry":
        """Compute the geometry of ``subdomain`` (halos included)."""
        s, h, n = subdomain, subdomain.n_halo, subdomain.n_tile
        if n < h:
            raise ValueError(f"a tile of {n} cells is smaller than n_halo={h}")
        ci = 2 * (s.i_start + np.arange(-h, s.nx + h + 1))
        cj = 2 * (s.j_start + np.arange(-h, s.ny + h + 1))
        corners, _, _ = extended_frame_points(s.tile, *np.meshgrid(ci, cj, indexing="ij"), n)
        centres, axis1, axis2 = extended_frame_points(s.tile, *np.meshgrid(ci[:-1] + 1, cj[:-1] + 1, indexing="ij"), n)
        basis_i, basis_j = orthonormal_basis(_unit_tangent(axis1, centres), _unit_tangent(axis2, centres))

        p00, p10, p01, p11 = corners[:-1, :-1], corners[1:, :-1], corners[:-1, 1:], corners[1:, 1:]
        area = radius**2 * (triangle_area(p00, p10, p11) + triangle_area(p11, p01, p00))

        x_length = radius * arc_angle(p00, p01)
        x_normal = normalize(cross(p01, p00))
        x_tangent = normalize(p01 - p00)
        y_length = radius * arc_angle(p00, p10)
        y_normal = normalize(cross(p00, p10))
        y_tangent = normalize(p10 - p00)

        gi = s.i_start + np.arange(-h, s.nx + h)
        gj = s.j_start + np.arange(-h, s.ny + h)
        inside_i = (gi >= 0) & (gi < n)
        inside_j = (gj >= 0) & (gj < n)
        real_cell = inside_i[:, None] | inside_j[None, :]

        x_weight = np.zeros_like(area)
        x_weight[1:] = _face_weight(x_length[1:], centres[:-1], centres[1:], real_cell[:-1] & real_cell[1:], radius)
        y_weight = np.zeros_like(area)
        y_weight[:, 1:] = _face_weight(
            y_length[:, 1:], centres[:, :-1], centres[:, 1:], real_cell[:, :-1] & real_cell[:, 1:], radius
        )

        zeros = [np.zeros_like(area) for _ in range(4)]
        geometry = cls(
            subdomain, radius, corners, centres, area, basis_i, basis_j,
            x_length, x_normal, x_tangent, x_weight, y_length, y_normal, y_tangent, y_weight, *zeros, real_cell,
        )
        geometry._join_cube_corners()
        geometry._kink_weights()
        return geometry

    def _kink_weights(self) -> None:
        """Weights that make face values on tile edges second-order accurate.

        Grid lines kink at a tile edge: the chord between the centres of the
        two cells across an edge face crosses the edge at ``P*``, a fraction
        of a cell away from the face midpoint ``m`` along the edge. The face
        value is ``(q_L + q_R)/2`` (second order at ``P*``) plus
        ``(m - P*).t`` times the along-edge derivative, estimated on each
        side from the cells before and after along the edge (one-sided at a
        cube corner): ``w_S * (q_S[after] - q_S[before])`` for both sides S.
        The formula is symmetric, so both tiles compute the same value.
        """
        s, h = self.subdomain, self.subdomain.n_halo
        rows = np.arange(s.ny)
        columns = np.arange(s.nx)
        before_j = np.where((rows == 0) & s.edges.bottom, rows, rows - 1) + h
        after_j = np.where((rows == s.ny - 1) & s.edges.top, rows, rows + 1) + h
        before_i = np.where((columns == 0) & s.edges.left, columns, columns - 1) + h
        after_i = np.where((columns == s.nx - 1) & s.edges.right, columns, columns + 1) + h
        j = rows + h
        i = columns + h
        for touches, face in ((s.edges.left, h), (s.edges.right, h + s.nx)):
            if touches:
                west, east = self._kink_pair(
                    self.corners[face, j], self.corners[face, j + 1], self.x_tangent[face, j],
                    self.centres[face - 1], self.centres[face], j, before_j, after_j,
                )
                self.x_kink_west[face, j], self.x_kink_east[face, j] = west, east
        for touches, face in ((s.edges.bottom, h), (s.edges.top, h + s.ny)):
            if touches:
                south, north = self._kink_pair(
                    self.corners[i, face], self.corners[i + 1, face], self.y_tangent[i, face],
                    self.centres[:, face - 1], self.centres[:, face], i, before_i, after_i,
                )
                self.y_kink_south[i, face], self.y_kink_north[i, face] = south, north

    @staticmethod
    def _kink_pair(
        corner_a: np.ndarray, corner_b: np.ndarray, tangent: np.ndarray, side_l: np.ndarray, side_r: np.ndarray,
        index: np.ndarray, before: np.ndarray, after: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Weights of the along-edge differences on the two sides (cells ``side_*[index]``)."""
        midpoint = normalize(corner_a + corner_b)
        chord = normalize(side_l[index] + side_r[index])
        offset = dot(midpoint - chord, tangent)
        weights = []
        for side in (side_l, side_r):
            spacing = dot(side[after] - side[before], tangent)
            weights.append(0.5 * offset / spacing)
        return weights[0], weights[1]

    def _join_cube_corners(self) -> None:
        """Laplacian weights across the faces that meet at a cube corner.

        Three cells meet at a cube corner. The edge-halo cell A next to the
        corner (beyond one tile edge) shares the face that borders the corner
        square with the other edge-halo cell B: its neighbour across that face
        is B, not the missing corner-square cell.
        """
        s, h = self.subdomain, self.subdomain.n_halo
        nx, ny = s.nx, s.ny
        # (touches, cell A, y-face index of A's face, cell B, x-face index of B's face), local cell indices
        joints = (
            (s.edges.left and s.edges.bottom, (-1, 0), (-1, 0), (0, -1), (0, -1)),
            (s.edges.right and s.edges.bottom, (nx, 0), (nx, 0), (nx - 1, -1), (nx, -1)),
            (s.edges.left and s.edges.top, (-1, ny - 1), (-1, ny), (0, ny), (0, ny)),
            (s.edges.right and s.edges.top, (nx, ny - 1), (nx, ny), (nx - 1, ny), (nx, ny)),
        )
        for touches, cell_a, y_face, cell_b, x_face in joints:
            if not touches:
                continue
            a = (cell_a[0] + h, cell_a[1] + h)
            b = (cell_b[0] + h, cell_b[1] + h)
            distance = self.radius * arc_angle(self.centres[a], self.centres[b])
            yf = (y_face[0] + h, y_face[1] + h)
            xf = (x_face[0] + h, x_face[1] + h)
            self.y_weight[yf] = self.y_length[yf] / distance
            self.x_weight[xf] = self.x_length[xf] / distance

    def compute(self, array: np.ndarray) -> np.ndarray:
        """The compute-domain part of a cell array."""
        return array[self.subdomain.compute]

    @property
    def min_area(self) -> float:
        """The smallest cell area of this rank's compute domain."""
        return float(self.compute(self.area).min())


class GridFields:
    """The geometry as gt4py storages (2-D ``[i, j]`` fields) for the stencils.

    Names: ``area``, ``rarea``; ``centre_{x,y,z}``; ``basis_i_{x,y,z}``,
    ``basis_j_{x,y,z}``; for faces ``x_length``, ``x_weight``,
    ``x_normal_{x,y,z}``, ``x_tangent_{x,y,z}`` and the same with ``y_``;
    ``x_kink_west``, ``x_kink_east``, ``y_kink_south``, ``y_kink_north``.
    """

    def __init__(self, geometry: GridGeometry, backend: str) -> None:
        import gt4py.storage as gt_storage

        def field(values: np.ndarray) -> Any:
            return gt_storage.from_array(
                np.ascontiguousarray(values), np.float64, backend=backend, dimensions=("I", "J")
            )

        g = geometry
        self.area = field(g.area)
        self.rarea = field(1.0 / g.area)
        for name, vectors in (
            ("centre", g.centres), ("basis_i", g.basis_i), ("basis_j", g.basis_j),
            ("x_normal", g.x_normal), ("x_tangent", g.x_tangent),
            ("y_normal", g.y_normal), ("y_tangent", g.y_tangent),
        ):
            for axis, component in enumerate("xyz"):
                setattr(self, f"{name}_{component}", field(vectors[..., axis]))
        self.x_length = field(g.x_length)
        self.y_length = field(g.y_length)
        self.x_weight = field(g.x_weight)
        self.y_weight = field(g.y_weight)
        self.x_kink_west = field(g.x_kink_west)
        self.x_kink_east = field(g.x_kink_east)
        self.y_kink_south = field(g.y_kink_south)
        self.y_kink_north = field(g.y_kink_north)


class GridInfo:
    """Scalars of the decomposition that orchestrated code reads at run time.

    They differ between ranks (and layouts), so orchestrated code must not
    fold them in when it is parsed: it reads them through the
    :func:`~orchestra.calls.callbacks.dace_inhibitor` getters here, assigning the
    result to an annotated variable (``da_min: float = self.grid_info.min_area()``).
    """

    def __init__(self, geometry: GridGeometry) -> None:
        self._min_area = geometry.min_area

    @dace_inhibitor
    def min_area(self) -> float:
        """The smallest cell area (m2) of this rank's compute domain."""
        return self._min_area
