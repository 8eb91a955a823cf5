"""Two orchestrated builds of the dycore timed in one process, batches interleaved (A B A B ...).

On a shared machine the load drifts between separate benchmark jobs; timing
both variants in one process, alternating batches, exposes them to the same
load, and the ratio of their medians is the before/after figure.

    python scripts/compare_passes.py --sizes 24 192 --nz 8 --batches 15

Variants are those of ``bench_lib/dycore.py`` (default: ``orchestrated``,
the default passes, against ``orchestrated_unfused``, the same without fusion). 1 rank (one tile), 1 thread
unless ``OMP_NUM_THREADS`` says otherwise. Prints one line per size and
writes JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _batch_seconds(model, snapshot, steps: int) -> float:
    snapshot.restore()
    start = time.perf_counter()
    for _ in range(steps):
        model.dycore()
    return (time.perf_counter() - start) / steps


def compare(n: int, nz: int, variants: list[str], batches: int, cache_root: str) -> dict:
    """Median seconds per step of each variant, batches interleaved; the first variant is the baseline."""
    from bench_lib import dycore
    from bench_lib.interleaved import interleaved_medians

    comm = dycore.communicator()
    models = {name: dycore.build_model(name, n, nz, comm, cache_root) for name in variants}
    snapshots = {name: dycore.StateSnapshot(model.state) for name, model in models.items()}
    medians, steps = interleaved_medians(
        {name: (lambda steps, name=name: _batch_seconds(models[name], snapshots[name], steps)) for name in variants},
        batches,
    )
    base = variants[0]
    return {
        "n": n, "nz": nz, "steps_per_batch": steps, "batches": batches, "load_average": os.getloadavg(),
        "median_ms": {name: 1e3 * value for name, value in medians.items()},
        "ratio_to_" + base: {name: medians[name] / medians[base] for name in variants},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[24, 192])
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--variants", nargs="+", default=["orchestrated", "orchestrated_unfused"])
    parser.add_argument("--batches", type=int, default=15, help="timed batches per variant (about 0.2 s each)")
    parser.add_argument("--cache-root", default=os.environ.get("ORCHESTRA_CACHE_DIR"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for n in args.sizes:
        row = compare(n, args.nz, args.variants, args.batches, args.cache_root)
        rows.append(row)
        times = ", ".join(f"{name} {ms:.3f} ms" for name, ms in row["median_ms"].items())
        ratios = ", ".join(f"{name} {r:.2f}x" for name, r in list(row.values())[-1].items() if name != args.variants[0])
        load = row["load_average"][0]
        print(f"{n}x{n}x{args.nz}: {times}; relative to {args.variants[0]}: {ratios} (load {load:.1f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
