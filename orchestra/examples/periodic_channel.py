"""A tracer carried by a steady flow in a channel (or on a doubly periodic domain), over MPI.

The domain is ``24 x 12`` cells, periodic along i (x); along j (y) it has
walls (:class:`~orchestra.comm.ChannelPartitioner`) or is periodic too
(``--domain periodic``: :class:`~orchestra.comm.PeriodicTilePartitioner`).
A tracer ``q`` is advected (first-order upwind, flux form) and diffused by a
fixed cell-centred velocity ``(u, v)``. One halo updater serves both:
``Walls(scalar="mirror", vector="free_slip")`` mirrors ``q`` beyond the walls
(no diffusive flux through them) and reflects ``(u, v)`` (``v`` negated, so
the velocity on the wall faces is exactly 0): the tracer's mass is conserved
to rounding.

Run it on any number of ranks the domain divides into (the layout is the
most square factorisation, or ``--layout 4,1``)::

    mpirun -n 4 python -m orchestra.examples.periodic_channel
    mpirun -n 4 python -m orchestra.examples.periodic_channel --domain periodic

Rank 0 prints the decomposition, the mass before and after, and a checksum
of the gathered tracer: bitwise the same on 1, 2, 4, ... ranks.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Optional

import numpy as np

from orchestra.comm import (
    ChannelPartitioner,
    Communicator,
    PeriodicTilePartitioner,
    Walls,
    abort_on_exception,
)

NX, NY, N_HALO = 24, 12, 1
DT, DIFFUSION = 0.4, 0.05


def square_layout(n_ranks: int) -> tuple[int, int]:
    """``(ranks along i, ranks along j)``: the factorisation of ``n_ranks`` closest to square."""
    along_j = max(d for d in range(1, math.isqrt(n_ranks) + 1) if n_ranks % d == 0)
    return n_ranks // along_j, along_j


def initial_state(comm: Communicator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This rank's ``q, u, v`` (halo included, halo zero): a blob in a shear flow with a wave."""
    i, j = np.meshgrid(np.arange(NX) + 0.5, np.arange(NY) + 0.5, indexing="ij")
    q = 1.0 + np.exp(-((i - 6.0) ** 2 + (j - 5.0) ** 2) / 8.0)
    u = 0.6 * np.sin(math.pi * j / NY)
    v = 0.3 * np.sin(2.0 * math.pi * i / NX) * np.sin(math.pi * j / NY)
    root = comm.rank == 0
    return tuple(comm.scatter_tile(field if root else None, N_HALO) for field in (q, u, v))


def step(q: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
    """One upwind advection-diffusion step of ``q``'s compute domain (halos must be current)."""
    h, nx, ny = N_HALO, q.shape[0] - 2 * N_HALO, q.shape[1] - 2 * N_HALO
    # Fluxes through the faces between cells k and k + 1 along i (rows) and along j (columns).
    u_face = 0.5 * (u[:-1, h:-h] + u[1:, h:-h])
    flux_i = u_face * np.where(u_face > 0, q[:-1, h:-h], q[1:, h:-h])
    flux_i -= DIFFUSION * (q[1:, h:-h] - q[:-1, h:-h])
    v_face = 0.5 * (v[h:-h, :-1] + v[h:-h, 1:])
    flux_j = v_face * np.where(v_face > 0, q[h:-h, :-1], q[h:-h, 1:])
    flux_j -= DIFFUSION * (q[h:-h, 1:] - q[h:-h, :-1])
    divergence = flux_i[h : h + nx] - flux_i[h - 1 : h - 1 + nx]
    divergence += flux_j[:, h : h + ny] - flux_j[:, h - 1 : h - 1 + ny]
    q[h:-h, h:-h] -= DT * divergence


def run(domain: str, layout: Optional[tuple[int, int]], steps: int) -> Optional[dict[str, Any]]:
    """The model on ``MPI.COMM_WORLD``; a summary on rank 0, None elsewhere."""
    from mpi4py import MPI

    layout = layout or square_layout(MPI.COMM_WORLD.Get_size())
    kind = ChannelPartitioner if domain == "channel" else PeriodicTilePartitioner
    comm = Communicator.world(kind(layout))
    halo = comm.halo_updater(N_HALO, walls=Walls(scalar="mirror", vector="free_slip"))
    q, u, v = initial_state(comm)
    halo.update_vector(u, v)  # the flow is steady: one update
    start = comm.gather_tile(q, N_HALO)
    for _ in range(steps):
        halo.update(q)
        step(q, u, v)
    end = comm.gather_tile(q, N_HALO)
    if end is None:
        return None
    mass = (float(start.sum()), float(end.sum()))
    return {"partitioner": comm.partitioner, "ranks": comm.size, "mass": mass, "q": end}


def main(argv: Optional[list[str]] = None) -> None:
    """Parse the command line, run, print the summary on rank 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", choices=["channel", "periodic"], default="channel")
    parser.add_argument("--layout", help="ranks along i and j, e.g. 4,1 (default: most square)")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args(argv)
    layout = tuple(int(x) for x in args.layout.split(",")) if args.layout else None
    summary = run(args.domain, layout, args.steps)
    if summary is None:
        return
    before, after = summary["mass"]
    q = summary["q"]
    ranks = f"{summary['ranks']} rank{'s' if summary['ranks'] > 1 else ''}"
    print(f"{summary['partitioner']!r} on {ranks}: {NX} x {NY} cells, {args.steps} steps")
    print(f"mass {before:.12e} -> {after:.12e} (relative change {abs(after - before) / before:.1e})")
    print(f"q min {q.min():.6f} max {q.max():.6f}")
    print(f"checksum {float(np.sum(q * np.arange(1, q.size + 1).reshape(q.shape))).hex()}")


if __name__ == "__main__":
    with abort_on_exception():
        main()
