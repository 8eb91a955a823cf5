"""Expected halo contents from sphere geometry alone (no partitioner code).

A ghost cell ``k`` layers beyond a tile edge is the neighbour tile's cell ``k``
layers inside it. The cube is symmetric under reflection in the plane through
the origin and the shared cube edge, and that reflection maps one tile's
equiangular grid onto the other's; so the ghost cell is the mirror image of
our own interior cell ``k - 1`` layers inside the edge. We find it by nearest
cell centre over all six tiles. Used by the MPI workers and serial tests.
"""

from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from orchestra.comm.cube import cell_centre_angles, tile_frame, tile_points, tile_tangents

#: Solid-body rotation about a tilted axis: a smooth wind with no special alignment.
OMEGA = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])


def wind(points: np.ndarray) -> np.ndarray:
    """The analytic wind ``OMEGA x r`` at unit vectors ``points`` (..., 3)."""
    return np.cross(OMEGA, points)


@functools.cache
def centres(n: int) -> np.ndarray:
    """Cell centres of all tiles, shape (6, n, n, 3)."""
    a = cell_centre_angles(n)
    alpha, beta = np.meshgrid(a, a, indexing="ij")
    return np.stack([tile_points(t, alpha, beta) for t in range(6)])


def local_components(
    tile: int, n: int, i: np.ndarray, j: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Wind components along the unit tangents of ``tile`` at cells ``(i, j)``."""
    a = cell_centre_angles(n)
    alpha, beta = a[i], a[j]
    e_alpha, e_beta = tile_tangents(tile, alpha, beta)
    w = wind(tile_points(tile, alpha, beta))
    return np.sum(w * e_alpha, axis=-1), np.sum(w * e_beta, axis=-1)


def _reflection(tile: int, side: str) -> np.ndarray:
    c, e1, e2 = tile_frame(tile)
    s = -1.0 if side in ("left", "bottom") else 1.0
    ends = (
        (c + s * e1 - e2, c + s * e1 + e2)
        if side in ("left", "right")
        else (c - e1 + s * e2, c + e1 + s * e2)
    )
    normal = np.cross(*ends)
    normal /= np.linalg.norm(normal)
    return np.eye(3) - 2 * np.outer(normal, normal)


@functools.cache
def ghost_source(
    tile: int, i: int, j: int, n: int, cube: bool, ny: Optional[int] = None
) -> Optional[tuple[int, int, int, np.ndarray]]:
    """Owner ``(tile, i, j)`` of extended cell ``(i, j)`` of ``tile`` and the vector turn.

    The turn is the 2x2 signed permutation ``P`` with ``(u, v)_ours = P (u, v)_theirs``,
    found from the neighbour's own unit tangents. None where no cell owns the
    point (outside a single tile, beyond two edges of a cube tile). A single
    tile may be ``n x ny`` cells; cube tiles are ``n x n``.
    """
    out_i, out_j = not 0 <= i < n, not 0 <= j < (n if ny is None else ny)
    if not (out_i or out_j):
        return tile, i, j, np.eye(2)
    if not cube or (out_i and out_j):
        return None
    if out_i:
        side, mirror, flip = (
            ("left" if i < 0 else "right"),
            (-1 - i if i < 0 else 2 * n - 1 - i, j),
            (-1, 1),
        )
    else:
        side, mirror, flip = (
            ("bottom" if j < 0 else "top"),
            (i, -1 - j if j < 0 else 2 * n - 1 - j),
            (1, -1),
        )
    reflect = _reflection(tile, side)
    point = reflect @ centres(n)[tile][mirror]
    distance = np.linalg.norm(centres(n) - point, axis=-1)
    distance[tile] = np.inf
    t, si, sj = np.unravel_index(np.argmin(distance), distance.shape)
    assert distance[t, si, sj] < 1e-12, (tile, i, j, distance[t, si, sj])
    # Our axes continued into the ghost cell: mirror images, the normal one reversed.
    a = cell_centre_angles(n)
    ours = [
        f * (reflect @ e) for f, e in zip(flip, tile_tangents(tile, a[mirror[0]], a[mirror[1]]))
    ]
    theirs = tile_tangents(int(t), a[si], a[sj])
    turn = np.zeros((2, 2))
    for row, axis in enumerate(ours):
        for col, their_axis in enumerate(theirs):
            for sign in (1, -1):
                if np.linalg.norm(axis - sign * their_axis) < 1e-12:
                    turn[row, col] = sign
    assert sorted(np.abs(turn).sum(axis=1)) == [1, 1] and round(np.linalg.det(turn)) == 1, turn
    return int(t), int(si), int(sj), turn
