"""MPI worker: halo updates of interface-staggered fields, every point checked on every rank.

Run by tests/comm/test_mpi_staggered.py under mpirun::

    python tests/comm/mpi_staggered_worker.py --grid cube --layout 2 --nx 3 --halo 2

Every rank builds the initial fields of *all* ranks (distinct values, a
sentinel halo; ``staggered_reference.initial``), exchanges its own with a
:class:`HaloUpdater` given ``domain=(nx, ny)``, and compares them bitwise with
the single-process geometric reference (``staggered_reference.expected``):
scalars (cell-centred, corner, and on flat tiles staggered along one axis),
vector pairs (D grid ``(u, v)``, C grid ``(uc, vc)``, A grid), blocking and
start/wait, numpy slices and indexed copies, and fields one ghost layer
deeper than the updater fills (a partial update). A failure aborts the job; rank 0
prints ``OK <check>``.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from orchestra.comm import (
    ChannelPartitioner,
    Communicator,
    CubedSpherePartitioner,
    HaloUpdater,
    PeriodicTilePartitioner,
    TilePartitioner,
    abort_on_exception,
)
from tests.comm.staggered_reference import SENTINEL, STAGGERS, Domain, expected, initial

NZ = 2
PAIRS = [("u", "v"), ("uc", "vc"), ("ua", "va")]


def domain(grid: str, layout: int, nx: int, h: int) -> Domain:
    if grid == "cube":
        p = CubedSpherePartitioner(TilePartitioner((layout, layout)))
        return Domain(p, nx, nx, h, sphere=True)
    kind = PeriodicTilePartitioner if grid == "periodic" else ChannelPartitioner
    return Domain(kind((layout, layout)), nx, nx + 1, h, periodic=(True, grid == "periodic"))


class Case:
    """This rank's communicator, the domain and every rank's initial fields."""

    def __init__(self, d: Domain) -> None:
        self.d = d
        self.comm = Communicator.world(d.partitioner)
        self.rank = self.comm.rank
        ranks = range(d.partitioner.total_ranks)
        self.before = [{n: initial(d, r, n) for n in STAGGERS} for r in ranks]
        self.scalars = ["q", "corner"] if d.sphere else ["q", "corner", "xi", "yi"]
        want: dict[str, np.ndarray] = {}
        for group in [[n] for n in self.scalars] + [list(p) for p in PAIRS]:
            want.update(expected(d, self.before, self.rank, group))
        self.want = want

    def fields(self, nz: int = 0) -> dict[str, np.ndarray]:
        return {n: initial(self.d, self.rank, n, nz) for n in STAGGERS}

    def updater(self, **kwargs) -> HaloUpdater:
        if not kwargs:
            return self.comm.halo_updater(self.d.h, domain=(self.d.nx, self.d.ny))
        return HaloUpdater(self.comm, self.d.h, domain=(self.d.nx, self.d.ny), **kwargs)

    def check(self, got: dict[str, np.ndarray], names, nz: int = 0) -> None:
        for n in names:
            want = self.want[n][..., None] * (1 + np.arange(nz)) if nz else self.want[n]
            if not np.array_equal(got[n], want):
                bad = np.argwhere(got[n] != want)[:5].tolist()
                raise AssertionError(f"rank {self.rank} {n}: differs at {bad}")


def check_scalar(case: Case) -> None:
    halo = case.updater()
    for name in case.scalars:
        f = case.fields()
        halo.update(f[name])
        case.check(f, [name])


def check_vector(case: Case) -> None:
    halo = case.updater()
    for u, v in PAIRS:
        f = case.fields(NZ)
        halo.update_vector(f[u], f[v])
        case.check(f, [u, v], NZ)
    f = case.fields()
    halo.update_vector([f[u] for u, _ in PAIRS], [f[v] for _, v in PAIRS])  # lists of pairs
    case.check(f, [n for pair in PAIRS for n in pair])


def check_split(case: Case) -> None:
    """start/wait (work between) and start_fields with everything in one exchange."""
    halo = case.updater()
    f = case.fields()
    halo.start(*[f[n] for n in case.scalars])
    interior = float(f["q"][case.d.h : -case.d.h, case.d.h : -case.d.h].sum())
    halo.wait()
    halo.start_vector(f["u"], f["v"])
    halo.wait_vector()
    case.check(f, case.scalars + ["u", "v"])
    g = case.fields(NZ)
    halo.start_fields([g[n] for n in case.scalars], [(g[u], g[v]) for u, v in PAIRS])
    halo.wait()
    case.check(g, case.scalars + [n for p in PAIRS for n in p], NZ)
    assert interior == float(f["q"][case.d.h : -case.d.h, case.d.h : -case.d.h].sum())


def check_indexed(case: Case) -> None:
    """The GPU's packing (indexed copies), run on numpy, staged through host buffers."""
    halo = case.updater(indexed_packing=True, stage_through_host=True)
    g = case.fields(NZ)
    halo.start_fields([g[n] for n in case.scalars], [(g[u], g[v]) for u, v in PAIRS])
    halo.wait()
    exchange = next(iter(halo._exchanges.values()))
    assert type(exchange.packing).__name__ == "IndexedPacking"
    case.check(g, case.scalars + [n for p in PAIRS for n in p], NZ)


def check_partial(case: Case) -> None:
    """Fields one ghost layer deeper than the updater fills: the inner layers as above, the outer ring kept."""
    deep = dataclasses.replace(case.d, h=case.d.h + 1)
    g = {n: initial(deep, case.rank, n, NZ) for n in STAGGERS}
    halo = case.updater()
    halo.start_fields([g[n] for n in case.scalars], [(g[u], g[v]) for u, v in PAIRS])
    halo.wait()
    inner = {n: a[1:-1, 1:-1] for n, a in g.items()}
    case.check(inner, case.scalars + [n for p in PAIRS for n in p], NZ)
    for n, a in g.items():
        ring = np.ones(a.shape[:2], bool)
        ring[1:-1, 1:-1] = False
        assert np.array_equal(a[ring], np.full(a[ring].shape, SENTINEL) * (1 + np.arange(NZ))), (case.rank, n)


CHECKS = {"scalar": check_scalar, "vector": check_vector, "split": check_split, "indexed": check_indexed,
          "partial": check_partial}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", choices=["cube", "periodic", "channel"], required=True)
    parser.add_argument("--layout", type=int, required=True)
    parser.add_argument("--nx", type=int, default=3)
    parser.add_argument("--halo", type=int, default=2)
    parser.add_argument("--checks", default=",".join(CHECKS))
    args = parser.parse_args()
    case = Case(domain(args.grid, args.layout, args.nx, args.halo))
    for name in args.checks.split(","):
        CHECKS[name](case)
        case.comm.barrier()
        if case.rank == 0:
            print(f"OK {name}", flush=True)


if __name__ == "__main__":
    with abort_on_exception():
        main()
