"""Time one halo update of a C48-sized per-rank field on the cubed sphere.

Run on 6 ranks (layout 1x1, one 48 x 48 tile per rank, 3 halo points)::

    .venv/bin/mpirun -n 6 --allow-run-as-root --oversubscribe \\
        .venv/bin/python scripts/bench_halo.py --json bench_halo.json

Each variant is timed ``--repeats`` times after warm-up; every repeat starts
after a barrier and counts until the slowest rank is done (the maximum over
ranks), and the table shows the median and the 10th/90th percentiles. Buffers
are allocated in the warm-up calls, so the figures are steady-state costs.

``--device gpu`` exchanges cupy arrays (packing on the device, messages staged
through pinned host memory unless ``ORCHESTRA_CUDA_AWARE_MPI=1``); each timed
call then ends with a device synchronisation, so the unpacking kernels count.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
from mpi4py import MPI

from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner, abort_on_exception


def _time_calls(comm: Communicator, call, repeats: int, warmup: int = 5) -> np.ndarray:
    for _ in range(warmup):
        call()
    times = np.empty(repeats)
    for r in range(repeats):
        comm.barrier()
        start = time.perf_counter()
        call()
        times[r] = time.perf_counter() - start
    return np.max(np.array(comm.allgather(times)), axis=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--nx", type=int, default=48, help="compute-domain cells per rank along i and j"
    )
    parser.add_argument("--n-halo", type=int, default=3)
    parser.add_argument("--nz", type=int, nargs="+", default=[1, 79], help="vertical levels")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="numpy or cupy arrays")
    parser.add_argument("--label", default="", help="a name for this run in the table and JSON")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    args = parser.parse_args()

    comm = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    h, nx = args.n_halo, args.nx
    halo = comm.halo_updater(h)
    rows = []
    if args.device == "gpu":
        import cupy as xp

        def finished(call):
            def synchronized():
                call()
                xp.cuda.get_current_stream().synchronize()

            return synchronized

    else:
        xp = np

        def finished(call):
            return call

    for nz in args.nz:
        shape = (nx + 2 * h, nx + 2 * h, nz)
        q = xp.asarray(np.random.default_rng(comm.rank).random(shape))
        u, v = q.copy(), q.copy()
        for kind, call, fields in (
            ("scalar", lambda: halo.update(q), 1),
            ("vector", lambda: halo.update_vector(u, v), 2),
        ):
            times = _time_calls(comm, finished(call), args.repeats)
            # Bytes this rank sends: four n_halo-wide edge strips (no corners on a 1x1 cube).
            sent = fields * 4 * h * nx * nz * q.itemsize
            rows.append(
                {
                    "label": args.label,
                    "device": args.device,
                    "variant": kind,
                    "nz": nz,
                    "bytes_sent_per_rank": sent,
                    "median_ms": 1e3 * float(np.median(times)),
                    "p10_ms": 1e3 * float(np.percentile(times, 10)),
                    "p90_ms": 1e3 * float(np.percentile(times, 90)),
                }
            )
    if comm.rank == 0:
        print(
            f"halo update {args.label}, {comm.size} ranks, {nx}x{nx} per rank on the {args.device}, "
            f"n_halo={h}, {args.repeats} repeats"
        )
        print(
            f"{'variant':<8} {'nz':>3} {'KiB sent/rank':>14} {'median ms':>10} {'p10 ms':>8} {'p90 ms':>8}"
        )
        for row in rows:
            print(
                f"{row['variant']:<8} {row['nz']:>3} {row['bytes_sent_per_rank'] / 1024:>14.1f} "
                f"{row['median_ms']:>10.3f} {row['p10_ms']:>8.3f} {row['p90_ms']:>8.3f}"
            )
        if args.json:
            meta = {
                "ranks": comm.size,
                "nx": nx,
                "n_halo": h,
                "repeats": args.repeats,
                "device": args.device,
                "label": args.label,
                "host": platform.node(),
                "mpi": MPI.Get_library_version().splitlines()[0],
            }
            with open(args.json, "w") as f:
                json.dump({"meta": meta, "results": rows}, f, indent=2)


if __name__ == "__main__":
    with abort_on_exception():
        main()
