"""Slowdown of each debug check on the example model (orchestra.examples.diffusion).

Builds the model once per check selection (no checks, each check alone, all
of them), then times calls of every build in interleaved rounds in this one
process, and prints the median time per call and its ratio to the build
without checks. The checks' own output (progress and trace lines) goes to
/dev/null while timing: the ratios include formatting and writing it, not a
terminal's speed.

    OMP_NUM_THREADS=1 python scripts/bench_debug.py [--n 64] [--nz 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from orchestra import DaceConfig
from orchestra.examples.diffusion import DiffusionModel, initial_state
from orchestra.passes.debug import DebugChecks


def variants(n: int, nz: int) -> dict[str, str]:
    centre = f"{n // 2},{n // 2},{nz // 2}"
    return {
        "none": "",
        "nan": "nan",
        "negative": "negative:fields=q,threshold=-1e30",
        "trace": f"trace:point={centre}",
        "progress": "progress",
        "all": f"nan;negative:fields=q,threshold=-1e30;trace:point={centre};progress",
    }


@contextlib.contextmanager
def stderr_to_devnull() -> Iterator[None]:
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="horizontal compute domain is n x n")
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    shape = (args.n + 2, args.n + 2, args.nz)
    inner = max(3, int(2e5 / (args.n * args.n * args.nz)))
    models, states, build_seconds = {}, {}, {}
    with tempfile.TemporaryDirectory() as cache:
        for label, spec in variants(args.n, args.nz).items():
            config = DaceConfig(
                None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=Path(cache),
                debug_checks=DebugChecks.parse(spec),
            )
            models[label] = DiffusionModel(config, shape)
            states[label] = initial_state(shape, "dace:cpu")
            start = time.perf_counter()
            with stderr_to_devnull():
                models[label](*states[label])  # build, load, warm up
            build_seconds[label] = time.perf_counter() - start
        samples: dict[str, list[float]] = {label: [] for label in models}
        with stderr_to_devnull():
            for _ in range(args.repeats):
                for label, model in models.items():
                    q, total = states[label]
                    start = time.perf_counter()
                    for _ in range(inner):
                        model(q, total)
                    samples[label].append((time.perf_counter() - start) / inner)
    base = statistics.median(samples["none"])
    rows = []
    print(f"DiffusionModel, domain {args.n}x{args.n}x{args.nz}, 3 sub-steps (10 kernels per call), "
          f"median of {args.repeats} x {inner} calls")
    print(f"{'checks':>10} {'ms/call':>9} {'ratio':>7}   ORCHESTRA_DEBUG")
    for label, spec in variants(args.n, args.nz).items():
        median = statistics.median(samples[label])
        rows.append({"checks": label, "spec": spec, "seconds_per_call": median, "ratio": median / base,
                     "first_call_seconds": build_seconds[label]})
        print(f"{label:>10} {median * 1e3:9.3f} {median / base:7.2f}   {spec or '(none)'}")
    if args.json:
        args.json.write_text(json.dumps({"domain": [args.n, args.n, args.nz], "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
