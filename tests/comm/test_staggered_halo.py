"""Halo updates of interface-staggered fields, without MPI: plans and whole exchanges.

Every rank's :class:`HaloUpdater` runs in one process over a loopback
communicator (messages wait in a shared mailbox); the result must equal,
bitwise and point for point (halo, corners and compute-domain edges), the
geometric reference of ``staggered_reference.py``, which knows only where
each point lies and NDSL's rule for who fills it.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from orchestra.comm import (
    ChannelPartitioner,
    CubedSpherePartitioner,
    HaloUpdater,
    PeriodicTilePartitioner,
    TilePartitioner,
    Walls,
)
from orchestra.comm.halo_plan import plan_halo

from .staggered_reference import SENTINEL, STAGGERS, Domain, expected, initial
from .test_vector_interface import Loopback


def cube(layout: int, n: int, h: int) -> Domain:
    return Domain(CubedSpherePartitioner(TilePartitioner((layout, layout))), n, n, h, sphere=True)


DOMAINS = {
    "cube-1x1": lambda: cube(1, 4, 3),
    "cube-2x2": lambda: cube(2, 3, 2),
    "cube-3x3": lambda: cube(3, 2, 1),
    "tile-3x3": lambda: Domain(TilePartitioner((3, 3)), 3, 4, 2),
    "periodic-1x1": lambda: Domain(PeriodicTilePartitioner((1, 1)), 4, 3, 2, periodic=(True, True)),
    "periodic-2x2": lambda: Domain(PeriodicTilePartitioner((2, 2)), 3, 2, 2, periodic=(True, True)),
    "periodic-2x1": lambda: Domain(PeriodicTilePartitioner((2, 1)), 2, 3, 1, periodic=(True, True)),
    "channel-2x2": lambda: Domain(ChannelPartitioner((2, 2)), 3, 3, 2, periodic=(True, False)),
}
PAIRS = [("u", "v"), ("uc", "vc"), ("ua", "va")]


def scalars_of(d: Domain) -> list[str]:
    """Scalars: cell-centred and corner everywhere; staggered along one axis where nothing turns."""
    return ["q", "corner"] if d.sphere else ["q", "corner", "xi", "yi"]


def loopback_exchange(d: Domain, fields: list, scalars, pairs, walls=None, **kwargs) -> None:
    """One exchange of ``scalars`` and ``pairs`` on every rank, started on all before any waits."""
    mailbox: dict = collections.defaultdict(collections.deque)
    updaters = [
        HaloUpdater(Loopback(d.partitioner, r, mailbox), d.h, domain=(d.nx, d.ny), walls=walls, **kwargs)
        for r in range(d.partitioner.total_ranks)
    ]
    for updater, f in zip(updaters, fields):
        updater.start_fields([f[n] for n in scalars], [(f[a], f[b]) for a, b in pairs])
    for updater in updaters:
        updater.wait()
    assert not any(mailbox.values())


@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize("indexed,nz", [(False, 0), (True, 2)], ids=["sliced-2d", "indexed-3d"])
def test_exchange_equals_geometric_reference_bitwise(name, indexed, nz):
    d = DOMAINS[name]()
    ranks = range(d.partitioner.total_ranks)
    scalars = scalars_of(d)
    flat = [{n: initial(d, r, n) for n in STAGGERS} for r in ranks]
    fields = [{n: initial(d, r, n, nz) for n in STAGGERS} for r in ranks]
    # All fields in one exchange: blocks of different shapes in every message.
    loopback_exchange(d, fields, scalars, PAIRS, indexed_packing=indexed)
    levels = 1 + np.arange(nz)
    for r in ranks:
        want = {}
        for group in [[n] for n in scalars] + [list(p) for p in PAIRS]:
            want.update(expected(d, flat, r, group))
        for n, array in want.items():
            got = fields[r][n]
            assert np.array_equal(got, array[..., None] * levels if nz else array), (name, r, n)
            if all(d.periodic):
                assert not (array == SENTINEL).any(), (r, n)  # every ghost point has an owner
            assert (array != flat[r][n]).any(), (r, n)  # the exchange wrote something


@pytest.mark.parametrize("name", ["cube-2x2", "periodic-2x2"])
def test_one_field_per_call_and_start_wait_agree_with_one_exchange(name):
    d = DOMAINS[name]()
    ranks = range(d.partitioner.total_ranks)
    together = [{n: initial(d, r, n) for n in STAGGERS} for r in ranks]
    loopback_exchange(d, together, scalars_of(d), PAIRS)
    for scalar in scalars_of(d):
        alone = [{scalar: initial(d, r, scalar)} for r in ranks]
        loopback_exchange(d, alone, [scalar], [])
        assert all(np.array_equal(a[scalar], t[scalar]) for a, t in zip(alone, together))
    for u, v in PAIRS:
        alone = [{u: initial(d, r, u), v: initial(d, r, v)} for r in ranks]
        loopback_exchange(d, alone, [], [(u, v)], stage_through_host=True)
        assert all(np.array_equal(a[u], t[u]) and np.array_equal(a[v], t[v]) for a, t in zip(alone, together))


def test_compute_domain_edges_are_not_touched_by_the_update():
    """The overlap points (both edges of an interface axis) are the synchronization's business."""
    d = DOMAINS["periodic-2x2"]()
    ranks = range(d.partitioner.total_ranks)
    fields = [{n: initial(d, r, n) for n in STAGGERS} for r in ranks]
    before = [{n: a.copy() for n, a in f.items()} for f in fields]
    loopback_exchange(d, fields, scalars_of(d), PAIRS)
    h = d.h
    for f, b in zip(fields, before):
        for n, (si, sj) in STAGGERS.items():
            inside = (slice(h, h + d.nx + si), slice(h, h + d.ny + sj))
            assert np.array_equal(f[n][inside], b[n][inside])
            assert not (f[n] == SENTINEL).any()


@pytest.mark.parametrize("name", ["cube-1x1", "cube-2x2", "tile-3x3", "periodic-2x1", "channel-2x2"])
@pytest.mark.parametrize("stagger", [(False, False), (True, False), (False, True), (True, True)])
def test_plans_cover_the_halo_once_and_sends_mirror_receives(name, stagger):
    d = DOMAINS[name]()
    p, h = d.partitioner, d.h
    plans = [plan_halo(p, r, d.nx, d.ny, h, stagger) for r in range(p.total_ranks)]
    for r, plan in enumerate(plans):
        shape = d.shape(stagger)
        covered = np.zeros(shape, int)
        for t in plan.receives:
            covered[t.target] += 1
            source = (t.source[0].stop - t.source[0].start, t.source[1].stop - t.source[1].start)
            target = (t.target[0].stop - t.target[0].start, t.target[1].stop - t.target[1].start)
            assert target == (source[::-1] if t.rotations % 2 else source)
        inside = (slice(h, h + d.nx + stagger[0]), slice(h, h + d.ny + stagger[1]))
        assert covered.max() == 1 and not covered[inside].any()
        if all(d.periodic):
            assert covered.sum() == covered.size - covered[inside].size
    # What each rank sends of this staggering is what its neighbours receive of it, or, across
    # odd quarter turns, of the transposed one (a vector's other component).
    transposed = (stagger[1], stagger[0])
    other = [plan_halo(p, r, d.nx, d.ny, h, transposed) for r in range(p.total_ranks)]

    def key(t):
        source = tuple((s.start, s.stop) for s in t.source)
        return t.source_rank, t.target_rank, t.direction, t.rotations % 2, source

    sent = {key(t) for pl in plans for t in pl.sends}
    received = {key(t) for pl in plans for t in pl.receives if t.rotations % 2 == 0}
    received |= {key(t) for pl in other for t in pl.receives if t.rotations % 2}
    assert sent == received and len(sent) == sum(len(pl.sends) for pl in plans)


@pytest.mark.parametrize("scalar,vector", [("mirror", "free_slip"), ("edge", "no_slip"), ("zero", "zero")])
def test_channel_walls_reflect_staggered_fields_in_the_wall(scalar, vector):
    """Beyond a wall at a j-interface row the mirror image of ghost row k is interior row k."""
    d = DOMAINS["channel-2x2"]()
    n_i, n_j = d.n_tile
    h = d.h
    rules = {"mirror": "even", "edge": "edge", "zero": "zero"}
    vector_rules = {"free_slip": ("even", "odd"), "no_slip": ("odd", "odd"), "zero": ("zero", "zero")}
    fills = {"q": rules[scalar], "corner": rules[scalar], "yi": rules[scalar]}
    fills.update(zip(("u", "v"), vector_rules[vector]))
    fields, globals_ = [], {}
    for n, (si, sj) in ((n, STAGGERS[n]) for n in fills):
        # One value per point, the periodic copy in i included: i wraps, j ends at the walls.
        globals_[n] = np.arange(n_i * (n_j + sj), dtype=float).reshape(n_i, n_j + sj) * 1.5 + 3
    for r in range(d.partitioner.total_ranks):
        (i0, _), (j0, _) = d.partitioner.subdomain_extent(r, n_i, n_j)
        local = {}
        for n, (si, sj) in ((n, STAGGERS[n]) for n in fills):
            a = np.full(d.shape((si, sj)), SENTINEL)
            ii = (i0 + np.arange(d.nx + si)) % n_i
            a[h : h + d.nx + si, h : h + d.ny + sj] = globals_[n][ii][:, j0 : j0 + d.ny + sj]
            local[n] = a
        fields.append(local)
    loopback_exchange(d, fields, ["q", "corner", "yi"], [("u", "v")], walls=Walls(scalar, vector))
    for r, local in enumerate(fields):
        (i0, _), (j0, _) = d.partitioner.subdomain_extent(r, n_i, n_j)
        for n, (si, sj) in ((n, STAGGERS[n]) for n in fills):
            padded = _wall_pad(globals_[n], h, fills[n], bool(sj))
            window = padded[i0 : i0 + d.nx + si + 2 * h, j0 : j0 + d.ny + sj + 2 * h]
            assert np.array_equal(local[n], window), (r, n)


def _wall_pad(field: np.ndarray, h: int, fill: str, interface: bool) -> np.ndarray:
    """Periodic in i (one more column for i-interfaces), the wall rule in j: ``reflect`` mirrors
    in the wall point itself (j on interfaces), ``symmetric`` in the wall face (cells)."""
    out = np.pad(field, [(h, h + 1), (0, 0)], mode="wrap")
    width = [(0, 0), (h, h)]
    if fill == "zero":
        return np.pad(out, width, mode="constant")
    if fill == "edge":
        return np.pad(out, width, mode="edge")
    out = np.pad(out, width, mode="reflect" if interface else "symmetric")
    if fill == "odd":
        out[:, :h], out[:, -h:] = np.negative(out[:, :h]), np.negative(out[:, -h:])
    return out
