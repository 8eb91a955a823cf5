"""MPI worker: halo updates, gather/scatter and the callback exchanger, checked on every rank.

Run by tests/comm/test_mpi_halo.py under mpirun::

    python tests/comm/mpi_halo_worker.py --grid cube --layout 2 --nx 6 --checks scalar,vector

Every rank checks every cell of its arrays; a failure on any rank aborts the
job (non-zero exit). Rank 0 prints ``OK <check>`` after each check passed on
all ranks.
"""

from __future__ import annotations

import argparse
import types

import numpy as np
import pytest

from orchestra.comm import (
    CallbackHaloExchanger,
    Communicator,
    CubedSpherePartitioner,
    DecompositionError,
    HaloExchangeError,
    HaloUpdater,
    TilePartitioner,
    abort_on_exception,
)
from tests.comm.halo_reference import ghost_source, local_components

SENTINEL = -7.0
NZ = 3


class Setup:
    """This rank's communicator, its place in the tile and the reference lookups."""

    def __init__(self, grid: str, layout: int, nx: int) -> None:
        tile = TilePartitioner((layout, layout))
        self.cube = grid == "cube"
        self.partitioner = CubedSpherePartitioner(tile) if self.cube else tile
        self.comm = Communicator.world(self.partitioner)
        self.nx, self.n = nx, nx * layout
        self.tile = self.comm.tile_index
        (self.i0, _), (self.j0, _) = self.partitioner.subdomain_extent(
            self.comm.rank, self.n, self.n
        )

    def empty(self, h: int, dtype=np.float64, nz: int = 0) -> np.ndarray:
        shape = (self.nx + 2 * h, self.nx + 2 * h) + ((nz,) if nz else ())
        return np.full(shape, SENTINEL, dtype=dtype)

    def tile_cells(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        """Tile indices of every local cell (halo included), clipped into the tile."""
        idx_i = np.clip(np.arange(self.i0 - h, self.i0 + self.nx + h), 0, self.n - 1)
        idx_j = np.clip(np.arange(self.j0 - h, self.j0 + self.nx + h), 0, self.n - 1)
        return np.meshgrid(idx_i, idx_j, indexing="ij")

    def sources(self, h: int):
        """For each local cell, its owner (tile, i, j, turn) or None."""
        size = self.nx + 2 * h
        return [
            [
                ghost_source(self.tile, self.i0 + x - h, self.j0 + y - h, self.n, self.cube)
                for y in range(size)
            ]
            for x in range(size)
        ]


def global_ids(n_tiles: int, n: int) -> np.ndarray:
    return np.arange(n_tiles * n * n, dtype=np.float64).reshape(n_tiles, n, n) + 1


def check_scalar_against(setup: Setup, array: np.ndarray, global_field: np.ndarray, h: int) -> None:
    for x, row in enumerate(setup.sources(h)):
        for y, source in enumerate(row):
            expected = SENTINEL if source is None else global_field[source[:3]]
            np.testing.assert_array_equal(
                array[x, y], expected, err_msg=f"rank {setup.comm.rank} cell {(x, y)} h={h}"
            )


def fill_ids(setup: Setup, h: int, dtype, nz: int) -> np.ndarray:
    a = setup.empty(h, dtype, nz)
    ids = global_ids(setup.partitioner.n_tiles, setup.n)[setup.tile]
    block = ids[setup.i0 : setup.i0 + setup.nx, setup.j0 : setup.j0 + setup.nx]
    a[h:-h, h:-h] = block[..., None] + 1000.0 * np.arange(nz) if nz else block
    return a


def check_gather_scatter(setup: Setup) -> None:
    comm, h = setup.comm, 2
    ids = global_ids(setup.partitioner.n_tiles, setup.n)
    root_of_tile = comm.partitioner.rank_within_tile(comm.rank) == 0
    local = comm.scatter_tile(ids[setup.tile] if root_of_tile else None, h, out=setup.empty(h))
    np.testing.assert_array_equal(local, fill_ids(setup, h, np.float64, 0))
    tile_field = comm.gather_tile(local, h)
    assert (tile_field is not None) == root_of_tile
    if root_of_tile:
        np.testing.assert_array_equal(tile_field, ids[setup.tile])
    everything = comm.gather(fill_ids(setup, h, np.float32, NZ), h)
    if comm.rank == 0:
        expected = ids[..., None] + 1000.0 * np.arange(NZ)
        np.testing.assert_array_equal(everything, expected.astype(np.float32))
    else:
        assert everything is None


def check_scalar(setup: Setup) -> None:
    comm = setup.comm
    for h in (1, 2, 3):
        halo = comm.halo_updater(h)
        flat = fill_ids(setup, h, np.float64, 0)
        deep = fill_ids(setup, h, np.float32, NZ)
        halo.update(flat, deep)
        # The reference is a field gathered from every rank, sent to all.
        global_flat = comm.bcast(comm.gather(flat, h))
        global_deep = comm.bcast(comm.gather(deep, h))
        check_scalar_against(setup, flat, global_flat, h)
        check_scalar_against(setup, deep, global_deep, h)
        # A second call reuses the buffers of the first.
        again = fill_ids(setup, h, np.float64, 0)
        halo.update(again, fill_ids(setup, h, np.float32, NZ))
        np.testing.assert_array_equal(again, flat)
        assert len(halo._exchanges) == 1


def wind_pair(setup: Setup, h: int, nz: int) -> tuple[np.ndarray, np.ndarray]:
    ii, jj = setup.tile_cells(h)
    u_loc, v_loc = local_components(setup.tile, setup.n, ii, jj)
    u, v = setup.empty(h, nz=nz), setup.empty(h, nz=nz)
    scale = np.arange(1, nz + 1) if nz else 1.0
    u[h:-h, h:-h] = (u_loc[h:-h, h:-h, None] if nz else u_loc[h:-h, h:-h]) * scale
    v[h:-h, h:-h] = (v_loc[h:-h, h:-h, None] if nz else v_loc[h:-h, h:-h]) * scale
    return u, v


def check_vector(setup: Setup) -> None:
    for h in (1, 2, 3):
        halo = setup.comm.halo_updater(h)
        u, v = wind_pair(setup, h, NZ)
        u2, v2 = wind_pair(setup, h, 0)
        halo.update_vector([u, u2], [v, v2])
        for x, row in enumerate(setup.sources(h)):
            for y, source in enumerate(row):
                if source is None:
                    assert u[x, y, 0] == v[x, y, 0] == u2[x, y] == v2[x, y] == SENTINEL, (x, y)
                    continue
                # Components from the owning tile's own geometry, turned into ours.
                t, si, sj, turn = source
                expected = turn @ np.array(local_components(t, setup.n, np.array(si), np.array(sj)))
                np.testing.assert_allclose([u2[x, y], v2[x, y]], expected, rtol=0, atol=1e-14)
                for k in range(NZ):
                    np.testing.assert_allclose(
                        [u[x, y, k], v[x, y, k]], expected * (k + 1), rtol=0, atol=1e-13
                    )


def check_split(setup: Setup) -> None:
    """start/wait gives the same arrays as update, with work done in between."""
    h = 3
    halo = setup.comm.halo_updater(h)
    rng = np.random.default_rng(setup.comm.rank)
    a = setup.empty(h, nz=NZ)
    a[h:-h, h:-h] = rng.random((setup.nx, setup.nx, NZ))
    b = a.copy()
    u, v = wind_pair(setup, h, NZ)
    u_b, v_b = u.copy(), v.copy()
    halo.update(a)
    halo.update_vector(u, v)
    halo.start(b)
    interior_sum = float(b[h:-h, h:-h].sum())  # overlapping work: read the compute domain
    halo.wait()
    halo.start_vector(u_b, v_b)
    halo.wait_vector()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(u, u_b)
    np.testing.assert_array_equal(v, v_b)
    assert interior_sum == float(a[h:-h, h:-h].sum())


def check_staged(setup: Setup) -> None:
    """Staging through host buffers (the GPU path without CUDA-aware MPI) gives the same halos."""
    from orchestra.comm import HaloUpdater

    h = 2
    rng = np.random.default_rng(100 + setup.comm.rank)
    a = setup.empty(h, nz=NZ)
    a[h:-h, h:-h] = rng.random((setup.nx, setup.nx, NZ))
    b = a.copy()
    c = setup.empty(h, nz=0).astype(np.float32)  # 2-D single precision, in the same exchange below
    c[h:-h, h:-h] = rng.random((setup.nx, setup.nx))
    c_b = c.copy()
    u, v = wind_pair(setup, h, NZ)
    u_b, v_b = u.copy(), v.copy()
    direct = setup.comm.halo_updater(h)
    direct.update(a)
    direct.update(c)
    direct.update_vector(u, v)
    for indexed in (False, True):  # the GPU's packing: indexed copies, staged
        staged = HaloUpdater(setup.comm, h, stage_through_host=True, indexed_packing=indexed)
        b_, c_, u_, v_ = b.copy(), c_b.copy(), u_b.copy(), v_b.copy()
        staged.start_fields([b_, c_], [(u_, v_)])  # two dtypes, 2-D and 3-D, scalars and a pair
        staged.wait()
        exchange = next(iter(staged._exchanges.values()))
        assert exchange.sends.host is not None and exchange.receives.host is not None
        assert type(exchange.packing).__name__ == ("IndexedPacking" if indexed else "SlicedPacking")
        np.testing.assert_array_equal(a, b_)
        np.testing.assert_array_equal(c, c_)
        np.testing.assert_array_equal(u, u_)
        np.testing.assert_array_equal(v, v_)


def check_layouts(setup: Setup) -> None:
    """Fortran order and padded views (gt4py's aligned storages) get the same halos as C order,
    packed slice by slice or with indexed copies; negative strides are refused."""
    from orchestra.comm import HaloUpdater
    from orchestra.comm.errors import DecompositionError

    h = 2
    rng = np.random.default_rng(200 + setup.comm.rank)
    a = setup.empty(h, nz=NZ)
    a[h:-h, h:-h] = rng.random((setup.nx, setup.nx, NZ))
    u, v = wind_pair(setup, h, NZ)
    originals = [x.copy() for x in (a, u, v)]
    halo = setup.comm.halo_updater(h)
    halo.update(a)
    halo.update_vector(u, v)

    def padded(x: np.ndarray) -> np.ndarray:
        big = np.full((x.shape[0] + 1, x.shape[1] + 3, x.shape[2] + 5), -7.0)
        view = big[1:, 2:-1, 3:-2]
        view[...] = x
        return view

    indexed = HaloUpdater(setup.comm, h, indexed_packing=True)
    for layout in (np.asfortranarray, padded):
        for updater in (halo, indexed):
            arrays = [layout(x) for x in originals]
            updater.update(arrays[0])
            updater.update_vector(arrays[1], arrays[2])
            for expected, got in zip((a, u, v), arrays):
                np.testing.assert_array_equal(expected, got)
                if layout is padded:  # nothing outside the view was written
                    big = got.base
                    assert (big[0] == -7.0).all() and (big[:, :2] == -7.0).all()
                    assert (big[:, -1] == -7.0).all() and (big[..., :3] == -7.0).all()
    try:
        indexed.update(a[::-1])
    except DecompositionError as error:
        assert "strides" in str(error), error
    else:
        raise AssertionError("negative strides were not refused")


def check_callback(setup: Setup) -> None:
    h = 2
    halo = setup.comm.halo_updater(h)
    u, v = wind_pair(setup, h, NZ)
    state = types.SimpleNamespace(q=fill_ids(setup, h, np.float64, NZ), u=u, v=v)
    exchanger = CallbackHaloExchanger(state, ["q"], [("u", "v")], updater=halo)
    exchanger.update()
    expected_q = fill_ids(setup, h, np.float64, NZ)
    expected_u, expected_v = wind_pair(setup, h, NZ)
    halo.update(expected_q)
    halo.update_vector(expected_u, expected_v)
    np.testing.assert_array_equal(state.q, expected_q)
    np.testing.assert_array_equal(state.u, expected_u)
    np.testing.assert_array_equal(state.v, expected_v)
    # Re-allocated fields are looked up at call time.
    state.q = fill_ids(setup, h, np.float64, NZ)
    exchanger.start()
    exchanger.wait()
    np.testing.assert_array_equal(state.q, expected_q)


def check_errors(setup: Setup) -> None:
    """Misuse is a clear error on every rank (and leaves the updater usable)."""
    h = 1
    halo = setup.comm.halo_updater(h)
    a = fill_ids(setup, h, np.float64, 0)
    with pytest.raises(HaloExchangeError, match="no halo exchange in flight"):
        halo.wait()
    halo.start(a)
    with pytest.raises(HaloExchangeError, match="already in flight"):
        halo.start(a)
    halo.wait()
    with pytest.raises(DecompositionError, match="larger than 2[*]n_halo"):
        halo.update(np.zeros((2, 8)))
    with pytest.raises(DecompositionError, match="differ in shape"):
        halo.update_vector(a, np.zeros((4, 4)))
    with pytest.raises(DecompositionError, match="positive integer"):
        HaloUpdater(setup.comm, 0)
    halo.update()  # nothing to exchange is fine
    halo.update(a)


CHECKS = {
    "errors": check_errors,
    "gather": check_gather_scatter,
    "scalar": check_scalar,
    "vector": check_vector,
    "split": check_split,
    "staged": check_staged,
    "layouts": check_layouts,
    "callback": check_callback,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", choices=["cube", "tile"], required=True)
    parser.add_argument("--layout", type=int, required=True)
    parser.add_argument("--nx", type=int, default=6)
    parser.add_argument("--checks", default=",".join(CHECKS))
    args = parser.parse_args()
    setup = Setup(args.grid, args.layout, args.nx)
    for name in args.checks.split(","):
        CHECKS[name](setup)
        setup.comm.barrier()
        if setup.comm.rank == 0:
            print(f"OK {name}", flush=True)


if __name__ == "__main__":
    with abort_on_exception():
        main()
