"""Measure cold builds with one or several compiling ranks, and warm loads (Run mode).

    .venv/bin/python -m tests.distributed.measure_builds [--json FILE]

Jobs (the edge model of ``mpi_build_worker.py``, 6x6x2 cells per rank, each
cold job in a fresh cache root; gt4py's own stencil cache is warmed first):

* ``3x3 Build, 9 builders``: one compile per code-path class, all at once;
* ``3x3 Build, 1 builder``: the same model without edge code (``--edges none``):
  every rank has the same key, rank 0 compiles, 8 ranks wait;
* ``1x1 Build, 1 rank``: one process alone;
* ``3x3 Run`` and ``1x1 Run``: loading the builds above.

"Build phase" is the longest first call over the ranks: key, agreement,
compile (or lookup) and the final barrier. "Job" is the mpirun wall time,
dominated on 2 cores by every rank importing DaCe and gt4py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.distributed.test_mpi_build import WORKER, results
from tests.mpi_launcher import run_mpi

JOBS = [
    # name, ranks, mode, cache, extra arguments
    ("3x3 Build, 9 builders", 9, "Build", "edges", ["--layout", "3x3"]),
    ("3x3 Build, 1 builder", 9, "Build", "no_edges", ["--layout", "3x3", "--edges", "none"]),
    ("1x1 Build, 1 rank", 1, "Build", "single", ["--layout", "1x1"]),
    ("3x3 Run (9 builds)", 9, "Run", "edges", ["--layout", "3x3"]),
    ("1x1 Run", 1, "Run", "single", ["--layout", "1x1"]),
]


def job(ranks: int, root: Path, mode: str, extra: list[str]) -> dict:
    start = time.perf_counter()
    process = run_mpi(ranks, WORKER, "--cache-root", str(root), "--mode", mode, *extra, timeout=600)
    wall = time.perf_counter() - start
    found = results(process.stdout)
    built = [float(r["build_s"]) for r in found if r["built"] == "1"]
    loads = [float(r["load_s"]) for r in found if float(r["load_s"]) > 0]
    return {
        "job_s": wall,
        "ranks": ranks,
        "compiles": len(built),
        "build_phase_s": max(float(r["first_call_s"]) for r in found),
        "build_s_mean": statistics.mean(built) if built else None,
        "load_s_mean": statistics.mean(loads) if loads else None,
        "load_s_max": max(loads) if loads else None,
        "setup_s_max": max(float(r["setup_s"]) for r in found),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for warm_up in (["--layout", "3x3"], ["--layout", "3x3", "--edges", "none"]):  # gt4py's cache
            run_mpi(9, WORKER, "--cache-root", str(scratch / "warm_up"), "--mode", "Build", *warm_up, timeout=600)
        rows = {}
        for name, ranks, mode, cache, extra in JOBS:
            rows[name] = job(ranks, scratch / cache, mode, extra)
            print(f"{name}: {rows[name]}", flush=True)
    print(f"\nload average before: {load_before[0]:.1f}, after: {os.getloadavg()[0]:.1f} (2 cores)")
    header = f"{'job':<24}{'ranks':>6}{'compiles':>9}{'job s':>8}{'build phase s':>15}{'build s':>9}{'load s':>8}"
    print(header)
    for name, row in rows.items():
        build = f"{row['build_s_mean']:.1f}" if row["build_s_mean"] else "-"
        load = f"{row['load_s_mean']:.2f}" if row["load_s_mean"] else "-"
        print(f"{name:<24}{row['ranks']:>6}{row['compiles']:>9}{row['job_s']:>8.1f}"
              f"{row['build_phase_s']:>15.1f}{build:>9}{load:>8}")
    if args.json:
        args.json.write_text(json.dumps({"load_average": load_before, "jobs": rows}, indent=2))


if __name__ == "__main__":
    main()
