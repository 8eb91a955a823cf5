"""Interface synchronization without MPI: the plan against geometry, the exchange on a loopback.

The plan (:func:`orchestra.comm.vector_interface.plan_interfaces`) is checked
point by point against the sphere: the sender's and receiver's edge points
coincide and the components agree up to the plan's sign. The exchange
(:class:`VectorInterfaceSynchronizer`) runs for all ranks in one process over
a loopback communicator and must equal the geometric reference
(``interface_reference.py``) bitwise.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Sequence

import numpy as np
import pytest

import orchestra.comm as comm_package
from orchestra.comm import (
    Communicator,
    CubedSpherePartitioner,
    DecompositionError,
    HaloExchangeError,
    TilePartitioner,
)
from orchestra.comm.vector_interface import (
    EdgeIndex,
    VectorInterfaceSynchronizer,
    c_grid_arrays,
    plan_interfaces,
)
from tests.comm.interface_reference import (
    Geometry,
    local_pair,
    north_east,
    reference_synchronize,
    unmatched_points,
)


def _periodic(name: str) -> Any:
    cls = getattr(comm_package, name, None)
    if cls is None:
        pytest.skip(f"orchestra.comm.{name} does not exist yet")
    return cls


def cube(layout: int, n: int, h: int) -> Geometry:
    return Geometry(CubedSpherePartitioner(TilePartitioner((layout, layout))), n, n, h, True)


GEOMETRIES: dict[str, Callable[[], Geometry]] = {
    "cube-1x1": lambda: cube(1, 3, 2),
    "cube-2x2": lambda: cube(2, 2, 1),
    "cube-3x3": lambda: cube(3, 2, 0),
    "tile-3x3": lambda: Geometry(TilePartitioner((3, 3)), 3, 2, 1),
    "tile-1x2": lambda: Geometry(TilePartitioner((1, 2)), 2, 3, 2),
    "periodic-1x1": lambda: Geometry(
        _periodic("PeriodicTilePartitioner")((1, 1)), 3, 2, 1, periodic=(True, True)
    ),
    "periodic-2x3": lambda: Geometry(
        _periodic("PeriodicTilePartitioner")((2, 3)), 2, 2, 1, periodic=(True, True)
    ),
    "channel-2x2": lambda: Geometry(
        _periodic("ChannelPartitioner")((2, 2)), 3, 2, 1, periodic=(True, False)
    ),
}

#: north/east points no rank's south/west edge shares: the non-periodic tile edges
UNSHARED = {"tile-3x3": 9 + 6, "tile-1x2": 2 + 6, "channel-2x2": 6}


def edge_indices(index: EdgeIndex) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays of the points an edge index selects, in order along the edge."""
    i, j = index
    if isinstance(i, slice):
        return np.arange(i.start, i.stop), np.full(i.stop - i.start, j)
    assert isinstance(j, slice)
    return np.full(j.stop - j.start, i), np.arange(j.start, j.stop)


@pytest.mark.parametrize("name", GEOMETRIES)
def test_plan_joins_coinciding_points_and_agreeing_components(name):
    g = GEOMETRIES[name]()
    transfers = 0
    for rank in range(g.partitioner.total_ranks):
        for t in plan_interfaces(g.partitioner, rank, g.nx, g.ny, g.n_halo).sends:
            position, direction = g.points(rank, t.source_component, *edge_indices(t.source))
            ii, jj = edge_indices(t.target)
            if t.reversed:
                ii, jj = ii[::-1], jj[::-1]
            there, their_direction = g.points(t.target_rank, t.target_component, ii, jj)
            np.testing.assert_allclose(there, position, rtol=0, atol=1e-12, err_msg=str(t))
            sign = -1.0 if t.negate else 1.0
            np.testing.assert_allclose(their_direction, sign * direction, rtol=0, atol=1e-12)
            transfers += 1
    assert transfers > 0


@pytest.mark.parametrize("name", GEOMETRIES)
def test_each_rank_receives_exactly_what_is_sent_to_it_and_covers_shared_edges(name):
    g = GEOMETRIES[name]()
    ranks = range(g.partitioner.total_ranks)
    plans = [plan_interfaces(g.partitioner, r, g.nx, g.ny, g.n_halo) for r in ranks]
    sent = [t for plan in plans for t in plan.sends]
    for plan in plans:
        assert sorted(map(repr, plan.receives)) == sorted(
            repr(t) for t in sent if t.target_rank == plan.rank
        )
    written = sum(len(edge_indices(t.target)[0]) for t in sent)
    overwritten = g.partitioner.total_ranks * (g.nx + g.ny)  # north edge of x, east edge of y
    assert unmatched_points(g) == UNSHARED.get(name, 0)
    assert written == overwritten - UNSHARED.get(name, 0)


class Loopback:
    """A communicator for all ranks in one process: messages wait in a shared mailbox."""

    def __init__(self, partitioner: Any, rank: int, mailbox: dict) -> None:
        self.partitioner, self.rank, self.mailbox = partitioner, rank, mailbox

    def duplicate(self) -> "Loopback":
        return self

    def isend(self, buffer: Any, dest: int, tag: int) -> Any:
        self.mailbox[(self.rank, dest, tag)].append(np.array(buffer, copy=True))
        return None

    def irecv(self, buffer: Any, source: int, tag: int) -> Any:
        return buffer, (source, self.rank, tag)

    def waitall(self, requests: Sequence[Any]) -> None:
        for request in requests:
            if request is not None:
                buffer, key = request
                buffer[...] = self.mailbox[key].popleft()

    def wait_received(self, requests: Sequence[Any]) -> list[int]:
        self.waitall(requests)
        return [request[0].nbytes for request in requests]


def loopback_synchronize(g: Geometry, fields: list, staging: bool = False, **kwargs) -> None:
    mailbox: dict = collections.defaultdict(collections.deque)
    ranks = range(g.partitioner.total_ranks)
    syncs = [
        VectorInterfaceSynchronizer(Loopback(g.partitioner, r, mailbox), staging) for r in ranks
    ]
    requests = [s.start(x, y, **kwargs) for s, (x, y) in zip(syncs, fields)]
    for request in requests:
        request.wait()
    assert not any(mailbox.values())


@pytest.mark.parametrize("name", GEOMETRIES)
@pytest.mark.parametrize("nz,dtype", [(0, np.float64), (3, np.float32)])
def test_exchange_equals_geometric_reference_bitwise(name, nz, dtype):
    g = GEOMETRIES[name]()
    fields = [local_pair(g, r, nz, dtype) for r in range(g.partitioner.total_ranks)]
    expected = reference_synchronize(g, fields)
    originals = [(x.copy(), y.copy()) for x, y in fields]
    loopback_synchronize(g, fields, staging=nz > 0, n_halo=g.n_halo)
    for (x, y), (ex, ey) in zip(fields, expected):
        assert np.array_equal(x, ex) and np.array_equal(y, ey)
    changed = sum((x != ox).sum() + (y != oy).sum() for (x, y), (ox, oy) in zip(fields, originals))
    shared = g.partitioner.total_ranks * (g.nx + g.ny) - UNSHARED.get(name, 0)
    assert changed == shared * max(nz, 1)  # every shared point differed, and only those changed


def test_matches_ndsl_worked_example_on_the_1x1_cube():
    """NDSL's own test of this routine (layout 1x1, 2x2 cells, no halo), in [i, j] order."""
    g = cube(1, 2, 0)
    x = [np.add.outer(np.arange(2), 2 * np.arange(3)) + 6.0 * r for r in range(6)]
    y = [36 + np.add.outer(np.arange(3), 3 * np.arange(2)) + 6.0 * r for r in range(6)]
    fields = list(zip(x, y))
    loopback_synchronize(g, fields, n_halo=0)
    assert fields[0][1][2].tolist() == [42, 45]  # east edge of y from rank 1's west edge
    assert fields[0][0][:, 2].tolist() == [-51, -48]  # north of x: rank 2's west y, turned
    assert fields[1][1][2].tolist() == [-19, -18]  # east of y: rank 3's south x, turned
    assert fields[1][0][:, 2].tolist() == [12, 13]


class QuantityLike:
    """An NDSL-like container: ``.data``, ``.origin`` and ``.dims``."""

    def __init__(self, data: np.ndarray, origin: tuple, dims: tuple) -> None:
        self.data, self.origin, self.dims = data, origin, dims


def test_quantity_like_objects_are_unwrapped_and_give_n_halo():
    g = cube(1, 3, 2)
    pairs = [local_pair(g, r, 2) for r in range(6)]
    expected = reference_synchronize(g, pairs)
    quantities = [
        (
            QuantityLike(x, (2, 2, 0), ("i", "j_interface", "k")),
            QuantityLike(y, (2, 2, 0), ("x_interface", "y", "z")),
        )
        for x, y in pairs
    ]
    loopback_synchronize(g, quantities)
    for (x, y), (ex, ey) in zip(pairs, expected):
        assert np.array_equal(x, ex) and np.array_equal(y, ey)


def test_bad_pairs_are_refused_with_the_expected_shapes():
    x, y = np.zeros((7, 8)), np.zeros((8, 7))
    assert c_grid_arrays(x, y, 2)[2:] == (2, 3, 3)
    with pytest.raises(DecompositionError, match=r"y \(8, 7, 4\)"):
        c_grid_arrays(np.zeros((7, 8, 4)), np.zeros((8, 7, 5)), 2)
    with pytest.raises(DecompositionError, match=r"not an interface-staggered pair.*y \(8, 7\)"):
        c_grid_arrays(x, np.zeros((7, 8)), 2)
    with pytest.raises(DecompositionError, match="nx, ny >= 1"):
        c_grid_arrays(x, y, 4)
    with pytest.raises(DecompositionError, match="float64 but y is float32"):
        c_grid_arrays(x, y.astype(np.float32), 2)
    with pytest.raises(DecompositionError, match="needs n_halo= for plain arrays"):
        c_grid_arrays(x, y, None)
    with pytest.raises(DecompositionError, match="integer >= 0"):
        c_grid_arrays(x, y, -1)
    with pytest.raises(DecompositionError, match="same halo width"):
        c_grid_arrays(QuantityLike(x, (2, 1), ()), QuantityLike(y, (2, 1), ()), None)
    transposed = QuantityLike(x.T, (2, 2), ("j_interface", "i"))
    with pytest.raises(DecompositionError, match="x has dims .*i first"):
        c_grid_arrays(transposed, y, 2)


def test_cube_needs_square_compute_domains():
    with pytest.raises(DecompositionError, match="square"):
        plan_interfaces(CubedSpherePartitioner(TilePartitioner((1, 1))), 0, 3, 4, 1)


def test_wait_twice_is_an_error_and_methods_are_callbacks():
    g = Geometry(TilePartitioner((1, 1)), 2, 2, 1)
    sync = VectorInterfaceSynchronizer(Loopback(g.partitioner, 0, {}))
    x, y = local_pair(g, 0)
    untouched = x.copy()
    request = sync.start(x, y, n_halo=1)
    request.wait()
    assert np.array_equal(x, untouched)  # a single 1x1 tile shares no edge
    with pytest.raises(HaloExchangeError, match="already waited"):
        request.wait()
    for method in (
        Communicator.synchronize_vector_interfaces,
        Communicator.start_synchronize_vector_interfaces,
    ):
        assert getattr(method, "__orchestra_callback__", False), method
    assert len(north_east(g)) == 2
