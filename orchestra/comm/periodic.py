"""Periodic domains on one tile: doubly periodic, and a channel (periodic in i, walls in j).

Both are :class:`~orchestra.comm.partitioner.Partitioner` s of a single tile
whose :meth:`locate` wraps cells beyond a periodic edge back into the tile:
the map to the owner is the identity rotation plus an offset of whole tile
lengths. So :meth:`~orchestra.comm.partitioner.Partitioner.neighbours`, the
halo plan and :class:`~orchestra.comm.halo.HaloUpdater` work unchanged, and
no vector component is turned or negated across a periodic edge.

With one rank along a periodic axis a rank is its own neighbour there (its
halo comes from its own opposite edge, by an MPI message to itself); with two
ranks the left and the right neighbour are the same rank. Messages are tagged
by the receiver's side, so these never mix.

Beyond a channel wall (``j < 0`` or ``j >= ny``) no cell exists:
:meth:`ChannelPartitioner.locate` returns None, and the halo update leaves
those ghost rows to the wall rule of the updater
(:class:`~orchestra.comm.walls.Walls`, untouched by default).

Neither class is a :class:`~orchestra.comm.partitioner.TilePartitioner`: a
periodic tile is not a cube face, so ``CubedSpherePartitioner`` refuses them.

>>> p = PeriodicTilePartitioner((2, 1))
>>> p.neighbours(0)[Direction.LEFT] == p.neighbours(0)[Direction.RIGHT]
True
>>> p.neighbours(0)[Direction.TOP]
Neighbour(rank=0, rotations=0)
>>> ChannelPartitioner((2, 2)).neighbours(0)[Direction.BOTTOM]
Neighbour(rank=None, rotations=0)
>>> ChannelPartitioner((2, 2)).wall_edges(2)
TileEdges(left=False, right=False, bottom=False, top=True)
"""

from __future__ import annotations

from typing import Optional

from orchestra.comm.errors import DecompositionError
from orchestra.comm.index_map import IndexMap
from orchestra.comm.partitioner import Direction, Location, Partitioner, TileEdges

def _wrap(tile: int, i: int, j: int, n: tuple[int, int], name: str) -> Location:
    """The owner of ``(i, j)`` with both axes wrapped: tile 0, shifted by whole tile lengths."""
    if tile != 0:
        raise DecompositionError(f"a {name} has only tile 0, got tile {tile}")
    periods_i, periods_j = i // n[0], j // n[1]
    return Location(0, IndexMap.rotation(0, offset=(-periods_i * n[0], -periods_j * n[1])))


class PeriodicTilePartitioner(Partitioner):
    """``layout[0] x layout[1]`` ranks on one doubly periodic tile (a torus).

    Every rank has all eight neighbours; none is turned (``rotations == 0``).
    """

    @property
    def n_tiles(self) -> int:
        """One tile."""
        return 1

    def locate(self, tile: int, i: int, j: int, n: tuple[int, int]) -> Optional[Location]:
        """Every cell lives in the tile, at ``(i mod n[0], j mod n[1])``."""
        return _wrap(tile, i, j, n, type(self).__name__)

    def wall_edges(self, rank: int) -> TileEdges:
        """Which sides of ``rank``'s subdomain are walls: none, the tile is periodic."""
        self.check_rank(rank)
        return TileEdges(left=False, right=False, bottom=False, top=False)

    def __repr__(self) -> str:
        return f"PeriodicTilePartitioner(layout={self._layout})"


class ChannelPartitioner(Partitioner):
    """``layout[0] x layout[1]`` ranks on one tile, periodic along i, walls along j.

    Ranks on the tile's bottom row (``j_index == 0``) have no BOTTOM,
    BOTTOM_LEFT or BOTTOM_RIGHT neighbour; those on the top row none on top.
    Along i every rank has neighbours, wrapping around the tile.
    """

    @property
    def n_tiles(self) -> int:
        """One tile."""
        return 1

    def locate(self, tile: int, i: int, j: int, n: tuple[int, int]) -> Optional[Location]:
        """Cells with ``0 <= j < n[1]`` live at ``(i mod n[0], j)``; beyond the walls, nowhere."""
        location = _wrap(tile, i, j, n, type(self).__name__)
        return location if 0 <= j < n[1] else None

    def wall_edges(self, rank: int) -> TileEdges:
        """Which sides of ``rank``'s subdomain are walls: bottom and/or top, never left or right."""
        edges = self.tile_edges(rank)
        return TileEdges(left=False, right=False, bottom=edges.bottom, top=edges.top)

    def __repr__(self) -> str:
        return f"ChannelPartitioner(layout={self._layout})"
