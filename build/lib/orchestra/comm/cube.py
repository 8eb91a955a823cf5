"""Geometry of the gnomonic equiangular cubed sphere, and the tile connectivity.

Six tiles; tile ``t`` has a right-handed frame ``(c, e1, e2)`` (``e1 x e2 = c``):

====  ====  ====  ====
tile   c     e1    e2
====  ====  ====  ====
0     +x    +y    +z
1     +y    -x    +z
2     +z    -x    -y
3     -x    -z    -y
4     -y    -z    +x
5     -z    +y    +x
====  ====  ====  ====

The point with equiangular coordinates ``(alpha, beta)`` in ``[-pi/4, pi/4]**2``
is ``normalize(c + tan(alpha) e1 + tan(beta) e2)``; index ``i`` grows with
alpha, ``j`` with beta.

Which edge of which tile touches which edge of which other tile is *derived*
here from the frames, by matching the cube corners at the ends of each edge
(:func:`edge_link`); nothing is typed in by hand. :func:`crossing_map` turns a
link into the :class:`~orchestra.comm.index_map.IndexMap` that carries a
tile's index space, extended beyond one edge, onto the neighbouring tile's:
the cell ``k`` layers beyond our edge is the neighbour's cell ``k`` layers
inside its edge, at the same position along the edge.

>>> edge_link(0, Edge.RIGHT).neighbour_tile
1
>>> crossing_map(0, Edge.RIGHT, n=4).rotations
0
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any

import numpy as np

from orchestra.comm.index_map import IndexMap

N_TILES = 6

_FRAMES: tuple[tuple[tuple[int, int, int], ...], ...] = (
    ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    ((0, 1, 0), (-1, 0, 0), (0, 0, 1)),
    ((0, 0, 1), (-1, 0, 0), (0, -1, 0)),
    ((-1, 0, 0), (0, 0, -1), (0, -1, 0)),
    ((0, -1, 0), (0, 0, -1), (1, 0, 0)),
    ((0, 0, -1), (0, 1, 0), (1, 0, 0)),
)


def _check_tile(tile: int) -> int:
    if isinstance(tile, bool) or not 0 <= int(tile) < N_TILES or int(tile) != tile:
        raise ValueError(f"tile must be an integer in 0..{N_TILES - 1}, got {tile!r}")
    return int(tile)


def tile_frame(tile: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frame ``(c, e1, e2)`` of ``tile`` as float arrays of shape (3,)."""
    c, e1, e2 = _FRAMES[_check_tile(tile)]
    return np.array(c, float), np.array(e1, float), np.array(e2, float)


def tile_points(tile: int, alpha: Any, beta: Any) -> np.ndarray:
    """Unit vectors ``(..., 3)`` of the points ``(alpha, beta)`` of ``tile`` (broadcast)."""
    c, e1, e2 = tile_frame(tile)
    ta = np.tan(np.asarray(alpha, float))[..., None]
    tb = np.tan(np.asarray(beta, float))[..., None]
    r = c + ta * e1 + tb * e2
    return r / np.linalg.norm(r, axis=-1, keepdims=True)


def tile_tangents(tile: int, alpha: Any, beta: Any) -> tuple[np.ndarray, np.ndarray]:
    """Unit tangent vectors along increasing alpha (i) and beta (j), each ``(..., 3)``.

    They are d/dalpha and d/dbeta of :func:`tile_points`, normalized: the
    derivative of ``r/|r|`` along ``e`` is ``e`` minus its radial part.
    """
    _, e1, e2 = tile_frame(tile)
    p = tile_points(tile, alpha, beta)

    def along(e: np.ndarray) -> np.ndarray:
        t = e - np.sum(e * p, axis=-1, keepdims=True) * p
        return t / np.linalg.norm(t, axis=-1, keepdims=True)

    return along(e1), along(e2)


def cell_centre_angles(n: int) -> np.ndarray:
    """Equiangular coordinates of the centres of ``n`` cells across a tile."""
    return -np.pi / 4 + (np.arange(n) + 0.5) * (np.pi / 2) / n


class Edge(enum.Enum):
    """An edge of a tile: LEFT is i-start, RIGHT i-end, BOTTOM j-start, TOP j-end."""

    LEFT = "left"
    RIGHT = "right"
    BOTTOM = "bottom"
    TOP = "top"


@dataclasses.dataclass(frozen=True)
class EdgeLink:
    """``edge`` of ``tile`` is ``neighbour_edge`` of ``neighbour_tile``.

    ``reversed`` is True when the position along the edge runs the opposite
    way on the neighbour (along-edge index = j on LEFT/RIGHT, i on BOTTOM/TOP).
    """

    tile: int
    edge: Edge
    neighbour_tile: int
    neighbour_edge: Edge
    reversed: bool


def _edge_corners(tile: int, edge: Edge) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The cube corners at the start and end (in along-edge order) of an edge."""
    c, e1, e2 = (np.array(v) for v in _FRAMES[tile])
    start, end = {
        Edge.LEFT: ((-1, -1), (-1, 1)),
        Edge.RIGHT: ((1, -1), (1, 1)),
        Edge.BOTTOM: ((-1, -1), (1, -1)),
        Edge.TOP: ((-1, 1), (1, 1)),
    }[edge]
    return tuple(c + start[0] * e1 + start[1] * e2), tuple(c + end[0] * e1 + end[1] * e2)


@functools.cache
def edge_link(tile: int, edge: Edge) -> EdgeLink:
    """Find the tile edge that shares both cube corners with ``edge`` of ``tile``."""
    start, end = _edge_corners(_check_tile(tile), edge)
    matches = [
        EdgeLink(tile, edge, other, other_edge, reversed=(other_start, other_end) == (end, start))
        for other in range(N_TILES)
        if other != tile
        for other_edge in Edge
        for other_start, other_end in [_edge_corners(other, other_edge)]
        if {other_start, other_end} == {start, end}
    ]
    if len(matches) != 1:
        raise AssertionError(f"tile {tile} {edge.value} edge matches {len(matches)} edges")
    return matches[0]


def cube_connectivity() -> tuple[EdgeLink, ...]:
    """All 24 edge links, ordered by tile then edge."""
    return tuple(edge_link(t, e) for t in range(N_TILES) for e in Edge)


def _to_edge_frame(edge: Edge, n: int) -> np.ndarray:
    """Affine map (3x3) of tile coordinates to (along-edge position, outward depth)."""
    return np.array(
        {
            Edge.LEFT: [[0, 1, 0], [-1, 0, 0], [0, 0, 1]],
            Edge.RIGHT: [[0, 1, 0], [1, 0, -n], [0, 0, 1]],
            Edge.BOTTOM: [[1, 0, 0], [0, -1, 0], [0, 0, 1]],
            Edge.TOP: [[1, 0, 0], [0, 1, -n], [0, 0, 1]],
        }[edge],
        dtype=np.int64,
    )


@functools.cache
def crossing_map(tile: int, edge: Edge, n: int) -> IndexMap:
    """Map ``tile``'s coordinates beyond ``edge`` to the neighbour tile's (n x n cells).

    Depth beyond our edge becomes depth inside the neighbour's edge; the
    position along the edge is kept, or mirrored when the link is reversed.
    """
    link = edge_link(tile, edge)
    along = (
        [[-1, 0, n], [0, -1, 0], [0, 0, 1]] if link.reversed else [[1, 0, 0], [0, -1, 0], [0, 0, 1]]
    )
    ours = _to_edge_frame(edge, n)
    theirs = _to_edge_frame(link.neighbour_edge, n)
    affine = np.linalg.inv(theirs) @ np.array(along) @ ours
    return IndexMap.from_affine(affine)
