"""Expected interface synchronization from geometry alone (no plan, no partitioner maps).

Every local point of an interface-staggered pair (x on ``[i cell, j interface]``,
y on ``[i interface, j cell]``) has a position and a unit direction: on the
cubed sphere the point from :func:`orchestra.comm.cube.tile_points` and the
tangent of its component from :func:`~orchestra.comm.cube.tile_tangents`; on
a flat tile its tile coordinates (wrapped along periodic axes) and the
component's axis. The reference synchronization finds, for each point on a
rank's north edge of x and east edge of y, the one point with the same
position on some rank's south edge of x or west edge of y, and copies that
value projected on our direction (exactly +1 or -1: ``x`` or ``-x``).

Only :meth:`Partitioner.subdomain_extent`, ``tile_index`` and ``total_ranks``
are used: where each rank's cells lie, not how tiles connect.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from orchestra.comm.cube import tile_points, tile_tangents
from orchestra.comm.partitioner import Partitioner
from tests.comm.halo_reference import wind

Pair = tuple[np.ndarray, np.ndarray]
HALO_VALUE = -999.0


@dataclasses.dataclass(frozen=True)
class Geometry:
    """A cube (``sphere=True``) or a flat tile, periodic along the axes in ``periodic``."""

    partitioner: Partitioner
    nx: int
    ny: int
    n_halo: int
    sphere: bool = False
    periodic: tuple[bool, bool] = (False, False)

    @property
    def n_tile(self) -> tuple[int, int]:
        return self.nx * self.partitioner.layout[0], self.ny * self.partitioner.layout[1]

    def tile_coordinates(self, rank: int, component: int, ii: np.ndarray, jj: np.ndarray):
        """Continuous tile coordinates of local points ``(ii, jj)`` of one component."""
        (i0, _), (j0, _) = self.partitioner.subdomain_extent(rank, *self.n_tile)
        h = self.n_halo
        x = i0 + ii - h + (0.5 if component == 0 else 0.0)
        y = j0 + jj - h + (0.0 if component == 0 else 0.5)
        return x, y

    def points(self, rank: int, component: int, ii: np.ndarray, jj: np.ndarray):
        """Positions ``(..., 3)`` and unit directions ``(..., 3)`` of the points."""
        x, y = self.tile_coordinates(rank, component, np.asarray(ii), np.asarray(jj))
        if self.sphere:
            n = self.n_tile[0]
            alpha, beta = -np.pi / 4 + x * (np.pi / 2) / n, -np.pi / 4 + y * (np.pi / 2) / n
            tile = self.partitioner.tile_index(rank)
            return tile_points(tile, alpha, beta), tile_tangents(tile, alpha, beta)[component]
        x = np.mod(x, self.n_tile[0]) if self.periodic[0] else x
        y = np.mod(y, self.n_tile[1]) if self.periodic[1] else y
        position = np.stack([x, y, np.zeros_like(x)], axis=-1)
        direction = np.zeros_like(position)
        direction[..., component] = 1.0
        return position, direction


def north_east(g: Geometry) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(component, ii, jj) of the overwritten edges: x at j = ny, y at i = nx (local indices)."""
    h, nx, ny = g.n_halo, g.nx, g.ny
    return [
        (0, h + np.arange(nx), np.full(nx, h + ny)),
        (1, np.full(ny, h + nx), h + np.arange(ny)),
    ]


def south_west(g: Geometry) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(component, ii, jj) of the winning edges: x at j = 0, y at i = 0 (local indices)."""
    h, nx, ny = g.n_halo, g.nx, g.ny
    return [(0, h + np.arange(nx), np.full(nx, h)), (1, np.full(ny, h), h + np.arange(ny))]


def planar_wind(position: np.ndarray) -> np.ndarray:
    """A smooth wind on a flat tile (not periodic itself: wrapped copies differ)."""
    x, y = position[..., 0], position[..., 1]
    return np.stack([np.sin(0.7 * x + 0.3 * y), np.cos(0.4 * x - 0.9 * y), 0 * x], axis=-1)


def local_pair(g: Geometry, rank: int, nz: int = 0, dtype=np.float64) -> Pair:
    """Tangent components of a smooth wind plus rank and index terms; halo set to HALO_VALUE."""
    h, nx, ny = g.n_halo, g.nx, g.ny
    shapes = ((nx + 2 * h, ny + 1 + 2 * h), (nx + 1 + 2 * h, ny + 2 * h))
    pair = []
    for component, shape in enumerate(shapes):
        ii, jj = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
        position, direction = g.points(rank, component, ii, jj)
        flow = wind(position) if g.sphere else planar_wind(position)
        # Rank and local index terms: the two copies of a shared point always differ.
        value = np.sum(flow * direction, axis=-1) + 0.01 * (rank + 1) + 0.001 * (ii + 2 * jj)
        value[:h], value[shape[0] - h :], value[:, :h], value[:, shape[1] - h :] = (HALO_VALUE,) * 4
        levels = value[..., None] * (1 + np.arange(nz)) if nz else value
        pair.append(levels.astype(dtype))
    return pair[0], pair[1]


def reference_synchronize(g: Geometry, fields: Sequence[Pair]) -> list[Pair]:
    """Copies of ``fields`` (one pair per rank) with north/east edges set from the winners."""
    winners = []  # (position, direction, rank, component, ii, jj)
    for rank in range(g.partitioner.total_ranks):
        for component, ii, jj in south_west(g):
            position, direction = g.points(rank, component, ii, jj)
            for n in range(len(ii)):
                winners.append((position[n], direction[n], rank, component, ii[n], jj[n]))
    positions = np.array([w[0] for w in winners])
    result = [(x.copy(), y.copy()) for x, y in fields]
    for rank in range(g.partitioner.total_ranks):
        for component, ii, jj in north_east(g):
            position, direction = g.points(rank, component, ii, jj)
            for n in range(len(ii)):
                found = _winner(positions, position[n])
                if found is None:
                    continue
                _, their_direction, their_rank, their_component, wi, wj = winners[found]
                value = fields[their_rank][their_component][wi, wj]
                sign = float(np.dot(their_direction, direction[n]))
                assert abs(abs(sign) - 1.0) < 1e-12, (rank, component, n, sign)
                result[rank][component][ii[n], jj[n]] = value if sign > 0 else np.negative(value)
    return result


def _winner(positions: np.ndarray, point: np.ndarray) -> Optional[int]:
    distance = np.linalg.norm(positions - point, axis=-1)
    matches = np.flatnonzero(distance < 1e-9)
    assert len(matches) <= 1, (point, matches)
    return int(matches[0]) if len(matches) else None


def unmatched_points(g: Geometry) -> int:
    """How many north/east points have no winner (0 on the sphere and on periodic tiles)."""
    positions = np.concatenate(
        [
            g.points(rank, component, ii, jj)[0]
            for rank in range(g.partitioner.total_ranks)
            for component, ii, jj in south_west(g)
        ]
    )
    return sum(
        _winner(positions, point) is None
        for rank in range(g.partitioner.total_ranks)
        for component, ii, jj in north_east(g)
        for point in g.points(rank, component, ii, jj)[0]
    )
