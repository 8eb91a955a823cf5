"""Synchronizing the edges that neighbouring ranks share in an interface-staggered vector.

A vector on the staggered grid has its x component on ``[i cell, j interface]``
and its y component on ``[i interface, j cell]`` (NDSL's convention, where the
pair is called "on the C grid"; FV3's D-grid winds ``u, v`` are laid out this
way). Local arrays follow :mod:`orchestra.comm`'s convention with ``n_halo``
ghost layers on each side and one more point along the staggered axis::

    x.shape == (nx + 2 n_halo, ny + 1 + 2 n_halo, ...)
    y.shape == (nx + 1 + 2 n_halo, ny + 2 n_halo, ...)

The outermost interface points of a rank's compute domain (x at ``j = 0`` and
``j = ny``, y at ``i = 0`` and ``i = nx``, compute-domain indices) lie on the
boundary it shares with a neighbour, which computes the same points. They are
made equal by copying, with NDSL's rule: **the south and west edges win**.
Every rank sends x on its south edge and y on its west edge; the neighbour
across overwrites the points it has there, turned into its own components
(across a rotated cube edge x becomes y and a sign may flip, see the table in
``docs/communication.md``). Nothing else is written: not the halo, not the
winning edges. Where a side has no neighbour (beyond a single tile's edge)
nothing is sent. The points are cell-centred along the edge, so no shared
point is a corner of three tiles.

The rule needs every rank's south and west edges to meet its neighbours'
north or east edges, which holds on the cubed sphere and on (periodic) tiles;
:func:`plan_interfaces` checks it. :func:`plan_interfaces` is pure (no MPI):
which edge of which array goes where, as index tuples into local arrays.
:class:`VectorInterfaceSynchronizer` runs the exchange; use it through
:meth:`orchestra.comm.Communicator.synchronize_vector_interfaces`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional, Union

import numpy as np

from orchestra.comm.array_module import array_module, array_of, to_host
from orchestra.comm.errors import DecompositionError, HaloExchangeError
from orchestra.comm.halo import Communicator
from orchestra.comm.halo import stage_through_host as _stage_through_host
from orchestra.comm.partitioner import Direction, Partitioner

#: An index into a local array that selects one edge: an int and a slice, in either order.
EdgeIndex = tuple[Union[int, slice], Union[int, slice]]

#: Component index of each side's sent array, and its message tag.
_SENT = {Direction.BOTTOM: 0, Direction.LEFT: 1}

#: NDSL's dimension names of the x and y components, current and older spellings
#: (checked when an object carries ``dims``).
_DIMS = (
    (("i", "j_interface"), ("x", "y_interface")),
    (("i_interface", "j"), ("x_interface", "y")),
)


@dataclasses.dataclass(frozen=True)
class EdgeTransfer:
    """One edge of one component sent from ``source_rank`` to ``target_rank``.

    ``source`` indexes component ``source_component`` (0: x, 1: y) of the
    sender's local arrays, ``target`` component ``target_component`` of the
    receiver's; the block arrives in the sender's order along the edge and is
    written reversed if ``reversed``, negated if ``negate``. ``tag`` tells the
    sender's side (0: south edge of x, 1: west edge of y).
    """

    source_rank: int
    target_rank: int
    tag: int
    source_component: int
    source: EdgeIndex
    target_component: int
    target: EdgeIndex
    reversed: bool
    negate: bool


@dataclasses.dataclass(frozen=True)
class InterfacePlan:
    """What one rank sends (``source_rank == rank``) and receives (``target_rank == rank``)."""

    rank: int
    sends: tuple[EdgeTransfer, ...]
    receives: tuple[EdgeTransfer, ...]


def _edge_points(side: Direction, start: tuple[int, int], n: tuple[int, int]) -> np.ndarray:
    """Doubled tile coordinates ``(2, count)`` of the sent edge's points, in order along it."""
    (i0, j0), (nx, ny) = start, n
    if side is Direction.BOTTOM:  # x at j interface j0, i cells i0..i0+nx-1
        return np.stack([2 * (i0 + np.arange(nx)) + 1, np.full(nx, 2 * j0)])
    return np.stack([np.full(ny, 2 * i0), 2 * (j0 + np.arange(ny)) + 1])


def _target(
    points: np.ndarray, start: tuple[int, int], n: tuple[int, int], h: int
) -> tuple[int, EdgeIndex, bool]:
    """The receiver's component, local index and reversal for points in its doubled coordinates."""
    (i0, j0), (nx, ny) = start, n
    p, q = points
    fixed, along, component = (q, p, 0) if q[0] % 2 == 0 else (p, q, 1)
    edge = fixed[0] // 2 - (j0 + ny if component == 0 else i0 + nx)
    cells = (along - 1) // 2 - (i0 if component == 0 else j0) + h
    if (fixed != fixed[0]).any() or edge != 0 or abs(int(cells[-1] - cells[0])) != len(cells) - 1:
        raise DecompositionError(
            "synchronize_vector_interfaces needs every rank's south and west edges to meet a "
            "neighbour's north or east edge (south and west win); this partitioner maps them "
            "elsewhere, so the rule would not give one value per shared point"
        )
    low = int(cells.min())
    span = slice(low, low + len(cells))
    line = (fixed[0] // 2 - (j0 if component == 0 else i0)) + h
    index: EdgeIndex = (span, int(line)) if component == 0 else (int(line), span)
    return component, index, bool(cells[0] > cells[-1])


@functools.lru_cache(maxsize=256)
def sends(
    partitioner: Partitioner, rank: int, nx: int, ny: int, n_halo: int
) -> tuple[EdgeTransfer, ...]:
    """The edges ``rank`` sends: x on its south edge, y on its west edge, where a neighbour is."""
    n_tile = (nx * partitioner.layout[0], ny * partitioner.layout[1])
    tile = partitioner.tile_index(rank)
    (i0, _), (j0, _) = partitioner.subdomain_extent(rank, *n_tile)
    neighbours = partitioner.neighbours(rank)
    result = []
    for side, component in _SENT.items():
        neighbour = neighbours[side].rank
        if neighbour is None:
            continue
        location = partitioner.locate(tile, i0 + side.di, j0 + side.dj, n_tile)
        assert location is not None, (rank, side)
        index_map = location.index_map
        x2, y2 = _edge_points(side, (i0, j0), (nx, ny))
        # Doubled coordinates: point() adds the offset once, doubling needs it twice.
        p2, q2 = index_map.point(x2, y2)
        mapped = np.stack([p2 + index_map.offset[0], q2 + index_map.offset[1]])
        (ti0, _), (tj0, _) = partitioner.subdomain_extent(neighbour, *n_tile)
        target_component, target, flip = _target(mapped, (ti0, tj0), (nx, ny), n_halo)
        # Components turn like index displacements: ours = matrix @ theirs.
        turned = np.array(index_map.matrix) @ np.eye(2, dtype=int)[component]
        if turned[target_component] == 0:
            raise AssertionError(f"rank {rank} {side.name}: component turned off the edge")
        source: EdgeIndex = (
            (slice(n_halo, n_halo + nx), n_halo)
            if component == 0
            else (n_halo, slice(n_halo, n_halo + ny))
        )
        result.append(
            EdgeTransfer(
                source_rank=rank,
                target_rank=neighbour,
                tag=component,
                source_component=component,
                source=source,
                target_component=target_component,
                target=target,
                reversed=flip,
                negate=bool(turned[target_component] < 0),
            )
        )
    return tuple(result)


@functools.lru_cache(maxsize=256)
def plan_interfaces(
    partitioner: Partitioner, rank: int, nx: int, ny: int, n_halo: int
) -> InterfacePlan:
    """``rank``'s plan for compute domains of ``nx x ny`` cells (every rank's) and ``n_halo``."""
    if nx < 1 or ny < 1 or n_halo < 0:
        raise DecompositionError(
            f"interface synchronization needs a compute domain of at least 1 x 1 cells and "
            f"n_halo >= 0, got {nx} x {ny} cells and n_halo={n_halo}"
        )
    peers = sorted({n.rank for n in partitioner.neighbours(rank).values() if n.rank is not None})
    receives = tuple(
        transfer
        for peer in peers
        for transfer in sends(partitioner, peer, nx, ny, n_halo)
        if transfer.target_rank == rank
    )
    return InterfacePlan(rank, sends(partitioner, rank, nx, ny, n_halo), receives)


def _halo_of(obj: Any, name: str) -> Optional[int]:
    """``n_halo`` from a Quantity-like's ``origin`` (its compute-domain start), if it has one."""
    origin = getattr(obj, "origin", None)
    if origin is None or len(origin) < 2:
        return None
    if int(origin[0]) != int(origin[1]):
        raise DecompositionError(
            f"{name} has origin {tuple(origin)}: interface synchronization needs the same halo "
            f"width along i and j; pass n_halo= explicitly with plain arrays"
        )
    return int(origin[0])


def _check_dims(obj: Any, component: int, name: str) -> None:
    dims = getattr(obj, "dims", None)
    if dims is None or len(dims) < 2 or not all(isinstance(d, str) for d in dims[:2]):
        return
    if tuple(dims[:2]) not in _DIMS[component]:
        raise DecompositionError(
            f"{name} has dims {tuple(dims)}; synchronize_vector_interfaces(x, y) needs x on "
            f"{_DIMS[0][0]} and y on {_DIMS[1][0]}, i first, then j, then vertical dims; "
            f"pass x before y, with i as the first axis"
        )


def c_grid_arrays(x: Any, y: Any, n_halo: Optional[int]) -> tuple[Any, Any, int, int, int]:
    """Unwrap and check a staggered pair; returns ``(x, y, n_halo, nx, ny)``.

    ``n_halo`` None takes it from the objects' ``origin`` (Quantity-like) and
    is an error for plain arrays, whose shapes do not tell it.
    """
    for obj, component, name in ((x, 0, "x"), (y, 1, "y")):
        _check_dims(obj, component, name)
    if n_halo is None:
        n_halo = _halo_of(x, "x")
        if n_halo is None or n_halo != _halo_of(y, "y"):
            raise DecompositionError(
                "synchronize_vector_interfaces needs n_halo= for plain arrays (their shapes do "
                "not tell the halo width), e.g. synchronize_vector_interfaces(u, v, n_halo=3)"
            )
    if isinstance(n_halo, bool) or not isinstance(n_halo, (int, np.integer)) or n_halo < 0:
        raise DecompositionError(f"n_halo must be an integer >= 0, got {n_halo!r}")
    xa, ya = array_of(x), array_of(y)
    for array, name in ((xa, "x"), (ya, "y")):
        if getattr(array, "ndim", 0) < 2:
            shape = getattr(array, "shape", "")
            raise DecompositionError(
                f"{name} must be an array [i, j, ...], got {type(array).__name__} {shape}"
            )
    if xa.dtype != ya.dtype:
        raise DecompositionError(
            f"x is {xa.dtype} but y is {ya.dtype}: the two components must have one dtype; "
            f"cast one of them"
        )
    if array_module(xa) is not array_module(ya):
        raise DecompositionError("x and y must both be numpy arrays or both cupy arrays")
    expected = (xa.shape[0] + 1, xa.shape[1] - 1, *xa.shape[2:])
    h = int(n_halo)
    nx, ny = xa.shape[0] - 2 * h, xa.shape[1] - 1 - 2 * h
    if tuple(ya.shape) != expected or nx < 1 or ny < 1:
        raise DecompositionError(
            f"x {tuple(xa.shape)} and y {tuple(ya.shape)} are not an interface-staggered pair with "
            f"n_halo={h}: expected x (nx + {2 * h}, ny + 1 + {2 * h}, ...) and y (nx + 1 + {2 * h}, "
            f"ny + {2 * h}, ...) with nx, ny >= 1 and the same vertical dims; for this x that is y "
            f"{expected}"
        )
    return xa, ya, h, nx, ny


class VectorInterfaceRequest:
    """An interface synchronization in flight; :meth:`wait` finishes it."""

    def __init__(
        self, comm: Communicator, arrays: tuple[Any, Any], plan: InterfacePlan, staging: bool
    ) -> None:
        self._comm, self._arrays, self._plan = comm, arrays, plan
        xp = array_module(arrays[0])
        self._xp = xp
        wire = np if staging else xp
        vertical, dtype = arrays[0].shape[2:], arrays[0].dtype
        self._buffers = [wire.empty((_length(t.target), *vertical), dtype) for t in plan.receives]
        self._receives = [
            comm.irecv(buffer, t.source_rank, t.tag)
            for buffer, t in zip(self._buffers, plan.receives)
        ]
        blocks = [xp.ascontiguousarray(arrays[t.source_component][t.source]) for t in plan.sends]
        if xp is not np:
            xp.cuda.get_current_stream().synchronize()
        if staging:
            blocks = [to_host(block) for block in blocks]
        #: kept alive until the sends are complete
        self._blocks = blocks
        self._sends = [
            comm.isend(block, t.target_rank, t.tag) for block, t in zip(blocks, plan.sends)
        ]
        self._done = False

    def wait(self) -> None:
        """Wait for the messages and overwrite the shared edges (north of x, east of y)."""
        if self._done:
            raise HaloExchangeError("this interface synchronization was already waited for")
        self._done = True
        xp = self._xp
        self._comm.waitall(self._receives)
        for buffer, transfer in zip(self._buffers, self._plan.receives):
            block = xp.asarray(buffer)
            if transfer.reversed:
                block = block[::-1]
            target = self._arrays[transfer.target_component]
            if transfer.negate:
                target[transfer.target] = xp.negative(block)
            else:
                target[transfer.target] = block
        self._comm.waitall(self._sends)
        self._blocks = []


def _length(index: EdgeIndex) -> int:
    span = index[0] if isinstance(index[0], slice) else index[1]
    assert isinstance(span, slice)
    return span.stop - span.start


class VectorInterfaceSynchronizer:
    """Synchronizes interface-staggered vector pairs over a duplicate of ``communicator``.

    Creating it is collective (the communicator is duplicated, so its messages
    never match anyone else's). Any number of synchronizations may be in
    flight; every rank must start them in the same order.
    """

    def __init__(
        self, communicator: Communicator, stage_through_host: Optional[bool] = None
    ) -> None:
        """``stage_through_host``: None stages device arrays through host memory
        unless ``ORCHESTRA_CUDA_AWARE_MPI=1`` (as :class:`~orchestra.comm.halo.HaloUpdater`)."""
        self._comm = communicator.duplicate()
        self._staging = stage_through_host

    def start(self, x: Any, y: Any, n_halo: Optional[int] = None) -> VectorInterfaceRequest:
        """Post the edge messages of the pair ``(x, y)``; returns the request to ``wait()`` on."""
        xa, ya, h, nx, ny = c_grid_arrays(x, y, n_halo)
        plan = plan_interfaces(self._comm.partitioner, self._comm.rank, nx, ny, h)
        xp = array_module(xa)
        staging = _stage_through_host(xp) if self._staging is None else self._staging
        return VectorInterfaceRequest(self._comm, (xa, ya), plan, staging)

    def synchronize(self, x: Any, y: Any, n_halo: Optional[int] = None) -> None:
        """Synchronize the shared edges of ``(x, y)`` (blocking)."""
        self.start(x, y, n_halo).wait()
