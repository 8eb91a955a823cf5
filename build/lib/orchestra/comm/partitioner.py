"""Rank decompositions: one tile, or the six tiles of a cubed sphere.

Each tile is split into ``layout = (ranks along i, ranks along j)`` equal
subdomains. Within a tile, ranks count along i first::

    rank_within_tile = j_index * layout[0] + i_index

and on the cubed sphere ``rank = tile * ranks_per_tile + rank_within_tile``.

Neighbours are reported for the eight :class:`Direction` s with the number of
counter-clockwise quarter turns from this rank's index axes to the
neighbour's (see :mod:`orchestra.comm.index_map`). A neighbour is ``None``
beyond a single tile's edge (edges are not periodic) and in the diagonal
directions of a cube corner, where three tiles meet and no unique neighbour
exists.

>>> p = CubedSpherePartitioner(TilePartitioner((2, 2)))
>>> p.total_ranks, p.tile_index(5), p.subtile_index(5)
(24, 1, (1, 0))
>>> p.neighbours(0)[Direction.LEFT]
Neighbour(rank=19, rotations=3)
>>> p.subdomain_extent(3, 48, 48)
((24, 48), (24, 48))
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import operator
from typing import Optional

from orchestra.comm.cube import N_TILES, Edge, crossing_map, edge_link
from orchestra.comm.errors import DecompositionError
from orchestra.comm.index_map import IndexMap


class Direction(enum.Enum):
    """The eight neighbour directions, valued ``(di, dj)``."""

    LEFT = (-1, 0)
    RIGHT = (1, 0)
    BOTTOM = (0, -1)
    TOP = (0, 1)
    BOTTOM_LEFT = (-1, -1)
    BOTTOM_RIGHT = (1, -1)
    TOP_LEFT = (-1, 1)
    TOP_RIGHT = (1, 1)

    @property
    def di(self) -> int:
        """Step along i: -1, 0 or 1."""
        return self.value[0]

    @property
    def dj(self) -> int:
        """Step along j: -1, 0 or 1."""
        return self.value[1]

    @property
    def index(self) -> int:
        """Position in declaration order (0..7); used as a message tag."""
        return _DIRECTION_INDEX[self]


_DIRECTION_INDEX = {d: n for n, d in enumerate(Direction)}


@dataclasses.dataclass(frozen=True)
class TileEdges:
    """Which tile edges a subdomain touches (left = i-start, bottom = j-start)."""

    left: bool
    right: bool
    bottom: bool
    top: bool


@dataclasses.dataclass(frozen=True)
class Neighbour:
    """The rank across one :class:`Direction` (None: no neighbour) and its rotation."""

    rank: Optional[int]
    rotations: int = 0


@dataclasses.dataclass(frozen=True)
class Location:
    """Where an extended tile coordinate really lives: a tile and the map to it."""

    tile: int
    index_map: IndexMap


def _positive_int(value: object, name: str) -> int:
    try:
        result = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise DecompositionError(f"{name} must be an integer, got {value!r}") from None
    if isinstance(value, bool) or result < 1:
        raise DecompositionError(f"{name} must be a positive integer, got {value!r}")
    return result


class Partitioner(abc.ABC):
    """What a decomposition into tiles and subdomains provides.

    Subclasses define the tiles (:attr:`n_tiles`, :meth:`tile_index`,
    :meth:`rank_within_tile`, :meth:`locate`); the rank arithmetic within a
    tile and the neighbour search are shared.
    """

    def __init__(self, layout: tuple[int, int]) -> None:
        if not isinstance(layout, (tuple, list)) or len(layout) != 2:
            raise DecompositionError(
                f"layout must be (ranks along i, ranks along j), got {layout!r}"
            )
        self._layout = (
            _positive_int(layout[0], "layout[0]"),
            _positive_int(layout[1], "layout[1]"),
        )

    @property
    def layout(self) -> tuple[int, int]:
        """Ranks along i and along j on each tile."""
        return self._layout

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._layout == self._layout  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._layout))

    @property
    def ranks_per_tile(self) -> int:
        """``layout[0] * layout[1]``."""
        return self._layout[0] * self._layout[1]

    @property
    @abc.abstractmethod
    def n_tiles(self) -> int:
        """Number of tiles."""

    @property
    def total_ranks(self) -> int:
        """Number of ranks the decomposition needs."""
        return self.n_tiles * self.ranks_per_tile

    @abc.abstractmethod
    def locate(self, tile: int, i: int, j: int, n: tuple[int, int]) -> Optional[Location]:
        """Where cell ``(i, j)`` of ``tile``'s extended index space lives.

        ``n`` is the tile size in cells; ``(i, j)`` may lie beyond the tile.
        Returns the owning tile and the map from ``tile``'s coordinates to its
        coordinates, or None where no tile owns the cell.
        """

    def check_rank(self, rank: int) -> int:
        """Return ``rank`` as an int, or raise DecompositionError if out of range."""
        try:
            value = operator.index(rank)
        except TypeError:
            raise DecompositionError(f"rank must be an integer, got {rank!r}") from None
        if isinstance(rank, bool) or not 0 <= value < self.total_ranks:
            raise DecompositionError(
                f"rank {rank!r} is outside 0..{self.total_ranks - 1} for {self!r}"
            )
        return value

    def tile_index(self, rank: int) -> int:
        """The tile ``rank`` works on."""
        return self.check_rank(rank) // self.ranks_per_tile

    def rank_within_tile(self, rank: int) -> int:
        """``rank``'s position among the ranks of its tile."""
        return self.check_rank(rank) % self.ranks_per_tile

    def subtile_index(self, rank: int) -> tuple[int, int]:
        """``(i_index, j_index)`` of ``rank``'s subdomain within its tile."""
        j_index, i_index = divmod(self.rank_within_tile(rank), self._layout[0])
        return i_index, j_index

    def rank_of(self, tile: int, i_index: int, j_index: int) -> int:
        """The rank of subdomain ``(i_index, j_index)`` of ``tile``."""
        if not 0 <= tile < self.n_tiles:
            raise DecompositionError(f"tile {tile} is outside 0..{self.n_tiles - 1}")
        if not (0 <= i_index < self._layout[0] and 0 <= j_index < self._layout[1]):
            raise DecompositionError(
                f"subtile ({i_index}, {j_index}) is outside layout {self._layout}"
            )
        return tile * self.ranks_per_tile + j_index * self._layout[0] + i_index

    def tile_edges(self, rank: int) -> TileEdges:
        """Which edges of its tile ``rank``'s subdomain touches."""
        i_index, j_index = self.subtile_index(rank)
        return TileEdges(
            left=i_index == 0,
            right=i_index == self._layout[0] - 1,
            bottom=j_index == 0,
            top=j_index == self._layout[1] - 1,
        )

    def on_tile_left(self, rank: int) -> bool:
        """True if ``rank`` touches its tile's i-start edge."""
        return self.tile_edges(rank).left

    def on_tile_right(self, rank: int) -> bool:
        """True if ``rank`` touches its tile's i-end edge."""
        return self.tile_edges(rank).right

    def on_tile_bottom(self, rank: int) -> bool:
        """True if ``rank`` touches its tile's j-start edge."""
        return self.tile_edges(rank).bottom

    def on_tile_top(self, rank: int) -> bool:
        """True if ``rank`` touches its tile's j-end edge."""
        return self.tile_edges(rank).top

    def subdomain_extent(
        self, rank: int, nx_tile: int, ny_tile: int
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """``((i_start, i_end), (j_start, j_end))`` of ``rank``'s compute domain in tile cells."""
        nx, ny = self.subdomain_shape(nx_tile, ny_tile)
        i_index, j_index = self.subtile_index(rank)
        return (i_index * nx, (i_index + 1) * nx), (j_index * ny, (j_index + 1) * ny)

    def subdomain_shape(self, nx_tile: int, ny_tile: int) -> tuple[int, int]:
        """The compute-domain size of every rank for a tile of ``nx_tile x ny_tile`` cells."""
        nx_tile = _positive_int(nx_tile, "nx_tile")
        ny_tile = _positive_int(ny_tile, "ny_tile")
        nx, rest_x = divmod(nx_tile, self._layout[0])
        ny, rest_y = divmod(ny_tile, self._layout[1])
        if rest_x or rest_y:
            raise DecompositionError(
                f"layout {self._layout} does not divide a tile of {nx_tile} x {ny_tile} cells: "
                f"{nx_tile} % {self._layout[0]} = {rest_x}, {ny_tile} % {self._layout[1]} = {rest_y}; "
                f"choose tile sizes that are multiples of the layout"
            )
        return nx, ny

    def neighbours(self, rank: int) -> dict[Direction, Neighbour]:
        """The neighbour of ``rank`` in each of the eight directions, with its rotation."""
        tile = self.tile_index(rank)
        i_index, j_index = self.subtile_index(rank)
        result = {}
        for direction in Direction:
            # Subdomains are the cells of a layout-sized tile here.
            location = self.locate(
                tile, i_index + direction.di, j_index + direction.dj, self._layout
            )
            if location is None:
                result[direction] = Neighbour(None, 0)
                continue
            ni, nj = location.index_map.cell(i_index + direction.di, j_index + direction.dj)
            rank_there = self.rank_of(location.tile, ni, nj)
            result[direction] = Neighbour(rank_there, location.index_map.rotations)
        return result


class TilePartitioner(Partitioner):
    """``layout[0] x layout[1]`` ranks on a single tile; edges are not periodic."""

    @property
    def n_tiles(self) -> int:
        """One tile."""
        return 1

    def locate(self, tile: int, i: int, j: int, n: tuple[int, int]) -> Optional[Location]:
        """Cells inside the tile live there; cells outside live nowhere."""
        if tile != 0:
            raise DecompositionError(f"a TilePartitioner has only tile 0, got tile {tile}")
        if 0 <= i < n[0] and 0 <= j < n[1]:
            return Location(0, IndexMap.identity())
        return None

    def __repr__(self) -> str:
        return f"TilePartitioner(layout={self._layout})"


class CubedSpherePartitioner(Partitioner):
    """Six tiles, each split like ``tile``; the layout must be square.

    Across rotated cube edges a rank's i-range meets a neighbour's j-range, so
    only a square layout gives every edge a single neighbouring rank.
    """

    def __init__(self, tile: TilePartitioner) -> None:
        if not isinstance(tile, TilePartitioner):
            raise DecompositionError(
                f"CubedSpherePartitioner needs a TilePartitioner, got {tile!r}"
            )
        if tile.layout[0] != tile.layout[1]:
            raise DecompositionError(
                f"the cubed sphere needs a square layout, got {tile.layout}: across rotated tile "
                f"edges i-ranges meet j-ranges; use ({tile.layout[0]}, {tile.layout[0]}) or "
                f"({tile.layout[1]}, {tile.layout[1]})"
            )
        super().__init__(tile.layout)
        self._tile = tile

    @property
    def tile(self) -> TilePartitioner:
        """The partitioner of each tile."""
        return self._tile

    @property
    def n_tiles(self) -> int:
        """Six tiles."""
        return N_TILES

    def subdomain_shape(self, nx_tile: int, ny_tile: int) -> tuple[int, int]:
        """As for a tile; cube tiles are square, so ``nx_tile`` must equal ``ny_tile``."""
        if nx_tile != ny_tile:
            raise DecompositionError(f"cube tiles are square, got {nx_tile} x {ny_tile} cells")
        return super().subdomain_shape(nx_tile, ny_tile)

    def locate(self, tile: int, i: int, j: int, n: tuple[int, int]) -> Optional[Location]:
        """Cross at most one tile edge; beyond two edges (a cube corner) is nowhere."""
        if n[0] != n[1]:
            raise DecompositionError(f"cube tiles are square, got {n[0]} x {n[1]} cells")
        outside_i = Edge.LEFT if i < 0 else Edge.RIGHT if i >= n[0] else None
        outside_j = Edge.BOTTOM if j < 0 else Edge.TOP if j >= n[1] else None
        if outside_i is not None and outside_j is not None:
            return None
        edge = outside_i or outside_j
        if edge is None:
            return Location(tile, IndexMap.identity())
        index_map = crossing_map(tile, edge, n[0])
        return Location(edge_link(tile, edge).neighbour_tile, index_map)

    def __repr__(self) -> str:
        return f"CubedSpherePartitioner({self._tile!r})"
