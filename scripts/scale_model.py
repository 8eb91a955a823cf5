"""A scale model of loading an orchestrated build, fitted to measured jobs and extrapolated.

    source scripts/setup_env.sh
    ORCHESTRA_RANKS_PER_NODE=6 python scripts/measure_cache_io.py --ranks 6,24,54 --json after.json
    ORCHESTRA_NODE_LOCAL_DIR=none python scripts/measure_cache_io.py --ranks 6,24,54 --json before.json
    python scripts/scale_model.py --after after.json --before before.json --fit 6,24 --ranks-per-node 128

Every rank of a job that loads prebuilt builds plays some of three roles:

* every rank (key computation, agreement, the node's collectives, loading
  the node-local copy): ``base``;
* *builder* of a key (the lowest rank of tile 0 that has it): looks the
  entry up with its checksums before deciding there is nothing to build;
* *reader* of a key on a node (the node's lowest rank that has it): checks the
  shared entry and copies what a load reads into node-local storage.

The roles follow from the decomposition alone (:mod:`orchestra.distributed.coordinator`
code-path classes, consecutive ranks per node), so this script computes them
for any layout. For each counted quantity (opens, stat-like calls, reads and
bytes read on the shared cache folder) it fits ``base + reader + builder``
per rank by least squares on the ``--fit`` jobs, predicts the other measured
jobs (the check) and extrapolates to cubed-sphere jobs of 6 to 6,144 ranks
with ``--ranks-per-node`` ranks per node. Without staging (``--before``) every
rank reads the entry itself: a constant per rank and one per builder, fitted the same way.
Bytes depend on the size of the build (here a small test model); the table
also counts *full reads of a build's library*, which scale with the real
library size.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUANTITIES = ("open", "stat", "read", "read_bytes")
ROLES = ("base", "reader", "builder")
#: Cubed-sphere layouts of the extrapolated rows (ranks = 6 * n * n).
SCALE_LAYOUTS = (1, 3, 6, 16, 32)


def roles(n: int, ranks_per_node: int) -> tuple[np.ndarray, int, int, int]:
    """Role matrix (ranks x [base, reader, builder]) of a cube with layout n x n; keys, nodes, node-key pairs."""
    from orchestra.comm import CubedSpherePartitioner, TilePartitioner
    from orchestra.distributed.coordinator import class_representatives, code_path_class

    partitioner = CubedSpherePartitioner(TilePartitioner((n, n)))
    total = partitioner.total_ranks
    builders = set(class_representatives(partitioner).values())
    matrix = np.zeros((total, 3))
    matrix[:, 0] = 1
    seen: set[tuple[int, Any]] = set()
    for rank in range(total):
        node_key = (rank // ranks_per_node, code_path_class(partitioner, rank))
        if node_key not in seen:
            seen.add(node_key)
            matrix[rank, 1] = 1
        matrix[rank, 2] = rank in builders
    nodes = -(-total // ranks_per_node)
    return matrix, len(builders), nodes, len(seen)


def cube_layout(job: dict) -> int:
    layout = job["layout"]
    if not layout.startswith("cube "):
        raise SystemExit(f"only cubed-sphere jobs can be modelled, not {layout!r}")
    ni, _, nj = layout.split()[1].partition("x")
    if ni != nj:
        raise SystemExit(f"only square layouts can be modelled, not {layout!r}")
    return int(ni)


def measured_by_rank(job: dict, quantity: str) -> np.ndarray:
    by_rank = job["cache_root"]["by_rank"]
    return np.array([by_rank.get(str(rank), {}).get(quantity, 0) for rank in range(job["ranks"])], dtype=float)


def fit(jobs: list[dict], ranks_per_node: int, columns: list[int]) -> dict[str, np.ndarray]:
    """Per quantity, the per-role constants (least squares over every rank of ``jobs``)."""
    matrices = [roles(cube_layout(job), ranks_per_node)[0][:, columns] for job in jobs]
    design = np.vstack(matrices)
    constants = {}
    for quantity in QUANTITIES:
        observed = np.concatenate([measured_by_rank(job, quantity) for job in jobs])
        constants[quantity], *_ = np.linalg.lstsq(design, observed, rcond=None)
    return constants


def predict(n: int, ranks_per_node: int, constants: dict[str, np.ndarray], columns: list[int]) -> dict[str, float]:
    matrix = roles(n, ranks_per_node)[0][:, columns]
    return {quantity: float((matrix @ constants[quantity]).sum()) for quantity in QUANTITIES}


def ranks_per_node_of(run: dict) -> int:
    text = run.get("environment", {}).get("ORCHESTRA_RANKS_PER_NODE", "")
    return int(text) if text else 10**9


def check_table(run: dict, fit_ranks: set[int], columns: list[int], label: str) -> dict[str, np.ndarray]:
    """Fit on the ``fit_ranks`` jobs of ``run``, print measured against predicted for all of them."""
    per_node = ranks_per_node_of(run)
    jobs = run["jobs"]
    constants = fit([job for job in jobs if job["ranks"] in fit_ranks], per_node, columns)
    names = [ROLES[column] for column in columns]
    print(f"\n{label}: per-rank constants by role (fitted on {sorted(fit_ranks)} ranks, {per_node} ranks per node)")
    for quantity in QUANTITIES:
        print(f"  {quantity:10s} " + "  ".join(f"{name}={value:9.1f}" for name, value in zip(names, constants[quantity])))
    print(f"  {'ranks':>5s} {'fit':>4s} " + " ".join(f"{q + ' meas/pred':>24s}" for q in QUANTITIES))
    for job in jobs:
        predicted = predict(cube_layout(job), per_node, constants, columns)
        cells = []
        for quantity in QUANTITIES:
            measured = measured_by_rank(job, quantity).sum()
            cells.append(f"{measured:>11.0f}/{predicted[quantity]:<11.0f}")
        print(f"  {job['ranks']:>5d} {'yes' if job['ranks'] in fit_ranks else 'no':>4s} " + " ".join(cells))
    return constants


def scale_rows(after: dict[str, np.ndarray], before: dict[str, np.ndarray] | None, ranks_per_node: int) -> list[dict]:
    rows = []
    for n in SCALE_LAYOUTS:
        _, builds, nodes, node_keys = roles(n, ranks_per_node)
        row = {"ranks": 6 * n * n, "layout": f"{n}x{n}", "builds": builds, "nodes": nodes, "node_key_pairs": node_keys}
        row["after"] = predict(n, ranks_per_node, after, [0, 1, 2])
        row["library_reads_after"] = builds + node_keys
        if before is not None:
            row["before"] = predict(n, ranks_per_node, before, [0, 2])
            row["library_reads_before"] = 6 * n * n + builds
        rows.append(row)
    return rows


def print_rows(rows: list[dict]) -> None:
    print("\nExtrapolated: operations on the shared cache folder per job (before -> after staging)")
    print(f"  {'ranks':>6s} {'layout':>6s} {'builds':>6s} {'nodes':>5s} {'node-keys':>9s} "
          f"{'opens':>17s} {'stats':>19s} {'reads':>17s} {'library reads':>15s}")
    for row in rows:
        before = row.get("before", {})
        cells = [
            f"{before.get(q, float('nan')):>8.0f}->{row['after'][q]:<7.0f}" for q in ("open", "stat", "read")
        ]
        library = f"{row.get('library_reads_before', 0):>6d}->{row['library_reads_after']:<6d}"
        print(f"  {row['ranks']:>6d} {row['layout']:>6s} {row['builds']:>6d} {row['nodes']:>5d} "
              f"{row['node_key_pairs']:>9d} " + " ".join(cells) + f" {library}")


def merged(paths: list[Path]) -> dict:
    """The jobs of several measure_cache_io.py files (same settings) as one run, by rank count."""
    runs = [json.loads(path.read_text()) for path in paths]
    jobs = {job["ranks"]: job for run in runs for job in run["jobs"]}
    return {**runs[0], "jobs": [jobs[ranks] for ranks in sorted(jobs)]}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--after", type=Path, nargs="+", required=True, help="measure_cache_io.py JSON, staging on")
    parser.add_argument("--before", type=Path, nargs="+", default=None, help="measure_cache_io.py JSON, staging off")
    parser.add_argument("--fit", default="6,24", help="rank counts whose jobs the model is fitted to")
    parser.add_argument("--ranks-per-node", type=int, default=128, help="for the extrapolated rows")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    fit_ranks = {int(item) for item in args.fit.split(",")}
    after = check_table(merged(args.after), fit_ranks, [0, 1, 2], "with staging")
    before = None
    if args.before is not None:
        before = check_table(merged(args.before), fit_ranks, [0, 2], "without staging")
    rows = scale_rows(after, before, args.ranks_per_node)
    print_rows(rows)
    if args.json is not None:
        args.json.write_text(json.dumps({"ranks_per_node": args.ranks_per_node, "rows": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
