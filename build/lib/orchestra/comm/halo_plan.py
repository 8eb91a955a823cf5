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
"""

from __future__ import annotations

import dataclasses
import functools

from orchestra.comm.errors import DecompositionError
from orchestra.comm.partitioner import Direction, Partitioner

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


def _ghost_range(start: int, size: int, step: int, n_halo: int) -> tuple[int, int]:
    """Tile index range of the ghost cells on one side (-1, 0, +1) of ``[start, start + size)``."""
    if step < 0:
        return start - n_halo, start
    if step > 0:
        return start + size, start + size + n_halo
    return start, start + size


def _check_sizes(partitioner: Partitioner, nx: int, ny: int, n_halo: int) -> None:
    if n_halo < 1:
        raise DecompositionError(f"n_halo must be at least 1, got {n_halo}")
    if nx < n_halo or ny < n_halo:
        raise DecompositionError(
            f"a {nx} x {ny} compute domain is smaller than n_halo={n_halo}: the halo would "
            f"need cells of more than one neighbour; use fewer ranks ({partitioner!r}) "
            f"or a larger domain"
        )


@functools.lru_cache(maxsize=256)
def receives(
    partitioner: Partitioner, rank: int, nx: int, ny: int, n_halo: int
) -> tuple[HaloTransfer, ...]:
    """The transfers that fill ``rank``'s halo; ``nx x ny`` is every rank's compute domain."""
    _check_sizes(partitioner, nx, ny, n_halo)
    tile = partitioner.tile_index(rank)
    i_index, j_index = partitioner.subtile_index(rank)
    n_tile = (nx * partitioner.layout[0], ny * partitioner.layout[1])
    result = []
    for direction, neighbour in partitioner.neighbours(rank).items():
        if neighbour.rank is None:
            continue
        i0, i1 = _ghost_range(i_index * nx, nx, direction.di, n_halo)
        j0, j1 = _ghost_range(j_index * ny, ny, direction.dj, n_halo)
        location = partitioner.locate(tile, i0, j0, n_tile)
        assert location is not None, (rank, direction)
        a_i, a_j = location.index_map.cell(i0, j0)
        b_i, b_j = location.index_map.cell(i1 - 1, j1 - 1)
        si0, si1 = min(a_i, b_i), max(a_i, b_i) + 1
        sj0, sj1 = min(a_j, b_j), max(a_j, b_j) + 1
        owner = partitioner.rank_of(location.tile, si0 // nx, sj0 // ny)
        if owner != neighbour.rank or (si1 - 1) // nx != si0 // nx or (sj1 - 1) // ny != sj0 // ny:
            raise AssertionError(
                f"halo of rank {rank} {direction.name} is not owned by rank {neighbour.rank}"
            )
        (oi, _), (oj, _) = partitioner.subdomain_extent(owner, *n_tile)
        source = (
            slice(si0 - oi + n_halo, si1 - oi + n_halo),
            slice(sj0 - oj + n_halo, sj1 - oj + n_halo),
        )
        (ti, _), (tj, _) = partitioner.subdomain_extent(rank, *n_tile)
        target = (
            slice(i0 - ti + n_halo, i1 - ti + n_halo),
            slice(j0 - tj + n_halo, j1 - tj + n_halo),
        )
        result.append(HaloTransfer(owner, rank, direction, source, target, neighbour.rotations))
    return tuple(result)


def plan_halo(partitioner: Partitioner, rank: int, nx: int, ny: int, n_halo: int) -> HaloPlan:
    """The full plan of ``rank``: its receives, and the receives of its neighbours it serves."""
    own = receives(partitioner, rank, nx, ny, n_halo)
    peers = sorted({t.source_rank for t in own})
    sends = tuple(
        transfer
        for peer in peers
        for transfer in receives(partitioner, peer, nx, ny, n_halo)
        if transfer.source_rank == rank
    )
    return HaloPlan(rank, own, sends)
