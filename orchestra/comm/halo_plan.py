"""Which ghost cells come from where: the halo plan of one rank (no MPI).

The halo of a rank is cut into eight rectangles, one per
:class:`~orchestra.comm.partitioner.Direction`: the four edge strips span the
compute domain along the edge, the four corner squares are ``n_halo x
n_halo``. Each rectangle that has an owner is a :class:`HaloTransfer` from
the owning rank: the source rectangle is the image of the ghost rectangle
under the map to the owner's tile, so ghost cells are the owner's actual
cells, never extrapolated.

Rectangles without an owner are not in the plan and are left untouched:
beyond the edges of a single tile, and the corner squares of a cube corner,
where three tiles meet and the diagonal neighbour is not unique.

Staggered fields (:mod:`orchestra.comm.staggering`) follow NDSL: along an
axis on cell interfaces the compute domain holds ``n + 1`` points, both edges
included, and the halo lies outside them (the edge points are never written;
the sent points skip them). Edge strips span all ``n + 1`` points along the
edge. Points are mapped as points (interface ``I`` at coordinate ``I``, cell
``i`` at ``i + 1/2``) through the :class:`~orchestra.comm.index_map.IndexMap`
of the rectangle's ghost cells; across an odd number of quarter turns they are
the owner's points of the transposed staggering (a vector's other component).
"""

from __future__ import annotations

import dataclasses
import functools

from orchestra.comm.errors import DecompositionError
from orchestra.comm.partitioner import Direction, Partitioner
from orchestra.comm.staggering import CELLS, Stagger, transposed

Slices = tuple[slice, slice]


@dataclasses.dataclass(frozen=True)
class HaloTransfer:
    """One ghost rectangle of ``target_rank`` filled from ``source_rank``.

    ``source`` and ``target`` index the two ranks' local arrays (halo
    included) in their own orientation; ``numpy.rot90(source_block,
    rotations)`` has the target's orientation. ``direction`` is the side of
    the target the rectangle is on; it tags the message.
    """

    source_rank: int
    target_rank: int
    direction: Direction
    source: Slices
    target: Slices
    rotations: int


@dataclasses.dataclass(frozen=True)
class HaloPlan:
    """What one rank receives (``target_rank == rank``) and sends (``source_rank == rank``)."""

    rank: int
    receives: tuple[HaloTransfer, ...]
    sends: tuple[HaloTransfer, ...]


def _ghost_range(start: int, size: int, step: int, n_halo: int, interface: bool) -> tuple[int, int]:
    """Tile index range of the ghost points on one side (-1, 0, +1) of a compute domain.

    The compute domain holds points ``[start, start + size)`` (cells) or
    ``[start, start + size]`` (interfaces: both edges are its own); the ghost
    points lie outside it, ``n_halo`` deep, and span it along the edge.
    """
    points = size + int(interface)
    if step < 0:
        return start - n_halo, start
    if step > 0:
        return start + points, start + points + n_halo
    return start, start + points


def _check_sizes(partitioner: Partitioner, nx: int, ny: int, n_halo: int) -> None:
    if n_halo < 1:
        raise DecompositionError(f"n_halo must be at least 1, got {n_halo}")
    if nx < n_halo or ny < n_halo:
        raise DecompositionError(
            f"a {nx} x {ny} compute domain is smaller than n_halo={n_halo}: the halo would "
            f"need cells of more than one neighbour; use fewer ranks ({partitioner!r}) "
            f"or a larger domain"
        )


def _doubled(index: int, interface: bool) -> int:
    """Doubled tile coordinate of point ``index``: interface ``I`` at ``2 I``, cell ``i`` at ``2 i + 1``."""
    return 2 * index + (0 if interface else 1)


def _source_slice(a: int, b: int, origin: int, n_cells: int, n_halo: int) -> slice:
    """Local slice of the owner's points between doubled coordinates ``a`` and ``b``; checks they
    lie in the owner's compute domain (both edges included for interface points)."""
    last = origin + n_cells - (1 if a % 2 else 0)
    low, high = min(a, b) // 2, max(a, b) // 2
    if low < origin or high > last:
        raise AssertionError(f"points {low}..{high} lie outside the owner's {origin}..{last}")
    return slice(low - origin + n_halo, high + 1 - origin + n_halo)


@functools.lru_cache(maxsize=256)
def receives(
    partitioner: Partitioner, rank: int, nx: int, ny: int, n_halo: int, stagger: Stagger = CELLS
) -> tuple[HaloTransfer, ...]:
    """The transfers that fill ``rank``'s halo; ``nx x ny`` cells is every rank's compute domain.

    ``stagger`` says which axes the field has on cell interfaces
    (:mod:`orchestra.comm.staggering`). Ghost points are mapped as points
    (interface ``I`` at coordinate ``I``, cell ``i`` at ``i + 1/2``) through
    the owner's :class:`~orchestra.comm.index_map.IndexMap`; across an odd
    number of quarter turns they land on the owner's points of the transposed
    staggering.
    """
    _check_sizes(partitioner, nx, ny, n_halo)
    tile = partitioner.tile_index(rank)
    n_tile = (nx * partitioner.layout[0], ny * partitioner.layout[1])
    (ti, _), (tj, _) = partitioner.subdomain_extent(rank, *n_tile)
    result = []
    for direction, neighbour in partitioner.neighbours(rank).items():
        if neighbour.rank is None:
            continue
        i0, i1 = _ghost_range(ti, nx, direction.di, n_halo, stagger[0])
        j0, j1 = _ghost_range(tj, ny, direction.dj, n_halo, stagger[1])
        # Any ghost cell of the rectangle tells which tile it lies in, and the map there.
        cell_i = ti - 1 if direction.di < 0 else ti + nx if direction.di > 0 else ti
        cell_j = tj - 1 if direction.dj < 0 else tj + ny if direction.dj > 0 else tj
        location = partitioner.locate(tile, cell_i, cell_j, n_tile)
        assert location is not None, (rank, direction)
        a = location.index_map.doubled(_doubled(i0, stagger[0]), _doubled(j0, stagger[1]))
        b = location.index_map.doubled(_doubled(i1 - 1, stagger[0]), _doubled(j1 - 1, stagger[1]))
        owner = neighbour.rank
        (oi, _), (oj, _) = partitioner.subdomain_extent(owner, *n_tile)
        try:
            si = _source_slice(a[0], b[0], oi, nx, n_halo)
            sj = _source_slice(a[1], b[1], oj, ny, n_halo)
        except AssertionError as error:
            raise AssertionError(
                f"halo of rank {rank} {direction.name} is not owned by rank {owner}: {error}"
            ) from None
        if location.tile != partitioner.tile_index(owner):
            raise AssertionError(f"halo of rank {rank} {direction.name} lies on another tile")
        target = (
            slice(i0 - ti + n_halo, i1 - ti + n_halo),
            slice(j0 - tj + n_halo, j1 - tj + n_halo),
        )
        result.append(HaloTransfer(owner, rank, direction, (si, sj), target, neighbour.rotations))
    return tuple(result)


def plan_halo(
    partitioner: Partitioner, rank: int, nx: int, ny: int, n_halo: int, stagger: Stagger = CELLS
) -> HaloPlan:
    """The full plan of ``rank`` for a field staggered as ``stagger``.

    ``receives`` fill its halo; ``sends`` are the receives of its neighbours
    that read this field's points on ``rank``: the neighbours' fields of the
    same staggering, or of the transposed one across an odd number of quarter
    turns (a vector's other component, see :mod:`orchestra.comm.staggering`).
    """
    own = receives(partitioner, rank, nx, ny, n_halo, stagger)
    peers = sorted({t.source_rank for t in own})
    wanted = {0: stagger, 1: transposed(stagger)}
    sends = tuple(
        transfer
        for peer in peers
        for theirs in sorted({stagger, transposed(stagger)})
        for transfer in receives(partitioner, peer, nx, ny, n_halo, theirs)
        if transfer.source_rank == rank and wanted[transfer.rotations % 2] == theirs
    )
    return HaloPlan(rank, own, sends)
