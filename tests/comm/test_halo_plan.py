"""Halo plans without MPI: every rank's plan, applied in one process, matches the geometry."""

from __future__ import annotations

import numpy as np
import pytest

from orchestra.comm import CubedSpherePartitioner, DecompositionError, TilePartitioner
from orchestra.comm.halo_plan import plan_halo

from .halo_reference import ghost_source, local_components

SENTINEL = -7.0


def _global_ids(n_tiles, n, ny):
    return np.arange(n_tiles * n * ny, dtype=float).reshape(n_tiles, n, ny) + 1


def _local(p, rank, field, nx, h):
    (i0, i1), (j0, j1) = p.subdomain_extent(rank, nx * p.layout[0], nx * p.layout[1])
    out = np.full((nx + 2 * h, nx + 2 * h), SENTINEL)
    out[h:-h, h:-h] = field[p.tile_index(rank), i0:i1, j0:j1]
    return out


def _apply_plans(p, arrays, nx, h, turn=None):
    """Apply every rank's receives, reading sources from the other ranks' arrays."""
    for rank in range(p.total_ranks):
        for t in plan_halo(p, rank, nx, nx, h).receives:
            block = [np.rot90(a[t.source_rank][t.source], t.rotations) for a in arrays]
            if turn is not None:
                block = turn(t.rotations, *block)
            for a, b in zip(arrays, block):
                a[rank][t.target] = b


CASES = [
    (CubedSpherePartitioner(TilePartitioner((1, 1))), 3),
    (CubedSpherePartitioner(TilePartitioner((2, 2))), 3),
    (CubedSpherePartitioner(TilePartitioner((3, 3))), 2),
    (TilePartitioner((3, 3)), 3),
    (TilePartitioner((1, 3)), 2),
]


@pytest.mark.parametrize("p,nx", CASES, ids=lambda x: repr(x))
@pytest.mark.parametrize("h", [1, 2, 3])
def test_plans_fill_every_owned_ghost_cell_with_its_owner(p, nx, h):
    if h > nx:
        pytest.skip("halo wider than the subdomain")
    n, ny = nx * p.layout[0], nx * p.layout[1]
    field = _global_ids(p.n_tiles, n, ny)
    arrays = [_local(p, r, field, nx, h) for r in range(p.total_ranks)]
    _apply_plans(p, [arrays], nx, h)
    cube = isinstance(p, CubedSpherePartitioner)
    for rank, a in enumerate(arrays):
        (i0, _), (j0, _) = p.subdomain_extent(rank, n, ny)
        for x in range(a.shape[0]):
            for y in range(a.shape[1]):
                source = ghost_source(p.tile_index(rank), i0 + x - h, j0 + y - h, n, cube, ny)
                expected = SENTINEL if source is None else field[source[:3]]
                assert a[x, y] == expected, (rank, x, y)


def _turn(rotations, u, v):
    for _ in range(rotations):
        u, v = -v, u
    return u, v


@pytest.mark.parametrize("layout", [(1, 1), (2, 2)])
def test_plans_turn_vectors_like_the_geometry(layout):
    p, nx, h = CubedSpherePartitioner(TilePartitioner(layout)), 4, 3
    n = nx * layout[0]
    idx = np.arange(n)
    ii, jj = np.meshgrid(idx, idx, indexing="ij")
    comps = [local_components(t, n, ii, jj) for t in range(6)]
    u_field = np.stack([c[0] for c in comps])
    v_field = np.stack([c[1] for c in comps])
    us = [_local(p, r, u_field, nx, h) for r in range(p.total_ranks)]
    vs = [_local(p, r, v_field, nx, h) for r in range(p.total_ranks)]
    _apply_plans(p, [us, vs], nx, h, turn=_turn)
    for rank in range(p.total_ranks):
        (i0, _), (j0, _) = p.subdomain_extent(rank, n, n)
        for x in range(nx + 2 * h):
            for y in range(nx + 2 * h):
                source = ghost_source(p.tile_index(rank), i0 + x - h, j0 + y - h, n, True)
                if source is None:
                    assert us[rank][x, y] == SENTINEL
                    continue
                t, si, sj, turn = source
                expected = turn @ np.array(local_components(t, n, np.array(si), np.array(sj)))
                np.testing.assert_allclose([us[rank][x, y], vs[rank][x, y]], expected, atol=1e-13)


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=repr)
def test_sends_mirror_receives(p):
    nx, h = 3, 2
    all_receives = {
        (t.source_rank, t.target_rank, t.direction)
        for r in range(p.total_ranks)
        for t in plan_halo(p, r, nx, nx, h).receives
    }
    all_sends = {
        (t.source_rank, t.target_rank, t.direction)
        for r in range(p.total_ranks)
        for t in plan_halo(p, r, nx, nx, h).sends
    }
    assert all_receives == all_sends
    for r in range(p.total_ranks):
        for t in plan_halo(p, r, nx, nx, h).receives:
            source_shape = (
                t.source[0].stop - t.source[0].start,
                t.source[1].stop - t.source[1].start,
            )
            target_shape = (
                t.target[0].stop - t.target[0].start,
                t.target[1].stop - t.target[1].start,
            )
            assert target_shape == (source_shape[::-1] if t.rotations % 2 else source_shape)


def test_halo_wider_than_subdomain_is_an_error():
    with pytest.raises(DecompositionError, match="smaller than n_halo=3"):
        plan_halo(CubedSpherePartitioner(TilePartitioner((2, 2))), 0, 2, 2, 3)
