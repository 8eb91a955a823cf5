"""Expected halos of interface-staggered fields from geometry alone (no plan, no partitioner maps).

Every local point of a field has a position: continuous tile coordinates
(interface ``I`` at ``I``, cell ``i`` at ``i + 1/2``), on the cubed sphere the
point :func:`orchestra.comm.cube.tile_points` gives, on a flat tile the
coordinates (on periodic axes the owner's point lies whole periods away, by as
much as the ghost cell wraps). A ghost point beyond one cube edge
is the mirror image, in the plane through the origin and that cube edge, of
our point at the mirrored coordinate (as in ``halo_reference.py``), and our
axis directions continue there mirrored, the one normal to the edge reversed.

NDSL's rule for who fills a ghost point: the rank owning the ghost *cells* of
its rectangle (edge strip or corner square). We take the ghost cell touching
the point inside the same rectangle, find its owner with
:func:`halo_reference.ghost_source` (or by wrapping on periodic tiles), and
copy that rank's point at the same position, of the component whose
direction is ours up to sign (``x`` or ``-x``: the tangents agree to 1e-12).
Points of the compute domain (its edges included) keep their values; ghost
points without an owner keep the sentinel.

Only ``subdomain_extent``, ``tile_index`` and ``total_ranks`` are used.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional, Sequence

import numpy as np

from orchestra.comm.cube import tile_points, tile_tangents
from orchestra.comm.partitioner import Partitioner
from tests.comm.halo_reference import _reflection, ghost_source

SENTINEL = -7.0
Stagger = tuple[bool, bool]

#: Fields of the tests: name -> stagger; pairs are (u, v) names.
STAGGERS: dict[str, Stagger] = {
    "q": (False, False),
    "corner": (True, True),
    "xi": (True, False),
    "yi": (False, True),
    "u": (False, True),  # D grid
    "v": (True, False),
    "uc": (True, False),  # C grid
    "vc": (False, True),
    "ua": (False, False),  # A grid
    "va": (False, False),
}


@dataclasses.dataclass(frozen=True)
class Domain:
    """A cube (``sphere=True``) or a flat tile, periodic along the axes in ``periodic``."""

    partitioner: Partitioner
    nx: int
    ny: int
    h: int
    sphere: bool = False
    periodic: tuple[bool, bool] = (False, False)

    @property
    def n_tile(self) -> tuple[int, int]:
        return self.nx * self.partitioner.layout[0], self.ny * self.partitioner.layout[1]

    def shape(self, stagger: Stagger, nz: int = 0) -> tuple[int, ...]:
        h = self.h
        horizontal = (self.nx + stagger[0] + 2 * h, self.ny + stagger[1] + 2 * h)
        return horizontal + ((nz,) if nz else ())

    def start(self, rank: int) -> tuple[int, int]:
        (i0, _), (j0, _) = self.partitioner.subdomain_extent(rank, *self.n_tile)
        return i0, j0

    def coordinates(self, rank: int, stagger: Stagger, k: int, l: int) -> tuple[float, float]:
        """Continuous tile coordinates of local point ``(k, l)``."""
        i0, j0 = self.start(rank)
        return (
            i0 + k - self.h + (0.0 if stagger[0] else 0.5),
            j0 + l - self.h + (0.0 if stagger[1] else 0.5),
        )


def initial(d: Domain, rank: int, name: str, nz: int = 0) -> np.ndarray:
    """Distinct values on the compute domain (edges included), the sentinel in the halo."""
    stagger = STAGGERS[name]
    out = np.full(d.shape(stagger)[:2], SENTINEL)
    h, ids = d.h, list(STAGGERS).index(name)
    n_i, n_j = d.nx + stagger[0], d.ny + stagger[1]
    kk, ll = np.meshgrid(np.arange(n_i), np.arange(n_j), indexing="ij")
    out[h : h + n_i, h : h + n_j] = 100000.0 * (rank + 1) + 1000.0 * ids + 31.0 * kk + ll + 0.25
    return out[..., None] * (1 + np.arange(nz)) if nz else out


@functools.lru_cache(maxsize=None)
def _place_sphere(tile: int, n: int, x: float, y: float) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """Position and axis directions (2, 3) of tile coordinates ``(x, y)``, extended over one edge."""
    side = (
        "left" if x < 0 else "right" if x > n else None,
        "bottom" if y < 0 else "top" if y > n else None,
    )
    if side[0] and side[1]:
        return None
    mx = -x if x < 0 else 2 * n - x if x > n else x
    my = -y if y < 0 else 2 * n - y if y > n else y
    alpha, beta = -np.pi / 4 + mx * (np.pi / 2) / n, -np.pi / 4 + my * (np.pi / 2) / n
    position = tile_points(tile, alpha, beta)
    axes = np.array(tile_tangents(tile, alpha, beta))
    if side[0] or side[1]:
        reflect = _reflection(tile, side[0] or side[1])
        position, axes = reflect @ position, axes @ reflect.T
        axes[0 if side[0] else 1] *= -1.0
    return position, axes


def place(d: Domain, rank: int, x: float, y: float) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """Position (3,) and axis directions (2, 3) of a point of ``rank``'s tile (extended)."""
    if d.sphere:
        return _place_sphere(d.partitioner.tile_index(rank), d.n_tile[0], x, y)
    return np.array([x, y, 0.0]), np.eye(3)[:2]


def _ghost_cell(x: float, start: int, n: int) -> int:
    """The ghost cell touching coordinate ``x`` inside the same halo rectangle, along one axis."""
    if x != int(x):  # a cell centre
        return int(np.floor(x))
    index = int(x)
    if index < start:
        return index
    if index > start + n:
        return index - 1
    return min(index, start + n - 1)


def owner(d: Domain, rank: int, x: float, y: float) -> Optional[tuple[int, tuple[int, int]]]:
    """The rank owning the ghost cell of ``(x, y)``'s rectangle, and the whole periods the
    cell is shifted by to get there (flat periodic tiles; ``(0, 0)`` elsewhere), or None."""
    i0, j0 = d.start(rank)
    ci, cj = _ghost_cell(x, i0, d.nx), _ghost_cell(y, j0, d.ny)
    n_i, n_j = d.n_tile
    shift = (0, 0)
    if d.sphere:
        found = ghost_source(d.partitioner.tile_index(rank), ci, cj, n_i, True)
        if found is None:
            return None
        tile, ci, cj = found[0], found[1], found[2]
    else:
        wi, wj = (ci % n_i if d.periodic[0] else ci), (cj % n_j if d.periodic[1] else cj)
        if not (0 <= wi < n_i and 0 <= wj < n_j):
            return None
        tile, shift, ci, cj = 0, (ci - wi, cj - wj), wi, wj
    for r in range(d.partitioner.total_ranks):
        (a, b), (c, e) = d.partitioner.subdomain_extent(r, n_i, n_j)
        if d.partitioner.tile_index(r) == tile and a <= ci < b and c <= cj < e:
            return r, shift
    raise AssertionError((rank, x, y, tile, ci, cj))


def _inside(d: Domain, rank: int, x: float, y: float) -> bool:
    i0, j0 = d.start(rank)
    return i0 <= x <= i0 + d.nx and j0 <= y <= j0 + d.ny


@functools.lru_cache(maxsize=None)
def _points(d: Domain, rank: int, name: str) -> tuple[np.ndarray, np.ndarray, list]:
    """Positions, axis directions and local indices of ``rank``'s compute-domain points of a field."""
    stagger, h = STAGGERS[name], d.h
    positions, axes, indices = [], [], []
    for k in range(h, h + d.nx + stagger[0]):
        for l in range(h, h + d.ny + stagger[1]):
            position, directions = place(d, rank, *d.coordinates(rank, stagger, k, l))
            positions.append(position)
            axes.append(directions)
            indices.append((k, l))
    return np.array(positions), np.array(axes), indices


def expected(
    d: Domain, fields: Sequence[dict[str, np.ndarray]], rank: int, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """``rank``'s arrays after an exchange of ``names`` (a vector pair: two names, u first).

    ``fields[r][name]`` is rank ``r``'s array before the exchange.
    """
    result = {}
    for axis, name in enumerate(names):
        stagger, out = STAGGERS[name], fields[rank][name].copy()
        for k in range(out.shape[0]):
            for l in range(out.shape[1]):
                x, y = d.coordinates(rank, stagger, k, l)
                found = None if _inside(d, rank, x, y) else owner(d, rank, x, y)
                if found is not None:
                    source, (sx, sy) = found
                    out[k, l] = _copy(d, fields, rank, names, axis, (x - sx, y - sy), source)
        result[name] = out
    return result


def _copy(d: Domain, fields, rank: int, names, axis: int, xy, source: int) -> np.ndarray:
    """The value at ``xy`` (our tile's coordinates, shifted into the owner's period) of the
    owner's point there, turned into our component ``axis``."""
    placed = place(d, rank, *xy)
    assert placed is not None, (rank, xy)
    position, ours = placed[0], placed[1][axis]
    matches = []
    for their_axis, name in enumerate(names):
        positions, axes, indices = _points(d, source, name)
        close = np.flatnonzero(np.linalg.norm(positions - position, axis=-1) < 1e-9)
        for n in close:
            if len(names) == 1:  # a scalar: no direction
                matches.append((name, indices[n], 1.0))
                continue
            sign = float(np.dot(axes[n][their_axis], ours))
            if abs(abs(sign) - 1.0) < 1e-9:  # the same direction up to sign (cube axes are skew)
                matches.append((name, indices[n], sign))
    assert len(matches) == 1, (rank, names, xy, source, matches)
    name, index, sign = matches[0]
    value = fields[source][name][index]
    return value if sign > 0 else np.negative(value)
